// cooperative_groups.h for the CPU backend (found through -I before any CUDA header): the
// thread block and its tiles of 1..32 threads, on the runtime's barriers and warp operations.
// Every call that waits takes the caller's line as a default argument, so a divergent
// barrier or a mask error names the learner's line, not this header's.
// Grid groups, clusters, coalesced groups, labeled/binary partitions and memcpy_async are
// not here: the rewriter says so (the verdict is "could not grade on the CPU backend").
#pragma once
#include "cuda_emu.h"

namespace cooperative_groups {
namespace details {
inline unsigned block_rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned block_size() { return blockDim.x * blockDim.y * blockDim.z; }
}  // namespace details

class thread_block {
public:
    void sync(int line = __builtin_LINE()) const { ::cuda_emu::block_sync(line, ::cuda_emu::SYNC, 0); }
    void barrier_wait(int line = __builtin_LINE()) const { sync(line); }
    unsigned thread_rank() const { return details::block_rank(); }
    unsigned size() const { return details::block_size(); }
    unsigned num_threads() const { return details::block_size(); }
    dim3 group_index() const { return dim3(blockIdx); }
    dim3 thread_index() const { return dim3(threadIdx); }
    dim3 group_dim() const { return blockDim; }
    dim3 dim_threads() const { return blockDim; }
};
inline thread_block this_thread_block() { return {}; }

// A tile of N consecutive threads of the block (N a power of two, at most a warp).
template <unsigned N, class Parent = void> class thread_block_tile {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0,
                  "the CPU backend supports thread_block_tile sizes 1, 2, 4, 8, 16 and 32 only");
    static unsigned lane() { return details::block_rank() % 32; }

public:
    thread_block_tile() = default;
    template <class Q> thread_block_tile(const thread_block_tile<N, Q>&) {}  // to the parent-less type
    unsigned mask() const { return N == 32 ? 0xffffffffu : ((1u << N) - 1) << (lane() & ~(N - 1)); }
    unsigned thread_rank() const { return details::block_rank() % N; }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    unsigned meta_group_rank() const { return details::block_rank() / N; }
    unsigned meta_group_size() const { return (details::block_size() + N - 1) / N; }
    void sync(int line = __builtin_LINE()) const {
        ::cuda_emu::warp_sync(line, ::cuda_emu::SYNCWARP, mask(), 0, 0, 32);
    }
    template <class T> T shfl(T v, int src, int line = __builtin_LINE()) const {
        return ::cuda_emu::shfl<::cuda_emu::SHFL_IDX>(line, mask(), v, src, (int)N);
    }
    template <class T> T shfl_down(T v, unsigned d, int line = __builtin_LINE()) const {
        return ::cuda_emu::shfl<::cuda_emu::SHFL_DOWN>(line, mask(), v, (int)d, (int)N);
    }
    template <class T> T shfl_up(T v, unsigned d, int line = __builtin_LINE()) const {
        return ::cuda_emu::shfl<::cuda_emu::SHFL_UP>(line, mask(), v, (int)d, (int)N);
    }
    template <class T> T shfl_xor(T v, unsigned m, int line = __builtin_LINE()) const {
        return ::cuda_emu::shfl<::cuda_emu::SHFL_XOR>(line, mask(), v, (int)m, (int)N);
    }
    // bit i is the tile's thread i
    unsigned ballot(int pred, int line = __builtin_LINE()) const {
        unsigned bits = (unsigned)::cuda_emu::warp_sync(line, ::cuda_emu::BALLOT, mask(), pred != 0, 0, 32);
        return N == 32 ? bits : (bits >> (lane() & ~(N - 1))) & ((1u << N) - 1);
    }
    int any(int pred, int line = __builtin_LINE()) const {
        return (int)::cuda_emu::warp_sync(line, ::cuda_emu::ANY, mask(), pred != 0, 0, 32);
    }
    int all(int pred, int line = __builtin_LINE()) const {
        return (int)::cuda_emu::warp_sync(line, ::cuda_emu::ALL, mask(), pred != 0, 0, 32);
    }
    template <class T> unsigned match_any(T v, int line = __builtin_LINE()) const {
        unsigned bits = __match_any_sync(mask(), v, line);
        return N == 32 ? bits : (bits >> (lane() & ~(N - 1))) & ((1u << N) - 1);
    }
};

template <unsigned N, class P> inline thread_block_tile<N, P> tiled_partition(const P&) { return {}; }

template <class G> inline void sync(const G& g, int line = __builtin_LINE()) { g.sync(line); }
template <class G> inline unsigned thread_rank(const G& g) { return g.thread_rank(); }
template <class G> inline unsigned group_size(const G& g) { return g.size(); }

// <cooperative_groups/reduce.h>
template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };
template <unsigned N, class P, class T, class Op>
inline T reduce(const thread_block_tile<N, P>& g, T v, Op op, int line = __builtin_LINE()) {
    for (unsigned o = N / 2; o > 0; o /= 2) v = op(v, g.shfl_xor(v, o, line));
    return v;
}
}  // namespace cooperative_groups
