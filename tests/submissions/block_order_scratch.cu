// Known bad (depends on block order): block (0,0) copies all of B into a cudaMalloc scratch buffer; every
// other block reads B from the scratch, assuming block (0,0) has already run. The CPU backend runs
// blocks in order; a GPU does not (and has no grid-wide ordering inside a launch).
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* Bs, float* C, int M, int N, int K) {
    if (blockIdx.x == 0 && blockIdx.y == 0) {
        for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < K * N; i += blockDim.x * blockDim.y) Bs[i] = B[i];
        __syncthreads();
    }
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float s = 0.0f;
        for (int kk = 0; kk < K; ++kk) s += A[(size_t)r * K + kk] * Bs[(size_t)kk * N + c];
        C[(size_t)r * N + c] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    static float* Bs = nullptr;
    static size_t cap = 0;
    size_t need = (size_t)K * N * 4;
    if (need > cap) { if (Bs) cudaFree(Bs); cudaMalloc(&Bs, need); cap = need; }
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8);
    k<<<g, b, 0, st>>>(A, B, Bs, C, M, N, K);
}
