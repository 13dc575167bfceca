"""The conda environments carry what pyproject.toml asks for (conda cannot run in CI: this checks the files)."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CONDA_NAME = {
    "torch": None,
    "pre-commit": "pre-commit",
    "pyyaml": "pyyaml",
    "build": "python-build",
}  # torch: pytorch-gpu / pytorch-cpu


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


# ---------------------------------------------------------------------------- the instructors' set-ups
# Ubuntu 24.04 (GitHub's ubuntu-latest, Gradescope's newer images) marks its Python externally managed
# (PEP 668): the system pip refuses to install. Each set-up must install into an interpreter of its own.
SYSTEM_PIP = re.compile(r"(?:^|[;&|]\s*|sudo\s+)(?:pip3?|python3?\s+-m\s+pip)\s+install\b", re.M)


def test_github_classroom_installs_with_setup_pythons_pip():
    steps = yaml.safe_load((ROOT / "examples" / "github-classroom" / "classroom.yml").read_text())["jobs"][
        "run-autograding-tests"
    ]["steps"]
    uses = [str(s.get("uses", "")) for s in steps]
    first_pip = next(i for i, s in enumerate(steps) if "pip" in str(s.get("with", {}).get("setup-command", "")))
    assert any(u.startswith("actions/setup-python@") for u in uses[:first_pip]), uses


def test_gradescope_setup_installs_into_a_venv():
    script = (ROOT / "examples" / "gradescope" / "setup.sh").read_text()
    assert "-m venv" in script
    assert not SYSTEM_PIP.findall(script), SYSTEM_PIP.findall(script)
