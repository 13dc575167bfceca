// Known bad (forbidden library): hands the GEMM to CUTLASS's device-wide GEMM.
#include <cuda_runtime.h>
#include "cutlass/gemm/device/gemm.h"
using RowMajor = cutlass::layout::RowMajor;
using Gemm = cutlass::gemm::device::Gemm<float, RowMajor, float, RowMajor, float, RowMajor>;
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    Gemm op;
    op({{M, N, K}, {A, K}, {B, N}, {C, N}, {C, N}, {1.0f, 0.0f}}, nullptr, stream);
}
