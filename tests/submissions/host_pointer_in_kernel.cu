// Known bad (host does the work): kernels copy A and B into host vectors through plain host pointers (on a GPU
// that faults), the host computes C, and a kernel reads it from a host vector into C. On the CPU backend: refused at
// the first launch with a host pointer (line 14).
#include <cuda_runtime.h>
#include <vector>
__global__ void fetch(const float* src, float* host, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) host[i] = src[i];
}
__global__ void put(const float* host, float* C, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) C[i] = host[i];
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    std::vector<float> a((size_t)M * K), b((size_t)K * N), c((size_t)M * N);
    fetch<<<8, 256, 0, st>>>(A, a.data(), a.size());
    fetch<<<8, 256, 0, st>>>(B, b.data(), b.size());
    cudaStreamSynchronize(st);
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col) {
            float s = 0.0f;
            for (int k = 0; k < K; ++k) s += a[(size_t)r * K + k] * b[(size_t)k * N + col];
            c[(size_t)r * N + col] = s;
        }
    put<<<8, 256, 0, st>>>(c.data(), C, c.size());
    cudaStreamSynchronize(st);
}
