// Known bad (input tampering): computes C correctly, then a second kernel overwrites the
// input A with zeros (const cast away), as a cheat that makes a reference computed after
// the call agree with a zero result would.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int i = 0; i < K; ++i) s += A[row * K + i] * B[i * N + col];
        C[row * N + col] = s;
    }
}
__global__ void zero(float* A, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) A[i] = 0.0f;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    k<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    zero<<<(M * K + 255) / 256, 256, 0, stream>>>(const_cast<float*>(A), M * K);
}
