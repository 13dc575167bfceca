// Known bad (misaligned asynchronous copy): the 2-stage pipelined tiled GEMM copies A in 16-byte
// pieces (4 floats, zero-filling past K) from &A[row * K + k]: 16-byte aligned only when K % 4 == 0,
// so at any other K the copy's global source is misaligned (on a GPU: 'misaligned address').
#include <cuda_runtime.h>
#include <cuda_pipeline.h>
#define TILE 16
#define STAGES 2

__device__ void load_tile(float (*As)[TILE], float (*Bs)[TILE], const float* A, const float* B, int M, int N, int K,
                          int k0, int row0, int col) {
    const int tr = threadIdx.y, tc = threadIdx.x;
    if (tc < TILE / 4) {  // 4 threads of each row copy the row's 16 floats of A, 4 at a time
        const int row = row0 + tr, k = k0 + 4 * tc;
        const int in_range = row < M ? min(max(K - k, 0), 4) : 0;  // floats of the piece inside A
        __pipeline_memcpy_async(&As[tr][4 * tc], in_range ? &A[(size_t)row * K + k] : A, 16, 4 * (4 - in_range));
    }
    const bool b_ok = k0 + tr < K && col < N;
    __pipeline_memcpy_async(&Bs[tr][tc], b_ok ? &B[(size_t)(k0 + tr) * N + col] : B, sizeof(float), b_ok ? 0 : 4);
}

__global__ void gemm_pipelined(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ __align__(16) float As[STAGES][TILE][TILE];
    __shared__ float Bs[STAGES][TILE][TILE];
    const int tr = threadIdx.y, tc = threadIdx.x;
    const int row0 = blockIdx.y * TILE, row = row0 + tr, col = blockIdx.x * TILE + tc;
    const int tiles = (K + TILE - 1) / TILE;
    float s = 0.0f;
    load_tile(As[0], Bs[0], A, B, M, N, K, 0, row0, col);
    __pipeline_commit();
    for (int i = 0; i < tiles; ++i) {
        if (i + 1 < tiles) load_tile(As[(i + 1) % STAGES], Bs[(i + 1) % STAGES], A, B, M, N, K, (i + 1) * TILE, row0, col);
        __pipeline_commit();
        __pipeline_wait_prior(1);
        __syncthreads();
        const int st = i % STAGES;
        for (int k = 0; k < TILE; ++k) s += As[st][tr][k] * Bs[st][k][tc];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = s;
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    gemm_pipelined<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
