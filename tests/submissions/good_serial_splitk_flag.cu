// Known good (CUTLASS-style serial split-K): 2 K-slices in z; slice z waits on a per-tile flag until it
// equals z (atomic load), adds its partial into C (slice 0 stores), __threadfence(), then releases
// the flag to z+1. The flag orders the slices' accesses to C. Flags: cudaMalloc'd, zeroed per call.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K, int* flags) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    int q = (K + gridDim.z - 1) / gridDim.z, k0 = blockIdx.z * q, k1 = min(K, k0 + q);
    float s = 0.0f;
    if (r < M && c < N)
        for (int kk = k0; kk < k1; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
    int* flag = &flags[blockIdx.y * gridDim.x + blockIdx.x];
    if (threadIdx.x == 0 && threadIdx.y == 0)
        while (atomicAdd(flag, 0) != (int)blockIdx.z) {}
    __syncthreads();
    __threadfence();
    if (r < M && c < N) {
        if (blockIdx.z == 0) C[(size_t)r * N + c] = s;
        else C[(size_t)r * N + c] += s;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) atomicExch(flag, (int)blockIdx.z + 1);
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8, 2);
    static int* flags = nullptr;
    static size_t cap = 0;
    size_t n = (size_t)g.x * g.y * sizeof(int);
    if (n > cap) { cudaFree(flags); cudaMalloc(&flags, n); cap = n; }
    cudaMemsetAsync(flags, 0, n, st);
    k<<<g, b, 0, st>>>(A, B, C, M, N, K, flags);
}
