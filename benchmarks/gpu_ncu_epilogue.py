"""What kernels/07's fused epilogue costs, for Nsight Compute: at M = N = 4096 and each K of
grader.course.fusion.KS, one launch each of 07's `gemm` (epilogue off), its `gemm_relu` (epilogue on) and
07a's separate bias + ReLU + mask pass over C:

    ncu --clock-control none --set full -k regex:"gemm|bias_relu" -o /tmp/epi python3 benchmarks/gpu_ncu_epilogue.py
    ncu --import /tmp/epi.ncu-rep --page details   # per launch: duration, instructions, DRAM bytes, stalls

Arguments: the K values to run (default: all of grader.course.fusion.KS). `gemm_relu_dense` is the fused
launch with a bias that keeps every output (no zeros in C, every mask bit set), to tell the
epilogue's cost from what ReLU's zeros do to the stores. The `gemm` and `gemm_relu` launches of one
K are the same compiled kernel (a run-time flag), so the difference of their instruction counts and
DRAM bytes is the epilogue; the pass's duration is what fusion saves. Prints each launch's label in order, to match the report's rows. Results (H200,
2026-12-02): kernels/results/h200_ncu_epilogue.txt.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from grader.course import bench, fusion
from grader.run import binding  # noqa: E402

M = N = 4096
mod = bench.load_kernel("07_gemm_relu.cu", "gemm_relu")
pas = binding.load(fusion.KERNELS_DIR / fusion.PASS_FILE, "bias_relu_pass", backend="cuda")
for k in [int(a) for a in sys.argv[1:]] or fusion.KS:
    A, B = bench._gemm_inputs(M, N, k, 0)
    bias = torch.randn(N, device="cuda")
    positive = torch.full((N,), 1e4, device="cuda")  # far above |A . B|: every output kept
    C, Y = torch.empty(M, N, device="cuda"), torch.empty(M, N, device="cuda")
    mask = torch.empty(M, (N + 31) // 32, dtype=torch.int32, device="cuda")
    for label, run in (
        ("gemm", lambda: mod.launch.gemm(A, B, C)),
        ("gemm_relu", lambda: mod.launch.gemm_relu(A, B, bias, C, mask)),
        ("gemm_relu_dense", lambda: mod.launch.gemm_relu(A, B, positive, C, mask)),
        ("pass", lambda: pas.launch.bias_relu_mask(C, bias, Y, mask)),
    ):
        run()
        torch.cuda.synchronize()
        print(f"K={k} {label}", flush=True)
