// Known bad (relies on block order): block (0,0,0) zeroes a cudaMalloc accumulator with plain stores, then every
// block (4 K-slices in z) atomicAdds its partial sums into it; a second kernel copies it into C. On a GPU another
// block's atomicAdd may land before block (0,0,0)'s zeroing, which then wipes it.
#include <cuda_runtime.h>
__global__ void part(const float* A, const float* B, float* acc, int M, int N, int K) {
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) {
        for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < M * N; i += blockDim.x * blockDim.y) acc[i] = 0.0f;
        __syncthreads();
    }
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    int q = (K + gridDim.z - 1) / gridDim.z, k0 = blockIdx.z * q, k1 = min(K, k0 + q);
    if (r < M && c < N) {
        float s = 0.0f;
        for (int kk = k0; kk < k1; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
        atomicAdd(&acc[(size_t)r * N + c], s);
    }
}
__global__ void copy(const float* acc, float* C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = acc[i];
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    float* acc = nullptr;
    size_t n = (size_t)M * N;
    cudaMalloc(&acc, n * sizeof(float));
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8, 4);
    part<<<g, b, 0, st>>>(A, B, acc, M, N, K);
    copy<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(acc, C, (int)n);
    cudaFree(acc);
}
