"""course.sh: its choice of torch (`./course.sh torch-args` prints the pip arguments setup would use), the
interpreter it accepts and the .venv it keeps, and `test`'s two stages (on a copy of course.sh, a venv made
in a second and pip stubbed out).

The installs themselves are measured by hand (see the README and the platform note): they take minutes.
"""

import os
import platform
import re
import subprocess
import sys
import sysconfig
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


# ---------------------------------------------------------------------------- set-up and the test stages
def _copy(tmp_path: Path) -> Path:
    """course.sh and pyproject.toml in a folder of their own: setup then works on that folder's .venv."""
    (tmp_path / "repo").mkdir()
    for name in ("course.sh", "pyproject.toml"):
        (tmp_path / "repo" / name).write_bytes((ROOT / name).read_bytes())
    (tmp_path / "repo" / "course.sh").chmod(0o755)
    return tmp_path / "repo"


def _venv_with_this_pythons_packages(venv: Path) -> None:
    """A real venv that sees this test venv's packages (pytest, nbval, torch) and whose pip installs
    nothing: what `setup` leaves after an install, made in a second."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "zz_test_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (venv / "bin" / "pip").write_text("#!/bin/sh\nexit 0\n")
    (venv / "bin" / "pip").chmod(0o755)


def _course(repo: Path, *args, **env) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k not in ("TORCH", "TORCH_INDEX", "PYTHONPATH", "VIRTUAL_ENV")}
    e.update({"PYTHON": sys.executable, **env})
    return subprocess.run(
        [str(repo / "course.sh"), *args], capture_output=True, text=True, env=e, cwd=repo, timeout=300
    )


NOTEBOOK = '{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": "%s"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


@pytest.fixture(scope="module")
def stub_repo(tmp_path_factory) -> Path:
    """A copy with a venv already made and a one-line grader (doctor), tests/ and solutions/ of its own."""
    repo = _copy(tmp_path_factory.mktemp("stages"))
    _venv_with_this_pythons_packages(repo / ".venv")
    (repo / "grader").mkdir()
    (repo / "grader" / "__init__.py").write_text("")
    (repo / "grader" / "__main__.py").write_text("print('doctor: ready.')\n")
    (repo / "tests").mkdir()
    (repo / "solutions").mkdir()
    return repo


@pytest.mark.parametrize(
    "unit_ok, notebook_ok", [(False, True), (True, True)]
)  # a failing notebook: set -e did that already
def test_test_runs_the_notebooks_even_when_unit_tests_fail_and_exits_nonzero(stub_repo, unit_ok, notebook_ok):
    repo = stub_repo  # the first run installs (pip stubbed out), the next ones find the install unchanged
    (repo / "tests" / "test_unit.py").write_text(f"def test_unit():\n    assert {unit_ok}\n")
    (repo / "solutions" / "01.ipynb").write_text(NOTEBOOK % f"assert {notebook_ok}")
    r = _course(repo, "test", TEST_JOBS="1")  # (two processes would cost their start-up: nothing to share here)
    out = r.stdout + r.stderr
    # one summary line per stage: the unit tests', then the notebooks'
    summaries = re.findall(r"^=* ?(\d+ (?:passed|failed))\b.* in [\d.]+s", out, re.M)
    assert summaries == [f"1 {'passed' if unit_ok else 'failed'}", f"1 {'passed' if notebook_ok else 'failed'}"], out
    assert (r.returncode == 0) == (unit_ok and notebook_ok), out[-3000:]


def test_an_old_python_is_refused_with_a_clear_message(tmp_path):
    repo = _copy(tmp_path)
    old = tmp_path / "python3.9"
    old.write_text("#!/bin/sh\necho 3.9.18\n")  # what Python 3.9 prints for the version query
    old.chmod(0o755)
    r = _course(repo, "test", PYTHON=str(old))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "3.9.18" in r.stderr and "3.10 or newer" in r.stderr and "PYTHON=" in r.stderr
    assert "Traceback" not in r.stderr and not (repo / ".venv").exists()


def test_a_missing_python_is_named(tmp_path):
    r = _course(_copy(tmp_path), "test", PYTHON="no-such-python3")
    assert r.returncode == 2 and "no-such-python3" in r.stderr and "not found" in r.stderr, r.stderr


def test_a_venv_made_by_another_python_is_rebuilt(tmp_path):
    repo = _copy(tmp_path)
    stale = repo / ".venv"
    (stale / "bin").mkdir(parents=True)
    (stale / "bin" / "python").write_text("#!/bin/sh\necho /opt/python-3.9 3.9.18\n")  # another interpreter
    (stale / "bin" / "python").chmod(0o755)
    (stale / "stale-marker").write_text("")
    # the new venv gets no pip, so the install stops right after the venv is made
    wrapper = tmp_path / "python"
    wrapper.write_text(
        f'#!/bin/sh\nif [ "$1 $2" = "-m venv" ]; then shift 2; exec {sys.executable} -m venv --without-pip "$@"; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    wrapper.chmod(0o755)
    r = _course(repo, "test", PYTHON=str(wrapper))
    assert "rebuilding" in r.stderr and "3.9.18" in r.stderr, r.stderr
    assert not (stale / "stale-marker").exists()
    cfg = (stale / "pyvenv.cfg").read_text()
    assert f"version = {platform.python_version()}" in cfg, cfg
