// Known good: the launcher uploads a table it computes on the host (each column's index into B, with
// cudaMemcpyAsync into a cudaMalloc block: here the identity); the kernel gathers B's columns through it.
// Host data in device memory is fine as long as the kernels compute the outputs.
#include <cuda_runtime.h>
#include <vector>
__global__ void k(const float* A, const float* B, const int* col_of, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        const int bc = col_of[c];
        float s = 0.0f;
        for (int kk = 0; kk < K; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + bc];
        C[(size_t)r * N + c] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    std::vector<int> cols(N);
    for (int c = 0; c < N; ++c) cols[c] = c;
    int* d = nullptr;
    cudaMalloc(&d, (size_t)N * sizeof(int));
    cudaMemcpyAsync(d, cols.data(), (size_t)N * sizeof(int), cudaMemcpyHostToDevice, st);
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8);
    k<<<g, b, 0, st>>>(A, B, d, C, M, N, K);
    cudaStreamSynchronize(st);
    cudaFree(d);
}
