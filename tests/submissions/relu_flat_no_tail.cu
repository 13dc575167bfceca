// Known bad (fast path without a tail check): when N % 32 == 0 every mask word lies within one row, so forward and backward treat the matrix as one flat array in blocks of 256 elements, with no test that the last block ends at M * N (fixed shapes with N % 32 == 0 had M * N a multiple of 256).
#include <cuda_runtime.h>
#include <cstdint>
__global__ void fwd_flat(const float* X, float* Y, uint32_t* mask) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float y = X[i] > 0.0f ? X[i] : 0.0f;
    Y[i] = y;
    uint32_t bits = __ballot_sync(0xffffffffu, y > 0.0f);
    if (threadIdx.x % 32 == 0) mask[i / 32] = bits;
}
__global__ void bwd_flat(const uint32_t* mask, const float* dY, float* dX) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    dX[i] = ((mask[i / 32] >> (threadIdx.x % 32)) & 1u) ? dY[i] : 0.0f;
}
// general path: one warp per mask word, grid (words / 8 warps, M)
__global__ void fwd(const float* X, float* Y, uint32_t* mask, int M, int N, int W) {
    int row = blockIdx.y, word = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    int col = word * 32 + lane;
    bool in = word < W && col < N;
    float y = in && X[(long long)row * N + col] > 0.0f ? X[(long long)row * N + col] : 0.0f;
    if (in) Y[(long long)row * N + col] = y;
    uint32_t bits = __ballot_sync(0xffffffffu, y > 0.0f);
    if (lane == 0 && word < W) mask[(long long)row * W + word] = bits;
}
__global__ void bwd(const uint32_t* mask, const float* dY, float* dX, int M, int N, int W) {
    int row = blockIdx.y, word = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    int col = word * 32 + lane;
    if (word < W && col < N)
        dX[(long long)row * N + col] = ((mask[(long long)row * W + word] >> lane) & 1u) ? dY[(long long)row * N + col] : 0.0f;
}
extern "C" void relu_forward(const float* X, float* Y, uint32_t* mask, int M, int N, cudaStream_t stream) {
    int W = (N + 31) / 32;
    if (N % 32 == 0) fwd_flat<<<(int)(((long long)M * N + 255) / 256), 256, 0, stream>>>(X, Y, mask);
    else fwd<<<dim3((W + 7) / 8, M), 256, 0, stream>>>(X, Y, mask, M, N, W);
}
extern "C" void relu_backward(const uint32_t* mask, const float* dY, float* dX, int M, int N, cudaStream_t stream) {
    int W = (N + 31) / 32;
    if (N % 32 == 0) bwd_flat<<<(int)(((long long)M * N + 255) / 256), 256, 0, stream>>>(mask, dY, dX);
    else bwd<<<dim3((W + 7) / 8, M), 256, 0, stream>>>(mask, dY, dX, M, N, W);
}
