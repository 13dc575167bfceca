// Known good: A is staged into a cudaMallocPitch block with cudaMemcpy2DAsync (device to device, rows
// padded to the pitch the runtime chose), cleared first with cudaMemset2DAsync; the kernel reads the padded A.
#include <cuda_runtime.h>
__global__ void k(const float* Ap, size_t pitch, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        const float* a = (const float*)((const char*)Ap + r * pitch);
        float s = 0.0f;
        for (int kk = 0; kk < K; ++kk) s += a[kk] * B[(size_t)kk * N + c];
        C[(size_t)r * N + c] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    float* Ap = nullptr;
    size_t pitch = 0;
    if (cudaMallocPitch(&Ap, &pitch, (size_t)K * sizeof(float), M) != cudaSuccess) return;
    cudaMemset2DAsync(Ap, pitch, 0, pitch, M, st);
    cudaMemcpy2DAsync(Ap, pitch, A, (size_t)K * sizeof(float), (size_t)K * sizeof(float), M,
                      cudaMemcpyDeviceToDevice, st);
    dim3 b(32, 8), g((N + 31) / 32, (M + 7) / 8);
    k<<<g, b, 0, st>>>(Ap, pitch, B, C, M, N, K);
    cudaFreeAsync(Ap, st);
}
