// Known cheat (host does the work through the fortified memcpy): all three mlp_step launchers compute on
// the host and touch device memory only with __builtin___memcpy_chk, which g++ lowers to glibc's __memcpy_chk
// around the runtime's memcpy check. The CPU build has no _FORTIFY_SOURCE, and the _chk forms are refused there.
#include <cuda_runtime.h>
#include <cstdint>
#include <vector>
#define GET(dst, src, n) __builtin___memcpy_chk((dst), (src), (n), (size_t)-2)
static void host_gemm(const float* A, const float* B, float* C, int M, int N, int K, std::vector<float>& c) {
    std::vector<float> a((size_t)M * K), b((size_t)K * N);
    c.assign((size_t)M * N, 0.0f);
    GET(a.data(), A, a.size() * 4);
    GET(b.data(), B, b.size() * 4);
    for (int r = 0; r < M; ++r)
        for (int k = 0; k < K; ++k) {
            float x = a[(size_t)r * K + k];
            for (int col = 0; col < N; ++col) c[(size_t)r * N + col] += x * b[(size_t)k * N + col];
        }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t) {
    std::vector<float> c;
    host_gemm(A, B, C, M, N, K, c);
    GET(C, c.data(), c.size() * 4);
}
extern "C" void gemm_relu(const float* A, const float* B, const float* bias, float* C, uint32_t* mask, int M, int N,
                          int K, cudaStream_t) {
    std::vector<float> c, bi(N);
    host_gemm(A, B, C, M, N, K, c);
    GET(bi.data(), bias, bi.size() * 4);
    int W = (N + 31) / 32;
    std::vector<uint32_t> m((size_t)M * W, 0u);
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col) {
            float y = c[(size_t)r * N + col] + bi[col];
            y = y > 0.0f ? y : 0.0f;
            c[(size_t)r * N + col] = y;
            if (y > 0.0f) m[(size_t)r * W + col / 32] |= 1u << (col % 32);
        }
    GET(C, c.data(), c.size() * 4);
    GET(mask, m.data(), m.size() * 4);
}
extern "C" void relu_backward(const uint32_t* mask, const float* dY, float* dX, int M, int N, cudaStream_t) {
    int W = (N + 31) / 32;
    std::vector<uint32_t> m((size_t)M * W);
    std::vector<float> d((size_t)M * N);
    GET(m.data(), mask, m.size() * 4);
    GET(d.data(), dY, d.size() * 4);
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col)
            if (!((m[(size_t)r * W + col / 32] >> (col % 32)) & 1u)) d[(size_t)r * N + col] = 0.0f;
    GET(dX, d.data(), d.size() * 4);
}
