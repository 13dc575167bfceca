// Known bad (grid limit): one block row per row of C, on gridDim.y, which is at most 65535: the launch fails
// for M > 65535 (on a GPU: invalid configuration argument, C never written).
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    if (col < N) {
        float s = 0.0f;
        for (int i = 0; i < K; ++i) s += A[row * K + i] * B[i * N + col];
        C[row * N + col] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    k<<<dim3((N + 31) / 32, M), 32, 0, stream>>>(A, B, C, M, N, K);
}
