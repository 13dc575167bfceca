// Known gap (tiled, red team 2026-12-04): the tiled kernel runs only where every dimension is 100..640, the band
// the CPU backend's profile shapes lie in, and a naive one elsewhere (4096^3 too). Should fail; passes on the CPU.
#include <cuda_runtime.h>
__global__ void naive(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int i = 0; i < K; ++i) s += A[row * K + i] * B[i * N + col];
        C[row * N + col] = s;
    }
}
__global__ void tiled(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[32][32], Bs[32][32];
    int ty = threadIdx.y, tx = threadIdx.x, row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
    float s = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 32) {
        As[ty][tx] = row < M && k0 + tx < K ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = k0 + ty < K && col < N ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < 32; ++k) s += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = s;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    if (M >= 100 && N >= 100 && K >= 100 && M <= 640 && N <= 640 && K <= 640)
        tiled<<<dim3((N + 31) / 32, (M + 31) / 32), dim3(32, 32), 0, stream>>>(A, B, C, M, N, K);
    else
        naive<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, stream>>>(A, B, C, M, N, K);
}
