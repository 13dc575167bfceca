"""The static scan (grader/compile/forbidden.py): the bypasses a tester found, and what must stay allowed.

The scan is the friendly early message; the enforcement is the check of the built object
(tests/test_linkcheck.py), which also covers the common words (write, exit...) the scan lets pass.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from grader.compile import forbidden

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "kernels").glob("*.cu")) + sorted((ROOT / "tests" / "submissions").glob("good_*.cu"))


def refused(source: str, why: str = "") -> bool:
    problems = forbidden.scan(source)
    return bool(problems) and why in " ".join(p.why for p in problems)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_kernels_and_good_submissions_scan_clean(path):
    assert forbidden.scan(path.read_text()) == []


@pytest.mark.parametrize(
    "bad",
    [
        'FILE* f; void g(){ auto op = fopen; f = op("/proc/self/environ", "r"); }\n',  # fopen_ptr.cu
        'void g(){ auto se = setenv; se("GRADER_RUN_TIMEOUT", "99999", 1); }\n',  # setenv_ptr.cu
        "void g(){ auto p = &getenv; }\n",
        "void g(){ h(dlsym); }\n",
        "using F = decltype(popen);\n",
        "void g(){ __write(1, b, 1); }\n",
        "void g(){ quick_exit(0); }\n",
        "extern char** environ;\n",
        "F fs[] = {fopen64};\n",
        "auto e = c ? _Exit : _Exit;\n",
        "#define E secure_getenv\n",
    ],
)
def test_library_functions_are_refused_as_values_not_only_as_calls(bad):
    assert refused(bad), bad


def test_common_words_are_left_to_the_built_object():
    """A variable or member called write, read, close or exit is fine (issue 13.1): the check of the built
    object refuses a call to the function (test_linkcheck.py)."""
    ok = (
        "void g(P p, P* q){ p.write(1); q->close(); q\n  ->close(); int m = std::min(1, 2); }\n"
        "__global__ void k(float* C, bool write, int read) { int close = 1, exit = 2; if (write) C[read] = close + exit; }\n"
        "void h(){ bool write = true; if (write) g(); }\n"
    )
    assert forbidden.scan(ok) == []


def test_underscore_exits_are_refused():
    assert refused('extern "C" void _Exit(int);\nvoid g(){ _Exit(0); }\n', "exits")
    assert refused("void g(){ _exit(0); }\n", "exits")


def test_raw_strings_do_not_hide_code():
    hide = 'static const char* d = R"(\n/*)";\nextern "C" char* getenv(const char*);\nstatic const char* d2 = "*/";\n'
    assert [p.line for p in forbidden.scan(hide)] == [3]  # rawstring_hide.cu
    for prefix in ("u8R", "LR", "uR", "UR", "R"):
        assert refused(f'auto d = {prefix}"x(\n/*)" )x";\nvoid g(){{ _Exit(0); }}\n// */\n'), prefix
    assert forbidden.scan('const char* s = R"(// exit(0) /* cublasSgemm */)"; int ok = 1;\n') == []
    # g++ keeps a raw string's backslash-newlines and reads %: there as it is: neither may end it early here
    assert refused('auto s = R"x(\n)\\\nx" /* )x"; void g(){ _Exit(0); } // */\n', "raw string")
    assert refused('auto s = R"#(\n)%:" /* )#"; void g(){ _Exit(0); } // */\n', "exits")


# backslash, horizontal blanks (space, tab, form feed, vertical tab; GCC skips NUL too), then a line end
# (\n, \r\n or a lone \r): a splice for g++ and nvcc, so for the scan too (issue 13.1: \f and \v got through)
@pytest.mark.parametrize(
    "splice",
    ["\\ \n", "\\\t\r\n", "\\  \t \n", "\\\f\n", "\\\v\n", "\\ \f\v\t\n", "\\\r", "\\\f\r", "\\\0\n"],
    ids=["space", "tab-crlf", "blanks", "formfeed", "vtab", "mixed", "lone-cr", "ff-lone-cr", "nul"],
)
def test_line_splices_with_blanks_are_joined(splice):
    src = f'extern "C" char* get{splice}env(const char*);\nvoid g(){{\n    get{splice}env("HOME");\n}}\n'
    assert [p.line for p in forbidden.scan(src)] == [1, 4]  # lines keep their numbers


@pytest.mark.parametrize("end", ["\r", "\r\n", "\n"], ids=["lone-cr", "crlf", "lf"])
def test_a_line_comment_ends_where_the_compiler_ends_it(end):
    """g++ and nvcc end a `//` comment at a lone carriage return; the scan read on to the next \n, so the
    code after the CR compiled unscanned: dlopen/dlsym of cuBLAS passed `naive` at 99 % of cuBLAS (13.1)."""
    src = (
        f'// load the fast one{end}extern "C" void* dlopen(const char*, int);{end}'
        f'// and look it up{end}extern "C" void* dlsym(void*, const char*);\n'
        f'/* a block */ static int x = 1; // fine{end}extern "C" char* getenv(const char*);\n'
    )
    problems = forbidden.scan(src)
    assert [p.line for p in problems] == [2, 4, 6], problems  # g++ counts a lone CR as a line
    assert "loading libraries" in problems[0].why and "environment" in problems[2].why


def test_digit_separators_are_not_char_literals():
    assert forbidden.scan("static const int kBig = 1'000; // I don't call _Exit() here\n") == []
    assert forbidden.scan("float f = 0x1'F + 1'0.5e+1'0; // it's fine, cublas\n") == []
    # a ' not followed by a digit or letter ends the number: `0'/*'` is 0 then the char literal '/*'
    assert refused("#define X(a, b) b\nint v = X(0'/*', 1); void g(){ _Exit(0); } // */\n")


# ---------------------------------------------------------------------------- size and time (issue 13.2)
def _macro_chain(n: int) -> str:
    """n #defines, each naming the next, the last one asm: resolved one link per round, this took minutes."""
    return "".join(f"#define M{i} M{i + 1}\n" for i in range(n)) + f"#define M{n} asm\n"


def test_chained_macros_scan_in_linear_time():
    src = _macro_chain(15000)  # 300 KB: over 60 s before (130 s for the tester's file)
    assert 250_000 < len(src) < forbidden.MAX_BYTES
    t0 = time.perf_counter()
    assert forbidden.scan(src) == []
    assert time.perf_counter() - t0 < 15, "the scan is not linear in the number of macros"
    used = _macro_chain(3000) + 'void q(int) M0("exit");\n'  # and the chain still resolves to asm
    assert refused(used, "asm labels")


def test_a_file_over_the_size_limit_is_refused_unread():
    src = "// padding\n" * (forbidden.MAX_BYTES // 11 + 1)
    t0 = time.perf_counter()
    problems = forbidden.scan(src)
    assert time.perf_counter() - t0 < 1
    assert len(problems) == 1 and "at most 1 MB" in problems[0].why
    assert "at most 1 MB" in forbidden.message(problems, "big.cu")


def test_a_scan_that_outlasts_its_limit_refuses_the_file():
    problems = forbidden.scan(_macro_chain(5000), timeout=1e-9)
    assert len(problems) == 1 and "did not finish within" in problems[0].why


@pytest.mark.parametrize(
    "bad",
    [
        'extern "C" char* my_ge(const char*) __asm("gete" "nv");\n',  # asm_label.cu
        'extern "C" void q(int) asm("exit");\n',
        'extern char** e __asm__("env" "iron");\n',
        'void q(int) noexcept __asm__("abort");\n',
        '#define L(s) asm(s)\nvoid q(int) L("exit");\n',
        '#define L __asm\nvoid q(int) L("exit");\n',
        'void g(){ long r; asm volatile("sys" "call" : "=a"(r) : "a"(39)); }\n',  # asm_syscall.cu
        'void g(){ long r; __asm volatile(".byte 0x0f, 0x05" : "=a"(r)); }\n',  # asm_syscall2.cu
        'void g(){ asm("nop;\\n.quad 0"); }\n',
        'void g(){ asm("\\x73yscall"); }\n',
        'void g(){ asm("int $0x80"); }\n',
        'void g(){ asm("call exit"); }\n',
        'void g(){ asm("jmp write@plt"); }\n',
        'asm(".incbin \\"/etc/passwd\\"");\n',
        "#define S(x) #x\nvoid g(){ asm volatile(S(syscall)); }\n",
        '#define SC "syscall"\nvoid g(){ asm(SC); }\n',
        '#define ASM asm volatile\nvoid g(){ ASM("sys" "call"); }\n',
    ],
)
def test_asm_labels_and_host_assembly_are_refused(bad):
    assert refused(bad), bad


def test_inline_ptx_stays_allowed():
    ok = (
        '__device__ unsigned lane() { unsigned r; asm("mov.u32 %0, %%laneid;" : "=r"(r)); return r; }\n'
        "__device__ void mma(float* d, unsigned a) {\n"
        "#if __CUDA_ARCH__ >= 800\n"
        '    asm volatile("{\\n"\n                 ".reg .pred p;\\n"\n'
        '                 "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0}, {%1}, {%1}, {%0};\\n"\n'
        '                 "}\\n" : "+f"(d[0]) : "r"(a));\n'
        "#endif\n}\n"
        '#define WAIT(n) asm volatile("cp.async.wait_group %0;\\n" ::"n"(n))\n'
        '__device__ void w(bool c) { WAIT(0); if (c) { asm volatile("bar.sync 0;"); } }\n'
    )
    assert forbidden.scan(ok) == []


@pytest.mark.parametrize(
    "bad",
    [
        "[[gnu::constructor]] static void at_load() {}\n",
        "__attribute__((__constructor__)) static void f() {}\n",
        "__attribute__((used, constructor(101))) static void f() {}\n",
        "__attribute__((destructor)) void f() {}\n",
        "S s __attribute__((init_priority(101)));\n",
        '__attribute__((section(".init_array"))) void* p = (void*)f;\n',
        '[[gnu::section(".ctors")]] void* p = (void*)f;\n',
        '__attribute__((section(".fini_array"))) void* p = 0;\n',
        'static int w(int) __attribute__((weakref("wr" "ite")));\n',
        "#pragma weak w = exit\n",
        "#pragma redefine_extname w close\n",
    ],
)
def test_code_run_at_load_and_symbol_aliases_are_refused(bad):
    assert refused(bad), bad


@pytest.mark.parametrize(
    "probe",
    [
        '#if __has_include("cuda_emu.h")\n#endif\n',
        "#if __has_include(</etc/passwd>)\nint x;\n#endif\n",
        "#if defined(__has_include_next) && __has_include_next(<cuda.h>)\n#endif\n",
        "#if __has_embed(</home/grader/key> limit(1))\n#endif\n",
        "#define P(x) __has_include(x)\n#if P(<cuda_runtime.h>)\n#endif\n",
        '#pragma GCC dependency "/etc/hostname"\n',
        '_Pragma("GCC dependency \\"/etc/hostname\\"")\n',
    ],
)
def test_probing_the_grading_machines_files_is_refused(probe):
    # each of these tells the compile step whether a file exists on the grading machine (or which backend
    # it is): a kernel that behaves differently there is one the grader never saw
    assert refused(probe), probe


@pytest.mark.parametrize(
    "header",
    [
        "cstdlib",
        "stdlib.h",
        "numeric",
        "tuple",
        "initializer_list",
        "new",
        "iostream",
        "cstdbool",
        "cuda_fp8.h",
        "cuda/std/cstdint",
    ],
)
def test_harmless_standard_headers_are_allowed(header):
    assert forbidden.scan(f"#include <{header}>\n") == []


@pytest.mark.parametrize(
    "header, why",
    [
        ("thread", "threads"),
        ("future", "threads"),
        ("pthread.h", "threads"),
        ("fstream", "files"),
        ("filesystem", "files"),
        ("unistd.h", "files"),
        ("fcntl.h", "files"),
        ("sys/mman.h", "files"),
        ("dlfcn.h", "loading libraries"),
        ("signal.h", "signals"),
        ("csignal", "signals"),
        ("setjmp.h", "long jumps"),
        ("csetjmp", "long jumps"),
        ("spawn.h", "processes"),
        ("cuda/std/../../../../etc/passwd", "leave the include"),
        ("/etc/passwd", "leave the include"),
        ("cstdio/../unistd.h", "leave the include"),
    ],
)
def test_refused_headers_say_what_they_are_for(header, why):
    problems = forbidden.scan(f"#include <{header}>\n")
    assert problems and why in problems[0].why, problems


@pytest.mark.parametrize("bad", ["#include_next <dlfcn.h>\n", "#import <unistd.h>\n", '#embed "/etc/passwd"\n'])
def test_other_include_directives_are_refused(bad):
    assert refused(bad, "only plain #include")
