// Known good: dynamic tile scheduling (a persistent kernel): a cudaMalloc'd counter zeroed with
// cudaMemsetAsync; each block takes tiles of C with atomicAdd until none are left. On the CPU backend blocks
// run one after another, so the first block takes every tile and the sampled blocks count nothing: the
// profile is then taken over every block (it was "no kernel did the work").
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K, unsigned* next) {
    __shared__ unsigned tile;
    const int tilesX = (N + 31) / 32, tiles = tilesX * ((M + 7) / 8);
    for (;;) {
        if (threadIdx.x == 0 && threadIdx.y == 0) tile = atomicAdd(next, 1u);
        __syncthreads();
        const unsigned t = tile;
        __syncthreads();
        if (t >= (unsigned)tiles) return;
        int r = (int)(t / tilesX) * 8 + threadIdx.y, c = (int)(t % tilesX) * 32 + threadIdx.x;
        if (r < M && c < N) {
            float s = 0.0f;
            for (int kk = 0; kk < K; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
            C[(size_t)r * N + c] = s;
        }
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    static unsigned* counter = nullptr;
    if (!counter) cudaMalloc(&counter, sizeof(unsigned));
    cudaMemsetAsync(counter, 0, sizeof(unsigned), st);
    int tiles = ((N + 31) / 32) * ((M + 7) / 8);
    k<<<tiles < 64 ? tiles : 64, dim3(32, 8), 0, st>>>(A, B, C, M, N, K, counter);
}
