"""Does the fused epilogue win? A gemm_relu kernel file against its own GEMM, over K.

    from grader import fusion
    rows = fusion.sweep(mod)            # GPU: mod is a loaded gemm_relu file that also defines `gemm`
    rows = fusion.sweep(k07b, base=k05) # 07b against 05's own GEMM (benchmarks/gpu_fusion.py)
    rows = fusion.measured("nb07")      # no GPU: the committed H200 rows (kernels/results/)
    fusion.chart(rows, kernel="your")   # time / the GEMM alone, against K; the legend names whose kernel

For each K (M = N = 4096) three things are timed round-robin in one grader.run.timing.time_gpu call:
the fused kernel, the GEMM alone (the file's own `gemm`: the same main loop, C stored as it is; or
another file's), and that GEMM followed by a separate bias + ReLU + mask pass
(kernels/07a_bias_relu_pass.cu). The grader's gemm_relu verdict is the same comparison at one K
against the file's own `gemm` (grader.spec.exercises).
"""

from __future__ import annotations

import json
from pathlib import Path

from grader.spec.exercises import KERNELS_DIR

KS = (256, 512, 1024, 4096)
RESULTS = KERNELS_DIR / "results" / "h200_capstone.json"  # k07, nb07 (and the 07b before 2026-12-03)
RESULTS_07B = KERNELS_DIR / "results" / "h200_fusion_07b.json"  # k07b: benchmarks/gpu_fusion.py
PASS_FILE = "07a_bias_relu_pass.cu"


def sweep(mod, ks=KS, m: int = 4096, n: int = 4096, seconds: float = 3.0, base=None, variants=None) -> list[dict]:
    """Time mod's gemm_relu, the GEMM alone and the GEMM + the separate pass at each K (GPU only).

    base: a loaded file whose `gemm` is the GEMM alone (default: mod's own); mod's own `gemm` is then
    timed too ("own gemm ms"). variants: {name: loaded gemm_relu file}, timed in the same rounds
    ("NAME ms", "NAME / gemm")."""
    import torch

    from grader.run import binding
    from grader.run.timing import time_gpu

    gemm_of = base or mod
    if not hasattr(gemm_of.launch, "gemm"):
        raise ValueError('the file must also define extern "C" void gemm(...): the same GEMM without the epilogue')
    variants = variants or {}
    pas = binding.load(KERNELS_DIR / PASS_FILE, "bias_relu_pass", backend="cuda")
    rows = []
    for k in ks:
        A, B = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
        bias = torch.randn(n, device="cuda")
        C, C2, Y = (torch.empty(m, n, device="cuda") for _ in range(3))
        mask = torch.empty(m, (n + 31) // 32, dtype=torch.int32, device="cuda")
        fns = {
            "fused": lambda: mod.launch.gemm_relu(A, B, bias, C, mask),
            "gemm": lambda: gemm_of.launch.gemm(A, B, C2),
            "gemm + pass": lambda: (gemm_of.launch.gemm(A, B, C2), pas.launch.bias_relu_mask(C2, bias, Y, mask)),
        }
        if base is not None:
            fns["own gemm"] = lambda: mod.launch.gemm(A, B, C2)
        for name, v in variants.items():
            fns[name] = lambda v=v: v.launch.gemm_relu(A, B, bias, C, mask)
        t = time_gpu(fns, max_seconds=seconds)
        g = t["gemm"].median_ms
        rows.append(
            {
                "K": k,
                **{f"{name} ms": t[name].median_ms for name in fns},
                "fused / gemm": t["fused"].median_ms / g,
                "gemm + pass / gemm": t["gemm + pass"].median_ms / g,
                "speedup": t["gemm + pass"].median_ms / t["fused"].median_ms,
                **{f"{name} / gemm": t[name].median_ms / g for name in variants},
                "spread": max(t[name].spread for name in fns),
            }
        )
    return rows


def measured(kernel: str) -> list[dict]:
    """The committed H200 sweep of `kernel` ("k07": kernels/07_gemm_relu.cu, "nb07": notebook 07's
    solution; "k07b": 07b_gemm_relu_warptile.cu against 05's GEMM)."""
    data = json.loads(Path(RESULTS_07B if kernel == "k07b" else RESULTS).read_text())
    return data["fusion"][kernel]


def chart(rows: list[dict], title: str | None = None, kernel: str = "your"):
    """Fused and GEMM + pass, each as a multiple of the GEMM alone, against K (grader.course.plots).
    kernel: whose rows these are, as the legend says it ("your", "the solution's", "05's")."""
    from grader.course import plots

    ks = [r["K"] for r in rows]
    return plots.lines(
        ks,
        {
            f"fused ({kernel} gemm_relu)": [r["fused / gemm"] for r in rows],
            f"{kernel} gemm + separate pass": [r["gemm + pass / gemm"] for r in rows],
            f"{kernel} gemm alone": [1.0] * len(rows),
        },
        xlabel="K (M = N = 4096)",
        ylabel=f"time / {kernel} GEMM alone",
        title=title,
    )


def table(rows: list[dict]) -> str:
    """One line per K; 07b's rows (grader.course.fusion.sweep with base) add its own gemm, variants their ratio."""
    variants = [key for key in rows[0] if key.endswith(" / gemm") and key not in ("fused / gemm", "gemm + pass / gemm")]
    extra = [key for key in rows[0] if key == "own gemm ms"] + variants
    lines = [
        f"{'K':>6} {'fused ms':>9} {'gemm ms':>9} {'+pass ms':>9} {'fused/gemm':>11} {'sep/fused':>10}"
        + "".join(f" {key.removesuffix(' ms'):>{max(12, len(key))}}" for key in extra)
    ]
    lines += [
        f"{r['K']:>6} {r['fused ms']:>9.3f} {r['gemm ms']:>9.3f} {r['gemm + pass ms']:>9.3f} "
        f"{r['fused / gemm']:>11.3f} {r['speedup']:>10.3f}"
        + "".join(f" {r[key]:>{max(12, len(key))}.3f}" for key in extra)
        for r in rows
    ]
    return "\n".join(lines)
