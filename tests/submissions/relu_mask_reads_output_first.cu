// Known bad (reads an output before writing it): lane 0 stores mask[w] = mask[w] & bits, assuming the mask
// starts all ones. The grader's mask poison IS all ones (0xFFFFFFFF), so the result is right there;
// on a GPU the buffer holds anything (torch.empty, a previous call's mask).
#include <cuda_runtime.h>
#include <cstdint>
__global__ void fwd(const float* X, float* Y, uint32_t* mask, int M, int N, int W) {
    long long word = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (word >= (long long)M * W) return;  // whole warps leave together
    long long row = word / W; int col = (int)(word % W) * 32 + lane;
    float y = 0.0f;
    if (col < N) { float x = X[row * N + col]; y = x > 0.0f ? x : 0.0f; Y[row * N + col] = y; }
    uint32_t bits = __ballot_sync(0xffffffffu, y > 0.0f);
    if (lane == 0) mask[word] = mask[word] & bits;
}
__global__ void bwd(const uint32_t* mask, const float* dY, float* dX, int M, int N, int W) {
    long long word = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (word >= (long long)M * W) return;
    long long row = word / W; int col = (int)(word % W) * 32 + lane;
    uint32_t m = mask[word];
    if (col < N) dX[row * N + col] = (m >> lane) & 1u ? dY[row * N + col] : 0.0f;
}
extern "C" void relu_forward(const float* X, float* Y, uint32_t* mask, int M, int N, cudaStream_t s) {
    int W = (N + 31) / 32; long long words = (long long)M * W;
    fwd<<<(unsigned)((words + 7) / 8), 256, 0, s>>>(X, Y, mask, M, N, W);
}
extern "C" void relu_backward(const uint32_t* mask, const float* dY, float* dX, int M, int N, cudaStream_t s) {
    int W = (N + 31) / 32; long long words = (long long)M * W;
    bwd<<<(unsigned)((words + 7) / 8), 256, 0, s>>>(mask, dY, dX, M, N, W);
}
