// Known bad (does not compile with nvcc): the kernel reads a plain host global (no __device__ /
// __constant__): nvcc says "identifier g_unroll is undefined in device code".
#include <cuda_runtime.h>
int g_unroll = 1;
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float s = 0.0f;
        for (int kk = 0; kk < K; kk += g_unroll) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
        C[(size_t)r * N + c] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    g_unroll = 1;
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8);
    k<<<g, b, 0, st>>>(A, B, C, M, N, K);
}
