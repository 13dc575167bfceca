// Known bad (writes its input, then restores it): each block (one row of C) doubles its row of
// the const input A in place, then halves it back, so A is bit-identical after the call and a
// check of the inputs afterwards passes. Inputs are read-only: on a GPU another block reading
// that row meanwhile would see the doubled values (and A may be in read-only memory).
#include <cuda_runtime.h>
__global__ void k(const float* A_, const float* B, float* C, int M, int N, int K) {
    float* A = const_cast<float*>(A_);
    int r = blockIdx.x;
    for (int c = threadIdx.x; c < N; c += blockDim.x) {
        float s = 0;
        for (int k = 0; k < K; ++k) s += A[r * K + k] * B[k * N + c];
        C[r * N + c] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int k = 0; k < K; ++k) A[r * K + k] *= 2.0f;  // BUG: a store into the input A
    __syncthreads();
    if (threadIdx.x == 0)
        for (int k = 0; k < K; ++k) A[r * K + k] *= 0.5f;  // restored exactly
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    k<<<M, 32, 0, stream>>>(A, B, C, M, N, K);
}
