// Known bad (two threads, one element): the tile load indexes As by threadIdx.x / 2, so two threads store the
// same shared element at one line. A barrier cannot fix that: the hint must name the index, not a barrier.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[32][32], Bs[32][32];
    int ty = threadIdx.y, tx = threadIdx.x, row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
    float s = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 32) {
        As[ty][tx / 2] = row < M && k0 + tx < K ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = k0 + ty < K && col < N ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < 32; ++k) s += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = s;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    k<<<dim3((N + 31) / 32, (M + 31) / 32), dim3(32, 32), 0, stream>>>(A, B, C, M, N, K);
}
