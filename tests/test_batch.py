"""`python -m grader batch`: a folder mixing good, wrong, crashing and hanging submissions,
notebooks and student folders, graded into a complete gradebook; a rerun regrades only
what changed. Runs on the CPU backend without a GPU (files share names with
tests/submissions, so builds made by test_grade are reused from the session cache).
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from argparse import Namespace
from pathlib import Path

import pytest

import torch

HAS_GPU = torch.cuda.is_available()  # not from conftest: tests/cpu/ has a conftest of its own

SUBS = Path(__file__).resolve().parent / "submissions"
BACKEND = "cuda" if HAS_GPU else "cpu"


def _notebook(cells: list[str]) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "source": c, "outputs": [], "metadata": {}, "execution_count": None}
                for c in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "subs"
    d.mkdir()
    for name in ("good_naive.cu", "wrong_index.cu", "oob_write.cu", "hang.cu", "binary.cu", "forbidden_cublas.cu"):
        shutil.copy(SUBS / name, d / name)
    (d / "frank").mkdir()  # a student folder with a notebook whose kernel cell is marked
    good = (SUBS / "good_tiled_comment_mentions_cublas.cu").read_text()
    (d / "frank" / "lab.ipynb").write_text(
        _notebook(
            [
                "import grader",
                "%%writefile naive.cu\n// grader: naive\n" + (SUBS / "wrong_index.cu").read_text(),  # an early try
                '# kernel: naive\nSOURCE = r"""' + good + '"""\nmod = grader.load(SOURCE, "naive")',  # the last wins
                'grader.check("naive", "naive.cu")',
            ]
        )
    )
    (d / "gina.ipynb").write_text(_notebook(["print('no kernel cell here')"]))
    (d / "empty_folder").mkdir()
    return d


def _csv(path: Path) -> dict[str, dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


def test_notebook_kernel_marker():
    from grader.judge.submissions import notebook_kernel

    nb = _notebook(["x = 1", "%%writefile t.cu\n// grader: tiled\nA", "// grader: naive\nB", "// grader: tiled\nC"])
    assert notebook_kernel(nb, "tiled") == "// grader: tiled\nC\n"
    assert notebook_kernel(nb, "naive") == "// grader: naive\nB\n"
    assert notebook_kernel(nb, "gemm_relu") is None
    course = _notebook(['# kernel: gemm_relu\nSOURCE = r"""\n#include <cuda_runtime.h>\n"""\nmod = 1'])
    assert notebook_kernel(course, "gemm_relu") == "\n#include <cuda_runtime.h>\n"


def test_batch_mixed_folder_then_resume(folder, tmp_path, monkeypatch):
    from grader.classroom import batch
    from grader.judge import grade

    out = tmp_path / "out" / "grades.csv"
    rows = batch.run_batch("naive", folder, out, jobs=2, backend=BACKEND, timeout=6, progress=False)
    book = _csv(out)
    assert (
        set(book)
        == {
            "good_naive",
            "wrong_index",
            "oob_write",
            "hang",
            "binary",
            "forbidden_cublas",
            "frank",
            "gina",
            "empty_folder",
        }
        == {r["student_id"] for r in rows}
    )
    for col in (
        "student_id",
        "assignment",
        "score",
        "max_score",
        "timestamp",
        "exercise",
        "compiled",
        "correct",
        "speedup",
        "threshold",
        "message",
    ):
        assert col in next(iter(book.values()))
    assert book["good_naive"]["correct"] == "True" and book["good_naive"]["compiled"] == "True"
    if BACKEND == "cpu":
        assert book["good_naive"]["passed"] == "True" and book["good_naive"]["score"] == "1.0"
        assert book["frank"]["passed"] == "True", book["frank"]["message"]
    assert book["wrong_index"]["correct"] == "False" and book["wrong_index"]["score"] == "0.0"
    assert book["oob_write"]["passed"] == "False"
    assert "did not finish" in book["hang"]["message"]
    assert "not a UTF-8 text file" in book["binary"]["message"]
    assert book["forbidden_cublas"]["message"].startswith("forbidden:")
    assert "no kernel cell" in book["gina"]["message"] and "# kernel: naive" in book["gina"]["message"]
    assert "no .cu file or notebook" in book["empty_folder"]["message"]
    outcomes = {k: r["outcome"] for k, r in book.items()}
    # wrong_index reads B with K as its row stride: wrong values, and past B's end where K > N (the CPU backend
    # reports that read with its line); which one the verdict names depends on the shapes the seed drew
    oob = "out-of-bounds" in book["wrong_index"]["message"]
    assert outcomes["wrong_index"] == ("crash or out of bounds" if oob else "wrong results")
    assert outcomes["hang"] == "hang"
    assert outcomes["oob_write"] == "crash or out of bounds" and outcomes["forbidden_cublas"] == "forbidden"
    assert outcomes["binary"] == outcomes["gina"] == outcomes["empty_folder"] == "nothing to grade"
    if BACKEND == "cpu":
        assert outcomes["good_naive"] == outcomes["frank"] == "passed"
    js = json.loads(out.with_suffix(".json").read_text())
    assert js["exercise"] == "naive" and len(js["grades"]) == len(book)

    # rerun after one student edits their file: only that one is graded again
    calls = []
    real = grade.grade
    monkeypatch.setattr(grade, "grade", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    shutil.copy(SUBS / "good_reversed_k.cu", folder / "wrong_index.cu")
    batch.run_batch("naive", folder, out, jobs=2, backend=BACKEND, timeout=6, progress=False)
    assert [Path(str(c)).name for c in calls] == ["wrong_index.cu"]
    again = _csv(out)
    assert again["wrong_index"]["correct"] == "True"
    assert again["hang"]["timestamp"] == book["hang"]["timestamp"]


def test_batch_cli_exit_codes(tmp_path, capsys):
    from grader import cli

    assert cli.main(["batch", "naive", str(tmp_path / "nowhere"), "--out", str(tmp_path / "g.csv")]) == 2
    assert cli.main(["batch", "nosuch", str(tmp_path), "--out", str(tmp_path / "g.csv")]) == 2
    d = tmp_path / "one"
    d.mkdir()
    shutil.copy(SUBS / "forbidden_torch.cu", d / "forbidden_torch.cu")
    assert (
        cli.main(
            [
                "batch",
                "naive",
                str(d),
                "--out",
                str(tmp_path / "g.csv"),
                "--backend",
                BACKEND,
                "--quiet",
                "--plot",
                str(tmp_path / "class.png"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "1 submissions, 0 passed, 1 failed" in out and "outcomes: forbidden 1" in out
    assert (tmp_path / "class.png").stat().st_size > 1000


def test_batch_survives_an_internal_error(folder, tmp_path, monkeypatch):
    from grader.classroom import batch
    from grader.judge import grade

    def boom(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(grade, "grade", boom)
    rows = batch.run_batch("naive", folder, tmp_path / "g.csv", jobs=2, backend=BACKEND, progress=False)
    assert len(rows) == 9
    broken = [r for r in rows if r["message"].startswith("could not grade: internal error RuntimeError")]
    assert len(broken) >= 6  # every submission with a source; the rest have their own message
    assert (
        batch.main(
            Namespace(
                exercise="naive",
                dir=str(folder),
                out=str(tmp_path / "g.csv"),
                jobs=2,
                backend=BACKEND,
                thresholds=None,
                quiet=True,
            )
        )
        == 1
    )


def test_unreadable_entries_become_rows_not_crashes(tmp_path):
    """Broken notebooks, a kernel cell with a Python syntax error, an ambiguous student folder,
    an upper-case suffix and two files of one student each get a row that says why; the good
    submission is still graded."""
    from grader.classroom import batch

    d = tmp_path / "subs"
    d.mkdir()
    good = (SUBS / "good_naive.cu").read_text()
    (d / "alice.cu").write_text(good)
    (d / "alice.ipynb").write_text(_notebook(["# kernel: naive\nSOURCE = r'''" + good + "'''"]))
    for name, text in (
        ("nb_null", "null"),
        ("nb_list", "[]"),
        ("nb_cells_str", '{"cells": ["x"]}'),
        ("nb_bad_json", "{"),
        ("nb_source_ints", '{"cells": [{"cell_type": "code", "source": [1, 2]}]}'),
    ):
        (d / f"{name}.ipynb").write_text(text)
    (d / "syntax.ipynb").write_text(_notebook(["# kernel: naive\nSOURCE = r'''" + good + "''' +"]))
    (d / "carol").mkdir()
    (d / "carol" / "a.cu").write_text(good)
    (d / "carol" / "b.cu").write_text(good)
    (d / "UPPER.CU").write_text(good)
    rows = batch.run_batch("naive", d, tmp_path / "g.csv", jobs=2, backend="cpu", progress=False)
    book = {r["student_id"]: r for r in rows}
    assert set(book) == {
        "alice.cu",
        "alice.ipynb",
        "nb_null",
        "nb_list",
        "nb_cells_str",
        "nb_bad_json",
        "nb_source_ints",
        "syntax",
        "carol",
        "UPPER",
    }
    for sid in ("alice.cu", "alice.ipynb", "UPPER"):
        assert book[sid]["correct"], (sid, book[sid]["message"])
    for sid in ("nb_null", "nb_list", "nb_cells_str", "nb_bad_json", "nb_source_ints", "syntax", "carol"):
        assert batch.outcome(book[sid]) == "nothing to grade", (sid, book[sid]["message"])
    assert "not valid Python" in book["syntax"]["message"]
    assert "several candidate files" in book["carol"]["message"]


def test_odd_names_and_a_notebook_naming_a_file(tmp_path):
    """A folder name that is not UTF-8 (from a zip), a student id a spreadsheet would run as a
    formula, and a notebook whose SOURCE is a path (to the shipped reference) are all graded into
    a gradebook that opens cleanly; the path is graded as the text it is, never as a file."""
    import os
    from grader.classroom import batch

    d = tmp_path / "subs"
    d.mkdir()
    good = (SUBS / "good_naive.cu").read_text()
    odd = os.fsdecode(b"Jos\xe9")  # a Latin-1 name: a lone surrogate in Python
    (d / odd).mkdir()
    (d / odd / "k.cu").write_text(good)
    (d / "=HYPERLINK(1).cu").write_text(good)
    ref = Path(__file__).resolve().parent.parent / "kernels" / "01_naive.cu"
    (d / "pathy.ipynb").write_text(_notebook([f"# kernel: naive\nSOURCE = r'{ref}'"]))
    out = tmp_path / "g.csv"
    rows = batch.run_batch("naive", d, out, jobs=2, backend="cpu", progress=False)
    book = _csv(out)  # UTF-8, readable
    assert len(rows) == len(book) == 3
    assert book["Jos\\xe9"]["correct"] == "True"
    assert "'=HYPERLINK(1)" in book and book["'=HYPERLINK(1)"]["correct"] == "True"
    assert book["pathy"]["correct"] == "False"
    json.loads((tmp_path / "g.json").read_text())
    with pytest.raises(Exception, match="name the CSV"):
        batch.run_batch("naive", d, tmp_path / "g.json", backend="cpu", progress=False)


def test_a_gradebook_folder_made_by_the_run_costs_no_verdict(tmp_path):
    """--out in a folder that does not exist yet: the run makes it before any worker starts, so the
    sandbox's policy (which hides the gradebook's folder) does not change while verdicts run (it did:
    the template restarted mid-run and took a running verdict with it)."""
    from grader.classroom import batch

    d = tmp_path / "subs"
    d.mkdir()
    for i in range(4):
        shutil.copy(SUBS / "good_naive.cu", d / f"s{i}.cu")
    out = tmp_path / "new" / "deeper" / "grades.csv"
    batch.run_batch("naive", d, out, jobs=2, backend="cpu", progress=False)
    book = _csv(out)
    assert sorted(book) == [f"s{i}" for i in range(4)]
    assert all(r["correct"] == "True" for r in book.values()), [r["message"] for r in book.values()]


def test_a_file_name_that_is_not_utf8_or_holds_a_newline_is_graded_as_a_file(tmp_path):
    """A file name is a name: bytes that are not UTF-8 give no traceback, and a newline followed by a
    preprocessor line adds nothing to the source (the name goes into the build's #line directive)."""
    import os

    from grader.judge import grade

    good = (SUBS / "good_naive.cu").read_text()
    for raw in (b"eve\xff.cu", b'a"\n#error injected\n.cu'):
        path = tmp_path / os.fsdecode(raw)
        path.write_text(good)
        r = grade.grade("naive", path, backend="cpu")
        assert r.compiled and r.correct, r.message
        r = grade.grade("naive", str(path), backend="cpu")  # as the command line passes it
        assert r.compiled and r.correct, r.message


def test_a_file_that_does_not_compile_is_compiled_once(tmp_path, monkeypatch):
    """Phase 2 reuses phase 1's compile error (a compile that hits the time limit costs it once)."""
    from grader.classroom import batch
    from grader.compile import cpu

    d = tmp_path / "subs"
    d.mkdir()
    broken = (SUBS / "compile_error.cu").read_text() + f"\n// {tmp_path.name}\n"  # not in any cache yet
    (d / "bob.cu").write_text(broken)
    calls = []
    real = cpu.compile_library
    monkeypatch.setattr(cpu, "compile_library", lambda *a, **k: calls.append(1) or real(*a, **k))
    rows = batch.run_batch("naive", d, tmp_path / "g.csv", jobs=1, backend="cpu", progress=False)
    assert rows[0]["message"].startswith("does not compile") and len(calls) == 1


def test_a_student_folder_is_graded_on_its_shallowest_marked_file(tmp_path):
    """kernel.cu and old/kernel.cu both marked: kernel.cu was passed over for old/kernel.cu (the last of the
    sorted paths). The nearest to the folder's top wins; two marked files equally near are refused."""
    from grader.classroom import batch
    from grader.judge.submissions import discover

    good = "// grader: naive\n" + (SUBS / "good_naive.cu").read_text()
    for student, files in (("carol", ("kernel.cu", "old/kernel.cu", "old/older/v1.cu")), ("dan", ("a.cu", "b.cu"))):
        for f in files:
            (tmp_path / student / f).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / student / f).write_text(good)
    (tmp_path / "erin" / "old").mkdir(parents=True)  # unmarked: named nearest wins too
    (tmp_path / "erin" / "naive.cu").write_text(good[17:])
    (tmp_path / "erin" / "old" / "naive.cu").write_text(good[17:])
    subs = {s.student_id: s for s in discover(tmp_path, "naive")}
    assert subs["carol"].path == tmp_path / "carol" / "kernel.cu"
    assert subs["erin"].path == tmp_path / "erin" / "naive.cu"
    assert subs["dan"].source is None and "several files marked `// grader: naive`" in subs["dan"].problem
    assert "a.cu, b.cu" in subs["dan"].problem
    assert batch.outcome({"message": subs["dan"].problem}) == "nothing to grade"


def test_a_link_out_of_the_students_folder_is_refused(tmp_path):
    """carol/kernel.cu -> kernels/01_naive.cu (a zip can carry the link) passed; now neither it, a folder
    that is a link elsewhere, nor a top-level link out of DIR is graded. A link inside the folder is fine."""
    from grader.classroom import batch
    from grader.judge.submissions import discover

    ref = Path(__file__).resolve().parent.parent / "kernels" / "01_naive.cu"
    d = tmp_path / "subs"
    (d / "carol").mkdir(parents=True)
    (d / "carol" / "kernel.cu").symlink_to(ref)
    (d / "alice.cu").symlink_to(ref)
    (d / "bob").symlink_to(ref.parent, target_is_directory=True)
    (d / "dora" / "src").mkdir(parents=True)
    (d / "dora" / "src" / "real.cu").write_text((SUBS / "good_naive.cu").read_text())
    (d / "dora" / "naive.cu").symlink_to(d / "dora" / "src" / "real.cu")
    subs = {s.student_id: s for s in discover(d, "naive")}
    for sid, shown in (("carol", "carol/kernel.cu"), ("alice", "alice.cu"), ("bob", "bob/")):
        assert subs[sid].source is None, sid
        assert subs[sid].problem.startswith(f"{shown} is a link to a file outside"), subs[sid].problem
        assert batch.outcome({"message": subs[sid].problem}) == "nothing to grade"
    assert subs["dora"].source and subs["dora"].path.name == "naive.cu"


def test_a_fifo_or_socket_named_like_a_kernel_file_gets_a_row_that_says_so(tmp_path):
    """bob/kernel.cu a FIFO (a zip or a shared folder can hold one) got "no .cu file or notebook", and a
    top-level FIFO got no row at all; opening one would wait for a writer forever. Each gets a row naming it."""
    import os
    import socket

    from grader.judge.submissions import discover

    d = tmp_path / "subs"
    (d / "bob").mkdir(parents=True)
    os.mkfifo(d / "bob" / "kernel.cu")
    os.mkfifo(d / "erin.cu")
    (d / "fay").mkdir()
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(d / "fay" / "naive.cu"))
        subs = {s.student_id: s for s in discover(d, "naive")}
    assert set(subs) == {"bob", "erin", "fay"}
    for sid, shown, kind in (
        ("bob", "bob/kernel.cu", "FIFO"),
        ("erin", "erin.cu", "FIFO"),
        ("fay", "fay/naive.cu", "socket"),
    ):
        assert subs[sid].source is None, sid
        assert subs[sid].problem.startswith(f"{shown} is a {kind}"), subs[sid].problem
        assert "not a regular file" in subs[sid].problem


def _access_miss_row(**kw):
    from types import SimpleNamespace

    from grader.classroom import batch
    from grader.judge.submissions import Submission

    r = SimpleNamespace(
        passed=False,
        correct=True,
        compiled=True,
        speedup=None,
        threshold=None,
        pct_cublas=None,
        hint="tile it",
        evidence="access counts (CPU, no timing)",  # grade's, for a miss as for a pass
        message="correct, but the access profile at 256x256x256 misses this exercise's idea (CPU backend: 8 "
        "blocks):\n  bytes_per_flop 2.0: the exercise needs at most 0.5",
    )
    return batch._row(Submission("ann", Path("ann.cu"), "x"), "tiled", "cpu", "k", "v", r)


def test_a_kernel_that_misses_its_access_bound_is_called_so():
    """It was "timing not accepted" with evidence "correctness only", and Gradescope said a correct
    kernel gets the speed points: say what happened."""
    from grader.classroom import lms

    row = _access_miss_row()
    assert row["outcome"] == "misses the access bound (CPU)"
    assert row["evidence"] == "access counts (CPU, no timing)"
    speed = lms.gradescope_results([row], {"exercise": "tiled", "backend": "cpu"})["tests"][1]
    assert speed["score"] == 0 and "misses the access bound (CPU)" in speed["output"]
    assert "a correct kernel gets these points" not in speed["output"] and "bytes_per_flop 2.0" in speed["output"]


def test_batch_refuses_an_out_it_cannot_write_before_grading(tmp_path, capsys):
    """--out naming a folder crashed with a traceback once the first verdict was written; --out under a
    file, likewise. Both are checked first: exit 2, nothing graded."""
    from grader import cli

    d = tmp_path / "subs"
    d.mkdir()
    (d / "ann.cu").write_text("")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir.csv").mkdir()
    for out, extra in (
        (tmp_path / "adir.csv", []),
        (tmp_path / "afile" / "grades.csv", []),
        (tmp_path / "afile" / "results.json", ["--format", "gradescope"]),
    ):
        code = cli.main(["batch", "naive", str(d), "--out", str(out), "--backend", "cpu", "--quiet", *extra])
        err = capsys.readouterr().err
        assert code == 2 and f"--out {out}" in err and "cannot write there" in err, (out, err)
    assert not list(tmp_path.glob("**/*.json"))


def test_an_out_of_bounds_read_is_called_so_in_the_gradebook(tmp_path):
    """`check` names the read and its line; batch's outcome said "wrong results" for it (an out-of-bounds write
    was "crash or out of bounds"). Reads whose value is used and reads whose value is thrown away alike."""
    from grader import cli

    d = tmp_path / "subs"
    d.mkdir()
    for name in ("oob_read.cu", "tile_load_k_guard_only.cu"):
        shutil.copy(SUBS / name, d / name)
    out = tmp_path / "grades.csv"
    assert cli.main(["batch", "naive", str(d), "--out", str(out), "--backend", "cpu", "--quiet"]) == 0
    book = _csv(out)
    for sid in ("oob_read", "tile_load_k_guard_only"):
        assert book[sid]["outcome"] == "crash or out of bounds", book[sid]
        assert re.search(rf"out-of-bounds read of \w+ at {sid}\.cu:\d+", book[sid]["message"]), book[sid]
