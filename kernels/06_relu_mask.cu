// 06_relu_mask.cu — exercise `relu_mask`: ReLU forward that saves a 1-bit-per-element mask
// (__ballot_sync), and a backward that reads the mask instead of X.
//
// Layout (kernel-file contract): X, Y, dY, dX are M x N row-major float32; mask is M x W uint32,
// W = ceil(N / 32); bit (j % 32) of mask[i][j / 32] is 1 exactly when Y[i][j] > 0; bits past N are 0.
//
// Forward: one warp produces one mask word: lane `laneIdx` handles column 32*wordIdx + laneIdx of
// row i, loads X, writes Y = max(X, 0), and __ballot_sync(0xffffffff, Y > 0) collects the 32
// predicates into one uint32 that lane 0 stores. Lanes past column N vote 0.
// Backward: every lane of the warp reads the same mask word (one broadcast load per 32 elements)
// and writes dX = bit ? dY : 0.
// Why it pays: PyTorch's pair moves 8 B/element forward (read X, write Y) and 12 B/element
// backward (threshold_backward reads dY and X — or Y — and writes dX): 20 B. Ours: 8.125 forward
// (+ the mask, 1/32 of 4 B) and 8.125 backward: 16.25 B, a bound of 20 / 16.25 = 1.23x on a
// memory-bound pair. To reach it each warp keeps WORDS_PER_WARP independent loads in flight, and
// rows of a multiple of 128 floats take a float4 path (below) with fewer, wider memory instructions.
// Measured on the H200 (2026-12-02, benchmarks/gpu_capstone.py, 8192^2): forward 0.131 ms (98 % of copy BW),
// backward 0.128 ms (100 %); the pair 1.205x PyTorch's (graded: 1.19x).
#include <cuda_runtime.h>
#include <cstdint>

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
relu_forward_kernel(const float* X, float* Y, uint32_t* mask, int M, int N, int W) {
    const long long totalWords = (long long)M * W;
    const int laneIdx = threadIdx.x % 32;
    const long long firstWord = ((long long)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32) * WORDS_PER_WARP;
    float vals[WORDS_PER_WARP];
    long long elemIdx[WORDS_PER_WARP];
    bool inRange[WORDS_PER_WARP];
    #pragma unroll
    for (int w = 0; w < WORDS_PER_WARP; ++w) {  // all loads first: WORDS_PER_WARP in flight
        const long long wordIdx = firstWord + w;
        inRange[w] = wordElement<FLAT>(wordIdx, totalWords, laneIdx, N, W, elemIdx[w]);
        vals[w] = inRange[w] ? X[elemIdx[w]] : 0.0f;
    }
    #pragma unroll
    for (int w = 0; w < WORDS_PER_WARP; ++w) {
        const float y = vals[w] > 0.0f ? vals[w] : 0.0f;
        if (inRange[w]) Y[elemIdx[w]] = y;
        // Every lane of the warp reaches this line (no early exit), so the full mask is valid.
        const uint32_t bits = __ballot_sync(0xffffffffu, y > 0.0f);
        const long long wordIdx = firstWord + w;
        if (laneIdx == 0 && wordIdx < totalWords) mask[wordIdx] = bits;
    }
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

// ---------------------------------------------------------------- float4 fast path
// When N % 128 == 0 and the pointers are 16-byte aligned, a warp handles 128-element chunks:
// lane l loads the float4 of elements 4l .. 4l+3 (one 512-byte coalesced load per warp), so
// fewer, wider memory instructions carry the same bytes. The chunk's 4 mask words are built from
// 4 ballots (one per float4 component j): word w takes bits 8w .. 8w+7 of ballot j and spreads
// them to bit positions 4i + j. Lanes 0..3 store words 0..3 (16 consecutive bytes).
// One 128-element chunk per warp: with 8 blocks of 256 threads resident per SM, one float4 per lane
// already keeps 32 KB in flight per SM. 2 chunks per warp (half as many blocks) was 2-3 % slower
// on the H200, 4 slower still (benchmarks/relu_bandwidth.cu, 2026-12-02).
constexpr int CHUNKS_PER_WARP = 1;

__device__ __forceinline__ uint32_t spreadByteBy4(uint32_t byteBits) {  // bit i -> bit 4i, i < 8
    uint32_t x = byteBits & 0xffu;
    x = (x | (x << 12)) & 0x000f000fu;
    x = (x | (x << 6)) & 0x03030303u;
    x = (x | (x << 3)) & 0x11111111u;
    return x;
}

__global__ void __launch_bounds__(THREADS)
relu_forward_vec4_kernel(const float4* X, float4* Y, uint32_t* mask, long long numChunks) {
    const int laneIdx = threadIdx.x % 32;
    const long long firstChunk = ((long long)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32) * CHUNKS_PER_WARP;
    float4 vals[CHUNKS_PER_WARP];
    #pragma unroll
    for (int c = 0; c < CHUNKS_PER_WARP; ++c)  // loads first: CHUNKS_PER_WARP in flight
        vals[c] = firstChunk + c < numChunks ? X[(firstChunk + c) * 32 + laneIdx] : make_float4(0.f, 0.f, 0.f, 0.f);
    #pragma unroll
    for (int c = 0; c < CHUNKS_PER_WARP; ++c) {
        const long long chunkIdx = firstChunk + c;
        float4 y;
        y.x = vals[c].x > 0.f ? vals[c].x : 0.f;
        y.y = vals[c].y > 0.f ? vals[c].y : 0.f;
        y.z = vals[c].z > 0.f ? vals[c].z : 0.f;
        y.w = vals[c].w > 0.f ? vals[c].w : 0.f;
        if (chunkIdx < numChunks) Y[chunkIdx * 32 + laneIdx] = y;
        // All 32 lanes reach the ballots (no early exit).
        const uint32_t b0 = __ballot_sync(0xffffffffu, y.x > 0.f);
        const uint32_t b1 = __ballot_sync(0xffffffffu, y.y > 0.f);
        const uint32_t b2 = __ballot_sync(0xffffffffu, y.z > 0.f);
        const uint32_t b3 = __ballot_sync(0xffffffffu, y.w > 0.f);
        if (laneIdx < 4 && chunkIdx < numChunks) {
            const int shift = 8 * laneIdx;  // word laneIdx covers lanes 8*laneIdx .. +7
            mask[chunkIdx * 4 + laneIdx] = spreadByteBy4(b0 >> shift) | (spreadByteBy4(b1 >> shift) << 1) |
                                           (spreadByteBy4(b2 >> shift) << 2) | (spreadByteBy4(b3 >> shift) << 3);
        }
    }
}

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

extern "C" void relu_forward(const float* X, float* Y, uint32_t* mask, int M, int N, cudaStream_t stream) {
    const int W = (N + 31) / 32;
    if (M <= 0 || N <= 0) return;
    if (useVec4(N, X, Y)) {
        const long long numChunks = (long long)M * N / 128;
        relu_forward_vec4_kernel<<<numBlocksVec4(numChunks), THREADS, 0, stream>>>(
            reinterpret_cast<const float4*>(X), reinterpret_cast<float4*>(Y), mask, numChunks);
    } else if (N % 32 == 0) relu_forward_kernel<true><<<numBlocks(M, W), THREADS, 0, stream>>>(X, Y, mask, M, N, W);
    else             relu_forward_kernel<false><<<numBlocks(M, W), THREADS, 0, stream>>>(X, Y, mask, M, N, W);
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
