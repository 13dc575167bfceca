// Known bad (tiled): a naive kernel (one thread per C element, no tiles) that reads copies of A and B which two
// copy kernels put in a cudaMalloc'd scratch block (red team A): the access profile must count every global
// access to device memory, not only the launcher's buffers, so it must fail bytes_per_flop.
#include <cuda_runtime.h>
__global__ void naive(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int i = 0; i < K; ++i) s += A[(size_t)row * K + i] * B[(size_t)i * N + col];
        C[(size_t)row * N + col] = s;
    }
}
__global__ void copy(const float* __restrict__ src, float* dst, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    static float* scratch = nullptr;
    static size_t have = 0;
    size_t need = ((size_t)M * K + (size_t)K * N) * sizeof(float);
    if (need > have) {
        if (scratch) cudaFree(scratch);
        cudaMalloc(&scratch, need);
        have = need;
    }
    float* a = scratch;
    float* b = scratch + (size_t)M * K;
    size_t na = (size_t)M * K, nb = (size_t)K * N;
    copy<<<(unsigned)((na + 255) / 256), 256, 0, stream>>>(A, a, na);
    copy<<<(unsigned)((nb + 255) / 256), 256, 0, stream>>>(B, b, nb);
    naive<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, stream>>>(a, b, C, M, N, K);
}
