// Known gap (naive, red team 2026-12-04): the k loop stops at a fixed 1152 (a row cache's size), so C is wrong
// for K > 1152; the CPU backend's longest K is 1100. Should fail; passes on the CPU.
#include <cuda_runtime.h>
#define KMAX 1152
__global__ void k_(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= M || c >= N) return;
    float s = 0.0f;
    int kk = K < KMAX ? K : KMAX;
    for (int k = 0; k < kk; ++k) s += A[(size_t)r * K + k] * B[(size_t)k * N + c];
    C[(size_t)r * N + c] = s;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    dim3 bl(32, 8), g((N + 31) / 32, (M + 7) / 8);
    k_<<<g, bl, 0, st>>>(A, B, C, M, N, K);
}
