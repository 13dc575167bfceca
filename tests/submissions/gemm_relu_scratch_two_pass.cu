// Known bad (gemm_relu): not fused (red team A): a GEMM kernel stores A.B into cudaMalloc'd scratch, a second
// kernel reads it back, adds bias, applies ReLU and writes C and the mask. Correct, but the intermediate is a
// second pass over the output: must fail C_writes_per_element / C_reads_per_element (scratch named).
#include <cuda_runtime.h>
#include <cstdint>
__global__ void gemm_k(const float* A, const float* B, float* S, int M, int N, int K) {
    __shared__ float As[32][32], Bs[32][32];
    int ty = threadIdx.y, tx = threadIdx.x, row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
    float s = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 32) {
        As[ty][tx] = row < M && k0 + tx < K ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = k0 + ty < K && col < N ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < 32; ++k) s += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) S[(size_t)row * N + col] = s;
}
__global__ void epilogue(const float* S, const float* bias, float* C, uint32_t* mask, int M, int N) {
    int row = blockIdx.y * 8 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    float v = row < M && col < N ? fmaxf(S[(size_t)row * N + col] + bias[col], 0.0f) : 0.0f;
    uint32_t bits = __ballot_sync(0xffffffffu, v > 0.0f);
    if (row < M && col < N) C[(size_t)row * N + col] = v;
    if (row < M && threadIdx.x == 0) mask[(size_t)row * ((N + 31) / 32) + blockIdx.x] = bits;
}
static float* scratch(size_t n) {
    static float* p = nullptr;
    static size_t have = 0;
    if (n > have) {
        if (p) cudaFree(p);
        cudaMalloc(&p, n * sizeof(float));
        have = n;
    }
    return p;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    gemm_k<<<dim3((N + 31) / 32, (M + 31) / 32), dim3(32, 32), 0, stream>>>(A, B, C, M, N, K);
}
extern "C" void gemm_relu(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                          int M, int N, int K, cudaStream_t stream) {
    float* S = scratch((size_t)M * N);
    gemm_k<<<dim3((N + 31) / 32, (M + 31) / 32), dim3(32, 32), 0, stream>>>(A, B, S, M, N, K);
    epilogue<<<dim3((N + 31) / 32, (M + 7) / 8), dim3(32, 8), 0, stream>>>(S, bias, C, mask, M, N);
}
