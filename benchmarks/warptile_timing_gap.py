"""Why does the grader time kernels/05 1.8 % slower than gpu_tune.py does (2.873 ms against 2.822 at
4096^3 on the H200, session 9), when both use grader.run.timing.time_gpu against cuBLAS? The same kernel
file, timed several ways in one process (GPU only), each way changing one thing from the one before:

  sweep    gpu_tune.py's way: built as register_blocked, bench._gemm_inputs, a plain C, 4 s, rel_err 0
  built    as sweep, built as the grader builds it (exercise warptile: its prelude, its cache key)
  inputs   as built, inputs from the kind's random_inputs (the grader's draw)
  guarded  as inputs, C inside a guarded buffer (worker._alloc_outputs)
  fresh    as guarded, inputs redrawn and C poisoned before every round (FreshRounds.refresh)
  checked  as fresh, every round checked after it (FreshRounds.check), still 4 s and rel_err 0
  graded   worker.time_kernels, the grader's own call (it stops when the median is known to 0.5 %)

Each line gives cuBLAS's time in the same round-robin, the ratio, the rounds and nvidia-smi's clocks.

    python benchmarks/warptile_timing_gap.py [kernels/05_warptile_pipelined.cu] [WAY...]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402
from relu_timing_gap import Clocks  # noqa: E402

from grader.course import bench
from grader.run import binding
from grader.spec import exercises  # noqa: E402
from grader.run.timing import time_gpu  # noqa: E402
from grader.run.worker import FreshRounds, _alloc_outputs, time_kernels  # noqa: E402

WAYS = ("sweep", "built", "inputs", "guarded", "fresh", "checked", "graded", "sweep", "graded")
SHAPE = (4096, 4096, 4096)
SEED = 11


def main() -> int:
    args = sys.argv[1:]
    path = args.pop(0) if args and args[0].endswith(".cu") else str(ROOT / "kernels" / "05_warptile_pipelined.cu")
    ways = args or WAYS
    torch.backends.cuda.matmul.allow_tf32 = False
    mods = {
        "register_blocked": binding.load(path, "register_blocked", backend="cuda"),
        "warptile": binding.load(path, "warptile", backend="cuda"),
    }
    m, n, k = SHAPE
    dims = {"M": m, "N": n, "K": k}
    for way in ways:
        mod = mods["register_blocked" if way == "sweep" else "warptile"]
        with Clocks() as clocks:
            if way == "graded":
                res, rounds = time_kernels(mod, None, {"shape": list(SHAPE), "seed": SEED})
                ours, theirs, runs = res["kernel"]["median_ms"], res["cublas"]["median_ms"], res["kernel"]["runs"]
                failure = rounds.failure
            else:
                if way in ("sweep", "built"):
                    ins = dict(zip("AB", bench._gemm_inputs(m, n, k, 7)))
                else:
                    ins = exercises.kind("warptile").random_inputs(
                        SHAPE, torch.Generator(device="cuda").manual_seed(SEED)
                    )
                if way in ("sweep", "built", "inputs"):
                    C = torch.empty(m, n, device="cuda")
                else:
                    C = _alloc_outputs(exercises.launchers("warptile")[0], dims, "cuda")[0][0]
                Cb = torch.empty(m, n, device="cuda")
                fr = FreshRounds("warptile", SHAPE, ins, {"C": C}, SEED) if way in ("fresh", "checked") else None
                t = time_gpu(
                    {
                        "kernel": lambda mod=mod, ins=ins, C=C: mod.launch.gemm(ins["A"], ins["B"], C),
                        "cublas": lambda ins=ins, Cb=Cb: torch.matmul(ins["A"], ins["B"], out=Cb),
                    },
                    max_seconds=4.0,
                    max_runs=400,
                    rel_err=0.0,
                    before_round=fr.refresh if fr else None,
                    after_round=fr.check if way == "checked" else None,
                )
                ours, theirs, runs = t["kernel"].median_ms, t["cublas"].median_ms, t["kernel"].runs
                failure = fr.failure if fr else None
        print(
            f"{way:<8} kernel {ours:.4f} ms  cublas {theirs:.4f} ms  ratio {theirs / ours:.4f}  "
            f"({runs} rounds; {clocks}{'; failed: ' + failure if failure else ''})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
