"""Colab, simulated: a kernel with no grader, started outside the repository, runs a solution notebook.

Its first cell must install the course from the repository's archive (here a local copy of what
GitHub's archive/refs/heads/main.zip holds), import it without a restart, and grade a kernel against
the baselines the wheel carries (kernels/ as grader/_kernels). The fresh venv sees the test venv's
packages (torch, numpy, ipykernel ...) through a .pth line, so nothing big is installed; an editable
grader there stays invisible (.pth files of an added directory are not processed).
"""

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader.course import lab

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE_TOP = "fast-gemm-main"  # GitHub's archive puts everything under REPO-BRANCH/


def _repo_files():
    for top in ("pyproject.toml", "setup.py", "README.md", "LICENSE", "CHANGELOG.md"):
        if (ROOT / top).is_file():
            yield ROOT / top
    yield from sorted((ROOT / "solutions").glob("*.ipynb"))
    for folder in ("grader", "kernels"):
        for p in sorted((ROOT / folder).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".so", ".o"):
                yield p


def _archive(dest: Path) -> Path:
    z = dest / f"{ARCHIVE_TOP}.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as f:
        for p in _repo_files():
            f.write(p, f"{ARCHIVE_TOP}/{p.relative_to(ROOT)}")
    return z


def _venv(dest: Path) -> Path:
    """A venv whose sys.path ends with this test venv's site-packages (pip and setuptools come from there)."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True, capture_output=True, timeout=300
    )
    py = dest / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "zz_test_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return py


@pytest.mark.slow
def test_first_cell_installs_the_course_outside_the_repository_and_grades(tmp_path):
    py = _venv(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    probe = subprocess.run([str(py), "-c", "import grader"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert probe.returncode != 0, "the fresh venv must start without grader (as Colab does)"

    zip_path = _archive(tmp_path)
    content = tmp_path / "content"  # Colab's working directory: no repository around it
    content.mkdir()
    nb = nbformat.read(ROOT / "solutions" / "01_triple_loop.ipynb", as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert first.source.startswith(lab.setup_cell()), "the first cell must start with grader.course.lab.setup_cell()"
    assert lab.install_url() in first.source
    first.source = first.source.replace(lab.install_url(), str(zip_path))  # the same pip call, offline
    nbformat.write(nb, content / "01.ipynb")

    # the kernel: this venv's python (a kernelspec of its own name: no other python3 spec can win)
    spec = tmp_path / "jupyter" / "kernels" / "colab-sim"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(py), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "colab-sim",
                "language": "python",
            }
        )
    )
    env.update(
        JUPYTER_PATH=str(tmp_path / "jupyter"),
        GRADER_CACHE=str(tmp_path / "cache"),
        PIP_NO_BUILD_ISOLATION="0",  # build with the setuptools already there: no download
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    run = (
        "import nbformat, nbclient, sys\n"
        "nb = nbformat.read('01.ipynb', as_version=4)\n"
        "nbclient.NotebookClient(nb, kernel_name='colab-sim', timeout=600, resources={'metadata': {'path': '.'}})"
        ".execute()\n"
        "nbformat.write(nb, 'out.ipynb')\n"
    )
    r = subprocess.run([str(py), "-c", run], capture_output=True, text=True, cwd=content, env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]

    out = nbformat.read(content / "out.ipynb", as_version=4)
    cells = [c for c in out.cells if c.cell_type == "code"]
    first_text = "".join(o.get("text", "") for o in cells[0].outputs)
    assert "backend: cpu" in first_text
    last = json.dumps(cells[-1].outputs)
    assert "correct" in last.lower() or "passed" in last.lower()

    # what got installed: a real (non-editable) package that carries kernels/ as grader/_kernels
    where = subprocess.run(
        [
            str(py),
            "-c",
            "import grader, grader.spec.exercises as e; print(grader.__file__); "
            "print(e.KERNELS_DIR); "
            "print(sorted(p.name for p in e.KERNELS_DIR.glob('*.cu')))",
        ],
        capture_output=True,
        text=True,
        cwd=content,
        env=env,
        check=True,
    ).stdout.splitlines()
    assert where[0].startswith(str(tmp_path / "venv")), where
    assert where[1].endswith("grader/_kernels") and "01_naive.cu" in where[2] and "02_tiled.cu" in where[2]
    shipped = subprocess.run(
        [
            str(py),
            "-c",
            "from grader import calibration, exercises as e; "
            "print(sorted(calibration.shipped_solutions(e.EXERCISES['tiled'])))",
        ],
        capture_output=True,
        text=True,
        cwd=content,
        env=env,
        check=True,
    ).stdout
    assert "02_tiled.cu" in shipped and "03_tiling.ipynb" in shipped  # what a GPU without calibration times


def test_every_solution_starts_with_the_same_bootstrap_and_the_repository_is_pyprojects():
    text = (ROOT / "pyproject.toml").read_text()
    assert f'Repository = "{lab.repository()}"' in text
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        assert first.source.startswith(lab.setup_cell()), f"{path.name}: run python -m grader.course.lab --write-setup"
        assert lab.replace_bootstrap(first.source) == first.source


def test_the_bootstrap_installs_ninja_which_colab_lacks_and_load_inline_needs():
    pip = next(line for line in lab.setup_cell().splitlines() if '"pip", "install"' in line)
    assert '"ninja"' in pip and lab.install_url() in pip, pip


def test_readme_links_every_notebook_to_colab():
    readme = (ROOT / "README.md").read_text()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert lab.colab_url(f"notebooks/{path.name}") in readme, (
            f"README lacks the Colab link of {path.name}: python -m grader.course.lab --write-readme"
        )
