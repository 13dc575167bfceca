"""A static scan of a kernel file, before it is compiled: what a submission may not use.

    problems = scan(source)          # [] when the file may be compiled
    message(problems, filename)      # one plain message for the learner

A submission must do the work itself, in its own kernels. So the scan refuses:
  - libraries that would do it instead: cuBLAS / cuBLASLt, CUTLASS / CuTe, cuDNN,
    torch (ATen, c10), and any `#include` outside a short allow-list (headers for
    threads, files, processes, signals or dlopen are named as such; no `..`);
  - library functions for loading code, processes, threads, system calls, files and
    descriptors, the environment, exits, signals and long jumps, by a distinctive name
    (fopen, getenv, _Exit...) wherever it appears, taken as a pointer or spelled in a
    string too. Common words (write, close, exit...) are left to the check of the built
    object (linkcheck.py), so a variable called `write` or `exit` is fine;
  - asm that is not plain inline PTX: asm labels (`f() asm("getenv")`), templates
    that are not written-out string literals, and host instructions, data directives
    or symbol references in a template (syscall, .byte, call, @plt);
  - code run at load (constructor/destructor/init_priority, section, weakref and
    ifunc attributes), `#pragma comment/weak/redefine_extname`, computed includes,
    `#include_next/#import/#embed`, questions about the grading machine's files
    (`__has_include`, `__has_embed`, `#pragma GCC dependency`), and what could spell any of the above: token
    pasting (##), \\u in code, keywords redefined by #define;
  - work hidden from the timer: streams of its own (cudaStreamCreate*,
    cudaStreamPerThread, graphs, host callbacks), device-wide settings.
Comments are not code: a comment that mentions cuBLAS is fine. The lexer ends lines where
g++ and nvcc do (\n, \r\n and a lone \r), joins line splices (backslash, horizontal
blanks including \f and \v, newline), reads %: as #, and knows raw strings R"d(...)d"
(a splice inside one is refused) and digit separators (1'000).

The scan takes time linear in the file (macro chains are resolved through an index), a file
over MAX_BYTES is refused without scanning, and a scan that outlasts its time limit refuses
the file rather than stall the grader.

Not caught: code run at load by a namespace-scope object's constructor (struct S
{S(){...}} s;) or any dynamic initialiser (static int x = f();): telling those apart
needs a parser. This is the friendly early message, not the enforcement: what the built
code calls is checked in the object itself (linkcheck.py), and the child process and the
parent's own checks stand behind both (see README, "Security model").
"""

from __future__ import annotations

import bisect
import re
import time
import unicodedata
from dataclasses import dataclass

MAX_BYTES = 1_000_000  # a kernel file is a few KB; a larger one is refused before anything reads it
SCAN_TIMEOUT_S = 10.0  # linear, so about 1 s for MAX_BYTES of macros on a slow core; a stall refuses the file
ALLOWED_INCLUDES = (
    "cuda_runtime.h",
    "cuda_runtime_api.h",
    "cuda.h",
    "device_launch_parameters.h",
    "vector_types.h",
    "cuda_fp16.h",
    "cuda_bf16.h",
    "cuda_fp8.h",
    "mma.h",
    "cuda_pipeline.h",
    "cuda_awbarrier.h",
    "cuda/pipeline",
    "cuda/barrier",
    "cooperative_groups.h",
    "cooperative_groups/memcpy_async.h",
    "cooperative_groups/reduce.h",
    "cstdint",
    "stdint.h",
    "cstddef",
    "stddef.h",
    "cstdio",
    "stdio.h",
    "cmath",
    "math.h",
    "cfloat",
    "float.h",
    "climits",
    "limits.h",
    "cassert",
    "assert.h",
    "cstring",
    "string.h",
    "cstdlib",
    "stdlib.h",
    "cstdbool",
    "stdbool.h",
    "cinttypes",
    "inttypes.h",
    "algorithm",
    "type_traits",
    "utility",
    "limits",
    "array",
    "numeric",
    "tuple",
    "initializer_list",
    "new",
    "iostream",
    "vector",
    "string",
    "memory",
    "functional",
    "stdexcept",
    "exception",
)
_ALLOWED_PREFIXES = ("cuda/std/",)
# refused headers with a reason of their own (the others: "not on the allow-list")
_HEADERS = [
    (
        r"thread|future|pthread\.h|threads\.h",
        "threads of your own are not allowed: do the work in the launcher's call, on the stream it is given",
    ),
    (
        r"fstream|filesystem|unistd\.h|fcntl\.h|dirent\.h|sys/.*",
        "files, descriptors and system calls are not allowed in a kernel file (printf to stdout is fine)",
    ),
    (r"spawn\.h|wait\.h", "starting processes is not allowed"),
    (r"dlfcn\.h", "loading libraries at run time is not allowed"),
    (r"csignal|signal\.h|csetjmp|setjmp\.h", "signals and long jumps are not allowed in a kernel file"),
]


@dataclass(frozen=True)
class Problem:
    line: int
    what: str  # the offending text
    why: str  # one sentence for the learner


_LIBRARIES = [
    (re.compile(r"\bcublas\w*", re.I), "cuBLAS/cuBLASLt does the GEMM for you"),
    (re.compile(r"\bcutlass\w*|\bcute\s*::", re.I), "CUTLASS/CuTe does the GEMM for you"),
    (re.compile(r"\bcudnn\w*", re.I), "cuDNN does the work for you"),
    (re.compile(r"\bcusparse\w*|\bcublasLt\w*", re.I), "a CUDA math library does the work for you"),
    (re.compile(r"\btorch\b|\bATen\b|\bat\s*::|\bc10\s*::"), "torch calls are not allowed in a kernel file"),
    # the CPU backend's own state (which blocks the access profile records, the race detector's flags)
    (
        re.compile(r"\bcuda_emu\w*|\b_*(tsan|ubsan|asan|sanitizer)_\w+", re.I),
        "the CPU backend's internals (its race detector and access profile) are not yours to read or change",
    ),
]

# Library functions a kernel file has no use for, by what they are for. A name also counts with
# leading underscores, __builtin_ or a 64 suffix (_exit, __write, __builtin_exit, open64).
_FUNCTIONS = {
    "loading libraries at run time is not allowed": "dlopen dlmopen dlsym dlvsym",
    "starting processes is not allowed": "system popen fork vfork clone clone3 execl execlp execle execv execvp execvpe execve execveat fexecve "
    "posix_spawn posix_spawnp",
    "threads of your own are not allowed: do the work in the launcher's call, on the stream it is given": "pthread_create thrd_create",
    "system calls are not allowed": "syscall sysenter ptrace mprotect mmap munmap mremap prctl",
    "file and descriptor I/O is not allowed in a kernel file (printf to stdout is fine)": "open openat creat fopen freopen fdopen tmpfile fileno write writev pwrite pwritev sendfile splice vmsplice "
    "ioctl fcntl close dup dup2 dup3 pipe socket connect unlink remove rename chdir",
    "the environment is not yours to read or change": "getenv secure_getenv setenv unsetenv putenv clearenv environ",
    "exits, signals and long jumps are not allowed in a kernel file": "exit _Exit abort atexit at_quick_exit quick_exit on_exit kill raise signal sigaction "
    "setjmp longjmp sigsetjmp siglongjmp",
}
# Common words: a variable or member may well be called `write` or `exit`, so the scan names them only with
# leading underscores (_exit, __write) or in asm; the built object's check (linkcheck.py) refuses the calls.
_COMMON = (
    "open creat write close dup pipe socket connect remove rename signal raise kill exit abort system fork clone splice"
).split()
_WHY = {name: why for why, names in _FUNCTIONS.items() for name in names.split()}
_DISTINCT = [n for n in _WHY if n not in _COMMON]
_NAME = r"(?:__builtin_)?(?:_*({d})|_+({c}))(?:64)?\b".format(d="|".join(_DISTINCT), c="|".join(_COMMON))


def function_reason(name: str) -> str | None:
    """Why a kernel file may not call the library function `name` (also _exit, __write, open64,
    __builtin_exit), or None when it is not one of those named here."""
    m = re.fullmatch(r"(?:__builtin_)?_*(\w+?)(?:64)?", name)
    return _WHY.get(m.group(1)) if m else None


_ASM_WORDS = ("asm", "__asm", "__asm__")
_ASM_QUALIFIERS = r"(?:\s*\b(?:volatile|__volatile__|__volatile|goto|inline|__inline__|__inline)\b)*"
_ASM_WHY = "host assembly that leaves the sandbox (system calls, raw bytes, calls into libraries) is not allowed"

# The one table: (where, pattern, why). Where: "bare" = code with comments and the insides of
# strings blanked; "code" = code with comments blanked; "strings" = every string literal's text
# (escapes decoded, adjacent literals joined); "asm" = the same for asm templates only.
_RULES = [("bare", p, why) for p, why in _LIBRARIES] + [
    # why None: the function's own reason, from _WHY
    ("bare", re.compile(r"\b" + _NAME), None),
    ("strings", re.compile(r"\b" + _NAME), None),  # a name for an asm label, an alias, or dlsym by other means
    (
        "bare",
        re.compile(r"\bstd\s*::\s*(thread|jthread|async)\b"),
        "threads of your own are not allowed: do the work in the launcher's call, on the stream it is given",
    ),
    (
        "bare",
        re.compile(r"\b(?:__)?(constructor|destructor|init_priority)(?:__)?\b"),
        "code that runs when the library is loaded or unloaded is not allowed",
    ),
    (
        "bare",
        re.compile(r"\b(?:__)?section(?:__)?\s*\("),  # .init_array, .ctors: code run at load
        "choosing the section of code or data is not allowed",
    ),
    (
        "bare",
        re.compile(r"\b(?:__)?(weakref|ifunc|symver)(?:__)?\s*\("),
        "weak references and ifunc resolvers are not allowed (they can reach any library function, or run at load)",
    ),
    (
        "code",
        re.compile(r"(#\s*pragma\s+|\b_Pragma\s*\(\s*\w*\"\s*)(comment|weak|redefine_extname)\b"),
        "linker directives and symbol aliases are not allowed",
    ),
    ("bare", re.compile(r"#\s*(include_next|import|embed)\b"), "only plain #include is allowed"),
    (
        "bare",
        re.compile(r"\b__has_(include|include_next|embed)\b"),
        "asking whether a file exists (__has_include, __has_embed) is not allowed: a kernel file must be"
        " the same program on every machine",
    ),
    (
        "code",
        re.compile(r"(#\s*pragma\s+|\b_Pragma\s*\(\s*\w*\"\s*)GCC\s+dependency\b"),
        "#pragma GCC dependency is not allowed (it asks about a file on the grading machine)",
    ),
    (
        "bare",
        re.compile(r"#\s*define\s+(if|for|while|switch|constexpr|else|do|asm|__asm|__asm__)\b"),
        "redefining a keyword is not allowed",
    ),
    ("bare", re.compile(r"##"), "token pasting (##) is not allowed (it can spell a forbidden name)"),
    (
        "bare",
        re.compile(r"\\[uU]"),
        "universal character names (\\u) in code are not allowed (they can spell a forbidden name)",
    ),
    (
        "bare",
        re.compile(
            r"\b(cudaStreamCreate\w*|cudaStreamPerThread|cudaStreamLegacy|cudaStreamNonBlocking"
            r"|cudaGraph\w*|cudaLaunchHostFunc|cudaStreamAddCallback|cudaStreamBeginCapture)\b"
        ),
        "launch on the stream you are given: other streams hide work from the timer",
    ),
    (
        "bare",
        re.compile(
            r"\b(cudaSetDevice|cudaDeviceReset|cudaDeviceSetLimit|cudaCtxResetPersistingL2Cache"
            r"|cudaDeviceSetCacheConfig|cudaProfilerStart|cudaProfilerStop)\b"
        ),
        "device-wide settings are not yours to change",
    ),
    # inline PTX is fine (cp.async, mma...): none of these words are PTX
    ("asm", re.compile(r"\b(syscall|sysenter|sysexit|rdtscp?|svc|int\s*\$?(0x80|128))\b", re.I), _ASM_WHY),
    (
        "asm",
        re.compile(
            r"\.(byte|[248]byte|short|hword|word|int|long|quad|octa|value|dc|ds|ascii|asciz|string\d*"
            r"|inst\w*|insn|incbin|fill|zero|skip|space|float|single|double|set|equ|equiv|symver"
            r"|weak\w*|globl|section|pushsection|text|data)\b",
            re.I,
        ),
        _ASM_WHY,
    ),
    ("asm", re.compile(r"\b(call|callq|jmp|jmpq)\b|@(plt|got\w*|tpoff|dtpoff)\b|%rip\b", re.I), _ASM_WHY),
    ("asm", re.compile(r"\b(" + "|".join(_WHY) + r")\b"), _ASM_WHY),
]

# lexer: comments, raw strings R"d(...)d", strings and chars, numbers (their ' is a digit separator)
_TOKEN = re.compile(
    r"""
    (?P<line>//[^\n]*)
  | (?P<block>/\*.*?(?:\*/|\Z))
  | (?<![\w$])(?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s]{0,16})\()(?P<rawbody>.*?)(?:\)(?P=delim)"|\Z)
  | (?P<str>")(?P<strbody>(?:[^"\\\n]|\\.)*)"?
  | (?P<chr>')(?P<chrbody>(?:[^'\\\n]|\\.)*)'?
  | (?<![\w$])(?P<num>\.?\d(?:[eEpP][+-]|[\w$.])*'[\w$](?:[eEpP][+-]|'[\w$]|[\w$.])*)
""",
    re.S | re.X,
)
_KIND = {"line": "line", "block": "block", "rawbody": "raw", "strbody": "str", "chrbody": "chr", "num": "num"}
_ESCAPE = re.compile(
    r"\\(x\{[0-9a-fA-F]*\}|o\{[0-7]*\}|u\{[0-9a-fA-F]*\}|N\{[^}\n]*\}|x[0-9a-fA-F]+|[0-7]{1,3}"
    r"|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)",
    re.S,
)


def _blank(text: str) -> str:
    return _NOT_NEWLINE.sub(" ", text) if "\n" in text else " " * len(text)


_NOT_NEWLINE = re.compile(r"[^\n]")


class _TooSlow(Exception):
    pass


class _Clock:
    """A deadline the scan's loops check (every 4096 steps): a file that outlasts it is refused, not waited on."""

    def __init__(self, seconds: float):
        self.end, self.steps = time.monotonic() + seconds, 0

    def tick(self) -> None:
        self.steps += 1
        if not self.steps & 4095 and time.monotonic() > self.end:
            raise _TooSlow


def _lex(text: str, clock: _Clock | None = None):
    """(code, bare, literals): the text with comments blanked; also with the insides of strings and
    chars blanked (all three the same length, so offsets and lines agree); and each string literal
    as (start, end, body start, body end, raw)."""
    code, bare, literals, last = [], [], [], 0
    tick = clock.tick if clock else lambda: None
    for m in _TOKEN.finditer(text):
        tick()
        kind = _KIND[m.lastgroup]
        if kind == "num":
            continue  # a number with a digit separator (1'000): kept as it is
        code.append(text[last : m.start()])
        bare.append(text[last : m.start()])
        last = m.end()
        if kind in ("line", "block"):
            code.append(_blank(m.group(0)))
            bare.append(_blank(m.group(0)))
            continue
        s, e = m.span({"raw": "rawbody", "str": "strbody", "chr": "chrbody"}[kind])
        code.append(m.group(0))
        bare.append(text[m.start() : s] + _blank(text[s:e]) + text[e : m.end()])
        if kind != "chr":
            literals.append((m.start(), m.end(), s, e, kind == "raw"))
    code.append(text[last:])
    bare.append(text[last:])
    return "".join(code), "".join(bare), literals


def strip_comments(source: str) -> str:
    """The source with comments blanked (newlines kept, so line numbers stay); strings kept."""
    return _lex(source)[0]


def _unescape(body: str) -> str:
    def one(m):
        e = m.group(1)
        try:
            if e[0] == "N" and len(e) > 1:
                return unicodedata.lookup(e[2:-1])
            if e[0] in "xuUo" and len(e) > 1:
                return chr(int(e[1:].strip("{}") or "0", 8 if e[0] == "o" else 16))
            if e[0] in "01234567":
                return chr(int(e, 8))
        except (KeyError, ValueError, OverflowError):
            return "?"
        return {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "a": "\a", "b": "\b"}.get(e, e)

    return _ESCAPE.sub(one, body)


def _line_ends(source: str) -> str:
    """Every line end as \n: g++ and nvcc end a line at \r\n, \n and a lone \r (a `//` comment too), and
    count it as one line, so line numbers agree."""
    return source.replace("\r\n", "\n").replace("\r", "\n") if "\r" in source else source


def _splice(source: str) -> tuple[str, list[int]]:
    """A backslash, horizontal blanks (space, tab, \f, \v; GCC also skips NUL) and a newline join lines (GCC
    does, with a warning): the text joined, the newlines moved after the joined line (so every line keeps its
    number), and where each join is in the new text. Line ends are \n already (_line_ends)."""
    if "\\" not in source:
        return source, []
    pieces, held, length, joins = [], 0, 0, []
    for line in source.split("\n"):
        splice = re.search(r"\\[ \t\f\v\0]*$", line)
        piece = line[: splice.start()] if splice else line + "\n" * (held + 1)
        pieces.append(piece)
        length += len(piece)
        held = held + 1 if splice else 0
        if splice:
            joins.append(length)
    return "".join(pieces)[:-1], joins


def _asm_words(bare: str) -> tuple[set[str], set[str]]:
    """asm and its spellings, plus the macros whose body uses one, through any chain of macros (and which of
    those take no arguments). Linear: each body is read once into an index word -> macros using it, and the
    chains are followed from asm outwards (a 290 KB file of chained #defines took 130 s done by rounds)."""
    defines = re.findall(r"^[ \t]*#[ \t]*define[ \t]+([\w$]+)(\(?)(.*)$", bare, re.M)
    users: dict[str, set[str]] = {}
    for name, _, body in defines:
        for word in set(re.findall(r"[\w$]+", body)):
            users.setdefault(word, set()).add(name)
    words, todo = set(_ASM_WORDS), list(_ASM_WORDS)
    while todo:
        for name in users.get(todo.pop(), ()):
            if name not in words:
                words.add(name)
                todo.append(name)
    return words, {name for name, paren, _ in defines if name in words and not paren} | set(_ASM_WORDS)


_BACK = 256  # how far back a declarator's end is looked for before an asm: keeps the scan linear
_DIRECTIVE = re.compile(r"[ \t]*#")
_DEFINE = re.compile(r"[ \t]*#[ \t]*define[ \t]+[\w$]+(\([^)]*\))?")
_ASM_CALL = re.compile(_ASM_QUALIFIERS + r"\s*\(")


def _paren_pairs(bare: str) -> dict[int, int]:
    """For each `)` the offset of its `(`: in code across lines (directive lines skipped), in a directive
    within its own line. One pass."""
    pairs, code, local, directive = {}, [], [], False
    for m in re.finditer(r"[()]|^[ \t]*#|\n", bare, re.M):
        c = m.group()
        if c == "\n" or c.endswith("#"):
            directive, local = c != "\n", []
            continue
        stack = local if directive else code
        if c == "(":
            stack.append(m.start())
        elif stack:
            pairs[m.start()] = stack.pop()
    return pairs


def _last_word(text: str) -> str:
    """The identifier `text` ends with (its last 64 characters: enough for a keyword)."""
    m = re.match(r"[\w$]+", text[-64:][::-1])
    return m.group(0)[::-1] if m else ""


def _ends_declarator(text: str, start: int, end: int, pairs: dict[int, int]) -> bool:
    """Whether text[start:end] ends like a declarator (a name, `)` or `]`): an asm there is a label, which
    gives the declaration another symbol's name (getenv). Not so after if/for/while (...), else or do."""
    window = text[max(start, end - _BACK) : end].rstrip()
    if not window:
        return False
    if window[-1] == "]":
        return True
    if window[-1] == ")":
        opening = pairs.get(max(start, end - _BACK) + len(window) - 1)
        if opening is None or opening < start:
            return True
        word = _last_word(text[max(start, opening - _BACK) : opening].rstrip())
        return word not in ("if", "for", "while", "switch", "constexpr")
    word = _last_word(window)
    return bool(word) and word not in ("else", "do", "__extension__")


def _asm(text: str, bare: str, literals: list, clock: _Clock):
    """Problems with asm as [(offset, what, why)]: labels, and templates that are not string literals;
    and each template's text as [(offset, text)], for the rules on "asm"."""
    found, templates = [], []
    words, plain = _asm_words(bare)
    starts = [lit[0] for lit in literals]
    flat = re.sub(r"(?m)^[ \t]*#.*$", lambda d: _blank(d.group(0)), bare)  # directive lines blanked
    pairs = _paren_pairs(bare)
    newlines = [m.start() for m in re.finditer("\n", bare)]
    for m in re.finditer(r"(?<![\w$])[\w$]+", bare):  # every identifier once; a set says which are asm
        clock.tick()
        word = m.group(0)
        if word not in words:
            continue
        i = bisect.bisect_left(newlines, m.start())
        line_start = newlines[i - 1] + 1 if i else 0
        define = _DEFINE.match(bare, line_start)
        if _DIRECTIVE.match(bare, line_start) and not (define and define.end() <= m.start()):
            continue  # #ifdef, #undef, or the name of a macro being defined
        if _ends_declarator(bare if define else flat, define.end() if define else 0, m.start(), pairs):
            found.append((m.start(), word, "asm labels are not allowed (they can name any library function)"))
            continue
        call = _ASM_CALL.match(bare, m.end())
        if word not in plain or not call:
            continue
        p, k, pieces = call.end(), bisect.bisect_left(starts, call.end()), []
        while True:  # the template: string literals, written out, then `:` or `)`
            p = re.compile(r"\s*").match(bare, p).end()
            if k == len(literals) or literals[k][0] != p:
                break
            s, e, bs, be, raw = literals[k]
            pieces.append(text[bs:be] if raw else _unescape(text[bs:be]))
            p, k = e, k + 1
        if bare[p : p + 1] in (":", ")"):
            templates.append((m.start(), "".join(pieces)))
        else:
            found.append((m.start(), word + "(...)", "an asm template must be written-out string literals (no macros)"))
    return found, templates


def _strings(text: str, bare: str, literals: list) -> list[tuple[int, str]]:
    """(offset, text) of every string literal, escapes decoded, adjacent literals ("gete" "nv") joined."""
    runs, end = [], None
    for s, e, ts, te, raw in literals:
        body = text[ts:te] if raw else _unescape(text[ts:te])
        if runs and _BETWEEN_LITERALS.fullmatch(bare, end, s):
            runs[-1][1].append(body)
        else:
            runs.append((s, [body]))
        end = e
    return [(s, "".join(parts)) for s, parts in runs]


_BETWEEN_LITERALS = re.compile(r"\s*(u8|[uUL])?")


def _includes(code: str) -> list[tuple[int, str, str]]:
    found = []
    for inc in re.finditer(r"^[ \t]*#[ \t]*include\b[ \t]*(.*)$", code, re.M):
        m = re.match(r"[<\"]([^>\"]+)[>\"]", inc.group(1))
        if not m:
            found.append((inc.start(), inc.group(0).strip(), "a computed #include is not allowed"))
            continue
        header = m.group(1).strip()
        if header.startswith("/") or ".." in header.split("/"):
            found.append(
                (inc.start(), f"#include <{header}>", "an #include path may not leave the include directories")
            )
        elif header not in ALLOWED_INCLUDES and not header.startswith(_ALLOWED_PREFIXES):
            why = next((w for p, w in _LIBRARIES if p.search(header)), None)
            why = why or next((w for p, w in _HEADERS if re.fullmatch(p, header)), None)
            found.append((inc.start(), f"#include <{header}>", why or "this header is not on the allow-list"))
    return found


def too_large(size: int) -> Problem | None:
    """The Problem of a kernel file of `size` bytes when it is over MAX_BYTES (readers check the size
    before reading: a file is refused without ever being held in memory)."""
    if size <= MAX_BYTES:
        return None
    return Problem(
        1,
        f"{size / 1e6:.1f} MB",
        f"a kernel file may be at most {MAX_BYTES / 1e6:g} MB: compute tables in code rather than writing them out",
    )


def scan(source: str, timeout: float | None = None) -> list[Problem]:
    """Everything forbidden in `source`, in order of lines, one per line (empty list: may be compiled).

    A file over MAX_BYTES, or one whose scan outlasts `timeout` seconds (default: the compile time limit,
    procs.COMPILE_TIMEOUT_S), is refused with one Problem that says so.
    """
    big = too_large(len(source.encode("utf-8", "surrogatepass")))
    if big:
        return [big]
    if timeout is None:
        from grader.compile.procs import COMPILE_TIMEOUT_S

        timeout = COMPILE_TIMEOUT_S
    try:
        return _scan(source, _Clock(timeout))
    except _TooSlow:
        return [
            Problem(
                1,
                "the whole file",
                f"the scan for forbidden constructs did not finish within {timeout:g} s "
                "(the compile time limit): simplify the file (fewer macros)",
            )
        ]


def _scan(source: str, clock: _Clock) -> list[Problem]:
    text, joins = _splice(_line_ends(source.lstrip("\ufeff")))
    code, bare, literals = _lex(text, clock)
    # digraphs are tokens (not in strings): %:%: is ##, %: is # (same length, so offsets stay)
    code, bare = (t.replace("%:%:", "##  ").replace("%:", "# ") for t in (code, bare))
    asm_found, templates = _asm(text, bare, literals, clock)
    found = _includes(code) + asm_found
    for s, e, _, _, raw in literals:
        # a raw string keeps its backslash-newlines: joining them could end it early here but not for g++
        if raw and bisect.bisect_right(joins, s) < bisect.bisect_left(joins, e):
            found.append((s, 'R"(...)"', "a backslash at the end of a line inside a raw string is not allowed"))
    texts = {"bare": [(0, bare)], "code": [(0, code)], "strings": _strings(text, bare, literals), "asm": templates}
    for where, pattern, why in _RULES:
        for offset, chunk in texts[where]:
            for m in pattern.finditer(chunk):
                clock.tick()
                found.append(
                    (
                        offset + m.start() if where in ("bare", "code") else offset,
                        m.group(0).strip(),
                        why if why is not None else _WHY[next(g for g in m.groups() if g)],
                    )
                )
    newlines = [m.start() for m in re.finditer("\n", text)]
    problems, seen = [], set()
    for line, (_offset, what, why) in sorted(
        ((bisect.bisect_left(newlines, f[0]) + 1, f) for f in found), key=lambda lf: lf[0]
    ):
        if line not in seen:
            seen.add(line)
            problems.append(Problem(line, what, why))
    return problems


def message(problems: list[Problem], filename: str = "kernel.cu") -> str:
    """A plain message: what is forbidden, where, why, and what is allowed."""
    shown = problems[:5]
    lines = [
        f"forbidden: {filename} uses what a submission may not (the kernel must do the work itself, in plain CUDA C++):"
    ]
    for p in shown:
        lines.append(f"  {filename}:{p.line}: {p.what}: {p.why}")
    if len(problems) > len(shown):
        lines.append(f"  ... and {len(problems) - len(shown)} more")
    if any("#include" in p.what for p in problems):
        lines.append(
            "Allowed headers: " + ", ".join(f"<{h}>" for h in ALLOWED_INCLUDES[:14]) + ", the C "
            "standard headers (<cstdint>, <cmath>, <cstdio>, <cstdlib>, ...), a few C++ ones "
            "(<algorithm>, <array>, <vector>, <iostream>, ...) and <cuda/std/...>."
        )
    return "\n".join(lines)
