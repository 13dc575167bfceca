// relu_bandwidth.cu — how close can the ReLU pair get to the memory system? (standalone, GPU only)
//
//   nvcc -O3 -arch=sm_90 -o /tmp/relu_bw benchmarks/relu_bandwidth.cu && /tmp/relu_bw [M N]
//
// Times, round-robin in one process with CUDA events (median of ROUNDS), on M x N float32 (8192^2):
//   * bandwidth probes: cudaMemcpy D2D, a float4 copy kernel, read-only, write-only, and a
//     2-read-1-write kernel (the shape of PyTorch's threshold_backward: dY and Y in, dX out);
//   * variants of kernels/06's float4 forward and backward: loads in flight per lane (CHUNKS),
//     threads per block, the load's cache hints (L2::256B prefetch, L1 no-allocate), streaming
//     stores (st.global.cs), and a persistent grid (one wave of blocks looping over the chunks).
// Before each timed call the L2 is flushed twice over: "write" (fill a 2 x L2 buffer: leaves the
// cache full of dirty lines the timed call pays to write back) and "clean" (then read that buffer:
// the write-backs happen before the timed call). Both are reported.
// Every forward variant is checked against the exact mask and Y, every backward against dX.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

enum Load { PLAIN = 0, PREFETCH = 1, NC = 2 };  // PREFETCH: ld.global.nc.L1::no_allocate.L2::256B; NC: __ldg
enum Store { WB = 0, CS = 1 };           // CS: st.global.cs (streaming: evict first)

template <int LOAD> __device__ __forceinline__ float4 load4(const float4* p) {
    if (LOAD == PREFETCH) {
        float4 v;
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
        return v;
    }
    if (LOAD == NC) return __ldg(p);
    return *p;
}
template <int STORE> __device__ __forceinline__ void store4(float4* p, float4 v) {
    if (STORE == CS) __stcs(p, v); else *p = v;
}

__device__ __forceinline__ uint32_t spreadByteBy4(uint32_t b) {  // bit i -> bit 4i, i < 8
    uint32_t x = b & 0xffu;
    x = (x | (x << 12)) & 0x000f000fu;
    x = (x | (x << 6)) & 0x03030303u;
    x = (x | (x << 3)) & 0x11111111u;
    return x;
}

// One 128-element chunk per warp and step: lane l has elements 4l..4l+3; the chunk's 4 mask words
// are stored by lanes 0..3. PERSIST: the grid is one wave and each warp strides over the chunks.
template <int T, int C, int LOAD, int STORE, bool PERSIST>
__global__ void __launch_bounds__(T) fwd(const float4* X, float4* Y, uint32_t* mask, long long numChunks) {
    const int lane = threadIdx.x % 32;
    const long long warp = (long long)blockIdx.x * (T / 32) + threadIdx.x / 32;
    const long long stride = PERSIST ? (long long)gridDim.x * (T / 32) * C : 0;
    for (long long first = warp * C; first < numChunks; first += stride) {
        float4 v[C];
#pragma unroll
        for (int c = 0; c < C; ++c)
            v[c] = first + c < numChunks ? load4<LOAD>(X + (first + c) * 32 + lane) : make_float4(0, 0, 0, 0);
#pragma unroll
        for (int c = 0; c < C; ++c) {
            float4 y;  // kernels/06's ReLU (x > 0 ? x : 0, not fmaxf: they differ on NaN)
            y.x = v[c].x > 0.f ? v[c].x : 0.f; y.y = v[c].y > 0.f ? v[c].y : 0.f;
            y.z = v[c].z > 0.f ? v[c].z : 0.f; y.w = v[c].w > 0.f ? v[c].w : 0.f;
            const bool ok = first + c < numChunks;
            if (ok) store4<STORE>(Y + (first + c) * 32 + lane, y);
            const uint32_t b0 = __ballot_sync(~0u, y.x > 0.f), b1 = __ballot_sync(~0u, y.y > 0.f);
            const uint32_t b2 = __ballot_sync(~0u, y.z > 0.f), b3 = __ballot_sync(~0u, y.w > 0.f);
            if (lane < 4 && ok) {
                const int s = 8 * lane;
                mask[(first + c) * 4 + lane] = spreadByteBy4(b0 >> s) | (spreadByteBy4(b1 >> s) << 1) |
                                               (spreadByteBy4(b2 >> s) << 2) | (spreadByteBy4(b3 >> s) << 3);
            }
        }
        if (!PERSIST) break;
    }
}

template <int T, int C, int LOAD, int STORE, bool PERSIST>
__global__ void __launch_bounds__(T) bwd(const uint32_t* mask, const float4* dY, float4* dX, long long numChunks) {
    const int lane = threadIdx.x % 32;
    const long long warp = (long long)blockIdx.x * (T / 32) + threadIdx.x / 32;
    const long long stride = PERSIST ? (long long)gridDim.x * (T / 32) * C : 0;
    for (long long first = warp * C; first < numChunks; first += stride) {
        float4 g[C];
        uint32_t nib[C];
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const bool ok = first + c < numChunks;
            nib[c] = ok ? (mask[(first + c) * 4 + lane / 8] >> (4 * (lane % 8))) & 0xfu : 0u;
            g[c] = ok ? load4<LOAD>(dY + (first + c) * 32 + lane) : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int c = 0; c < C; ++c) {
            if (first + c >= numChunks) continue;
            float4 r = g[c];
            r.x = (nib[c] & 1u) ? r.x : 0.f; r.y = (nib[c] & 2u) ? r.y : 0.f;
            r.z = (nib[c] & 4u) ? r.z : 0.f; r.w = (nib[c] & 8u) ? r.w : 0.f;
            store4<STORE>(dX + (first + c) * 32 + lane, r);
        }
        if (!PERSIST) break;
    }
}

// Bandwidth probes (float4, 2 per thread in flight, grid covers the array once).
template <int LOAD> __global__ void copyk(const float4* a, float4* b, long long n4) {
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 2;
    float4 x0 = i < n4 ? load4<LOAD>(a + i) : float4{}, x1 = i + 1 < n4 ? load4<LOAD>(a + i + 1) : float4{};
    if (i < n4) b[i] = x0;
    if (i + 1 < n4) b[i + 1] = x1;
}
template <int LOAD> __global__ void readk(const float4* a, float* sink, long long n4) {
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 2;
    float4 x0 = i < n4 ? load4<LOAD>(a + i) : float4{}, x1 = i + 1 < n4 ? load4<LOAD>(a + i + 1) : float4{};
    const float s = x0.x + x0.y + x0.z + x0.w + x1.x + x1.y + x1.z + x1.w;
    if (s == 1234.5f) sink[0] = s;  // never true for the test data; keeps the loads
}
__global__ void writek(float4* b, long long n4) {
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 2;
    if (i < n4) b[i] = make_float4(1, 2, 3, 4);
    if (i + 1 < n4) b[i + 1] = make_float4(1, 2, 3, 4);
}
template <int LOAD> __global__ void twoOneK(const float4* a, const float4* c, float4* b, long long n4) {
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 2;
    float4 x0 = i < n4 ? load4<LOAD>(a + i) : float4{}, x1 = i + 1 < n4 ? load4<LOAD>(a + i + 1) : float4{};
    float4 y0 = i < n4 ? load4<LOAD>(c + i) : float4{}, y1 = i + 1 < n4 ? load4<LOAD>(c + i + 1) : float4{};
    if (i < n4) b[i] = make_float4(y0.x > 0 ? x0.x : 0, y0.y > 0 ? x0.y : 0, y0.z > 0 ? x0.z : 0, y0.w > 0 ? x0.w : 0);
    if (i + 1 < n4) b[i + 1] = make_float4(y1.x > 0 ? x1.x : 0, y1.y > 0 ? x1.y : 0, y1.z > 0 ? x1.z : 0, y1.w > 0 ? x1.w : 0);
}
__global__ void flushWrite(float4* f, long long n4) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
        f[i] = make_float4(1, 1, 1, 1);
}
__global__ void flushRead(const float4* f, float* sink, long long n4) {
    float s = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
        s += f[i].x;
    if (s == -1.f) sink[0] = s;
}
__global__ void fill(float* p, long long n, uint32_t seed) {  // zero-mean values, about 1 in 64 exactly 0
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed; h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
        p[i] = (h & 63) == 0 ? 0.f : ((int)(h >> 8) % 2001 - 1000) / 1000.f;
    }
}

struct Fn { std::string name; double bytes; std::function<void()> run; };

int main(int argc, char** argv) {
    const long long M = argc > 2 ? atoll(argv[1]) : 8192, N = argc > 2 ? atoll(argv[2]) : 8192;
    const long long n = M * N, n4 = n / 4, chunks = n / 128, words = n / 32;
    if (N % 128) { printf("N must be a multiple of 128\n"); return 2; }
    int dev = 0, sms = 0, l2 = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    float *X, *Y, *dY, *dX, *Z, *sink, *F;
    uint32_t* mask;
    const long long fl4 = 2LL * l2 / 16;
    for (float** p : {&X, &Y, &dY, &dX, &Z}) CK(cudaMalloc(p, n * 4));
    CK(cudaMalloc(&mask, words * 4)); CK(cudaMalloc(&sink, 4)); CK(cudaMalloc(&F, fl4 * 16));
    fill<<<1024, 256>>>(X, n, 1); fill<<<1024, 256>>>(dY, n, 2);
    CK(cudaDeviceSynchronize());
    auto X4 = (const float4*)X; auto Y4 = (float4*)Y; auto dY4 = (const float4*)dY; auto dX4 = (float4*)dX; auto Z4 = (float4*)Z;
    const unsigned probeBlocks = (unsigned)((n4 / 2 + 255) / 256);
    std::vector<Fn> fns = {
        {"memcpyD2D", 8.0 * n, [&] { CK(cudaMemcpyAsync(Z, X, n * 4, cudaMemcpyDeviceToDevice)); }},
        {"copy", 8.0 * n, [&] { copyk<PLAIN><<<probeBlocks, 256>>>(X4, Z4, n4); }},
        {"copy_pf", 8.0 * n, [&] { copyk<PREFETCH><<<probeBlocks, 256>>>(X4, Z4, n4); }},
        {"read", 4.0 * n, [&] { readk<PLAIN><<<probeBlocks, 256>>>(X4, sink, n4); }},
        {"read_pf", 4.0 * n, [&] { readk<PREFETCH><<<probeBlocks, 256>>>(X4, sink, n4); }},
        {"write", 4.0 * n, [&] { writek<<<probeBlocks, 256>>>(Z4, n4); }},
        {"2r1w", 12.0 * n, [&] { twoOneK<PLAIN><<<probeBlocks, 256>>>(dY4, X4, Z4, n4); }},
        {"2r1w_pf", 12.0 * n, [&] { twoOneK<PREFETCH><<<probeBlocks, 256>>>(dY4, X4, Z4, n4); }},
    };
    const double pairBytes = 8.125 * n;
    auto blocks = [&](int T, int C, bool persist, const void* kern) {
        if (persist) { int per = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kern, T, 0); return (unsigned)(per * sms); }
        return (unsigned)((chunks + (T / 32) * C - 1) / ((T / 32) * C));
    };
#define FWD(NAME, T, C, L, S, P) { auto k = fwd<T, C, L, S, P>; unsigned g = blocks(T, C, P, (const void*)k); \
        fns.push_back({"fwd_" NAME, pairBytes, [=] { k<<<g, T>>>(X4, Y4, mask, chunks); }}); }
#define BWD(NAME, T, C, L, S, P) { auto k = bwd<T, C, L, S, P>; unsigned g = blocks(T, C, P, (const void*)k); \
        fns.push_back({"bwd_" NAME, pairBytes, [=] { k<<<g, T>>>(mask, dY4, dX4, chunks); }}); }
    // first run (2026-12-02): 2 chunks per warp ("base", kernels/06 until then) against 1, 4, cache hints, persistent grids
    FWD("base", 256, 2, PLAIN, WB, false) FWD("c1", 256, 1, PLAIN, WB, false) FWD("c1#2", 256, 1, PLAIN, WB, false)
    FWD("c4", 256, 4, PLAIN, WB, false) FWD("pf", 256, 2, PREFETCH, WB, false) FWD("cs", 256, 2, PLAIN, CS, false)
    FWD("persist_c2", 256, 2, PLAIN, WB, true)
    // second run: around 1 chunk per warp (kernels/06 now)
    FWD("c1_t128", 128, 1, PLAIN, WB, false) FWD("c1_t512", 512, 1, PLAIN, WB, false)
    FWD("c1_t1024", 1024, 1, PLAIN, WB, false) FWD("c1_nc", 256, 1, NC, WB, false) FWD("c1_cs", 256, 1, PLAIN, CS, false)
    BWD("base", 256, 2, PLAIN, WB, false) BWD("c1", 256, 1, PLAIN, WB, false) BWD("c1#2", 256, 1, PLAIN, WB, false)
    BWD("c4", 256, 4, PLAIN, WB, false) BWD("pf", 256, 2, PREFETCH, WB, false) BWD("cs", 256, 2, PLAIN, CS, false)
    BWD("persist_c2", 256, 2, PLAIN, WB, true)
    BWD("c1_t128", 128, 1, PLAIN, WB, false) BWD("c1_t512", 512, 1, PLAIN, WB, false)
    BWD("c1_t1024", 1024, 1, PLAIN, WB, false) BWD("c1_nc", 256, 1, NC, WB, false) BWD("c1_cs", 256, 1, PLAIN, CS, false)

    // Correctness of every variant (exact): Y, the mask and dX against a host reference.
    std::vector<float> hX(n), hdY(n), hY(n), hdX(n); std::vector<uint32_t> hm(words);
    CK(cudaMemcpy(hX.data(), X, n * 4, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(hdY.data(), dY, n * 4, cudaMemcpyDeviceToHost));
    std::vector<uint32_t> refMask(words, 0);
    for (long long i = 0; i < n; ++i) if (hX[i] > 0) refMask[i / 32] |= 1u << (i % 32);
    for (auto& f : fns) {
        const bool isF = f.name.rfind("fwd_", 0) == 0, isB = f.name.rfind("bwd_", 0) == 0;
        if (!isF && !isB) continue;
        CK(cudaMemset(Y, 0xff, n * 4)); CK(cudaMemset(dX, 0xff, n * 4));
        if (isB) CK(cudaMemcpy(mask, refMask.data(), words * 4, cudaMemcpyHostToDevice)); else CK(cudaMemset(mask, 0xff, words * 4));
        f.run(); CK(cudaDeviceSynchronize());
        long long bad = 0;
        if (isF) {
            CK(cudaMemcpy(hY.data(), Y, n * 4, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(hm.data(), mask, words * 4, cudaMemcpyDeviceToHost));
            for (long long i = 0; i < n; ++i) bad += hY[i] != (hX[i] > 0 ? hX[i] : 0.f);
            for (long long w = 0; w < words; ++w) bad += hm[w] != refMask[w];
        } else {
            CK(cudaMemcpy(hdX.data(), dX, n * 4, cudaMemcpyDeviceToHost));
            for (long long i = 0; i < n; ++i) bad += hdX[i] != (hX[i] > 0 ? hdY[i] : 0.f);
        }
        if (bad) printf("WRONG %s: %lld mismatches\n", f.name.c_str(), bad);
    }
    CK(cudaMemcpy(mask, refMask.data(), words * 4, cudaMemcpyHostToDevice));

    const int ROUNDS = 60;
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    for (int warm = 0; warm < 3; ++warm) for (auto& f : fns) f.run();
    CK(cudaDeviceSynchronize());
    printf("%lld x %lld float32, %d SMs, L2 %d MB, %d rounds, medians in ms; GB/s counts the bytes the kernel must move\n",
           M, N, sms, l2 >> 20, ROUNDS);
    for (int mode = 0; mode < 2; ++mode) {
        std::vector<std::vector<float>> ms(fns.size());
        for (int r = 0; r < ROUNDS; ++r)
            for (size_t i = 0; i < fns.size(); ++i) {
                const size_t k = (i + r) % fns.size();  // rotate: no function always follows the same one
                flushWrite<<<sms * 4, 512>>>((float4*)F, fl4);
                if (mode == 1) flushRead<<<sms * 4, 512>>>((const float4*)F, sink, fl4);
                CK(cudaEventRecord(e0)); fns[k].run(); CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
                float t; CK(cudaEventElapsedTime(&t, e0, e1)); ms[k].push_back(t);
            }
        printf("\n== flush: %s\n%-18s %9s %9s %8s\n", mode ? "clean (write, then read)" : "write", "name", "median", "p10-p90", "GB/s");
        double copyGBs = 0;
        for (size_t i = 0; i < fns.size(); ++i) {
            auto v = ms[i]; std::sort(v.begin(), v.end());
            const double med = v[v.size() / 2], gbs = fns[i].bytes / (med * 1e-3) / 1e9;
            if (fns[i].name == "copy") copyGBs = gbs;
            printf("%-18s %9.4f %9.4f %8.0f  %5.1f%% of copy\n", fns[i].name.c_str(), med, v[v.size() * 9 / 10] - v[v.size() / 10], gbs,
                   copyGBs ? 100 * gbs / copyGBs : 0.0);
        }
    }
    return 0;
}
