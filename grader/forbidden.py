"""A static scan of a kernel file, before it is compiled: what a submission may not use.

    problems = scan(source)          # [] when the file may be compiled
    message(problems, filename)      # one plain message for the learner

A submission must do the work itself, in its own kernels. So the scan refuses:
  - libraries that would do it instead: cuBLAS / cuBLASLt, CUTLASS / CuTe, cuDNN,
    torch (ATen, c10), and any `#include` outside a short allow-list;
  - ways around the contract or the sandbox: dlopen/dlsym, system/popen/fork/exec,
    threads, raw syscalls and file or descriptor I/O, code run at library load
    (constructor attributes), `#pragma comment(lib, ...)`, computed `#include`s
    and token pasting (which could spell any of the above);
  - work hidden from the timer: streams of its own (cudaStreamCreate*,
    cudaStreamPerThread, graphs, host callbacks).
Comments are not code: a comment that mentions cuBLAS is fine.

This is a first line, not the security boundary: the child process and the
parent's own checks are (see README, "Security model"). A determined author of
native code can get past any static scan; run untrusted batches in a container.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

ALLOWED_INCLUDES = (
    "cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "device_launch_parameters.h", "vector_types.h",
    "cuda_fp16.h", "cuda_bf16.h", "mma.h", "cuda_pipeline.h", "cuda_awbarrier.h",
    "cuda/pipeline", "cuda/barrier", "cooperative_groups.h", "cooperative_groups/memcpy_async.h",
    "cooperative_groups/reduce.h",
    "cstdint", "stdint.h", "cstddef", "stddef.h", "cstdio", "stdio.h", "cmath", "math.h",
    "cfloat", "float.h", "climits", "limits.h", "cassert", "assert.h", "cstring", "string.h",
    "algorithm", "type_traits", "utility", "limits", "array",
)
_ALLOWED_PREFIXES = ("cuda/std/",)


@dataclass(frozen=True)
class Problem:
    line: int
    what: str      # the offending text
    why: str       # one sentence for the learner


# (pattern on code without comments, reason). Case-insensitive where it says so.
_LIBRARIES = [
    (re.compile(r"\bcublas\w*", re.I), "cuBLAS/cuBLASLt does the GEMM for you"),
    (re.compile(r"\bcutlass\w*|\bcute\s*::", re.I), "CUTLASS/CuTe does the GEMM for you"),
    (re.compile(r"\bcudnn\w*", re.I), "cuDNN does the work for you"),
    (re.compile(r"\bcusparse\w*|\bcublasLt\w*", re.I), "a CUDA math library does the work for you"),
    (re.compile(r"\btorch\b|\bATen\b|\bat\s*::|\bc10\s*::"), "torch calls are not allowed in a kernel file"),
]
_CONSTRUCTS = [
    (re.compile(r"\b(dlopen|dlsym|dlmopen)\b"), "loading libraries at run time is not allowed"),
    (re.compile(r"\b(system|popen|fork|vfork|execl|execlp|execle|execv|execvp|execve|posix_spawn\w*)\s*\("),
     "starting processes is not allowed"),
    (re.compile(r"\b(syscall|ptrace|mprotect|mmap|munmap|prctl)\b"), "system calls are not allowed"),
    (re.compile(r"\b(pthread_create|thrd_create|clone)\s*\(|\bstd\s*::\s*(thread|jthread|async)\b"),
     "threads of your own are not allowed: do the work in the launcher's call, on the stream it is given"),
    (re.compile(r"\b(open|openat|creat|fopen|freopen|fdopen|tmpfile|write|writev|pwrite|pwritev|sendfile|splice"
                r"|vmsplice|ioctl|fcntl|close|dup|dup2|dup3|pipe|socket|connect|kill"
                r"|getenv|setenv|putenv|unlink|remove|rename|chdir|signal|sigaction|raise|_exit|exit|abort"
                r"|atexit|at_quick_exit|quick_exit|setjmp|longjmp)\s*\("),
     "file, process and environment calls are not allowed in a kernel file"),
    (re.compile(r"__attribute__\s*\(\(\s*(constructor|destructor)"), "code that runs at library load is not allowed"),
    (re.compile(r"#\s*pragma\s+comment"), "linker directives are not allowed"),
    (re.compile(r"##"), "token pasting (##) is not allowed (it can spell a forbidden name)"),
    (re.compile(r"\b(cudaStreamCreate\w*|cudaStreamPerThread|cudaStreamLegacy|cudaStreamNonBlocking"
                r"|cudaGraph\w*|cudaLaunchHostFunc|cudaStreamAddCallback|cudaStreamBeginCapture)\b"),
     "launch on the stream you are given: other streams hide work from the timer"),
    (re.compile(r"\b(cudaSetDevice|cudaDeviceReset|cudaDeviceSetLimit|cudaCtxResetPersistingL2Cache"
                r"|cudaDeviceSetCacheConfig|cudaProfilerStart|cudaProfilerStop)\b"),
     "device-wide settings are not yours to change"),
]
_HOST_ASM = re.compile(r"\b(syscall|sysenter|int\s*\$?0x80|rdtsc)\b", re.I)


def strip_comments(source: str) -> str:
    """The source with comments blanked (newlines kept, so line numbers stay); strings kept."""
    out, i, n = [], 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in source[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            out.append(source[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _normalise(source: str) -> str:
    # digraph %: is #; a backslash-newline joins lines (keep a newline for numbering)
    text = source.replace("%:", "#")
    text = re.sub(r"\\\r?\n", lambda m: "", text)
    return text


def scan(source: str) -> list[Problem]:
    """Everything forbidden in `source`, in order of lines (empty list: may be compiled)."""
    code = strip_comments(_normalise(source))
    problems: list[Problem] = []
    lines = code.splitlines()
    for no, line in enumerate(lines, 1):
        inc = re.match(r"\s*#\s*include\b\s*(.*)$", line)
        if inc:
            m = re.match(r"[<\"]([^>\"]+)[>\"]", inc.group(1))
            if not m:
                problems.append(Problem(no, line.strip(), "a computed #include is not allowed"))
                continue
            header = m.group(1).strip()
            if header not in ALLOWED_INCLUDES and not header.startswith(_ALLOWED_PREFIXES):
                why = next((w for p, w in _LIBRARIES if p.search(header)), None)
                problems.append(Problem(no, f"#include <{header}>",
                                        why or "only the CUDA runtime and standard headers are allowed"))
            continue
        for pattern, why in _LIBRARIES + _CONSTRUCTS:
            m = pattern.search(line)
            if m:
                problems.append(Problem(no, m.group(0).strip(), why))
                break
        for m in re.finditer(r"\b(asm|__asm__|__asm)\b", line):
            # inline PTX is fine (cp.async, mma...); host instructions that leave the sandbox are not
            if _HOST_ASM.search(line[m.end():]):
                problems.append(Problem(no, "asm(...)", "host assembly that makes system calls is not allowed"))
                break
    return problems


def message(problems: list[Problem], filename: str = "kernel.cu") -> str:
    """A plain message: what is forbidden, where, why, and what is allowed."""
    shown = problems[:5]
    lines = [f"forbidden: {filename} uses what a submission may not "
             "(the kernel must do the work itself, in plain CUDA C++):"]
    for p in shown:
        lines.append(f"  {filename}:{p.line}: {p.what}: {p.why}")
    if len(problems) > len(shown):
        lines.append(f"  ... and {len(problems) - len(shown)} more")
    if any("#include" in p.what for p in problems):
        lines.append("Allowed headers: " + ", ".join(f"<{h}>" for h in ALLOWED_INCLUDES[:14]) + ", the C "
                     "standard headers (<cstdint>, <cmath>, <cstdio>, ...) and <cuda/std/...>.")
    return "\n".join(lines)
