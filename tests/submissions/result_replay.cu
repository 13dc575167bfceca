// Known bad (result replay): computes the first answer for a shape, keeps it in a static
// device buffer, and returns that same answer for every later call with that shape (it
// passes a grader that tests each shape with one input only).
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int i = 0; i < K; ++i) s += A[row * K + i] * B[i * N + col];
        C[row * N + col] = s;
    }
}
static float* saved = nullptr;
static int savedM = -1, savedN = -1, savedK = -1;
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    size_t bytes = sizeof(float) * (size_t)M * N;
    if (saved && M == savedM && N == savedN && K == savedK) {
        cudaMemcpyAsync(C, saved, bytes, cudaMemcpyDeviceToDevice, stream);
        return;
    }
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    k<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    if (saved) cudaFree(saved);
    cudaMalloc((void**)&saved, bytes > 0 ? bytes : 4);
    cudaMemcpyAsync(saved, C, bytes, cudaMemcpyDeviceToDevice, stream);
    savedM = M; savedN = N; savedK = K;
}
