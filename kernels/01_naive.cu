// 01_naive.cu — exercise `naive`: one thread per element of C (the seed article's kernel).
//
// What it does: thread (threadIdx.y, threadIdx.x) of a 16x16 block computes C[cRow][cCol],
// a dot product of row cRow of A with column cCol of B, straight from global memory.
//
// Why it is (already) coalesced: cCol comes from threadIdx.x, so the 32 lanes of a warp
// (consecutive threadIdx.x) read 32 consecutive floats of one row of B (one 128-byte line)
// and write 32 consecutive floats of C; all lanes read the same A[cRow][k] (a broadcast).
// Compare 01a_naive_uncoalesced.cu, where the roles of x and y are swapped.
//
// Cost model: 2*M*N*K FLOPs; every FMA needs two 4-byte loads (A and B), an arithmetic
// intensity of 0.25 FLOP/byte from L1/L2 — the caches, not HBM, bound this kernel.
// Measured on the H200 (2026-11-30, kernels/README.md): 5.36 TFLOP/s at 4096^3 (11.2 % of cuBLAS FP32), 5.5x the uncoalesced 01a.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int BLOCK_DIM = 16;  // 16 x 16 = 256 threads per block, as in the seed

// A: M x K, B: K x N, C: M x N, all row-major float32.
__global__ void naive_gemm_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    const int cRow = blockIdx.y * blockDim.y + threadIdx.y;  // row of C (varies slowly in a warp)
    const int cCol = blockIdx.x * blockDim.x + threadIdx.x;  // column of C (consecutive in a warp)
    if (cRow < M && cCol < N) {
        float sum = 0.0f;
        for (int kIdx = 0; kIdx < K; ++kIdx) {
            sum += A[(size_t)cRow * K + kIdx] * B[(size_t)kIdx * N + cCol];
        }
        C[(size_t)cRow * N + cCol] = sum;
    }
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(BLOCK_DIM, BLOCK_DIM);
    dim3 grid((N + BLOCK_DIM - 1) / BLOCK_DIM, (M + BLOCK_DIM - 1) / BLOCK_DIM);
    naive_gemm_kernel<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
