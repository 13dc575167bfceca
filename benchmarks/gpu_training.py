"""Notebook 08's H200 figures: one training step of an MLP on a kernel file's launchers (grader/spec/mlp.py)
against the same MLP built from nn.Linear + nn.ReLU.

    python benchmarks/gpu_training.py --save kernels/results/h200_training.json    # about a minute

Timing (grader.course.training.measure_training): a 64 -> 2048 -> 2048 -> 10 MLP on a batch of 4096 synthetic rows
(randn inputs, random labels: the time of a step does not depend on the data), Adam, TF32 off; the
median step time of three variants (the file's launchers everywhere; the same with torch's GEMMs
outside the fused forward; nn.Linear + nn.ReLU), the memory the forward keeps and its peak, and the
GPU time of a step by part (torch.profiler). Accuracy: the same file's MLP, 64 -> 256 -> 256 -> 10,
trained on scikit-learn's digits as notebook 08 trains it on a GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch

import grader
from grader.spec import mlp
from grader.course import training


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kernel", default=str(ROOT / "kernels" / "08_mlp_step.cu"), help="an mlp_step kernel file")
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--seconds", type=float, default=5.0, help="timing budget of the round-robin")
    p.add_argument("--save", metavar="FILE.json")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("gpu_training.py needs a GPU (torch sees none)")
        return 2
    k = mlp.Launchers(grader.load(args.kernel, "mlp_step"))
    torch.manual_seed(0)
    model = mlp.MLP(k, (64, args.hidden, args.hidden, 10))
    X = torch.randn(args.batch, 64, device="cuda")
    y = torch.randint(10, (args.batch,), device="cuda")
    result = training.measure_training(model, X, y, seconds=args.seconds)
    t0 = time.perf_counter()
    acc = training.train_digits(k, **mlp.DIGITS_GPU)
    result |= {
        "date": time.strftime("%Y-%m-%d"),
        "kernel": Path(args.kernel).name,
        "data": "synthetic (randn inputs, random labels): timing only",
        "digits": acc | {"seconds": round(time.perf_counter() - t0, 2)},
    }
    print(training.training_table(result))
    if args.save:
        Path(args.save).write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
