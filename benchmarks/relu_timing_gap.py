"""Why did the grader time the ReLU pair level with PyTorch's (0.98-1.04x) when gpu_capstone.py
timed the same kernels at 1.10x? The same pair, timed several ways in one process (GPU only).
Every way but `old` uses grader.run.timing's defaults: a clean flush (write, then read), rounds that
rotate which function goes first, and a head start (the GPU spins while the host queues the call).

  old      as the grader timed until 2026-12-02: graded, flush="write", no rotation, no head start
  nohead   graded, without the head start only (the host's launch overhead is timed)
  plain    time_gpu on fixed inputs (gpu_capstone.py's way)
  fresh    inputs redrawn before every round (FreshRounds.refresh), no check after it
  graded   refresh before and FreshRounds.check after every round (worker.time_kernels' way)
  swapped  as graded, torch's pair first in the dict
  inputs   only the inputs redrawn before every round (no poisoned outputs, no check)
  poison   only the outputs poisoned before every round (inputs fixed, no check)
  write    as graded, with flush="write" (dirty lines left for the timed call)

Each line gives the median SM and memory clocks that nvidia-smi reported during that way (MHz).

    python benchmarks/relu_timing_gap.py [kernels/06_relu_mask.cu] [WAY...]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch

from grader.run import binding
from grader.spec import contract, exercises
from grader.run.timing import HEAD_START_US, time_gpu
from grader.run.worker import FreshRounds, _poison_word

WAYS = ("old", "nohead", "plain", "fresh", "graded", "swapped", "inputs", "poison", "write", "graded")


class Clocks:
    """nvidia-smi's SM and memory clocks, sampled in a thread while a way is timed."""

    def __init__(self):
        self.samples: list[tuple[int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        query = ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem", "--format=csv,noheader,nounits", "-i", "0"]
        while not self._stop.is_set():
            try:
                sm, mem = subprocess.run(query, capture_output=True, text=True, timeout=5).stdout.split(",")[:2]
                self.samples.append((int(sm), int(mem)))
            except (OSError, ValueError, subprocess.SubprocessError):
                return
            time.sleep(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def __str__(self):
        if not self.samples:
            return "clocks n/a"
        return "SM %d / mem %d MHz" % tuple(statistics.median(s[i] for s in self.samples) for i in (0, 1))


def pairs(mod, ins, m, n):
    """Our pair and torch's, on their own output buffers: (ours, theirs, outs)."""
    Y, dX = torch.empty_like(ins["X"]), torch.empty_like(ins["X"])
    mask = torch.empty(m, contract.mask_words(n), dtype=torch.int32, device="cuda")
    saved = torch.relu(ins["X"])
    ours = lambda: (mod.launch.relu_forward(ins["X"], Y, mask), mod.launch.relu_backward(mask, ins["dY"], dX))  # noqa: E731
    theirs = lambda: (torch.relu(ins["X"]), torch.ops.aten.threshold_backward(ins["dY"], saved, 0))  # noqa: E731
    return ours, theirs, {"Y": Y, "mask": mask, "dX": dX}


def main() -> int:
    args = sys.argv[1:]
    path = args.pop(0) if args and args[0].endswith(".cu") else str(ROOT / "kernels" / "06_relu_mask.cu")
    ways = args or WAYS
    mod = binding.load(path, "relu_mask", backend="cuda")
    m = n = 8192
    ins = exercises.kind("relu_mask").random_inputs((m, n), torch.Generator(device="cuda").manual_seed(1))
    ours, theirs, outs = pairs(mod, ins, m, n)
    check_s = []  # how long graded's checks took (host seconds)
    for way in ways:
        fr = FreshRounds("relu_mask", (m, n), ins, outs, seed=7)

        def timed_check(fr=fr):
            t0 = time.perf_counter()
            stop = fr.check()
            check_s.append(time.perf_counter() - t0)
            return stop

        after = {
            "graded": timed_check,
            "swapped": fr.check,
            "old": fr.check,
            "nohead": fr.check,
            "write": fr.check,
        }.get(way)
        before = {
            "plain": None,
            "inputs": lambda fr=fr: [
                fr.ins[k].copy_(v) for k, v in exercises.kind("relu_mask").random_inputs((m, n), fr.gen).items()
            ],
            "poison": lambda: [t.view(torch.int32).fill_(_poison_word(t.dtype)) for t in outs.values()],
        }.get(way, fr.refresh)
        fns = {"torch": theirs, "kernel": ours} if way == "swapped" else {"kernel": ours, "torch": theirs}
        with Clocks() as clocks:
            t = time_gpu(
                fns,
                max_seconds=4.0,
                before_round=before,
                after_round=after,
                rotate=way != "old",
                flush="write" if way in ("old", "write") else "clean",
                head_start_us=0 if way in ("old", "nohead") else HEAD_START_US,
            )
        print(
            f"{way:<8} kernel {t['kernel'].median_ms:.4f} ms  torch {t['torch'].median_ms:.4f} ms  "
            f"speed-up {t['torch'].median_ms / t['kernel'].median_ms:.3f}  ({t['kernel'].runs} rounds, "
            f"spread {t['kernel'].spread:.2f}; {clocks}"
            + (f"; check {1e3 * statistics.median(check_s):.1f} ms" if way == "graded" and check_s else "")
            + f"{'; failed: ' + fr.failure if fr.failure else ''})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
