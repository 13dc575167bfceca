"""What the notebooks measure, or read back when there is no GPU to measure on.

    from grader import lab
    lab.measured_tflops({"naive (01)": "naive"})   # the committed H200 figures
    lab.time_gemms({"mine": mod}, 2048)            # GPU only: timed now, against cuBLAS
"""
from __future__ import annotations


def measured_tflops(names: dict[str, str], shape: str = "4096x4096x4096") -> dict[str, float]:
    """{label: TFLOP/s} from kernels/results/h200.json for {label: kernel name in the bench}, when measured."""
    from .plots import h200_results
    rows = {r["kernel"]: r["tflops"] for r in h200_results("gemm", shape)}
    return {label: rows[k] for label, k in names.items() if k in rows}


def time_gemms(kernels: dict, n: int) -> dict[str, float]:
    """GPU only: TFLOP/s at n^3 of each loaded GEMM module and of cuBLAS (TF32 off), timed
    round-robin with grader.timing.time_gpu (events, L2 flush, medians)."""
    import torch
    from .timing import time_gpu, tflops
    torch.backends.cuda.matmul.allow_tf32 = False
    A, B = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    C = torch.empty(n, n, device="cuda")
    fns = {name: (lambda m=m: m.launch.gemm(A, B, C)) for name, m in kernels.items()}
    fns["cuBLAS"] = lambda: torch.matmul(A, B, out=C)
    return {k: tflops(n, n, n, t.median_ms) for k, t in time_gpu(fns, max_seconds=5.0).items()}
