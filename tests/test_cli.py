"""`python -m grader check`: exit codes 0 / 1 / 2 and the --json fields (in-process)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

HAS_GPU = torch.cuda.is_available()  # not from conftest: tests/cpu/ has a conftest of its own

SUBS = Path(__file__).resolve().parent / "submissions"
BACKEND = "cuda" if HAS_GPU else "cpu"


def _check(capsys, *argv):
    from grader import cli

    rc = cli.main(["check", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_could_not_grade_is_2(capsys, tmp_path):
    assert _check(capsys, "naive", str(tmp_path / "missing.cu"))[0] == 2
    assert _check(capsys, "naive", str(tmp_path / "missing_without_suffix"))[0] == 2  # a path, not source
    rc, _, err = _check(capsys, "naive", str(tmp_path))
    assert rc == 2 and "is a folder" in err
    os.mkfifo(tmp_path / "pipe.cu")  # it said "no such file"; opening it would wait for a writer forever
    rc, _, err = _check(capsys, "naive", str(tmp_path / "pipe.cu"))
    assert rc == 2 and "is a FIFO (named pipe), not a regular file" in err, err
    rc, _, err = _check(capsys, "naiv", str(SUBS / "good_naive.cu"))
    assert rc == 2 and "unknown exercise" in err and "naive" in err
    bad = tmp_path / "t.json"
    bad.write_text("[1, 2]")
    assert _check(capsys, "naive", str(SUBS / "good_naive.cu"), "--thresholds", str(bad))[0] == 2


def test_graded_and_failed_is_1_with_json(capsys):
    for name, start in (
        ("forbidden_torch.cu", "forbidden:"),
        ("empty.cu", "empty.cu is empty"),
        ("binary.cu", "binary.cu: not a UTF-8"),
    ):
        rc, out, _ = _check(capsys, "naive", str(SUBS / name), "--json", "--backend", BACKEND)
        d = json.loads(out)
        assert rc == 1 and d["passed"] is False and d["compiled"] is False and d["message"].startswith(start)
        for k in ("exercise", "backend", "compiled", "correct", "passed", "speedup", "threshold", "message"):
            assert k in d


def test_passed_is_0(capsys):
    rc, out, _ = _check(
        capsys,
        "naive",
        str(SUBS / "good_naive.cu"),
        "--backend",
        BACKEND,
        "--timeout",
        "60",
        "--compile-timeout",
        "120",
    )
    assert out.startswith("PASSED" if rc == 0 else "FAILED")
    if BACKEND == "cpu":
        assert rc == 0


def test_a_notebook_is_graded_by_its_kernel_cell(capsys, tmp_path):
    """`check EXERCISE nb.ipynb` grades the `# kernel: EXERCISE` cell; no such cell is a failed
    submission (1), no such notebook cannot be graded (2)."""
    nb = tmp_path / "alice.ipynb"
    cell = {
        "cell_type": "code",
        "metadata": {},
        "outputs": [],
        "execution_count": None,
        "source": "# kernel: naive\nSOURCE = r'''\n" + (SUBS / "good_naive.cu").read_text() + "'''\n",
    }
    nb.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    rc, out, _ = _check(capsys, "naive", str(nb), "--json", "--backend", BACKEND)
    d = json.loads(out)
    assert rc == 0 and d["passed"] and d["correct"], d["message"]
    rc, out, _ = _check(capsys, "tiled", str(nb), "--json", "--backend", BACKEND)
    assert rc == 1 and "no kernel cell for tiled" in json.loads(out)["message"]
    assert _check(capsys, "naive", str(tmp_path / "missing.ipynb"))[0] == 2
