// Known bad (missing bias): C = relu(A . B) and its mask, without adding bias[col] first.
#include <cuda_runtime.h>
#include <cstdint>
__global__ void k(const float* A, const float* B, const float* bias, float* C, uint32_t* mask, int M, int N, int K) {
    int row = blockIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (col < N)
        for (int i = 0; i < K; ++i) s += A[row * K + i] * B[i * N + col];
    float c = s > 0.0f ? s : 0.0f;
    if (col < N) C[row * N + col] = c;
    uint32_t bits = __ballot_sync(0xffffffffu, col < N && c > 0.0f);
    if (threadIdx.x == 0) mask[row * ((N + 31) / 32) + blockIdx.x] = bits;
}
extern "C" void gemm_relu(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                          int M, int N, int K, cudaStream_t stream) {
    k<<<dim3((N + 31) / 32, M), 32, 0, stream>>>(A, B, bias, C, mask, M, N, K);
}
