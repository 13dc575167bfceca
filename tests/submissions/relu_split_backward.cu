// Known bad (relu_mask): both launchers uncoalesced (one thread per row walks its columns: ~32 bytes per
// element), each followed by a tiny idempotent kernel of the same role (red team A) whose figures replaced
// the main kernel's in the profile. Correct; must fail the per-role bytes-per-element bounds.
#include <cuda_runtime.h>
#include <cstdint>
__global__ void fwd_rows(const float* X, float* Y, uint32_t* mask, int M, int N) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    int W = (N + 31) / 32;
    for (int w = 0; w < W; ++w) {
        uint32_t bits = 0;
        for (int b = 0; b < 32; ++b) {
            int j = w * 32 + b;
            if (j < N) {
                float x = X[(size_t)row * N + j];
                float y = x > 0.0f ? x : 0.0f;
                Y[(size_t)row * N + j] = y;
                if (y > 0.0f) bits |= 1u << b;
            }
        }
        mask[(size_t)row * W + w] = bits;
    }
}
__global__ void fwd_fix(const float* X, float* Y, uint32_t* mask, int M, int N) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        float x = X[0];
        Y[0] = x > 0.0f ? x : 0.0f;
    }
}
__global__ void bwd_rows(const uint32_t* mask, const float* dY, float* dX, int M, int N) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    int W = (N + 31) / 32;
    for (int j = 0; j < N; ++j) {
        uint32_t word = mask[(size_t)row * W + j / 32];
        dX[(size_t)row * N + j] = (word >> (j % 32)) & 1u ? dY[(size_t)row * N + j] : 0.0f;
    }
}
__global__ void bwd_fix(const uint32_t* mask, const float* dY, float* dX, int M, int N) {
    if (threadIdx.x == 0 && blockIdx.x == 0) dX[0] = (mask[0] & 1u) ? dY[0] : 0.0f;
}
extern "C" void relu_forward(const float* X, float* Y, uint32_t* mask, int M, int N, cudaStream_t stream) {
    fwd_rows<<<(M + 127) / 128, 128, 0, stream>>>(X, Y, mask, M, N);
    fwd_fix<<<1, 32, 0, stream>>>(X, Y, mask, M, N);
}
extern "C" void relu_backward(const uint32_t* mask, const float* dY, float* dX, int M, int N, cudaStream_t stream) {
    bwd_rows<<<(M + 127) / 128, 128, 0, stream>>>(mask, dY, dX, M, N);
    bwd_fix<<<1, 32, 0, stream>>>(mask, dY, dX, M, N);
}
