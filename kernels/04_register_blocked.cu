// 04_register_blocked.cu — exercise `register_blocked`: a 2D thread tile (TM x TN outer product)
// with float4 loads.
//
// What changed from 04a_register_1d.cu: each of 256 threads now computes a TM x TN = 8 x 8
// tile of C; a block computes BM x BN = 128 x 128. Per dotIdx a thread loads TM values of A
// and TN values of B into registers (regM, regN) and does their outer product: TM*TN = 64 FMAs
// for TM + TN = 16 loaded floats — and since the A tile is stored transposed (As[k][m]),
// both fragments are contiguous and come in as 4 LDS.128 (16-byte shared loads).
// Global loads are float4 (one 16-byte LDG per thread per tile for A and one for B) when
// K and N are multiples of 4 and A, B are 16-byte aligned; otherwise the same kernel is
// instantiated with scalar, bounds-checked loads (any M, N, K works).
//
// Why faster: shared-memory loads per FMA drop from ~1 (04a) to 4 LDS.128 / 64 FMA, so FMA
// issue, not shared memory, becomes the limit. Global/L2 traffic per block K-step:
// (128 + 128) * 8 floats = 8 KiB for 2*128*128*8 FLOPs = 32 FLOP/byte (16 in 04a: 64x64 tiles).
// Still left on the table (-> 05): no overlap of the tile loads with the math (two barriers per
// tile, loads exposed), 2-way shared-memory conflicts on the B fragment reads, one tile size.
// Measured on the H200 (2026-11-30, kernels/README.md): 32.58 TFLOP/s at 4096^3 (68.1 % of cuBLAS), 1.78x 04a; 117 registers, no spills.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int BM = 128;                    // rows of C per block
constexpr int BN = 128;                    // columns of C per block
constexpr int BK = 8;                      // K-slice per tile
constexpr int TM = 8;                      // rows of C per thread
constexpr int TN = 8;                      // columns of C per thread
constexpr int NUM_THREADS = (BM / TM) * (BN / TN);  // 256
static_assert(BM * BK == 4 * NUM_THREADS, "one float4 of the A tile per thread");
static_assert(BK * BN == 4 * NUM_THREADS, "one float4 of the B tile per thread");

// A: M x K, B: K x N, C: M x N, row-major. VEC: float4 global loads/stores are legal
// (K % 4 == 0, N % 4 == 0, A, B, C 16-byte aligned).
template <bool VEC>
__global__ void __launch_bounds__(NUM_THREADS)
register_blocked_gemm_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ __align__(16) float As[BK][BM];  // A tile stored transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK][BN];  // B tile: Bs[k][n]

    const int blockRow = blockIdx.y * BM;
    const int blockCol = blockIdx.x * BN;
    const int threadRow = threadIdx.x / (BN / TN);  // 0..15: this thread's rows threadRow*TM..+TM-1
    const int threadCol = threadIdx.x % (BN / TN);  // 0..15: this thread's cols threadCol*TN..+TN-1
    // The float4 each thread copies: A tile (128 x 8) row innerRowA, cols innerColA..+3;
    // B tile (8 x 128) row innerRowB, cols innerColB..+3. Both coalesced along rows.
    const int innerRowA = threadIdx.x / (BK / 4), innerColA = (threadIdx.x % (BK / 4)) * 4;
    const int innerRowB = threadIdx.x / (BN / 4), innerColB = (threadIdx.x % (BN / 4)) * 4;

    float threadResults[TM][TN] = {{0.0f}};
    float regM[TM], regN[TN];

    for (int bkIdx = 0; bkIdx < K; bkIdx += BK) {
        // ---- global -> shared (A transposed while storing) ----
        const int aRow = blockRow + innerRowA, aCol = bkIdx + innerColA;
        const int bRow = bkIdx + innerRowB, bCol = blockCol + innerColB;
        float4 aVal, bVal;
        if (VEC) {
            // K % 4 == 0 and aCol % 4 == 0: the four floats are all in range or all out.
            aVal = (aRow < M && aCol < K) ? *reinterpret_cast<const float4*>(&A[(size_t)aRow * K + aCol])
                                          : make_float4(0.f, 0.f, 0.f, 0.f);
            bVal = (bRow < K && bCol < N) ? *reinterpret_cast<const float4*>(&B[(size_t)bRow * N + bCol])
                                          : make_float4(0.f, 0.f, 0.f, 0.f);
        } else {
            const bool aOk = aRow < M, bOk = bRow < K;
            const float* aPtr = A + (size_t)aRow * K;
            const float* bPtr = B + (size_t)bRow * N;
            aVal.x = (aOk && aCol + 0 < K) ? aPtr[aCol + 0] : 0.f;
            aVal.y = (aOk && aCol + 1 < K) ? aPtr[aCol + 1] : 0.f;
            aVal.z = (aOk && aCol + 2 < K) ? aPtr[aCol + 2] : 0.f;
            aVal.w = (aOk && aCol + 3 < K) ? aPtr[aCol + 3] : 0.f;
            bVal.x = (bOk && bCol + 0 < N) ? bPtr[bCol + 0] : 0.f;
            bVal.y = (bOk && bCol + 1 < N) ? bPtr[bCol + 1] : 0.f;
            bVal.z = (bOk && bCol + 2 < N) ? bPtr[bCol + 2] : 0.f;
            bVal.w = (bOk && bCol + 3 < N) ? bPtr[bCol + 3] : 0.f;
        }
        As[innerColA + 0][innerRowA] = aVal.x;
        As[innerColA + 1][innerRowA] = aVal.y;
        As[innerColA + 2][innerRowA] = aVal.z;
        As[innerColA + 3][innerRowA] = aVal.w;
        *reinterpret_cast<float4*>(&Bs[innerRowB][innerColB]) = bVal;
        __syncthreads();  // both tiles written before any thread reads them

        // ---- the outer products: BK steps of (TM x 1) * (1 x TN) ----
        #pragma unroll
        for (int dotIdx = 0; dotIdx < BK; ++dotIdx) {
            #pragma unroll
            for (int i = 0; i < TM; i += 4)
                *reinterpret_cast<float4*>(&regM[i]) = *reinterpret_cast<const float4*>(&As[dotIdx][threadRow * TM + i]);
            #pragma unroll
            for (int j = 0; j < TN; j += 4)
                *reinterpret_cast<float4*>(&regN[j]) = *reinterpret_cast<const float4*>(&Bs[dotIdx][threadCol * TN + j]);
            #pragma unroll
            for (int resIdxM = 0; resIdxM < TM; ++resIdxM)
                #pragma unroll
                for (int resIdxN = 0; resIdxN < TN; ++resIdxN)
                    threadResults[resIdxM][resIdxN] += regM[resIdxM] * regN[resIdxN];
        }
        __syncthreads();  // all reads of this tile done before the next iteration overwrites it
    }

    // ---- registers -> C ----
    #pragma unroll
    for (int resIdxM = 0; resIdxM < TM; ++resIdxM) {
        const int cRow = blockRow + threadRow * TM + resIdxM;
        if (cRow >= M) break;
        float* cPtr = C + (size_t)cRow * N;
        #pragma unroll
        for (int resIdxN = 0; resIdxN < TN; resIdxN += 4) {
            const int cCol = blockCol + threadCol * TN + resIdxN;
            if (VEC) {
                if (cCol < N)  // N % 4 == 0: the whole float4 is in range
                    *reinterpret_cast<float4*>(&cPtr[cCol]) = make_float4(
                        threadResults[resIdxM][resIdxN + 0], threadResults[resIdxM][resIdxN + 1],
                        threadResults[resIdxM][resIdxN + 2], threadResults[resIdxM][resIdxN + 3]);
            } else {
                #pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (cCol + j < N) cPtr[cCol + j] = threadResults[resIdxM][resIdxN + j];
            }
        }
    }
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    const bool vec = (K % 4 == 0) && (N % 4 == 0) &&
                     ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) |
                       reinterpret_cast<uintptr_t>(C)) % 16 == 0);
    if (vec) register_blocked_gemm_kernel<true><<<grid, NUM_THREADS, 0, stream>>>(A, B, C, M, N, K);
    else     register_blocked_gemm_kernel<false><<<grid, NUM_THREADS, 0, stream>>>(A, B, C, M, N, K);
}
