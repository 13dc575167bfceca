// Known bad (tiled): scratch_copy_naive.cu with a __device__ array as the scratch: copy kernels put A and B in
// g_copy, a naive kernel (no tiles) reads them from there (every dimension of the profile shapes fits). The access
// profile must count __device__ arrays as global memory too: must fail bytes_per_flop.
#include <cuda_runtime.h>
#define CAP (2 * 640 * 640)
__device__ float g_copy[CAP];
__global__ void naive(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int i = 0; i < K; ++i) s += A[(size_t)row * K + i] * B[(size_t)i * N + col];
        C[(size_t)row * N + col] = s;
    }
}
__global__ void copy(const float* __restrict__ src, size_t at, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) g_copy[at + i] = src[i];
}
__global__ void naive_copies(float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    const float* a = g_copy;
    const float* b = g_copy + (size_t)M * K;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int i = 0; i < K; ++i) s += a[(size_t)row * K + i] * b[(size_t)i * N + col];
        C[(size_t)row * N + col] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    size_t na = (size_t)M * K, nb = (size_t)K * N;
    dim3 grid((N + 15) / 16, (M + 15) / 16), block(16, 16);
    if (na + nb > CAP) {
        naive<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
        return;
    }
    copy<<<(unsigned)((na + 255) / 256), 256, 0, stream>>>(A, 0, na);
    copy<<<(unsigned)((nb + 255) / 256), 256, 0, stream>>>(B, na, nb);
    naive_copies<<<grid, block, 0, stream>>>(C, M, N, K);
}
