"""The nvcc side of the toolchain, compile-only (no GPU needed)."""

from pathlib import Path

import pytest

from grader import CompileError
from grader.compile import toolchain

GOOD = """#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) { float s = 0; for (int i = 0; i < K; ++i) s += A[row * K + i] * B[i * N + col]; C[row * N + col] = s; }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    k<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
"""


@pytest.mark.nvcc
def test_resource_usage_reports_registers_without_a_gpu():
    usage = toolchain.resource_usage(GOOD, exercise="naive", arch="sm_80")
    assert len(usage) == 1 and usage[0].registers > 0 and usage[0].spill_stores == 0
    assert "registers" in str(usage[0])


@pytest.mark.nvcc
def test_compile_error_points_at_the_learners_own_line():
    src = GOOD.replace("float s = 0;", "float s = 0; undefined_name += 1;")
    with pytest.raises(CompileError) as e:
        toolchain.resource_usage(src, exercise="naive", arch="sm_80", filename="mine.cu")
    msg = str(e.value)
    assert "mine.cu(4)" in msg and "undefined_name" in msg
    assert "/tmp" not in msg


@pytest.mark.nvcc
def test_launcher_with_the_wrong_signature_is_a_compile_error():
    src = GOOD.replace("int M, int N, int K, cudaStream_t stream)", "int M, int N, int K)")
    with pytest.raises(CompileError) as e:
        toolchain.resource_usage(src, exercise="naive", arch="sm_80", filename="mine.cu")
    assert "mine.cu(6)" in str(e.value) and "must be exactly" in str(e.value)


def test_cpu_backend_names_the_contract_when_a_launcher_signature_differs():
    src = GOOD.replace("int M, int N, int K, cudaStream_t stream)", "int M, int N, double K, cudaStream_t stream)")
    with pytest.raises(CompileError) as e:
        toolchain.build(src, backend="cpu", exercise="naive", filename="mine.cu")
    assert "must be exactly" in str(e.value) and "int K, cudaStream_t stream" in str(e.value)


def test_parse_ptxas_reads_spills_and_shared_memory():
    log = """ptxas info    : Compiling entry function '_Z1kPKfS0_Pfiii' for 'sm_90'
ptxas info    : Function properties for _Z1kPKfS0_Pfiii
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 8192 bytes smem, 380 bytes cmem[0]
"""
    (k,) = toolchain.parse_ptxas(log)
    assert (k.registers, k.shared_bytes, k.spill_stores, k.spill_loads, k.stack_bytes) == (40, 8192, 8, 4, 16)
    assert "SPILLS" in str(k)


def test_build_without_gpu_for_cuda_backend_says_how_to_fix(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(Exception) as e:
        toolchain.build(GOOD, backend="cuda", exercise="naive")
    assert "--backend cpu" in str(e.value) or "nvcc" in str(e.value)


def test_a_compile_that_outlasts_the_limit_is_a_clear_compile_error(monkeypatch):
    monkeypatch.setattr(toolchain, "COMPILE_TIMEOUT_S", 0.01)
    with pytest.raises(CompileError, match="did not finish within"):
        toolchain.build(GOOD + "\n// timeout test\n", backend="cpu", exercise="naive")


def test_a_compiler_process_past_the_memory_limit_is_stopped():
    from grader.compile import procs

    # python allocating 600 MB under a 256 MiB limit: stopped by the limit, which its children inherit
    grab = ["python3", "-c", "b = bytearray(600 << 20); print(len(b))"]
    with pytest.raises(CompileError, match="ran out of memory"):
        procs.run_all([grab], timeout=60, memory_mb=256)
    ((rc, out),) = procs.run_all([["sh", "-c", "echo fine"]], timeout=60, memory_mb=256)
    assert (rc, out.strip()) == (0, "fine")


def test_a_preprocessor_bomb_is_a_clear_compile_error_not_a_full_machine(monkeypatch):
    """Each macro uses the one before twice: 20 steps expand to 2^20 copies (about 1 GB in cc1plus, and
    every further step doubles it). Under a 256 MiB limit the build stops with a message, quickly."""
    import time
    from grader.compile import procs

    steps = "\n".join(f"#define X{i + 1} X{i} X{i}" for i in range(20))
    bomb = GOOD + f"\n#define X0 1+\n{steps}\nstatic int bomb = X20 1;\n"
    monkeypatch.setattr(procs, "COMPILE_MEMORY_MB", 256, raising=False)  # (it ran before the limit existed)
    t0 = time.monotonic()
    with pytest.raises(CompileError, match="ran out of memory"):
        toolchain.build(bomb, backend="cpu", exercise="naive")
    assert time.monotonic() - t0 < 60


def test_a_timeout_kills_the_compilers_children_too():
    """A compiler driver's children (cc1plus, cicc) hold the output pipe: the limit must stop them
    as well, or `--compile-timeout 20` waits for them (it once took 244 s)."""
    import os
    import time
    from grader.compile import procs

    secs = f"{30 + os.getpid() % 1000 / 1000:.3f}"  # a sleep this test can find again
    t0 = time.monotonic()
    # the driver (sh) starts a child that outlives it unless the whole process group is killed
    assert procs.run_all([["sh", "-c", f"sleep {secs} & wait"]], timeout=1.0) is None
    assert time.monotonic() - t0 < 5
    time.sleep(0.2)

    def cmdline(pid: str) -> bytes:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return b""

    assert not [p for p in os.listdir("/proc") if p.isdigit() and secs.encode() in cmdline(p)]
    assert procs.run_all([["sh", "-c", "echo hi"]], timeout=5) == [(0, "hi\n")]


# What g++ accepts and nvcc refuses: the CPU backend also runs nvcc's device compile (sm_75) where nvcc is installed.
NVCC_ONLY_ERRORS = {
    "std_min_in_device_code": (
        ("#include <cuda_runtime.h>", "#include <cuda_runtime.h>\n#include <algorithm>"),
        ("C[row * N + col] = s;", "C[row * N + col] = std::min(s, 1e30f);"),
        r"mine\.cu\(5\): error: calling a constexpr __host__ function",
    ),
    "host_function_called_by_a_kernel": (
        ("__global__ void k(", "float twice(float v) { return 2 * v; }\n__global__ void k("),
        ("C[row * N + col] = s;", "C[row * N + col] = twice(s);"),
        r"mine\.cu\(5\): error: calling a __host__ function",
    ),
    "device_lambda_without_extended_lambda": (
        ("dim3 block(16, 16)", "auto f = [] __device__ (float v) { return v; }; (void)f; dim3 block(16, 16)"),
        ("", ""),
        r"mine\.cu\(7\): error: __host__ or __device__ annotation on lambda requires --extended-lambda",
    ),
    "static_shared_memory_over_48_kb": (
        ("float s = 0;", "__shared__ float big[12289]; big[threadIdx.x] = 1.f; float s = big[(threadIdx.x + 1) % 64];"),
        ("", ""),
        r"ptxas error\s*: Entry function .* uses too much shared data \(0xc004 bytes, 0xc000 max\)",
    ),
}


@pytest.mark.nvcc
@pytest.mark.parametrize("case", sorted(NVCC_ONLY_ERRORS))
def test_the_cpu_backend_refuses_what_nvcc_refuses(case):
    import re

    (a, b), (c, d), pattern = NVCC_ONLY_ERRORS[case]
    src = GOOD.replace(a, b).replace(c, d)
    assert src != GOOD
    with pytest.raises(CompileError) as e:
        toolchain.build(src, backend="cpu", exercise="naive", filename="mine.cu")
    assert re.search(pattern, str(e.value)), str(e.value)
    assert "/tmp" not in str(e.value)


@pytest.mark.nvcc
def test_the_device_compile_runs_beside_g_plus_plus_and_a_good_file_builds():
    build = toolchain.build(GOOD, backend="cpu", exercise="naive", filename="mine.cu")
    assert build.path.exists() and not build.cached


def test_without_nvcc_the_cpu_backend_builds_as_before(monkeypatch):
    monkeypatch.setattr(toolchain, "find_nvcc", lambda: None)
    src = GOOD.replace("C[row * N + col] = s;", "C[row * N + col] = std::min(s, 1e30f);").replace(
        "#include <cuda_runtime.h>", "#include <cuda_runtime.h>\n#include <algorithm>"
    )
    assert toolchain.build(src, backend="cpu", exercise="naive", filename="mine.cu").path.exists()
