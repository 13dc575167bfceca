// Known bad: the block stages its 32 entries of bias in shared memory before testing col < N, so the threads past the last column read past the end of bias (the value is never used).
#include <cuda_runtime.h>
#include <cstdint>
__global__ void k(const float* A, const float* B, const float* bias, float* C, uint32_t* mask, int M, int N, int K) {
    __shared__ float bs[32];
    int row = blockIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    bs[threadIdx.x] = bias[col];
    __syncwarp();
    float s = 0.0f;
    if (col < N)
        for (int i = 0; i < K; ++i) s += A[row * K + i] * B[i * N + col];
    float c = s + bs[threadIdx.x] > 0.0f ? s + bs[threadIdx.x] : 0.0f;
    if (col < N) C[row * N + col] = c;
    uint32_t bits = __ballot_sync(0xffffffffu, col < N && c > 0.0f);
    if (threadIdx.x == 0) mask[row * ((N + 31) / 32) + blockIdx.x] = bits;
}
extern "C" void gemm_relu(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                          int M, int N, int K, cudaStream_t stream) {
    k<<<dim3((N + 31) / 32, M), 32, 0, stream>>>(A, B, bias, C, mask, M, N, K);
}
