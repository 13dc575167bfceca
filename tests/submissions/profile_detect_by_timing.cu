// Known bad (tiled): the launcher tells the counted run from the others by timing a probe before the real
// launch. It times, with cudaEvents, a one-block kernel of 64K bank-conflicted shared-memory loads (a barrier
// every 8) against one of arithmetic only: on the CPU backend the access profile records every block of a
// one-block launch, and a recorded shared access costs ~2.5x a race-checked one, so the probe is slower than the
// reference in the run the grader counts (~2.4 ms against ~1.5) and faster in the others (~0.9 ms).
// There the launcher runs the tiled kernel, everywhere else a naive one (2 global bytes per FLOP).
// It passed `tiled` on the CPU backend while events held the host clock: a kernel file's events must measure a
// modelled time that does not depend on recording (and every run of a counted grade pays the same recording
// cost), so the probe reads the same in every run, the launcher always runs the naive kernel, and it fails.
// On a GPU the probe says nothing (no recording there) and the naive kernel's timing fails it.
#include <cuda_runtime.h>
#include <cstdio>
constexpr int T = 32;

__global__ void probe_shared(int n) {  // bank-conflicted shared loads, a barrier every 8
    __shared__ volatile float s[1024];
    int t = threadIdx.x;
    s[t] = 1.0f;
    __syncthreads();
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) {
        acc += s[(t * 32 + i) & 1023];
        if ((i & 7) == 7) __syncthreads();
    }
    if (acc < 0.0f) s[t] = acc;
}
__global__ void probe_arith(int n, float x) {  // the reference: arithmetic only, which nothing records
    float acc = (float)threadIdx.x;
    for (int i = 0; i < n; ++i) acc = acc * x + 1.0f;
    if (acc == 12345.0f) printf("%f", acc);
}
static float time_probe(bool shared, cudaStream_t st) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, st);
    if (shared) probe_shared<<<1, 256, 0, st>>>(256);
    else probe_arith<<<1, 256, 0, st>>>(3584, 0.999f);
    cudaEventRecord(b, st);
    cudaEventSynchronize(b);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms;
}

__global__ void naive(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int k = 0; k < K; ++k) s += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        C[(size_t)row * N + col] = s;
    }
}
__global__ void tiled(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[T][T], Bs[T][T];
    int ty = threadIdx.y, tx = threadIdx.x, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float s = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[ty][tx] = row < M && k0 + tx < K ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = k0 + ty < K && col < N ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; ++k) s += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = s;
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    float s = 1e30f, l = 1e30f;
    for (int r = 0; r < 3; ++r) {
        float x = time_probe(true, stream), y = time_probe(false, stream);
        s = x < s ? x : s;
        l = y < l ? y : l;
    }
    if (s > l)  // counted: the probe's shared loads were recorded (~2.4 ms against ~0.9, the reference ~1.5)
        tiled<<<dim3((N + T - 1) / T, (M + T - 1) / T), dim3(T, T), 0, stream>>>(A, B, C, M, N, K);
    else
        naive<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, stream>>>(A, B, C, M, N, K);
}
