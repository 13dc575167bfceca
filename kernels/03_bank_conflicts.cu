// 03_bank_conflicts.cu — the conflicted twin of 03_conflict_free.cu (a correct but slow `conflict_free`).
//
// What changed from 02_tiled.cu: the B tile is stored *transposed* in shared memory, BsT[n][k],
// so that each thread's inner loop walks contiguous memory (BsT[threadCol][0..31]) — the habit
// a CPU programmer brings along. On a GPU what matters is the 32 lanes of a warp at the same
// instant: they read BsT[0..31][dotIdx], 32 words TILE = 32 floats apart, all in the same bank.
// Shared memory has 32 banks of 4 bytes; 32 different words in one bank are served one after
// another: a 32-way bank conflict, 32 wavefronts instead of 1 for every Bs load of the inner loop
// (and for the transposed store too).
// Nsight Compute shows it: ncu --clock-control none --metrics
//   l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
// Measured on the H200 (2026-11-30, kernels/README.md): 1.71 TFLOP/s at 4096^3 (3.6 % of cuBLAS); ncu at 2048^3: 1.88e9 load and 2.6e8 store conflicts, 10.2 ms.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int TILE = 32;     // tile edge: 32 x 32 threads, 32 x 32 tiles (a row of a tile = 32 banks)
constexpr int B_PAD = 0;       // extra floats at the end of each row of the transposed B tile

// A: M x K, B: K x N, C: M x N, row-major. Block (bx, by) computes C[by*TILE.., bx*TILE..].
__global__ void transposed_b_gemm_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];          // As[threadRow][k]
    __shared__ float BsT[TILE][TILE + B_PAD]; // BsT[n][k]: the B tile stored transposed

    const int threadRow = threadIdx.y;
    const int threadCol = threadIdx.x;                 // consecutive in a warp
    const int cRow = blockIdx.y * TILE + threadRow;
    const int cCol = blockIdx.x * TILE + threadCol;

    float sum = 0.0f;
    for (int bkIdx = 0; bkIdx < K; bkIdx += TILE) {
        const int aCol = bkIdx + threadCol;
        const int bRow = bkIdx + threadRow;
        As[threadRow][threadCol] = (cRow < M && aCol < K) ? A[(size_t)cRow * K + aCol] : 0.0f;
        // Coalesced global read of B (threadCol walks a row of B), transposed store:
        // lane threadCol writes word threadCol*(TILE+B_PAD) + threadRow -> bank (threadCol*B_PAD + threadRow) % 32.
        BsT[threadCol][threadRow] = (bRow < K && cCol < N) ? B[(size_t)bRow * N + cCol] : 0.0f;
        __syncthreads();  // the tiles must be fully written before any thread reads them

        #pragma unroll
        for (int dotIdx = 0; dotIdx < TILE; ++dotIdx) {
            // Each thread walks its own contiguous row of BsT; across the warp the 32 lanes read a
            // column: words threadCol*(TILE+B_PAD) + dotIdx.
            sum += As[threadRow][dotIdx] * BsT[threadCol][dotIdx];
        }
        __syncthreads();  // every thread must be done reading before the next step overwrites the tiles
    }
    if (cRow < M && cCol < N) C[(size_t)cRow * N + cCol] = sum;
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    transposed_b_gemm_kernel<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
