"""Benchmark the CPU backend against the issue's targets (not a unit test).

    python benchmarks/cpu_backend.py

Targets on the 2-core CI machine: kernel-file compile <= 5 s; 16x16 tiled SGEMM
256^3 <= 0.3 s and 512^3 <= 2 s (compile excluded). Times are the best of a few runs,
(wall clock, and CPU time, which a busy machine inflates less) for each race-detector setting of cuda_emu_configure (0: off, 1: sampled blocks, the
default; 3: every block).
"""

from __future__ import annotations

import ctypes
import pathlib
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from grader.spec.contract import GEMM  # noqa: E402
from grader.spec.exercises import declarations  # noqa: E402
from grader.compile.cpu import compile_library  # noqa: E402

TILED = r"""
#define TILE 16
__global__ void tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                      int M, int N, int K) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.f;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    tiled<<<dim3((N + TILE - 1) / TILE, (M + TILE - 1) / TILE), dim3(TILE, TILE), 0, stream>>>(A, B, C, M, N, K);
}
"""
TARGETS = {256: 0.3, 512: 2.0}
COMPILE_TARGET = 5.0


def main() -> int:
    ok = True
    with tempfile.TemporaryDirectory() as d:
        so = pathlib.Path(d) / "tiled.so"
        t = time.perf_counter()
        compile_library(TILED, so, prelude=declarations("tiled"))
        dt = time.perf_counter() - t
        ok &= dt <= COMPILE_TARGET
        print(f"compile: {dt:.2f} s (target <= {COMPILE_TARGET} s)")
        lib = ctypes.CDLL(str(so))
        lib.gemm.argtypes = GEMM.argtypes
        lib.cuda_emu_take_error.restype = ctypes.c_char_p
        rng = np.random.default_rng(0)
        for flags, label in ((0, "race check off"), (1, "race check sampled (default)"), (3, "race check all blocks")):
            lib.cuda_emu_configure(0, flags)
            for n, target in TARGETS.items():
                a = rng.standard_normal((n, n), dtype=np.float32)
                b = rng.standard_normal((n, n), dtype=np.float32)
                c = np.zeros((n, n), np.float32)
                best = best_cpu = float("inf")
                for _ in range(3 if n <= 256 else 2):
                    t, tc = time.perf_counter(), time.process_time()
                    lib.gemm(a.ctypes.data, b.ctypes.data, c.ctypes.data, n, n, n, None)
                    best = min(best, time.perf_counter() - t)
                    best_cpu = min(best_cpu, time.process_time() - tc)
                err = lib.cuda_emu_take_error()
                correct = err is None and np.allclose(c, a @ b, rtol=1e-3, atol=1e-3)
                met = best <= target
                if flags == 1:
                    ok &= met and correct
                print(
                    f"{label:30s} {n}^3 tiled 16x16: {best:.3f} s, CPU {best_cpu:.3f} s (target <= {target} s)"
                    f"{'' if met else '  MISSED'}{'' if correct else '  WRONG: ' + str(err)}"
                )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
