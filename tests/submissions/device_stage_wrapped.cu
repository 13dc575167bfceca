// Known bad (fixed-size buffer): A is staged in a __device__ array of 2^18 floats whose index wraps (i & mask),
// so for M * K > 2^18 rows of A overwrite each other. Right on every shape with M * K <= 2^18.
#include <cuda_runtime.h>
#define STAGE (1 << 18)
__device__ float stage[STAGE];
__global__ void copy(const float* A, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) stage[i & (STAGE - 1)] = A[i];
}
__global__ void k(const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int i = 0; i < K; ++i) s += stage[(row * K + i) & (STAGE - 1)] * B[i * N + col];
        C[row * N + col] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    int n = M * K;
    copy<<<(n + 255) / 256, 256, 0, stream>>>(A, n);
    k<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, stream>>>(B, C, M, N, K);
}
