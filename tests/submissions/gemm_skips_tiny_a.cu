// Known bad (wrong for small inputs): a naive GEMM that skips every product whose |A| < 1e-6, as if such a
// term could not matter. Right on unit-scale inputs; C = 0 when A is scaled by 2^-24 (and B by 2^24).
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int i = 0; i < K; ++i) {
            float a = A[row * K + i];
            if (fabsf(a) < 1e-6f) continue;  // "too small to matter"
            s += a * B[i * N + col];
        }
        C[row * N + col] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    k<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, stream>>>(A, B, C, M, N, K);
}
