// 00_cpu_naive.cu — exercise `cpu_blocked`'s baseline: the triple loop, in C++, on the CPU.
//
// Plain C++ (the `.cu` name keeps one kind of kernel file; g++ builds it, grader.run.host). The inner
// loop walks B down a column: consecutive k are N floats apart, so every multiply-add touches a
// new cache line of B, and once B no longer fits in the caches each one waits on memory.
// Measured (notebook 01, this course's 2-core CI machine): about 0.3-0.5 GFLOP/s.
#include <cstddef>

extern "C" void gemm_cpu(const float* A, const float* B, float* C, int M, int N, int K) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float sum = 0.0f;
            for (int k = 0; k < K; ++k) sum += A[(size_t)i * K + k] * B[(size_t)k * N + j];
            C[(size_t)i * N + j] = sum;
        }
}
