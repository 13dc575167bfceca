// Known good: split-K naive GEMM: C is zeroed with cudaMemsetAsync on the stream, then three
// K-slices (gridDim.z) add their partial sums with atomicAdd (in any order: within tolerance).
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    int q = (K + gridDim.z - 1) / gridDim.z, k0 = blockIdx.z * q, k1 = min(K, k0 + q);
    if (r < M && c < N && k0 < k1) {
        float s = 0.0f;
        for (int k = k0; k < k1; ++k) s += A[(size_t)r * K + k] * B[(size_t)k * N + c];
        atomicAdd(&C[(size_t)r * N + c], s);
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    cudaMemsetAsync(C, 0, sizeof(float) * (size_t)M * N, st);
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8, 3);
    k<<<g, b, 0, st>>>(A, B, C, M, N, K);
}
