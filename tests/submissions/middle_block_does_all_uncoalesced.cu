// Known bad (cheats the access profile's sample): one block in the middle of the grid computes all of C with the
// uncoalesced mapping (row of C on threadIdx.x, walking down columns), grid-stride; the other blocks make one
// coalesced load of B each. A sample of a few blocks rarely holds that one, and looks coalesced.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    if (blockIdx.x == gridDim.x / 2 && blockIdx.y == gridDim.y / 2) {
        for (int c = threadIdx.y; c < N; c += blockDim.y)
            for (int r = threadIdx.x; r < M; r += blockDim.x) {
                float s = 0.0f;
                for (int kk = 0; kk < K; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
                C[(size_t)r * N + c] = s;
            }
    } else {
        const int c = blockIdx.x * 32 + threadIdx.x;
        volatile float v = c < N ? B[c] : 0.0f;
        (void)v;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8);
    k<<<g, b, 0, st>>>(A, B, C, M, N, K);
}
