"""Source rewrite that turns a CUDA kernel file into host C++ for cuda_emu.h.

Only what a header cannot do is rewritten, and every edit keeps line numbers:
  kern<<<g, b, smem, stream>>>(args)  ->  ::cuda_emu::launch("kern", __LINE__, fibers, g, b, smem, stream, kern, args)
  extern __shared__ T name[];         ->  T* name = (T*)::cuda_emu::dyn_smem("name");
  __shared__ T a[N];                  ->  same, plus a registration for the race detector
  __device__ / __constant__ T g[N];   ->  same, plus a registration as device memory (globals.cpp)
  #pragma unroll [N]                  ->  #pragma GCC unroll N (bare: dropped)
  #include <cuda_runtime.h> etc.      ->  dropped
  __noinline__                        ->  __attribute__((noinline)) (as a macro it broke libstdc++'s own
                                          __attribute__((__noinline__)): GCC 13's headers, <memory> on 12)
<cooperative_groups.h>, <cuda_pipeline.h> and <cuda_pipeline_primitives.h> are the backend's own
headers (grader/compile/cpu, first on g++'s include path; nvcc keeps NVIDIA's).
Constructs the CPU backend cannot run raise UnsupportedConstruct with the line. rewrite() runs in a child
with a time and memory limit (grader.compile.bounded): the submission's text never costs the grader more.
Scanning works on a copy with comments and string literals blanked out.
"""

from __future__ import annotations

import re

from . import ppexpr


class UnsupportedConstruct(Exception):
    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message

    def __reduce__(self):  # picklable with its two arguments
        return type(self), (self.line, self.message)


class LaunchSyntaxError(UnsupportedConstruct):
    """Not a limit of the CPU backend: nvcc rejects this launch too (a compile error)."""


class Rewritten:
    """The host C++ (`text`) and whether the file synchronises threads (`uses_barriers`: fibers needed).
    A plain class: the rewrite's child (grader.compile.bounded) starts faster without dataclasses."""

    def __init__(self, text: str, uses_barriers: bool):
        self.text, self.uses_barriers = text, uses_barriers


_DROPPED_INCLUDES = re.compile(
    r"^\s*#\s*include\s*[<\"](cuda_runtime(_api)?\.h|cuda\.h|device_launch_parameters\.h|device_functions\.h"
    r"|cuda_fp16\.h|cuda_fp16\.hpp|c10/cuda/.*|ATen/cuda/.*|sm_\d+_intrinsics\.h|vector_types\.h)[>\"]"
)
# <cooperative_groups.h> is the backend's own header (grader/compile/cpu, first on the include path).
_CG_INCLUDE = re.compile(r"^\s*#\s*include\s*[<\"]cooperative_groups/reduce\.h[>\"]")
# What the CPU backend runs instead of the asynchronous-copy APIs it refuses.
_PIPELINE_HINT = (
    "; write the copies with the primitives of <cuda_pipeline.h> instead: __pipeline_memcpy_async(dst_shared, "
    "src_global, 4/8/16 bytes[, zfill]), __pipeline_commit() and __pipeline_wait_prior(N) (cp.async on sm_80+; "
    "the CPU backend runs them, landing each copy only when a wait covers it)"
)
_UNSUPPORTED_INCLUDES = {
    "cooperative_groups/": "this cooperative groups header",
    "mma.h": "tensor-core WMMA (<mma.h>)",
    "cuda/pipeline": "cuda::pipeline (<cuda/pipeline>)",
    "cuda_awbarrier": "cuda::barrier / __mbarrier (<cuda_awbarrier.h>)",
    "cuda/barrier": "cuda::barrier (<cuda/barrier>)",
    "cublas": "cuBLAS",
    "cuda_bf16": "bfloat16 (<cuda_bf16.h>)",
    "cute/": "CUTLASS/CuTe",
    "cutlass/": "CUTLASS",
}
_UNSUPPORTED_TOKENS = {
    r"\basm\b|\b__asm__\b": "inline PTX assembly (asm)",
    r"\bmemcpy_async\b|\bnvcuda\s*::\s*experimental\b|\bcuda\s*::\s*(pipeline\w*|make_pipeline)\b"
    r"|\b__pipeline_(?!(memcpy_async|commit|wait_prior)\b)\w+|\b__cp_async\w*": "asynchronous copies (cp.async) "
    "other than the __pipeline_* primitives",
    r"\b(wmma|nvcuda)\s*::": "tensor-core WMMA",
    r"\btex[123]D\w*\b|\btexture\s*<|\bcudaTextureObject_t\b|\bsurf[123]D\w*\b": "textures and surfaces",
    r"\bcudaLaunchCooperativeKernel\b|\bthis_grid\b|\bgrid_group\b": "grid-wide synchronization",
    r"\b(this_cluster|cluster_group|coalesced_threads|coalesced_group|labeled_partition|binary_partition"
    r"|inclusive_scan|exclusive_scan|this_multi_grid)\b": "this part of cooperative groups",
    r"\b__nanosleep\b": "__nanosleep (a spin-wait on other blocks would never end: blocks run one after another)",
    r"\b__(shfl|shfl_up|shfl_down|shfl_xor|ballot|any|all)\s*\(": "the pre-CUDA-9 warp intrinsics without _sync "
    "(use __shfl_sync(0xffffffff, ...) and friends)",
    r"\bcudaMallocManaged\b|\bcudaMallocHost\b|\bcudaStreamCreate\w*\b|\bcudaEventCreateFromEGLSync\b|\bcudaIpc\w*": "this runtime API call (streams, managed or pinned memory)",
    # device memory that the access profile and the host-access check would not watch (a __device__ array is)
    r"\b__managed__\b": "__managed__ variables (managed memory: declare a __device__ array, or cudaMalloc)",
    r"\bcudaLaunchKernel\w*\b": "cudaLaunchKernel (launch with kernel<<<grid, block, shared, stream>>>(...))",
}
_BARRIER = re.compile(
    r"\b(__syncthreads\w*|__syncwarp|__shfl\w*_sync|__ballot_sync|__any_sync|__all_sync"
    r"|__activemask|__match\w*_sync|__reduce\w*_sync|cooperative_groups)\b"
)
_IDENT = re.compile(r"[A-Za-z_]\w*")


def _blank(src: str) -> str:
    """The source with comments, string and char literals replaced by spaces (newlines kept)."""
    out = list(src)
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            if c == '"' or j - i <= 8:  # keep digit separators like 1'000 harmless
                for k in range(i + 1, j - 1):
                    if out[k] != "\n":
                        out[k] = " "
            i = j
            continue
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _match_forward(code: str, i: int) -> int:
    """Index just past the bracket group starting at code[i] in '([{'."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = []
    for j in range(i, len(code)):
        c = code[j]
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if not stack or stack.pop() != c:
                return -1
            if not stack:
                return j + 1
    return -1


def _split_top(code: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of the comma-separated parts of code[start:end] at bracket depth 0."""
    parts, depth, s = [], 0, start
    for j in range(start, end):
        c = code[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append((s, j))
            s = j + 1
    parts.append((s, end))
    return parts


class _Edits:
    def __init__(self, src: str):
        self.src = src
        self.edits: list[tuple[int, int, str]] = []

    def replace(self, start: int, end: int, text: str):
        # Keep the line count: pad with the newlines the replaced span had.
        missing = self.src.count("\n", start, end) - text.count("\n")
        self.edits.append((start, end, text + "\n" * max(missing, 0)))

    def apply(self) -> str:
        out, pos = [], 0
        for start, end, text in sorted(self.edits):
            out.append(self.src[pos:start])
            out.append(text)
            pos = end
        out.append(self.src[pos:])
        return "".join(out)


def _arch_condition(kind: str, rest: str, line: int) -> bool | None:
    """The value of an `#if/#ifdef/#ifndef/#elif` line that tests __CUDA_ARCH__, as this backend's
    preprocessor sees it (undefined, so 0); None when the line holds anything else to evaluate (a macro).
    Evaluated by ppexpr (never Python's eval: the text is the submission's), in 64 bits."""
    if kind in ("ifdef", "ifndef"):
        return kind == "ifndef"
    expr = re.sub(r"defined\s*\(\s*__CUDA_ARCH__\s*\)|defined\s+__CUDA_ARCH__|\b__CUDA_ARCH__\b", "0", rest)
    try:
        v = ppexpr.value(expr)
    except ppexpr.Invalid as e:
        raise LaunchSyntaxError(line, str(e)) from None
    except ppexpr.Unsupported as e:
        raise UnsupportedConstruct(line, f"{e}: the CPU backend evaluates an #if on __CUDA_ARCH__ itself") from None
    return None if v is None else v != 0


def _device_only_blanked(code: str) -> str:
    """code with the `#if ... __CUDA_ARCH__` branches this backend does not compile blanked (it compiles
    as nvcc's host pass: __CUDA_ARCH__ undefined), so that what is refused is what would run here."""
    lines = code.split("\n")
    # one frame per open #if that tests __CUDA_ARCH__: [depth, whether the live branch is taken already,
    # whether the current branch is blanked]
    stack: list[list] = []
    depth = 0
    for i, line in enumerate(lines):
        d = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", line)
        if d:
            kind, rest = d.group(1), d.group(2)
            top = stack[-1] if stack and stack[-1][0] == depth else None
            if kind.startswith("if"):
                depth += 1
                if "__CUDA_ARCH__" in rest and not (stack and stack[-1][2]):
                    value = _arch_condition(kind, rest, i + 1)
                    if value is None:  # not ours to evaluate: the old reading (a device-only branch)
                        value = bool(re.search(r"!\s*defined", rest)) or kind == "ifndef"
                    stack.append([depth, value, not value])
            elif kind == "elif" and top is not None:
                value = _arch_condition("if", rest, i + 1)
                taken = top[1]
                top[2] = taken or value is False
                top[1] = taken or bool(value)
            elif kind == "else" and top is not None:
                top[2] = top[1]
                top[1] = True
            elif kind == "endif":
                if top is not None:
                    stack.pop()
                depth -= 1
            continue
        if any(frame[2] for frame in stack):
            lines[i] = " " * len(line)
    return "\n".join(lines)


_CG_SUPPORTED = (
    "; of cooperative groups it runs the thread block, tiled_partition<N> tiles of up to 32 threads, "
    "sync, shuffles, ballot, any/all and reduce"
)


# nvcc compiles a file twice: a kernel's body in the device pass (__CUDA_ARCH__ defined), the launchers in
# the host pass. This backend compiles once, as the host pass, so a branch on whether __CUDA_ARCH__ is
# defined would run here the code that a GPU never runs. A comparison (`__CUDA_ARCH__ >= 800`) is an
# architecture's fast path with a fallback, which is what runs here.
_ARCH_BRANCH = re.compile(r"^[ \t]*#[ \t]*(?:ifdef|ifndef|if|elif)\b(.*\b__CUDA_ARCH__\b.*)$", re.M)
_ARCH_COMPARED = re.compile(r"__CUDA_ARCH__\s*(?:[<>]=?|[!=]=)\s*(\d+)|(\d+)\s*(?:[<>]=?|[!=]=)\s*__CUDA_ARCH__")
LOWEST_ARCH = 750  # nvcc 13's lowest target (sm_75): a comparison with a number up to it is a test of "defined"


def _arch_version_test(condition: str) -> bool:
    """Whether every comparison of __CUDA_ARCH__ in `condition` is with an architecture past LOWEST_ARCH
    (then this backend runs the branch of an older GPU); False for a bare test of whether it is defined."""
    found = [int(a or b) for a, b in _ARCH_COMPARED.findall(condition)]
    bare = re.sub(_ARCH_COMPARED, "", condition)
    bare = re.sub(r"defined\s*\(\s*__CUDA_ARCH__\s*\)\s*&&", "", bare)  # `defined(X) && X >= 800` is a version
    return bool(found) and all(n > LOWEST_ARCH for n in found) and "__CUDA_ARCH__" not in bare


def _check_unsupported(code: str, src: str):
    for m in _ARCH_BRANCH.finditer(code):
        if not _arch_version_test(m.group(1)):
            raise UnsupportedConstruct(
                _line_of(code, m.start()),
                "a branch on whether __CUDA_ARCH__ is defined cannot be graded on the CPU backend: nvcc compiles a "
                "kernel's body only with it defined (the device pass), this backend only without it, so the two "
                "would run different code (to grade it here, branch on a version instead: with "
                "#if __CUDA_ARCH__ >= 800 the CPU backend runs the fallback)",
            )
    code = _device_only_blanked(code)
    for m in re.finditer(r"^\s*#\s*include\s*[<\"]([^>\"]+)[>\"]", src, re.M):
        if _CG_INCLUDE.match(m.group(0)):
            continue
        for key, what in _UNSUPPORTED_INCLUDES.items():
            if key in m.group(1):
                raise UnsupportedConstruct(
                    _line_of(src, m.start()),
                    f"{what} is not supported by the CPU backend" + _hint(what),
                )
    for pattern, what in _UNSUPPORTED_TOKENS.items():
        m = re.search(pattern, code)
        if m:
            name = m.group(0).strip("(").strip()
            label = what if name in what else f"{what}: {name}"
            if "asm" in what and _asm_is_cp_async(code, src, m):
                label = "inline PTX cp.async (asm)"
            raise UnsupportedConstruct(
                _line_of(code, m.start()), f"{label} is not supported by the CPU backend" + _hint(label)
            )


def _hint(what: str) -> str:
    if "cooperative" in what and "memcpy_async" not in what:
        return _CG_SUPPORTED
    if any(k in what for k in ("pipeline", "memcpy_async", "cp.async")):
        return _PIPELINE_HINT
    return ""


def _asm_is_cp_async(code: str, src: str, m: re.Match) -> bool:
    """Whether the asm statement at m copies with cp.async (its string is blanked in `code`)."""
    i = code.find("(", m.end())
    end = _match_forward(code, i) if i >= 0 else -1
    return "cp.async" in src[m.start() : end if end > 0 else len(src)]


def _rewrite_directives(src: str, code: str, edits: _Edits):
    for m in re.finditer(r"^[ \t]*#[ \t]*(include|pragma)\b.*$", code, re.M):
        line = src[m.start() : m.end()]
        if m.group(1) == "include" and _DROPPED_INCLUDES.match(line):
            edits.replace(m.start(), m.end(), "")
        elif m.group(1) == "include" and _CG_INCLUDE.match(line):
            edits.replace(m.start(), m.end(), "#include <cooperative_groups.h>")
        elif m.group(1) == "pragma":
            u = re.match(r"\s*#\s*pragma\s+unroll\b\s*\(?\s*(\d*)\s*\)?\s*$", code[m.start() : m.end()])
            if u:  # GCC needs a literal count; a bare or symbolic one is dropped
                edits.replace(m.start(), m.end(), f"#pragma GCC unroll {u.group(1)}" if u.group(1) else "")


def _rewrite_keywords(code: str, edits: _Edits):
    for m in re.finditer(r"\b__noinline__\b", code):
        edits.replace(m.start(), m.end(), "__attribute__((noinline))")


def _decl_names(code: str, start: int, end: int) -> list[tuple[str, int, int]]:
    """(name, name_start, declarator_end) for each declarator of a declaration code[start:end]."""
    names = []
    for s, e in _split_top(code, start, end):
        part = code[s:e]
        cut = len(part)
        for ch in "[=":
            k = part.find(ch)
            if k >= 0:
                cut = min(cut, k)
        idents = list(_IDENT.finditer(part[:cut]))
        if idents:
            names.append((idents[-1].group(), s + idents[-1].start(), e))
    return names


_SCOPE_OPENER = re.compile(r"(\bnamespace\b[\w\s:]*|\bextern\s*\"[^\"]*\"\s*)$")


def _in_body(code: str, pos: int) -> bool:
    """Is `pos` inside a function or a class (not at namespace scope, nor in an extern "C" block)?"""
    scopes: list[bool] = []  # per open brace: is it a body (not a namespace or extern block)?
    for b in re.finditer(r"[{}]", code[:pos]):
        if b.group() == "{":
            scopes.append(not _SCOPE_OPENER.search(code[max(0, b.start() - 100) : b.start()]))
        elif scopes:
            scopes.pop()
    return any(scopes)


def _rewrite_shared(src: str, code: str, edits: _Edits):
    for m in re.finditer(r"\b__shared__\b", code):
        end = code.find(";", m.end())
        if end < 0:
            continue
        ext = re.search(r"\bextern\s+$", code[max(0, m.start() - 40) : m.start()])
        if ext:
            start = m.start() - (len(code[max(0, m.start() - 40) : m.start()]) - ext.start())
            names = _decl_names(code, m.end(), end)
            if len(names) != 1 or "[" not in code[names[0][1] : end]:
                raise UnsupportedConstruct(
                    _line_of(src, m.start()),
                    "write extern __shared__ as one array per declaration: extern __shared__ float smem[];",
                )
            name, ns, _ = names[0]
            typ = re.sub(r"__align__\s*\(\s*\d+\s*\)|\balignas\s*\(\s*\d+\s*\)", "", src[m.end() : ns]).strip()
            rest = src[ns + len(name) : end].strip()
            inner = rest[rest.index("]") + 1 :] if rest.startswith("[") else rest
            ptr = f"{typ} (*{name}){inner}" if inner else f"{typ}* {name}"
            cast = f"{typ} (*){inner}" if inner else f"{typ}*"
            edits.replace(start, end, f'{ptr} = reinterpret_cast<{cast}>(::cuda_emu::dyn_smem("{name}"))')
            continue
        static = re.search(r"\bstatic\s+$", code[max(0, m.start() - 40) : m.start()])
        if static:  # __shared__ already expands to static
            edits.replace(m.start() - (len(code[max(0, m.start() - 40) : m.start()]) - static.start()), m.start(), "")
        # in a function, each time the declaration runs: the array counts in the running kernel (a __device__
        # function's counts in each kernel that calls it, as nvcc counts it)
        use = _in_body(code, m.start())
        regs = "".join(
            f' static ::cuda_emu::SharedReg cuda_emu_reg_{name}({name}, "{name}");'
            + (f" cuda_emu_reg_{name}.use();" if use else "")
            for name, _, _ in _decl_names(code, m.end(), end)
        )
        edits.replace(end + 1, end + 1, regs)


def _rewrite_device_variables(src: str, code: str, edits: _Edits):
    """A namespace-scope __device__ or __constant__ variable is device memory: registered with the runtime, which
    reports host code that touches it (on a GPU host code reaches only its own shadow copy) and watches it for races
    between blocks as it does cudaMalloc's blocks."""
    for m in re.finditer(r"\b(__device__|__constant__)\b", code):
        if re.search(r"\bextern\s+$|\btemplate\s*<[^;{}]*>\s*$", code[max(0, m.start() - 200) : m.start()]):
            continue
        j = m.end()
        while j < len(code) and code[j] not in "(;={[":
            j += 1
        if j >= len(code) or code[j] == "(" or "__host__" in code[m.end() : j]:
            continue  # a function
        if "__device__" in code[m.end() : j] or "__constant__" in code[m.end() : j]:
            continue  # the first of two qualifiers: the second one registers it
        k = j
        while k < len(code) and code[k] != ";":  # past an initializer's braces
            if code[k] in "{[(":
                e = _match_forward(code, k)
                if e < 0:
                    break
                k = e
                continue
            k += 1
        if k >= len(code):
            continue
        if _in_body(code, m.start()):
            continue  # inside a function (a static __device__ local) or a class
        regs = "".join(
            f' static ::cuda_emu::DeviceVarReg cuda_emu_dreg_{name}({name}, "{name}", {_line_of(code, m.start())});'
            for name, _, _ in _decl_names(code, m.end(), k)
        )
        edits.replace(k + 1, k + 1, regs)


def _body_after(code: str, paren: int) -> int:
    """The position of the `{` of the body after the parameter list opening at `paren`, -1 when none follows
    (a declaration, a call)."""
    p_end = _match_forward(code, paren) if paren >= 0 else -1
    k = p_end
    while 0 < k < len(code) and code[k] not in "{;":
        k += 1
    return k if p_end > 0 and k < len(code) and code[k] == "{" else -1


def _rewrite_launch_bounds(code: str, edits: _Edits):
    """`__launch_bounds__(args) ... kernel(params) {` gets `::cuda_emu::launch_bounds(LINE, args);` as the first
    statement of its body (on the brace's line), so a launch of more threads than the bounds fails as on a GPU; the
    arguments are evaluated there, where the kernel's template parameters are in scope. Bounds given on a
    declaration only bind the kernel's definition (as nvcc applies them)."""
    declared: dict[str, tuple[int, str]] = {}  # kernel -> (line, args) of bounds on a declaration
    bounded: set[int] = set()
    for m in re.finditer(r"\b__launch_bounds__\s*\(", code):
        a_end = _match_forward(code, m.end() - 1)
        p = code.find("(", a_end) if a_end > 0 else -1
        if p < 0:
            continue
        line, args, body = _line_of(code, m.start()), code[m.end() : a_end - 1], _body_after(code, p)
        if body < 0:
            names = _IDENT.findall(code[a_end:p])
            if names:
                declared.setdefault(names[-1], (line, args))
            continue
        bounded.add(body)
        edits.replace(body + 1, body + 1, f" ::cuda_emu::launch_bounds({line}, {args});")
    for name, (line, args) in declared.items():
        for d in re.finditer(rf"\b{re.escape(name)}\s*\(", code):
            body = _body_after(code, d.end() - 1)
            head = code[max(code.rfind(c, 0, d.start()) for c in ";{}") + 1 : d.start()]
            if body >= 0 and body not in bounded and re.search(r"\b__global__\b", head):  # its definition
                bounded.add(body)
                edits.replace(body + 1, body + 1, f" ::cuda_emu::launch_bounds({line}, {args});")


def _rewrite_launches(src: str, code: str, edits: _Edits, fibers: bool):
    for m in re.finditer(r"<<<", code):
        # The callee: an identifier (maybe qualified) with optional template arguments.
        j = m.start()
        while j > 0 and code[j - 1].isspace():
            j -= 1
        if j > 0 and code[j - 1] == ">":
            depth = 0
            while j > 0:
                j -= 1
                depth += {">": 1, "<": -1}.get(code[j], 0)
                if depth == 0:
                    break
            while j > 0 and code[j - 1].isspace():
                j -= 1
        while j > 0 and (code[j - 1].isalnum() or code[j - 1] in "_:"):
            j -= 1
        callee = src[j : m.start()].strip()
        line = _line_of(src, m.start())
        if not callee:
            raise UnsupportedConstruct(line, "could not find the kernel name before <<<")
        # The configuration up to >>> at depth 0, then the argument list.
        k, depth = m.end(), 0
        while k < len(code) and not (depth == 0 and code.startswith(">>>", k)):
            depth += (code[k] in "([{") - (code[k] in ")]}")
            k += 1
        close = k
        a = close + 3
        while a < len(code) and code[a].isspace():
            a += 1
        if close >= len(code) or a >= len(code) or code[a] != "(":
            raise UnsupportedConstruct(line, "expected kernel<<<grid, block>>>(arguments)")
        a_end = _match_forward(code, a)
        if a_end < 0:
            raise LaunchSyntaxError(line, "unbalanced parentheses in the kernel launch")
        cfg = [src[s:e].strip() for s, e in _split_top(code, m.end(), close)]
        if not 2 <= len(cfg) <= 4 or not all(cfg):
            raise LaunchSyntaxError(line, "a launch takes <<<grid, block[, shared_bytes[, stream]]>>>")
        cfg += ["0", "nullptr"][len(cfg) - 2 :]
        args = src[a + 1 : a_end - 1]
        name = callee.replace('"', "")
        call = (
            f'::cuda_emu::launch("{name}", __LINE__, {"true" if fibers else "false"}, dim3({cfg[0]}), '
            f"dim3({cfg[1]}), (size_t)({cfg[2]}), {cfg[3]}, {callee}" + (f", {args})" if args.strip() else ")")
        )
        edits.replace(j, a_end, call)


# Namespace-scope declarations that are not variables device code may read (nvcc: a constexpr or const
# variable may be, a __device__/__constant__/__managed__ one is device memory), or are not variables at all.
_NOT_HOST_VARIABLE = re.compile(
    r"\b(typedef|using|template|struct|class|enum|union|extern|constexpr|const|static_assert|namespace|friend"
    r"|operator|__device__|__constant__|__managed__|__shared__|__global__|__host__|asm|__asm__)\b"
)
_NOT_A_DECLARATION = {"return", "case", "else", "do", "throw", "sizeof", "new", "delete", "goto", "typename"}


def _host_variables(code: str) -> dict[str, int]:
    """The plain host variables at namespace scope (no __device__ or __constant__, not const): name -> position."""
    found: dict[str, int] = {}
    code = re.sub(r"(?m)^[ \t]*#.*$", lambda m: " " * len(m.group(0)), code)
    i, start, n = 0, 0, len(code)
    while i < n:
        c = code[i]
        if c == ";":
            stmt = code[start:i]
            eq = stmt.find("=")
            head = stmt if eq < 0 else stmt[:eq]
            if stmt.strip() and "(" not in head and not _NOT_HOST_VARIABLE.search(stmt):
                for name, pos, _ in _decl_names(code, start, i):
                    found.setdefault(name, pos)
            start = i + 1
        elif c == "{":
            before = code[start:i]
            if re.search(r"\bnamespace\b[\w\s:]*$|\bextern\s*\"\s*\"\s*$", before):
                start = i + 1  # a namespace or extern "C" block: its declarations are at namespace scope
            else:
                end = _match_forward(code, i)
                if end < 0:
                    return found
                if "=" in before:  # an initializer: the declaration goes on to its ';'
                    i = end
                    continue
                start = end  # a function, class or enum body
                i = end
                continue
        elif c == "}":
            start = i + 1  # the end of a namespace or extern "C" block
        i += 1
    return found


def _device_bodies(code: str):
    """(parameters, body, body start) of each __global__ and __device__-only function definition."""
    for m in re.finditer(r"\b(__global__|__device__)\b", code):
        stmt_start = max(code.rfind(";", 0, m.start()), code.rfind("}", 0, m.start()), code.rfind("{", 0, m.start()))
        j = m.end()
        while j < len(code) and code[j] not in "(;={[":
            j += 1
        if j >= len(code) or code[j] != "(":
            continue  # a __device__ variable
        if "__host__" in code[stmt_start + 1 : j] or re.search(r"\b__device__\b", code[stmt_start + 1 : m.start()]):
            continue  # __host__ __device__ (or the second qualifier of one function)
        p_end = _match_forward(code, j)
        if p_end < 0:
            continue
        k = p_end
        while k < len(code) and code[k] not in "{;":
            k += 1
        if k >= len(code) or code[k] != "{":
            continue  # a declaration
        b_end = _match_forward(code, k)
        if b_end > 0:
            yield code[j:p_end], code[k:b_end], k


def _check_host_variables(code: str, src: str):
    """nvcc refuses device code that reads or writes a host variable ("identifier is undefined in device code"),
    where this backend, one host program, would run it: a compile error here too."""
    host = _host_variables(_device_only_blanked(code))
    if not host:
        return
    for params, body, at in _device_bodies(code):
        for name, pos in host.items():
            if re.search(rf"\b{re.escape(name)}\b", params):
                continue  # a parameter of that name
            local = re.finditer(
                rf"(?:^|[{{;(,])\s*(?:(?:const|volatile|static|unsigned|signed|long|short|register)\s+)*"
                rf"([A-Za-z_][\w:]*(?:<[^;{{}}]*?>)?)\s*[*&\s]+\s*{re.escape(name)}\s*(?=[=;\[,)]|\{{)",
                body,
            )
            if any(d.group(1) not in _NOT_A_DECLARATION for d in local):
                continue  # a local of that name (a crude test: such a kernel is not checked here)
            use = re.search(rf"(?<![\w.])(?<!->)\b{re.escape(name)}\b(?!\s*::)", body)
            if use:
                raise LaunchSyntaxError(
                    _line_of(code, at + use.start()),
                    f"'{name}' is a host variable (declared at line {_line_of(code, pos)} without __device__ or "
                    f'__constant__), which device code cannot use: nvcc refuses it with \'identifier "{name}" is '
                    "undefined in device code'. Pass it to the kernel as an argument, or declare it __device__ or "
                    "__constant__ and set it with cudaMemcpyToSymbol",
                )


def rewrite(src: str) -> Rewritten:
    """The host C++ of kernel file `src`, rewritten in a child with a time and memory limit (grader.compile.bounded):
    the scans below are regexes and loops over text anyone can write, some of them quadratic on crafted
    input (1 MB of `__device__ int a;` took minutes here). Raises UnsupportedConstruct, LaunchSyntaxError."""
    from grader.compile import bounded

    try:
        reply = bounded.call("grader.compile.cpu.rewrite", "_rewrite_json", src, timeout=REWRITE_TIMEOUT_S)
    except bounded.LimitExceeded as e:
        raise RewriteLimit(
            1, f"the CPU backend's rewrite of this file stopped: {e}; a kernel file takes milliseconds (simplify it)"
        ) from None
    kind, *rest = reply
    if kind == "ok":
        return Rewritten(*rest)
    raise (LaunchSyntaxError if kind == "syntax" else UnsupportedConstruct)(*rest)


REWRITE_TIMEOUT_S = 10.0


class RewriteLimit(LaunchSyntaxError):
    """The rewrite went past its time or memory limit: the file fails, as one that does not compile."""


def _rewrite_json(src: str) -> list:
    """_rewrite's answer as JSON for grader.compile.bounded: ["ok", text, fibers] or [kind, line, message]."""
    try:
        r = _rewrite(src)
    except LaunchSyntaxError as e:
        return ["syntax", e.line, e.message]
    except UnsupportedConstruct as e:
        return ["unsupported", e.line, e.message]
    return ["ok", r.text, r.uses_barriers]


def _rewrite(src: str) -> Rewritten:
    code = _blank(src)
    _check_unsupported(code, src)
    _check_host_variables(code, src)
    fibers = bool(_BARRIER.search(code))
    edits = _Edits(src)
    _rewrite_directives(src, code, edits)
    _rewrite_keywords(code, edits)
    _rewrite_shared(src, code, edits)
    _rewrite_device_variables(src, code, edits)
    _rewrite_launches(src, code, edits, fibers)
    _rewrite_launch_bounds(code, edits)
    return Rewritten(edits.apply(), fibers)
