"""grade.Result.phases: where a verdict's time went (benchmarks/verdict_latency.py prints it)."""

import time
from pathlib import Path

from grader.judge import grade as grading

KERNELS = Path(__file__).resolve().parent.parent / "kernels"


def test_phases_account_for_the_verdicts_time():
    t0 = time.perf_counter()
    res = grading.grade("naive", str(KERNELS / "01_naive.cu"), backend="cpu")
    wall = time.perf_counter() - t0
    assert res.passed, res.message
    p = res.phases
    assert {"read_and_scan", "build", "cases_and_baseline", "worker"} <= set(p), p
    assert all(v >= 0 for v in p.values()), p
    parts = sum(v for k, v in p.items() if not k.startswith("worker_"))  # worker_* lie inside "worker"
    assert 0.5 * wall < parts <= wall + 0.01, (p, wall)
    assert 0 < p["worker_first_result"] <= p["worker_last_result"] <= p["worker_done"] <= p["worker"] + 0.01, p


def test_a_compile_error_reports_the_phases_it_reached():
    res = grading.grade("naive", '#include <cuda_runtime.h>\nextern "C" void gemm(\n', backend="cpu")
    assert not res.compiled and "build" not in res.phases and "read_and_scan" in res.phases


def test_the_worker_breakdown_runs_the_worker_in_process_with_the_runner():
    """benchmarks/worker_breakdown.py stands in for the sandboxed worker: it must send what sandbox.Worker sends
    (the native runner and the libraries as bytes), or the in-process worker fails on its request."""
    import subprocess
    import sys

    root = KERNELS.parent
    out = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "worker_breakdown.py"), "naive", "cpu"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=root,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "naive: PASSED" in out.stdout, out.stdout[-2000:]
    assert "worker.py" in out.stdout and "messages" in out.stdout  # the profile of serve() and its arrivals
