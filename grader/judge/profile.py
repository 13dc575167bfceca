"""The access profile of a kernel file on the CPU backend: what Nsight Compute would count.

    from grader import profile
    p = profile.run("tiled", "kernels/02_tiled.cu")            # 256^3, a sample of blocks
    p.metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"], p.derived["bytes_per_flop"]
    p.per_line                                                   # the same counts per source line
    profile.run("tiled", src, (64, 64, 64), blocks="all", trace=True).trace   # every warp access

The counting happens in grader/compile/cpu/profile.cpp, fed by the same access hooks as the race
detector; this module turns its counts into figures (Nsight Compute's metric names where one
exists, `derived` for ours), checks them against the exercise's access bounds
(grader/spec/exercises.py: `verdict`), and serves `python -m grader profile`.

Figures (FMA = one multiply-add of the GEMM, M*N*K of them; FLOPs = 2*M*N*K):
  sectors_per_request_ld/st  32-byte sectors per global load/store instruction (4 = coalesced floats)
  sectors_over_ideal_ld      global load sectors / the sectors the same bytes take coalesced (per
                             instruction: ceil(distinct bytes its lanes ask for / 32)); 1 = coalesced
                             at any width (a float4 load's 16 sectors are ideal), 8 = a column of floats
  bytes_per_flop             global sectors (loads + stores) x 32 B / FLOPs: traffic that reuse cuts
  global_loads_per_fma       floats loaded from global memory by the threads, per FMA
  shared_loads_per_fma       floats loaded from shared memory by the threads, per FMA
  operand_loads_per_fma      the two together: every float a thread loads from memory for its FMAs, wherever
                             it comes from (a register tile loads each once for several FMAs)
  wavefronts_per_shared_request, bank_conflicts_per_shared_request   (loads and stores together)
  bytes_read_per_element / bytes_written_per_element   global sector bytes per element of the output
      (ReLU: per launcher, over every kernel of the launcher's role; gemm_relu: C_bytes_per_element, C's
      loads and stores per element)
  C_writes_per_element / C_reads_per_element (gemm_relu)   floats stored to / loaded from C per element of C,
      and to / from scratch (SCRATCH), which holds an unfused GEMM's intermediate: stored, then read back by a
      second pass (scratch_writes_per_element / scratch_reads_per_element, the scratch part alone)

Global memory is every piece of device memory a kernel reaches: the launcher's buffers (A, B, C, bias, mask,
X, Y, dY, dX) and the rest, which the counts name SCRATCH ("scratch": a cudaMalloc block; "scratch (g)": the
__device__ / __constant__ variable g). Operands staged there (a copy of A read naively) are global traffic too.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from grader.spec import exercises
from grader.compile.cpu.counters import DEFAULT_BUDGET, configure, take  # profile.configure/take, as before

SCRATCH = "scratch"  # profile.cpp's name for device memory outside the launcher's buffers (and its prefix)
GEMM_PROFILE_SHAPE = (256, 256, 256)
RELU_PROFILE_SHAPE = (1024, 1024)
NCU = {  # (space, op) -> (requests, units, conflicts) metric names
    ("global", "ld"): (
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        None,
    ),
    ("global", "st"): (
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        None,
    ),
    ("shared", "ld"): (
        "smsp__inst_executed_op_shared_ld.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    ),
    ("shared", "st"): (
        "smsp__inst_executed_op_shared_st.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    ),
}


@dataclass
class WarpAccess:
    """One warp-level memory instruction of a recorded block (see CONTRACTS.md)."""

    kernel: str
    line: int
    block: tuple[int, int, int]
    warp: int
    space: str  # "global" | "shared"
    op: str  # "ld" | "st"
    buffer: str  # launcher argument ("A", "B", "C", "mask", ...), SCRATCH ("scratch (g)") or __shared__ array name
    occurrence: int  # the k-th time this warp executed this instruction in this block (from 0)
    lanes: list  # (lane, (tx, ty, tz), byte offset in buffer, size in bytes) of active lanes
    merged: int = 1  # 2 or 4 when counted as one wider access (nvcc's), 0 when absorbed into one


@dataclass
class Profile:
    exercise: str
    shape: tuple
    sampled: str  # how blocks were sampled, "" when every block was recorded
    metrics: dict = field(default_factory=dict)
    derived: dict = field(default_factory=dict)
    resources: list | None = None
    per_line: list = field(default_factory=list)
    launches: list = field(default_factory=list)  # kernel, grid, block, blocks recorded/total
    trace: list | None = None
    # sampled launches whose blocks do not stand for the rest: what they loaded, scaled, against every block's
    unrepresentative: list = field(default_factory=list)
    wrong: str = ""  # run(check=False) of a kernel whose outputs are wrong: what the check found, per output

    def as_dict(self, trace: bool = False) -> dict:
        d = asdict(self)
        d["shape"] = list(self.shape)
        if not trace:
            d.pop("trace")
        return d

    def __repr__(self) -> str:
        return f"<grader.judge.profile.Profile {self.exercise} {'x'.join(map(str, self.shape))}: {summary(self)}>"


# ----------------------------------------------------------------------------- lines
@functools.lru_cache(maxsize=64)
def _lines(lib_path: str, pcs: tuple[int, ...], mtime: float, filename: str) -> dict[int, tuple[str, int]]:
    """pc offset -> (file, line), from one addr2line run over the library: the innermost frame in the
    kernel file (an access inside a CPU-backend header, e.g. __ldg, is its caller's line). binutils'
    addr2line names DWARF 5's default file after the compilation unit (kernel_emu.cpp): `filename`."""
    tool = shutil.which("addr2line")
    if not tool or not pcs:
        return {}
    try:
        out = subprocess.run(
            [tool, "-a", "-i", "-e", lib_path, *[hex(p) for p in pcs]], capture_output=True, text=True, timeout=30
        ).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    chains: list[list[tuple[str, int]]] = []
    for text in out:
        if text.startswith("0x"):
            chains.append([])
            continue
        m = re.match(r"(.*):(\d+)", text.split(" ")[0])
        if m and chains:
            name = Path(m.group(1)).name
            chains[-1].append((filename if name == "kernel_emu.cpp" else name, int(m.group(2))))
    found = {}
    for pc, chain in zip(pcs, chains):
        mine = [c for c in chain if c[0] == filename] or chain
        if mine:
            found[pc] = mine[0]
    return found


# ----------------------------------------------------------------------------- figures
def _round(x: float) -> float:
    r = round(x)
    return float(r) if abs(x - r) < 1e-6 * max(1.0, abs(x)) else x


def from_raw(exercise: str, shape, raw: dict, lib_path: str | None = None, filename: str | None = None) -> Profile:
    """Figures from what the library counted (`take`)."""
    shape = tuple(shape)
    launches = raw["launches"]
    lines = {}
    if lib_path and Path(lib_path).exists():
        pcs = tuple(sorted({s["pc"] for s in raw["sites"]}))
        lines = _lines(str(lib_path), pcs, Path(lib_path).stat().st_mtime, filename or "kernel.cu")
    per_line: dict[tuple, dict] = {}
    for s in raw["sites"]:
        kernel = launches[s["launch"]]["kernel"] if s["launch"] < len(launches) else "?"
        file, line = lines.get(s["pc"], (filename or "?", 0))
        key = (s["launch"], kernel, file, line, s["space"], s["op"], s["buffer"])
        e = per_line.setdefault(
            key,
            {
                "kernel": kernel,
                "file": file,
                "line": line,
                "space": s["space"],
                "op": s["op"],
                "buffer": s["buffer"],
                "requests": 0.0,
                "units": 0.0,
                "ideal": 0.0,
                "bytes": 0.0,
                "lanes": 0.0,
                "requests_as_written": 0.0,
                "units_as_written": 0.0,
                "one_sector": 0.0,
                "launcher_index": s["launch"],
            },
        )
        for k in ("requests", "units", "ideal", "bytes", "lanes", "requests_as_written", "units_as_written"):
            e[k] += s[k]
        e["one_sector"] += s.get("one_sector", 0.0)  # (raw counts from before it was counted have none)
    rows = []
    for e in sorted(
        per_line.values(), key=lambda e: (e["launcher_index"], e["kernel"], e["line"], e["space"], e["op"])
    ):
        row = {
            "kernel": e["kernel"],
            "launch": e["launcher_index"],
            "file": e["file"],
            "line": e["line"],
            "space": e["space"],
            "op": e["op"],
            "buffer": e["buffer"],
            "requests": _round(e["requests"]),
            "bytes": _round(e["bytes"]),
        }
        if e["space"] == "global":
            row["sectors"] = _round(e["units"])
            row["ideal_sectors"] = _round(e["ideal"])  # the same bytes, coalesced
            row["one_sector_requests"] = _round(e["one_sector"])  # of them one sector, ideal (broadcasts)
        else:
            row["wavefronts"] = _round(e["units"])
            row["conflicts"] = _round(e["units"] - e["ideal"])
            row["requests_as_written"] = _round(e["requests_as_written"])
            row["wavefronts_as_written"] = _round(e["units_as_written"])
        rows.append(row)
    metrics = metrics_of(rows)
    sampled = "; ".join(dict.fromkeys(l["sample"] for l in launches if l["sample"]))
    prof = Profile(
        exercise,
        shape,
        sampled,
        metrics,
        {},
        None,
        rows,
        [{k: l[k] for k in ("kernel", "grid", "block", "smem", "blocks_total", "blocks_recorded")} for l in launches],
    )
    prof.derived = _derived(exercise, shape, rows, metrics, launches)
    prof.unrepresentative = _unrepresentative(rows, launches)
    if "trace" in raw:
        prof.trace = _trace(raw, lines, launches)
    return prof


SAMPLE_SLACK = 2.0  # a sample whose loads, scaled to the grid, are off by more than this does not stand for it


def _unrepresentative(rows: list[dict], launches: list[dict]) -> list[str]:
    """The sampled launches whose recorded blocks loaded, scaled to the grid, much less or more than every block
    did (counted without the sample's detail): one block doing all of the work where the sample does not look
    (or where it does). Their figures say nothing of the kernel; counted over every block they do."""
    out = []
    for i, l in enumerate(launches):
        exact = l.get("loads_all", 0.0)
        if not l["sample"] or exact <= 0:
            continue
        est = sum(r["bytes"] for r in rows if r["launch"] == i and r["space"] == "global" and r["op"] == "ld")
        if not exact / SAMPLE_SLACK <= est <= exact * SAMPLE_SLACK:
            out.append(
                f"kernel {l['kernel']}: its {l['blocks_recorded']} sampled blocks loaded {est:.3g} bytes scaled to "
                f"the grid; its {l['blocks_total']} blocks loaded {exact:.3g}"
            )
    return out


def metrics_of(rows: list[dict]) -> dict[str, float]:
    """Nsight Compute's counts, summed over per-line rows (all of a profile's, or one launch's)."""
    metrics = {}
    for (space, op), (req, units, conf) in NCU.items():
        sel = [r for r in rows if r["space"] == space and r["op"] == op]
        metrics[req] = _round(sum(r["requests"] for r in sel))
        metrics[units] = _round(sum(r["sectors" if space == "global" else "wavefronts"] for r in sel))
        if conf:
            metrics[conf] = _round(sum(r["conflicts"] for r in sel))
    return metrics


def is_scratch(buffer: str) -> bool:
    """A global buffer of the counts that is not one of the launcher's: cudaMalloc'd or __device__ memory."""
    return buffer == SCRATCH or buffer.startswith(SCRATCH + " (")


def _relu_roles(rows: list[dict], elems: float) -> dict:
    """Per role (forward, backward): global sector bytes read and written per element, over every kernel of the
    role (a tiny second kernel must not stand for the launcher's main one)."""
    kernels: dict[str, list] = {}
    for r in rows:
        kernels.setdefault(r["kernel"], []).append(r)
    sums: dict[str, list] = {}
    for krows in kernels.values():
        rd = 32.0 * sum(r.get("sectors", 0.0) for r in krows if r["space"] == "global" and r["op"] == "ld")
        wr = 32.0 * sum(r.get("sectors", 0.0) for r in krows if r["space"] == "global" and r["op"] == "st")
        bufs = {r["buffer"] for r in krows if r["space"] == "global"}
        role = "backward" if "dX" in bufs or ("mask" in bufs and "dY" in bufs) else "forward"
        acc = sums.setdefault(role, [0.0, 0.0])
        acc[0] += rd
        acc[1] += wr
    d = {}
    for role, (rd, wr) in sums.items():
        d[f"{role}_bytes_read_per_element"] = rd / elems if elems else 0.0
        d[f"{role}_bytes_written_per_element"] = wr / elems if elems else 0.0
    return d


def _derived(exercise: str, shape, rows: list[dict], m: dict, launches: list[dict]) -> dict:
    d: dict[str, float] = {}

    def ratio(a, b):
        return a / b if b else 0.0

    g_ld = (m[NCU["global", "ld"][0]], m[NCU["global", "ld"][1]])
    g_st = (m[NCU["global", "st"][0]], m[NCU["global", "st"][1]])
    s_ld, s_st = NCU["shared", "ld"], NCU["shared", "st"]
    d["sectors_per_request_ld"] = ratio(g_ld[1], g_ld[0])
    d["sectors_per_request_st"] = ratio(g_st[1], g_st[0])
    # Loads of one sector that is all they need (a warp broadcast, or lanes within one 32-byte sector) are ideal by
    # any count: left out, so that they cannot dilute the figure (24 redundant broadcasts per step of k pulled an
    # uncoalesced kernel under the naive bound); a kernel with no other loads keeps them (its figure is then 1).
    ideal_ld = sum(r["ideal_sectors"] for r in rows if r["space"] == "global" and r["op"] == "ld")
    one = sum(r.get("one_sector_requests", 0.0) for r in rows if r["space"] == "global" and r["op"] == "ld")
    if ideal_ld - one > 0:
        d["sectors_over_ideal_ld"] = ratio(g_ld[1] - one, ideal_ld - one)
    else:
        d["sectors_over_ideal_ld"] = ratio(g_ld[1], ideal_ld)
    s_req = m[s_ld[0]] + m[s_st[0]]
    d["wavefronts_per_shared_request"] = ratio(m[s_ld[1]] + m[s_st[1]], s_req)
    d["wavefronts_per_shared_load"] = ratio(m[s_ld[1]], m[s_ld[0]])
    d["bank_conflicts_per_shared_request"] = ratio(m[s_ld[2]] + m[s_st[2]], s_req)
    d["global_bytes"] = 32.0 * (g_ld[1] + g_st[1])
    lane_bytes = lambda space, op, buf=None: sum(
        r["bytes"] for r in rows if r["space"] == space and r["op"] == op and (buf is None or r["buffer"] == buf)
    )  # noqa: E731
    sector_bytes = lambda op, buf: (
        32.0
        * sum(
            r.get("sectors", 0.0)
            for r in rows
            if r["space"] == "global"  # noqa: E731
            and r["op"] == op
            and r["buffer"] == buf
        )
    )
    if len(shape) == 3:
        mm, nn, kk = shape
        fma = float(mm * nn * kk)
        d["flops"] = 2.0 * fma
        d["bytes_per_flop"] = ratio(d["global_bytes"], d["flops"])
        d["global_loads_per_fma"] = ratio(lane_bytes("global", "ld") / 4.0, fma)
        d["shared_loads_per_fma"] = ratio(lane_bytes("shared", "ld") / 4.0, fma)
        d["operand_loads_per_fma"] = d["global_loads_per_fma"] + d["shared_loads_per_fma"]
        for buf in ("A", "B"):
            d[f"{buf}_bytes_per_flop"] = ratio(sector_bytes("ld", buf), d["flops"])
        if exercises.kind(exercise).epilogue:
            elems = float(mm * nn)
            d["C_bytes_per_element"] = ratio(sector_bytes("ld", "C") + sector_bytes("st", "C"), elems)
            # lane-level: how often each element of C is stored / loaded (1 and 0 when fused), an intermediate in
            # scratch counted as C (stored there, read back by a second pass: unfused)
            scratch = lambda op: sum(  # noqa: E731
                r["bytes"] for r in rows if r["space"] == "global" and r["op"] == op and is_scratch(r["buffer"])
            )
            d["scratch_writes_per_element"] = ratio(scratch("st") / 4.0, elems)
            d["scratch_reads_per_element"] = ratio(scratch("ld") / 4.0, elems)
            d["C_writes_per_element"] = (
                ratio(lane_bytes("global", "st", "C") / 4.0, elems) + d["scratch_writes_per_element"]
            )
            d["C_reads_per_element"] = (
                ratio(lane_bytes("global", "ld", "C") / 4.0, elems) + d["scratch_reads_per_element"]
            )
            d["mask_bytes_per_element"] = ratio(sector_bytes("st", "mask") + sector_bytes("ld", "mask"), elems)
            d["bytes_written_per_element"] = ratio(32.0 * g_st[1], elems)
    else:
        mm, nn = shape
        elems = float(mm * nn)
        d |= _relu_roles(rows, elems)
        d["bytes_read_per_element"] = ratio(32.0 * g_ld[1], elems)
        d["bytes_written_per_element"] = ratio(32.0 * g_st[1], elems)
    return {k: _round(v) if k in ("flops", "global_bytes") else v for k, v in d.items()}


def _trace(raw: dict, lines: dict, launches: list[dict]) -> list[WarpAccess]:
    t = raw["trace"]
    sites = {(s["launch"], s["site"]): s for s in raw["sites"]}
    site_pc = {}
    for s in raw["sites"]:
        site_pc[s["site"]] = s
    out: list[WarpAccess] = []
    if not len(t):
        return out
    keys = np.stack([t["launch"], t["site"], t["bx"], t["by"], t["bz"], t["warp"], t["occurrence"]], axis=1)
    order = np.lexsort(keys.T[::-1])
    keys_sorted = keys[order]
    breaks = np.flatnonzero(np.any(np.diff(keys_sorted, axis=0) != 0, axis=1)) + 1
    # plain lists once: indexing numpy records one by one took seconds for a block's trace
    lane, offset, size = t["lane"][order].tolist(), t["offset"][order].tolist(), t["size"][order].tolist()
    merged = t["merged"][order].tolist()
    rows = keys_sorted.tolist()
    starts = [0] + breaks.tolist()
    for lo, hi in zip(starts, starts[1:] + [len(order)]):
        li, site, bx, by, bz, warp, occurrence = rows[lo]
        launch = launches[li]
        s = sites.get((li, site)) or site_pc.get(site)
        bdim = launch["block"]
        lanes = []
        for i in range(lo, hi):
            tid = warp * 32 + lane[i]
            lanes.append(
                (lane[i], (tid % bdim[0], (tid // bdim[0]) % bdim[1], tid // (bdim[0] * bdim[1])), offset[i], size[i])
            )
        out.append(
            WarpAccess(
                launch["kernel"],
                lines.get(s["pc"], ("?", 0))[1] if s else 0,
                (bx, by, bz),
                warp,
                s["space"] if s else "?",
                s["op"] if s else "?",
                s["buffer"] if s else "?",
                occurrence,
                lanes,
                merged[lo],
            )
        )
    return out


# ----------------------------------------------------------------------------- running
def default_shape(exercise: str) -> tuple:
    return exercises.get(exercise).profile_shape


def run(
    exercise: str,
    source_or_path,
    shape=None,
    *,
    blocks="sample",
    seed: int | None = None,
    trace: bool = False,
    resources: bool = True,
    budget: int = DEFAULT_BUDGET,
    check: bool = True,
) -> Profile:
    """Profile a kernel file on the CPU backend (see the module docstring).

    shape: (M, N, K) or (M, N); None: the exercise's profile shape. blocks: "sample" (about
    `budget` blocks per launch from `seed`, edge blocks included, counts scaled), "all", or a list
    of (bx, by, bz). resources: add registers/spills/shared memory from nvcc -Xptxas -v (if nvcc).
    The kernel's outputs are checked against float64 first: a wrong kernel's counts mean nothing, so
    it raises KernelError; check=False profiles it anyway and says what is wrong in `wrong` (the
    widgets draw a wrong kernel's accesses, to debug it).
    """
    from grader.run import binding, worker
    from grader.spec import checks
    from grader.judge import submissions
    from grader.errors import KernelError

    ex = exercises.get(exercise)
    shape = tuple(shape) if shape is not None else ex.profile_shape
    if len(shape) != len(ex.profile_shape):
        raise ValueError(f"{exercise} takes a shape of {len(ex.profile_shape)} numbers, not {shape}")
    source, filename = submissions.read(source_or_path, exercise)
    mod = binding.load(source, exercise, backend="cpu", filename=filename)
    gen = torch.Generator().manual_seed(seed if seed is not None else 0)
    case = ex.kind.make_case(shape, gen)
    mod.configure_cpu(schedule_seed=0)
    configure(mod, blocks, seed, trace, budget)
    try:
        outs = worker.run_case(mod, shape, case.inputs)
    finally:
        raw = take(mod, trace)
    dims = "x".join(map(str, shape))
    wrong = "\n".join(p.describe(shape) for p in (checks.compare(case, n, outs[n]) for n in case.expected) if p)
    if wrong and check:
        raise KernelError(f"the kernel is wrong at {dims}, so its profile means nothing:\n{wrong}")
    prof = from_raw(exercise, shape, raw, str(mod.build.path), filename)
    prof.wrong = wrong
    if resources:
        prof.resources = _resources(source, exercise, filename)
    return prof


def _resources(source: str, exercise: str, filename: str) -> list | None:
    from grader.compile import toolchain
    from grader.errors import GraderError

    if not toolchain.find_nvcc():
        return None
    try:
        arch = toolchain.gpu_arch() if torch.cuda.is_available() else "sm_90"
        return [asdict(r) for r in toolchain.resource_usage(source, exercise=exercise, arch=arch, filename=filename)]
    except GraderError:
        return None


# ----------------------------------------------------------------------------- verdicts
EVIDENCE_GPU = "timed on GPU"
EVIDENCE_CPU = "access counts (CPU, no timing)"
EVIDENCE_NONE = "correctness only"
EVIDENCE_HOST = "timed on CPU (host code)"  # cpu_blocked: plain C++, timed on any machine


def grading_request(exercise: str, cases: list[int], seed: int, blocks: str = "sample") -> dict:
    """What the worker needs to count the first run of each of these grading cases (grader/run/worker.py):
    the blocks are sampled from `seed`, which the parent draws secretly, edge blocks always included
    (blocks="all": every block)."""
    return {"cases": list(cases), "seed": seed & ((1 << 63) - 1), "budget": DEFAULT_BUDGET, "blocks": blocks}


def judge(
    exercise: str, shape, raw: dict | None, lib_path=None, filename: str | None = None, unaligned: bool = False
) -> tuple[Profile | None, list[str]]:
    """Parent side: the profile of a grading run that was checked, and the broken bounds (unaligned: at
    grader.spec.shapes.profile_shapes' unaligned shape, with each bound's slack there)."""
    if not raw:
        return None, []
    prof = from_raw(exercise, shape, raw, str(lib_path) if lib_path else None, filename)
    return prof, check_bounds(exercise, prof, unaligned)


# grade.py counts every block again when a sampled profile's message holds this, so it says both cases
NO_GLOBAL_LOADS = (
    "the access profile counted no global loads by any kernel (or, in the blocks it sampled, too few or too many "
    "to stand for the others): did a kernel do the work?"
)


def _no_data(figure: str, prof: Profile) -> str | None:
    """Why `figure` has nothing to judge (a 0/0, or no kernel that it is about), None when it has data."""
    m = prof.metrics
    req = lambda space, op: m.get(NCU[space, op][0], 0.0)  # noqa: E731
    if figure not in prof.derived:
        role = figure.split("_")[0]
        return f"the access profile counted no global accesses by a relu_{role} kernel, so {figure} has no data"
    if figure in ("sectors_per_request_st",) and not req("global", "st"):
        return f"the access profile counted no global stores, so {figure} has no data"
    if figure in ("wavefronts_per_shared_request", "bank_conflicts_per_shared_request") and not (
        req("shared", "ld") + req("shared", "st")
    ):
        return f"the access profile counted no shared-memory accesses, so {figure} has no data"
    if figure == "wavefronts_per_shared_load" and not req("shared", "ld"):
        return f"the access profile counted no shared-memory loads, so {figure} has no data"
    return None


def check_bounds(exercise: str, prof: Profile, unaligned: bool = False) -> list[str]:
    """Messages for every access bound of the exercise that the profile breaks ([] when none). A bound
    on a figure without data (no kernel launched, no global loads, a 0/0) is broken, never met: an
    upper bound on 0 would pass a launcher that does the work on the host. unaligned: the profile is
    at a shape with no dimension aligned, where each bound is loosened by its `unaligned` factor (or,
    None, not judged)."""
    bounds = exercises.get(exercise).access
    if unaligned:
        bounds = tuple(b.at_unaligned() for b in bounds if b.unaligned is not None)
    if bounds and (not prof.metrics.get(NCU["global", "ld"][0]) or (prof.sampled and prof.unrepresentative)):
        return [NO_GLOBAL_LOADS]
    problems = []
    for b in bounds:
        why = _no_data(b.figure, prof)
        if why:
            problems.append(f"{why}: {b.fix}")
            continue
        value = prof.derived[b.figure]
        if (b.most is not None and value > b.most) or (b.least is not None and value < b.least):
            limit = f"at most {b.most:g}" if b.most is not None else f"at least {b.least:g}"
            problems.append(
                f"{b.says.format_map(prof.derived | {'value': value})} ({b.figure} = {value:.3g}; the exercise needs {limit}): {b.fix}"
            )
    return problems


def summary(prof: Profile) -> str:
    """One line: the figures an exercise's lesson is about."""
    d = prof.derived
    parts = [f"{d.get('sectors_per_request_ld', 0):.2g} sectors/global load"]
    if d.get("sectors_over_ideal_ld"):
        parts[0] += f" ({d['sectors_over_ideal_ld']:.2g}x the coalesced ideal)"
    if "bytes_per_flop" in d:
        parts.append(f"{d['bytes_per_flop']:.3g} global B/FLOP")
        parts.append(f"{d['shared_loads_per_fma']:.3g} shared loads/FMA")
    if d.get("wavefronts_per_shared_request"):
        parts.append(f"{d['wavefronts_per_shared_request']:.3g} wavefronts/shared request")
    for k in (
        "forward_bytes_read_per_element",
        "forward_bytes_written_per_element",
        "backward_bytes_read_per_element",
        "backward_bytes_written_per_element",
        "C_writes_per_element",
        "C_reads_per_element",
    ):
        if k in d:
            parts.append(f"{k.replace('_', ' ')} {d[k]:.3g}")
    return ", ".join(parts)


def text(prof: Profile) -> str:
    """The profile as a terminal table."""
    shape = "x".join(map(str, prof.shape))
    out = [f"access profile: {prof.exercise} at {shape} (CPU backend, counted like Nsight Compute)"]
    if prof.sampled:
        out.append(f"sampled: {prof.sampled}")
    for l in prof.launches:
        out.append(
            f"kernel {l['kernel']}: grid {tuple(l['grid'])}, block {tuple(l['block'])}, "
            f"{l['blocks_recorded']} of {l['blocks_total']} blocks recorded"
        )
    out.append("")
    out.append(
        f"{'line':>10} {'space':6} {'op':2} {'buffer':>10} {'requests':>12} {'sectors/wavefr':>14} "
        f"{'per req':>7} {'conflicts':>10}"
    )
    for r in prof.per_line:
        units = r.get("sectors", r.get("wavefronts", 0.0))
        out.append(
            f"{r['file'] + ':' + str(r['line']):>10} {r['space']:6} {r['op']:2} {r['buffer'][:10]:>10} "
            f"{r['requests']:>12.0f} {units:>14.0f} {units / r['requests'] if r['requests'] else 0:>7.2f} "
            f"{r.get('conflicts', 0):>10.0f}"
        )
    out.append("")
    for k, v in prof.metrics.items():
        out.append(f"{k:60} {v:>16,.0f}")
    out.append("")
    for k, v in prof.derived.items():
        out.append(f"{k:40} {v:>16.4g}")
    if prof.resources:
        out.append("")
        for r in prof.resources:
            out.append(f"nvcc -Xptxas -v: {r}")
    return "\n".join(out)


def to_json(prof: Profile) -> str:
    return json.dumps(prof.as_dict(), indent=1)


__all__ = [
    "run",
    "configure",
    "take",
    "from_raw",
    "metrics_of",
    "check_bounds",
    "summary",
    "text",
    "Profile",
    "WarpAccess",
    "GEMM_PROFILE_SHAPE",
    "RELU_PROFILE_SHAPE",
]
