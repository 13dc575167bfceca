// Known bad (register_1d): one output per thread, B tiled in shared memory, A read straight from global memory
// as float4 warp broadcasts (red team A): no register column, 1 shared load per FMA. Must fail the bound on
// operand loads per FMA from any source (global lanes + shared).
#include <cuda_runtime.h>
__global__ void k1(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float Bs[32][32];
    int ty = threadIdx.y, tx = threadIdx.x, row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
    bool vec = (K % 4) == 0;
    float s = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 32) {
        Bs[ty][tx] = k0 + ty < K && col < N ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        if (row < M) {
            const float* a = A + (size_t)row * K + k0;
            if (vec && k0 + 32 <= K) {
                for (int k = 0; k < 32; k += 4) {
                    float4 v = *reinterpret_cast<const float4*>(a + k);
                    s += v.x * Bs[k][tx] + v.y * Bs[k + 1][tx] + v.z * Bs[k + 2][tx] + v.w * Bs[k + 3][tx];
                }
            } else {
                for (int k = 0; k < 32 && k0 + k < K; ++k) s += a[k] * Bs[k][tx];
            }
        }
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = s;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    k1<<<dim3((N + 31) / 32, (M + 31) / 32), dim3(32, 32), 0, stream>>>(A, B, C, M, N, K);
}
