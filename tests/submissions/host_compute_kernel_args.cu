// Known bad (host does the work; red team B): A and B fetched with cudaMemcpy D2H, C computed on the host and
// handed to kernels by value, 1000 floats per launch in a kernel parameter: no host-to-device copy to match.
// On the CPU backend: refused at the first device-to-host copy (line 13).
#include <cuda_runtime.h>
#include <vector>
struct Chunk { float v[1000]; };
__global__ void put(Chunk ch, size_t base, size_t n, const float* B, float* C) {
    size_t i = threadIdx.x;
    for (; i < n; i += blockDim.x) C[base + i] = ch.v[i] + 0.0f * B[0];
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    std::vector<float> a((size_t)M * K), b((size_t)K * N), c((size_t)M * N);
    cudaMemcpy(a.data(), A, a.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), B, b.size() * 4, cudaMemcpyDeviceToHost);
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col) {
            float s = 0.0f;
            for (int k = 0; k < K; ++k) s += a[(size_t)r * K + k] * b[(size_t)k * N + col];
            c[(size_t)r * N + col] = s;
        }
    Chunk ch;
    for (size_t base = 0; base < c.size(); base += 1000) {
        size_t n = c.size() - base < 1000 ? c.size() - base : 1000;
        for (size_t i = 0; i < n; ++i) ch.v[i] = c[base + i];
        put<<<1, 256, 0, st>>>(ch, base, n, B, C);
    }
}
