"""Run the bank-conflict pair (and 02, 04, 05 for reference) once each, for Nsight Compute:

    ncu --clock-control none --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,gpu__time_duration.sum python benchmarks/gpu_ncu_conflicts.py
"""

import torch

from grader.course import bench

N = 2048
A, B = bench._gemm_inputs(N, N, N, 0)
C = torch.empty(N, N, device="cuda")
for name, file, ex in bench.GEMM_LADDER:
    if name in ("tiled", "bank_conflicts", "conflict_free", "register_blocked", "warptile_pipelined"):
        mod = bench.load_kernel(file, ex)
        mod.launch.gemm(A, B, C)
        torch.cuda.synchronize()
        print(name, file, flush=True)
