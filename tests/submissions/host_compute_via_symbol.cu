// Known bad (host does the work): A and B fetched with cudaMemcpy (device to host), C computed on the host and
// copied into a __device__ array with cudaMemcpyToSymbol; a kernel copies the array into C (times 1: plus a
// coalesced load of B, times 0, so the access profile has loads to count).
#include <cuda_runtime.h>
#include <vector>
__device__ float staged[1 << 20];
__global__ void copy_out(const float* B, float* C, int M, int N) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) C[(size_t)r * N + c] = staged[(size_t)r * N + c] * 1.0f + 0.0f * B[c];
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    if ((size_t)M * N > (1u << 20)) return;
    std::vector<float> a((size_t)M * K), b((size_t)K * N), c((size_t)M * N, 0.0f);
    cudaMemcpy(a.data(), A, a.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), B, b.size() * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < M; ++i)
        for (int k = 0; k < K; ++k)
            for (int j = 0; j < N; ++j) c[(size_t)i * N + j] += a[(size_t)i * K + k] * b[(size_t)k * N + j];
    cudaMemcpyToSymbol(staged, c.data(), c.size() * sizeof(float));
    dim3 bl(32, 8), g((N + 31) / 32, (M + 7) / 8);
    copy_out<<<g, bl, 0, st>>>(B, C, M, N);
}
