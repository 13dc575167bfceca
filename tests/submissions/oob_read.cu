// Known bad: the k loop runs to K inclusive (<=), so every thread reads one element past its row of A and past the end of B.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float s = 0;
        for (int i = 0; i <= K; ++i) s += A[row * K + i] * B[i * N + col];   // <= : reads one past
        C[row * N + col] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    k<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
