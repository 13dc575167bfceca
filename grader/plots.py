"""The course's plots, one call each from a notebook. Every function returns the Figure
(closed, so Jupyter shows it once, as the cell's value).

    from grader import plots
    plots.ladder({"naive": 5.3, "tiled": 8.1}, ref=49.8)
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from .exercises import KERNELS_DIR

RESULTS_DIR = KERNELS_DIR / "results"
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def _done(fig):
    fig.tight_layout()
    plt.close(fig)
    return fig


def h200_results(kind: str | None = None, shape: str | None = None) -> list[dict]:
    """Rows of kernels/results/h200.json (written by `python -m grader bench --save`), or []."""
    path = RESULTS_DIR / "h200.json"
    if not path.is_file():
        return []
    rows = json.loads(path.read_text()).get("rows", [])
    return [r for r in rows if (kind is None or r.get("kind") == kind) and (shape is None or r.get("shape") == shape)]


def loglog_times(sizes, series: dict[str, list[float]], ylabel="seconds", title=None, slope_ref: int | None = 3):
    """Time against problem size on log-log axes, one line per implementation; a dotted n^slope guide."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, (name, ys) in enumerate(series.items()):
        xs = [s for s, y in zip(sizes, ys) if y is not None]
        ys = [y for y in ys if y is not None]
        ax.loglog(xs, ys, "o-", color=COLORS[i % len(COLORS)], label=name)
    if slope_ref and series:
        first = next(iter(series.values()))
        x0, y0 = sizes[0], first[0]
        xs = np.array([sizes[0], sizes[-1]], dtype=float)
        ax.loglog(xs, y0 * (xs / x0) ** slope_ref, ":", color="gray", label=f"∝ n^{slope_ref}")
    ax.set_xlabel("n (M = N = K = n)")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    return _done(fig)


def ladder(values: dict[str, float], ref: float | None = None, ref_label="cuBLAS", unit="TFLOP/s", title=None):
    """Horizontal bars (one per kernel, top to bottom in the given order); a line at `ref`."""
    names, vals = list(values), [values[k] for k in values]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(names) + 1.3))
    y = np.arange(len(names))[::-1]
    ax.barh(y, vals, color=[COLORS[i % len(COLORS)] for i in range(len(names))])
    for yi, v in zip(y, vals):
        label = f" {v:.3g}" + (f" ({100 * v / ref:.0f}% of {ref_label})" if ref else "")
        ax.text(v, yi, label, va="center", fontsize=9)
    if ref:
        ax.axvline(ref, color="black", ls="--", lw=1)
        # in a band of its own above the top bar, inside the axes (above them it ran into the title)
        ax.set_ylim(-0.5, len(names) - 0.5 + 0.8)
        ax.text(ref, len(names) - 0.5 + 0.4, f"{ref_label} {ref:.3g} ", ha="right", va="center", fontsize=9)
    ax.set_yticks(y, names)
    ax.set_xlabel(unit)
    ax.set_xlim(0, max(vals + [ref or 0]) * 1.45)
    if title:
        ax.set_title(title)
    return _done(fig)


def roofline(points: dict[str, float], peak_tflops: float, bandwidth_tbs: float,
             measured: dict[str, float] | None = None, title=None):
    """The roofline min(peak, bandwidth * intensity); kernels as vertical marks at their
    intensity (FLOP per byte moved from memory), measured TFLOP/s as dots when given."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = np.logspace(-2, 3, 200)
    ax.loglog(xs, np.minimum(peak_tflops, bandwidth_tbs * xs), color="black", lw=2)
    ridge = peak_tflops / bandwidth_tbs
    ax.axvline(ridge, color="gray", ls=":", lw=1)
    ax.text(ridge * 1.1, peak_tflops * 0.03, f"ridge\n{ridge:.1f} FLOP/B", fontsize=8, color="gray")
    for i, (name, x) in enumerate(points.items()):
        c = COLORS[i % len(COLORS)]
        roof = min(peak_tflops, bandwidth_tbs * x)
        ax.plot([x, x], [1e-2, roof], color=c, lw=1.5, alpha=0.6)
        ax.plot([x], [roof], "^", color=c, label=f"{name}: {x:g} FLOP/B, roof {roof:.3g}")
        if measured and name in measured:
            ax.plot([x], [measured[name]], "o", color=c, ms=8)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of DRAM/L2 traffic)")
    ax.set_ylabel("TFLOP/s")
    ax.set_ylim(1e-2, peak_tflops * 2)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title or f"roofline: {peak_tflops:g} TFLOP/s, {bandwidth_tbs:g} TB/s")
    return _done(fig)


def warp_access(panels: dict[str, list[int]], sector_bytes: int = 32, title=None):
    """For each panel, the byte address each of a warp's 32 lanes loads: lanes on x, the
    32-byte sector on y; the title says how many distinct sectors the warp touches."""
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.6), squeeze=False)
    for ax, (name, addrs) in zip(axes[0], panels.items()):
        addrs = np.asarray(addrs, dtype=np.int64)
        sectors = addrs // sector_bytes
        uniq = np.unique(sectors)
        rank = np.searchsorted(uniq, sectors)
        ax.scatter(np.arange(len(addrs)), rank, c=rank, cmap="viridis", s=25)
        ax.set_xlabel("lane")
        ax.set_ylabel(f"distinct {sector_bytes}-byte sector (rank)")
        ax.set_title(f"{name}\n{len(addrs)} lanes -> {len(uniq)} sector(s), "
                     f"{len(uniq) * sector_bytes} B moved for {4 * len(np.unique(addrs))} B used", fontsize=9)
        ax.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title)
    return _done(fig)


def banks(panels: dict[str, list[int]], n_banks: int = 32, title=None):
    """For each panel, the 4-byte word index each of 32 lanes reads from shared memory: a
    lane x bank grid, one dot per lane in its bank; the title gives the conflict degree (the
    most distinct words any bank must serve; 1 = one pass)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4), squeeze=False)
    for ax, (name, words) in zip(axes[0], panels.items()):
        words = np.asarray(words, dtype=np.int64)
        bank = words % n_banks
        degree = max(len(np.unique(words[bank == b])) for b in np.unique(bank))
        ax.scatter(np.arange(len(words)), bank, c=bank, cmap="twilight", s=30, vmin=0, vmax=n_banks)
        ax.set_xlabel("lane")
        ax.set_ylabel("bank")
        ax.set_ylim(-1, n_banks)
        ax.set_title(f"{name}\n{degree}-way: {degree} shared-memory pass(es)", fontsize=9)
        ax.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title)
    return _done(fig)


def stacked_bytes(rows: dict[str, dict[str, float]], unit="bytes per element", title=None):
    """Stacked horizontal bars: rows[name] = {part: amount}, e.g. the traffic of a pass."""
    names = list(rows)
    parts = list(dict.fromkeys(p for r in rows.values() for p in r))
    fig, ax = plt.subplots(figsize=(7, 0.6 * len(names) + 1.4))
    y = np.arange(len(names))[::-1]
    left = np.zeros(len(names))
    for i, part in enumerate(parts):
        vals = np.array([rows[n].get(part, 0.0) for n in names])
        ax.barh(y, vals, left=left, color=COLORS[i % len(COLORS)], label=part)
        left += vals
    for yi, total in zip(y, left):
        ax.text(total, yi, f" {total:g}", va="center", fontsize=9)
    ax.set_yticks(y, names)
    ax.set_xlabel(unit)
    ax.set_xlim(0, left.max() * 1.2)
    ax.legend(fontsize=8, loc="lower right")
    if title:
        ax.set_title(title)
    return _done(fig)


def lines(xs, series: dict[str, list[float]], xlabel: str, ylabel: str, logx=True, title=None):
    """Plain lines against x (one per series)."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, (name, ys) in enumerate(series.items()):
        ax.plot(xs, ys, "o-", color=COLORS[i % len(COLORS)], label=name)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    return _done(fig)


def ladder_chart(rows: list[dict], gpu: str = ""):
    """The bench's GEMM ladder: TFLOP/s per rung at each shape, cuBLAS as a dashed line per shape
    (rows as `python -m grader bench --save` writes them)."""
    gemm = [r for r in rows if r["kind"] == "gemm"]
    shapes = list(dict.fromkeys(r["shape"] for r in gemm))
    kernels = [k for k in dict.fromkeys(r["kernel"] for r in gemm) if k != "cublas"]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / max(1, len(shapes))
    for si, shape in enumerate(shapes):
        vals = [next((r["tflops"] for r in gemm if r["shape"] == shape and r["kernel"] == k), 0) for k in kernels]
        color = COLORS[si % len(COLORS)]
        ax.bar([i + si * width for i in range(len(kernels))], vals, width, label=shape, color=color)
        cub = next((r["tflops"] for r in gemm if r["shape"] == shape and r["kernel"] == "cublas"), None)
        if cub:
            ax.axhline(cub, ls="--", lw=0.8, color=color)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(kernels))], kernels, rotation=25, ha="right")
    ax.set_ylabel("TFLOP/s (FP32)")
    ax.set_title(f"GEMM ladder vs cuBLAS FP32 (dashed){', ' + gpu if gpu else ''}")
    ax.legend(title="M x N x K")
    return _done(fig)


def class_results(rows: list[dict], exercise: str = ""):
    """A batch at a glance: how many submissions ended how (left), and the speed-ups of the correct
    ones against the threshold (right; only on a GPU). Rows as `grader batch` writes them."""
    counts = Counter(r["outcome"] for r in rows)
    names = sorted(counts, key=lambda k: (k != "passed", -counts[k], k))
    speedups = [float(r["speedup"]) for r in rows if r.get("speedup") not in (None, "")]
    thresholds = {float(r["threshold"]) for r in rows if r.get("threshold") not in (None, "")}
    fig, axes = plt.subplots(1, 2 if speedups else 1, figsize=(11 if speedups else 6, 3.8), squeeze=False)
    ax = axes[0][0]
    ax.barh(names[::-1], [counts[k] for k in names[::-1]],
            color=["#2ca02c" if k == "passed" else "#7f7f7f" for k in names[::-1]])
    ax.set_xlabel("submissions")
    ax.set_title(f"{exercise}: {len(rows)} submissions")
    if speedups:
        ax = axes[0][1]
        ax.hist(speedups, bins=min(20, max(5, len(speedups))), color=COLORS[0])
        for t in thresholds:
            ax.axvline(t, color=COLORS[3], ls="--", label=f"threshold {t:g}x")
        ax.set_xlabel("speed-up over the baseline")
        ax.set_ylabel("correct submissions")
        if thresholds:
            ax.legend()
    return _done(fig)
