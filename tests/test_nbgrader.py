"""nbgrader's own autograde gives the points of grader.classroom.lms.nbgrader_cells(): the course's kernel cell,
two autograder test cells (correct; fast enough), graded for a student whose kernel is right and one
whose kernel is wrong. nbgrader is installed into a throw-away venv that sees this venv's packages;
where it cannot be installed (no package index), the test skips and says so."""

import csv
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest

from grader.classroom import lms

ROOT = Path(__file__).resolve().parent.parent


def _kernel_cell(source: str) -> str:
    return f"# kernel: naive\nSOURCE = r'''\n{source}'''"


@pytest.fixture(scope="module")
def nbgrader_python(tmp_path_factory):
    venv = tmp_path_factory.mktemp("nbgrader-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    py = venv / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "zz_test_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "nbgrader"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.skip(f"nbgrader could not be installed here: {r.stderr.strip().splitlines()[-1:]}")
    return py


@pytest.mark.slow
def test_nbgrader_autograde_gives_the_points(nbgrader_python, tmp_path):
    py = nbgrader_python
    course = tmp_path / "course"
    (course / "source" / "ps1").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        "c.CourseDirectory.course_id = 'gemm'\n"
        "c.ExecutePreprocessor.timeout = 600\n"
    )
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    kernel = nbformat.v4.new_code_cell(_kernel_cell((ROOT / "kernels" / "01_naive.cu").read_text()))
    kernel.metadata["nbgrader"] = {
        "grade": False,
        "solution": True,
        "locked": False,
        "task": False,
        "grade_id": "kernel",
        "schema_version": 3,
    }
    nb.cells = [nbformat.v4.new_markdown_cell("# naive\nWrite the kernel in SOURCE."), kernel]
    nb.cells += [nbformat.from_dict(c) for c in lms.nbgrader_cells("naive", points_correct=1, points_speed=1)]
    nbformat.write(nb, course / "source" / "ps1" / "naive.ipynb")

    # the kernel nbgrader starts: this throw-away venv's python, with the course's grader importable
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(py), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3",
                "language": "python",
            }
        )
    )
    env = {
        **os.environ,
        "JUPYTER_PATH": str(tmp_path / "jupyter"),
        "PYTHONPATH": str(ROOT),
        "PATH": f"{py.parent}{os.pathsep}{os.environ['PATH']}",  # nbgrader runs its `alembic` script
        "GRADER_CACHE": os.environ.get("GRADER_CACHE", str(tmp_path / "cache")),
    }

    def nbgrader(*args):
        r = subprocess.run(
            [str(py), "-m", "nbgrader", *args], cwd=course, env=env, capture_output=True, text=True, timeout=900
        )
        assert r.returncode == 0, (args, r.stdout[-3000:], r.stderr[:3000], r.stderr[-2000:])
        return r

    nbgrader("generate_assignment", "ps1", "--force")
    released = nbformat.read(course / "release" / "ps1" / "naive.ipynb", as_version=4)
    for student, source in (
        ("ann", (ROOT / "kernels" / "01_naive.cu").read_text()),
        ("bob", (ROOT / "tests" / "submissions" / "wrong_index.cu").read_text()),
    ):
        mine = nbformat.from_dict(json.loads(json.dumps(released)))
        cell = next(c for c in mine.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "kernel")
        cell.source = _kernel_cell(source)
        (course / "submitted" / student / "ps1").mkdir(parents=True)
        nbformat.write(mine, course / "submitted" / student / "ps1" / "naive.ipynb")
        nbgrader("db", "student", "add", student)
    nbgrader("autograde", "ps1")
    nbgrader("export", "--to", str(tmp_path / "grades.csv"))
    scores = {
        r["student_id"]: (float(r["score"]), float(r["max_score"]))
        for r in csv.DictReader((tmp_path / "grades.csv").open())
    }
    assert scores == {"ann": (2.0, 2.0), "bob": (0.0, 2.0)}
