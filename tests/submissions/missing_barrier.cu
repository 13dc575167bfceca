// Known bad (missing barrier, a race): the tiled kernel without the __syncthreads() after
// the tiles are loaded, so threads read shared memory that others have not written yet
// (and without the one after use, so the next tile overwrites what others still read).
#include <cuda_runtime.h>
#define TILE 16
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int tr = threadIdx.y, tc = threadIdx.x;
    int row = blockIdx.y * TILE + tr, col = blockIdx.x * TILE + tc;
    float s = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[tr][tc] = (row < M && t + tc < K) ? A[row * K + t + tc] : 0.0f;
        Bs[tr][tc] = (t + tr < K && col < N) ? B[(t + tr) * N + col] : 0.0f;
        for (int i = 0; i < TILE; ++i) s += As[tr][i] * Bs[i][tc];
    }
    if (row < M && col < N) C[row * N + col] = s;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    k<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
