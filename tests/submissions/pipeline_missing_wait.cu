// Known bad (missing wait): the 2-stage pipelined tiled GEMM without __pipeline_wait_prior, so
// threads multiply tiles whose asynchronous copies have not landed (on a GPU: stale or half-copied
// data, by timing; on the CPU backend the copies land only when a wait covers them).
#include <cuda_runtime.h>
#include <cuda_pipeline.h>
#define TILE 16
#define STAGES 2

__device__ void load_tile(float (*As)[TILE], float (*Bs)[TILE], const float* A, const float* B, int M, int N, int K,
                          int k0, int row, int col) {
    const int tr = threadIdx.y, tc = threadIdx.x;
    const bool a_ok = row < M && k0 + tc < K;
    __pipeline_memcpy_async(&As[tr][tc], a_ok ? &A[(size_t)row * K + k0 + tc] : A, sizeof(float), a_ok ? 0 : 4);
    const bool b_ok = k0 + tr < K && col < N;
    __pipeline_memcpy_async(&Bs[tr][tc], b_ok ? &B[(size_t)(k0 + tr) * N + col] : B, sizeof(float), b_ok ? 0 : 4);
}

__global__ void gemm_pipelined(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[STAGES][TILE][TILE], Bs[STAGES][TILE][TILE];
    const int tr = threadIdx.y, tc = threadIdx.x;
    const int row = blockIdx.y * TILE + tr, col = blockIdx.x * TILE + tc;
    const int tiles = (K + TILE - 1) / TILE;
    float s = 0.0f;
    load_tile(As[0], Bs[0], A, B, M, N, K, 0, row, col);
    __pipeline_commit();
    for (int i = 0; i < tiles; ++i) {
        if (i + 1 < tiles) load_tile(As[(i + 1) % STAGES], Bs[(i + 1) % STAGES], A, B, M, N, K, (i + 1) * TILE, row, col);
        __pipeline_commit();        // one group per tile, even an empty one
        __syncthreads();            // ... and every thread's
        const int st = i % STAGES;
        for (int k = 0; k < TILE; ++k) s += As[st][tr][k] * Bs[st][k][tc];
        __syncthreads();            // everyone is done with stage st before the next iteration refills it
    }
    if (row < M && col < N) C[(size_t)row * N + col] = s;
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    gemm_pipelined<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
