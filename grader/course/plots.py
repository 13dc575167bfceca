"""The course's plots, one call each from a notebook. Every function returns the Figure
(closed, so Jupyter shows it once, as the cell's value; inside an `if` or a loop it is no cell's
value, so wrap it in display(...): tests/test_notebooks.py checks every notebook does).

    from grader import plots
    plots.ladder({"naive": 5.3, "tiled": 8.1}, ref=49.8)
"""

from __future__ import annotations

import json
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np

from grader.spec.exercises import KERNELS_DIR

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
        # on white: a bar near `ref` puts its label across the dashed line
        ax.text(v, yi, label, va="center", fontsize=9, bbox=dict(facecolor="white", edgecolor="none", pad=0.5))
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


def roofline(
    points: dict[str, float],
    peak_tflops: float,
    bandwidth_tbs: float,
    measured: dict[str, float] | None = None,
    title=None,
    xlabel="arithmetic intensity (FLOP per byte of DRAM/L2 traffic)",
):
    """The roofline min(peak, bandwidth * intensity); kernels as vertical marks at their
    intensity (FLOP per byte moved from memory), measured TFLOP/s as dots when given."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = np.logspace(-2, 3, 200)
    ax.loglog(xs, np.minimum(peak_tflops, bandwidth_tbs * xs), color="black", lw=2)
    ridge = peak_tflops / bandwidth_tbs
    # the floor: below every roof and dot drawn (a CPU's c = a + b sits near 0.001 TFLOP/s), else 1e-2
    seen = [min(peak_tflops, bandwidth_tbs * x) for x in points.values()] + list((measured or {}).values())
    floor = min([1e-2] + [v / 3 for v in seen if v > 0])
    ax.axvline(ridge, color="gray", ls=":", lw=1)
    ax.text(ridge * 1.1, peak_tflops * 0.03, f"ridge\n{ridge:.1f} FLOP/B", fontsize=8, color="gray")
    for i, (name, x) in enumerate(points.items()):
        c = COLORS[i % len(COLORS)]
        roof = min(peak_tflops, bandwidth_tbs * x)
        ax.plot([x, x], [floor, roof], color=c, lw=1.5, alpha=0.6)
        ax.plot([x], [roof], "^", color=c, label=f"{name}: {x:.3g} FLOP/B, roof {roof:.3g}")
        if measured and name in measured:
            ax.plot([x], [measured[name]], "o", color=c, ms=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("TFLOP/s")
    ax.set_ylim(floor, peak_tflops * 2)
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
        ax.set_title(
            f"{name}\n{len(addrs)} lanes -> {len(uniq)} sector(s), "
            f"{len(uniq) * sector_bytes} B moved for {4 * len(np.unique(addrs))} B used",
            fontsize=9,
        )
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


def register_banks(ffmas, n_banks: int = 2, title=None):
    """FFMAs in issue order (grader.course.sass.Ffma, analysed): one column each, rows a, b, c; each source
    register coloured by its bank and hatched when the reuse cache serves it; a red x above an FFMA
    whose register-file reads conflict, an orange o where the reuse cache avoided a conflict."""
    from matplotlib.patches import Patch, Rectangle

    fig, ax = plt.subplots(figsize=(max(6.0, 0.19 * len(ffmas) + 1.5), 2.5))
    if not ffmas:
        ax.text(0.5, 0.5, "no FFMA to draw", ha="center", va="center", transform=ax.transAxes)
    for x, f in enumerate(ffmas):
        for row, (op, bank, cached) in enumerate(zip(f.sources, f.banks, f.cached)):
            if op.reg is None:
                continue
            color = COLORS[bank % len(COLORS)]
            face, hatch = ("white", "////") if cached else (color, None)
            ax.add_patch(Rectangle((x, 2 - row), 0.92, 0.9, facecolor=face, edgecolor=color, hatch=hatch, lw=0.8))
            ax.text(x + 0.46, 2 - row + 0.45, op.reg, ha="center", va="center", fontsize=5.5)
        if f.conflict or f.conflict_without_reuse:
            mark, c = ("x", "#d62728") if f.conflict else ("o", "#ff7f0e")
            ax.plot(x + 0.46, 3.3, mark, color=c, ms=4, mfc="none")
    ax.set_xlim(-0.2, len(ffmas) + 0.2)
    ax.set_ylim(-0.2, 3.7)
    ax.set_yticks([2.45, 1.45, 0.45], ["a", "b", "c"])
    ax.set_xlabel("FFMA, in issue order (d = a·b + c); the number in a cell: its register")
    for s in ("top", "right", "left"):
        ax.spines[s].set_visible(False)
    handles = [Patch(color=COLORS[b], label=f"bank {b}") for b in range(n_banks)]
    handles.append(Patch(facecolor="white", edgecolor="gray", hatch="////", label="from the reuse cache"))
    handles.append(plt.Line2D([], [], ls="", marker="x", color="#d62728", label="conflict"))
    handles.append(plt.Line2D([], [], ls="", marker="o", mfc="none", color="#ff7f0e", label="conflict avoided"))
    ax.legend(
        handles=handles, ncol=len(handles), fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False
    )
    if title:
        ax.set_title(title, fontsize=9, pad=22)
    return _done(fig)


def stacked_bytes(rows: dict[str, dict[str, float]], unit="bytes per element", title=None):
    """Stacked horizontal bars: rows[name] = {part: amount}, e.g. the traffic of a pass."""
    names = list(rows)
    parts = list(dict.fromkeys(p for r in rows.values() for p in r))
    fig, ax = plt.subplots(figsize=(7, 0.6 * len(names) + 1.4))
    y = np.arange(len(names))[::-1]
    left = np.zeros(len(names))
    # more parts than COLORS (a training step's kernels): tab20, so that no two parts share a colour
    colors = COLORS if len(parts) <= len(COLORS) else [plt.get_cmap("tab20")(i % 20) for i in range(len(parts))]
    for i, part in enumerate(parts):
        vals = np.array([rows[n].get(part, 0.0) for n in names])
        ax.barh(y, vals, left=left, color=colors[i % len(colors)], label=part)
        left += vals
    for yi, total in zip(y, left):
        ax.text(total, yi, f" {total:.4g}", va="center", fontsize=9)
    ax.set_yticks(y, names)
    ax.set_xlabel(unit)
    ax.set_xlim(0, left.max() * 1.2)
    if len(parts) > 4:  # beside the bars, where it hides none of them
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
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
    ax.barh(
        names[::-1],
        [counts[k] for k in names[::-1]],
        color=["#2ca02c" if k == "passed" else "#7f7f7f" for k in names[::-1]],
    )
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


# ---- the kernel's own accesses (grader.course.widgets turns a grader.judge.profile trace into these arguments) ----

CELL_COLORS = {
    "read": "#1f77b4",
    "written": "#ff7f0e",
    "read and written": "#9467bd",
    "this step": "#d62728",
    "earlier steps": "#f4b6b6",
    "this thread": "#2ca02c",
}


def cells(panels: dict[str, dict], title=None, legend=True):
    """Matrices as grids of cells, some of them coloured: panels[name] = {"shape": (rows, cols),
    "layers": [(label, [(r, c), ...]), ...]} (later layers paint over earlier ones; a label's colour
    comes from CELL_COLORS), optional "box": (r0, c0, r1, c1) outlined, "xlabel"/"ylabel"/"note".
    The thread map (one thread's elements of A, B, C) and the tile walk both draw with it."""
    n = len(panels)
    fig, axes = plt.subplots(1, n, figsize=(min(4.2 * n, 17), 4.2), squeeze=False)
    seen = {}
    for ax, (name, p) in zip(axes[0], panels.items()):
        rows, cols = p["shape"]
        labels = [lab for lab, _ in p.get("layers", [])]
        grid = np.zeros((rows, cols))
        for i, (_lab, cs) in enumerate(p.get("layers", [])):
            for r, c in cs:
                if 0 <= r < rows and 0 <= c < cols:
                    grid[r, c] = i + 1
        palette = ["#f2f2f2"] + [CELL_COLORS.get(lab, COLORS[i % len(COLORS)]) for i, lab in enumerate(labels)]
        from matplotlib.colors import ListedColormap

        ax.imshow(
            grid,
            cmap=ListedColormap(palette),
            vmin=0,
            vmax=len(palette) - 1,
            interpolation="nearest",
            aspect="equal" if max(rows, cols) <= 4 * min(rows, cols) else "auto",
        )
        if "box" in p:
            r0, c0, r1, c1 = p["box"]
            ax.add_patch(plt.Rectangle((c0 - 0.5, r0 - 0.5), c1 - c0, r1 - r0, fill=False, lw=1.5, ec="black"))
        for lab, cs in p.get("layers", []):
            if cs:
                seen[lab] = CELL_COLORS.get(lab, COLORS[labels.index(lab) % len(COLORS)])
        ax.set_title(f"{name} ({rows} x {cols})" + (f"\n{p['note']}" if p.get("note") else ""), fontsize=9)
        ax.set_xlabel(p.get("xlabel", "column"), fontsize=8)
        ax.set_ylabel(p.get("ylabel", "row"), fontsize=8)
        ax.tick_params(labelsize=7)
    if legend and seen:
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in seen.values()]
        fig.legend(handles, list(seen), loc="lower center", ncol=len(seen), fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.06 if legend and seen else 0, 1, 1))
    plt.close(fig)
    return fig


def warp_lanes(lane_units: dict[int, list[int]], kind: str, title=None, n_lanes: int = 32):
    """One warp-wide memory instruction: each active lane (x) against the 32-byte sectors (kind
    "sector": lane_units holds sector numbers; y = the distinct ones, in address order) or the 32
    banks (kind "bank": lane_units holds 4-byte word numbers; a lane of a float4 access touches 4
    banks) it touches. On the right, for banks: how many distinct words each bank must serve."""
    banks = kind == "bank"
    fig, axes = plt.subplots(
        1,
        2 if banks else 1,
        figsize=(9.5 if banks else 7, 4.2),
        squeeze=False,
        gridspec_kw={"width_ratios": [4, 1]} if banks else None,
    )
    ax = axes[0][0]
    units = sorted({u for us in lane_units.values() for u in us})
    if banks:
        ys = {u: u for u in range(32)}
    else:
        ys = {u: i for i, u in enumerate(units)}
    for lane, us in sorted(lane_units.items()):
        for u in us:
            y = ys[u % 32 if banks else u]
            ax.plot([lane], [y], "o", ms=5, color=plt.cm.viridis((y % 32) / 32 if banks else y / max(1, len(units))))
    ax.set_xlim(-1, n_lanes)
    ax.set_xticks(range(0, n_lanes, 4))
    ax.set_xlabel("lane")
    if banks:
        ax.set_ylim(-1, 32)
        ax.set_ylabel("bank (4-byte word % 32)")
    else:
        ax.set_ylabel("32-byte sector (distinct, in address order)")
        step = max(1, len(units) // 12)
        ax.set_yticks(
            range(0, len(units), step), [str(units[i] - units[0]) for i in range(0, len(units), step)], fontsize=7
        )
        ax.set_ylim(-1, max(len(units), 1))
    ax.grid(True, alpha=0.3)
    if banks:
        per_bank = Counter()
        words = {u for us in lane_units.values() for u in us}
        for w in words:
            per_bank[w % 32] += 1
        ax2 = axes[0][1]
        ax2.barh(range(32), [per_bank.get(b, 0) for b in range(32)], color=COLORS[3])
        ax2.set_ylim(-1, 32)
        ax2.set_xlabel("distinct words")
        ax2.set_yticks([])
        ax2.grid(True, alpha=0.3)
    if title:
        ax.set_title(title, fontsize=9)
    return _done(fig)


def mask_bits(rows: list[dict], title=None):
    """Lanes -> mask bits: rows[i] = {"word": "mask[r][w]", "writer": lane that stores the word (or
    None), "bits": {bit: lane whose element the bit describes}, "values": {bit: 0/1} (optional)}.
    One strip of 32 bits per word, each bit coloured and labelled by its lane."""
    n = max(1, len(rows))
    fig, ax = plt.subplots(figsize=(10, 0.75 * n + 1.4))
    for i, row in enumerate(rows):
        y = n - 1 - i
        for b in range(32):
            lane = row["bits"].get(b)
            color = plt.cm.hsv(lane / 32) if lane is not None else "#dddddd"
            ax.add_patch(plt.Rectangle((31 - b, y), 0.95, 0.8, color=color, alpha=0.55))
            if lane is not None:
                ax.text(31 - b + 0.47, y + 0.4, str(lane), ha="center", va="center", fontsize=6)
            v = row.get("values", {}).get(b)
            if v:
                ax.add_patch(plt.Rectangle((31 - b + 0.1, y + 0.05), 0.75, 0.12, color="black"))
        writer = row.get("writer")
        ax.text(
            32.3,
            y + 0.4,
            f"{row['word']}" + (f"  stored by lane {writer}" if writer is not None else ""),
            va="center",
            fontsize=8,
        )
    ax.set_xlim(-0.2, 44)
    ax.set_ylim(-0.3, n + 0.1)
    ax.set_xticks([31 - b + 0.47 for b in range(0, 32, 4)], [str(b) for b in range(0, 32, 4)], fontsize=7)
    ax.set_yticks([])
    ax.set_xlabel(
        "bit of the word (31 on the left); the number in a bit: the lane whose element it describes"
        + ("; a black bar: the bit is set" if any(r.get("values") for r in rows) else ""),
        fontsize=8,
    )
    for s in ("top", "right", "left"):
        ax.spines[s].set_visible(False)
    if title:
        ax.set_title(title, fontsize=9)
    return _done(fig)


def counts(table: dict[str, dict[str, float]], title=None):
    """Access counts side by side: table[kernel][figure] = value; one small bar chart per figure
    (each has its own unit), kernels in the given order."""
    kernels = list(table)
    figures = list(dict.fromkeys(f for row in table.values() for f in row))
    n = max(1, len(figures))
    fig, axes = plt.subplots(1, n, figsize=(min(3.3 * n, 17), 0.42 * len(kernels) + 1.6), squeeze=False)
    for ax, f in zip(axes[0], figures):
        vals = [table[k].get(f) for k in kernels]
        y = np.arange(len(kernels))[::-1]
        ax.barh(y, [v or 0 for v in vals], color=[COLORS[i % len(COLORS)] for i in range(len(kernels))])
        for yi, v in zip(y, vals):
            ax.text(v or 0, yi, " –" if v is None else f" {v:.3g}", va="center", fontsize=8)
        ax.set_yticks(y, kernels if ax is axes[0][0] else [""] * len(kernels), fontsize=8)
        ax.set_title(f, fontsize=8)
        ax.set_xlim(0, max([v or 0 for v in vals] + [1e-9]) * 1.5)
        ax.tick_params(axis="x", labelsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    return _done(fig)


class LiveLoss:
    """A loss curve redrawn in place while training runs: pass it as grader.spec.mlp.train's on_step. In a
    notebook the last drawing stays in the cell's output as a static figure; elsewhere finish() returns it."""

    def __init__(self, title: str | None = None, every: int = 25):
        self.title, self.every, self.handle = title, every, None
        try:
            from IPython import get_ipython
            from IPython.display import display

            if get_ipython() is not None:
                self.handle = display(self.figure([]), display_id=True)
        except ImportError:
            pass

    def figure(self, losses: list[float]):
        fig, ax = plt.subplots(figsize=(6.5, 3.5))
        if losses:
            ax.plot(np.arange(1, len(losses) + 1), losses, color=COLORS[0], lw=1, label="batch loss")
            if len(losses) >= 10:  # a running mean shows the trend through the batches' noise
                w = max(len(losses) // 20, 5)
                smooth = np.convolve(losses, np.ones(w) / w, mode="valid")
                ax.plot(np.arange(w, len(losses) + 1), smooth, color=COLORS[1], lw=2, label=f"mean of {w}")
            ax.set_yscale("log")
            ax.legend()
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy loss")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(self.title or "training")
        return _done(fig)

    def __call__(self, step: int, losses: list[float]) -> None:
        if self.handle is not None and (step + 1) % self.every == 0:
            self.handle.update(self.figure(losses))

    def finish(self, losses: list[float]):
        """The final curve: drawn in place in a notebook (returns None), else returned."""
        fig = self.figure(losses)
        if self.handle is None:
            return fig
        self.handle.update(fig)
        return None
