// Known bad (host code does the work): the launcher computes C in plain host C++ and launches
// no kernel. A, B and C are GPU pointers: on a GPU the first read of A segfaults. On the CPU
// backend "device" memory is host memory, so this passed there until host code touching the
// launch's buffers was reported (the access hooks see the launcher's loads and stores too).
#include <cuda_runtime.h>

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    for (int row = 0; row < M; ++row)
        for (int col = 0; col < N; ++col) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
            C[row * N + col] = acc;
        }
}
