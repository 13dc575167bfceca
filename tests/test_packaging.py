"""What a release is: the sdist carries kernels/ and solutions/, the wheel built from it carries them as
grader/_kernels, and in a clean venv that wheel passes `doctor`, whose self-test builds and runs a
reference kernel from it.

Offline and in seconds: `python -m build --sdist --no-isolation`, `pip wheel --no-deps --no-build-isolation`,
and a venv that sees this test venv's packages (torch, numpy) through a .pth line but not its editable
grader (.pth files of an added directory are not processed).
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOT_SOURCE = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", "*.so", "*.o")


def _run(args, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(args, capture_output=True, text=True, timeout=600, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, args))}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    pytest.importorskip("build", reason="python -m build: pip install build (the dev extra)")
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "src"  # a copy: building writes an egg-info beside pyproject.toml
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    r = _run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp / "dist"), str(src)])
    # e.g. a license table: "By 2027-Feb-18 ... your builds will no longer be supported"
    assert "deprecated" not in r.stdout + r.stderr, r.stdout + r.stderr
    (found,) = (tmp / "dist").glob("*.tar.gz")
    return found


def test_the_sdist_carries_the_kernels_the_solutions_and_the_license(sdist):
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    assert {"kernels/01_naive.cu", "kernels/README.md", "kernels/results/h200.json", "LICENSE"} <= names
    assert "solutions/01_triple_loop.ipynb" in names and "setup.py" in names


@pytest.mark.slow
def test_the_wheel_built_from_the_sdist_passes_doctor_in_a_clean_venv(sdist, tmp_path):
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), sdist])
    (wheel,) = wheels.glob("*.whl")

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    site = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(site, "zz_test_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(GRADER_CACHE=str(tmp_path / "cache"), PIP_NO_INDEX="1", PYTHONDONTWRITEBYTECODE="1")
    _run([py, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], env=env, cwd=tmp_path)

    where = _run([py, "-c", "import grader.spec.exercises as e; print(e.KERNELS_DIR)"], env=env, cwd=tmp_path).stdout
    assert where.strip() == str(Path(site, "grader", "_kernels")), where  # the wheel's copy, not a checkout's
    r = subprocess.run(
        [py, "-m", "grader", "doctor"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )
    assert "selftest 01_naive.cu built and run on the CPU backend: correct" in r.stdout, r.stdout + r.stderr
    assert r.returncode == 0 and "ready." in r.stdout, r.stdout + r.stderr
