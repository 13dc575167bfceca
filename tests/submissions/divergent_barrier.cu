// Known bad (divergent barrier): the tiled kernel returns early for threads outside C, so
// the remaining threads wait at a __syncthreads() that the others never reach (undefined
// behaviour: a hang or garbage on a GPU).
#include <cuda_runtime.h>
#define TILE 16
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int tr = threadIdx.y, tc = threadIdx.x;
    int row = blockIdx.y * TILE + tr, col = blockIdx.x * TILE + tc;
    if (row >= M || col >= N) return;
    float s = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[tr][tc] = (t + tc < K) ? A[row * K + t + tc] : 0.0f;
        Bs[tr][tc] = (t + tr < K) ? B[(t + tr) * N + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; ++i) s += As[tr][i] * Bs[i][tc];
        __syncthreads();
    }
    C[row * N + col] = s;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    k<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
