// Known good: a tiled GEMM with a 3-stage ring of asynchronous copies (<cuda_pipeline.h>): two
// tiles in flight while one is multiplied, one __syncthreads per tile (as kernels/05 does).
// Out-of-range elements are zero-filled (zfill = the whole 4 bytes: nothing is read).
#include <cuda_runtime.h>
#include <cuda_pipeline.h>
#define TILE 16
#define STAGES 3

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
    for (int st = 0; st < STAGES - 1; ++st) {  // prologue: tiles 0 .. STAGES-2 in flight
        if (st < tiles) load_tile(As[st], Bs[st], A, B, M, N, K, st * TILE, row, col);
        __pipeline_commit();
    }
    for (int i = 0; i < tiles; ++i) {
        __pipeline_wait_prior(STAGES - 2);  // tile i has landed; the newest STAGES-2 groups may not have
        __syncthreads();  // every thread's copies of tile i landed, and everyone finished tile i-1,
                          // whose stage the next line refills
        const int next = i + STAGES - 1;
        if (next < tiles) load_tile(As[next % STAGES], Bs[next % STAGES], A, B, M, N, K, next * TILE, row, col);
        __pipeline_commit();
        const int st = i % STAGES;
        for (int k = 0; k < TILE; ++k) s += As[st][tr][k] * Bs[st][k][tc];
    }
    if (row < M && col < N) C[(size_t)row * N + col] = s;
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    gemm_pipelined<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
