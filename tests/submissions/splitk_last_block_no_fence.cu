// Known bad (no __threadfence before the count): the last-block split-K of good_splitk_last_block_fence.cu
// without the fence: a slice may count itself done before its partial sums are visible to the last slice,
// which then adds stale scratch memory. On the CPU backend the slices run one after another.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K, float* part, unsigned* count) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    int q = (K + gridDim.z - 1) / gridDim.z, k0 = blockIdx.z * q, k1 = min(K, k0 + q);
    size_t mn = (size_t)M * N;
    if (r < M && c < N) {
        float s = 0.0f;
        for (int kk = k0; kk < k1; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
        part[blockIdx.z * mn + (size_t)r * N + c] = s;
    }
    // BUG: no __threadfence() here
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0)
        last = atomicAdd(&count[blockIdx.y * gridDim.x + blockIdx.x], 1u) == gridDim.z - 1;
    __syncthreads();
    if (last && r < M && c < N) {
        float s = 0.0f;
        for (unsigned z = 0; z < gridDim.z; ++z) s += part[z * mn + (size_t)r * N + c];
        C[(size_t)r * N + c] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8, 3);
    float* part = nullptr;
    unsigned* count = nullptr;
    cudaMallocAsync(&part, (size_t)3 * M * N * sizeof(float), st);
    cudaMallocAsync(&count, (size_t)g.x * g.y * sizeof(unsigned), st);
    cudaMemsetAsync(count, 0, (size_t)g.x * g.y * sizeof(unsigned), st);
    k<<<g, b, 0, st>>>(A, B, C, M, N, K, part, count);
    cudaFreeAsync(part, st);
    cudaFreeAsync(count, st);
}
