"""Where a GPU verdict's worker spends its time: one grader.check, its worker run in this process.

    python benchmarks/worker_breakdown.py register_blocked      # one exercise per process (a cold start)

grade.grade is called as usual, except that the GPU worker runs here (its warm-up while nvcc
runs, then grader.run.worker.serve under cProfile) instead of in a sandboxed child; the CPU-backend
profile beside it runs as usual. Prints when each result arrived (seconds from the worker's start: the first case includes
the CUDA context), the steps' times, and the functions with the most cumulative time. For
issue #13.10 (benchmarks/verdict_latency.py measures the whole verdict)."""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from grader.judge import grade
from grader.run import protocol, sandbox, worker  # noqa: E402


class InProcess:
    """Stands in for sandbox.Worker: warm_up when started (during the build, as the real one), and
    grader.run.worker.serve here, under cProfile, when run."""

    def __init__(self, warm: dict | None):
        t0 = time.monotonic()
        if warm:
            worker.warm_up(warm)
        print(f"warm-up (during the build): {time.monotonic() - t0:.3f} s")

    def close(self) -> None:
        pass

    def run(self, request, cases, timeout=sandbox.RUN_TIMEOUT_S, lock_wait=0.0):
        import torch

        result = sandbox.ChildRun()
        stdin_r, stdin_w = os.pipe()
        r_fd, w_fd = os.pipe()
        t0 = time.monotonic()

        def feed():
            protocol.send(stdin_w, request | {"token": "t"})
            for meta, arrays in cases:
                protocol.send(stdin_w, meta, arrays)
            os.close(stdin_w)

        def drain():
            while (m := protocol.recv(r_fd)) is not None:
                m[0].pop("token", None)
                result.messages.append(m)
                result.arrivals.append(time.monotonic() - t0)

        threads = [threading.Thread(target=feed), threading.Thread(target=drain)]
        for t in threads:
            t.start()
        print(f"CUDA initialised in this process before the run: {torch.cuda.is_initialized()}")
        prof = cProfile.Profile()
        prof.enable()
        result.returncode = worker.serve(w_fd, stdin_r)
        prof.disable()
        os.close(w_fd)
        threads[1].join()
        kinds = [
            "timing" if "timing" in m else f"case {m.get('case')}" if "case" in m else next(iter(m), "?")
            for m, _ in result.messages
        ]
        print(f"worker {time.monotonic() - t0:.3f} s, {len(kinds)} messages")
        print("  arrivals: " + ", ".join(f"{k} {a:.3f}" for k, a in zip(kinds, result.arrivals)))
        timing = next((m for m, _ in result.messages if "timing" in m), None)
        if timing:
            print(
                "  timed: "
                + ", ".join(f"{k} {v['median_ms']:.3f} ms x{v['runs']}" for k, v in timing["timing"].items())
            )
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(35)
        print("\n".join(s.getvalue().splitlines()[:60]))
        return result


def main(exercise: str) -> int:
    from grader.spec import exercises

    real = sandbox.start_worker

    def start_worker(gpu=None, extra_env=None, gpu_lock=None, warm=None):
        if warm is None or warm.get("backend") != "cuda":  # the CPU-backend profile beside: as usual
            return real(gpu=gpu, extra_env=extra_env, gpu_lock=gpu_lock, warm=warm)
        return InProcess(warm)

    sandbox.start_worker = start_worker
    source = exercises.get(exercise).reference_path.read_text() + f"\n// {time.time_ns()}\n"
    t0 = time.perf_counter()
    r = grade.grade(exercise, source, backend="cuda")
    print(f"{exercise}: {'PASSED' if r.passed else 'FAILED'} in {time.perf_counter() - t0:.2f} s; phases {r.phases}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "register_blocked"))
