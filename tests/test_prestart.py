"""The worker starts while the compiler runs (grade._start_early), and ends when nothing uses it."""

import time
from pathlib import Path

import pytest

from grader.judge import grade as grading
from grader.run import sandbox
from grader.compile import toolchain

KERNELS = Path(__file__).resolve().parent.parent / "kernels"


@pytest.fixture
def recorded(monkeypatch):
    """Every worker grade starts, with when it was started, and when each build returned."""
    events = {"started": [], "built": [], "workers": []}
    start, build = sandbox.start_worker, toolchain.build

    def start_worker(*a, **kw):
        events["started"].append(time.monotonic())
        w = start(*a, **kw)
        events["workers"].append(w)
        return w

    def slow_build(*a, **kw):
        time.sleep(1.0)  # a compiler slower than the worker's start
        out = build(*a, **kw)
        events["built"].append(time.monotonic())
        return out

    monkeypatch.setattr(sandbox, "start_worker", start_worker)
    monkeypatch.setattr(toolchain, "build", slow_build)
    return events


def test_the_worker_starts_before_the_build_ends(recorded):
    res = grading.grade("naive", str(KERNELS / "01_naive.cu"), backend="cpu", profile_on_gpu=False)
    assert res.passed, res.message
    # the graded run's worker (the first started) was under way before its library existed
    assert recorded["started"] and recorded["started"][0] < recorded["built"][0]


def test_a_worker_started_for_a_file_that_does_not_compile_is_ended(recorded):
    res = grading.grade("naive", '#include <cuda_runtime.h>\nextern "C" void gemm(\n', backend="cpu")
    assert not res.compiled
    assert recorded["workers"], "no worker was started while the compiler ran"
    w = recorded["workers"][0]
    deadline = time.monotonic() + 10
    while not w.used and time.monotonic() < deadline:  # closed by a callback once it has started
        time.sleep(0.05)
    assert w.used
    w.child.wait(timeout=10)  # the process is gone (TimeoutExpired if it were still waiting for a request)


def test_batch_per_gpu_starts_its_worker_only_after_the_build(recorded, tmp_path):
    # with a GPU lock the worker must not start early: it would hold the lock while idle
    res = grading.grade(
        "naive", str(KERNELS / "01_naive.cu"), backend="cpu", gpu_lock=str(tmp_path / "gpu0.lock"), profile_on_gpu=False
    )
    assert res.passed, res.message
    assert recorded["started"][0] > recorded["built"][0]


def test_a_library_that_cannot_be_read_ends_the_worker(tmp_path):
    w = sandbox.start_worker()
    request = {"lib": str(tmp_path / "gone.so"), "exercise": "naive", "backend": "cpu", "schedules": [0]}
    with pytest.raises(OSError):
        w.run(request, [], timeout=30)
    w.child.wait(timeout=10)  # it has exited (TimeoutExpired if it were still waiting for the bytes)


def test_a_worker_ended_right_after_its_start_goes_at_once():
    # a verdict that fails to compile ends its early worker, possibly microseconds after the fork: the
    # template's kill must reach a child that has not yet moved to its own process group (it waited
    # 30 s, then gave up the template and every verdict running in it)
    for _ in range(30):
        w = sandbox.start_worker()
        t0 = time.monotonic()
        w.close()
        assert time.monotonic() - t0 < 10 and not getattr(w.child, "lost", False)
