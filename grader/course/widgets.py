"""Widgets that draw the learner's own kernel: what each thread, warp and block of it touches,
read from the CPU backend's per-warp access trace (grader.judge.profile), never drawn by hand.

    from grader import widgets
    widgets.thread_map(SOURCE, "tiled")      # block and thread sliders -> the elements of A, B, C it touches
    widgets.warp_view(SOURCE, "conflict_free")  # a line of the kernel: 32 lanes against sectors or banks
    widgets.tile_walk(SOURCE, "tiled")       # step along K: the A and B tiles in shared memory
    widgets.mask_bits(SOURCE, "relu_mask")   # which lane sets which bit of which mask word
    widgets.roofline(SOURCE, "tiled", {"naive (01)": KERNELS / "01_naive.cu"})
    widgets.compare(SOURCE, "tiled", {"naive (01)": KERNELS / "01_naive.cu"})  # counts side by side

Each widget is a row of controls above a picture drawn by grader.course.plots; its display also carries
that picture as a PNG, the static fallback that nbval, GitHub and PDF exports show. This module
only reads traces into plain data (the `*_data` functions, tested on their own) and wires
controls to the plots; it draws nothing itself.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
from collections import Counter, defaultdict
from pathlib import Path

from grader.spec import exercises, kinds
from grader.course import plots

FLOAT = 4


# ---------------------------------------------------------------- the trace, read


def _get(rec, name, default=None):
    return rec.get(name, default) if isinstance(rec, dict) else getattr(rec, name, default)


class Access:
    """One warp-level access of a trace (a grader.judge.profile.WarpAccess, or the same fields as a dict).
    `occurrence` counts from the start of the kernel here (see `accesses`); `merged` > 1: nvcc
    loads this and the next merged-1 occurrences as one wider load; 0: absorbed into such a load."""

    __slots__ = ("kernel", "line", "block", "warp", "space", "op", "buffer", "occurrence", "lanes", "merged", "epoch")

    def __init__(self, rec, lanes=None, epoch=0):
        for f in self.__slots__[:-3]:
            setattr(self, f, _get(rec, f))
        self.block = tuple(self.block)
        self.lanes = [(int(l), tuple(t), int(off), int(size)) for l, t, off, size in (lanes or self.lanes)]
        self.merged = int(_get(rec, "merged", 1))
        self.epoch = epoch

    @property
    def key(self):  # one instruction of the source: a line may hold several (As and Bs loads)
        return (self.kernel, self.line, self.space, self.op, self.buffer)


def accesses(trace) -> list[Access]:
    """The trace's warp accesses, one per execution of an instruction by a warp. grader.judge.profile
    counts `occurrence` from the warp's last barrier, so one record can hold the same lane several
    times, once per stretch between barriers (in the order they ran): split those apart, then number
    each warp's executions of an instruction from the start of the kernel."""
    if trace and isinstance(trace[0], Access):
        return trace
    split = []
    for rec in trace or []:
        seen: Counter = Counter()
        epochs = defaultdict(list)
        for lane in _get(rec, "lanes"):
            epochs[seen[lane[0]]].append(lane)
            seen[lane[0]] += 1
        split += [Access(rec, lanes, e) for e, lanes in sorted(epochs.items())] or [Access(rec, [], 0)]
    split.sort(key=lambda a: (a.key, a.block, a.warp, a.epoch, a.occurrence))
    n: Counter = Counter()
    for a in split:
        a.occurrence = n[a.key, a.block, a.warp]
        n[a.key, a.block, a.warp] += 1
    return split


def profile_of(source, exercise: str, shape=None, blocks="all"):
    """grader.judge.profile.run, cached per (source, exercise, shape, blocks); with the trace unless
    blocks is "sample". shape None: the widget's small shape (the spec's trace_shape), or, when sampling, the
    exercise's profile shape. A kernel whose outputs are wrong is profiled too (its `wrong` says
    how): what a wrong kernel touches is what helps to debug it."""
    if not isinstance(source, (str, Path)):
        return source  # already a profile
    from grader.judge.submissions import read

    text, _ = read(source, exercise)
    small = getattr(exercises.EXERCISES.get(exercise), "trace_shape", None) or ()
    shape = tuple(shape or (() if blocks == "sample" else small)) or None
    key = (hashlib.sha256(text.encode()).hexdigest(), exercise, shape, repr(blocks))
    if key not in _CACHE:
        from grader.judge import profile

        p = profile.run(exercise, text, shape, blocks=blocks, trace=blocks != "sample", resources=False, check=False)
        p._widget_source = text
        if p.trace is not None:
            p.trace = accesses(p.trace)
        _CACHE[key] = p
    return _CACHE[key]


_CACHE: dict = {}


def buffer_shapes(exercise: str, shape) -> dict[str, tuple[int, int]]:
    """(rows, cols) of each launcher buffer, in elements (4 bytes)."""
    return exercises.kind(exercise).buffer_shapes(shape)


def _elements(off: int, size: int) -> range:
    return range(off // FLOAT, (off + size - 1) // FLOAT + 1)


def _cell(index: int, cols: int) -> tuple[int, int]:
    return divmod(index, cols)


def source_lines(p) -> list[str]:
    text = getattr(p, "_widget_source", None) or ""
    return text.split("\n")


def _line_text(p, line: int) -> str:
    lines = source_lines(p)
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def shared_extent(acc: list[Access]) -> dict[str, int]:
    """Words of each __shared__ array the trace touches (its highest word + 1)."""
    ext: dict[str, int] = {}
    for a in acc:
        if a.space == "shared":
            top = max(off + size for _, _, off, size in a.lanes) if a.lanes else 0
            ext[a.buffer] = max(ext.get(a.buffer, 0), -(-top // FLOAT))
    return ext


# ---------------------------------------------------------------- one warp access, as drawn


def lane_units(a: Access) -> dict[int, list[int]]:
    """lane -> the 32-byte sectors (global) or 4-byte words (shared) it touches. A load that nvcc
    merges with the next ones (`merged` k > 1) is drawn as the k*4-byte load it becomes."""
    width = FLOAT * a.merged if a.space == "shared" and a.merged > 1 else None
    out = {}
    for lane, _, off, size in a.lanes:
        size = width or size
        out[lane] = (
            list(range(off // 32, (off + size - 1) // 32 + 1)) if a.space == "global" else list(_elements(off, size))
        )
    return out


def busiest_bank(a: Access) -> int:
    """Shared: the most distinct 4-byte words that one bank holds among the words the warp's lanes
    touch (the same word twice is a broadcast); a 32-bit access costs that many wavefronts."""
    per_bank = defaultdict(set)
    for ws in lane_units(a).values():
        for w in ws:
            per_bank[w % 32].add(w)
    return max((len(v) for v in per_bank.values()), default=0)


def line_cost(p, key) -> dict | None:
    """grader.judge.profile's count for one instruction (its per_line row): requests, sectors or
    wavefronts, and their ratio, over every recorded warp."""
    kernel, line, space, op, buffer = key
    for r in getattr(p, "per_line", None) or []:
        if (r.get("kernel"), r.get("line"), r.get("space"), r.get("op"), r.get("buffer")) == tuple(key):
            units = r.get("sectors", r.get("wavefronts"))
            return {
                "requests": r["requests"],
                "units": units,
                "unit": "sectors" if "sectors" in r else "wavefronts",
                "per_request": units / r["requests"] if r["requests"] else 0.0,
                "conflicts": r.get("conflicts"),
            }
    return None


# ---------------------------------------------------------------- data for each picture


def thread_data(p, block, thread) -> dict[str, dict]:
    """The elements of each buffer (launcher matrices and __shared__ arrays, 32 banks wide) that
    thread `thread` (tx, ty, tz) of block `block` reads and writes, as plots.cells panels; the
    block's own writes to a launcher buffer (its tile of C) are outlined."""
    acc = accesses(p.trace)
    block, thread = tuple(block), tuple(thread)
    shapes = buffer_shapes(p.exercise, p.shape)
    ext = shared_extent(acc)
    reads, writes, block_writes = defaultdict(Counter), defaultdict(Counter), defaultdict(set)
    touched = set()  # the block's buffers: drawn for each of its threads, even one that touches none
    for a in acc:
        if a.block != block:
            continue
        touched.add(a.buffer)
        for _, tid, off, size in a.lanes:
            if tid == thread:
                (reads if a.op == "ld" else writes)[a.buffer].update(_elements(off, size))
            if a.op == "st" and a.space == "global":
                block_writes[a.buffer].update(_elements(off, size))
    panels = {}
    names = [b for b in shapes if b in touched] + sorted(b for b in ext if b in touched)
    idle = not any(reads.values()) and not any(writes.values())
    for name in names:
        shared = name not in shapes
        rows, cols = (-(-ext[name] // 32), 32) if shared else shapes[name]
        r, w = set(reads[name]), set(writes[name])
        panels[name + (" (shared, 32 banks wide)" if shared else "")] = {
            "shape": (rows, cols),
            "layers": [
                ("read", [_cell(i, cols) for i in r - w]),
                ("written", [_cell(i, cols) for i in w - r]),
                ("read and written", [_cell(i, cols) for i in r & w]),
            ],
            "note": "this thread touches nothing"
            if idle
            else f"{sum(reads[name].values())} element reads, {sum(writes[name].values())} writes",
            "xlabel": "bank" if shared else "column",
            "ylabel": "128-byte row" if shared else "row",
        }
        if not shared and block_writes[name]:
            cells = [_cell(i, cols) for i in block_writes[name]]
            rs, cs = [c[0] for c in cells], [c[1] for c in cells]
            panels[name]["box"] = (min(rs), min(cs), max(rs) + 1, max(cs) + 1)
            panels[name]["note"] += "; the block's tile outlined"
    return panels


def blocks_and_threads(p) -> tuple[list[tuple], tuple[int, int, int]]:
    """The blocks in the trace, and the block's extent in threads (x, y, z)."""
    acc = accesses(p.trace)
    blocks = sorted({a.block for a in acc}, key=lambda b: (b[2], b[1], b[0]))
    top = [0, 0, 0]
    for a in acc:
        for _, t, *_ in a.lanes:
            top = [max(top[i], t[i]) for i in range(3)]
    return blocks, tuple(x + 1 for x in top)


def instructions(p) -> list[tuple]:
    """The memory instructions in the trace: (kernel, line, space, op, buffer), in source order."""
    return sorted({a.key for a in accesses(p.trace)}, key=lambda k: (k[0], k[1], k[4], k[3]))


def instruction_label(p, key) -> str:
    kernel, line, space, op, buffer = key
    what = {"ld": "load", "st": "store"}.get(op, op)
    return f"line {line}: {space} {what} of {buffer}  ·  {_line_text(p, line)[:60]}"


def warp_accesses(p, key, block=None, warp=None) -> list[Access]:
    acc = [a for a in accesses(p.trace) if a.key == tuple(key)]
    if block is not None:
        acc = [a for a in acc if a.block == tuple(block)]
    if warp is not None:
        acc = [a for a in acc if a.warp == warp]
    return sorted(acc, key=lambda a: (a.block[::-1], a.warp, a.occurrence))


def worst_instruction(p, space=None, buffer=None):
    """The instruction with the most sectors or wavefronts per request (the one to look at first)."""
    keys = [k for k in instructions(p) if (space is None or k[2] == space) and (buffer is None or k[4] == buffer)]
    costs = {k: (line_cost(p, k) or {}).get("per_request", 0.0) for k in keys}
    return max(keys, key=lambda k: costs[k]) if keys else None


def warp_data(p, a: Access) -> dict:
    """The arguments of plots.warp_lanes for one warp access, what this access touches, and what
    grader.judge.profile counted for its instruction over every recorded warp (`per_request`)."""
    units = lane_units(a)
    cost = line_cost(p, a.key) or {}
    used = len({e for _, _, off, size in a.lanes for e in _elements(off, size)}) * FLOAT
    if a.space == "global":
        n = len({u for us in units.values() for u in us})
        say = f"{len(a.lanes)} lanes -> {n} sector(s) of 32 B: {32 * n} B moved for {used} B used"
    else:
        n = busiest_bank(a)
        say = f"{len(a.lanes)} lanes; busiest bank: {n} distinct word(s)" + (
            ""
            if a.merged == 1
            else " (absorbed into an earlier wide load: no request of its own)"
            if a.merged == 0
            else f" (one {32 * a.merged}-bit load for {a.merged} of the source's loads)"
        )
    if cost:
        say += f"\nline {a.line}, every recorded warp: {cost['per_request']:.3g} {cost['unit']} per request" + (
            f", {cost['conflicts'] / cost['requests']:.3g} of them bank conflicts"
            if cost["unit"] == "wavefronts" and cost.get("conflicts")
            else ""
        )
    return {
        "lane_units": units,
        "kind": "sector" if a.space == "global" else "bank",
        "n": n,
        "say": say,
        "per_request": cost.get("per_request"),
    }


def steps(p, block) -> dict:
    """Block `block`'s walk along K: for each global load, shared store and shared load
    instruction, which of its occurrences (per warp) make up one step. The number of steps is
    the fewest occurrences of any global load of A or B (one tile per step in a tiled kernel,
    one k in the naive one); an instruction that runs r times as often does r per step."""
    acc = [a for a in accesses(p.trace) if a.block == tuple(block)]
    count = defaultdict(int)
    for a in acc:
        count[a.key] = max(count[a.key], a.occurrence + 1)
    loads = [k for k in count if k[2] == "global" and k[3] == "ld" and k[4] in ("A", "B")]
    n = min((count[k] for k in loads), default=0)
    return {"n": n, "per_step": {k: max(1, count[k] // n) if n else 1 for k in count}, "accesses": acc}


def tile_data(p, block, step: int, thread=None) -> dict[str, dict]:
    """plots.cells panels for step `step` of block `block`: the elements of A and B it loads
    (earlier steps faded, the block's current tile boxed), and the __shared__ arrays (32 banks
    wide): slots written this step, and the slots thread `thread` reads in it."""
    s = steps(p, block)
    shapes = buffer_shapes(p.exercise, p.shape)
    ext = shared_extent(s["accesses"])
    now, before, mine = defaultdict(set), defaultdict(set), defaultdict(set)
    for a in s["accesses"]:
        k = a.occurrence // s["per_step"][a.key]
        if k > step:
            continue
        if a.space == "global" and a.op == "ld" and a.buffer in ("A", "B"):
            (now if k == step else before)[a.buffer].update(
                e for *_, off, size in a.lanes for e in _elements(off, size)
            )
        elif a.space == "shared" and k == step:
            if a.op == "st":
                now[a.buffer].update(e for *_, off, size in a.lanes for e in _elements(off, size))
            elif thread is not None:
                mine[a.buffer].update(
                    e for _, t, off, size in a.lanes if t == tuple(thread) for e in _elements(off, size)
                )
    panels = {}
    for name in ("A", "B"):
        if name not in shapes or not (now[name] or before[name]):
            continue
        rows, cols = shapes[name]
        cur = [_cell(i, cols) for i in now[name]]
        box = None
        if cur:
            rs, cs = [r for r, _ in cur], [c for _, c in cur]
            box = (min(rs), min(cs), max(rs) + 1, max(cs) + 1)
        panels[name] = {
            "shape": (rows, cols),
            "box": box,
            "layers": [("earlier steps", [_cell(i, cols) for i in before[name] - now[name]]), ("this step", cur)],
            "note": f"this step: rows {box[0]}-{box[2] - 1}, columns {box[1]}-{box[3] - 1}" if box else "",
        }
        if box is None:
            del panels[name]["box"]
    for name in sorted(ext):
        rows = -(-ext[name] // 32)
        panels[f"{name} (shared, 32 banks wide)"] = {
            "shape": (rows, 32),
            "xlabel": "bank",
            "ylabel": "128-byte row",
            "layers": [
                ("this step", [_cell(i, 32) for i in now[name]]),
                ("this thread", [_cell(i, 32) for i in mine[name]]),
            ],
            "note": f"{len(now[name])} words stored this step"
            + (f", {len(mine[name])} read by the thread" if thread is not None else ""),
        }
    return panels


def mask_data(p, block, warp, occurrence: int) -> list[dict]:
    """plots.mask_bits rows for the mask words warp `warp` of block `block` stores at that
    occurrence of its mask store: for each bit, the lane (of that warp) whose element of the
    output (Y, or C in gemm_relu) the bit describes, and the lane that stores the word."""
    acc = [a for a in accesses(p.trace) if a.block == tuple(block)]
    out_name = exercises.kind(p.exercise).mask_of
    rows_cols = buffer_shapes(p.exercise, p.shape)
    N = rows_cols[out_name][1]
    W = rows_cols["mask"][1]
    writer = {}  # element of Y/C -> (warp, lane) that stored it
    for a in acc:
        if a.space == "global" and a.op == "st" and a.buffer == out_name:
            for lane, _, off, size in a.lanes:
                for e in _elements(off, size):
                    writer[e] = (a.warp, lane)
    rows = []
    for a in acc:
        if (
            a.space == "global"
            and a.op == "st"
            and a.buffer == "mask"
            and a.warp == warp
            and a.occurrence == occurrence
        ):
            for lane, _, off, size in a.lanes:
                for word in _elements(off, size):
                    r, w = divmod(word, W)
                    bits = {}
                    for b in range(32):
                        who = writer.get(r * N + 32 * w + b) if 32 * w + b < N else None
                        if who is not None:
                            bits[b] = who[1] if who[0] == warp else 32 * (who[0] - warp) + who[1]
                    rows.append({"word": f"mask[{r}][{w}]", "writer": lane, "bits": bits})
    return rows


def mask_stores(p) -> list[tuple]:
    """(block, warp, occurrence) of every mask store in the trace."""
    return sorted(
        {
            (a.block, a.warp, a.occurrence)
            for a in accesses(p.trace)
            if a.space == "global" and a.op == "st" and a.buffer == "mask"
        },
        key=lambda t: (t[0][::-1], t[1], t[2]),
    )


# ---------------------------------------------------------------- counts and the roofline

# The figures `compare` shows (grader.judge.profile's derived names), how the course words them, and
# which ones each exercise's lesson is about (the first that exist are shown).
FIGURES = {
    "sectors_per_request_ld": "sectors per global load",
    "sectors_over_ideal_ld": "global sectors / coalesced ideal",
    "global_loads_per_fma": "global loads per FMA",
    "bytes_per_flop": "global bytes per FLOP",
    "shared_loads_per_fma": "shared loads per FMA",
    "wavefronts_per_shared_request": "wavefronts per shared request",
    "wavefronts_per_shared_load": "wavefronts per shared load",
    "bank_conflicts_per_shared_request": "bank conflicts per shared request",
    "forward_bytes_read_per_element": "forward: bytes read per element",
    "forward_bytes_written_per_element": "forward: bytes written per element",
    "backward_bytes_read_per_element": "backward: bytes read per element",
    "backward_bytes_written_per_element": "backward: bytes written per element",
    "C_bytes_per_element": "C: bytes per element",
    "C_writes_per_element": "C: writes per element",
    "mask_bytes_per_element": "mask: bytes per element",
}
# (which figures each exercise's lesson is about: its spec's `lesson`, grader.spec.exercises)


def figures(p, names=None) -> dict[str, float]:
    """The derived figures of a profile that the course discusses, by their course names."""
    d = getattr(p, "derived", None) or {}
    return {FIGURES.get(k, k): float(d[k]) for k in (names or FIGURES) if d.get(k) is not None}


def intensity(p) -> float | None:
    """FLOP per byte of global traffic that the profile counted (1 / bytes_per_flop)."""
    bpf = (getattr(p, "derived", None) or {}).get("bytes_per_flop")
    return 1.0 / bpf if bpf else None


_TIMES: dict = {}


def measured_tflops(kernels: dict, n: int = 2048) -> dict[str, float]:
    """On a GPU: TFLOP/s at n^3 of each {label: (source, exercise)} whose exercise has the `gemm`
    launcher (grader.course.lab.time_gemms, cached per source); {} without a GPU."""
    import torch

    if not torch.cuda.is_available():
        return {}
    from grader.course import lab
    from grader.run.binding import load
    from grader.judge.submissions import read

    todo, out = {}, {}
    for label, (src, ex) in kernels.items():
        if ex in exercises.EXERCISES and exercises.kind(ex) is kinds.GEMM:
            key = (hashlib.sha256(read(src, ex)[0].encode()).hexdigest(), n)
            if key in _TIMES:
                out[label] = _TIMES[key]
            else:
                todo[label] = (key, load(src, ex))
    if todo:
        got = lab.time_gemms({label: mod for label, (_, mod) in todo.items()}, n)
        for label, (key, _) in todo.items():
            out[label] = _TIMES[key] = got[label]
    return out


def _kernels(source, exercise, others) -> dict:
    """{label: (source, exercise)}: yours first; `others` maps a label to a path or source (same
    exercise) or to (path, exercise) for another exercise's kernel (e.g. the plain GEMM)."""
    out = {"yours": (source, exercise)}
    for name, v in (others or {}).items():
        out[name] = tuple(v) if isinstance(v, tuple) else (v, exercise)
    return out


# ---------------------------------------------------------------- the widgets


def _friendly(fn):
    """A kernel that does not compile, or faults, has no trace to draw: say so in one message (the
    grader's own, with its fix) instead of a traceback, and return None. (A wrong kernel is drawn.)"""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kw):
        from grader.errors import GraderError

        try:
            return fn(*args, **kw)
        except GraderError as e:
            print(
                f"grader.course.widgets.{fn.__name__}: nothing to draw until the kernel compiles and runs to its end.\n{e}"
            )
            return None

    return wrapper


def _wrong(p, label: str = "your kernel") -> str:
    """For a wrong kernel's profile: a printed warning (it shows in static outputs too), and the same
    as an HTML line for a widget's caption; "" for a correct one."""
    if not getattr(p, "wrong", ""):
        return ""
    say = f"{label} is wrong ({p.wrong.splitlines()[0]})"
    print(f"warning: {say}. Drawn anyway: what it touches shows where it goes wrong.")
    return f"<div style='color:#c62828'>{html.escape(say)}: drawn anyway.</div>"


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def _make_view():
    import ipywidgets as w

    class FigureView(w.VBox):
        """Controls, then the picture (a PNG of a grader.course.plots figure) and a caption. Its display
        bundle carries the PNG too: where no widget can live (nbval, GitHub, PDF) that is what shows."""

        def __init__(self, controls, draw, caption=""):
            self.image = w.Image(format="png", layout=w.Layout(max_width="100%"))
            self.caption = w.HTML(caption)
            self._draw = draw
            super().__init__([w.HBox(controls, layout=w.Layout(flex_flow="row wrap")), self.image, self.caption])
            self.add_class("grader-widget")
            for c in controls:
                c.observe(lambda _change: self.redraw(), names="value")
            self.redraw()

        def redraw(self):
            fig = self._draw()
            self.figure = fig
            self.png = _png(fig)
            self.image.value = self.png

        def _repr_mimebundle_(self, **kwargs):
            data = super()._repr_mimebundle_(**kwargs)
            data["image/png"] = base64.b64encode(self.png).decode()
            return data

    return FigureView


def _slider(desc, hi, value=0, **kw):
    import ipywidgets as w

    return w.IntSlider(
        value=min(value, max(0, hi)),
        min=0,
        max=max(0, hi),
        description=desc,
        continuous_update=False,
        style={"description_width": "initial"},
        layout=w.Layout(width="260px"),
        **kw,
    )


@_friendly
def thread_map(source, exercise: str, shape=None, *, block=(0, 0, 0), thread=(0, 0, 0)):
    """Sliders for a block and a thread; the elements of A, B and C (and of the __shared__ arrays)
    that thread reads and writes, from the trace of the kernel in `source` at a small `shape`."""
    p = profile_of(source, exercise, shape)
    blocks, dims = blocks_and_threads(p)
    bx = _slider("block x", max(b[0] for b in blocks), block[0])
    by = _slider("block y", max(b[1] for b in blocks), block[1])
    tx = _slider("thread x", dims[0] - 1, thread[0])
    ty = _slider("thread y", dims[1] - 1, thread[1])
    controls = [c for c, hi in ((bx, bx.max), (by, by.max), (tx, tx.max), (ty, ty.max)) if hi > 0] or [bx]

    def draw():
        b, t = (bx.value, by.value, 0), (tx.value, ty.value, 0)
        return plots.cells(
            thread_data(p, b, t), title=f"{exercise}, {_shape_text(p.shape)}: thread {t[:2]} of block {b[:2]}"
        )

    return _make_view()(controls, draw, caption=_wrong(p))


@_friendly
def warp_view(source, exercise: str, shape=None, *, line=None, buffer=None, space=None, block=(0, 0, 0), warp=0):
    """Pick a memory instruction of the kernel (a line, and which array when a line has several),
    a warp and an occurrence: the 32 lanes against the 32-byte sectors (global) or the 32 banks
    (shared) they touch, with what it costs. Starts on the costliest instruction (or `line`/`buffer`)."""
    import ipywidgets as w

    p = profile_of(source, exercise, shape)
    keys = instructions(p)
    start = (
        next(
            (
                k
                for k in keys
                if (line is None or k[1] == line)
                and (buffer is None or k[4] == buffer)
                and (space is None or k[2] == space)
            ),
            None,
        )
        if (line or buffer or space)
        else None
    )
    start = start or worst_instruction(p) or keys[0]
    pick = w.Dropdown(
        options=[(instruction_label(p, k), k) for k in keys],
        value=start,
        description="instruction",
        layout=w.Layout(width="620px"),
    )
    blocks, dims = blocks_and_threads(p)
    n_warps = -(-dims[0] * dims[1] * dims[2] // 32)
    blk = w.Dropdown(
        options=[(str(b[:2]), b) for b in blocks],
        value=tuple(block) if tuple(block) in blocks else blocks[0],
        description="block",
        layout=w.Layout(width="170px"),
    )
    wp = _slider("warp", n_warps - 1, warp)
    occ = _slider("occurrence", 0)

    def draw():
        acc = warp_accesses(p, pick.value, blk.value, wp.value)
        occ.max = max(0, len(acc) - 1)
        if not acc:
            return plots.warp_lanes(
                {},
                "bank" if pick.value[2] == "shared" else "sector",
                title=f"warp {wp.value} never runs this instruction in block {blk.value[:2]}",
            )
        a = acc[min(occ.value, len(acc) - 1)]
        d = warp_data(p, a)
        return plots.warp_lanes(
            d["lane_units"],
            d["kind"],
            title=f"{instruction_label(p, a.key)[:80]}\nblock {a.block[:2]}, warp {a.warp}, "
            f"occurrence {a.occurrence}: {d['say']}",
        )

    return _make_view()([pick, blk, wp, occ], draw, caption=_wrong(p) + _per_line_caption(p))


@_friendly
def tile_walk(source, exercise: str, shape=None, *, block=(0, 0, 0), thread=(0, 0, 0)):
    """A slider along K: the elements of A and B that block `block` loads at that step (its tile,
    boxed; earlier steps faded) and the __shared__ slots the step writes, with the slots one
    thread then reads from them. Only that block is traced."""
    p = profile_of(source, exercise, shape, blocks=[tuple(block)])
    blocks, dims = blocks_and_threads(p)
    n = steps(p, block)["n"]
    st = _slider("step along K", n - 1)
    tx = _slider("thread x", dims[0] - 1, thread[0])
    ty = _slider("thread y", dims[1] - 1, thread[1])

    def draw():
        t = (tx.value, ty.value, 0)
        return plots.cells(
            tile_data(p, block, st.value, t),
            title=f"{exercise}, {_shape_text(p.shape)}: block {tuple(block)[:2]}, step {st.value} of {n}"
            f" (thread {t[:2]}'s shared reads in green)",
        )

    return _make_view()([c for c in (st, tx, ty) if c.max > 0] or [st], draw, caption=_wrong(p))


@_friendly
def mask_bits(source, exercise: str | None = None, shape=None):
    """Pick a warp's mask store: which lane's element each bit of the stored words describes, and
    which lane stores each word (a __ballot_sync word, or words assembled with shuffles). exercise:
    default the ReLU pair's."""
    import ipywidgets as w

    exercise = exercise or exercises.of_kind(kinds.RELU_PAIR).name

    p = profile_of(source, exercise, shape)
    stores = mask_stores(p)
    if not stores:
        print(f"grader.course.widgets.mask_bits: the kernel stores no mask words at {_shape_text(p.shape)}")
        return None
    pick = w.Dropdown(
        options=[(f"block {b[:2]}, warp {wp}, store #{o}", (b, wp, o)) for b, wp, o in stores],
        value=stores[0],
        description="mask store",
        layout=w.Layout(width="380px"),
    )

    def draw():
        b, wp, o = pick.value
        return plots.mask_bits(
            mask_data(p, b, wp, o),
            title=f"{exercise}, {_shape_text(p.shape)}: block {b[:2]}, warp {wp}, its mask store #{o}",
        )

    return _make_view()([pick], draw, caption=_wrong(p))


@_friendly
def roofline(
    source,
    exercise: str,
    others: dict | None = None,
    shape=None,
    *,
    measured="auto",
    peak_tflops: float | None = None,
    bandwidth_tbs: float | None = None,
):
    """The kernel's point (and `others`', as in `compare`) on the roofline: intensity from its
    counted global bytes per FLOP (sampled blocks at the exercise's profile shape); on a GPU
    ("auto") its measured TFLOP/s as dots. Tick kernels in or out. Roof: the H200's FP32 peak
    and copy bandwidth as notebook 00 measured them (grader.course.lab.h200_figures), unless given."""
    import ipywidgets as w

    from grader.course.lab import h200_figures

    h200 = h200_figures()
    peak_tflops = peak_tflops or h200["fp32_peak_TFLOPs"]
    bandwidth_tbs = bandwidth_tbs or h200["copy_TBs"]

    kernels = _kernels(source, exercise, others)
    profs = {k: profile_of(src, ex, shape, blocks="sample") for k, (src, ex) in kernels.items()}
    caption = "".join(_wrong(p, k) for k, p in profs.items())
    points = {k: intensity(p) for k, p in profs.items() if intensity(p)}
    if measured == "auto":
        measured = measured_tflops(kernels)
    boxes = [w.Checkbox(value=True, description=k, indent=False, layout=w.Layout(width="auto")) for k in points]
    where = "measured here (dots)" if measured else "no GPU here: intensities only"

    def draw():
        shown = {b.description: points[b.description] for b in boxes if b.value}
        return plots.roofline(
            shown,
            peak_tflops,
            bandwidth_tbs,
            measured=measured or None,
            title=f"global bytes counted on the CPU backend; {where}",
            xlabel="FLOP per byte of the global-memory sectors the warps request (counted)",
        )

    return _make_view()(boxes, draw, caption=caption)


@_friendly
def compare(
    source,
    exercise: str,
    others: dict | None = None,
    shape=None,
    *,
    extra: dict | None = None,
    measured="auto",
    names=None,
):
    """Your kernel's access counts beside `others`' ({label: path or source}, or {label: (path,
    exercise)} for another exercise's kernel), e.g. the previous rung, counted on the CPU backend
    at one shape: a table and one bar chart per figure (the exercise's lesson's, or `names`).
    `extra` {label: {derived name: value}} adds rows counted by hand; on a GPU ("auto") GEMMs
    also get their measured TFLOP/s. Returns {label: {figure: value}}."""
    kernels = _kernels(source, exercise, others)
    names = names or exercises.EXERCISES[exercise].lesson or None
    profs = {k: profile_of(src, ex, shape, blocks="sample") for k, (src, ex) in kernels.items()}
    for k, p in profs.items():
        _wrong(p, k)
    table = {k: figures(p, names) for k, p in profs.items()}
    for label, d in (extra or {}).items():
        table[label] = {FIGURES.get(k, k): float(v) for k, v in d.items()}
    if measured == "auto":
        measured = measured_tflops(kernels)
    for k, v in (measured or {}).items():
        table.setdefault(k, {})["TFLOP/s (measured here)"] = v
    p0 = profs["yours"]
    sampled = getattr(p0, "sampled", "")
    fig = plots.counts(table, title=f"{exercise} at {_shape_text(p0.shape)}, counted on the CPU backend")
    _show(_table_html(table) + (f"<p style='font-size:smaller'>sampled: {sampled}</p>" if sampled else ""), fig)
    return table


def _table_html(table: dict[str, dict[str, float]]) -> str:
    figs = list(dict.fromkeys(f for row in table.values() for f in row))
    head = "".join(f"<th>{k}</th>" for k in table)
    body = "".join(
        f"<tr><td style='text-align:left'>{f}</td>"
        + "".join(f"<td>{table[k][f]:.3g}</td>" if f in table[k] else "<td>–</td>" for k in table)
        + "</tr>"
        for f in figs
    )
    return f"<table><tr><th></th>{head}</tr>{body}</table>"


def _show(html: str, fig) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display

        if get_ipython() is not None:
            display(HTML(html), fig)
            return
    except ImportError:
        pass
    print(html)


def _per_line_caption(p) -> str:
    rows = getattr(p, "per_line", None) or []
    if not rows:
        return ""
    cells = []
    for r in rows:
        cost = r.get("sectors", r.get("wavefronts"))
        unit = "sectors" if "sectors" in r else "wavefronts"
        per = f"{cost / r['requests']:.2f} {unit}/request" if r.get("requests") and cost is not None else ""
        cells.append(
            f"<tr><td>{r.get('line')}</td><td>{r.get('space')} {r.get('op')}</td><td>{r.get('requests')}</td>"
            f"<td>{per}</td><td>{r.get('conflicts', '')}</td></tr>"
        )
    sampled = getattr(p, "sampled", "")
    return (
        "<details><summary>every memory instruction, counted over the traced blocks"
        + (f" ({sampled})" if sampled else "")
        + "</summary><table><tr><th>line</th><th>access</th>"
        "<th>requests</th><th>cost</th><th>bank conflicts</th></tr>" + "".join(cells) + "</table></details>"
    )


def _shape_text(shape) -> str:
    return " x ".join(str(s) for s in shape) if shape else ""
