"""The grader on a GPU: speed verdicts, the timing's defences and repeatability (H200)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"
SUBS = ROOT / "tests" / "submissions"


def test_work_on_a_hidden_stream_is_not_a_pass():
    from grader.compile import forbidden
    from grader.judge import grade

    path = SUBS / "gpu" / "side_stream.cu"
    assert forbidden.scan(path.read_text())  # the scan alone refuses it...
    r = grade.grade("tiled", path, backend="cuda", scan=False)  # ...and so do the stream check and the timing
    print(r.message, r.timing)
    assert not r.passed and ("implausible" in r.message or "another stream" in r.message), r.message


def test_a_remembered_answer_fails_in_the_timed_runs():
    from grader.judge import grade

    r = grade.grade("tiled", SUBS / "gpu" / "cached_result.cu", backend="cuda")
    print(r.message)
    assert r.compiled and not r.correct and not r.passed
    assert "wrong in the timed runs" in r.message and "inputs drawn afresh every round" in r.message


def test_repeated_speedups_within_5_percent_and_cached_check_time():
    from grader.judge import grade

    grade.grade("tiled", KERNELS / "02_tiled.cu", backend="cuda")  # builds (cached after)
    speedups, seconds = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        r = grade.grade("tiled", KERNELS / "02_tiled.cu", backend="cuda")
        seconds.append(time.perf_counter() - t0)
        assert r.passed, r.message
        speedups.append(r.speedup)
    mid = sorted(speedups)[1]
    spread = max(abs(s / mid - 1) for s in speedups)
    print(
        f"tiled speed-ups {[round(s, 3) for s in speedups]} (±{100 * spread:.1f}%), "
        f"cached check {[round(s, 1) for s in seconds]} s"
    )
    assert spread <= 0.05
    assert min(seconds) <= 10.0


@pytest.mark.parametrize("exercise", ["naive", "tiled", "conflict_free", "register_blocked", "relu_mask", "gemm_relu"])
def test_reference_passes_its_threshold_with_margin(exercise):
    from grader.spec import exercises
    from grader.judge import grade

    ex = exercises.get(exercise)
    r = grade.grade(exercise, ex.reference_path, backend="cuda")
    print(f"{exercise}: {r.message}")
    assert r.passed and r.speedup >= ex.threshold, r.message
    assert r.timing and "baseline" in r.timing
