// 00_machine.cu — notebook 00's microbenchmarks (no exercise): what the GPU is made of, measured.
//
//   chase_global  one thread follows a chain of indices through global memory, j = next[j]: each
//                 load needs the previous one's result, so cycles per step = one load's latency
//                 (plus ~2 cycles of integer work). The chain's footprint picks the level that
//                 serves it: L1, L2, HBM, HBM with TLB misses. l2_only: ld.global.cg (skip L1).
//                 carveout >= 0: the preferred shared-memory carveout in % (L1 and shared memory
//                 are one array per SM: a bigger shared carveout leaves a smaller L1).
//   chase_global64  the same with 64-bit indices: chains past 8 GB.
//   chase_shared  the same chain in shared memory (n <= 4096 indices).
//   copy_floats   dst = src with float4 loads and stores, grid-stride: the bandwidth sweep.
//   fma_rate      one block of `warps` warps on one SM, 8 independent FMA chains per thread:
//                 FMAs per cycle of that SM, from the first warp's start to the last warp's end. An SM has four sub-partitions, each with its own
//                 scheduler and 32 FP32 lanes, so the rate grows up to 4 warps, then stops.
//
// Built by the course's toolchain (grader.compile.toolchain.build, no exercise) and called from
// grader/course/machine.py through ctypes; benchmarks/gpu_machine.py writes kernels/results/h200_machine.json.
#include <cuda_runtime.h>
#include <cstdint>

template <bool L2_ONLY>
__global__ void chase_global_kernel(const uint32_t* next, uint32_t start, int steps, int warm,
                                    long long* cycles, uint32_t* sink) {
    uint32_t j = start;
    for (int i = 0; i < warm; ++i) j = L2_ONLY ? __ldcg(next + j) : __ldca(next + j);  // bring lines in
    const long long t0 = clock64();
    for (int i = 0; i < steps; ++i) j = L2_ONLY ? __ldcg(next + j) : __ldca(next + j);
    const long long t1 = clock64();
    cycles[0] = t1 - t0;
    sink[0] = j;  // the chain's end is used: the loop cannot be removed
}

// The same with 64-bit indices, for chains past 8 GB (where TLB misses start to show).
__global__ void chase_global64_kernel(const unsigned long long* next, unsigned long long start, int steps,
                                      long long* cycles, unsigned long long* sink) {
    unsigned long long j = start;
    const long long t0 = clock64();
    for (int i = 0; i < steps; ++i) j = __ldca(next + j);
    const long long t1 = clock64();
    cycles[0] = t1 - t0;
    sink[0] = j;
}

constexpr int SHARED_CHAIN = 4096;

__global__ void chase_shared_kernel(const uint32_t* next, int n, uint32_t start, int steps,
                                    long long* cycles, uint32_t* sink) {
    __shared__ uint32_t s[SHARED_CHAIN];
    for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = next[i];
    __syncthreads();
    if (threadIdx.x != 0) return;
    uint32_t j = start;
    for (int i = 0; i < n; ++i) j = s[j];  // warm-up, as for global memory
    const long long t0 = clock64();
    for (int i = 0; i < steps; ++i) j = s[j];
    const long long t1 = clock64();
    cycles[0] = t1 - t0;
    sink[0] = j;
}

__global__ void copy_floats_kernel(const float4* src, float4* dst, long long n4) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) dst[i] = src[i];
}

__global__ void fma_rate_kernel(int iters, float seed, float* out, long long* cycles) {
    // The span from the first warp's start to the last warp's end: one warp's own clock reads can
    // be late by the time the scheduler spends on other warps first.
    __shared__ unsigned long long first_start, last_end;
    if (threadIdx.x == 0) { first_start = ~0ull; last_end = 0; }
    float a[8];
    for (int c = 0; c < 8; ++c) a[c] = seed + threadIdx.x + c;
    const float x = seed * 0.5f, y = 1.0f - seed;
    __syncthreads();
    const long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int c = 0; c < 8; ++c) a[c] = fmaf(a[c], x, y);  // 8 independent chains: no waiting on latency
    }
    const long long t1 = clock64();
    if ((threadIdx.x & 31) == 0) {
        atomicMin(&first_start, (unsigned long long)t0);
        atomicMax(&last_end, (unsigned long long)t1);
    }
    __syncthreads();
    float s = 0.0f;
    for (int c = 0; c < 8; ++c) s += a[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    if (threadIdx.x == 0) cycles[0] = (long long)(last_end - first_start);
}

extern "C" void chase_global(const uint32_t* next, uint32_t start, int steps, int warm, int l2_only,
                             int carveout, long long* cycles, uint32_t* sink, cudaStream_t stream) {
    if (l2_only) {
        chase_global_kernel<true><<<1, 1, 0, stream>>>(next, start, steps, warm, cycles, sink);
    } else {
        if (carveout >= 0)
            cudaFuncSetAttribute(chase_global_kernel<false>, cudaFuncAttributePreferredSharedMemoryCarveout, carveout);
        chase_global_kernel<false><<<1, 1, 0, stream>>>(next, start, steps, warm, cycles, sink);
    }
}

extern "C" void chase_global64(const unsigned long long* next, unsigned long long start, int steps,
                               long long* cycles, unsigned long long* sink, cudaStream_t stream) {
    chase_global64_kernel<<<1, 1, 0, stream>>>(next, start, steps, cycles, sink);
}

extern "C" void chase_shared(const uint32_t* next, int n, uint32_t start, int steps, long long* cycles,
                             uint32_t* sink, cudaStream_t stream) {
    chase_shared_kernel<<<1, 256, 0, stream>>>(next, n < SHARED_CHAIN ? n : SHARED_CHAIN, start, steps, cycles, sink);
}

extern "C" void copy_floats(const float* src, float* dst, long long n, int blocks, cudaStream_t stream) {
    copy_floats_kernel<<<blocks, 256, 0, stream>>>(reinterpret_cast<const float4*>(src),
                                                   reinterpret_cast<float4*>(dst), n / 4);
}

extern "C" void fma_rate(int warps, int iters, float* out, long long* cycles, cudaStream_t stream) {
    fma_rate_kernel<<<1, 32 * warps, 0, stream>>>(iters, 0.999f, out, cycles);
}
