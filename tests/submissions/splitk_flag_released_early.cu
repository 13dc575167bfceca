// Known bad (the flag is released before the slice's update): the serial split-K of b11 (slice z waits until the
// tile's flag is z, then updates C and passes the flag on), but thread 0 passes the flag on to slice z+1 right
// after it has waited for it, before the block adds its partial sums: two slices update C at the same time.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K, int* flags) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    int q = (K + gridDim.z - 1) / gridDim.z, k0 = blockIdx.z * q, k1 = min(K, k0 + q);
    float s = 0.0f;
    if (r < M && c < N)
        for (int kk = k0; kk < k1; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
    int* flag = &flags[blockIdx.y * gridDim.x + blockIdx.x];
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        while (atomicAdd(flag, 0) != (int)blockIdx.z) {}
        __threadfence();
        atomicExch(flag, (int)blockIdx.z + 1);  // BUG: released before this slice's update below
    }
    __syncthreads();
    if (r < M && c < N) {
        if (blockIdx.z == 0) C[(size_t)r * N + c] = s;
        else C[(size_t)r * N + c] += s;
    }
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
