// Known good: the kernel writes C into a pitched scratch buffer (rows padded to 128 bytes), then
// cudaMemcpy2DAsync (device to device) copies the M x N block into C.
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* D, size_t pitch, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float s = 0.0f;
        for (int kk = 0; kk < K; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
        ((float*)((char*)D + r * pitch))[c] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    size_t pitch = ((size_t)N * 4 + 127) / 128 * 128;
    float* D = nullptr;
    cudaMalloc(&D, pitch * M);
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8);
    k<<<g, b, 0, st>>>(A, B, D, pitch, M, N, K);
    cudaMemcpy2DAsync(C, (size_t)N * 4, D, pitch, (size_t)N * 4, M, cudaMemcpyDeviceToDevice, st);
    cudaStreamSynchronize(st);
    cudaFree(D);
}
