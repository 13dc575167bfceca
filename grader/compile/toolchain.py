"""Build a kernel file into a shared library, once per distinct input.

Two backends compile the same source:
  cuda: nvcc -c for the current GPU's architecture only, then nvcc -shared (about 1 s);
  cpu:  g++ with the CPU backend's emulation header (grader.compile.cpu), and, where nvcc is installed, nvcc's
        device compile for sm_75 beside it (what g++ accepts and nvcc refuses is a compile error there too).

Between compiling and linking, the object of the submission's own translation unit is
checked (grader/compile/linkcheck.py): what it calls must be on its backend's allow-list, and its
host code may make no system calls. A refused build raises Forbidden. Only that object is
checked: the CUDA runtime nvcc links in statically imports dlopen and pthread_* itself.

Libraries, and refusals, are cached under `cache_dir()` by a hash of source, exercise, flags,
toolchain version, target architecture and the allow-list's version, so an unchanged cell or
submission never recompiles. The contract's launcher declarations are prepended (behind a
`#line 1` directive, so diagnostics keep the learner's line numbers): a launcher
with the wrong parameter types is then a compile error at the learner's line.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from grader.spec import exercises
from grader.compile import linkcheck
from grader.errors import CannotGrade, CompileError, Forbidden, GraderError
from grader.compile.procs import COMPILE_TIMEOUT_S, run_all

# compile (-c); the link is `nvcc -shared`. -g1 for the host code: the call check names the learner's line.
NVCC_FLAGS = ("-O3", "-lineinfo", "-Xcompiler", "-fPIC", "-Xcompiler", "-g1", "--std=c++17")
REFUSED = "forbidden.txt"  # in a build's cache folder instead of kernel.so: the call check refused it
# The CPU backend's device compile: the course's lowest GPU (a T4), device code only (-cubin: no host pass, which
# g++ does; kernels/02_tiled.cu on the 2-core CI machine, 2026-12-03: 0.56-0.68 s against 1.37-1.51 s for -c).
DEVICE_CHECK_ARCH = "sm_75"
MAX_MESSAGE_LINES = 40

# Appended after the learner's code (so their line numbers are untouched): lets the
# binding read errors from the library's own, statically linked CUDA runtime.
CUDA_EPILOGUE = r"""
extern "C" int grader_last_error(void) { return (int)cudaGetLastError(); }
extern "C" int grader_synchronize(void) { return (int)cudaDeviceSynchronize(); }
extern "C" const char* grader_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }
"""


def cache_dir() -> Path:
    """Where built libraries live: $GRADER_CACHE, else ~/.cache/gemm-course. Made when missing;
    CannotGrade (exit 2) when it cannot be made or written: the machine's problem, not the kernel's."""
    root = Path(os.environ.get("GRADER_CACHE") or Path.home() / ".cache" / "gemm-course")
    try:
        root.mkdir(parents=True, exist_ok=True)
        writable = os.access(root, os.W_OK | os.X_OK)
        why = "not writable"
    except OSError as e:
        writable, why = False, e.strerror or type(e).__name__
    if not writable:
        raise CannotGrade(
            f"the grader's cache {root} cannot be used ({why}): set GRADER_CACHE to a folder you can "
            "write, e.g. export GRADER_CACHE=/tmp/gemm-course-cache"
        )
    return root


# ---------------------------------------------------------------------------- nvcc
@functools.lru_cache(maxsize=None)
def find_nvcc() -> str | None:
    """nvcc from $CUDA_HOME, $PATH or /usr/local/cuda, as torch's cpp_extension looks."""
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home and Path(home, "bin", "nvcc").exists():
            return str(Path(home, "bin", "nvcc"))
    found = shutil.which("nvcc")
    if found:
        return found
    default = Path("/usr/local/cuda/bin/nvcc")
    return str(default) if default.exists() else None


@functools.lru_cache(maxsize=None)
def nvcc_version() -> str | None:
    """'13.0' (release major.minor), or None without nvcc."""
    nvcc = find_nvcc()
    if not nvcc:
        return None
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


def gpu_arch() -> str:
    """'sm_90' for the current GPU; raises CannotGrade without one."""
    import torch

    if not torch.cuda.is_available():
        raise CannotGrade(
            "No CUDA GPU is visible to torch. Use --backend cpu (correctness only), "
            "or run on a machine with an NVIDIA GPU."
        )
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


# ---------------------------------------------------------------------------- build
@dataclass(frozen=True)
class Build:
    """A built library and what it was built from."""

    path: Path
    backend: str
    exercise: str | None
    key: str
    cached: bool  # True when no compiler ran


def _key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8", "surrogateescape"))  # a file name need not be UTF-8
        h.update(b"\0")
    return h.hexdigest()[:24]


def _with_prelude(source: str, exercise: str | None, filename: str) -> str:
    prelude = exercises.declarations(exercise) if exercise else ""
    return f'{prelude}#line 1 "{filename}"\n{source}'


_FAILED: dict[tuple[str, float], CompileError] = {}  # compile errors of this process, by build key and time limit


def build(
    source: str,
    *,
    backend: str = "cuda",
    exercise: str | None = None,
    filename: str = "kernel.cu",
    extra_flags: tuple[str, ...] = (),
    sanitize: bool = False,
    timeout: float | None = None,
    check_calls: bool = True,
) -> Build:
    """Compile `source` (a kernel file's text) and return the cached library.

    Raises CompileError with the compiler's diagnostics (the learner's line
    numbers) when the source does not compile or outlasts `timeout` seconds
    (default COMPILE_TIMEOUT_S), Forbidden when the built object calls what a
    kernel file may not (grader.compile.linkcheck; check_calls=False skips that, for the
    grader's own tests of its other defences), CannotGrade when the toolchain is missing.
    """
    timeout = timeout or COMPILE_TIMEOUT_S
    ident, nvcc, arch, device_nvcc = _compilers(backend, sanitize)

    checked = f"linkcheck {linkcheck.VERSION}" if check_calls else "calls unchecked"
    key = _key(backend, ident, checked, exercise or "", " ".join(extra_flags), filename, source)
    out_dir = cache_dir() / backend / key
    lib = out_dir / "kernel.so"
    if lib.exists():
        return Build(lib, backend, exercise, key, cached=True)
    if (out_dir / REFUSED).exists():
        raise Forbidden((out_dir / REFUSED).read_text())
    failed = _FAILED.get((key, timeout))
    if failed:  # the same text failed in this process (batch: phase 1, then phase 2): fail again at once
        raise CompileError(str(failed), failed.log)

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=out_dir.parent))
    try:
        if backend == "cuda":
            _nvcc_compile(nvcc, arch, source, exercise, filename, work, extra_flags, timeout, check_calls)
        else:
            _cpu_compile(device_nvcc, source, exercise, filename, work, extra_flags, timeout, sanitize, check_calls)
        _publish(work, out_dir)
    except Forbidden as e:  # cached like a build: the same file is refused at once next time
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        (work / REFUSED).write_text(str(e))
        _publish(work, out_dir)
        raise
    except CompileError as e:
        shutil.rmtree(work, ignore_errors=True)
        if backend == "cpu":  # nvcc's messages get the contract's signatures in diagnostics()
            e = CompileError(str(e) + signature_hint(str(e), exercise), e.log)
        _FAILED[(key, timeout)] = e
        raise e from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return Build(lib, backend, exercise, key, cached=False)


def _compilers(backend: str, sanitize: bool) -> tuple[str, str | None, str | None, str | None]:
    """(what the build key says of the compilers, nvcc and the arch for a cuda build, the nvcc of a CPU
    build's device check or None); CannotGrade when the backend's compiler is missing."""
    if backend == "cuda":
        nvcc = find_nvcc()
        if not nvcc:
            raise CannotGrade(
                "nvcc not found. Install the CUDA toolkit (its major version must match "
                "torch.version.cuda) or set CUDA_HOME; or use --backend cpu."
            )
        arch = gpu_arch()
        return f"nvcc {nvcc_version()} {arch} {' '.join(NVCC_FLAGS)}", nvcc, arch, None
    if backend == "cpu":
        from grader.compile import cpu, hostcc

        hostcc.require()  # no g++, or clang: the machine's problem (exit 2), not the kernel's
        # (a sanitize build re-runs a file that built already; GRADER_DEVICE_CHECK=0 skips it everywhere)
        device_nvcc = None if sanitize or os.environ.get("GRADER_DEVICE_CHECK", "1") == "0" else find_nvcc()
        ident = f"cpu {cpu.toolchain_id()} sanitize={sanitize}"
        if device_nvcc:
            ident += f" device-check nvcc {nvcc_version()} {DEVICE_CHECK_ARCH}"
        return ident, None, None, device_nvcc
    raise CannotGrade(f"unknown backend {backend!r}: use cuda or cpu")


def _cpu_compile(device_nvcc, source, exercise, filename, work: Path, extra_flags, timeout, sanitize, check_calls):
    """The CPU backend's build in `work`, with nvcc's device check beside g++ (where nvcc is)."""
    from grader.compile import cpu

    device = _DeviceCompile(device_nvcc, source, exercise, filename, work, extra_flags, timeout)
    try:
        cpu.compile_library(
            source,
            work / "kernel.so",
            filename=filename,
            prelude=exercises.declarations(exercise) if exercise else "",
            sanitize=sanitize,
            workdir=work,
            timeout=timeout,
            defines=extra_flags,
            check_calls=check_calls,
        )
    except GraderError:  # g++'s message, in the CPU backend's words (file:line); nvcc's is not needed
        try:
            device.check()  # waited for: it compiles in `work`
        except GraderError:
            pass
        raise
    device.check()


class _DeviceCompile:
    """nvcc's device compile of a CPU-backend build (none without nvcc), started at once in a thread so that it
    runs beside g++; check() waits for it (within the build's time limit) and raises nvcc's CompileError.

    Device code only (-cubin), for the course's lowest GPU (DEVICE_CHECK_ARCH): it refuses what g++ accepts (a
    host function or std::min called from a kernel, a __device__ lambda without --extended-lambda, more than
    48 KB of static shared memory). A failure that names neither the file nor ptxas (an nvcc that does not work
    with this machine's g++) is the machine's, not the file's: ignored, the g++ build decides."""

    def __init__(self, nvcc, source, exercise, filename, work: Path, extra_flags, timeout: float):
        self.result: list[tuple[int, str]] | None = []
        self.error: CompileError | None = None
        self.filename, self.work, self.exercise, self.timeout = filename, work, exercise, timeout
        if not nvcc:
            self.thread = None
            return
        src = work / "device_check.cu"
        src.write_text(_with_prelude(source, exercise, filename))
        cmd = [
            nvcc,
            f"-arch={DEVICE_CHECK_ARCH}",
            *NVCC_FLAGS,
            *extra_flags,
            "-cubin",
            "-o",
            str(work / "k.cubin"),
            str(src),
        ]

        def run():
            try:
                self.result = run_all([cmd], work, timeout)
            except CompileError as e:  # out of memory: raised again by check(), in the grading thread
                self.error = e

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def check(self) -> None:
        if self.thread is None:
            return
        self.thread.join()  # run_all returns by the time limit: it kills nvcc then
        if self.error is not None:
            raise self.error
        if self.result is None:
            raise CompileError(
                f"nvcc's device compile did not finish within {self.timeout:.0f} s "
                "(set GRADER_COMPILE_TIMEOUT or --compile-timeout to allow longer)."
            )
        returncode, out = self.result[0]
        for f in ("device_check.cu", "k.cubin"):
            (self.work / f).unlink(missing_ok=True)
        name = re.escape(Path(self.filename).name)
        if returncode and re.search(rf"{name}\(\d+\)|ptxas (error|fatal)", out):
            raise CompileError(diagnostics(out, self.filename, self.work, self.exercise), out)


def _publish(work: Path, out_dir: Path) -> None:
    try:
        work.rename(out_dir)  # atomic publish; a concurrent build may have won
    except OSError:
        shutil.rmtree(work, ignore_errors=True)


def _nvcc_compile(
    nvcc: str,
    arch: str,
    source: str,
    exercise: str | None,
    filename: str,
    work: Path,
    extra_flags: tuple[str, ...],
    timeout: float,
    check_calls: bool = True,
) -> str:
    """nvcc -c, the call check on that object (not on the static CUDA runtime), then nvcc -shared."""
    src, obj = work / "kernel.cu", work / "kernel.o"
    src.write_text(_with_prelude(source, exercise, filename) + CUDA_EPILOGUE)
    deadline = time.monotonic() + timeout  # for both steps together

    def run(cmd: list[str]) -> str:
        results = run_all([cmd], work, max(0.0, deadline - time.monotonic()))
        if results is None:
            raise CompileError(
                f"nvcc did not finish within {timeout:.0f} s "
                "(set GRADER_COMPILE_TIMEOUT or --compile-timeout to allow longer)."
            )
        returncode, out = results[0]
        if returncode != 0:
            raise CompileError(diagnostics(out, filename, work, exercise), out)
        return out

    log = run([nvcc, f"-arch={arch}", *NVCC_FLAGS, *extra_flags, "-c", "-o", str(obj), str(src)])
    if check_calls:
        linkcheck.enforce(obj, "cuda", filename)
    log += run([nvcc, f"-arch={arch}", "-shared", "-o", str(work / "kernel.so"), str(obj)])
    obj.unlink()
    (work / "build.log").write_text(log)
    return log


def diagnostics(log: str, filename: str, work: Path | None = None, exercise: str | None = None) -> str:
    """The part of a compiler log a learner needs: errors at their own lines.

    Drops temp-dir paths, the notes that point into our prelude, and anything past
    MAX_MESSAGE_LINES.
    """
    lines = []
    for line in log.splitlines():
        if work is not None:
            line = line.replace(str(work) + os.sep, "")
        if not line.strip() or "Compilation terminated" in line:
            continue
        if re.match(r"^\d+ errors? detected in the compilation", line):
            continue
        lines.append(line)
    if len(lines) > MAX_MESSAGE_LINES:
        lines = lines[:MAX_MESSAGE_LINES] + [f"... ({len(lines) - MAX_MESSAGE_LINES} more lines)"]
    text = "\n".join(lines) or "the compiler failed without a message"
    return text + signature_hint(text, exercise)


def signature_hint(text: str, exercise: str | None) -> str:
    """When the compiler says a launcher clashes with its contract declaration: the signatures."""
    if not exercise or not re.search(r'"C" linkage|conflicting declaration of C function', text):
        return ""
    sigs = "\n".join(f'    extern "C" {l.signature}' for l in exercises.launchers(exercise))
    return f"\nThe launcher's parameters must be exactly those of the contract:\n{sigs}"


# ---------------------------------------------------------------------------- ptxas
@dataclass(frozen=True)
class KernelResources:
    kernel: str
    registers: int
    shared_bytes: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int

    def __str__(self) -> str:
        spills = (
            "no spills"
            if not (self.spill_stores or self.spill_loads)
            else f"SPILLS {self.spill_stores} B stored / {self.spill_loads} B loaded"
        )
        return (
            f"{self.kernel}: {self.registers} registers, {self.shared_bytes} B shared memory, "
            f"{self.stack_bytes} B stack, {spills}"
        )


def resource_usage(
    source: str, *, exercise: str | None = None, arch: str | None = None, filename: str = "kernel.cu"
) -> list[KernelResources]:
    """Registers, shared memory and spills per kernel, from `nvcc -Xptxas -v`.

    Works without a GPU when `arch` is given (e.g. 'sm_90').
    """
    nvcc = find_nvcc()
    if not nvcc:
        raise CannotGrade("nvcc not found: resource usage needs the CUDA toolkit.")
    arch = arch or gpu_arch()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "kernel.cu")
        src.write_text(_with_prelude(source, exercise, filename))
        results = run_all(
            [[nvcc, f"-arch={arch}", "-O3", "-c", "-Xptxas", "-v", "-o", str(Path(tmp, "k.o")), str(src)]],
            tmp,
            COMPILE_TIMEOUT_S,
        )
        if results is None:
            raise CompileError(f"nvcc did not finish within {COMPILE_TIMEOUT_S:.0f} s")
        returncode, log = results[0]
        if returncode != 0:
            raise CompileError(diagnostics(log, filename, Path(tmp), exercise), log)
    return parse_ptxas(log)


def parse_ptxas(log: str) -> list[KernelResources]:
    found, current, stack = [], None, (0, 0, 0)
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = _demangle(m.group(1))
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            stack = tuple(int(g) for g in m.groups())
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            smem = re.search(r"(\d+) bytes smem", line)
            found.append(
                KernelResources(
                    current, int(m.group(1)), int(smem.group(1)) if smem else 0, stack[1], stack[2], stack[0]
                )
            )
            current, stack = None, (0, 0, 0)
    return found


def _demangle(name: str) -> str:
    tool = shutil.which("c++filt")
    if not tool or not name.startswith("_Z"):
        return name
    try:
        return subprocess.run([tool, name], capture_output=True, text=True, timeout=5).stdout.strip() or name
    except (OSError, subprocess.TimeoutExpired):
        return name
