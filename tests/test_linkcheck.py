"""The check of the built object (grader/compile/linkcheck.py): what a submission may call, whatever its source
does to hide it from the scan (issue 13.1).

Each BYPASSES entry is a correct `naive` kernel file that also reaches something a kernel file may not,
behind a branch the tests never take (M == -12345), so that running it is harmless. Before this check each
one got through `grader check naive FILE --backend cpu` with a pass (python tests/test_linkcheck.py DIR
writes them out to try); now the built object is refused on both backends, by name. Tests marked `nvcc`
build for sm_90 with nvcc (no GPU needed: nvcc -c and objdump) and skip without nvcc.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grader.spec import exercises
from grader.compile import linkcheck, toolchain
from grader.errors import Forbidden

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ["cpu", pytest.param("cuda", marks=pytest.mark.nvcc)]


def naive(top: str = "", hidden: str = "") -> str:
    """A correct naive GEMM; `top` goes before it, `hidden` into a branch no test takes."""
    return (
        f"#include <cuda_runtime.h>\n#include <cstdio>\n{top}\n"
        "__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {\n"
        "    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (r >= M || c >= N) return;\n"
        "    float s = 0.0f;\n"
        "    for (int i = 0; i < K; ++i) s += A[r * K + i] * B[i * N + c];\n"
        "    C[r * N + c] = s;\n"
        "}\n"
        'extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {\n'
        f"    if (M == -12345) {{\n{hidden}\n    }}\n"
        "    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);\n"
        "    k<<<grid, block, 0, stream>>>(A, B, C, M, N, K);\n"
        "}\n"
    )


BYPASSES = {
    # a `//` comment ending in a lone CR: g++ and nvcc end the line there, the scan read on (on the H200 this
    # loaded cuBLAS with dlopen/dlsym and passed `naive` at 99 % of cuBLAS)
    "cr_comment.cu": (
        naive(
            '// the loader, declared by hand\rextern "C" void* dlopen(const char*, int);\r'
            '// and its lookup\rextern "C" void* dlsym(void*, const char*);\n'
            '// files and the environment\rextern "C" FILE* fopen(const char*, const char*);'
            '\rextern "C" char* getenv(const char*);\n',
            '        // call them\r void* h = dlopen("libcublas.so", 2); printf("%p", dlsym(h, "cublasSgemm_v2"));\n'
            '        // and these\r printf("%p %s", (void*)fopen("/proc/self/environ", "r"), getenv("HOME"));\n',
        ),
        ["dlopen", "dlsym", "fopen", "getenv"],
    ),
    # backslash, form feed or vertical tab, newline: a splice for the compiler, not for the scan
    "splice_ff_vt.cu": (
        naive(
            'extern "C" char* get\\\f\nenv(const char*);\nextern "C" void* dlo\\\v\npen(const char*, int);\n',
            '        printf("%s %p", get\\\f\nenv("HOME"), dlo\\\v\npen("libcublas.so", 2));\n',
        ),
        ["getenv", "dlopen"],
    ),
    # libc functions on no blocklist, declared in the file itself (no header needed)
    "self_declared.cu": (
        naive(
            'extern "C" {\nint mkdir(const char*, unsigned); int tgkill(int, int, int); long process_vm_readv(int, const void*,'
            " unsigned long, const void*, unsigned long, unsigned long);\nint truncate(const char*, long); int symlink("
            "const char*, const char*); unsigned alarm(unsigned); long send(int, const void*, unsigned long, int);\n}\n",
            '        mkdir("/nonexistent/x", 0700); tgkill(0, 0, 0); process_vm_readv(0, 0, 0, 0, 0, 0);\n'
            '        truncate("/nonexistent/x", 0); symlink("/nonexistent/a", "/nonexistent/b"); alarm(0); send(-1, 0, 0, 0);\n',
        ),
        ["mkdir", "tgkill", "process_vm_readv", "truncate", "symlink", "alarm", "send"],
    ),
    # a raw system call from host inline asm (`__asm`, which the CPU backend's rewrite let through), hidden
    # from the scan by a lone CR
    "host_syscall.cu": (
        naive(
            "",
            '        // raw\r long r; __asm volatile("syscall" : "=a"(r) : "a"(39) : "rcx", "r11", "memory"); '
            'printf("%ld", r);\n',
        ),
        ["syscall"],
    ),
    # the common words the scan no longer refuses (a variable may be called `write`): the calls are refused here
    "common_words.cu": (
        naive(
            '#include <cstdlib>\nextern "C" long write(int, const void*, unsigned long);\n'
            'extern "C" int kill(int, int);\nextern "C" int open64(const char*, int, ...);\n'
            "typedef int (*F)(int, int);\nF table[] = {kill};\n#define E exit\n",
            '        write(1, "x", 1); ::write(2, "y", 1); printf("%d", open64("/nonexistent", 0));\n'
            "        table[0](0, 0); void (*e)(int) = std::exit; e(0); if (K == 1) E(1); else __builtin_exit(2);\n",
        ),
        ["write", "exit", "kill", "open64"],
    ),
}

# what a kernel file may well use: both backends build it and the check passes it (<memory> and
# __noinline__: a macro __noinline__ in the CPU backend's header broke libstdc++'s __attribute__((__noinline__)))
KITCHEN_SINK = naive(
    "#include <cstdlib>\n#include <cstring>\n#include <cmath>\n#include <cassert>\n#include <vector>\n#include <string>\n"
    "#include <algorithm>\n#include <iostream>\n#include <array>\n#include <memory>\n#include <stdexcept>\n"
    "static int calls = 0;\n"
    "__device__ __noinline__ float act(float x) { return fmaxf(x, 0.0f) + expf(-x) * 0.0f; }\n"
    "static float host_norm(const float* x, int n) { float s = 0; for (int i = 0; i < n; ++i) s += x[i] * x[i]; "
    "return std::sqrt(s) + std::pow(s, 0.5f) + std::exp(0.0f) + std::log1p(s) + tanhf(s) + std::fabs(s); }\n",
    '        std::vector<int> v(M > 0 ? M : 1); std::sort(v.begin(), v.end()); std::string s = "n=" + std::to_string(N);\n'
    "        std::cout << s << ' ' << v.size() << std::endl; std::cerr << \"warn\" << '\\n';\n"
    '        fprintf(stderr, "err %s\\n", cudaGetErrorString(cudaGetLastError())); puts(s.c_str()); fflush(stdout);\n'
    '        char buf[64]; snprintf(buf, sizeof buf, "%d", K); assert(strlen(buf) > 0); float* tmp = (float*)malloc(16);\n'
    "        memset(tmp, 0, 16); memcpy(tmp, A, 4); free(tmp); std::vector<float> p(8); p[0] = host_norm(A, 1);\n"
    "        static std::array<float, 4> once = {1, 2, 3, 4}; int* q = new int[3]; delete[] q; ++calls;\n"
    "        float* d = nullptr; cudaMalloc(&d, 64); cudaMemsetAsync(d, 0, 64, stream); cudaMemcpyAsync(d, A, 4, "
    'cudaMemcpyDeviceToDevice, stream); cudaStreamSynchronize(stream); cudaFree(d); printf("%g", (double)once[0]);\n'
    "        cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 0);\n"
    '        try { if (K < -1) throw std::runtime_error("bad K"); if (K < -2) throw 42; if (K < -3) throw std::bad_alloc(); }\n'
    '        catch (const std::exception& e) { puts(e.what()); } catch (int) { puts("int"); }\n',
)
# device queries and events (the CPU backend has them too: events are complete when recorded, 0 ms apart)
KITCHEN_SINK_CUDA = KITCHEN_SINK.replace(
    "    if (M == -12345) {\n",
    (
        "    if (M == -12345) {\n"
        "        int dev = 0; cudaGetDevice(&dev); cudaDeviceProp prop; cudaGetDeviceProperties(&prop, dev); puts(prop.name);\n"
        "        int optin = 0; cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev); cudaEvent_t ev;\n"
        "        cudaEventCreate(&ev); cudaEventRecord(ev, stream); cudaEventSynchronize(ev); float ms = 0;\n"
        '        cudaEventElapsedTime(&ms, ev, ev); printf("%f", ms); cudaEventDestroy(ev);\n'
    ),
)


@pytest.fixture
def build(monkeypatch):
    """toolchain.build as check, batch and grader.load use it; the cuda backend for sm_90 without a GPU."""
    monkeypatch.setattr(toolchain, "gpu_arch", lambda: "sm_90")

    def run(source: str, backend: str, exercise: str | None = "naive", filename: str = "mine.cu", **kw):
        return toolchain.build(source, backend=backend, exercise=exercise, filename=filename, **kw)

    return run


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", BYPASSES)
def test_what_the_scan_missed_is_refused_in_the_built_object(build, backend, name):
    source, names = BYPASSES[name]
    with pytest.raises(Forbidden) as e:
        build(source, backend, filename=name)
    msg = str(e.value)
    print(msg)
    assert msg.startswith(f"forbidden: {name}, once compiled, calls what a kernel file may not")
    for n in names:
        assert f"calls {n}" in msg or f"`{n}` instruction" in msg, (n, msg)
    if backend == "cpu" or name != "common_words.cu":  # nvcc's host code has line tables too (-g1)
        assert f"{name}:" in msg.splitlines()[1], "the refusal names the learner's line"


@pytest.mark.parametrize("name", BYPASSES)
def test_the_check_and_the_scan_both_refuse_through_the_grader(name, tmp_path):
    """The whole path a learner's file takes (scan, then build and check): refused, outcome "forbidden"."""
    from grader.classroom import batch
    from grader.judge import grade

    path = tmp_path / name
    path.write_bytes(BYPASSES[name][0].encode())
    r = grade.grade("naive", path, backend="cpu")
    assert not r.passed and not r.compiled and r.message.startswith("forbidden:"), r.message
    assert batch.outcome(r.as_dict()) == "forbidden"


@pytest.mark.parametrize("backend", BACKENDS)
def test_what_a_kernel_file_may_use_passes(build, backend):
    assert build(KITCHEN_SINK_CUDA, backend).path.exists()
    variables = naive(
        "static int write = 1, read = 2;\n", '        int close = write + read, exit = close; printf("%d", exit);\n'
    )
    assert build(variables, backend).path.exists()  # a variable called write, read, close or exit (13.1)


def test_a_variable_called_write_passes_the_grader(tmp_path):
    from grader.judge import grade

    path = tmp_path / "vars.cu"
    path.write_text(
        naive(
            "static bool write = true;\n",
            '        int read = 1, close = 2, exit = read + close; if (write) printf("%d", exit);\n',
        )
    )
    r = grade.grade("naive", path, backend="cpu")
    assert r.passed, r.message


@pytest.mark.nvcc
def test_a_kernel_file_may_not_define_the_cuda_runtime(build):
    """Its definition would replace the runtime's own in the library (errors hidden from the worker)."""
    src = naive('extern "C" cudaError_t cudaMemGetInfo(size_t* f, size_t* t) { *f = *t = 0; return cudaSuccess; }\n')
    with pytest.raises(Forbidden, match="defines cudaMemGetInfo"):
        build(src, "cuda")


@pytest.mark.nvcc
def test_streams_of_its_own_are_refused_unless_the_grader_tests_its_timing(build):
    src = naive("", "        cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);\n")
    with pytest.raises(Forbidden, match="calls cudaStreamCreateWithFlags"):
        build(src, "cuda")
    assert build(src, "cuda", check_calls=False).path.exists()  # grade(scan=False): tests of the timing


def test_the_cpu_backends_internals_are_refused(build):
    """The emulation runtime is linked into the submission's library: only what cuda_emu.h declares for
    kernels may be called, not its state (which blocks the access profile records) or its configuration."""
    src = naive(
        'namespace cuda_emu { extern bool g_profile_block; }\nextern "C" void cuda_emu_configure(unsigned, int);\n',
        "        cuda_emu::g_profile_block = true; cuda_emu_configure(0, 0);\n",
    )
    with pytest.raises(Forbidden) as e:
        build(src, "cpu")
    assert "calls cuda_emu::g_profile_block" in str(e.value) and "calls cuda_emu_configure" in str(e.value)


def test_the_timed_host_build_is_checked_too():
    """cpu_blocked is graded for correctness on the CPU backend, but timed from a separate g++ -O3 build
    (grader.run.host), where `#ifndef __CUDACC__` hides a call from the checked CPU-backend build (which defines it, as nvcc does)."""
    from grader.judge import grade

    src = (
        (ROOT / "kernels" / "00_cpu_naive.cu").read_text() + '\n#ifndef __CUDACC__\nextern "C" int mkdir(const char*, '
        'unsigned);\nint made_a_directory(int m) { return m == -12345 ? mkdir("/nonexistent/x", 0700) : 0; }\n#endif\n'
    )
    r = grade.grade("cpu_blocked", src)
    assert r.message.startswith("forbidden:") and "calls mkdir" in r.message, r.message


def test_a_refusal_is_cached_with_the_build(build):
    source = BYPASSES["self_declared.cu"][0]
    with pytest.raises(Forbidden) as first:
        build(source, "cpu")
    import time

    t0 = time.perf_counter()
    with pytest.raises(Forbidden) as again:
        build(source, "cpu")
    assert time.perf_counter() - t0 < 0.5 and str(again.value) == str(first.value)


def test_the_allow_list():
    for name in (
        "cudaMalloc",
        "cudaGetDeviceProperties_v2",
        "__cudaRegisterFunction",
        "printf",
        "expf",
        "sqrt",
        "_Znwm",
        "_ZdlPvm",
        "__cxa_guard_acquire",
        "__stack_chk_fail",
        "memcpy",
        "__printf_chk",
        "_ZSt20__throw_length_errorPKc",
        "memcpy@GLIBC_2.14",
    ):
        assert linkcheck.allowed(name, "cuda"), name
    for name in (
        "dlopen",
        "dlsym",
        "mkdir",
        "tgkill",
        "send",
        "system",
        "write",
        "exit",
        "environ",
        "getenv",
        "cudaStreamCreate",
        "cudaGraphLaunch",
        "cudaGetDriverEntryPoint",
        "cudaIpcOpenMemHandle",
        "cudaLaunchHostFunc",
        "cudaDeviceReset",
        "pthread_create",
        "__tsan_read4",
        "dlopen@GLIBC_2.34",
        "_ZNSt13basic_filebufIcSt11char_traitsIcEE4openEPKcSt13_Ios_Openmode",
        "syscall",
        "mprotect",
    ):
        assert not linkcheck.allowed(name, "cuda"), name
    assert linkcheck.allowed("__tsan_read4", "cpu") and linkcheck.allowed(
        "_ZN8cuda_emu9warp_syncEv", "cpu", frozenset({"_ZN8cuda_emu9warp_syncEv"})
    )
    assert not linkcheck.allowed("cudaMalloc", "cpu")  # the CPU backend's runtime calls are inline or its own


# ---------------------------------------------------------------------------- known good
def _notebook_kernels():
    import nbformat

    from grader.course import notebooks

    return [
        (f"{p.stem}-{ex}", src, ex)
        for p in sorted((ROOT / "solutions").glob("*.ipynb"))
        for ex, src in notebooks.kernel_cells(nbformat.read(p, as_version=4)).items()
    ]


def _kernel_files():
    sys.path.insert(0, str(ROOT / "tests"))
    from test_kernels import exercise_of

    return [(p.name, p.read_text(), exercise_of(p.name)) for p in sorted((ROOT / "kernels").glob("*.cu"))]


KNOWN_GOOD = (
    _kernel_files()
    + _notebook_kernels()
    + [
        (p.name, p.read_text(), "naive" if "naive" in p.name or "reversed" in p.name else "tiled")
        for p in sorted((ROOT / "tests" / "submissions").glob("good_*.cu"))
    ]
)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, source, exercise", KNOWN_GOOD, ids=[k[0] for k in KNOWN_GOOD])
def test_every_shipped_kernel_passes_the_check(build, backend, name, source, exercise):

    if backend == "cuda" and exercises.is_host(exercise):
        pytest.skip("a host exercise (plain C++): never built with nvcc")
    assert build(source, backend, exercise=exercise, filename=name).path.exists()


if __name__ == "__main__":  # write the bypasses out, to run `grader check naive FILE` on them
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, (source, _) in BYPASSES.items():
        (out / name).write_bytes(source.encode())
        print(out / name)
