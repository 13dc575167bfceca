"""Every step that reads a submission's text in the grader's own process is bounded in time and memory
(grader.compile.bounded runs it in a limited child, or a size cap refuses the file before it is read): one crafted
file costs its own verdict a few seconds, never the batch. Each test crafts the hostile input and runs the
step in a child it waits for with a time limit, so that a regression fails instead of stalling the suite."""

from __future__ import annotations

import multiprocessing
import time

import pytest


def _run(conn, fn, args):
    try:
        conn.send(("value", fn(*args)))
    except BaseException as e:  # noqa: BLE001 — handed to the test
        conn.send(("error", e))


def _within(seconds: float, fn, *args) -> dict:
    """fn(*args) in a forked child: {"value": ...} or {"error": exception}; the test fails (and the child
    is killed) when it takes longer than `seconds`, so that a regression cannot stall the suite."""
    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_run, args=(there, fn, args), daemon=True)
    start = time.perf_counter()
    child.start()
    ready = here.poll(seconds)
    if not ready:
        child.kill()
    child.join(5)
    assert ready, f"{getattr(fn, '__name__', fn)} still running after {seconds} s"
    kind, value = here.recv()
    return {kind: value, "seconds": time.perf_counter() - start}


@pytest.mark.parametrize(
    "hostile",
    [
        "__device__ int a;\n" * 50_000,  # each declaration scanned the whole text before it: minutes
        "namespace " * 90_000 + "( {",  # a regex that backtracks over the whole prefix at every `{`
        "".join(f"int v{i};\n" for i in range(20_000)) + "__global__ void k(){" + "x;" * 100_000 + "}",
    ],
    ids=["device-variables", "namespace-backtracking", "host-variables"],
)
def test_the_cpu_rewrite_of_a_crafted_file_stops_at_its_limit(monkeypatch, hostile):
    from grader.compile.cpu import rewrite

    monkeypatch.setattr(rewrite, "REWRITE_TIMEOUT_S", 2.0)
    box = _within(20, rewrite.rewrite, hostile)
    assert isinstance(box.get("error"), rewrite.LaunchSyntaxError), box  # a failed verdict, as a compile error
    assert "rewrite of this file stopped: it took more than 2 s" in str(box["error"])


def test_an_honest_file_is_rewritten_as_before():
    from pathlib import Path

    from grader.compile.cpu import rewrite

    src = (Path(__file__).resolve().parent.parent / "kernels" / "02_tiled.cu").read_text()
    here, there = rewrite._rewrite(src), rewrite.rewrite(src)
    assert (there.text, there.uses_barriers) == (here.text, here.uses_barriers) and "cuda_emu::launch" in there.text


def _limit_memory(extra: int) -> None:
    """In the forked child: at most `extra` bytes of address space beyond what it has now."""
    import resource

    with open("/proc/self/status") as f:
        size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (size + extra, size + extra))


def _read_limited(fn, extra, *args):
    _limit_memory(extra)
    return fn(*args)


def _notebook(path, *cells: str):
    import json

    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells], "nbformat": 4}))
    return path


def test_a_notebook_built_to_exhaust_memory_costs_its_submission_only(tmp_path, monkeypatch):
    """json makes 3 bytes of `{},` a 64-byte dict: 20 MB of them took 430 MB of the grader's own process.
    Parsed in the limited child (here allowed 300 MB), the notebook is a row that says why."""
    from grader.compile import bounded
    from grader.judge import submissions
    from grader.errors import SubmissionError

    nb = tmp_path / "lab.ipynb"
    nb.write_text('{"cells": [], "padding": [' + "{}," * 6_000_000 + "{}]}")
    monkeypatch.setattr(bounded, "MEMORY_BYTES", 300 << 20)
    box = _within(60, _read_limited, submissions.notebook_source, 300 << 20, nb, "naive")
    assert isinstance(box.get("error"), SubmissionError), box
    assert "lab.ipynb is not a readable notebook (reading it stopped: it took more than 300 MB of memory" in str(
        box["error"]
    )


def test_a_notebook_built_to_take_minutes_stops_at_its_limit(tmp_path, monkeypatch):
    """Each cell after the kernel cell is parsed (does it rewrite SOURCE?): 12 cells of 1 MB of `1+1+...`
    took 1.5 s each. The child stops at its time limit (here 2 s)."""
    from grader.judge import submissions
    from grader.errors import SubmissionError

    nb = _notebook(
        tmp_path / "lab.ipynb", "# kernel: naive\nSOURCE = r'''\n// k\n'''", *["x = " + "1+" * 500_000 + "1"] * 12
    )
    monkeypatch.setattr(submissions, "NOTEBOOK_TIMEOUT_S", 2.0)
    box = _within(60, submissions.notebook_source, nb, "naive")
    assert isinstance(box.get("error"), SubmissionError), box
    assert "reading it stopped: it took more than 2 s" in str(box["error"]) and box["seconds"] < 10


def test_a_kernel_cell_nested_too_deeply_is_a_message(tmp_path):
    from grader.judge import submissions
    from grader.errors import SubmissionError

    nb = _notebook(tmp_path / "lab.ipynb", "# kernel: naive\nSOURCE = r'''\n// k\n'''\nx = " + "-" * 100_000 + "1")
    with pytest.raises(SubmissionError, match="nested too deeply"):
        submissions.notebook_source(nb, "naive")


@pytest.mark.parametrize("suffix", [".cu", ".ipynb"])
def test_a_file_of_gigabytes_is_refused_unread(tmp_path, suffix):
    """A sparse 4 GB file (a zip can carry one) was read whole before the 1 MB cap refused it: now its size
    is checked first, by check and by batch alike, in a child allowed 256 MB more than it holds."""
    from grader.classroom import batch
    from grader.judge import submissions

    big = tmp_path / "subs" / f"huge{suffix}"
    big.parent.mkdir()
    with big.open("wb") as f:
        f.truncate(4 << 30)
    box = _within(30, _read_limited, submissions.read, 256 << 20, str(big), "naive")
    assert "error" in box and "at most" in str(box["error"]), box
    box = _within(30, _read_limited, submissions.discover, 256 << 20, big.parent, "naive")
    (row,) = box["value"]
    assert row.source is None and "at most" in row.problem, row
    assert batch.outcome({"message": row.problem}) in ("forbidden", "nothing to grade")
