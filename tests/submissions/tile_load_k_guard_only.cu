// Known bad: the tile loads test only k < K, not row < M or col < N, so the last tiles read past the end of A and B; those values only reach outputs that are never stored, so the result is right.
#include <cuda_runtime.h>
constexpr int TILE = 16;
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int ty = threadIdx.y, tx = threadIdx.x, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float s = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = t + tx < K ? A[row * K + t + tx] : 0.0f;
        Bs[ty][tx] = t + ty < K ? B[(t + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; ++i) s += As[ty][i] * Bs[i][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = s;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    k<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
