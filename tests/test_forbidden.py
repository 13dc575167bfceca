"""The static scan (grader/forbidden.py): the bypasses a tester found, and what must stay allowed."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader import forbidden

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "kernels").glob("*.cu")) + sorted((ROOT / "tests" / "submissions").glob("good_*.cu"))


def refused(source: str, why: str = "") -> bool:
    problems = forbidden.scan(source)
    return bool(problems) and why in " ".join(p.why for p in problems)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_kernels_and_good_submissions_scan_clean(path):
    assert forbidden.scan(path.read_text()) == []


@pytest.mark.parametrize("bad", [
    'FILE* f; void g(){ auto op = fopen; f = op("/proc/self/environ", "r"); }\n',       # fopen_ptr.cu
    'void g(){ auto se = setenv; se("GRADER_RUN_TIMEOUT", "99999", 1); }\n',            # setenv_ptr.cu
    "void g(){ auto p = &getenv; }\n", "void g(){ h(dlsym); }\n", "using F = decltype(popen);\n",
    "void g(){ void (*e)(int) = exit; e(0); }\n", "void g(){ auto e = &exit; }\n", "void g(){ h(1, write); }\n",
    "void g(){ h(close); }\n", "F fs[] = {kill};\n", "auto e = c ? abort : abort;\n", "void g(){ std::exit(0); }\n",
    "void g(){ ::write(1, b, 1); }\n", "void g(){ __builtin_exit(0); }\n", "void g(){ __write(1, b, 1); }\n",
    "int fd = open64(p, 0);\n", "void g(){ quick_exit(0); }\n", "#define E exit\n", "extern char** environ;\n",
])
def test_library_functions_are_refused_as_values_not_only_as_calls(bad):
    assert refused(bad), bad


def test_common_names_as_members_are_fine_and_a_variable_gets_a_clear_message():
    ok = "void g(P p, P* q){ p.write(1); q->close(); q\n  ->close(); int m = std::min(1, 2); }\n"
    assert forbidden.scan(ok) == []
    problems = forbidden.scan("void g(){ bool write = true; if (write) h(); }\n")
    assert problems and "a variable called write too: rename it" in problems[0].why


def test_underscore_exits_are_refused():
    assert refused('extern "C" void _Exit(int);\nvoid g(){ _Exit(0); }\n', "exits")
    assert refused("void g(){ _exit(0); }\n", "exits")


def test_raw_strings_do_not_hide_code():
    hide = 'static const char* d = R"(\n/*)";\nextern "C" char* getenv(const char*);\nstatic const char* d2 = "*/";\n'
    assert [p.line for p in forbidden.scan(hide)] == [3]                      # rawstring_hide.cu
    for prefix in ("u8R", "LR", "uR", "UR", "R"):
        assert refused(f'auto d = {prefix}"x(\n/*)" )x";\nvoid g(){{ exit(0); }}\n// */\n'), prefix
    assert forbidden.scan('const char* s = R"(// exit(0) /* cublasSgemm */)"; int ok = 1;\n') == []
    # g++ keeps a raw string's backslash-newlines and reads %: there as it is: neither may end it early here
    assert refused('auto s = R"x(\n)\\\nx" /* )x"; void g(){ exit(0); } // */\n', "raw string")
    assert refused('auto s = R"#(\n)%:" /* )#"; void g(){ exit(0); } // */\n', "exits")


@pytest.mark.parametrize("splice", ["\\ \n", "\\\t\r\n", "\\  \t \n"])
def test_line_splices_with_blanks_are_joined(splice):
    src = f'extern "C" void ex{splice}it(int);\nvoid g(){{\n    ex{splice}it(0);\n}}\n'   # bs_space_exit.cu
    assert [p.line for p in forbidden.scan(src)] == [1, 4]                    # lines keep their numbers


def test_digit_separators_are_not_char_literals():
    assert forbidden.scan("static const int kBig = 1'000; // I don't call exit() here\n") == []
    assert forbidden.scan("float f = 0x1'F + 1'0.5e+1'0; // it's fine, cublas\n") == []
    # a ' not followed by a digit or letter ends the number: `0'/*'` is 0 then the char literal '/*'
    assert refused("#define X(a, b) b\nint v = X(0'/*', 1); void g(){ exit(0); } // */\n")


@pytest.mark.parametrize("bad", [
    'extern "C" char* my_ge(const char*) __asm("gete" "nv");\n',              # asm_label.cu
    'extern "C" void q(int) asm("exit");\n', "extern char** e __asm__(\"env\" \"iron\");\n",
    'void q(int) noexcept __asm__("abort");\n',
    '#define L(s) asm(s)\nvoid q(int) L("exit");\n', '#define L __asm\nvoid q(int) L("exit");\n',
    'void g(){ long r; asm volatile("sys" "call" : "=a"(r) : "a"(39)); }\n',    # asm_syscall.cu
    'void g(){ long r; __asm volatile(".byte 0x0f, 0x05" : "=a"(r)); }\n',     # asm_syscall2.cu
    'void g(){ asm("nop;\\n.quad 0"); }\n', 'void g(){ asm("\\x73yscall"); }\n', 'void g(){ asm("int $0x80"); }\n',
    'void g(){ asm("call exit"); }\n', 'void g(){ asm("jmp write@plt"); }\n', 'asm(".incbin \\"/etc/passwd\\"");\n',
    '#define S(x) #x\nvoid g(){ asm volatile(S(syscall)); }\n', '#define SC "syscall"\nvoid g(){ asm(SC); }\n',
    '#define ASM asm volatile\nvoid g(){ ASM("sys" "call"); }\n',
])
def test_asm_labels_and_host_assembly_are_refused(bad):
    assert refused(bad), bad


def test_inline_ptx_stays_allowed():
    ok = ('__device__ unsigned lane() { unsigned r; asm("mov.u32 %0, %%laneid;" : "=r"(r)); return r; }\n'
          "__device__ void mma(float* d, unsigned a) {\n"
          "#if __CUDA_ARCH__ >= 800\n"
          '    asm volatile("{\\n"\n                 ".reg .pred p;\\n"\n'
          '                 "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0}, {%1}, {%1}, {%0};\\n"\n'
          '                 "}\\n" : "+f"(d[0]) : "r"(a));\n'
          "#endif\n}\n"
          '#define WAIT(n) asm volatile("cp.async.wait_group %0;\\n" ::"n"(n))\n'
          '__device__ void w(bool c) { WAIT(0); if (c) { asm volatile("bar.sync 0;"); } }\n')
    assert forbidden.scan(ok) == []


@pytest.mark.parametrize("bad", [
    "[[gnu::constructor]] static void at_load() {}\n", "__attribute__((__constructor__)) static void f() {}\n",
    "__attribute__((used, constructor(101))) static void f() {}\n", "__attribute__((destructor)) void f() {}\n",
    "S s __attribute__((init_priority(101)));\n", '__attribute__((section(".init_array"))) void* p = (void*)f;\n',
    '[[gnu::section(".ctors")]] void* p = (void*)f;\n', '__attribute__((section(".fini_array"))) void* p = 0;\n',
    'static int w(int) __attribute__((weakref("wr" "ite")));\n', "#pragma weak w = exit\n",
    "#pragma redefine_extname w close\n",
])
def test_code_run_at_load_and_symbol_aliases_are_refused(bad):
    assert refused(bad), bad


@pytest.mark.parametrize("header", ["cstdlib", "stdlib.h", "numeric", "tuple", "initializer_list", "new",
                                    "iostream", "cstdbool", "cuda_fp8.h", "cuda/std/cstdint"])
def test_harmless_standard_headers_are_allowed(header):
    assert forbidden.scan(f"#include <{header}>\n") == []


@pytest.mark.parametrize("header, why", [
    ("thread", "threads"), ("future", "threads"), ("pthread.h", "threads"), ("fstream", "files"),
    ("filesystem", "files"), ("unistd.h", "files"), ("fcntl.h", "files"), ("sys/mman.h", "files"),
    ("dlfcn.h", "loading libraries"), ("signal.h", "signals"), ("csignal", "signals"), ("setjmp.h", "long jumps"),
    ("csetjmp", "long jumps"), ("spawn.h", "processes"), ("cuda/std/../../../../etc/passwd", "leave the include"),
    ("/etc/passwd", "leave the include"), ("cstdio/../unistd.h", "leave the include"),
])
def test_refused_headers_say_what_they_are_for(header, why):
    problems = forbidden.scan(f"#include <{header}>\n")
    assert problems and why in problems[0].why, problems


@pytest.mark.parametrize("bad", ["#include_next <dlfcn.h>\n", "#import <unistd.h>\n", '#embed "/etc/passwd"\n'])
def test_other_include_directives_are_refused(bad):
    assert refused(bad, "only plain #include")
