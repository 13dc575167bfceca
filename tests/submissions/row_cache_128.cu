// Known bad (fixed-size row cache): each thread copies its row of A into float a[128] before the dot product, which holds only while K <= 128 (the fixed CPU test shapes never had K > 97); the index wraps (i & 127) so that K > 128 gives wrong sums rather than a stack overflow whose outcome is undefined.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float a[128];
    for (int i = 0; i < K; ++i) a[i & 127] = A[row * K + i];
    float s = 0.0f;
    for (int i = 0; i < K; ++i) s += a[i & 127] * B[i * N + col];
    C[row * N + col] = s;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    k<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
