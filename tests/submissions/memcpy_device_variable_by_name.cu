// Known bad (a __device__ variable by its name in host code): the kernel computes C into a __device__ array; the
// launcher cudaMemcpy's it into a scratch buffer by its name (not cudaMemcpyFromSymbol), which a kernel copies into
// C. In host code the name is the host's own copy of the array, which no kernel wrote.
#include <cuda_runtime.h>
__device__ float gC[1 << 16];
__global__ void k(const float* A, const float* B, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float s = 0.0f;
        for (int kk = 0; kk < K; ++kk) s += A[(size_t)r * K + kk] * B[(size_t)kk * N + c];
        gC[r * N + c] = s;
    }
}
__global__ void put(const float* src, float* C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = src[i];
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    if (M * N > (1 << 16)) return;
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8);
    k<<<g, b, 0, st>>>(A, B, M, N, K);
    float* d = nullptr;
    cudaMalloc(&d, (size_t)M * N * sizeof(float));
    cudaMemcpy(d, gC, (size_t)M * N * sizeof(float), cudaMemcpyDeviceToDevice);  // BUG: gC here is the host's copy
    put<<<(M * N + 255) / 256, 256, 0, st>>>(d, C, M * N);
    cudaFree(d);
}
