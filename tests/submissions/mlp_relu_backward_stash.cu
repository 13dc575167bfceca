// Known bad (relu_backward ignores its mask): gemm_relu keeps its C pointer, and relu_backward
// recomputes C > 0 through it instead of reading the mask it is given; gemm_relu and gemm are right.
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

static const float* g_C;  // the last gemm_relu's output
extern "C" void gemm_relu(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                          int M, int N, int K, cudaStream_t stream) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    gemm_kernel<true><<<grid, block, 0, stream>>>(A, B, bias, C, M, N, K, N);
    int W = (N + 31) / 32;
    mask_kernel<<<dim3((W + 31) / 32, M), 32, 0, stream>>>(C, mask, M, N, W);
    g_C = C;
}

__global__ void bwd(const float* C, const float* dY, float* dX, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dX[i] = C[i] > 0.0f ? dY[i] : 0.0f;
}
extern "C" void relu_backward(const uint32_t* mask, const float* dY, float* dX, int M, int N, cudaStream_t stream) {
    bwd<<<(int)(((long long)M * N + 255) / 256), 256, 0, stream>>>(g_C, dY, dX, (long long)M * N);
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    gemm_kernel<false><<<grid, block, 0, stream>>>(A, B, nullptr, C, M, N, K, N);
}
