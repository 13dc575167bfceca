// Known bad (gemm wrong for non-square shapes): gemm's grid swaps M and N (x must cover the N columns,
// y the M rows), so where M != N rows or columns are never written; gemm_relu and relu_backward are right.
#include <cuda_runtime.h>
#include <cstdint>
// C = A . B (+ bias, ReLU and the mask when EPI): one thread per element of C
template <bool EPI>
__global__ void gemm_kernel(const float* A, const float* B, const float* bias, float* C, int M, int N, int K, int ldb) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * ldb + col];
    if (EPI) { acc += bias[col]; acc = acc > 0.0f ? acc : 0.0f; }
    C[(size_t)row * N + col] = acc;
}
// one thread per mask word, from C
__global__ void mask_kernel(const float* C, uint32_t* mask, int M, int N, int W) {
    int row = blockIdx.y, word = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || word >= W) return;
    uint32_t bits = 0;
    for (int j = 0; j < 32 && word * 32 + j < N; ++j) bits |= (C[(size_t)row * N + word * 32 + j] > 0.0f) << j;
    mask[(size_t)row * W + word] = bits;
}

extern "C" void gemm_relu(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                          int M, int N, int K, cudaStream_t stream) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    gemm_kernel<true><<<grid, block, 0, stream>>>(A, B, bias, C, M, N, K, N);
    int W = (N + 31) / 32;
    mask_kernel<<<dim3((W + 31) / 32, M), 32, 0, stream>>>(C, mask, M, N, W);
}

__global__ void bwd(const uint32_t* mask, const float* dY, float* dX, int M, int N, int W) {
    int row = blockIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    size_t i = (size_t)row * N + col;
    dX[i] = (mask[(size_t)row * W + col / 32] >> (col % 32)) & 1u ? dY[i] : 0.0f;
}
extern "C" void relu_backward(const uint32_t* mask, const float* dY, float* dX, int M, int N, cudaStream_t stream) {
    bwd<<<dim3((N + 127) / 128, M), 128, 0, stream>>>(mask, dY, dX, M, N, (N + 31) / 32);
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(16, 16), grid((M + 15) / 16, (N + 15) / 16);
    gemm_kernel<false><<<grid, block, 0, stream>>>(A, B, nullptr, C, M, N, K, N);
}
