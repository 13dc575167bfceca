"""Host exercises: plain C++ that runs on the CPU itself (cpu_blocked), built and timed here.

    lib = host.load(SOURCE, "cpu_blocked")          # g++ -O3 -march=native, cached by content
    C = lib(A, B)                                    # numpy float32 in, numpy float32 out
    host.time_calls({"naive": f, "blocked": g})      # medians of repeats, round-robin, this process

Correctness is graded like every exercise, on the CPU backend (bounds checks, guard zones, NaN
poison; its instrumented build is far too slow to time). The speed verdict times this module's
optimised build of the submission against its baseline (kernels/00_cpu_naive.cu), in the worker
child, on inputs redrawn before every round and checked after it (grader.run.worker: FreshRounds): the same
rules as the GPU timing, with a monotonic clock instead of CUDA events. Timed on any machine.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import secrets
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from grader.spec import exercises
from grader.compile import linkcheck, toolchain
from grader.errors import CannotGrade, CompileError
from grader.compile.procs import run_all

GXX = os.environ.get("CXX", "g++")
# -march=native: the learner's own CPU, vector units included; the baseline gets the same flags.
# -Wl,-z,defs: every symbol must resolve at link time against the C/C++ runtime, so a submission
# cannot call a BLAS that happens to be loaded in the grader's process (torch's, numpy's).
HOST_FLAGS = ("-O3", "-march=native", "-std=c++17", "-fPIC", "-shared", "-fno-strict-aliasing", "-Wl,-z,defs")
_LINK_ONLY = ("-shared", "-Wl,-z,defs")


def cpu_name() -> str:
    """The CPU a build is for, and that the worker reports host timing on (notebook 00 names it too)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def build(source: str, exercise: str, filename: str = "kernel.cu", timeout: float | None = None) -> Path:
    """Compile a host exercise's file with g++ (the contract's declarations first); the cached .so."""
    if not shutil.which(GXX):
        raise CannotGrade(f"{GXX} not found: the CPU exercises need a C++ compiler (g++).")
    timeout = timeout or toolchain.COMPILE_TIMEOUT_S
    # -march=native code runs only on this kind of CPU: a cache shared between machines keys on it
    ident = (
        f"host {GXX} {' '.join(HOST_FLAGS)} {_gxx_version()} {cpu_name()} {os.uname().machine} "
        f"linkcheck {linkcheck.VERSION}"
    )
    key = toolchain._key("host", ident, exercise, filename, source)
    out = toolchain.cache_dir() / "host" / key / "kernel.so"
    if out.exists():
        return out
    out.parent.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=out.parent.parent))
    try:
        # .cpp: g++ reads the file as C++ whatever the learner called it
        (work / "kernel.cpp").write_text(toolchain._with_prelude(source, exercise, filename))
        # compile, check what the object calls (grader.compile.linkcheck: this build is timed in the worker, and
        # `#ifndef __CUDACC__` could hide a call from the checked CPU-backend build), then link
        deadline = time.monotonic() + timeout

        def run(cmd: list[str]) -> None:
            results = run_all([cmd], work, max(0.0, deadline - time.monotonic()))
            if results is None:
                raise CompileError(f"g++ did not finish within {timeout:.0f} s")
            rc, log = results[0]
            if rc != 0:
                raise CompileError(toolchain.diagnostics(log, filename, work, exercise), log)

        run([GXX, *[f for f in HOST_FLAGS if f not in _LINK_ONLY], "-c", "-o", "kernel.o", "kernel.cpp"])
        linkcheck.enforce(work / "kernel.o", "cpu", filename)
        run([GXX, *_LINK_ONLY, "-o", "kernel.so", "kernel.o"])
        try:
            work.rename(out.parent)  # atomic publish; a concurrent build may have won
        except OSError:
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return out


@functools.lru_cache(maxsize=None)
def _gxx_version() -> str:
    results = run_all([[GXX, "--version"]], None, 30)
    return results[0][1].split("\n")[0] if results else "?"


class HostGemm:
    """A loaded host GEMM launcher: call it with numpy arrays, or `.raw(A, B, C)` on tensors/arrays."""

    def __init__(self, path: Path, exercise: str):
        (launcher,) = exercises.launchers(exercise)
        self.path, self.exercise, self.launcher = path, exercise, launcher
        self._fn = getattr(ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL), launcher.name)
        self._fn.argtypes, self._fn.restype = launcher.argtypes, None

    def raw(self, A, B, C) -> None:
        """C = A B in place; A, B, C: contiguous float32 CPU tensors or arrays of matching shapes."""
        ptr = (lambda t: t.data_ptr()) if hasattr(A, "data_ptr") else (lambda a: a.ctypes.data)
        (m, k), n = A.shape, B.shape[1]
        self._fn(ptr(A), ptr(B), ptr(C), m, n, k)

    def __call__(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        A = np.ascontiguousarray(A, dtype=np.float32)
        B = np.ascontiguousarray(B, dtype=np.float32)
        if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
            raise ValueError(f"{self.launcher.name}: A is M x K and B is K x N; got {A.shape} and {B.shape}")
        C = np.empty((A.shape[0], B.shape[1]), dtype=np.float32)
        self.raw(A, B, C)
        return C


def load(source_or_path, exercise: str | None = None) -> HostGemm:
    """Build (cached) and load a host exercise's file, optimised, for the notebook's own timing
    (exercise: default the course's host GEMM)."""
    from grader.spec import exercises, kinds
    from grader.run.binding import read_source

    exercise = exercise or exercises.of_kind(kinds.HOST_GEMM).name

    source, filename = read_source(source_or_path)
    return HostGemm(build(source, exercise, filename), exercise)


def time_calls(
    fns: dict[str, Callable[[], object]],
    *,
    min_runs: int = 3,
    max_runs: int = 25,
    max_seconds: float = 6.0,
    before_round: Callable[[], object] | None = None,
    after_round: Callable[[], bool] | None = None,
) -> dict:
    """Median wall-clock time of each function in ms, round-robin in this process (drift such as a
    neighbour's load or the CPU's clock hits every function alike), after one warm-up call each.
    before_round/after_round run outside the timed calls (the grader redraws inputs and checks
    outputs there); after_round returning True stops. -> {name: grader.run.timing.Timing}"""
    from grader.run.timing import _summary

    for fn in fns.values():
        fn()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    t0 = time.perf_counter()
    while True:
        if before_round:
            before_round()
        for name, fn in fns.items():
            if hasattr(fn, "timed_round"):  # runs in another process, which times itself (grader.run.runner)
                samples[name].append(fn.timed_round("", 0)[0])
                continue
            s = time.perf_counter()
            fn()
            samples[name].append((time.perf_counter() - s) * 1e3)
        n = len(samples[name])
        if after_round and after_round():
            break
        if n >= max_runs or (n >= min_runs and time.perf_counter() - t0 > max_seconds):
            break
    return {k: _summary(v, v) for k, v in samples.items()}


def timing_request(ex, source: str, filename: str, timeout: float | None = None) -> dict:
    """What the worker needs to time a host exercise: optimised builds of the submission and of its
    baseline, the shape and a fresh seed. Raises CompileError when the submission does not build."""
    lib = build(source, ex.name, filename, timeout)
    base = build(ex.baseline_path.read_text(), ex.baseline_exercise, ex.baseline, timeout)
    return {
        "host": True,
        "shape": list(ex.bench_shape),
        "seed": secrets.randbits(62),
        "lib": str(lib),
        "baseline_lib": str(base),
    }


def median_ms(fn: Callable[[], object], repeat: int = 5) -> float:
    """Median of `repeat` timed calls after one warm-up (the notebooks' quick measurements)."""
    fn()
    ts = []
    for _ in range(repeat):
        s = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - s) * 1e3)
    return statistics.median(ts)
