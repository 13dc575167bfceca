"""Compile errors, unsupported constructs, plain (barrier-free) kernels and sanitize builds."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cpu_helpers import Lib, build, line_of
from grader.spec.exercises import declarations
from grader.compile.cpu import sanitizer_env, toolchain_id
from grader.compile.cpu.build import NotOnCpu
from grader.errors import CannotGrade, CompileError

NAIVE = textwrap.dedent("""\
    #include <cuda_runtime.h>
    __global__ void naive(const float* A, const float* B, float* C, int M, int N, int K) {
        int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
        if (row >= M || col >= N) return;
        float acc = 0.f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
    extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
        naive<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, stream>>>(A, B, C, M, N, K);
    }
    """)


def test_kernel_without_barriers_runs_as_plain_loop_with_contract_prelude():
    lib = Lib(build(NAIVE, "naive", prelude=declarations("naive")))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((37, 29), dtype=np.float32), rng.standard_normal((29, 41), dtype=np.float32)
    c = np.zeros((37, 41), np.float32)
    import ctypes

    lib.dll.gemm(*(ctypes.c_void_p(x.ctypes.data) for x in (a, b, c)), 37, 41, 29, None)
    assert lib.error() is None
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_compile_error_points_at_the_learners_line(tmp_path):
    src = NAIVE.replace("acc += A[row * K + k]", "acc += A[row * K + k] * undefined_name")
    with pytest.raises(CompileError) as e:
        build(src, "broken")
    msg = str(e.value)
    assert f"broken.cu:{line_of(src, 'undefined_name')}:" in msg and "undefined_name" in msg
    assert "/tmp" not in msg and len(msg.splitlines()) <= 40
    assert "error" in e.value.log


def test_wrong_launcher_signature_is_a_compile_error():
    src = NAIVE.replace("float* C, int M, int N, int K, cudaStream_t", "double* C, int M, int N, int K, cudaStream_t")
    with pytest.raises(CompileError) as e:
        build(src, "signature", prelude=declarations("naive"))
    assert f"signature.cu:{line_of(src, 'extern')}:" in str(e.value)


@pytest.mark.parametrize(
    "snippet,words",
    [
        ('asm volatile("membar.gl;");', "inline PTX assembly"),
        ("unsigned v = __shfl_down(1, 1);", "without _sync"),
        ("cudaLaunchKernel((void*)0, dim3(1), dim3(1), nullptr, 0, 0);", "kernel<<<grid, block, shared, stream>>>"),
        # CUDA names the backend's headers lack: g++'s "not declared" becomes "could not grade"
        ("float h = __half2float(__float2half(acc));", "__float2half is part of CUDA"),
        ("cudaStream_t s2; cudaStreamGetPriority(s2, nullptr);", "cudaStreamGetPriority is part of CUDA"),
        ("namespace cg = cooperative_groups; auto g = cg::coalesced_threads();", "coalesced_threads"),
        (
            "auto t = cooperative_groups::tiled_partition<64>(cooperative_groups::this_thread_block());",
            "sizes 1, 2, 4, 8, 16 and 32 only",
        ),
        (
            "auto t = cooperative_groups::tiled_partition(cooperative_groups::this_thread_block(), 8); t.sync();",
            "this use of cooperative groups",
        ),
        (
            "auto w = cooperative_groups::tiled_partition<32>(cooperative_groups::this_thread_block()); "
            "int p; w.match_all(acc, p);",
            "this use of cooperative groups",
        ),
    ],
)
def test_unsupported_construct_could_not_be_graded_with_its_line(snippet, words):
    src = NAIVE.replace("float acc = 0.f;", "float acc = 0.f; " + snippet)
    if "cooperative_groups" in snippet:
        src = "#include <cooperative_groups.h>\n" + src
    with pytest.raises(NotOnCpu) as e:
        build(src, "unsupported")
    assert isinstance(e.value, CannotGrade)  # exit 2: never "failed"
    msg = str(e.value)
    assert msg.startswith("could not grade on the CPU backend") and words in msg, msg
    assert f"unsupported.cu:{line_of(src, snippet)}:" in msg, msg


@pytest.mark.parametrize(
    "test,runs",
    [
        ("#ifndef __CUDA_ARCH__", None),
        ("#ifdef __CUDA_ARCH__", None),
        ("#if defined(__CUDA_ARCH__)", None),
        ("#if !defined(__CUDA_ARCH__) || FAST", None),
        ("#if __CUDA_ARCH__", None),
        ("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800", "fallback"),  # a version: the fallback runs here
        ("#if __CUDA_ARCH__ < 800", "branch"),  # undefined is 0 here, as in nvcc's host pass: sm_75's branch
        # no GPU nvcc 13 targets (sm_75 and up) has __CUDA_ARCH__ < 700 or takes >= 1's else: "defined" in disguise
        ("#if __CUDA_ARCH__ < 700", None),
        ("#if __CUDA_ARCH__ >= 1", None),
    ],
)
def test_a_branch_on_whether_cuda_arch_is_defined_could_not_be_graded(test, runs):
    """nvcc compiles a kernel's body with __CUDA_ARCH__ defined; the CPU backend, like nvcc's host pass,
    without: code that asks whether it is defined would be graded on the path a GPU never runs."""
    body = f"\n{test}\n        acc = 1.f;\n#else\n        acc = 2.f;\n#endif\n"
    src = NAIVE.replace("float acc = 0.f;", "float acc = 0.f;" + body)
    if runs is None:
        with pytest.raises(NotOnCpu) as e:
            build(src, "arch")
        msg = str(e.value)
        assert "whether __CUDA_ARCH__ is defined" in msg and f"arch.cu:{line_of(src, test)}:" in msg, msg
    else:
        assert build(src, "arch").exists()


@pytest.mark.parametrize(
    "snippet", ["float v = __syncthread();", "float v = cudaMallocc(0);", "kern<<<1, 2, 3, 4, 5>>>(0);"]
)
def test_a_typo_or_bad_launch_is_still_a_compile_error(snippet):
    src = NAIVE.replace("float acc = 0.f;", "float acc = 0.f; " + snippet)
    with pytest.raises(CompileError):
        build(src, "typo")


def test_toolchain_id_is_stable_string():
    assert toolchain_id() == toolchain_id() and toolchain_id().startswith("cpu-")


SAN_SRC = textwrap.dedent("""\
    __global__ void off_by_one(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i <= n) y[i] = x[i] * 2.f;  // BUG: global OOB
    }
    __global__ void smem_walk(float* y) {
        __shared__ float tile[32];
        float* p = tile;
        p[threadIdx.x + 8] = 1.f;  // BUG: shared OOB
        __syncthreads();
        y[threadIdx.x] = tile[threadIdx.x % 32];
    }
    extern "C" void global_oob(const float* x, float* y, int n) { off_by_one<<<(n + 63) / 64, 64>>>(x, y, n); }
    extern "C" void shared_oob(float* y) { smem_walk<<<1, 32>>>(y); }
    """)

SAN_DRIVER = textwrap.dedent("""\
    import ctypes, sys, numpy as np
    lib = ctypes.CDLL(sys.argv[1]); lib.cuda_emu_take_error.restype = ctypes.c_char_p
    n = 1000
    x = np.ones(n, np.float32); y = np.zeros(n, np.float32)
    if sys.argv[2] == "global":
        lib.global_oob(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data), n)
    else:
        lib.shared_oob(ctypes.c_void_p(y.ctypes.data))
    e = lib.cuda_emu_take_error()
    print("ERROR:", e.decode() if e else None)
    """)


@pytest.fixture(scope="module")
def sanitized():
    return build(SAN_SRC, "sanitized", sanitize=True)


@pytest.mark.parametrize("which,marker", [("global", "global OOB"), ("shared", "shared OOB")])
def test_sanitize_build_reports_out_of_bounds(sanitized, which, marker):
    so = sanitized
    env = {**os.environ, **sanitizer_env()}
    r = subprocess.run(
        [sys.executable, "-c", SAN_DRIVER, str(so), which], env=env, capture_output=True, text=True, timeout=120
    )
    err = [l for l in r.stdout.splitlines() if l.startswith("ERROR:")]
    assert err and "out-of-bounds" in err[0], r.stdout + r.stderr
    assert f"sanitized.cu:{line_of(SAN_SRC, marker)}" in err[0], err[0]
    print(err[0])


def test_defines_reach_the_kernel_and_other_flags_are_refused(tmp_path):
    from grader.compile.cpu import compile_library

    src = NAIVE.replace("acc += A", "acc += SCALE * A")  # SCALE comes only from -D
    out = tmp_path / "scaled.so"
    compile_library(src, out, filename="scaled.cu", prelude=declarations("naive"), defines=("-DSCALE=2.0f",))
    lib = Lib(out)
    a, b, c = (np.ones((3, 3), np.float32) for _ in range(3))
    import ctypes

    lib.dll.gemm(*(ctypes.c_void_p(x.ctypes.data) for x in (a, b, c)), 3, 3, 3, None)
    assert lib.error() is None and np.all(c == 6.0)
    with pytest.raises(ValueError, match="only -D/-U"):
        compile_library(src, tmp_path / "x.so", filename="x.cu", defines=("-Xptxas=-v",))


PROBE = textwrap.dedent("""\
    #include <cuda_runtime.h>
    __global__ void k(float* out) { extern __shared__ float s[]; s[0] = 1.f; out[0] = s[0]; }
    extern "C" int probe(int bytes) {  // what cudaFuncSetAttribute answers for this many bytes
        return (int)cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    }
    """)


def test_shared_memory_above_the_gpus_limit_is_refused_as_on_a_gpu(monkeypatch):
    lib = Lib(build(PROBE, "smem_probe"))
    assert lib.dll.probe(64 * 1024) == 0  # the emulated T4 allows 64 KB per block
    assert lib.dll.probe(64 * 1024 + 4) == 1  # cudaErrorInvalidValue
    monkeypatch.setenv("CUDA_EMU_MAX_DYN_SMEM", str(227 * 1024))  # play an H200
    assert lib.dll.probe(100 * 1024) == 0 and lib.dll.probe(228 * 1024) == 1


def test_check_says_could_not_grade_with_exit_2_for_a_construct_the_backend_lacks(tmp_path, capsys):
    from grader.cli import main

    src = NAIVE.replace("float acc = 0.f;", 'float acc = 0.f; asm volatile("membar.gl;");')
    f = tmp_path / "mine.cu"
    f.write_text(src)
    assert main(["check", "naive", str(f), "--backend", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "could not grade on the CPU backend" in err and f"mine.cu:{line_of(src, 'membar')}:" in err, err


def test_the_branch_that_compiles_here_is_the_one_scanned():
    """`#if __CUDA_ARCH__ < 800` holds the fallback and `#else` the sm_80 asm: this backend compiles the
    fallback, so the asm in the other branch is no reason to refuse the file (it was refused)."""
    body = '\n#if __CUDA_ARCH__ < 800\n        acc = 1.f;\n#else\n        asm volatile("membar.gl;");\n#endif\n'
    assert build(NAIVE.replace("float acc = 0.f;", "float acc = 0.f;" + body), "arch_else").exists()
    flipped = '\n#if __CUDA_ARCH__ >= 800\n        acc = 1.f;\n#else\n        asm volatile("membar.gl;");\n#endif\n'
    with pytest.raises(NotOnCpu):  # here the asm is what compiles
        build(NAIVE.replace("float acc = 0.f;", "float acc = 0.f;" + flipped), "arch_else2")
