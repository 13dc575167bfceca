// Known bad (does not compile with nvcc): a __device__ helper reads a host array (a plain global, filled by the
// launcher): nvcc says "identifier "g_scale" is undefined in device code". __constant__ and cudaMemcpyToSymbol,
// or a kernel argument, would do.
#include <cuda_runtime.h>
float g_scale[4];
__device__ float scaled(float v, int i) { return v * g_scale[i % 4]; }
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float s = 0.0f;
        for (int kk = 0; kk < K; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
        C[(size_t)r * N + c] = scaled(s, c);
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    for (int i = 0; i < 4; ++i) g_scale[i] = 1.0f;
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8);
    k<<<g, b, 0, st>>>(A, B, C, M, N, K);
}
