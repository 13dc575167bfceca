// Known bad (relies on block order): split-K in 3 z-slices; slices 0 and 1 store their partial sums in a cudaMalloc
// scratch buffer and slice 2 adds them to its own into C, assuming they have run. The CPU backend runs blocks in
// order (z last); a GPU runs the slices at the same time, in any order.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K, float* part) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    int q = (K + gridDim.z - 1) / gridDim.z, k0 = blockIdx.z * q, k1 = min(K, k0 + q);
    if (r < M && c < N) {
        size_t mn = (size_t)M * N, i = (size_t)r * N + c;
        float s = 0.0f;
        for (int kk = k0; kk < k1; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
        if (blockIdx.z + 1 < gridDim.z) part[blockIdx.z * mn + i] = s;
        else C[i] = s + part[i] + part[mn + i];  // BUG: nothing orders this after slices 0 and 1
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    float* part = nullptr;
    cudaMalloc(&part, (size_t)2 * M * N * sizeof(float));
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8, 3);
    k<<<g, b, 0, st>>>(A, B, C, M, N, K, part);
    cudaFree(part);
}
