"""The conda environments carry what pyproject.toml asks for (conda cannot run in CI: this checks the files)."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CONDA_NAME = {"torch": None, "pre-commit": "pre-commit", "pyyaml": "pyyaml", "build": "python-build"}  # torch: pytorch-gpu / pytorch-cpu


def _requirements() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text()
    names = set()
    for block in re.findall(r"^(?:dependencies|course|dev) = \[(.*?)\]", text, re.M | re.S):
        names |= {re.split(r"[<>=\[ ]", s.strip().strip('"'))[0].lower() for s in block.split(",") if s.strip()}
    return names


def _deps(path: Path) -> dict[str, str]:
    env = yaml.safe_load(path.read_text())
    assert env["channels"][0] == "conda-forge"
    out = {}
    for d in env["dependencies"]:
        if isinstance(d, str):
            out[re.split(r"[<>= ]", d)[0]] = d
    assert {"pip": ["-e ."]} in env["dependencies"]
    return out


def test_both_environments_have_every_requirement_and_g_plus_plus():
    for name in ("environment.yml", "environment-cpu.yml"):
        deps = _deps(ROOT / name)
        for req in _requirements():
            conda = CONDA_NAME.get(req, req)
            if conda:
                assert conda in deps, f"{name} lacks {req}"
        assert "gxx" in deps, f"{name}: g++ comes from gxx (gxx_linux-64 gives no `g++`)"


def test_gpu_environment_pins_a_cuda_pair_and_cpu_has_no_cuda():
    gpu, cpu = _deps(ROOT / "environment.yml"), _deps(ROOT / "environment-cpu.yml")
    assert re.fullmatch(r"cuda-version=\d+\.\d+", gpu["cuda-version"]) and "pytorch-gpu" in gpu and "cuda-nvcc" in gpu
    assert "pytorch-cpu" in cpu and not any(k.startswith("cuda") for k in cpu)
