// Known bad (race between a store and atomics): split-K over gridDim.z = 2; the blocks of slice
// z = 0 store their partial sums into C with a plain store, those of slice 1 atomicAdd theirs.
// Right only if every z = 0 block runs before the z = 1 block of its tile (the CPU backend's
// serial order); on a GPU the atomicAdd may land first and the store then overwrites it.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    int half = (K + 1) / 2, k0 = blockIdx.z * half, k1 = min(K, k0 + half);
    if (r < M && c < N) {
        float s = 0;
        for (int k = k0; k < k1; ++k) s += A[r * K + k] * B[k * N + c];
        if (blockIdx.z == 0) C[r * N + c] = s;  // BUG: a plain store, unordered with slice 1's atomicAdd
        else atomicAdd(&C[r * N + c], s);
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 b(16, 16), g((N + 15) / 16, (M + 15) / 16, 2);
    k<<<g, b, 0, stream>>>(A, B, C, M, N, K);
}
