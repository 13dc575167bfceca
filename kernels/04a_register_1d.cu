// 04a_register_1d.cu — register blocking, first step: each thread computes a column of TM outputs.
//
// What changed from 03_conflict_free.cu / 02_tiled.cu: a block of 512 threads computes a
// BM x BN = 64 x 64 tile of C, walking K in steps of BK = 8. Each thread keeps TM = 8 partial
// sums in registers (rows threadRow*TM .. +7 of one column threadCol). In the inner loop one value
// of Bs is loaded into a register and reused for TM multiply-adds.
//
// Why faster: the Bs value is loaded once per dotIdx and reused TM times (the As loads are
// warp-wide broadcasts); the bigger wins are global traffic and work per thread: the block tile
// is 64 x 64, so per K step the block loads (64 + 64) * 8 floats for
// 2*64*64*8 FLOPs = 16 FLOP/byte from global/L2 (8 for the 32 x 32 tiled kernel), and each
// thread has TM independent accumulators (instruction-level parallelism).
// Measured on the H200 (2026-11-30, kernels/README.md): 18.29 TFLOP/s at 4096^3 (38.3 % of cuBLAS), 2.13x the tiled kernels.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int BM = 64;                  // rows of C per block
constexpr int BN = 64;                  // columns of C per block
constexpr int BK = 8;                   // K-slice per shared-memory tile
constexpr int TM = 8;                   // rows of C per thread
constexpr int NUM_THREADS = BM * BN / TM;  // 512
static_assert(NUM_THREADS == BM * BK, "each thread loads one element of the A tile");
static_assert(NUM_THREADS == BK * BN, "each thread loads one element of the B tile");

// A: M x K, B: K x N, C: M x N, row-major.
__global__ void __launch_bounds__(NUM_THREADS)
register_1d_gemm_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[BM][BK];  // A tile, 64 x 8
    __shared__ float Bs[BK][BN];  // B tile, 8 x 64

    const int blockRow = blockIdx.y * BM;
    const int blockCol = blockIdx.x * BN;
    const int threadCol = threadIdx.x % BN;   // consecutive within a warp
    const int threadRow = threadIdx.x / BN;   // the same within a warp -> As reads are broadcasts
    // Which element of each tile this thread copies (coalesced along the rows of A and B).
    const int innerRowA = threadIdx.x / BK, innerColA = threadIdx.x % BK;
    const int innerRowB = threadIdx.x / BN, innerColB = threadIdx.x % BN;

    float threadResults[TM] = {0.0f};
    for (int bkIdx = 0; bkIdx < K; bkIdx += BK) {
        const int aRow = blockRow + innerRowA, aCol = bkIdx + innerColA;
        const int bRow = bkIdx + innerRowB, bCol = blockCol + innerColB;
        As[innerRowA][innerColA] = (aRow < M && aCol < K) ? A[(size_t)aRow * K + aCol] : 0.0f;
        Bs[innerRowB][innerColB] = (bRow < K && bCol < N) ? B[(size_t)bRow * N + bCol] : 0.0f;
        __syncthreads();  // tiles complete before anyone reads them

        #pragma unroll
        for (int dotIdx = 0; dotIdx < BK; ++dotIdx) {
            const float bTmp = Bs[dotIdx][threadCol];  // one load, reused TM times
            #pragma unroll
            for (int resIdx = 0; resIdx < TM; ++resIdx) {
                threadResults[resIdx] += As[threadRow * TM + resIdx][dotIdx] * bTmp;
            }
        }
        __syncthreads();  // all reads done before the next iteration overwrites the tiles
    }
    const int cCol = blockCol + threadCol;
    #pragma unroll
    for (int resIdx = 0; resIdx < TM; ++resIdx) {
        const int cRow = blockRow + threadRow * TM + resIdx;
        if (cRow < M && cCol < N) C[(size_t)cRow * N + cCol] = threadResults[resIdx];
    }
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    register_1d_gemm_kernel<<<grid, NUM_THREADS, 0, stream>>>(A, B, C, M, N, K);
}
