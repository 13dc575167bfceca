"""What a built kernel file may call: the enforcement behind forbidden.py's early message.

    linkcheck.enforce(obj, backend, filename, runtime=...)   # raises Forbidden, or returns
    linkcheck.check(obj, backend, filename, runtime=...)     # the same, as a list of Problems

After a submission compiles, and before it is linked, the object of its own translation unit
(nvcc -c, or the CPU backend's g++ -c) is read with objdump:
  - every symbol it leaves undefined must be on the allow-list of its backend: the CUDA runtime
    calls a kernel file may make and the plumbing nvcc's host stubs call (cuda); the emulation
    runtime's own entry points and the instrumentation hooks the build adds (cpu); on both,
    printf and the other stdio output functions, memory and string functions, the math library
    and the harmless parts of the C++ runtime (new/delete, guards, std::string, std::cout).
    Anything else (mkdir, dlopen, tgkill, send, environ...) is refused by name, whatever the
    source did to hide it (comments ending in a lone CR, splices, declarations of its own);
  - its host code may not contain a system-call instruction (syscall, sysenter, int $n, svc)
    or a far call/jump/return (which switch the CPU mode), nor read a hardware clock or counter
    (rdtsc, rdtscp, rdpmc, rdpru; mrs of a timer or PMU register): on the CPU backend a kernel that
    timed itself could tell the blocks the access profile records from the others;
  - it may not define a function of the CUDA runtime (it would replace the runtime's own).
nvcc compiles each external __device__ function for the host as a stub that calls exit(1): on the
cuda backend `exit` passes when only such stubs refer to it.
Only the submission's object is checked: the CUDA runtime that nvcc links statically imports
dlopen and pthread_* itself, and the CPU backend's runtime is the grader's own code.

Limits: this bounds what a submission links against and which instructions it wrote. Native
code can still reach library code through pointer arithmetic (from the address of printf, say),
or jump into the middle of its own instructions; a static check cannot follow that. The process
boundary (grader/run/sandbox.py) and, for untrusted classes, a container are the boundary there.
"""

from __future__ import annotations

import functools
import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from grader.errors import CannotGrade, Forbidden
from grader.compile.forbidden import Problem, function_reason, strip_comments

VERSION = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]  # part of every build's cache key
OBJDUMP_TIMEOUT_S = 60


def _names(*groups: str) -> str:
    return "|".join(n for g in groups for n in g.split())


_LIBM = (
    "acos asin atan atan2 cos sin tan sincos acosh asinh atanh cosh sinh tanh exp exp2 exp10 expm1 log log10 "
    "log2 log1p logb ilogb pow sqrt rsqrt cbrt hypot erf erfc tgamma lgamma ceil floor trunc round lround "
    "llround rint lrint llrint nearbyint fmod remainder remquo fma fmax fmin fdim fabs copysign nan nextafter "
    "nexttoward frexp ldexp modf scalbn scalbln significand"
)
# Both backends. Mangled names (C++ runtime) and C names, matched whole.
_COMMON = [
    # what the compiler and the C/C++ runtime need to run any code
    r"_GLOBAL_OFFSET_TABLE_|__dso_handle|__stack_chk_fail|__stack_chk_guard|__tls_get_addr|__errno_location",
    r"atexit|__cxa_atexit|__cxa_guard_(acquire|release|abort)|__cxa_pure_virtual|__cxa_deleted_virtual",
    r"__cxa_(allocate|free)_exception|__cxa_throw|__cxa_rethrow|__cxa_(begin|end)_catch|__cxa_get_exception_ptr"
    r"|__cxa_call_terminate|__cxa_call_unexpected|__cxa_bad_(cast|typeid)|__cxa_throw_bad_array_new_length",
    r"_Unwind_Resume|__gxx_personality_v0|__libc_single_threaded|__assert_fail|__assert_perror_fail",
    # libgcc arithmetic helpers
    r"__(popcount|clz|ctz|parity|ffs|bswap)[sdt]i2|__(mul|div)[sdxt]c3|__u?(div|mod)ti3|__powi[sdxt]f2"
    r"|__(fix|fixuns|float|floatun|extend|trunc)\w+",
    # operator new/delete (every variant), std::__throw_*, typeinfo/vtables of the standard exceptions and
    # typeinfo of the built-in types (throw 42; catch (const char*))
    r"_Zn[wa]m\w*|_Zd[la]Pv\w*|_ZSt\d+__throw_\w+|_ZSt9terminatev|_ZSt7nothrow|_ZTVN10__cxxabiv1\d+\w+",
    r"_ZT[IVS]St\d+\w+|_ZT[IS]P?K?[a-z]|_ZNSt\d+(exception|bad_alloc|bad_cast|bad_array_new_length|logic_error|runtime_error"
    r"|out_of_range|length_error|invalid_argument|overflow_error|range_error|domain_error)\w*"
    r"|_ZNKSt\d+(exception|bad_alloc|bad_cast|logic_error|runtime_error)\w*",
    # std::string, std::ostringstream, std::cout/cerr/clog (output to the captured stdout/stderr)
    r"_ZNK?St7__cxx11\d+basic_(string|ostringstream|istringstream|stringstream|stringbuf)\w*",
    r"_ZSt4(cout|cerr|clog)|_ZNK?So\w*|_ZSt16__ostream_insert\w*|_ZSt(4endl|4ends|5flush)\w*|_ZNSt8ios_base\w*"
    r"|_ZNK?St9basic_ios\w*|_ZNKSt5ctypeIcE\w*|_ZNSt6locale\w*|_ZNK?St15basic_streambuf\w*",
    r"_ZSt(9to_string|10to_wstring)\w*|_ZNSt7__cxx119to_string\w*",
    # memory and strings
    r"malloc|calloc|realloc|free|aligned_alloc|posix_memalign|memalign",
    r"mem(cpy|move|set|cmp|chr)|str(len|nlen|cmp|ncmp|cpy|ncpy|cat|ncat|chr|rchr|str|dup|ndup|spn|cspn|pbrk|tok_r)"
    r"|__(memcpy|memmove|memset|strcpy|strncpy|strcat|strncat|stpcpy|mempcpy)_chk|__rawmemchr|__strdup",
    # output to stdout/stderr, and formatting into memory
    r"printf|puts|putchar|vprintf|fprintf|vfprintf|fputs|fputc|putc|_IO_putc|fwrite|fflush|stdout|stderr"
    r"|snprintf|sprintf|vsnprintf|vsprintf|sscanf|__isoc(99|23)_sscanf"
    r"|__(printf|fprintf|sprintf|snprintf|vprintf|vfprintf|vsprintf|vsnprintf)_chk",
    # numbers
    r"abs|labs|llabs|div|ldiv|lldiv|ato[ifl]|atoll|strto(l|ll|ul|ull|f|d|ld|imax|umax)|__isoc23_strto\w+"
    r"|qsort|bsearch|rand|srand|rand_r",
    # the math library (float, double, long double), and glibc's classification helpers
    r"(?:__)?(" + _names(_LIBM) + r")[fl]?(_finite)?|__(isnan|isinf|finite|fpclassify|signbit|issignaling)[fl]?",
]
# The CUDA runtime calls a kernel file may make (streams and graphs of its own, host callbacks, IPC,
# device-wide settings and the driver's entry points are not among them), and nvcc's host stubs.
_CUDA = [
    r"__cuda(RegisterFatBinary(End)?|UnregisterFatBinary|RegisterFunction|RegisterVar|RegisterManagedVar"
    r"|RegisterTexture|RegisterSurface|RegisterLinkedBinary\w*|InitModule|PushCallConfiguration"
    r"|PopCallConfiguration|LaunchKernel\w*|GetKernel)",
    r"cuda("
    + _names(
        "Malloc MallocAsync MallocPitch MallocManaged MallocHost HostAlloc Free FreeAsync FreeHost MemGetInfo",
        "Memcpy MemcpyAsync Memcpy2D Memcpy2DAsync MemcpyToSymbol MemcpyToSymbolAsync MemcpyFromSymbol",
        "MemcpyFromSymbolAsync Memset MemsetAsync Memset2D Memset2DAsync MemPrefetchAsync GetSymbolAddress",
        "GetSymbolSize PointerGetAttributes",
        "GetLastError PeekAtLastError GetErrorString GetErrorName",
        "GetDevice GetDeviceCount GetDeviceProperties DeviceGetAttribute DeviceGetLimit DeviceGetCacheConfig",
        "DeviceGetStreamPriorityRange DriverGetVersion RuntimeGetVersion DeviceSynchronize StreamSynchronize",
        "StreamQuery StreamWaitEvent StreamGetPriority StreamGetFlags",
        "EventCreate EventCreateWithFlags EventRecord EventRecordWithFlags EventQuery EventSynchronize",
        "EventElapsedTime EventDestroy",
        "FuncSetAttribute FuncGetAttributes FuncSetCacheConfig FuncSetSharedMemConfig FuncGetName",
        "OccupancyMaxActiveBlocksPerMultiprocessor OccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
        "OccupancyMaxPotentialBlockSize OccupancyAvailableDynamicSMemPerBlock OccupancyMaxActiveClusters",
        "LaunchKernel LaunchKernelExC LaunchCooperativeKernel GetFuncBySymbol GetKernel",
    )
    + r")(_v\d+)?(_ptds|_ptsz)?",
]
# The CPU backend's build adds ThreadSanitizer hooks (the race detector), bounds/alignment checks and,
# for the re-run of a crash, AddressSanitizer: the calls its instrumentation emits. The emulation's own
# entry points (what cuda_emu.h declares for kernels) are added per build; its internals are not.
_CPU = [
    r"__tsan_(init|func_entry|func_exit|(unaligned_)?(read|write)\d+|(read|write)_range|vptr_update|vptr_read"
    r"|atomic\w+)|__ubsan_handle_\w+",
    r"__asan_(report|load|store|init|version_mismatch_check|register|unregister|stack_malloc|stack_free"
    r"|option_detect|handle_no_return|memcpy|memset|memmove|poison|unpoison|before_dynamic_init"
    r"|after_dynamic_init|alloca_poison|allocas_unpoison|shadow_memory_dynamic_address|exp_)\w*",
]

_ALLOWED = {
    b: re.compile("|".join(f"(?:{p})" for p in _COMMON + extra)) for b, extra in (("cuda", _CUDA), ("cpu", _CPU))
}
_HOST_TRAPS = re.compile(
    r"(?:^|\s)(syscall|sysenter|sysexit|sysret\w*|int|int1|into|lcall\w*|ljmp\w*|lret\w*"
    r"|iret\w*|svc|hvc|smc)(?=\s|$)"
)
# Instructions that read a hardware clock or counter (x86: the time-stamp counter, performance counters, AMD's
# rdpru; AArch64: the generic timer's and the PMU's registers): on the CPU backend a kernel file that times itself
# with one sees the access profile record a block (several times the cost per access) and could run its lesson's
# kernel only there. Kernels have clock64() and clock(), launchers events: virtual clocks there (cuda_emu.h).
_CLOCK_READS = re.compile(
    r"(?:^|\s)(rdtscp?|rdpmc|rdpru)(?=\s|$)|(?:^|\s)(mrs)\s+\w+,\s*(?:cnt[pv]ct\w*|pmccntr\w*|pmevcntr\w*)", re.I
)
_RUNTIME_DEFINITION = re.compile(r"__cuda\w+|cuda[A-Z]\w*")
_WHY_CALL = "not on the allow-list"
_CLOCK_WHY = (
    "a kernel file may not read a hardware clock or counter (rdtsc and its kin): use clock64() in a kernel, "
    "events in a launcher (on the CPU backend both give a modelled time; the grader times kernels on a GPU)"
)
_ALLOW_LIST = (
    "Not on the allow-list of what a kernel file may call: the CUDA runtime's memory, launch, error and "
    "device-query calls; printf and stdio output; memory and string functions; the math library. "
    "A function of your own must be defined in the file."
)


# The CPU backend builds without _FORTIFY_SOURCE and sends the kernel file's memcpy/memmove/memset to its
# runtime, which checks host code's copies of device memory: the fortified forms would go around that check
# (only an explicit __builtin___memcpy_chk emits them there), so they are refused on that backend.
_CPU_REFUSED = re.compile(r"__(memcpy|memmove|memset|mempcpy)_chk")


def allowed(name: str, backend: str, runtime: frozenset[str] = frozenset()) -> bool:
    """Whether a kernel file built for `backend` may leave `name` (a mangled symbol) undefined."""
    base = name.split("@", 1)[0]  # foo@GLIBC_2.2.5: a versioned reference is the function all the same
    if backend == "cpu" and _CPU_REFUSED.fullmatch(base):
        return False
    return base in runtime or _ALLOWED[backend].fullmatch(base) is not None


@functools.lru_cache(maxsize=None)
def _objdump() -> str:
    tool = shutil.which("objdump")
    if not tool:
        raise CannotGrade(
            "objdump (binutils) is needed to check what a built kernel calls: install binutils "
            "(it comes with g++ on most systems)."
        )
    return tool


def _dump(path: Path, *flags: str) -> str:
    try:
        proc = subprocess.run(
            [_objdump(), *flags, "-w", str(path)],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=OBJDUMP_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise CannotGrade(f"objdump did not read {path.name} within {OBJDUMP_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        raise CannotGrade(f"objdump could not read {path.name}: {proc.stderr.strip()[:300]}")
    return proc.stdout


_SYMBOL = re.compile(r"^[0-9a-fA-F]+ (.{7}) (\S+)\t[0-9a-fA-F]+ (?:\.hidden |\.protected |\.internal )?(\S+)$", re.M)


def _symbols(text: str) -> tuple[list[str], list[str]]:
    """(undefined, defined global) symbol names from `objdump -t` output."""
    undefined, defined = [], []
    for flags, section, name in _SYMBOL.findall(text):
        if section == "*UND*":
            undefined.append(name)
        elif flags[0] in "gu" or flags[1] == "w":
            defined.append(name)
    return undefined, defined


def undefined(obj: Path) -> list[str]:
    """The symbols the object `obj` leaves undefined (what it calls elsewhere)."""
    return _symbols(_dump(obj, "-t"))[0]


def emulation_api(headers) -> frozenset[str]:
    """The names the CPU backend's headers declare for kernels (their CUDA_EMU_API declarations:
    block_sync, warp_sync, threadIdx...); the runtime's internals (runtime_internal.h: which blocks the
    access profile records, the race detector's state, cuda_emu_configure) are not among them."""
    names = set()
    for header in headers:
        text = re.sub(r"(?m)^[ \t]*#.*$", "", strip_comments(Path(header).read_text()))
        for decl in re.findall(r"\bCUDA_EMU_API\b([^;{]*)", text):
            if "(" in decl:
                names.update(re.findall(r"(\w+)\s*\(", decl)[:1])
            else:
                names.update(re.findall(r"(\w+)\s*(?:\[[^\]]*\])?\s*(?:,|$)", decl.strip()))
    return frozenset(names)


@functools.lru_cache(maxsize=64)
def _runtime_symbols(paths: tuple[str, ...], stamps: tuple[float, ...], api: frozenset[str]) -> frozenset[str]:
    defined = sorted({n for p in paths for n in _symbols(_dump(Path(p), "-t"))[1]})
    pretty = _demangle(defined)
    return frozenset(n for n in defined if re.sub(r"^cuda_emu::", "", pretty[n].split("(")[0]) in api)


def runtime_symbols(objects, api: frozenset[str]) -> frozenset[str]:
    """The symbols the given objects (the CPU backend's runtime) define whose name is in `api`
    (emulation_api()): what a kernel may call there."""
    paths = tuple(str(p) for p in objects)
    return _runtime_symbols(paths, tuple(Path(p).stat().st_mtime for p in paths), frozenset(api))


def _relocations(text: str) -> dict[str, set[str]]:
    """From `objdump -r`: symbol -> the sections that refer to it (.text..., or data: .data.rel, ...)."""
    found, section = {}, ""
    for row in text.splitlines():
        m = re.match(r"^RELOCATION RECORDS FOR \[(.+)\]:$", row)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^[0-9a-fA-F]+\s+R_\w+\s+(\S+?)(?:[-+]0x[0-9a-fA-F]+)?$", row)
        if m:
            found.setdefault(m.group(1), set()).add(section)
    return found


@dataclass
class _Code:
    """What the disassembly (`objdump -d -r -l`) says: for each symbol the code refers to, where it first
    does ('mine.cu:12' when the object has line tables, else 'in f()'); each function's references and
    calls; every system-call or far-transfer instruction, and every read of a hardware clock or counter, as
    (mnemonic, where)."""

    refs: dict[str, str] = field(default_factory=dict)
    by_function: dict[str, set[str]] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    traps: list[tuple[str, str]] = field(default_factory=list)
    clock_reads: list[tuple[str, str]] = field(default_factory=list)


def _code(text: str, filename: str) -> _Code:
    code, func, line = _Code(), "", ""
    base = Path(filename).name
    for row in text.splitlines():
        if not row or row[0] == " " and ":\t" not in row:
            continue
        m = re.match(r"^[0-9a-fA-F]+ <(.+)>:$", row)
        if m:
            func, line = m.group(1), ""
            continue
        m = re.match(r"^(\S.*):(\d+)(?: \(discriminator \d+\))?$", row)
        if m:
            line = f"{base}:{m.group(2)}" if Path(m.group(1)).name == base else line
            continue
        m = re.match(r"^\s*[0-9a-fA-F]+:\t(.*)$", row)
        if not m:
            continue
        insn, *relocs = m.group(1).split("\t")
        where = line or f"in {func}"
        for sym in re.findall(r"R_\w+\s+(\S+?)(?:[-+]0x[0-9a-fA-F]+)?$", "\t".join(relocs)):
            code.refs.setdefault(sym, where)
            code.by_function.setdefault(func, set()).add(sym)
        mnemonic = insn.split("#")[0].split("<")[0]
        if re.match(r"(?:\w+ )*call", mnemonic):
            code.calls[func] = code.calls.get(func, 0) + 1
        t = _HOST_TRAPS.search(mnemonic)
        if t:
            code.traps.append((t.group(1), where))
        t = _CLOCK_READS.search(mnemonic)
        if t:
            code.clock_reads.append((t.group(1) or t.group(2), where))
    return code


def _device_stubs_only(name: str, code: _Code, sections: set[str]) -> bool:
    """nvcc compiles every external __device__ function for the host as a stub that calls exit(1): `exit` is
    fine when only such stubs (functions whose one call and one reference is exit) refer to it, from code."""
    users = [f for f, syms in code.by_function.items() if name in syms]
    return (
        bool(users)
        and all(s.startswith(".text") for s in sections)
        and all(code.by_function[f] == {name} and code.calls.get(f) == 1 for f in users)
    )


def _demangle(names: list[str]) -> dict[str, str]:
    tool = shutil.which("c++filt")
    mangled = [n for n in names if n.startswith("_Z")]
    if not tool or not mangled:
        return {n: n for n in names}
    try:
        out = subprocess.run([tool], input="\n".join(mangled), capture_output=True, text=True, timeout=10).stdout
        pretty = dict(zip(mangled, out.splitlines()))
    except (OSError, subprocess.TimeoutExpired):
        pretty = {}
    return {n: pretty.get(n, n) for n in names}


def check(obj: Path, backend: str, filename: str = "kernel.cu", runtime: frozenset[str] = frozenset()) -> list[Problem]:
    """What the object `obj` (a kernel file's own translation unit) does that a kernel file may not.

    runtime: symbols the backend's runtime defines (the CPU backend's entry points), allowed too.
    Problem.line is the submission's line where the object has line tables, else 0.
    """
    table = _dump(obj, "-t", "-r")
    undefined, defined = _symbols(table)
    sections = _relocations(table)
    code = _code(_dump(obj, "-d", "-r", "-l", "--no-show-raw-insn"), filename)
    bad = sorted(
        {
            n
            for n in undefined
            if not allowed(n, backend, runtime)
            and not (backend == "cuda" and n == "exit" and _device_stubs_only(n, code, sections.get(n, set())))
        }
    )
    redefined = sorted(n for n in defined if backend == "cuda" and _RUNTIME_DEFINITION.fullmatch(n))
    pretty = _demangle(bad + redefined)
    problems = []
    for name in bad:
        where = code.refs.get(name, "from data, such as a table of function pointers")
        reason = function_reason(pretty[name].split("(")[0].split("::")[-1]) or _WHY_CALL
        problems.append(Problem(_line(where), _at(where, f"calls {pretty[name]}"), reason))
    for name in redefined:
        problems.append(
            Problem(
                0,
                f"defines {pretty[name]}",
                "a kernel file may not define a function of the CUDA runtime (it would replace the runtime's own)",
            )
        )
    for mnemonic, where in code.traps:
        problems.append(
            Problem(
                _line(where),
                _at(where, f"a `{mnemonic}` instruction in host code"),
                "host code may not make system calls or switch the CPU mode",
            )
        )
    for mnemonic, where in code.clock_reads:
        problems.append(Problem(_line(where), _at(where, f"a `{mnemonic}` instruction"), _CLOCK_WHY))
    return problems


def _line(where: str) -> int:
    m = re.search(r":(\d+)$", where)
    return int(m.group(1)) if m else 0


def _at(where: str, what: str) -> str:
    """'mine.cu:12: calls mkdir', or 'calls mkdir (in g())' where the object has no line for it."""
    return f"{where}: {what}" if _line(where) else f"{what} ({where})"


def message(problems: list[Problem], filename: str = "kernel.cu") -> str:
    """One plain message: what the built code calls that it may not, and why."""
    shown = problems[:8]
    lines = [
        f"forbidden: {filename}, once compiled, calls what a kernel file may not "
        "(the kernel must do the work itself, in plain CUDA C++):"
    ]
    lines += [f"  {p.what}" + (f": {p.why}" if p.why != _WHY_CALL else "") for p in shown]
    if len(problems) > len(shown):
        lines.append(f"  ... and {len(problems) - len(shown)} more")
    if any(p.why == _WHY_CALL for p in problems):
        lines.append(_ALLOW_LIST)
    return "\n".join(lines)


def enforce(obj: Path, backend: str, filename: str = "kernel.cu", runtime: frozenset[str] = frozenset()) -> None:
    """Raise Forbidden (with message()) when check() finds anything."""
    problems = check(obj, backend, filename, runtime)
    if problems:
        raise Forbidden(message(problems, filename))
