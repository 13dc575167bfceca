// Known bad (remembered answer): a naive kernel that, on a large shape called again with the
// same pointers, copies the answer it computed last time instead of computing, then spins for
// ~5.5 ms so its time looks like a plausible 4-5x over naive at 4096^3 (slower than cuBLAS,
// under the chip's peak). Small shapes (all the correctness cases) are computed honestly. With
// the same inputs in every timed run it would pass; the grader redraws the inputs before every
// timed round and checks every round's output.
#include <cuda_runtime.h>
__global__ void naive(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int i = 0; i < K; ++i) s += A[(size_t)row * K + i] * B[(size_t)i * N + col];
        C[(size_t)row * N + col] = s;
    }
}
__global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    static const float *lastA = nullptr, *lastB = nullptr;
    static float* saved = nullptr;
    static size_t savedBytes = 0;
    const size_t bytes = (size_t)M * N * sizeof(float);
    const bool large = (double)M * N * K >= 1e9;
    if (large && A == lastA && B == lastB && saved && savedBytes == bytes) {
        cudaMemcpyAsync(C, saved, bytes, cudaMemcpyDeviceToDevice, stream);
        spin<<<1, 1, 0, stream>>>((long long)((double)M * N * K / 6.25e3));  // 1.1e7 cycles at 4096^3: ~5.5 ms
        return;
    }
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    naive<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    if (!large) return;
    if (savedBytes < bytes) {
        cudaFree(saved);
        cudaMalloc(&saved, bytes);
        savedBytes = bytes;
    }
    cudaMemcpyAsync(saved, C, bytes, cudaMemcpyDeviceToDevice, stream);
    lastA = A; lastB = B;
}
