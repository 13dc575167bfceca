"""Why does the grader time the ReLU pair level with PyTorch's (0.98-1.04x) when gpu_capstone.py
times the same kernels at 1.10x? The same pair, timed four ways in one process (GPU only):

  plain    time_gpu on fixed inputs (gpu_capstone.py's way)
  fresh    inputs redrawn before every round (FreshRounds.refresh), no check after it
  graded   refresh before and FreshRounds.check after every round (worker.time_kernels' way)
  swapped  as graded, torch's pair timed first in each round

    python benchmarks/relu_timing_gap.py [kernels/06_relu_mask.cu]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch

from grader import binding, checks, contract
from grader.timing import time_gpu
from grader.worker import FreshRounds


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "kernels" / "06_relu_mask.cu")
    mod = binding.load(path, "relu_mask", backend="cuda")
    m = n = 8192
    ins = checks.random_inputs("relu_mask", (m, n), torch.Generator(device="cuda").manual_seed(1))
    Y, dX = torch.empty_like(ins["X"]), torch.empty_like(ins["X"])
    mask = torch.empty(m, contract.mask_words(n), dtype=torch.int32, device="cuda")
    outs = {"Y": Y, "mask": mask, "dX": dX}
    saved = torch.relu(ins["X"])
    ours = lambda: (mod.launch.relu_forward(ins["X"], Y, mask), mod.launch.relu_backward(mask, ins["dY"], dX))
    theirs = lambda: (torch.relu(ins["X"]), torch.ops.aten.threshold_backward(ins["dY"], saved, 0))
    for way in ("plain", "fresh", "graded", "swapped", "plain"):
        fr = FreshRounds("relu_mask", (m, n), ins, outs, seed=7)
        fns = {"torch": theirs, "kernel": ours} if way == "swapped" else {"kernel": ours, "torch": theirs}
        t = time_gpu(
            fns,
            max_seconds=4.0,
            before_round=None if way == "plain" else fr.refresh,
            after_round=fr.check if way in ("graded", "swapped") else None,
        )
        print(
            f"{way:<8} kernel {t['kernel'].median_ms:.4f} ms  torch {t['torch'].median_ms:.4f} ms  "
            f"speed-up {t['torch'].median_ms / t['kernel'].median_ms:.3f}  ({t['kernel'].runs} rounds, spread {t['kernel'].spread:.2f}"
            f"{', failed: ' + fr.failure if fr.failure else ''})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
