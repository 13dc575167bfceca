"""Why is kernels/07's `gemm` (epilogue off) slower than its `gemm_relu` (epilogue on), one compiled
kernel? (H200, 2026-12-02: 276 against 261 us at 4096 x 4096 x 256 under ncu; notebook 07.) Variants
of 07's source, built and timed round-robin at M = N = 4096 (GPU only):

  base      kernels/07 as it is: `gemm` skips the mask's shuffles and store (`if (!epi) continue;`)
  shfl      `gemm` runs the shuffles too (only the mask's store is skipped): is it the spacing
            of the C stores between the rows?
  04        kernels/04_register_blocked.cu's `gemm`, for scale (the same main loop, 04's epilogue)
  data      base's `gemm` on inputs >= 0 (every output positive), base's `gemm_relu` with a bias of -1e4
            (every output 0): does what is stored change the time?

    python benchmarks/epilogue_probe.py            # time every variant at K = 256, 1024, 4096
    python benchmarks/epilogue_probe.py --once 256 # one launch each (for ncu)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from grader.course import bench
from grader.run import binding  # noqa: E402
from grader.run.timing import time_gpu  # noqa: E402

M = N = 4096
SOURCE = (ROOT / "kernels" / "07_gemm_relu.cu").read_text()
SKIP = "        if (!epi) continue;\n"
STORE = "if (threadCol % 4 == 0 && cRow < M && wordCol < W)"
assert SKIP in SOURCE and STORE in SOURCE, "kernels/07 changed: update the probe's rewrites"
SHFL = SOURCE.replace(SKIP, "").replace(STORE, "if (epi && threadCol % 4 == 0 && cRow < M && wordCol < W)")


def main() -> int:
    args = sys.argv[1:]
    once = args[:1] == ["--once"]
    ks = [int(a) for a in args[1 if once else 0 :]] or [256, 1024, 4096]
    mods = {
        "base": binding.load(SOURCE, "gemm_relu", backend="cuda", filename="07_base.cu"),
        "shfl": binding.load(SHFL, "gemm_relu", backend="cuda", filename="07_shfl.cu"),
    }
    m04 = bench.load_kernel("04_register_blocked.cu", "register_blocked")
    for k in ks:
        A, B = bench._gemm_inputs(M, N, k, 3)
        bias = torch.randn(N, device="cuda")
        Ap, Bp = A.abs(), B.abs()
        negative = torch.full((N,), -1e4, device="cuda")
        C = {name: torch.empty(M, N, device="cuda") for name in ("base", "shfl", "04", "fused", "pos", "zero")}
        mask = torch.empty(M, (N + 31) // 32, dtype=torch.int32, device="cuda")
        fns = {
            "gemm base": lambda: mods["base"].launch.gemm(A, B, C["base"]),
            "gemm shfl": lambda: mods["shfl"].launch.gemm(A, B, C["shfl"]),
            "gemm_relu base": lambda: mods["base"].launch.gemm_relu(A, B, bias, C["fused"], mask),
            "gemm 04": lambda: m04.launch.gemm(A, B, C["04"]),
            # the data: every output positive without ReLU (inputs >= 0), and every output 0 (ReLU of a
            # very negative bias): is the store's cost data-dependent?
            "gemm base, A,B >= 0": lambda: mods["base"].launch.gemm(Ap, Bp, C["pos"]),
            "gemm_relu base, zeros": lambda: mods["base"].launch.gemm_relu(A, B, negative, C["zero"], mask),
        }
        if once:
            for name, fn in fns.items():
                fn()
                torch.cuda.synchronize()
                print(f"K={k} {name}", flush=True)
            continue
        t = time_gpu(fns, max_seconds=3.0, max_runs=300, rel_err=0.0)
        ref = A.double() @ B.double()
        for name in ("base", "shfl", "04"):  # each variant still computes A . B
            err = float((C[name].double() - ref).norm() / ref.norm())
            assert err < 1e-5, f"{name}: relative error {err}"
        base = t["gemm base"].median_ms
        print(
            f"K={k:<5}"
            + "\n  ".join(f"{name} {x.median_ms * 1e3:7.1f} us ({x.median_ms / base:.3f})" for name, x in t.items()),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
