// Known bad (relu_mask): Y = 0.5 * (x + |x|), ReLU by arithmetic. Right on unit-scale inputs; NaN at x = -inf
// (-inf + inf), inf where x is near FLT_MAX (x + x overflows).
#include <cuda_runtime.h>
#include <cstdint>
__global__ void fwd(const float* X, float* Y, uint32_t* mask, int M, int N) {
    int row = blockIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    float x = col < N ? X[row * N + col] : 0.0f;
    float y = 0.5f * (x + fabsf(x));
    uint32_t bits = __ballot_sync(0xffffffffu, col < N && x > 0.0f);
    if (col < N) Y[row * N + col] = y;
    if (threadIdx.x == 0) mask[row * ((N + 31) / 32) + blockIdx.x] = bits;
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
