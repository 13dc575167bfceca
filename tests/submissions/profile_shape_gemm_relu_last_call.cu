// Known bad (gemm_relu): the launcher fuses bias + ReLU + mask into the GEMM only on its 51st call, the access
// profile's case when it was always the last one graded (25 cases run twice, then the profiled one once); on every
// other call it stores C and a second kernel reads C back. Correct, but must fail its access bound (C read back).
#include <cuda_runtime.h>
#include <cstdint>
__global__ void gemm_k(const float* A, const float* B, const float* bias, float* C, uint32_t* mask, int M, int N,
                       int K, bool fused) {
    int row = blockIdx.y * 8 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (row < M && col < N)
        for (int i = 0; i < K; ++i) s += A[row * K + i] * B[i * N + col];
    if (!fused) {
        if (row < M && col < N) C[row * N + col] = s;
        return;
    }
    float v = row < M && col < N ? fmaxf(s + bias[col], 0.0f) : 0.0f;
    uint32_t bits = __ballot_sync(0xffffffffu, v > 0.0f);
    if (row < M && col < N) C[row * N + col] = v;
    if (row < M && threadIdx.x == 0) mask[row * ((N + 31) / 32) + blockIdx.x] = bits;
}
__global__ void epilogue(const float* bias, float* C, uint32_t* mask, int M, int N) {
    int row = blockIdx.y * 8 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    float v = row < M && col < N ? fmaxf(C[row * N + col] + bias[col], 0.0f) : 0.0f;
    uint32_t bits = __ballot_sync(0xffffffffu, v > 0.0f);
    if (row < M && col < N) C[row * N + col] = v;
    if (row < M && threadIdx.x == 0) mask[row * ((N + 31) / 32) + blockIdx.x] = bits;
}
extern "C" void gemm_relu(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                          int M, int N, int K, cudaStream_t stream) {
    dim3 grid((N + 31) / 32, (M + 7) / 8), block(32, 8);
    static int calls = 0;
    bool fused = ++calls == 51;
    gemm_k<<<grid, block, 0, stream>>>(A, B, bias, C, mask, M, N, K, fused);
    if (!fused) epilogue<<<grid, block, 0, stream>>>(bias, C, mask, M, N);
}
