// Known bad (forbidden construct): loads libcublas at run time with dlopen, declared by hand
// so that no forbidden header is included.
#include <cuda_runtime.h>
extern "C" void* dlopen(const char*, int);
extern "C" void* dlsym(void*, const char*);
typedef int (*sgemm_t)(void*, int, int, int, int, int, const float*, const float*, int,
                       const float*, int, const float*, float*, int);
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    void* lib = dlopen("libcublas.so", 2);
    (void)lib; (void)stream;
}
