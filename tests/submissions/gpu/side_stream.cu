// Known bad (hidden work): launches the GEMM on a non-blocking stream of its own and returns,
// so CUDA events recorded on the given stream see almost no time. The forbidden-construct
// scan refuses cudaStreamCreate*; this file tests the timing's own defences (host-clock
// cross-check, plausibility cap) with the scan turned off.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int i = 0; i < K; ++i) s += A[(size_t)row * K + i] * B[(size_t)i * N + col];
        C[(size_t)row * N + col] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    static cudaStream_t hidden = nullptr;
    if (!hidden) cudaStreamCreateWithFlags(&hidden, cudaStreamNonBlocking);
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    k<<<grid, block, 0, hidden>>>(A, B, C, M, N, K);
}
