// Known good: a tiled kernel whose comments mention cuBLAS, torch and <cublas_v2.h>
// (comments are not code: the forbidden-construct scan must not fire on them).
#include <cuda_runtime.h>
#include <cstdint>
#define TILE 16
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int tr = threadIdx.y, tc = threadIdx.x;
    int row = blockIdx.y * TILE + tr, col = blockIdx.x * TILE + tc;
    float s = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[tr][tc] = (row < M && t + tc < K) ? A[row * K + t + tc] : 0.0f;
        Bs[tr][tc] = (t + tr < K && col < N) ? B[(t + tr) * N + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; ++i) s += As[tr][i] * Bs[i][tc];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = s;  /* cublasSgemm would do this */
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    k<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
