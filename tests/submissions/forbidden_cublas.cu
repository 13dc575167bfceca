// Known bad (forbidden library): calls cuBLAS instead of writing the kernel.
#include <cuda_runtime.h>
#include <cublas_v2.h>
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    static cublasHandle_t h = nullptr;
    if (!h) cublasCreate(&h);
    cublasSetStream(h, stream);
    const float one = 1.0f, zero = 0.0f;
    // row-major C = A.B is column-major C^T = B^T.A^T
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N);
}
