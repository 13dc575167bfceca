// Known cheat (backend detection by the CPU backend's own macro, spelt in capitals): the CPU backend defined CUDA_EMU and the scan for its internals was case-sensitive. Refused now on both backends, and the macro is gone.
#include <cuda_runtime.h>
__global__ void good(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) { float s = 0; for (int k = 0; k < K; ++k) s += A[r * K + k] * B[k * N + c]; C[r * N + c] = s; }
}
__global__ void bad(float* C, int M, int N) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) C[r * N + c] = 0.0f;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 b(16, 16), g((N + 15) / 16, (M + 15) / 16);
#if !defined(CUDA_EMU)
    bad<<<g, b, 0, stream>>>(C, M, N);
#else
    good<<<g, b, 0, stream>>>(A, B, C, M, N, K);
#endif
}
