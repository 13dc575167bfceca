// Known bad (>= instead of >): the mask bit is set where Y >= 0, and after the ReLU every Y is >= 0, so every bit is set (for the columns a warp covers).
#include <cuda_runtime.h>
#include <cstdint>
// one warp per mask word: grid (ceil(W / 8) blocks of 8 warps, M rows)
__global__ void fwd(const float* X, float* Y, uint32_t* mask, int M, int N, int W) {
    int row = blockIdx.y, word = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    int col = word * 32 + lane;
    bool in = word < W && col < N;
    long long i = (long long)row * N + col;
    float y = in && X[i] > 0.0f ? X[i] : 0.0f;
    if (in) Y[i] = y;
    uint32_t bits = __ballot_sync(0xffffffffu, in && y >= 0.0f);
    if (lane == 0 && word < W) mask[(long long)row * W + word] = bits;
}
__global__ void bwd(const uint32_t* mask, const float* dY, float* dX, int M, int N, int W) {
    int row = blockIdx.y, word = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    int col = word * 32 + lane;
    long long i = (long long)row * N + col;
    if (word < W && col < N) dX[i] = ((mask[(long long)row * W + word] >> lane) & 1u) ? dY[i] : 0.0f;
}
extern "C" void relu_forward(const float* X, float* Y, uint32_t* mask, int M, int N, cudaStream_t stream) {
    int W = (N + 31) / 32;
    fwd<<<dim3((W + 7) / 8, M), 256, 0, stream>>>(X, Y, mask, M, N, W);
}
extern "C" void relu_backward(const uint32_t* mask, const float* dY, float* dX, int M, int N, cudaStream_t stream) {
    int W = (N + 31) / 32;
    bwd<<<dim3((W + 7) / 8, M), 256, 0, stream>>>(mask, dY, dX, M, N, W);
}
