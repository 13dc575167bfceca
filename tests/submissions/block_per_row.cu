// Known bad (naive): one block per row of C, one thread per column: blockDim.x = N, which does not launch for
// N > 1024 (a GPU's 1024 threads per block). Correct wherever N <= 1024; a drawn shape has N in 1025..4100.
#include <cuda_runtime.h>
__global__ void row_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.x, c = threadIdx.x;
    float s = 0.0f;
    for (int k = 0; k < K; ++k) s += A[(size_t)r * K + k] * B[(size_t)k * N + c];
    C[(size_t)r * N + c] = s;
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    row_kernel<<<M, N, 0, st>>>(A, B, C, M, N, K);
}
