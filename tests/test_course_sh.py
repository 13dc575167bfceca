"""course.sh's choice of torch: `./course.sh torch-args` prints the pip arguments setup would use.

The installs themselves are measured by hand (see the README and the platform note): they take minutes.
"""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _torch_args(tmp_path, gpu: bool = False, drop=(), **env) -> list[str]:
    e = {k: v for k, v in os.environ.items() if k not in ("TORCH", "TORCH_INDEX", *drop)}
    path = os.environ["PATH"]
    if gpu:  # a fake nvidia-smi that lists a GPU
        smi = tmp_path / "bin" / "nvidia-smi"
        smi.parent.mkdir(exist_ok=True)
        smi.write_text("#!/bin/sh\necho 'GPU 0: Tesla T4 (UUID: GPU-0)'\n")
        smi.chmod(0o755)
        path = f"{smi.parent}:{path}"
    else:  # hide any real one
        path = ":".join(p for p in path.split(":") if not Path(p, "nvidia-smi").exists())
    e.update(PATH=path, **env)
    r = subprocess.run([str(ROOT / "course.sh"), "torch-args"], capture_output=True, text=True, env=e, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split("\n")[:-1]


def test_torch_is_word_split_with_its_pip_options(tmp_path):
    args = _torch_args(tmp_path, TORCH="torch==2.6.0 --index-url https://download.pytorch.org/whl/cu126  --pre")
    assert args == ["torch==2.6.0", "--index-url", "https://download.pytorch.org/whl/cu126", "--pre"]
    assert _torch_args(tmp_path, TORCH="torch>=2.4,<3") == ["torch>=2.4,<3"]  # no glob, no shell


def test_torch_index_alone_picks_the_index(tmp_path):
    assert _torch_args(tmp_path, TORCH_INDEX="https://download.pytorch.org/whl/cu130") == [
        "torch==2.13.0",
        "--index-url",
        "https://download.pytorch.org/whl/cu130",
    ]


def test_a_gpu_gets_the_pinned_cuda_build(tmp_path):
    assert _torch_args(tmp_path, gpu=True) == ["torch==2.13.0"]


def test_no_gpu_and_no_local_cpu_wheel_uses_pytorchs_cpu_index(tmp_path):
    args = _torch_args(
        tmp_path,
        drop=("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"),
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_INDEX="1",
    )
    assert args == ["torch==2.13.0", "--index-url", "https://download.pytorch.org/whl/cpu"]


@pytest.mark.skipif(
    not any(
        Path(d).glob("torch-2.13.0+cpu*.whl")
        for d in os.environ.get("PIP_FIND_LINKS", "/opt/wheels").split()
        if Path(d).is_dir()
    ),
    reason="no local CPU torch wheel on this machine (CI's machine has one)",
)
def test_no_gpu_with_a_local_cpu_wheel_keeps_the_plain_pin(tmp_path):
    # CI installs exactly `pip install torch==2.13.0`, which resolves to the CPU wheel on its disk
    assert _torch_args(tmp_path) == ["torch==2.13.0"]
