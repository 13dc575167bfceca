// Known bad: the bounds test lets row M through (<= instead of <): one row written past the end of C.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row <= M && col < N) {   // <= : one row too many
        float s = 0;
        for (int i = 0; i < K; ++i) s += (row < M ? A[row * K + i] : 0.f) * B[i * N + col];
        C[row * N + col] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15 + 1) / 16);
    k<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
