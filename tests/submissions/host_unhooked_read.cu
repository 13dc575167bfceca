// Known bad (host code computes the output through the pointers it is given, where the CPU backend's hooks
// cannot see it): a function built without the instrumentation (no_sanitize("thread")) reads A and B and
// writes C, a naive GEMM on the host. A decoy kernel does the same GEMM into scratch memory, so that the
// access profile sees a kernel's loads. On a GPU the first read of A faults. On the CPU backend it was correct
// (and passed) while the runner's buffers were plain host memory; as the runtime's device memory (PROT_NONE
// outside a kernel) the read faults and is reported with its line.
#include <cuda_runtime.h>

__global__ void decoy(const float* A, const float* B, float* S, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    S[row * N + col] = acc;
}

__attribute__((no_sanitize("thread"))) static void host_gemm(const float* A, const float* B, float* C, int M, int N,
                                                             int K) {
    for (int row = 0; row < M; ++row)
        for (int col = 0; col < N; ++col) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
            C[row * N + col] = acc;
        }
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    float* S = nullptr;
    cudaMalloc(&S, (size_t)M * N * sizeof(float));
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    decoy<<<grid, block, 0, stream>>>(A, B, S, M, N, K);
    cudaStreamSynchronize(stream);
    cudaFree(S);
    host_gemm(A, B, C, M, N, K);
}
