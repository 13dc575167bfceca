// Known bad (float4 path tests the wrong dimension): A's rows are read as float4 when N % 4 == 0, but A is M x K, so its rows are 16-byte aligned only when K % 4 == 0; with N % 4 == 0 and K % 4 != 0 the loads are misaligned (on a GPU: misaligned address) and the tail is lost.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K, bool vecA) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float s = 0.0f;
    int i = 0;
    if (vecA) {
        for (; i + 4 <= K; i += 4) {
            float4 a = *reinterpret_cast<const float4*>(&A[row * K + i]);
            s += a.x * B[i * N + col] + a.y * B[(i + 1) * N + col] + a.z * B[(i + 2) * N + col] + a.w * B[(i + 3) * N + col];
        }
    }
    for (; i < K; ++i) s += A[row * K + i] * B[i * N + col];
    C[row * N + col] = s;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    k<<<grid, block, 0, stream>>>(A, B, C, M, N, K, N % 4 == 0);  // should be K % 4 == 0
}
