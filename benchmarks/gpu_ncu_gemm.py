"""cuBLAS's FP32 GEMM and kernels/05 at 4096^3, one launch each, for a full Nsight Compute comparison:

    ncu --clock-control none --set full -k regex:"gemm|sgemm|xmma|cutlass" python3 benchmarks/gpu_ncu_gemm.py [-DFLAG ...]

Flags after the script name are -D overrides for 05 (as in benchmarks/gpu_tune.py). Prints the name of
each launch, so the report's kernels can be matched to what ran.
"""

import sys

import torch

from grader.course import bench

N = 4096
torch.backends.cuda.matmul.allow_tf32 = False
A, B = bench._gemm_inputs(N, N, N, 0)
C = torch.empty(N, N, device="cuda")
torch.matmul(A, B, out=C)
torch.cuda.synchronize()
print("cublas", flush=True)
flags = tuple(sys.argv[1:]) + ("-DSMALL_TILE_THRESHOLD=0",)
mod = bench.load_kernel("05_warptile_pipelined.cu", "register_blocked", flags)
mod.launch.gemm(A, B, C)
torch.cuda.synchronize()
print("05", flags, flush=True)
