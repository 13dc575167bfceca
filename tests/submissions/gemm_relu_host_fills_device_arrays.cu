// Known bad (host does the work): inputs fetched with cudaMemcpy D2H; host code writes C's and the mask's
// answer straight into __device__ arrays (on nvcc: the host shadow, never the GPU's copy); a kernel
// copies them into C and mask, reading bias (times 0) so the profile counts global loads.
#include <cuda_runtime.h>
#include <cstdint>
#include <vector>
__device__ float gC[1 << 19];
__device__ uint32_t gM[1 << 15];
__global__ void copy_out(const float* bias, int N, float* C, uint32_t* mask, int n, int nw) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = gC[i] + 0.0f * bias[i % N];
    if (i < nw) mask[i] = gM[i];
}
extern "C" void gemm_relu(const float* A, const float* B, const float* bias, float* C, uint32_t* mask, int M, int N,
                          int K, cudaStream_t st) {
    std::vector<float> a((size_t)M * K), b((size_t)K * N), bi(N);
    cudaMemcpy(a.data(), A, a.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), B, b.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(bi.data(), bias, (size_t)N * 4, cudaMemcpyDeviceToHost);
    int W = (N + 31) / 32;
    for (int i = 0; i < M * W; ++i) gM[i] = 0;
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col) {
            float s = 0.0f;
            for (int k = 0; k < K; ++k) s += a[(size_t)r * K + k] * b[(size_t)k * N + col];
            s += bi[col];
            s = s > 0.0f ? s : 0.0f;
            gC[(size_t)r * N + col] = s;
            if (s > 0.0f) gM[(size_t)r * W + col / 32] |= 1u << (col % 32);
        }
    int n = M * N, nw = M * W, m = n > nw ? n : nw;
    copy_out<<<(m + 255) / 256, 256, 0, st>>>(bias, N, C, mask, n, nw);
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {}
