"""How long the CPU backend's access profile takes (targets of issue 14: profiling a 256^3 tiled
GEMM <= 1 s; a whole `check` on the CPU backend, profile included, <= 5 s, on a 2-core machine).

    python benchmarks/profile_speed.py [--repeat 3]

Builds are warmed first (the g++ build is cached by content, as in a notebook or a batch re-run).
Each figure is the median of --repeat runs, as wall time and as CPU time (this process and its
children): on a shared machine the load average is printed too, and CPU time is the fairer figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def timed(fn, repeat: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), _cpu()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(_cpu() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    from grader.judge import grade, profile

    tiled = ROOT / "kernels" / "02_tiled.cu"
    profile.run("tiled", tiled, resources=False)  # warm: build
    rows = [
        ("profile tiled 256^3 (sampled, 8 of 64 blocks)", lambda: profile.run("tiled", tiled, resources=False), 1.0),
        ("profile tiled 256^3 (every block)", lambda: profile.run("tiled", tiled, blocks="all", resources=False), None),
    ]
    grade.grade("tiled", tiled, backend="cpu")  # warm: build
    for ex, file in (
        ("tiled", "02_tiled.cu"),
        ("naive", "01_naive.cu"),
        ("register_blocked", "04_register_blocked.cu"),
        ("relu_mask", "06_relu_mask.cu"),
        ("gemm_relu", "07_gemm_relu.cu"),
    ):
        grade.grade(ex, ROOT / "kernels" / file, backend="cpu")  # warm
        rows.append(
            (
                f"check {ex} {file} --backend cpu (profile included)",
                lambda ex=ex, file=file: grade.grade(ex, ROOT / "kernels" / file, backend="cpu"),
                5.0,
            )
        )
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    ok = True
    for name, fn, target in rows:
        wall, cpu = timed(fn, a.repeat)
        met = (
            ""
            if target is None
            else (" (target <= %.0f s: %s)" % (target, "met" if min(wall, cpu) <= target else "MISSED"))
        )
        ok &= target is None or min(wall, cpu) <= target
        print(f"{name:60s} wall {wall:6.2f} s  cpu {cpu:6.2f} s{met}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
