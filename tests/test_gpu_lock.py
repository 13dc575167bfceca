"""batch --per-gpu: children queue on a lock file for the GPU, and their time limit starts when
they hold it. The lock is the same on the CPU backend, so CI checks it there."""

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from grader.judge import grade
from grader.errors import CannotGrade

GOOD = Path(__file__).resolve().parent / "submissions" / "good_naive.cu"


def _hold(path: Path):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_child_waits_for_the_lock_and_its_time_limit_starts_when_it_holds_it(tmp_path):
    grade.grade("naive", GOOD, backend="cpu")  # build (cached), so the timed call below only runs
    lock = tmp_path / "gpu0.lock"
    fd = _hold(lock)
    threading.Timer(3.0, os.close, args=(fd,)).start()  # closing the fd releases the lock
    t0 = time.monotonic()
    r = grade.grade("naive", GOOD, backend="cpu", timeout=20, gpu_lock=str(lock), lock_wait=60)
    waited = time.monotonic() - t0
    assert r.correct and r.passed, r.message
    assert waited >= 3.0  # it could not run before the lock was free


def test_time_limit_counts_from_the_lock_not_from_the_start(tmp_path):
    seed = 12345  # the same shapes every time: the timed run below costs what the measured one did
    grade.grade("naive", GOOD, backend="cpu", seed=seed)
    lock = tmp_path / "gpu0.lock"
    fd = _hold(lock)
    one_run = time.monotonic()
    grade.grade("naive", GOOD, backend="cpu", seed=seed)
    one_run = time.monotonic() - one_run
    # held longer than the run's own limit: the child must still not be killed as a hang
    limit = max(6.0, 3 * one_run)  # room for a loaded machine
    threading.Timer(limit + 1.0, os.close, args=(fd,)).start()
    r = grade.grade("naive", GOOD, backend="cpu", seed=seed, timeout=limit, gpu_lock=str(lock), lock_wait=60)
    assert r.correct and r.passed, r.message


def test_a_lock_that_never_frees_is_not_blamed_on_the_kernel(tmp_path):
    lock = tmp_path / "gpu0.lock"
    fd = _hold(lock)
    try:
        with pytest.raises(CannotGrade, match="waited .* for the GPU"):
            grade.grade("naive", GOOD, backend="cpu", timeout=2, gpu_lock=str(lock), lock_wait=2)
    finally:
        os.close(fd)
