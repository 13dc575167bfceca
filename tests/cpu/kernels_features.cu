// CUDA features the CPU backend must run; each launcher is checked against numpy.
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>

template <int TILE>
__global__ void __launch_bounds__(TILE * TILE) tiled_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                                          float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * blockDim.y + ty, col = blockIdx.x * blockDim.x + tx;
    float acc = 0.f;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

extern "C" void gemm_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    tiled_gemm<16><<<grid, block, 0, (cudaStream_t)0>>>(A, B, C, M, N, K);
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

// Block sum: dynamic shared memory, shuffles, __syncwarp, atomicAdd on float.
__global__ void block_sum(const float* x, float* out, int n) {
    extern __shared__ float partial[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    v = warp_sum(v);
    int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / warpSize ? partial[lane] : 0.f;
        __syncwarp();
        for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
        if (lane == 0) atomicAdd(out, v);
    }
}

extern "C" void sum(const float* x, float* out, int n) {
    int threads = 256;
    block_sum<<<(n + threads - 1) / threads, threads, (threads / 32) * sizeof(float)>>>(x, out, n);
}

// Shuffle variants with width, ballot, activemask; results per lane.
__global__ void shuffles(int* out) {
    int lane = threadIdx.x;
    out[0 * 32 + lane] = __shfl_sync(0xffffffffu, lane * 10, 3);
    out[1 * 32 + lane] = __shfl_sync(0xffffffffu, lane * 10, 5, 16);
    out[2 * 32 + lane] = __shfl_up_sync(0xffffffffu, lane, 2, 8);
    out[3 * 32 + lane] = __shfl_down_sync(0xffffffffu, lane, 3);
    out[4 * 32 + lane] = __shfl_xor_sync(0xffffffffu, lane, 1);
    out[5 * 32 + lane] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
    out[6 * 32 + lane] = __any_sync(0xffffffffu, lane == 7) + 2 * __all_sync(0xffffffffu, lane < 32);
    if (lane >= 20) return;
    out[7 * 32 + lane] = (int)__activemask();
}

extern "C" void shuffle_test(int* out) { shuffles<<<1, 32>>>(out); }

// float4 / float2 vector loads through reinterpret_cast.
__global__ void vec_scale(const float* in, float* out, float s, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(in)[i];
        float2 lo = make_float2(v.x * s, v.y * s);
        reinterpret_cast<float4*>(out)[i] = make_float4(lo.x, lo.y, v.z * s, v.w * s);
    }
}

extern "C" void scale4(const float* in, float* out, int n) {
    vec_scale<<<dim3((n / 4 + 63) / 64), dim3(64)>>>(in, out, 2.5f, n / 4);
}

// Integer atomics and a relu mask built with __ballot_sync (bit j%32 of word j/32).
__global__ void relu_mask(const float* x, float* y, uint32_t* mask, int* stats, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    float r = fmaxf(v, 0.f);
    if (i < n) y[i] = r;
    unsigned bits = __ballot_sync(0xffffffffu, i < n && r > 0.f);
    if (threadIdx.x % 32 == 0 && i < n) mask[i / 32] = bits;
    if (r > 0.f) atomicAdd(&stats[0], 1);
    atomicMax(&stats[1], (int)(v * 1000.f));
    atomicOr((unsigned*)&stats[2], 1u << (threadIdx.x % 32));
}

extern "C" void relu(const float* x, float* y, uint32_t* mask, int* stats, int n) {
    relu_mask<<<(n + 127) / 128, 128>>>(x, y, mask, stats, n);
}

// Math intrinsics and CUDA's global min/max.
__global__ void math(const float* x, float* out, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    out[0 * n + i] = fminf(v, 0.5f) + fmaxf(v, -0.5f);
    out[1 * n + i] = (float)(min(i, 3) + max(i, 5));
    out[2 * n + i] = __uint_as_float(__float_as_uint(v));
    out[3 * n + i] = __fdividef(v, 4.f);
    out[4 * n + i] = __expf(v);
    out[5 * n + i] = rsqrtf(v + 2.f);
    out[6 * n + i] = fmaf(v, 2.f, 1.f) + min(v, 0.25f) + max(v, 0.75f);
}

extern "C" void math_test(const float* x, float* out, int n) { math<<<1, n>>>(x, out, n); }

// Runtime API on host memory, and a launch with more than 48 KiB of dynamic shared memory.
__global__ void big_smem_copy(const float* in, float* out, int n) {
    extern __shared__ __align__(16) float buf[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = in[i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buf[n - 1 - i];
}

extern "C" int runtime_api(const float* host_in, float* host_out, int n) {
    float *d_in = nullptr, *d_out = nullptr;
    if (cudaMalloc(&d_in, n * sizeof(float)) != cudaSuccess) return 1;
    cudaMalloc((void**)&d_out, n * sizeof(float));
    cudaMemcpy(d_in, host_in, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemsetAsync(d_out, 0, n * sizeof(float), 0);
    size_t bytes = n * sizeof(float);
    cudaFuncSetAttribute(big_smem_copy, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    big_smem_copy<<<1, 128, bytes>>>(d_in, d_out, n);
    if (cudaGetLastError() != cudaSuccess) return 2;
    cudaDeviceSynchronize();
    cudaMemcpyAsync(host_out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost, 0);
    cudaMemset(d_in, 0, n * sizeof(float));
    cudaFree(d_in);
    cudaFree(d_out);
    return 0;
}

__global__ void hello(int tag) {
    if (threadIdx.x == 1) printf("hello from block %d thread %d tag %d\n", blockIdx.x, threadIdx.x, tag);
}

extern "C" void say_hello(int tag) { hello<<<2, 4>>>(tag); }

__global__ void counts(int* out) {
    int c = __syncthreads_count(threadIdx.x % 4 == 0);
    int a = __syncthreads_and(threadIdx.x < 1000);
    int o = __syncthreads_or(threadIdx.x == 5);
    if (threadIdx.x == 0) { out[0] = c; out[1] = a; out[2] = o; }
}

extern "C" void count_test(int* out) { counts<<<1, 64>>>(out); }

// __syncwarp with a partial mask: each half of the warp exchanges values within itself.
__global__ void half_exchange(int* out) {
    __shared__ int buf[32];
    int lane = threadIdx.x;
    buf[lane] = lane * 3;
    if (lane < 16) __syncwarp(0x0000ffffu); else __syncwarp(0xffff0000u);
    out[lane] = buf[lane ^ 1];
}
extern "C" void half_exchange_launch(int* out) { half_exchange<<<1, 32>>>(out); }

// ---- runtime calls, cache-hint loads/stores, warp reductions, cooperative groups, volatile ----
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__constant__ float scale_c[4];

__global__ void cache_hints(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = __ldg(x + i) + __ldcs(x + i) + __ldcg(x + i) + __ldca(x + i) + __ldlu(x + i) + __ldcv(x + i);
    float4 v = __ldg(reinterpret_cast<const float4*>(x) + i / 4);
    a += (&v.x)[i % 4] * scale_c[0];
    switch (i % 4) {
        case 0: __stcs(y + i, a); break;
        case 1: __stwt(y + i, a); break;
        case 2: __stcg(y + i, a); break;
        default: __stwb(y + i, a); break;
    }
}

extern "C" int runtime_calls(const float* x, float* y, int n, int* info) {
    int dev = -1, sms = 0, smem = 0, threads = 0, warp = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 1;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerBlock, dev);
    cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    info[0] = dev; info[1] = sms; info[2] = smem; info[3] = threads; info[4] = warp; info[5] = prop.multiProcessorCount;
    const float s[4] = {2.f, 0.f, 0.f, 0.f};
    cudaStream_t stream = 0;
    cudaMemcpyToSymbolAsync(scale_c, s, sizeof s, 0, cudaMemcpyHostToDevice, stream);
    float* tmp = nullptr;
    if (cudaMallocAsync(&tmp, n * sizeof(float), stream) != cudaSuccess) return 2;
    cudaMemcpyAsync(tmp, x, n * sizeof(float), cudaMemcpyDeviceToDevice, stream);
    cache_hints<<<(n + 63) / 64, 64, 0, stream>>>(tmp, y, n);
    cudaFreeAsync(tmp, stream);
    return cudaGetLastError();
}

__global__ void warp_reduce(const int* x, int* out) {
    int lane = threadIdx.x, v = x[lane];
    unsigned u = (unsigned)v;
    out[0 * 32 + lane] = __reduce_add_sync(0xffffffffu, v);
    out[1 * 32 + lane] = __reduce_min_sync(0xffffffffu, v);
    out[2 * 32 + lane] = __reduce_max_sync(0xffffffffu, v);
    out[3 * 32 + lane] = (int)__reduce_and_sync(0xffffffffu, u);
    out[4 * 32 + lane] = (int)__reduce_or_sync(0xffffffffu, u);
    out[5 * 32 + lane] = (int)__reduce_xor_sync(0xffffffffu, u);
    out[6 * 32 + lane] = (int)__reduce_add_sync(0xffffffffu, u);
    if (lane < 16) out[7 * 32 + lane] = __reduce_add_sync(0x0000ffffu, v);
    else out[7 * 32 + lane] = -1;
}
extern "C" void warp_reduce_launch(const int* x, int* out) { warp_reduce<<<1, 32>>>(x, out); }

// Block sum with cooperative groups: thread_block sync, tiled_partition, tile shuffles and ballot.
__global__ void cg_sum(const float* x, float* out, unsigned* ballots, int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<8> eighth = cg::tiled_partition<8>(block);
    __shared__ float partial[8];
    int i = blockIdx.x * block.size() + block.thread_rank();
    float v = i < n ? x[i] : 0.f;
    for (int off = warp.size() / 2; off > 0; off /= 2) v += warp.shfl_down(v, off);
    unsigned b = warp.ballot(i < n && x[i] > 0.f);
    if (warp.thread_rank() == 0) {
        partial[warp.meta_group_rank()] = v;
        ballots[i / 32] = b;
    }
    block.sync();
    if (warp.meta_group_rank() == 0) {
        v = warp.thread_rank() < warp.meta_group_size() ? partial[warp.thread_rank()] : 0.f;
        warp.sync();
        v = cg::reduce(warp, v, cg::plus<float>());
        if (warp.thread_rank() == 0) atomicAdd(out, v);
    }
    // an 8-lane tile: its own shuffle and ballot
    int e = eighth.shfl(static_cast<int>(eighth.thread_rank()) * 2, 3);
    unsigned eb = eighth.ballot(eighth.thread_rank() % 2 == 0);
    if (e != 6 || eb != 0x55u || eighth.any(false) || !eighth.all(true)) atomicAdd(out, 1000.f);
    cg::sync(block);
}
extern "C" void cg_sum_launch(const float* x, float* out, unsigned* ballots, int n) {
    cg_sum<<<(n + 255) / 256, 256>>>(x, out, ballots, n);
}

// The legacy warp-synchronous reduction over volatile shared memory, with __syncwarp.
__global__ void volatile_sum(const float* x, float* out) {
    volatile __shared__ float s[64];
    __shared__ volatile float t[1];
    int tid = threadIdx.x;
    s[tid] = x[tid] + x[tid + 32];
    __syncwarp();
    for (int off = 16; off > 0; off /= 2) {
        float v = tid < off ? s[tid + off] : 0.f;
        __syncwarp();
        if (tid < off) s[tid] += v;
        __syncwarp();
    }
    if (tid == 0) { t[0] = s[0]; out[0] = t[0]; }
}
extern "C" void volatile_sum_launch(const float* x, float* out) { volatile_sum<<<1, 32>>>(x, out); }

// Bit intrinsics: funnel shifts (mod 32 and clamped), bit reversal, and __fsub_rn's signed zero
// (0 - (+0) = +0, so the sign bit of 0 - relu(x) says x > 0, as IEEE float on a GPU gives it).
__global__ void bits(const unsigned* lo, const unsigned* hi, const unsigned* shift, unsigned* out, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    out[0 * n + i] = __funnelshift_l(lo[i], hi[i], shift[i]);
    out[1 * n + i] = __funnelshift_lc(lo[i], hi[i], shift[i]);
    out[2 * n + i] = __funnelshift_r(lo[i], hi[i], shift[i]);
    out[3 * n + i] = __funnelshift_rc(lo[i], hi[i], shift[i]);
    out[4 * n + i] = __brev(lo[i]);
    out[5 * n + i] = __float_as_uint(__fsub_rn(0.0f, fmaxf(__uint_as_float(hi[i]), 0.0f))) >> 31;
}

extern "C" void bits_test(const unsigned* lo, const unsigned* hi, const unsigned* shift, unsigned* out, int n) {
    bits<<<1, n>>>(lo, hi, shift, out, n);
}
