"""The CPU backend's access counters (grader/compile/cpu/profile.cpp), driven from Python: what the worker
switches on for the counted run and reads back as plain data. grader.judge.profile turns that data into
figures and judges them against the exercise's bounds (here, not there: the worker runs below the
verdict and must not import it)."""

from __future__ import annotations

import ctypes
import functools
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

from grader.spec import shapes

DEFAULT_BUDGET = 8  # blocks recorded per launch when sampling (edge classes included)

MODES = {"off": 0, "sample": 1, "all": 2, "list": 3}
_TRACE_DTYPE = np.dtype(
    [
        ("launch", "<i4"),
        ("site", "<i4"),
        ("bx", "<i4"),
        ("by", "<i4"),
        ("bz", "<i4"),
        ("warp", "<i4"),
        ("occurrence", "<i4"),
        ("lane", "<i4"),
        ("offset", "<u8"),
        ("size", "<u4"),
        ("merged", "<u4"),
    ]
)


def _api(lib):
    lib.cuda_emu_profile_configure.argtypes = [ctypes.c_int, ctypes.c_ulonglong, ctypes.c_int, ctypes.c_int]
    lib.cuda_emu_profile_blocks.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint)]
    lib.cuda_emu_profile_take.restype = ctypes.c_char_p
    lib.cuda_emu_profile_trace.restype = ctypes.c_void_p
    lib.cuda_emu_profile_trace.argtypes = [ctypes.POINTER(ctypes.c_ulonglong)]
    lib.cuda_emu_profile_sites.argtypes = [
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_ulonglong),
        ctypes.POINTER(ctypes.c_ulonglong),
    ]
    return lib


_HOOK_CALL = re.compile(
    r"^\s*([0-9a-f]+):\s+call\s+[0-9a-f]+\s+<(__tsan_(?:unaligned_)?(?:read|write)(?:\d+|_range))(?:@plt)?>"
)


def _tool_run(args: list[str], path: str, timeout: float = 60):
    """Run a binutils tool on the library; the worker names it /proc/self/fd/N (an inherited descriptor)."""
    m = re.match(r"/proc/self/fd/(\d+)$", path)
    fds = (int(m.group(1)),) if m else ()
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, pass_fds=fds).stdout


def site_map(lib_path: str) -> dict[int, int]:
    """Code addresses of the library's access-hook calls (return addresses, offsets) that share a source
    location with an earlier one -> that one: g++ copies one access into several code paths (jump
    threading), and lanes that diverge there execute one source-level access, one instruction on the GPU
    (grader/compile/cpu/profile.cpp counts each location as one site). The location is the inline chain of
    function, file and line (addr2line -f -i) and the hook (size, read/write). {} without binutils."""
    objdump, addr2line = shutil.which("objdump"), shutil.which("addr2line")
    if not objdump or not addr2line:
        return {}
    try:
        st = Path(lib_path).stat()
    except OSError:
        return {}
    return _site_map(lib_path, objdump, addr2line, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))


@functools.lru_cache(maxsize=16)
def _site_map(lib_path: str, objdump: str, addr2line: str, _stat: tuple) -> dict[int, int]:
    try:
        dis = _tool_run([objdump, "-d", "--no-show-raw-insn", lib_path], lib_path).splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    calls = []  # (return address, hook)
    for i, text in enumerate(dis):
        m = _HOOK_CALL.match(text)
        if m and i + 1 < len(dis):
            nxt = re.match(r"^\s*([0-9a-f]+):", dis[i + 1])
            if nxt:
                calls.append((int(nxt.group(1), 16), m.group(2)))
    if len(calls) < 2:
        return {}
    try:
        out = _tool_run(
            [addr2line, "-a", "-f", "-i", "-e", lib_path, *[hex(ret - 1) for ret, _ in calls]], lib_path
        ).splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    chains: list[list[str]] = []
    for text in out:
        if re.match(r"^0x[0-9a-f]+$", text):
            chains.append([])
        elif chains:
            chains[-1].append(re.sub(r" \(discriminator \d+\)$", "", text.strip()))
    if len(chains) != len(calls):
        return {}
    first: dict[tuple, int] = {}
    found = {}
    for (ret, hook), chain in zip(calls, chains):
        if not chain or any(c.startswith("??") for c in chain):
            continue  # no line information: its own site
        key = (hook, *chain)
        canon = first.setdefault(key, ret)
        if canon != ret:
            found[ret] = canon
    return found


def _set_sites(lib, lib_path: str | None) -> None:
    found = site_map(lib_path) if lib_path else {}
    pcs = (ctypes.c_ulonglong * max(1, len(found)))(*found.keys())
    canon = (ctypes.c_ulonglong * max(1, len(found)))(*found.values())
    lib.cuda_emu_profile_sites(len(found), pcs, canon)


def configure(mod, blocks="sample", seed: int | None = None, trace: bool = False, budget: int = DEFAULT_BUDGET) -> None:
    """Record the next launches of `mod` (a CPU-backend KernelModule). blocks: "sample", "all",
    "off" or a list of (bx, by, bz)."""
    lib = _api(mod._lib)
    if blocks != "off":
        _set_sites(lib, str(mod.build.path))
    if isinstance(blocks, str):
        if blocks not in ("sample", "all", "off"):
            raise ValueError(f"blocks must be 'sample', 'all', 'off' or a list of (bx, by, bz), not {blocks!r}")
        mode = MODES[blocks]
    else:
        flat = [int(v) for b in blocks for v in tuple(b) + (0,) * (3 - len(tuple(b)))]
        arr = (ctypes.c_uint * len(flat))(*flat)
        lib.cuda_emu_profile_blocks(len(flat) // 3, arr)
        mode = MODES["list"]
    lib.cuda_emu_profile_configure(mode, (seed if seed is not None else 1) & ((1 << 64) - 1), budget, int(trace))


def take(mod, trace: bool = False) -> dict:
    """What the library counted since `configure`, as plain data (the worker sends it as JSON)."""
    lib = _api(mod._lib)
    text = lib.cuda_emu_profile_take().decode(errors="replace")
    launches, sites = [], []
    for line in text.splitlines():
        f = line.split("\t")
        if f[0] == "L":
            launches.append(
                {
                    "grid": [int(x) for x in f[1].split(",")],
                    "block": [int(x) for x in f[2].split(",")],
                    "smem": int(f[3]),
                    "blocks_total": int(f[4]),
                    "blocks_recorded": int(f[5]),
                    "sample": f[6],
                    "kernel": f[7],
                    "loads_all": float(f[8]) if len(f) > 8 else 0.0,
                }
            )
        elif f[0] == "S":
            sites.append(
                {
                    "launch": int(f[1]),
                    "site": int(f[2]),
                    "pc": int(f[3], 16),
                    "space": f[4],
                    "op": f[5],
                    "buffer": f[6],
                    "requests": float(f[7]),
                    "units": float(f[8]),
                    "ideal": float(f[9]),
                    "lanes": float(f[10]),
                    "bytes": float(f[11]),
                    "requests_as_written": float(f[12]),
                    "units_as_written": float(f[13]),
                    "one_sector": float(f[14]) if len(f) > 14 else 0.0,
                }
            )
    raw = {"launches": launches, "sites": sites}
    if trace:
        n = ctypes.c_ulonglong(0)
        ptr = lib.cuda_emu_profile_trace(ctypes.byref(n))
        buf = ctypes.string_at(ptr, n.value * _TRACE_DTYPE.itemsize) if n.value else b""
        raw["trace"] = np.frombuffer(buf, dtype=_TRACE_DTYPE).copy()
    lib.cuda_emu_profile_configure(0, 1, DEFAULT_BUDGET, 0)  # off again, memory released
    return raw


# ----------------------------------------------------------------------------- the worker's side
def _counted(spec: dict | None, case: int) -> bool:
    return bool(spec) and case in spec.get("cases", ())


def schedules(req: dict, case: int, shape) -> list[int]:
    """Worker side: the thread schedules a case runs under. A profiled case runs once, in order,
    with the race detector on (a second, shuffled run of a big shape would double its cost; the
    other cases' shuffled runs look for races), and so does a shape past the launch limits
    (grader.spec.shapes.past_limits: it tests the launch and the indexing; a shuffled run of the tall
    one, two million threads, was a fifth of a CPU grade)."""
    all_ = req.get("schedules", [0])
    once = _counted(req.get("profile"), case) or shapes.past_limits(tuple(shape))
    return all_[:1] if once else all_


def counting(req: dict, case: int, schedule: int, mod) -> tuple[bool, bool]:
    """Worker side: start recording this run; (recording, judged). In a counted grade (a request with a "profile")
    the first run of every case records the same sample (the request's seed and budget), so that no case can be told
    from the counted ones by what its run costs (a launcher that timed a probe kernel ran its lesson's kernel only
    where the run was slower); what a run counted is judged only in the cases the request names. A case's later
    schedules are not recorded: a counted run is always a case's first (the same inputs again say as much).
    Every recording run must end with take() (which turns recording off), judged or not."""
    spec = req.get("profile")
    if not spec or mod.backend != "cpu" or schedule != req.get("schedules", [0])[0]:
        return False, False
    blocks = spec.get("blocks", "sample")
    configure(
        mod,
        blocks if blocks in ("sample", "all") else "sample",
        spec["seed"],
        budget=spec.get("budget", DEFAULT_BUDGET),
    )
    return True, _counted(spec, case)
