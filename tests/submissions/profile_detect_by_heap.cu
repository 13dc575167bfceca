// Known bad (tiled; red team h2, 2026-12-06, a known gap until 2026-12-07): the kernel tells the blocks the access
// profile records from the others by the heap, not by time. Thread 0 of each block, after a barrier over a few shared loads, mallocs and frees
// three sizes and compares the addresses with the previous block's (kept in __device__ words through atomicCAS,
// which the global race detector does not count): a recorded block's counters grow their containers, so glibc's
// free lists move and the addresses change; the first block and every block where they moved run the tiled
// kernel, the others a naive one (2 global bytes per FLOP). The sample's loads then do not stand for the grid,
// so the grader counts every block, all of which move the heap: all tiled, and it passed. Now device code allocates
// from a heap of its own (grader/compile/cpu/heap.cpp), whose addresses the profile cannot move: it fails on
// bytes_per_flop.
#include <cuda_runtime.h>
#include <cstdlib>
constexpr int T = 32;
__device__ unsigned long long g_last[3];
__device__ int g_seen;

__global__ void gemm_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[T][T], Bs[T][T];
    __shared__ volatile float probe[T * T];
    __shared__ int tiled;
    int ty = threadIdx.y, tx = threadIdx.x, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    probe[ty * T + tx] = 1.0f;
    __syncthreads();
    float acc = probe[(ty * T + tx + 1) & (T * T - 1)];
    __syncthreads();
    if (ty == 0 && tx == 0) {
        const int sizes[3] = {24, 100, 40000};
        bool moved = false;
        for (int j = 0; j < 3; ++j) {
            void* p = malloc(sizes[j]);
            unsigned long long a = (unsigned long long)p;
            free(p);
            unsigned long long last = atomicCAS(&g_last[j], 0ull, 0ull);  // a read (CAS: never a race)
            while (atomicCAS(&g_last[j], last, a) != last) last = atomicCAS(&g_last[j], 0ull, 0ull);
            if (last && a != last) moved = true;
        }
        int seen = atomicCAS(&g_seen, 0, 1);
        tiled = !seen || moved;
    }
    __syncthreads();
    float s = 0.0f * acc;
    if (tiled) {
        for (int k0 = 0; k0 < K; k0 += T) {
            As[ty][tx] = row < M && k0 + tx < K ? A[(size_t)row * K + k0 + tx] : 0.0f;
            Bs[ty][tx] = k0 + ty < K && col < N ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
            __syncthreads();
            for (int k = 0; k < T; ++k) s += As[ty][k] * Bs[k][tx];
            __syncthreads();
        }
    } else if (row < M && col < N) {
        for (int k = 0; k < K; ++k) s += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    }
    if (row < M && col < N) C[(size_t)row * N + col] = s;
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    gemm_kernel<<<dim3((N + T - 1) / T, (M + T - 1) / T), dim3(T, T), 0, stream>>>(A, B, C, M, N, K);
}
