// What a GPU enforces and reports: its properties, the launch limits, __launch_bounds__, streams, events.
#include <cuda_runtime.h>

extern "C" void properties(int* out, char* name) {
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    for (int i = 0; i < 255 && p.name[i]; ++i) name[i] = p.name[i];
    int optin = 0, per_sm = 0;
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0);
    out[0] = p.major; out[1] = p.minor; out[2] = p.multiProcessorCount; out[3] = (int)p.sharedMemPerBlock;
    out[4] = (int)p.sharedMemPerBlockOptin; out[5] = optin; out[6] = p.maxThreadsPerBlock; out[7] = p.warpSize;
    out[8] = p.maxThreadsPerMultiProcessor; out[9] = p.maxGridSize[1]; out[10] = per_sm;
}

__global__ void busy(float* x, int n) {
    float v = x[threadIdx.x];
    for (int i = 0; i < n; ++i) v = v * 0.999f + 1.f;
    x[threadIdx.x] = v;
}

// Times a kernel with events: what a launcher that times itself sees (a modelled time, never 0).
extern "C" float timed(float* x, int n) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a);
    busy<<<1, 32>>>(x, n);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = -1.f;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms;
}

__global__ void one(float* x) { x[0] = 1.f; }

// Launches `one` with this configuration; returns cudaGetLastError().
extern "C" int launch_config(float* x, int gx, int gy, int gz, int bx, int by, int bz) {
    one<<<dim3(gx, gy, gz), dim3(bx, by, bz)>>>(x);
    return cudaGetLastError();
}

__global__ void big_static(float* x) {  // 12289 floats: 4 bytes over the 48 KB a block may have statically
    __shared__ float s[12289];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = s[(threadIdx.x + 1) % 32];
}
extern "C" int launch_big_static(float* x) {
    big_static<<<1, 32>>>(x);
    return cudaGetLastError();
}

__global__ void static_and_dynamic(float* x) {  // 32 KB static, plus what the launch asks for
    __shared__ float s[8192];
    extern __shared__ float d[];
    s[threadIdx.x] = x[threadIdx.x];
    d[threadIdx.x] = 1.f;
    __syncthreads();
    x[threadIdx.x] = s[(threadIdx.x + 1) % 32] + d[threadIdx.x];
}
extern "C" int launch_static_and_dynamic(float* x, int dynamic_bytes) {
    cudaFuncSetAttribute(static_and_dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic_bytes);
    static_and_dynamic<<<1, 32, dynamic_bytes>>>(x);
    return cudaGetLastError();
}

// A __shared__ array of a __device__ function is in every kernel that calls it (nvcc counts it in each): 32 KB
// here, so staged_plus's own 20 KB take it past 48 KB, whichever kernel ran first.
__device__ float stage(const float* x) {
    __shared__ float buf[8192];
    buf[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    return buf[(threadIdx.x + 1) % 32];
}
__global__ void staged(float* x) { x[threadIdx.x] = stage(x); }
__global__ void staged_plus(float* x) {
    __shared__ float own[5120];
    own[threadIdx.x] = stage(x);
    __syncthreads();
    x[threadIdx.x] = own[threadIdx.x];
}
extern "C" int launch_staged(float* x, int plus_first) {
    if (plus_first) staged_plus<<<1, 32>>>(x);
    staged<<<1, 32>>>(x);
    int first = cudaGetLastError();
    if (!plus_first) staged_plus<<<1, 32>>>(x);
    return first ? first : cudaGetLastError();
}

// __launch_bounds__ on the declaration only: the definition below inherits it, as in nvcc.
__global__ void __launch_bounds__(64) declared_bounded(float* x);
extern "C" int launch_declared_bounded(float* x, int threads) {
    declared_bounded<<<1, threads>>>(x);
    return cudaGetLastError();
}
__global__ void declared_bounded(float* x) { x[threadIdx.x] = 64.f; }

template <int THREADS>
__global__ void __launch_bounds__(THREADS) bounded(float* x) {
    x[threadIdx.x] = (float)THREADS;
}
extern "C" int launch_bounded(float* x, int threads) {  // bounds 128: up to 128 threads per block
    bounded<128><<<1, threads>>>(x);
    return cudaGetLastError();
}

__global__ void copy(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
// The launcher contract: every launch, memset and asynchronous copy on the stream it is given.
extern "C" void on_stream(const float* x, float* y, int n, cudaStream_t stream) {
    copy<<<(n + 63) / 64, 64, 0, stream>>>(x, y, n);
}
extern "C" void on_default_stream(const float* x, float* y, int n, cudaStream_t stream) {
    copy<<<(n + 63) / 64, 64>>>(x, y, n);
}
extern "C" void memset_on_default_stream(const float* x, float* y, int n, cudaStream_t stream) {
    cudaMemsetAsync(y, 0, n * sizeof(float));
    copy<<<(n + 63) / 64, 64, 0, stream>>>(x, y, n);
}
extern "C" void synchronous_calls(const float* x, float* y, int n, cudaStream_t stream) {
    cudaMemset(y, 0, n * sizeof(float));  // the synchronous calls have no stream: fine
    copy<<<(n + 63) / 64, 64, 0, stream>>>(x, y, n);
}
