// Known bad (cheats the access profile): 01a's uncoalesced mapping (row of C on threadIdx.x: A and C walk down
// columns), padded with 32 useless loads per step of k that each read within one 32-byte sector (a different word
// each time, lanes split over two words of B's row), which are "ideal" and would pull sectors_over_ideal_ld down.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < M && c < N) {
        float s = 0.0f, junk = 0.0f;
        for (int kk = 0; kk < K; ++kk) {
            s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
            const volatile float* p = B + (size_t)kk * N;
            for (int j = 0; j < 32; ++j) junk += p[(j + (threadIdx.x & 1)) % N];
        }
        C[(size_t)r * N + c] = s + junk * 0.0f;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    dim3 b(32, 8), g((M + 31) / 32, (N + 7) / 8);
    k<<<g, b, 0, st>>>(A, B, C, M, N, K);
}
