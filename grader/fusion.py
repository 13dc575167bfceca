"""Does the fused epilogue win? A gemm_relu kernel file against its own GEMM, over K.

    from grader import fusion
    rows = fusion.sweep(mod)            # GPU: mod is a loaded gemm_relu file that also defines `gemm`
    rows = fusion.measured("nb07")      # no GPU: the committed H200 rows (kernels/results/h200_capstone.json)
    fusion.chart(rows)                  # time / the file's own GEMM alone, against K

For each K (M = N = 4096) three things are timed round-robin in one grader.timing.time_gpu call:
the fused kernel, the file's own `gemm` (the same main loop, C stored as it is), and that `gemm`
followed by a separate bias + ReLU + mask pass (kernels/07a_bias_relu_pass.cu). The grader's
gemm_relu verdict is the same comparison at one K (grader.exercises).
"""

from __future__ import annotations

import json
from pathlib import Path

from .exercises import KERNELS_DIR

KS = (256, 512, 1024, 4096)
RESULTS = KERNELS_DIR / "results" / "h200_capstone.json"
PASS_FILE = "07a_bias_relu_pass.cu"


def sweep(mod, ks=KS, m: int = 4096, n: int = 4096, seconds: float = 3.0) -> list[dict]:
    """Time mod's gemm_relu, its gemm, and its gemm + the separate pass at each K (GPU only)."""
    import torch

    from . import binding
    from .timing import time_gpu

    if not hasattr(mod.launch, "gemm"):
        raise ValueError('the file must also define extern "C" void gemm(...): the same GEMM without the epilogue')
    pas = binding.load(KERNELS_DIR / PASS_FILE, "bias_relu_pass", backend="cuda")
    rows = []
    for k in ks:
        A, B = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
        bias = torch.randn(n, device="cuda")
        C, C2, Y = (torch.empty(m, n, device="cuda") for _ in range(3))
        mask = torch.empty(m, (n + 31) // 32, dtype=torch.int32, device="cuda")
        fns = {
            "fused": lambda: mod.launch.gemm_relu(A, B, bias, C, mask),
            "gemm": lambda: mod.launch.gemm(A, B, C2),
            "gemm + pass": lambda: (mod.launch.gemm(A, B, C2), pas.launch.bias_relu_mask(C2, bias, Y, mask)),
        }
        t = time_gpu(fns, max_seconds=seconds)
        g = t["gemm"].median_ms
        rows.append(
            {
                "K": k,
                **{f"{name} ms": t[name].median_ms for name in fns},
                "fused / gemm": t["fused"].median_ms / g,
                "gemm + pass / gemm": t["gemm + pass"].median_ms / g,
                "speedup": t["gemm + pass"].median_ms / t["fused"].median_ms,
                "spread": max(t[name].spread for name in fns),
            }
        )
    return rows


def measured(kernel: str) -> list[dict]:
    """The committed H200 sweep of `kernel` ("k07": kernels/07_gemm_relu.cu, "k07b": 07b_gemm_relu_warptile.cu,
    "nb07": notebook 07's solution)."""
    data = json.loads(Path(RESULTS).read_text())
    return data["fusion"][kernel]


def chart(rows: list[dict], title: str | None = None):
    """Fused and GEMM + pass, each as a multiple of the GEMM alone, against K (grader.plots)."""
    from . import plots

    ks = [r["K"] for r in rows]
    return plots.lines(
        ks,
        {
            "fused (your gemm_relu)": [r["fused / gemm"] for r in rows],
            "your gemm + separate pass": [r["gemm + pass / gemm"] for r in rows],
            "your gemm alone": [1.0] * len(rows),
        },
        xlabel="K (M = N = 4096)",
        ylabel="time / your GEMM alone",
        title=title,
    )


def table(rows: list[dict]) -> str:
    lines = [f"{'K':>6} {'fused ms':>9} {'gemm ms':>9} {'+pass ms':>9} {'fused/gemm':>11} {'sep/fused':>10}"]
    lines += [
        f"{r['K']:>6} {r['fused ms']:>9.3f} {r['gemm ms']:>9.3f} {r['gemm + pass ms']:>9.3f} "
        f"{r['fused / gemm']:>11.3f} {r['speedup']:>10.3f}"
        for r in rows
    ]
    return "\n".join(lines)
