// Known bad (host code does the work): the launcher copies A and B to host memory with
// cudaMemcpy, multiplies there, and copies the answer into C. Legal CUDA, and correct, but no
// kernel computes anything: on a GPU it is hundreds of times too slow (and times out at the
// timed size); on the CPU backend, which cannot time it, the copy of host memory into an
// output is reported.
#include <cuda_runtime.h>
#include <vector>

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    std::vector<float> a((size_t)M * K), b((size_t)K * N), c((size_t)M * N);
    cudaMemcpy(a.data(), A, a.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), B, b.size() * sizeof(float), cudaMemcpyDeviceToHost);
    for (int row = 0; row < M; ++row)
        for (int col = 0; col < N; ++col) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k) acc += a[(size_t)row * K + k] * b[(size_t)k * N + col];
            c[(size_t)row * N + col] = acc;
        }
    cudaMemcpy(C, c.data(), c.size() * sizeof(float), cudaMemcpyHostToDevice);
}
