// Known bad (depends on block order): block (0,0) copies B into a __device__ array; every other block reads B from
// there, assuming block (0,0) has run. The CPU backend runs blocks in order; a GPU runs them in any order.
#include <cuda_runtime.h>
__device__ float gB[1 << 20];
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    if (blockIdx.x == 0 && blockIdx.y == 0) {
        for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < K * N; i += blockDim.x * blockDim.y) gB[i] = B[i];
        __syncthreads();
    }
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float s = 0.0f;
        for (int kk = 0; kk < K; ++kk) s += A[(size_t)r * K + kk] * gB[(size_t)kk * N + c];
        C[(size_t)r * N + c] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    if ((size_t)K * N > (1u << 20)) return;
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8);
    k<<<g, b, 0, st>>>(A, B, C, M, N, K);
}
