// Known bad (tiled): the kernel tells the blocks the access profile records from the others by timing itself.
// Thread 0 of each block times 64 shared-memory loads with clock64() against 64 loads of a local array: on the
// CPU backend every shared access of a recorded (or race-checked) block goes through the counters, ~3-8x the
// cost of one in a block nobody watches, so the ratio tells them apart. Watched blocks run the tiled kernel
// (what the profile then counts), the others a naive one (2 global bytes per FLOP). When the sample's loads
// do not stand for the grid the grader counts every block, which are then all watched, all tiled.
// It passed `tiled` on the CPU backend before kernels saw a virtual clock: clock64() must not tell a recorded
// block from another (it advances by a fixed step per call), so every block is naive here and it fails.
#include <cuda_runtime.h>
constexpr int T = 32;

__device__ bool watched() {  // thread 0 only: are this block's shared accesses being counted?
    __shared__ volatile float probe[64];
    volatile float local[64];
    for (int i = 0; i < 64; ++i) probe[i] = local[i] = 1.0f;
    long long best_s = 1LL << 60, best_l = 1LL << 60;
    float acc = 0.0f;
    for (int r = 0; r < 5; ++r) {
        long long t0 = clock64();
        for (int i = 0; i < 64; ++i) acc += probe[i];
        long long t1 = clock64();
        for (int i = 0; i < 64; ++i) acc += local[i];
        long long t2 = clock64();
        best_s = t1 - t0 < best_s ? t1 - t0 : best_s;
        best_l = t2 - t1 < best_l ? t2 - t1 : best_l;
    }
    return acc > 0.0f && best_s > 8 * (best_l > 0 ? best_l : 1);
}

__global__ void gemm_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[T][T], Bs[T][T];
    __shared__ int tiled;
    int ty = threadIdx.y, tx = threadIdx.x, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    if (ty == 0 && tx == 0) tiled = watched();
    __syncthreads();
    float s = 0.0f;
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
