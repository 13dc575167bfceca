// Known bad (reads its output before writing it): split-K in 2 slices, one after the other in two launches; each
// slice adds its partial to C unless C still holds NaN, which it takes for "not written yet". The grader's float
// poison is NaN, so the sum is right there; on a GPU C holds anything (torch.empty, the previous call's C).
#include <cuda_runtime.h>
__global__ void slice(const float* A, const float* B, float* C, int M, int N, int K, int k0, int k1) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float s = 0.0f;
        for (int kk = k0; kk < k1; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
        float old = C[(size_t)r * N + c];
        C[(size_t)r * N + c] = old == old ? old + s : s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8);
    slice<<<g, b, 0, st>>>(A, B, C, M, N, K, 0, K / 2);
    slice<<<g, b, 0, st>>>(A, B, C, M, N, K, K / 2, K);
}
