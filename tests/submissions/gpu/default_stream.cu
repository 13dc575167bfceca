// Known bad (ignores its stream): a correct naive GEMM launched with <<<grid, block>>>, on the default
// stream instead of the stream the launcher is given. Work queued elsewhere is not ordered with the
// caller's stream (torch's, a training step's), so the contract asks for `stream`; the runner's gate on
// the default stream catches it on a GPU, the CPU runtime's expected stream on the CPU backend.
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
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    k<<<grid, block>>>(A, B, C, M, N, K);
}
