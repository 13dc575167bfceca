"""Where a GPU verdict's worker spends its time: one grader.check, its worker run in this process.

    python benchmarks/worker_breakdown.py register_blocked      # one exercise per process (a cold start)
    python benchmarks/worker_breakdown.py tiled cpu             # the CPU backend's worker instead

grade.grade is called as usual, except that the GPU worker runs here (grader.run.worker.serve under cProfile, in a thread: its
warm-up and the native runner's start while nvcc runs) instead of in a sandboxed child; the CPU-backend
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
    """Stands in for sandbox.Worker: grader.run.worker.serve runs in a thread of this process, under cProfile,
    from the start; it gets the warm-up message at once (the native runner starts during the build, as in the real
    child) and the request, its files and the cases when run."""

    def __init__(self, warm: dict | None):
        self.t0 = time.monotonic()
        stdin_r, self.stdin_w = os.pipe()
        self.r_fd, w_fd = os.pipe()
        self.prof = cProfile.Profile()
        self.returncode = None

        def serve():
            self.returncode = self.prof.runcall(worker.serve, w_fd, stdin_r)
            os.close(w_fd)

        self.serving = threading.Thread(target=serve)
        self.serving.start()
        if warm:
            protocol.send(self.stdin_w, *sandbox.warm_message(warm))

    def close(self) -> None:
        os.close(self.stdin_w)
        self.serving.join()

    def run(self, request, cases, timeout=sandbox.RUN_TIMEOUT_S, lock_wait=0.0):
        result = sandbox.ChildRun()
        request = request | {"token": "t"}
        blobs = sandbox.file_blobs(sandbox.with_files(request))
        t0 = time.monotonic()
        print(f"run() at {t0 - self.t0:.3f} s after the worker's start (the build ran meanwhile)")

        def feed():
            for meta, arrays in [(request, None), *blobs, *cases]:
                protocol.send(self.stdin_w, meta, arrays)
            os.close(self.stdin_w)

        feeding = threading.Thread(target=feed)
        feeding.start()
        while (m := protocol.recv(self.r_fd)) is not None:
            m[0].pop("token", None)
            result.messages.append(m)
            result.arrivals.append(time.monotonic() - t0)
        self.serving.join()
        feeding.join()
        result.returncode = self.returncode
        kinds = [
            "timing" if "timing" in m else f"case {m.get('case')}" if "case" in m else next(iter(m), "?")
            for m, _ in result.messages
        ]
        print(f"worker {time.monotonic() - t0:.3f} s from the request, {len(kinds)} messages")
        print("  arrivals: " + ", ".join(f"{k} {a:.3f}" for k, a in zip(kinds, result.arrivals)))
        timing = next((m for m, _ in result.messages if "timing" in m), None)
        if timing:
            print(
                "  timed: "
                + ", ".join(f"{k} {v['median_ms']:.3f} ms x{v['runs']}" for k, v in timing["timing"].items())
            )
        s = io.StringIO()
        pstats.Stats(self.prof, stream=s).sort_stats("cumulative").print_stats(35)
        print("\n".join(s.getvalue().splitlines()[:60]))
        return result


def main(exercise: str, backend: str = "cuda") -> int:
    from grader.spec import exercises

    real = sandbox.start_worker
    stood_in = []

    def start_worker(gpu=None, extra_env=None, gpu_lock=None, warm=None):
        if stood_in or warm is None or warm.get("backend") != backend:  # the CPU-backend profile beside: as usual
            return real(gpu=gpu, extra_env=extra_env, gpu_lock=gpu_lock, warm=warm)
        stood_in.append(InProcess(warm))
        return stood_in[-1]

    sandbox.start_worker = start_worker
    source = exercises.get(exercise).reference_path.read_text() + f"\n// {time.time_ns()}\n"
    t0 = time.perf_counter()
    r = grade.grade(exercise, source, backend=backend)
    print(f"{exercise}: {'PASSED' if r.passed else 'FAILED'} in {time.perf_counter() - t0:.2f} s; phases {r.phases}")
    return 0 if stood_in else 1


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(main(args[0] if args else "register_blocked", *args[1:2]))
