"""Every step that reads a submission's text in the grader's own process is bounded in time and memory
(grader.bounded runs it in a limited child, or a size cap refuses the file before it is read): one crafted
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
    from grader.cpu import rewrite

    monkeypatch.setattr(rewrite, "REWRITE_TIMEOUT_S", 2.0)
    box = _within(20, rewrite.rewrite, hostile)
    assert isinstance(box.get("error"), rewrite.LaunchSyntaxError), box  # a failed verdict, as a compile error
    assert "rewrite of this file stopped: it took more than 2 s" in str(box["error"])


def test_an_honest_file_is_rewritten_as_before():
    from pathlib import Path

    from grader.cpu import rewrite

    src = (Path(__file__).resolve().parent.parent / "kernels" / "02_tiled.cu").read_text()
    here, there = rewrite._rewrite(src), rewrite.rewrite(src)
    assert (there.text, there.uses_barriers) == (here.text, here.uses_barriers) and "cuda_emu::launch" in there.text
