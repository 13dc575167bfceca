// Known bad (race): split-K over 4 blocks in z into a cudaMalloc scratch buffer with a plain
// read-modify-write (acc[i] += s) instead of atomicAdd; a second kernel copies it into C.
// Blocks run one after another on the CPU, so no update is lost there; on a GPU they are.
#include <cuda_runtime.h>
__global__ void part(const float* A, const float* B, float* acc, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    int q = (K + gridDim.z - 1) / gridDim.z, k0 = blockIdx.z * q, k1 = min(K, k0 + q);
    if (r < M && c < N) {
        float s = 0.0f;
        for (int k = k0; k < k1; ++k) s += A[(size_t)r * K + k] * B[(size_t)k * N + c];
        acc[(size_t)r * N + c] += s;
    }
}
__global__ void copy(const float* acc, float* C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = acc[i];
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    float* acc;
    size_t n = (size_t)M * N;
    cudaMallocAsync((void**)&acc, n * 4, st);
    cudaMemsetAsync(acc, 0, n * 4, st);
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8, 4);
    part<<<g, b, 0, st>>>(A, B, acc, M, N, K);
    copy<<<(n + 255) / 256, 256, 0, st>>>(acc, C, (int)n);
    cudaFreeAsync(acc, st);
}
