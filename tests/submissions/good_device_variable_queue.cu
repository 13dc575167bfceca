// Known good: a persistent kernel takes tiles of C off a queue, a __device__ counter that the launcher zeroes
// with cudaMemcpyToSymbolAsync before every launch; each block's thread 0 takes the next tile with atomicAdd.
#include <cuda_runtime.h>
__device__ unsigned next_tile;
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K, unsigned tiles) {
    __shared__ unsigned tile;
    const unsigned tiles_x = (N + 31) / 32;
    for (;;) {
        if (threadIdx.x == 0 && threadIdx.y == 0) tile = atomicAdd(&next_tile, 1u);
        __syncthreads();
        const unsigned t = tile;
        __syncthreads();
        if (t >= tiles) return;
        int r = (int)(t / tiles_x) * 8 + threadIdx.y, c = (int)(t % tiles_x) * 32 + threadIdx.x;
        if (r < M && c < N) {
            float s = 0.0f;
            for (int kk = 0; kk < K; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
            C[(size_t)r * N + c] = s;
        }
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    const unsigned zero = 0, tiles = (unsigned)(((N + 31) / 32) * ((M + 7) / 8));
    cudaMemcpyToSymbolAsync(next_tile, &zero, sizeof zero, 0, cudaMemcpyHostToDevice, st);
    k<<<tiles < 64 ? tiles : 64, dim3(32, 8), 0, st>>>(A, B, C, M, N, K, tiles);
}
