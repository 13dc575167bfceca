// Known bad (backward ignores the mask): relu_forward is right but stashes its X pointer, and relu_backward recomputes X > 0 from it instead of reading the mask it is given.
#include <cuda_runtime.h>
#include <cstdint>
static const float* g_X;
__global__ void fwd(const float* X, float* Y, uint32_t* mask, int M, int N, int W) {
    int row = blockIdx.y, word = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    int col = word * 32 + lane;
    bool in = word < W && col < N;
    long long i = (long long)row * N + col;
    float y = in && X[i] > 0.0f ? X[i] : 0.0f;
    if (in) Y[i] = y;
    uint32_t bits = __ballot_sync(0xffffffffu, y > 0.0f);
    if (lane == 0 && word < W) mask[(long long)row * W + word] = bits;
}
__global__ void bwd(const float* X, const float* dY, float* dX, int M, int N) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long long)M * N) dX[i] = X[i] > 0.0f ? dY[i] : 0.0f;
}
extern "C" void relu_forward(const float* X, float* Y, uint32_t* mask, int M, int N, cudaStream_t stream) {
    int W = (N + 31) / 32;
    g_X = X;
    fwd<<<dim3((W + 7) / 8, M), 256, 0, stream>>>(X, Y, mask, M, N, W);
}
extern "C" void relu_backward(const uint32_t* mask, const float* dY, float* dX, int M, int N, cudaStream_t stream) {
    bwd<<<(int)(((long long)M * N + 255) / 256), 256, 0, stream>>>(g_X, dY, dX, M, N);
}
