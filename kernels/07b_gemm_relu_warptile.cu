// 07b_gemm_relu_warptile.cu — gemm_relu beyond the course: 05's warp-tiled, pipelined GEMM with
// bias + ReLU + mask fused into its epilogue.
//
// What changed from 05_warptile_pipelined.cu: only the epilogue (and a bias copy that rides along
// with the first K-tile; the -D switches below are the variants of benchmarks/gpu_fusion.py). Everything else is 05's text, character for character: the copy helpers,
// the tile configuration, the main loop and the tuned tile sizes (tests/test_kernels.py compares
// the two files, so 07b cannot fall behind 05 again as it once did).
//  1. The bias slice of the block (BN floats) is copied into shared memory behind the pipeline's
//     stages with cp.async, in the first K-tile's commit group: it has landed when tile 0 has, so
//     the epilogue reads it from shared memory instead of waiting on global memory.
//  2. Epilogue, in registers: each thread adds the bias to its 8 x 16 sums, applies max(., 0)
//     and stores C exactly where 05 stores it (one float4 per sub-tile row).
//  3. The mask. A 32-bit word covers 32 consecutive columns of a row = 8 lanes x 4 columns. Each
//     thread packs the 4 sign bits of each of its 32 float4 into a nibble, 8 nibbles per register,
//     and the 8 lanes of a word transpose their 8 x 8 nibbles with 3 __shfl_xor_sync per register
//     (12 per thread instead of 3 per nibble, 96): each lane then holds 4 finished words and stores
//     them, a row's 8 words of the block in one 32-byte sector.
// Why it wins: the separate pass (07a) reads C and writes Y and the mask again (8.125 B per element:
// 136 MB at 4096^2, 34-37 us on the H200), while the fused epilogue adds about 4 instructions per
// element and the mask's 1/32 of C's bytes to a store the GEMM makes anyway.
// Measured on the H200 (2026-12-03, benchmarks/gpu_fusion.py, kernels/results/h200_fusion_07b.txt;
// M = N = 4096): 1.038 / 1.009 / 1.002 / 0.994x 05's GEMM alone at K = 256 / 512 / 1024 / 4096, and
// 1.143 / 1.087 / 1.048 / 1.017x faster than 05 + the separate pass. At K = 256 the epilogue's ~600
// extra instructions per thread (half-rate integer and compare work) cost ~2 us per wave of blocks:
// one block per SM (229 registers) leaves nothing to overlap them with.
// Layout (kernel-file contract): bias has N floats added to every row; mask is M x ceil(N/32)
// uint32, bit (j % 32) of mask[i][j / 32] set exactly when C[i][j] > 0.
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

// Sweep switch (benchmarks/gpu_tune.py): grouped block rasterization for L2 reuse (0 = row-major
// block order).
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

// 8 x 8 transpose of nibbles across the 8 lanes of an aligned group (lane b = laneIdx % 8): on entry
// nibble c of x is element [b][c], on return element [c][b]. Three butterfly steps (D = 4, 2, 1); in
// each, a lane swaps with lane b ^ D the blocks of D nibbles whose position bit D differs from its lane bit D.
template <int D>
__device__ __forceinline__ uint32_t nibbleButterfly(uint32_t x, int b) {
    constexpr uint32_t KEEP_LOW = D == 4 ? 0x0000ffffu : D == 2 ? 0x00ff00ffu : 0x0f0f0f0fu;  // positions with bit D clear
    const bool upper = b & D;
    const uint32_t keep = upper ? ~KEEP_LOW : KEEP_LOW;
    const uint32_t sent = upper ? x << (4 * D) : x >> (4 * D);  // the blocks the partner keeps, moved into place
    const uint32_t got = __shfl_xor_sync(0xffffffffu, sent, D);
    return (x & keep) | (got & ~keep);
}
__device__ __forceinline__ uint32_t transposeNibbles8x8(uint32_t x, int b) {
    return nibbleButterfly<1>(nibbleButterfly<2>(nibbleButterfly<4>(x, b), b), b);
}

// Sweep switches (benchmarks/gpu_fusion.py): where the bias comes from, and how the mask words are built.
#ifndef BIAS_MODE
#define BIAS_MODE 1  // 1: the epilogue adds it from shared memory (copied with tile 0); 0: from global
#endif               // memory; 2: the sums start at the bias (no add; a slower main loop on the H200)
#ifndef MASK_TRANSPOSE
#define MASK_TRANSPOSE 1  // 0: 3 __shfl_xor_sync per nibble, as 07 does
#endif

// MIN_BLOCKS: blocks per SM the register allocation must allow (__launch_bounds__).
// EPI = false: the same kernel with 05's plain store of C (the `gemm` launcher, the fusion's baseline).
template <int BM, int BN, int BK, int LANE_ROWS, int SUB_M, int SUB_N, int STAGES, int MIN_BLOCKS, bool VEC, bool EPI>
__global__ void __launch_bounds__(TileConfig<BM, BN, BK, LANE_ROWS, SUB_M, SUB_N, STAGES>::THREADS, MIN_BLOCKS)
gemm_bias_relu_kernel(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                      int M, int N, int K) {
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

    // The copies of one K-tile, split into LOAD_UNITS per thread: A_UNITS of A (one float each) and
    // B_UNITS of B (one float4 each). What does not change from tile to tile is computed once here.
    constexpr int A_UNITS = BM * BK / THREADS, B_UNITS = BK * BN / (4 * THREADS);
    constexpr int LOAD_UNITS = A_UNITS + B_UNITS;
    static_assert(THREADS % BK == 0 && THREADS % (BN / 4) == 0, "a thread keeps its k (A) and column (B)");
    // A tile BM x BK: a warp reads 32 consecutive floats of 32/BK rows (coalesced) and stores them
    // transposed, As[k][row]. Unit u: row aRow0 + u * A_ROW_STEP, k aK (the same in every unit).
    constexpr int A_ROW_STEP = THREADS / BK;
    const int aK = threadIdx.x % BK, aRow0 = threadIdx.x / BK;
    const float* aSrc = A + (size_t)min(blockRow + aRow0, M - 1) * K + aK;  // clamped: never out of A
    const size_t aUnitStride = (size_t)A_ROW_STEP * K;
    // B tile BK x BN in float4 granules: unit u: k bK0 + u * B_K_STEP, columns bCol .. bCol+3.
    constexpr int B_K_STEP = THREADS / (BN / 4);
    const int bK0 = threadIdx.x / (BN / 4), bColIn = 4 * (threadIdx.x % (BN / 4));
    const int bCol = blockCol + bColIn;
    const float* bSrc = B + (size_t)bK0 * N + bCol;

    // Issue copy `u` of K-tile `tileIdx` into stage `stage` (no wait). checked == false: the caller
    // knows the whole tile is inside A and B.
    auto loadUnit = [&](int stage, int tileIdx, int u, bool checked) {
        float* As = smem + stage * Cfg::STAGE_FLOATS;
        float* Bs = As + BK * AS_STRIDE;
        const int kBase = tileIdx * BK;
        if (u < A_UNITS) {
            const bool valid = !checked || (blockRow + aRow0 + u * A_ROW_STEP < M && kBase + aK < K);
            copy4Async(&As[aK * AS_STRIDE + aRow0 + u * A_ROW_STEP], valid ? aSrc + u * aUnitStride + kBase : A, valid);
        } else {
            const int bu = u - A_UNITS, bRow = kBase + bK0 + bu * B_K_STEP;
            const float* src = bSrc + (size_t)(kBase + bu * B_K_STEP) * N;
            float* dst = &Bs[(bK0 + bu * B_K_STEP) * BN + bColIn];
            if (VEC) {  // N % 4 == 0: a granule is all in range or all out
                const bool valid = !checked || (bRow < K && bCol < N);
                copy16Async(dst, valid ? src : B, valid);
            } else {
                #pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const bool valid = !checked || (bRow < K && bCol + j < N);
                    copy4Async(dst + j, valid ? src + j : B, valid);
                }
            }
        }
    };
    const bool interiorMN = blockRow + BM <= M && blockCol + BN <= N;
    auto loadTile = [&](int stage, int tileIdx) {
        // Tiles wholly inside A and B (all but the edges) copy without bounds checks: 88.9 % of
        // cuBLAS with the checks everywhere, 95.4 % without (sweep 5). The same branch for the block.
        if (interiorMN && (tileIdx + 1) * BK <= K) {
            #pragma unroll
            for (int u = 0; u < LOAD_UNITS; ++u) loadUnit(stage, tileIdx, u, false);
        } else {
            #pragma unroll
            for (int u = 0; u < LOAD_UNITS; ++u) loadUnit(stage, tileIdx, u, true);
        }
    };

    float threadResults[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) threadResults[i][j] = 0.0f;

    // 07b: the bias. Mode 1 (the default): the block's slice is copied behind the stages (the launcher
    // adds BN floats of shared memory) in tile 0's commit group, which every thread waits for and
    // passes a barrier after before the main loop. Mode 2: every sum starts at its column's bias
    // instead of 0, so the epilogue has nothing to add; on the H200 ptxas then scheduled the main
    // loop differently, 1.8 % slower at K = 4096 (kernels/README.md).
    float* biasS = smem + STAGES * Cfg::STAGE_FLOATS;
    if (EPI && BIAS_MODE == 2) {
        #pragma unroll
        for (int subN = 0; subN < SUB_N; ++subN)
            #pragma unroll
            for (int j = 0; j < SUB; ++j) {
                const int c = blockCol + threadColOff + subN * SUB_COLS + j;
                const float biasVal = c < N ? bias[c] : 0.0f;
                #pragma unroll
                for (int i = 0; i < TM; ++i) threadResults[i][subN * SUB + j] = biasVal;
            }
    }
    if (EPI && BIAS_MODE == 1) {
        for (int c = threadIdx.x; c < BN; c += THREADS) {
            const bool valid = blockCol + c < N;
            copy4Async(&biasS[c], valid ? bias + blockCol + c : bias, valid);
        }
    }

    // Prologue: start the first STAGES-1 tiles. One commit group per tile, even when empty,
    // so that "group kt is done" always means "tile kt has landed".
    #pragma unroll
    for (int stage = 0; stage < STAGES - 1; ++stage) {
        if (stage < numTiles) loadTile(stage, stage);
        commitAsyncGroup();
    }

    // Fragments of k-step dotIdx of the tile in `stage`: TM floats of A (column dotIdx of the A tile), TN of B.
    auto loadFragments = [&](float* regM, float* regN, int stage, int dotIdx) {
        const float* As = smem + stage * Cfg::STAGE_FLOATS;
        const float* Bs = As + BK * AS_STRIDE;
        #pragma unroll
        for (int s = 0; s < SUB_M; ++s)
            *reinterpret_cast<float4*>(&regM[SUB * s]) =
                *reinterpret_cast<const float4*>(&As[dotIdx * AS_STRIDE + threadRowOff + s * SUB_ROWS]);
        #pragma unroll
        for (int s = 0; s < SUB_N; ++s)
            *reinterpret_cast<float4*>(&regN[SUB * s]) =
                *reinterpret_cast<const float4*>(&Bs[dotIdx * BN + threadColOff + s * SUB_COLS]);
    };
    auto multiply = [&](const float* regM, const float* regN) {  // the outer product of one k-step
        #pragma unroll
        for (int resIdxM = 0; resIdxM < TM; ++resIdxM)
            #pragma unroll
            for (int resIdxN = 0; resIdxN < TN; ++resIdxN)
                threadResults[resIdxM][resIdxN] += regM[resIdxM] * regN[resIdxN];
    };

    // The fragments of k-step dotIdx+1 load while k-step dotIdx multiplies, across tile boundaries
    // too: the one barrier per tile sits before the tile's last k-step, whose fragments are already
    // in registers, so the first fragment loads of the next tile hide behind its 128 FFMAs.
    float regM[2][TM], regN[2][TN];
    waitAsyncGroups<STAGES - 2>();  // tile 0 has landed (this thread's copies) ...
    __syncthreads();                // ... everyone's
    if (numTiles > 0) loadFragments(regM[0], regN[0], 0, 0);
    for (int tileIdx = 0; tileIdx < numTiles; ++tileIdx) {
        const int stage = tileIdx % STAGES;
        // Refill the stage of tile tileIdx-1: everyone passed the barrier of tile tileIdx-1, after
        // which nobody reads its stage (its last fragments were in registers before it).
        const int nextTile = tileIdx + STAGES - 1;
        if (nextTile < numTiles) loadTile(nextTile % STAGES, nextTile);
        commitAsyncGroup();  // one group per tile (an empty one past the last tile)
        #pragma unroll
        for (int dotIdx = 0; dotIdx < BK; ++dotIdx) {
            if (dotIdx + 1 < BK) {
                loadFragments(regM[(dotIdx + 1) % 2], regN[(dotIdx + 1) % 2], stage, dotIdx + 1);
            } else if (tileIdx + 1 < numTiles) {
                waitAsyncGroups<STAGES - 2>();  // tile tileIdx+1 has landed (this thread's copies) ...
                __syncthreads();                // ... everyone's, and everyone is past its fragment loads of this tile
                loadFragments(regM[(dotIdx + 1) % 2], regN[(dotIdx + 1) % 2], (tileIdx + 1) % STAGES, 0);
            }
            multiply(regM[dotIdx % 2], regN[dotIdx % 2]);
        }
    }
    static_assert(BK % 2 == 0, "k-step 0 of every tile uses register buffer 0");
    waitAsyncGroups<0>();  // no copy may still be writing shared memory when the block exits

    if constexpr (!EPI) {
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
        return;
    } else {
        // 07b's epilogue: C = relu(sums + bias), stored where 05 stores C, and the mask. A mask word is
        // 32 columns = 8 lanes (laneCol % 8 = b = 0..7) x 4 columns of one sub-tile row.
        static_assert(LANE_COLS % 8 == 0 && SUB == 4, "a mask word = the nibbles of 8 lanes of one row");
        constexpr int GROUPS = SUB_M * SUB * SUB_N;  // float4 (= nibbles) per thread
        static_assert(GROUPS % 8 == 0, "8 nibbles per register");
        const int W = (N + 31) / 32;                 // mask words per row
        const int b = laneIdx % 8;
        if (BIAS_MODE == 1 && numTiles == 0) __syncthreads();  // K = 0: the main loop passed no barrier
        // checked == false: the block's tile is wholly inside C (all but the edge blocks), so no
        // row, column or mask-word test. The same branch for the whole block, as in loadTile.
        auto epilogue = [&](bool checked) {
            float biasVals[SUB_N][SUB];
            #pragma unroll
            for (int subN = 0; subN < SUB_N; ++subN)
                #pragma unroll
                for (int j = 0; j < SUB; ++j) {
                    const int c = threadColOff + subN * SUB_COLS + j;
                    if (BIAS_MODE == 1) biasVals[subN][j] = biasS[c];
                    if (BIAS_MODE == 0) biasVals[subN][j] = !checked || blockCol + c < N ? bias[blockCol + c] : 0.0f;
                }
            uint32_t nibbles[GROUPS / 8] = {};  // group g = (subM * SUB + i) * SUB_N + subN: nibble g % 8 of register g / 8
            #pragma unroll
            for (int subM = 0; subM < SUB_M; ++subM)
                #pragma unroll
                for (int i = 0; i < SUB; ++i) {
                    const int cRow = blockRow + threadRowOff + subM * SUB_ROWS + i;
                    const bool rowOk = !checked || cRow < M;
                    float* cPtr = C + (size_t)cRow * N;
                    #pragma unroll
                    for (int subN = 0; subN < SUB_N; ++subN) {
                        const int g = (subM * SUB + i) * SUB_N + subN;
                        const int cCol = blockCol + threadColOff + subN * SUB_COLS;
                        float y[SUB];
                        uint32_t nibble = 0;
                        #pragma unroll
                        for (int j = 0; j < SUB; ++j) {
                            const float sum = threadResults[subM * SUB + i][subN * SUB + j];
                            y[j] = fmaxf(BIAS_MODE == 2 ? sum : sum + biasVals[subN][j], 0.0f);
                            nibble |= (y[j] > 0.0f && (!checked || cCol + j < N)) ? 1u << j : 0u;
                        }
                        if (MASK_TRANSPOSE) {
                            nibbles[g / 8] |= nibble << (4 * (g % 8));
                        } else {  // OR the nibbles of the word's 8 lanes: every lane is here (no early exit)
                            uint32_t word = nibble << (4 * b);
                            word |= __shfl_xor_sync(0xffffffffu, word, 1);
                            word |= __shfl_xor_sync(0xffffffffu, word, 2);
                            word |= __shfl_xor_sync(0xffffffffu, word, 4);
                            const int wordCol = (cCol - 4 * b) / 32;
                            if (b == 0 && rowOk && (!checked || wordCol < W)) mask[(size_t)cRow * W + wordCol] = word;
                        }
                        if (!rowOk) continue;
                        if (VEC) {
                            if (!checked || cCol < N) *reinterpret_cast<float4*>(&cPtr[cCol]) = make_float4(y[0], y[1], y[2], y[3]);
                        } else {
                            #pragma unroll
                            for (int j = 0; j < SUB; ++j)
                                if (!checked || cCol + j < N) cPtr[cCol + j] = y[j];
                        }
                    }
                }
            if (MASK_TRANSPOSE) {
                // After the transpose, lane b holds the word of group 8r + b of its 8 lanes (register r).
                #pragma unroll
                for (int r = 0; r < GROUPS / 8; ++r) {
                    const uint32_t word = transposeNibbles8x8(nibbles[r], b);
                    const int g = 8 * r + b, subN = g % SUB_N, i = (g / SUB_N) % SUB, subM = g / (SUB_N * SUB);
                    const int cRow = blockRow + threadRowOff + subM * SUB_ROWS + i;
                    const int wordCol = (blockCol + threadColOff - 4 * b + subN * SUB_COLS) / 32;
                    if (!checked || (cRow < M && wordCol < W)) mask[(size_t)cRow * W + wordCol] = word;
                }
            }
        };
        if (interiorMN) epilogue(false);
        else            epilogue(true);
    }
}

// ------------------------------------------------------------------ launcher
template <int BM, int BN, int BK, int LANE_ROWS, int SUB_M, int SUB_N, int STAGES, int MIN_BLOCKS, bool VEC, bool EPI>
static bool launchConfig(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                         int M, int N, int K, cudaStream_t stream) {
    using Cfg = TileConfig<BM, BN, BK, LANE_ROWS, SUB_M, SUB_N, STAGES>;
    auto kernel = gemm_bias_relu_kernel<BM, BN, BK, LANE_ROWS, SUB_M, SUB_N, STAGES, MIN_BLOCKS, VEC, EPI>;
    const int smemBytes = (int)Cfg::SMEM_BYTES + (EPI && BIAS_MODE == 1 ? BN * (int)sizeof(float) : 0);  // + the bias slice
    // Raise the dynamic shared-memory limit once per instantiation. A GPU with less shared memory
    // per block than this tile needs (a T4 allows 64 KB; the 128 x 256 x 32 tile takes 97 KB)
    // refuses: then the caller uses a smaller tile.
    static const cudaError_t attribute =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smemBytes);
    if (attribute != cudaSuccess) {
        cudaGetLastError();  // clear the refusal: it is not the kernel's error
        return false;
    }
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    kernel<<<grid, Cfg::THREADS, smemBytes, stream>>>(A, B, bias, C, mask, M, N, K);
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
#define BIG_LANE_ROWS 2
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

template <bool VEC, bool EPI>
static void launchAuto(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                       int M, int N, int K, cudaStream_t stream) {
    const long bigTiles = (long)((M + BIG_BM - 1) / BIG_BM) * ((N + BIG_BN - 1) / BIG_BN);
    if (bigTiles >= SMALL_TILE_THRESHOLD &&
        launchConfig<BIG_BM, BIG_BN, BIG_BK, BIG_LANE_ROWS, BIG_SUB_M, BIG_SUB_N, BIG_STAGES, BIG_MIN_BLOCKS, VEC, EPI>(
            A, B, bias, C, mask, M, N, K, stream))
        return;
    // 64 x 64 block tile: 2 x 1 warps of 32 x 64, 64 threads (few big tiles, or too little shared memory)
    launchConfig<64, 64, 8, 4, 2, 2, 3, 4, VEC, EPI>(A, B, bias, C, mask, M, N, K, stream);
}

static bool vectorized(const float* B, const float* C, int N) {  // 05's test for float4 copies of B and stores of C
    return (N % 4 == 0) && ((reinterpret_cast<uintptr_t>(B) | reinterpret_cast<uintptr_t>(C)) % 16 == 0);
}

extern "C" void gemm_relu(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                          int M, int N, int K, cudaStream_t stream) {
    if (vectorized(B, C, N)) launchAuto<true, true>(A, B, bias, C, mask, M, N, K, stream);
    else                     launchAuto<false, true>(A, B, bias, C, mask, M, N, K, stream);
}

// 05's GEMM itself (the same kernel with EPI = false): what the grader times followed by a separate
// pass (07a_bias_relu_pass.cu) against gemm_relu above.
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    if (vectorized(B, C, N)) launchAuto<true, false>(A, B, nullptr, C, nullptr, M, N, K, stream);
    else                     launchAuto<false, false>(A, B, nullptr, C, nullptr, M, N, K, stream);
}
