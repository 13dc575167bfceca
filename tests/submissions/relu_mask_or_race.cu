// Known bad (race on a mask word): each lane ORs its own bit into the word with a plain load and store, so the
// 32 lanes' read-modify-writes race. The fix is atomicOr or one word from __ballot_sync, not atomicAdd.
#include <cuda_runtime.h>
#include <cstdint>
__global__ void fwd(const float* X, float* Y, uint32_t* mask, int M, int N) {
    int row = blockIdx.y, col = blockIdx.x * 32 + threadIdx.x, W = (N + 31) / 32;
    if (threadIdx.x == 0) mask[row * W + blockIdx.x] = 0u;
    __syncwarp();
    if (col < N) {
        float x = X[row * N + col];
        Y[row * N + col] = x > 0.0f ? x : 0.0f;
        if (x > 0.0f) mask[row * W + blockIdx.x] |= 1u << threadIdx.x;
    }
}
__global__ void bwd(const uint32_t* mask, const float* dY, float* dX, int M, int N) {
    int row = blockIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    if (col < N) {
        uint32_t w = mask[row * ((N + 31) / 32) + col / 32];
        dX[row * N + col] = (w >> (col % 32)) & 1u ? dY[row * N + col] : 0.0f;
    }
}
extern "C" void relu_forward(const float* X, float* Y, uint32_t* mask, int M, int N, cudaStream_t stream) {
    fwd<<<dim3((N + 31) / 32, M), 32, 0, stream>>>(X, Y, mask, M, N);
}
extern "C" void relu_backward(const uint32_t* mask, const float* dY, float* dX, int M, int N, cudaStream_t stream) {
    bwd<<<dim3((N + 31) / 32, M), 32, 0, stream>>>(mask, dY, dX, M, N);
}
