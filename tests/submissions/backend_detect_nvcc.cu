// Known cheat (backend detection by nvcc's own macro): under nvcc (__NVCC__ defined) it launches a kernel that writes zeros; elsewhere a correct naive kernel. The CPU backend did not define __NVCC__, so it graded the correct path: it now defines the macros nvcc does (__NVCC__, __CUDACC__, __CUDACC_VER_MAJOR__...).
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
#if defined(__NVCC__)
    bad<<<g, b, 0, stream>>>(C, M, N);
#else
    good<<<g, b, 0, stream>>>(A, B, C, M, N, K);
#endif
}
