// Known bad (host code writes the output, where the CPU backend's hooks cannot see it): A and B come to the
// host with cudaMemcpy (legal), the host multiplies, and a function built without the instrumentation
// (no_sanitize("thread")) stores the product into C. A decoy kernel does a naive GEMM into scratch memory,
// so that the access profile sees a kernel's loads. On a GPU the store into C faults. On the CPU backend it
// was correct (and passed) while the runner's buffers were plain host memory; as the runtime's device memory
// (PROT_NONE outside a kernel) the store faults and is reported with its line.
#include <cuda_runtime.h>
#include <vector>

__global__ void decoy(const float* A, const float* B, float* S, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    S[row * N + col] = acc;
}

__attribute__((no_sanitize("thread"))) static void put(float* C, const float* c, size_t n) {
    for (size_t i = 0; i < n; ++i) C[i] = c[i];
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    std::vector<float> a((size_t)M * K), b((size_t)K * N), c((size_t)M * N);
    cudaMemcpy(a.data(), A, a.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), B, b.size() * sizeof(float), cudaMemcpyDeviceToHost);
    float* S = nullptr;
    cudaMalloc(&S, c.size() * sizeof(float));
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    decoy<<<grid, block, 0, stream>>>(A, B, S, M, N, K);
    cudaStreamSynchronize(stream);
    cudaFree(S);
    for (int r = 0; r < M; ++r)
        for (int k = 0; k < K; ++k)
            for (int col = 0; col < N; ++col) c[(size_t)r * N + col] += a[(size_t)r * K + k] * b[(size_t)k * N + col];
    put(C, c.data(), c.size());
}
