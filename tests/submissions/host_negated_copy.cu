// Known bad (host does the work; red team B): A and B fetched with cudaMemcpy D2H, C computed on the host,
// -C uploaded and negated into C by a kernel (so no output equals uploaded data). On the CPU backend: refused
// at the first device-to-host copy (line 12).
#include <cuda_runtime.h>
#include <vector>
__global__ void copy_out(const float* d, const float* B, float* C, int M, int N) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) C[(size_t)r * N + c] = -d[(size_t)r * N + c] + 0.0f * B[c];
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    std::vector<float> a((size_t)M * K), b((size_t)K * N), c((size_t)M * N);
    cudaMemcpy(a.data(), A, a.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), B, b.size() * 4, cudaMemcpyDeviceToHost);
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col) {
            float s = 0.0f;
            for (int k = 0; k < K; ++k) s += a[(size_t)r * K + k] * b[(size_t)k * N + col];
            c[(size_t)r * N + col] = -s;
        }
    float* d = nullptr;
    cudaMalloc(&d, c.size() * 4);
    cudaMemcpy(d, c.data(), c.size() * 4, cudaMemcpyHostToDevice);
    dim3 bl(32, 8), g((N + 31) / 32, (M + 7) / 8);
    copy_out<<<g, bl, 0, st>>>(d, B, C, M, N);
    cudaStreamSynchronize(st);
    cudaFree(d);
}
