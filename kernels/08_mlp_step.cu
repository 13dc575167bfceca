// 08_mlp_step.cu — exercise `mlp_step`: the three launchers a training step of an MLP needs
// (grader/spec/mlp.py): gemm_relu for a hidden layer's forward, relu_backward on its mask for the
// backward, and gemm for the logits layer and the backward's dX = dZ . W^T and dW = X^T . dZ.
//
// Nothing new is written here: this file is 07_gemm_relu.cu (gemm_relu and gemm: 04's
// register-blocked GEMM, one with the fused bias + ReLU + mask epilogue, one with a plain store)
// followed by 06_relu_mask.cu's relu_backward (its scalar and float4 kernels and their launch
// helpers; relu_forward is left out: the fused epilogue writes the mask). A kernel file is one
// translation unit that the grader builds on its own (no #include of another kernels/ file), so
// the two are copied; change them there first. Notebook 08 composes the same file from your
// notebooks 07 and 06 (grader.spec.mlp.learner_source).
// Layout: as in 06 and 07 (kernel-file contract): row-major float32; mask M x W uint32,
// W = ceil(N / 32), bit (j % 32) of mask[i][j / 32] set exactly when C[i][j] > 0.
#include <cuda_runtime.h>
#include <cstdint>

// ================================================================ from 07_gemm_relu.cu

constexpr int BM = 128;                    // rows of C per block
constexpr int BN = 128;                    // columns of C per block
constexpr int BK = 8;                      // K-slice per tile
constexpr int TM = 8;                      // rows of C per thread
constexpr int TN = 8;                      // columns of C per thread
constexpr int NUM_THREADS = (BM / TM) * (BN / TN);  // 256
static_assert(BM * BK == 4 * NUM_THREADS, "one float4 of the A tile per thread");
static_assert(BK * BN == 4 * NUM_THREADS, "one float4 of the B tile per thread");

// A: M x K, B: K x N, C: M x N, row-major. VEC: float4 global loads/stores are legal
// (K % 4 == 0, N % 4 == 0, A, B, C 16-byte aligned). epi: bias + ReLU + mask (gemm_relu), else a
// plain store of C (gemm); the same value for every thread, so the branch costs nothing.
template <bool VEC>
__global__ void __launch_bounds__(NUM_THREADS)
gemm_relu_kernel(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                 int M, int N, int K, bool epi) {
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

    // ---- epilogue: registers -> (bias, ReLU) -> C, and the mask ----
    float biasReg[TN];
    #pragma unroll
    for (int j = 0; j < TN; ++j) {
        const int col = blockCol + threadCol * TN + j;
        biasReg[j] = (epi && col < N) ? bias[col] : 0.0f;
    }
    const int W = (N + 31) / 32;  // mask words per row
    #pragma unroll
    for (int resIdxM = 0; resIdxM < TM; ++resIdxM) {
        const int cRow = blockRow + threadRow * TM + resIdxM;
        float v[TN];
        uint32_t byte = 0;  // this thread's 8 mask bits of the row
        #pragma unroll
        for (int j = 0; j < TN; ++j) {
            const float x = threadResults[resIdxM][j] + biasReg[j];
            v[j] = epi ? (x > 0.0f ? x : 0.0f) : x;
            byte |= (v[j] > 0.0f && blockCol + threadCol * TN + j < N) ? (1u << j) : 0u;
        }
        if (cRow < M) {
            float* cPtr = C + (size_t)cRow * N;
            #pragma unroll
            for (int resIdxN = 0; resIdxN < TN; resIdxN += 4) {
                const int cCol = blockCol + threadCol * TN + resIdxN;
                if (VEC) {
                    if (cCol < N)  // N % 4 == 0: the whole float4 is in range
                        *reinterpret_cast<float4*>(&cPtr[cCol]) = make_float4(v[resIdxN], v[resIdxN + 1], v[resIdxN + 2], v[resIdxN + 3]);
                } else {
                    #pragma unroll
                    for (int j = 0; j < 4; ++j)
                        if (cCol + j < N) cPtr[cCol + j] = v[resIdxN + j];
                }
            }
        }
        if (!epi) continue;
        // 4 adjacent lanes (threadCol % 4 = 0..3) hold the 4 bytes of one 32-column word. Every lane
        // reaches the shuffles (rows past M included): only the stores are guarded.
        uint32_t word = byte << (8 * (threadCol % 4));
        word |= __shfl_xor_sync(0xffffffffu, word, 1);
        word |= __shfl_xor_sync(0xffffffffu, word, 2);
        const int wordCol = (blockCol + threadCol * TN) / 32;
        if (threadCol % 4 == 0 && cRow < M && wordCol < W) mask[(size_t)cRow * W + wordCol] = word;
    }
}

static bool useVec(int N, int K, const void* A, const void* B, const void* C) {
    return (K % 4 == 0) && (N % 4 == 0) &&
           ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) | reinterpret_cast<uintptr_t>(C)) % 16 == 0);
}

extern "C" void gemm_relu(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                          int M, int N, int K, cudaStream_t stream) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    if (useVec(N, K, A, B, C)) gemm_relu_kernel<true><<<grid, NUM_THREADS, 0, stream>>>(A, B, bias, C, mask, M, N, K, true);
    else                       gemm_relu_kernel<false><<<grid, NUM_THREADS, 0, stream>>>(A, B, bias, C, mask, M, N, K, true);
}

// The same GEMM without the epilogue (04's store): what the grader times, followed by the separate
// pass of 07a_bias_relu_pass.cu, against gemm_relu above.
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    if (useVec(N, K, A, B, C)) gemm_relu_kernel<true><<<grid, NUM_THREADS, 0, stream>>>(A, B, nullptr, C, nullptr, M, N, K, false);
    else                       gemm_relu_kernel<false><<<grid, NUM_THREADS, 0, stream>>>(A, B, nullptr, C, nullptr, M, N, K, false);
}

// ================================================================ from 06_relu_mask.cu (relu_backward)
constexpr int THREADS = 256;               // 8 warps per block
constexpr int WORDS_PER_WARP = 4;          // mask words (32 elements each) per warp: loads in flight
constexpr int WARPS_PER_BLOCK = THREADS / 32;

// FLAT: N % 32 == 0, so mask word g covers the 32 contiguous elements 32*g .. 32*g+31 of the
// flattened array and no division is needed. Otherwise word g is (row g / W, word g % W).
// Where lane `laneIdx` works for mask word `wordIdx`: sets elemIdx (valid when it returns true)
// and returns whether that element exists (word in range and column < N).
template <bool FLAT>
__device__ __forceinline__ bool wordElement(long long wordIdx, long long totalWords, int laneIdx, int N, int W,
                                            long long& elemIdx) {
    long long row = 0; int col = N;
    if (wordIdx < totalWords) {
        if (FLAT) { elemIdx = wordIdx * 32 + laneIdx; col = 0; }
        else {
            row = wordIdx / W;
            col = (int)(wordIdx - row * W) * 32 + laneIdx;
            elemIdx = row * N + col;
        }
    }
    return wordIdx < totalWords && col < N;
}

template <bool FLAT>
__global__ void __launch_bounds__(THREADS)
relu_backward_kernel(const uint32_t* mask, const float* dY, float* dX, int M, int N, int W) {
    const long long totalWords = (long long)M * W;
    const int laneIdx = threadIdx.x % 32;
    const long long firstWord = ((long long)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32) * WORDS_PER_WARP;
    float grads[WORDS_PER_WARP];
    uint32_t words[WORDS_PER_WARP];
    long long elemIdx[WORDS_PER_WARP];
    bool inRange[WORDS_PER_WARP];
    #pragma unroll
    for (int w = 0; w < WORDS_PER_WARP; ++w) {
        const long long wordIdx = firstWord + w;
        inRange[w] = wordElement<FLAT>(wordIdx, totalWords, laneIdx, N, W, elemIdx[w]);
        words[w] = wordIdx < totalWords ? mask[wordIdx] : 0u;   // same address for the whole warp
        grads[w] = inRange[w] ? dY[elemIdx[w]] : 0.0f;
    }
    #pragma unroll
    for (int w = 0; w < WORDS_PER_WARP; ++w)
        if (inRange[w]) dX[elemIdx[w]] = ((words[w] >> laneIdx) & 1u) ? grads[w] : 0.0f;
}

// One 128-element chunk per warp: with 8 blocks of 256 threads resident per SM, one float4 per lane
// already keeps 32 KB in flight per SM. 2 chunks per warp (half as many blocks) was 2-3 % slower
// on the H200, 4 slower still (benchmarks/relu_bandwidth.cu, 2026-12-02).
constexpr int CHUNKS_PER_WARP = 1;

__global__ void __launch_bounds__(THREADS)
relu_backward_vec4_kernel(const uint32_t* mask, const float4* dY, float4* dX, long long numChunks) {
    const int laneIdx = threadIdx.x % 32;
    const long long firstChunk = ((long long)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32) * CHUNKS_PER_WARP;
    float4 grads[CHUNKS_PER_WARP];
    uint32_t nibbles[CHUNKS_PER_WARP];
    #pragma unroll
    for (int c = 0; c < CHUNKS_PER_WARP; ++c) {
        const long long chunkIdx = firstChunk + c;
        const bool ok = chunkIdx < numChunks;
        // Lane l's 4 elements are bits 4*(l%8) .. +3 of word l/8 of the chunk.
        nibbles[c] = ok ? (mask[chunkIdx * 4 + laneIdx / 8] >> (4 * (laneIdx % 8))) & 0xfu : 0u;
        grads[c] = ok ? dY[chunkIdx * 32 + laneIdx] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    #pragma unroll
    for (int c = 0; c < CHUNKS_PER_WARP; ++c) {
        if (firstChunk + c >= numChunks) continue;
        float4 g = grads[c];
        g.x = (nibbles[c] & 1u) ? g.x : 0.f;
        g.y = (nibbles[c] & 2u) ? g.y : 0.f;
        g.z = (nibbles[c] & 4u) ? g.z : 0.f;
        g.w = (nibbles[c] & 8u) ? g.w : 0.f;
        dX[(firstChunk + c) * 32 + laneIdx] = g;
    }
}

static bool useVec4(int N, const void* p, const void* q) {
    return N % 128 == 0 && ((reinterpret_cast<uintptr_t>(p) | reinterpret_cast<uintptr_t>(q)) % 16 == 0);
}
static unsigned numBlocksVec4(long long numChunks) {
    const long long chunksPerBlock = (long long)WARPS_PER_BLOCK * CHUNKS_PER_WARP;
    return (unsigned)((numChunks + chunksPerBlock - 1) / chunksPerBlock);
}

static unsigned numBlocks(int M, int W) {
    const long long words = (long long)M * W;
    const long long wordsPerBlock = (long long)WARPS_PER_BLOCK * WORDS_PER_WARP;
    return (unsigned)((words + wordsPerBlock - 1) / wordsPerBlock);
}

extern "C" void relu_backward(const uint32_t* mask, const float* dY, float* dX, int M, int N, cudaStream_t stream) {
    const int W = (N + 31) / 32;
    if (M <= 0 || N <= 0) return;
    if (useVec4(N, dY, dX)) {
        const long long numChunks = (long long)M * N / 128;
        relu_backward_vec4_kernel<<<numBlocksVec4(numChunks), THREADS, 0, stream>>>(
            mask, reinterpret_cast<const float4*>(dY), reinterpret_cast<float4*>(dX), numChunks);
    } else if (N % 32 == 0) relu_backward_kernel<true><<<numBlocks(M, W), THREADS, 0, stream>>>(mask, dY, dX, M, N, W);
    else             relu_backward_kernel<false><<<numBlocks(M, W), THREADS, 0, stream>>>(mask, dY, dX, M, N, W);
}
