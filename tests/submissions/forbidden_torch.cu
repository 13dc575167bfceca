// Known bad (forbidden library): includes torch's ATen headers and calls at::matmul.
#include <cuda_runtime.h>
#include <ATen/ATen.h>
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
    auto a = at::from_blob(const_cast<float*>(A), {M, K}, opts);
    auto b = at::from_blob(const_cast<float*>(B), {K, N}, opts);
    at::from_blob(C, {M, N}, opts).copy_(at::matmul(a, b));
}
