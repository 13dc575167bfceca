"""Build a kernel file into a shared library that runs on the CPU (g++, no torch headers).

The learner's file is rewritten (rewrite.py), put after cuda_emu.h and the contract's
declarations with `#line 1 "<filename>"`, and compiled with GCC's ThreadSanitizer
instrumentation (hooks in checks.cpp: the shared-memory race detector) and bounds /
alignment checks. The runtime compiles in parallel; the kernel file's own object is checked
against the allow-list of what a kernel file may call (grader/compile/linkcheck.py: libc, libm, the
instrumentation hooks and this runtime's entry points); then both are linked.
A sanitize build uses AddressSanitizer instead (and the ucontext fiber switch, since the
assembly switch trips ASan); load it in a process started with `sanitizer_env()`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from grader.compile import linkcheck
from grader.errors import CannotGrade, CompileError
from grader.compile.procs import run_all

from .rewrite import LaunchSyntaxError, UnsupportedConstruct, rewrite

HERE = Path(__file__).resolve().parent
GXX = os.environ.get("CXX", "g++")
_COMMON = [
    "-std=c++20",
    "-O2",
    "-fPIC",
    "-fno-strict-aliasing",
    "-g1",
    "-Wno-unknown-pragmas",
    "-fdiagnostics-plain-output",
    "-fmax-errors=10",
    # no fortified string functions (Ubuntu's g++ turns _FORTIFY_SOURCE on at -O2): their __memcpy_chk
    # & co. would go around the runtime's check of host code's copies (cuda_emu.h's memcpy)
    "-U_FORTIFY_SOURCE",
    "-D_FORTIFY_SOURCE=0",
    f"-I{HERE}",
]
# -fstack-clash-protection: a large local array probes its pages in order, so a thread that
# overflows its fiber stack faults in its guard page (reported as such) instead of writing
# into another thread's stack.
# -fno-optimize-sibling-calls: a call in tail position (`else atomicAdd(&C[i], s);` at a kernel's end)
# stays a call, so the callee's return address names the kernel's line, not the scheduler's.
_CHECKS = [
    "-fsanitize=bounds,alignment",
    "-fno-sanitize-recover=bounds,alignment",
    "-fstack-clash-protection",
    "-fno-optimize-sibling-calls",
]
# -ftrivial-auto-var-init=pattern (GCC 12+): a local read before it is written holds 0xFEFEFEFE (as a
# float -1.7e38), not the zero a fresh fiber stack would give: an uninitialised accumulator shows.
_PATTERN_INIT = "-ftrivial-auto-var-init=pattern"
_RACE = ["-fsanitize=thread", "-fno-threadsafe-statics", "--param=tsan-instrument-func-entry-exit=0"]
_ASAN = ["-fsanitize=address", "-fsanitize-recover=address", "-fno-omit-frame-pointer", "-g"]
_MAX_LINES = 40


class NotOnCpu(CannotGrade):
    """The kernel file uses a CUDA feature the CPU backend cannot run: it could not be graded
    here (exit 2), which says nothing against the kernel."""

    def __init__(self, filename: str, line: int | None, what: str):
        where = f"{filename}:{line}: " if line else f"{filename}: "
        super().__init__(
            f"could not grade on the CPU backend: {where}{what}. Grade this file on a GPU (--backend cuda)."
        )
        self.line = line


@functools.lru_cache(maxsize=1)
def _cuda_names() -> frozenset[str]:
    text = (HERE / "cuda_names.txt").read_text()
    return frozenset(w for w in text.split() if not w.startswith("#") and w.isidentifier())


# CUDA names the backend defines in its own headers (grader/compile/cpu): undeclared only where the file did not
# include that header, which nvcc would refuse too.
_OWN_HEADER_NAMES = frozenset({"__pipeline_memcpy_async", "__pipeline_commit", "__pipeline_wait_prior"})


def _unsupported_in_log(log: str, filename: str) -> NotOnCpu | None:
    """A g++ failure caused by a CUDA feature this backend lacks (an intrinsic or runtime call it
    does not define, a part of cooperative groups, a limit of its own headers), not by the
    learner: the first such error at the learner's file, as NotOnCpu."""
    base = re.escape(Path(filename.replace("\\", "/")).name)
    at = rf"(?:^|/){base}:(\d+):\d+:"
    names = _cuda_names()
    q = "['\u2018\u2019`]"  # g++ quotes with ' or, in a UTF-8 locale, with \u2018 \u2019
    for m in re.finditer(
        rf"{at} error: {q}([\w:]+){q} (?:was not declared in this scope|has not been declared"
        rf"|is not a member of {q}([\w:]+){q})",
        log,
        re.M,
    ):
        name, scope = m.group(2), m.group(3) or ""
        if name in _OWN_HEADER_NAMES:  # the backend has it, in the header the file did not include: a compile error
            continue
        if name in names or name.split("::")[-1] in names:
            return NotOnCpu(filename, int(m.group(1)), f"{name} is part of CUDA but not of the CPU backend")
        if scope and re.search(r"cooperative_groups|\bcg\b", scope + " " + name):
            return NotOnCpu(
                filename, int(m.group(1)), f"cooperative_groups::{name} is not supported by the CPU backend"
            )
    # a member or overload of cooperative groups the backend's header lacks (tiled_partition(block, n) ...)
    m = re.search(rf"{at} error: .*{q}[^\n]*cooperative_groups::[^\n]*$", log, re.M)
    if m:
        return NotOnCpu(
            filename,
            int(m.group(1)),
            "this use of cooperative groups is not supported by the CPU "
            "backend (it runs the thread block and tiled_partition<N> tiles of up to 32 threads: sync, "
            "shfl*, ballot, any/all, match_any and reduce)",
        )
    for m in re.finditer(r"error: static assertion failed: (.*(?:CPU backend).*)$", log, re.M):
        lines = re.findall(rf"{at}\s+required from here", log[: m.start()], re.M)
        return NotOnCpu(filename, int(lines[-1]) if lines else None, m.group(1).strip())
    return None


def _asm_switch() -> bool:
    return platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64")


@functools.lru_cache(maxsize=None)
def _gcc_major() -> int:
    try:
        out = subprocess.run([GXX, "-dumpversion"], capture_output=True, text=True).stdout.strip()
        return int(out.split(".")[0])
    except (OSError, ValueError):
        return 0


def _kernel_checks() -> list[str]:
    return _CHECKS + ([_PATTERN_INIT] if _gcc_major() >= 12 else [])


@functools.lru_cache(maxsize=None)
def toolchain_id() -> str:
    """Changes when g++ or any file of this backend changes (a build-cache key)."""
    h = hashlib.sha256()
    try:
        h.update(subprocess.run([GXX, "--version"], capture_output=True, text=True).stdout.encode())
    except OSError:
        h.update(b"no g++")
    for f in sorted(HERE.iterdir()):
        if f.suffix in (".h", ".cpp", ".S", ".py"):
            h.update(f.name.encode() + f.read_bytes())
    return f"cpu-gcc-{h.hexdigest()[:16]}"


def sanitizer_env() -> dict[str, str]:
    """Environment variables a process needs to load a `sanitize=True` library."""
    lib = subprocess.run([GXX, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    return {"LD_PRELOAD": lib, "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=0:abort_on_error=0"}


def _translation_unit(source: str, filename: str, prelude: str) -> str:
    try:
        body = rewrite(source).text
    except LaunchSyntaxError as e:
        raise CompileError(f"{filename}:{e.line}: error: {e.message}") from None
    except UnsupportedConstruct as e:
        raise NotOnCpu(filename, e.line, e.message) from None
    name = filename.replace("\\", "/").replace('"', "")
    return (
        f'#include "cuda_emu.h"\n'
        f'namespace cuda_emu {{ extern const char* const source_name = "{name}"; }}\n'
        f'#line 1 "<contract declarations>"\n{prelude}\n'
        f'#line 1 "{name}"\n{body}'
    )


def _trim(log: str, tmp: Path) -> str:
    """The diagnostics a learner needs: errors with file:line:col and their source excerpt."""
    log = log.replace(str(tmp) + "/", "").replace(str(HERE) + "/", "")
    keep, in_error = [], False
    for line in log.splitlines():
        if re.match(r"^\S[^:]*:\d+:\d+: (fatal )?error: ", line) or re.match(r"^\S.*: (fatal )?error: ", line):
            in_error = True
            keep.append(line)
        elif (
            re.match(r"^\S[^:]*:(\d+:\d+:)? (note|warning): ", line)
            or re.match(r"^(In file included|\S.*: In )", line)
            or line.startswith("compilation terminated")
            or line.startswith("collect2")
        ):
            in_error = False
        elif in_error and line.startswith(" "):
            keep.append(line)
        elif "undefined reference to" in line:
            sym = re.search(r"undefined reference to [`']([^']+)'", line)
            what = sym.group(1) if sym else line.strip()
            if what.startswith("__tsan_atomic"):
                what += " (std::atomic and __atomic builtins are not supported; use atomicAdd and friends)"
            keep.append(f"error: undefined reference to {what}")
    keep = list(dict.fromkeys(k for k in keep if k.strip() not in ("|",)))  # runtime TUs repeat header errors
    if not keep:
        keep = log.strip().splitlines()[-_MAX_LINES:]
    if len(keep) > _MAX_LINES:
        keep = keep[:_MAX_LINES] + [f"... ({len(keep) - _MAX_LINES} more lines)"]
    return "\n".join(keep)


def _runtime_objects(sanitize: bool) -> tuple[list[Path], list[list[str]]]:
    """The runtime's object files (cached per toolchain) and the commands that build missing ones."""
    mode = "asan" if sanitize else "std"
    cache = Path(os.environ.get("GRADER_CACHE") or Path.home() / ".cache" / "gemm-course") / "cpu-runtime"
    cache = cache / f"{toolchain_id()}-{mode}"
    cache.mkdir(parents=True, exist_ok=True)
    flags = _COMMON + (["-DCUDA_EMU_UCONTEXT", "-DCUDA_EMU_ASAN"] if sanitize else [])
    sources = [HERE / "runtime.cpp", HERE / "checks.cpp", HERE / "profile.cpp", HERE / "globals.cpp", HERE / "heap.cpp"]
    if _asm_switch() and not sanitize:
        sources.append(HERE / "switch_x86_64.S")
    objs, cmds = [], []
    for src in sources:
        obj = cache / (src.stem + ".o")
        objs.append(obj)
        if not obj.exists():  # compiled into the build's own dir, then moved into the cache
            cmds.append([GXX, *(flags if src.suffix == ".cpp" else []), "-c", str(src), "-o", obj.name])
    return objs, cmds


# The kernel file's allocation functions, renamed in its object to the device heap's (heap.cpp: cuda_emu_heap_NAME):
# device code allocates apart from glibc's heap, which the access profile's containers share.
HEAP_SYMBOLS = frozenset(
    "malloc calloc realloc free aligned_alloc memalign posix_memalign "
    "_Znwm _Znam _ZnwmRKSt9nothrow_t _ZnamRKSt9nothrow_t _ZnwmSt11align_val_t _ZnamSt11align_val_t "
    "_ZnwmSt11align_val_tRKSt9nothrow_t _ZnamSt11align_val_tRKSt9nothrow_t "
    "_ZdlPv _ZdaPv _ZdlPvm _ZdaPvm _ZdlPvRKSt9nothrow_t _ZdaPvRKSt9nothrow_t _ZdlPvSt11align_val_t "
    "_ZdaPvSt11align_val_t _ZdlPvmSt11align_val_t _ZdaPvmSt11align_val_t _ZdlPvSt11align_val_tRKSt9nothrow_t "
    "_ZdaPvSt11align_val_tRKSt9nothrow_t".split()
)
_ALLOCATOR = re.compile(r"_Zn[wa][mj]\w*|_Zd[la]Pv\w*")  # any other form of operator new/delete


def _to_device_heap(obj: Path, filename: str, timeout: float | None) -> None:
    calls = set(linkcheck.undefined(obj))
    other = sorted(n for n in calls if _ALLOCATOR.fullmatch(n) and n not in HEAP_SYMBOLS)
    if other:
        raise CompileError(f"{filename}: the CPU backend has no `{other[0]}` (a form of operator new or delete)")
    tool = shutil.which("objcopy")
    if not tool:
        raise CannotGrade("objcopy (binutils) is needed to build for the CPU backend: install binutils.")
    renames = [f"--redefine-sym={n}=cuda_emu_heap_{n}" for n in sorted(calls & HEAP_SYMBOLS)]
    if renames:
        rc, out = _run([[tool, *renames, obj.name]], obj.parent, timeout)[0]
        if rc:
            raise CannotGrade(f"objcopy could not rename {filename}'s allocation calls: {out.strip()[:300]}")


def _run(cmds: list[list[str]], cwd: Path, timeout: float | None = None) -> list[tuple[int, str]]:
    """Run the commands in parallel; all are killed if they outlast `timeout` seconds together."""
    results = run_all(cmds, cwd, timeout)
    if results is None:
        raise CompileError(
            f"g++ did not finish within {timeout:.0f} s "
            "(set GRADER_COMPILE_TIMEOUT or --compile-timeout to allow longer)."
        )
    return results


def compile_library(
    source: str,
    out_path: Path,
    *,
    filename: str = "kernel.cu",
    prelude: str = "",
    sanitize: bool = False,
    workdir: Path | None = None,
    timeout: float | None = None,
    defines: tuple[str, ...] = (),
    check_calls: bool = True,
) -> str:
    """Compile a kernel file into a CPU shared library at out_path; returns the compiler log.

    `defines`: -D/-U flags for the kernel file (the nvcc build's tuning switches); any other flag
    is nvcc's business and raises ValueError rather than being silently dropped.

    Raises CompileError (message: trimmed diagnostics at the learner's lines; log: everything),
    Forbidden when the kernel file's object calls what it may not (check_calls=False: not checked).
    """
    out_path = Path(out_path)
    tmp_ctx = tempfile.TemporaryDirectory(prefix="cuda_emu_") if workdir is None else None
    tmp = Path(tmp_ctx.name if tmp_ctx else workdir)
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        (tmp / "kernel_emu.cpp").write_text(_translation_unit(source, filename, prelude))
        bad = [f for f in defines if not f.startswith(("-D", "-U"))]
        if bad:
            raise ValueError(f"the CPU backend takes only -D/-U flags, not {' '.join(bad)}")
        kernel_flags = _COMMON + _kernel_checks() + (_ASAN if sanitize else _RACE) + list(defines)
        cmds = [[GXX, *kernel_flags, "-c", "kernel_emu.cpp", "-o", "kernel_emu.o"]]
        runtime_objs, runtime_cmds = _runtime_objects(sanitize)
        results = _run(cmds + runtime_cmds, tmp, timeout)
        log = "".join(out for _, out in results)
        if any(rc for rc, _ in results):
            raise _unsupported_in_log(log, filename) or CompileError(_trim(log, tmp), log)
        for obj in runtime_objs:
            if not obj.exists():  # built just now: publish atomically for later builds
                os.replace(tmp / obj.name, obj)
        if check_calls:  # the kernel file's object only: the runtime is the grader's own code
            api = linkcheck.emulation_api(h for h in sorted(HERE.glob("*.h")) if h.name != "runtime_internal.h")
            linkcheck.enforce(
                tmp / "kernel_emu.o", "cpu", filename, runtime=linkcheck.runtime_symbols(runtime_objs, api)
            )
        if not sanitize:  # (AddressSanitizer keeps its own heap, which checks every allocation)
            _to_device_heap(tmp / "kernel_emu.o", filename, timeout)
        objs = ["kernel_emu.o", *map(str, runtime_objs)]
        tmp_out = tmp / "kernel.so"
        link = [GXX, "-shared", "-pthread", "-o", str(tmp_out), *objs, "-Wl,-z,defs"] + (
            ["-fsanitize=address"] if sanitize else []
        )
        rc, out = _run([link], tmp, timeout)[0]
        log += out
        if rc:
            raise CompileError(_trim(log, tmp), log)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        staged = out_path.with_name(out_path.name + f".{os.getpid()}.tmp")
        shutil.copyfile(tmp_out, staged)
        os.replace(staged, out_path)  # atomic: a reader never sees half a library
        return log
    finally:
        if tmp_ctx:
            tmp_ctx.cleanup()
