// Known bad (cheats the access profile): 01a's uncoalesced mapping (row on threadIdx.x: A and C walk down columns)
// padded with 24 useless warp-broadcast loads per step of k (every lane reads the same word), which
// are "ideal" and pull sectors_over_ideal_ld under the naive bound of 3.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < M && c < N) {
        float s = 0.0f, junk = 0.0f;
        for (int kk = 0; kk < K; ++kk) {
            s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
            const volatile float* p = B + (size_t)kk * N;
#pragma unroll
            for (int j = 0; j < 24; ++j) junk += p[0];
        }
        C[(size_t)r * N + c] = s + junk * 0.0f;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    dim3 b(32, 8), g((M + 31) / 32, (N + 7) / 8);
    k<<<g, b, 0, st>>>(A, B, C, M, N, K);
}
