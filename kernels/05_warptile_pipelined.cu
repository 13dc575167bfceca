// 05_warptile_pipelined.cu — "beyond" (a `register_blocked` submission too): warp tiling,
// a multi-stage cp.async pipeline, conflict-free fragment reads, and tile parameters chosen
// per problem size from an autotuning sweep on the H200.
//
// What changed from 04_register_blocked.cu:
//  1. Warp tiling. A thread's outputs (8 x 16 in the large configuration: SUB_M x SUB_N = 2 x 4
//     sub-tiles of 4 x 4) are no longer one contiguous square: the sub-tiles sit WM/SUB_M rows and
//     WN/SUB_N columns apart inside the warp's WM x WN tile (32 x 128). The lanes of a warp form
//     a LANE_ROWS x LANE_COLS grid (4 x 8), so one LDS.128 of the B fragment by a warp reads 8
//     consecutive float4 = 128 contiguous bytes (1 wavefront; 04's layout needed 2) and the
//     A fragment read is 4 float4 broadcast.
//  2. Pipelining. The block keeps STAGES tiles of A and B in shared memory. While the warps
//     multiply tile kt, the copies of tiles kt+1 .. kt+STAGES-1 are in flight: on sm_80+
//     they are cp.async (global -> shared without registers, completing asynchronously,
//     counted with commit/wait groups), so the load latency hides behind the math, and one
//     __syncthreads per tile suffices (04 had two, and exposed every load).
//     On sm_75 (T4) the same code does ordinary copies (the __pipeline_* primitives' fallback);
//     the course's CPU backend lands each copy only at the wait that covers it.
//  3. The A tile is stored transposed with a row padding of 4 floats (As[BK][BM+4]): the
//     transposing 4-byte stores of a warp land in 32 different banks, and float4 alignment stays.
//  4. Tile sizes are template parameters; the launcher picks 128 x 256 block tiles (BK = 32,
//     2 stages, 256 threads of 8 x 16 outputs) when there are enough of them to fill most of the
//     132 SMs, and 64 x 64 tiles otherwise (1024^3 has only 32 tiles of 128 x 256). The values
//     come from the sweeps of benchmarks/gpu_tune.py on the H200 (kernels/README.md).
// Why faster: the FFMA pipe is kept busy (no exposed global latency, no extra barrier, fewer
// shared-memory wavefronts per FMA): per k-step a thread issues 6 LDS.128 for 128 FFMA.
// Measured on the H200 (2026-11-30, kernels/README.md): 44.09 TFLOP/s at 4096^3 (92.2 % of cuBLAS 47.82; 91.9-94.0 % over four runs) with 8x16 thread tiles, 1.35x 04.
#include <cuda_runtime.h>
#include <cuda_pipeline.h>
#include <cstdint>

// ------------------------------------------------------------------ cp.async helpers
// On sm_80+ these are asynchronous copies (PTX); elsewhere the __pipeline_* primitives of
// <cuda_pipeline.h>: plain copies on sm_75, and on the CPU backend copies that land only at the
// wait that covers them (so a missing wait or barrier shows there too).
// `valid == false` writes zeros and reads nothing (the zero-fill form: src-size 0).
__device__ __forceinline__ void copy4Async(float* smemDst, const float* globalSrc, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned smemAddr = static_cast<unsigned>(__cvta_generic_to_shared(smemDst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smemAddr), "l"(globalSrc),
                 "r"(valid ? 4 : 0));
#else
    __pipeline_memcpy_async(smemDst, globalSrc, 4, valid ? 0 : 4);
#endif
}
__device__ __forceinline__ void copy16Async(float* smemDst, const float* globalSrc, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned smemAddr = static_cast<unsigned>(__cvta_generic_to_shared(smemDst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smemAddr), "l"(globalSrc),
                 "r"(valid ? 16 : 0));
#else
    __pipeline_memcpy_async(smemDst, globalSrc, 16, valid ? 0 : 16);
#endif
}
__device__ __forceinline__ void commitAsyncGroup() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#else
    __pipeline_commit();
#endif
}
template <int N_PENDING>
__device__ __forceinline__ void waitAsyncGroups() {  // at most N_PENDING groups still in flight
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N_PENDING));
#else
    __pipeline_wait_prior(N_PENDING);
#endif
}

// ------------------------------------------------------------------ the kernel
constexpr int A_PAD = 4;       // floats of padding per row of the transposed A tile
constexpr int SUB = 4;         // a thread's outputs come in SUB x SUB sub-tiles (one float4 wide)

// Sweep switches (benchmarks/gpu_tune.py): explicit register double buffering of the fragments,
// and grouped block rasterization for L2 reuse (0 = row-major block order).
#ifndef FRAG_DB
#define FRAG_DB 0
#endif
#ifndef GROUP_M
#define GROUP_M 0
#endif

// BM x BN: C tile per block; BK: K-slice per stage; LANE_ROWS x (32 / LANE_ROWS): lane grid of a
// warp; SUB_M x SUB_N: sub-tiles of SUB x SUB per thread (thread tile TM x TN = 4 SUB_M x 4 SUB_N);
// warp tile WM x WN = (TM * LANE_ROWS) x (TN * LANE_COLS); STAGES: tiles in shared memory.
// VEC: N % 4 == 0 and B, C 16-byte aligned (float4 copies of B and float4 stores of C).
template <int BM, int BN, int BK, int LANE_ROWS, int SUB_M, int SUB_N, int STAGES>
struct TileConfig {
    static constexpr int LANE_COLS = 32 / LANE_ROWS;
    static constexpr int TM = SUB * SUB_M, TN = SUB * SUB_N;
    static constexpr int WM = TM * LANE_ROWS;
    static constexpr int WN = TN * LANE_COLS;
    static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int AS_STRIDE = BM + A_PAD;                 // floats per row of As[k][m]
    static constexpr int STAGE_FLOATS = BK * AS_STRIDE + BK * BN;  // one stage: As then Bs
    static constexpr size_t SMEM_BYTES = sizeof(float) * STAGES * STAGE_FLOATS;
    static_assert(BM % WM == 0 && BN % WN == 0, "block tile = whole warp tiles");
    static_assert((BM * BK) % THREADS == 0, "A tile splits evenly over the threads");
    static_assert((BK * BN) % (4 * THREADS) == 0, "B tile splits evenly into float4 per thread");
    static_assert(STAGES >= 2, "at least double buffering");
};

// MIN_BLOCKS: blocks per SM the register allocation must allow (__launch_bounds__).
template <int BM, int BN, int BK, int LANE_ROWS, int SUB_M, int SUB_N, int STAGES, int MIN_BLOCKS, bool VEC>
__global__ void __launch_bounds__(TileConfig<BM, BN, BK, LANE_ROWS, SUB_M, SUB_N, STAGES>::THREADS, MIN_BLOCKS)
warptile_pipelined_gemm_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    using Cfg = TileConfig<BM, BN, BK, LANE_ROWS, SUB_M, SUB_N, STAGES>;
    constexpr int THREADS = Cfg::THREADS, LANE_COLS = Cfg::LANE_COLS, TM = Cfg::TM, TN = Cfg::TN;
    constexpr int WM = Cfg::WM, WN = Cfg::WN, AS_STRIDE = Cfg::AS_STRIDE;
    constexpr int SUB_ROWS = WM / SUB_M, SUB_COLS = WN / SUB_N;  // distance between sub-tiles
    extern __shared__ __align__(16) float smem[];  // STAGES x { As[BK][AS_STRIDE], Bs[BK][BN] }

    int tileM = blockIdx.y, tileN = blockIdx.x;
    if (GROUP_M > 0) {  // blocks launched together cover GROUP_M block rows: A and B reused in L2
        const int blockId = blockIdx.y * gridDim.x + blockIdx.x;
        const int groupSize = GROUP_M * gridDim.x;
        const int firstM = (blockId / groupSize) * GROUP_M;
        const int rowsInGroup = min((int)gridDim.y - firstM, GROUP_M);
        tileM = firstM + (blockId % groupSize) % rowsInGroup;
        tileN = (blockId % groupSize) / rowsInGroup;
    }
    const int blockRow = tileM * BM;
    const int blockCol = tileN * BN;
    const int warpIdx = threadIdx.x / 32, laneIdx = threadIdx.x % 32;
    const int warpRow = warpIdx / Cfg::WARPS_N, warpCol = warpIdx % Cfg::WARPS_N;
    const int laneRow = laneIdx / LANE_COLS, laneCol = laneIdx % LANE_COLS;
    // Offsets of this thread's first 4 rows / 4 columns inside the block tile; sub-tile s is
    // s * SUB_ROWS rows (s * SUB_COLS columns) further.
    const int threadRowOff = warpRow * WM + laneRow * SUB;
    const int threadColOff = warpCol * WN + laneCol * SUB;

    const int numTiles = (K + BK - 1) / BK;

    // Issue the copies of K-tile `tileIdx` into stage `stage` (no wait).
    auto loadTile = [&](int stage, int tileIdx) {
        float* As = smem + stage * Cfg::STAGE_FLOATS;
        float* Bs = As + BK * AS_STRIDE;
        const int kBase = tileIdx * BK;
        // A tile BM x BK: element e -> (row e / BK, k e % BK); a warp reads 32 consecutive
        // floats of 32/BK rows (coalesced) and stores them transposed, As[k][row].
        #pragma unroll
        for (int loadIdx = 0; loadIdx < BM * BK / THREADS; ++loadIdx) {
            const int elem = threadIdx.x + loadIdx * THREADS;
            const int innerRow = elem / BK, innerK = elem % BK;
            const int aRow = blockRow + innerRow, aCol = kBase + innerK;
            const bool valid = aRow < M && aCol < K;
            copy4Async(&As[innerK * AS_STRIDE + innerRow], valid ? &A[(size_t)aRow * K + aCol] : A, valid);
        }
        // B tile BK x BN, float4 granules: element e -> (k e / (BN/4), col 4 * (e % (BN/4))).
        #pragma unroll
        for (int loadIdx = 0; loadIdx < BK * BN / (4 * THREADS); ++loadIdx) {
            const int elem = threadIdx.x + loadIdx * THREADS;
            const int innerK = elem / (BN / 4), innerCol = 4 * (elem % (BN / 4));
            const int bRow = kBase + innerK, bCol = blockCol + innerCol;
            float* dst = &Bs[innerK * BN + innerCol];
            if (VEC) {  // N % 4 == 0: a granule is all in range or all out
                const bool valid = bRow < K && bCol < N;
                copy16Async(dst, valid ? &B[(size_t)bRow * N + bCol] : B, valid);
            } else {
                #pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const bool valid = bRow < K && bCol + j < N;
                    copy4Async(dst + j, valid ? &B[(size_t)bRow * N + bCol + j] : B, valid);
                }
            }
        }
    };

    float threadResults[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) threadResults[i][j] = 0.0f;

    // Prologue: start the first STAGES-1 tiles. One commit group per tile, even when empty,
    // so that "group kt is done" always means "tile kt has landed".
    #pragma unroll
    for (int stage = 0; stage < STAGES - 1; ++stage) {
        if (stage < numTiles) loadTile(stage, stage);
        commitAsyncGroup();
    }

    for (int tileIdx = 0; tileIdx < numTiles; ++tileIdx) {
        waitAsyncGroups<STAGES - 2>();  // this thread's copies of tile tileIdx have landed
        __syncthreads();  // ... and everyone's; also: everyone finished computing tile tileIdx-1,
                          // whose stage the next line refills
        const int nextTile = tileIdx + STAGES - 1;
        if (nextTile < numTiles) loadTile(nextTile % STAGES, nextTile);
        commitAsyncGroup();

        const float* As = smem + (tileIdx % STAGES) * Cfg::STAGE_FLOATS;
        const float* Bs = As + BK * AS_STRIDE;
        // Fragments of k-step dotIdx: TM floats of A (column dotIdx of the A tile), TN of B.
        auto loadFragments = [&](float* regM, float* regN, int dotIdx) {
            #pragma unroll
            for (int s = 0; s < SUB_M; ++s)
                *reinterpret_cast<float4*>(&regM[SUB * s]) =
                    *reinterpret_cast<const float4*>(&As[dotIdx * AS_STRIDE + threadRowOff + s * SUB_ROWS]);
            #pragma unroll
            for (int s = 0; s < SUB_N; ++s)
                *reinterpret_cast<float4*>(&regN[SUB * s]) =
                    *reinterpret_cast<const float4*>(&Bs[dotIdx * BN + threadColOff + s * SUB_COLS]);
        };
        if (FRAG_DB) {  // fragments of k-step dotIdx+1 load while k-step dotIdx multiplies
            float regM[2][TM], regN[2][TN];
            loadFragments(regM[0], regN[0], 0);
            #pragma unroll
            for (int dotIdx = 0; dotIdx < BK; ++dotIdx) {
                if (dotIdx + 1 < BK) loadFragments(regM[(dotIdx + 1) % 2], regN[(dotIdx + 1) % 2], dotIdx + 1);
                #pragma unroll
                for (int resIdxM = 0; resIdxM < TM; ++resIdxM)
                    #pragma unroll
                    for (int resIdxN = 0; resIdxN < TN; ++resIdxN)
                        threadResults[resIdxM][resIdxN] += regM[dotIdx % 2][resIdxM] * regN[dotIdx % 2][resIdxN];
            }
        } else {
            #pragma unroll
            for (int dotIdx = 0; dotIdx < BK; ++dotIdx) {
                float regM[TM], regN[TN];
                loadFragments(regM, regN, dotIdx);
                #pragma unroll
                for (int resIdxM = 0; resIdxM < TM; ++resIdxM)
                    #pragma unroll
                    for (int resIdxN = 0; resIdxN < TN; ++resIdxN)
                        threadResults[resIdxM][resIdxN] += regM[resIdxM] * regN[resIdxN];
            }
        }
    }
    waitAsyncGroups<0>();  // no copy may still be writing shared memory when the block exits

    // Epilogue: registers -> C. Sub-tile (subM, subN) holds rows threadRowOff + subM*SUB_ROWS + 0..3
    // and columns threadColOff + subN*SUB_COLS + 0..3 of the block tile.
    #pragma unroll
    for (int subM = 0; subM < SUB_M; ++subM)
        #pragma unroll
        for (int i = 0; i < SUB; ++i) {
            const int cRow = blockRow + threadRowOff + subM * SUB_ROWS + i;
            if (cRow >= M) continue;
            float* cPtr = C + (size_t)cRow * N;
            #pragma unroll
            for (int subN = 0; subN < SUB_N; ++subN) {
                const int cCol = blockCol + threadColOff + subN * SUB_COLS;
                const float* res = &threadResults[subM * SUB + i][subN * SUB];
                if (VEC) {
                    if (cCol < N) *reinterpret_cast<float4*>(&cPtr[cCol]) = make_float4(res[0], res[1], res[2], res[3]);
                } else {
                    #pragma unroll
                    for (int j = 0; j < SUB; ++j)
                        if (cCol + j < N) cPtr[cCol + j] = res[j];
                }
            }
        }
}

// ------------------------------------------------------------------ launcher
template <int BM, int BN, int BK, int LANE_ROWS, int SUB_M, int SUB_N, int STAGES, int MIN_BLOCKS, bool VEC>
static bool launchConfig(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    using Cfg = TileConfig<BM, BN, BK, LANE_ROWS, SUB_M, SUB_N, STAGES>;
    auto kernel = warptile_pipelined_gemm_kernel<BM, BN, BK, LANE_ROWS, SUB_M, SUB_N, STAGES, MIN_BLOCKS, VEC>;
    // Raise the dynamic shared-memory limit once per instantiation. A GPU with less shared memory
    // per block than this tile needs (a T4 allows 64 KB; the 128 x 256 x 32 tile takes 97 KB)
    // refuses: then the caller uses a smaller tile.
    static const cudaError_t attribute =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)Cfg::SMEM_BYTES);
    if (attribute != cudaSuccess) {
        cudaGetLastError();  // clear the refusal: it is not the kernel's error
        return false;
    }
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    kernel<<<grid, Cfg::THREADS, Cfg::SMEM_BYTES, stream>>>(A, B, C, M, N, K);
    return true;
}

// The large configuration; -D overrides exist for the tuning sweep (benchmarks/gpu_tune.sh).
#ifndef BIG_BM
#define BIG_BM 128
#endif
#ifndef BIG_BN
#define BIG_BN 256
#endif
#ifndef BIG_BK
#define BIG_BK 32
#endif
#ifndef BIG_LANE_ROWS
#define BIG_LANE_ROWS 4
#endif
#ifndef BIG_SUB_M
#define BIG_SUB_M 2
#endif
#ifndef BIG_SUB_N
#define BIG_SUB_N 4
#endif
#ifndef BIG_STAGES
#define BIG_STAGES 2
#endif
#ifndef BIG_MIN_BLOCKS
#define BIG_MIN_BLOCKS 1
#endif
#ifndef SMALL_TILE_THRESHOLD
#define SMALL_TILE_THRESHOLD 100  // too few big tiles to fill most of the 132 SMs: use the small tiles
#endif

template <bool VEC>
static void launchAuto(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    const long bigTiles = (long)((M + BIG_BM - 1) / BIG_BM) * ((N + BIG_BN - 1) / BIG_BN);
    if (bigTiles >= SMALL_TILE_THRESHOLD &&
        launchConfig<BIG_BM, BIG_BN, BIG_BK, BIG_LANE_ROWS, BIG_SUB_M, BIG_SUB_N, BIG_STAGES, BIG_MIN_BLOCKS, VEC>(A, B, C, M, N, K, stream))
        return;
    // 64 x 64 block tile: 2 x 1 warps of 32 x 64, 64 threads (few big tiles, or too little shared memory)
    launchConfig<64, 64, 8, 4, 2, 2, 3, 4, VEC>(A, B, C, M, N, K, stream);
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    const bool vec = (N % 4 == 0) &&
                     ((reinterpret_cast<uintptr_t>(B) | reinterpret_cast<uintptr_t>(C)) % 16 == 0);
    if (vec) launchAuto<true>(A, B, C, M, N, K, stream);
    else     launchAuto<false>(A, B, C, M, N, K, stream);
}
