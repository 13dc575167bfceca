// Kernels that fault on the CPU (an illegal memory access on a GPU): the launch must
// report an error and return, and the process must live on.
#include <cuda_runtime.h>

__global__ void wild(const float* A, float* C, int n) {  // no barrier: the plain loop
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] * 2.f;
    if (i == 37 && n > 100) C[(i + 1) * 100000000] = 1.f;  // BUG: wild write
}

__global__ void wild_synced(const float* A, float* C, int n) {  // barriers: fibers
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? A[i] : 0.f;
    __syncthreads();
    if (i == 70 && n > 100) s[0] = *(const volatile float*)(A + (size_t)i * 300000000);  // BUG: wild read
    __syncthreads();
    if (i < n) C[i] = s[threadIdx.x] * 2.f;
}

__device__ int deep(volatile int* p, int d) {
    volatile int local[64];
    local[d & 63] = d;
    return d <= 0 ? *p : deep(p, d - 1) + local[(d * 7) & 63];
}

__global__ void recursion(int* out, int depth) {  // overflows a 128 KiB fiber stack
    __syncthreads();
    out[threadIdx.x] = deep(out, depth);
    __syncthreads();
}

__global__ void big_local(float* out, int n) {  // a 1 MiB local array
    float big[256 * 1024];
    for (int i = 0; i < n; ++i) big[(i * 4099) % (256 * 1024)] = (float)i;
    __syncthreads();
    out[threadIdx.x] = big[(threadIdx.x * 4099) % (256 * 1024)];
}

__global__ void divide(int* out, int d) { out[threadIdx.x] = 100 / (d + (int)threadIdx.x - 5); }

extern "C" void wild_launch(const float* A, float* C, int n) { wild<<<(n + 63) / 64, 64>>>(A, C, n); }
extern "C" void wild_synced_launch(const float* A, float* C, int n) {
    wild_synced<<<(n + 63) / 64, 64>>>(A, C, n);
}
extern "C" void recursion_launch(int* out, int depth) { recursion<<<1, 32>>>(out, depth); }
extern "C" void big_local_launch(float* out, int n) { big_local<<<1, 32>>>(out, n); }
extern "C" void divide_launch(int* out, int d) { divide<<<1, 32>>>(out, d); }
