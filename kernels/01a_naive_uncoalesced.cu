// 01a_naive_uncoalesced.cu — the "before" of the coalescing lesson (also a valid `naive` submission).
//
// What changed from 01_naive.cu: the row of C now comes from threadIdx.x and the column from
// threadIdx.y. Same arithmetic, same number of loads — only which thread loads what.
//
// Why it is slower: the 32 lanes of a warp now have 32 different rows cRow and one column.
// Their B loads collapse to one address (a broadcast, fine), but their A loads hit 32
// different rows, K floats apart: 32 separate 32-byte sectors per warp load instead of one
// 128-byte line, and the C stores scatter the same way. The memory system moves ~8x the bytes
// that are used, so the kernel runs several times slower than 01_naive.cu.
// Measured on the H200 (2026-11-30, kernels/README.md): 0.97 TFLOP/s at 4096^3 (2.0 % of cuBLAS FP32); 01_naive.cu is 5.5x faster.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int BLOCK_DIM = 16;  // 16 x 16 = 256 threads per block

// A: M x K, B: K x N, C: M x N, all row-major float32.
__global__ void naive_uncoalesced_gemm_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    const int cRow = blockIdx.x * blockDim.x + threadIdx.x;  // row of C: consecutive in a warp (bad)
    const int cCol = blockIdx.y * blockDim.y + threadIdx.y;  // column of C: the same in a half-warp
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
    dim3 grid((M + BLOCK_DIM - 1) / BLOCK_DIM, (N + BLOCK_DIM - 1) / BLOCK_DIM);  // x walks rows now
    naive_uncoalesced_gemm_kernel<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
