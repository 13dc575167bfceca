// cuda_emu.h: the CUDA names a kernel file uses, defined for host C++ (g++).
// Included before the learner's (rewritten) code; the scheduler lives in runtime.cpp.
// Blocks run one after another on one OS thread; the threads of a block run as
// fibers, so plain read-modify-write atomics and `static` __shared__ are correct.
#pragma once
// The kernel file's memcpy, memmove and memset (its own calls and those of the library code it
// inlines: std::copy, std::vector's copies) go to the runtime (globals.cpp), which reports host
// code that copies device memory with them, and then copies. The runtime keeps libc's.
// Its clock() (device code's and host code's) is the runtime's virtual clock (runtime.cpp, "Virtual clocks").
#ifndef CUDA_EMU_RUNTIME
extern "C" {
void* memcpy(void*, const void*, __SIZE_TYPE__) noexcept __asm__("cuda_emu_memcpy");
void* memmove(void*, const void*, __SIZE_TYPE__) noexcept __asm__("cuda_emu_memmove");
void* memset(void*, int, __SIZE_TYPE__) noexcept __asm__("cuda_emu_memset");
#if defined(__linux__)  // clock_t is a long there (glibc, musl)
long clock(void) noexcept __asm__("cuda_emu_clock");
#endif
}
#endif
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <tuple>
#include <type_traits>
#include <utility>

#define CUDA_EMU_API __attribute__((visibility("hidden")))
#ifdef CUDA_EMU_RUNTIME  // what the kernel file's memcpy, memmove and memset call (see the top)
extern "C" CUDA_EMU_API void* cuda_emu_memcpy(void* d, const void* s, size_t n) noexcept;
extern "C" CUDA_EMU_API void* cuda_emu_memmove(void* d, const void* s, size_t n) noexcept;
extern "C" CUDA_EMU_API void* cuda_emu_memset(void* d, int v, size_t n) noexcept;
extern "C" CUDA_EMU_API long cuda_emu_clock(void) noexcept;  // the kernel file's clock(): device_clock's
#endif
// Atomics must not be seen by the race detector as plain reads and writes.
#define CUDA_EMU_ATOMIC static inline __attribute__((no_sanitize_thread, noinline, unused))

// ---- qualifiers -------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __shared__ static
#define __forceinline__ inline __attribute__((always_inline))
// __noinline__ is rewritten in the kernel file (rewrite.py): a macro of that name breaks libstdc++
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))  // GNU form: allowed among decl-specifiers
// The macros nvcc defines (version 13.0, the course's), so that a file cannot tell the backends apart by
// them; the backend defines no macro of its own (a file must not be able to tell it from nvcc).
#define __CUDACC__ 1
#define __NVCC__ 1
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 48
#define CUDART_VERSION 13000
// __CUDA_ARCH__ stays undefined, as in nvcc's host pass: a branch on `__CUDA_ARCH__ >= N` takes its
// fallback; a branch on whether it is defined cannot be graded here (rewrite.py).

// ---- built-in vector types ----------------------------------------------------
struct uint3 { unsigned x, y, z; };
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};
struct alignas(8) float2 { float x, y; };
struct float3 { float x, y, z; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct int3 { int x, y, z; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) double2 { double x, y; };
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline int2 make_int2(int x, int y) { return {x, y}; }
static inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
static inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
static inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
static inline double2 make_double2(double x, double y) { return {x, y}; }

// Set by the scheduler before it resumes a thread (hidden: one copy per library).
extern CUDA_EMU_API uint3 threadIdx, blockIdx;
extern CUDA_EMU_API dim3 blockDim, gridDim;
static constexpr int warpSize = 32;

// ---- runtime (runtime.cpp) ----------------------------------------------------
typedef struct CUstream_st* cudaStream_t;
namespace cuda_emu {
enum WarpOp { SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_XOR, BALLOT, ANY, ALL, SYNCWARP, ACTIVEMASK,
              REDUCE_ADD, REDUCE_MIN, REDUCE_MAX, REDUCE_AND, REDUCE_OR, REDUCE_XOR, MATCH_ANY, MATCH_ALL };
enum BlockOp { SYNC, SYNC_COUNT, SYNC_AND, SYNC_OR };
extern CUDA_EMU_API const char* const source_name;  // the learner's file name
CUDA_EMU_API int block_sync(int line, int op, int pred);
CUDA_EMU_API uint64_t warp_sync(int line, int op, unsigned mask, uint64_t value, int arg, int width);
CUDA_EMU_API void* dyn_smem(const char* name);
CUDA_EMU_API void register_shared(const void* p, size_t bytes, const char* name,
                                  const unsigned* dims, int rank, size_t elem);
// Each time a static __shared__ declaration runs (SharedReg::use): the array counts in the running kernel's static
// shared memory, once per kernel (`seen`: the last kernel it was counted in).
CUDA_EMU_API void shared_in_kernel(const void* p, size_t bytes, const void** seen);
CUDA_EMU_API void launch_grid(const char* kernel, int line, const void* fn, dim3 grid, dim3 block,
                              size_t smem, bool fibers, void (*thread)(void*), void* ctx);
CUDA_EMU_API int set_max_dyn_smem(const void* fn, int bytes);  // 0, or 1 when over the limit
CUDA_EMU_API int take_launch_status();
CUDA_EMU_API int device_attribute(int attr, int* value);  // cudaDeviceGetAttribute of the emulated GPU
CUDA_EMU_API void trap(int line, const char* what);
// __launch_bounds__(max_threads[, min_blocks[, max_cluster]]) of the running kernel (rewrite.py calls it at the top
// of its body, `line`: the attribute's): a launch of more threads per block fails, as on a GPU.
CUDA_EMU_API void launch_bounds(int line, long long max_threads, long long = 0, long long = 0);
// The stream contract (cuda_emu_expect_stream, runtime.cpp): false when `s` is not the stream the launcher was
// given (the call is then reported, with `line`, and not run). what: "launches kernel NAME" or the call's name.
CUDA_EMU_API bool stream_ok(const void* s, const char* what, const char* kernel, int line);
// Virtual clocks (runtime.cpp): nothing a kernel file reads tells it how long the emulation took, so that no
// kernel or launcher can time the grader's counting (a recorded block, a counted run) and behave differently there.
// device_clock: clock64() and clock(); in a kernel thread, a counter of its own that starts afresh with each block
// and advances by a fixed step per read. host_clock_ns: what events record; it moves only by a modelled time per
// launch (a fixed cost and one per thread) and 1 ns per read.
CUDA_EMU_API long long device_clock();
CUDA_EMU_API long long host_clock_ns();
// Atomics tell the output race detector (globals.cpp) what they touch: an atomic against a plain
// load or store of the same word by an unordered thread is a race; two atomics are not.
// op: 1 add/sub, 2 exch, 3 min, 4 max, 5 or, 6 and, 7 xor; 0 cas/inc/dec (locks, queues: never a conflict), and an
// atomic that changes nothing (an add of 0: a read).
// Two unordered atomics of different ops (1-7) on a word do not commute: a race too.
CUDA_EMU_API void atomic_access(const void* p, size_t n, const void* pc, int op = 0);
CUDA_EMU_API void thread_fence();  // __threadfence()
// The emulated GPU's memory calls (globals.cpp): cudaMalloc's blocks are device memory (host code
// that touches them is reported, as on a GPU it faults); a copy of host memory into an output, a copy
// or memset into an input, and (in a launcher call) any copy of device memory to the host, are reported
// with the caller's line. kind: 0 memcpy, 1 memset,
// 2 to a symbol, 3 from a symbol.
CUDA_EMU_API void* device_malloc(size_t n, int line);  // line: the cudaMalloc's, for messages
CUDA_EMU_API void device_free(void* p);
CUDA_EMU_API void device_copy(void* d, const void* s, size_t n, int kind, int value, int line);
// cudaMemcpy2D / cudaMemset2D (kind 0 / 1): `height` rows of `width` bytes, `dpitch` (`spitch`) bytes apart; each
// row is checked as device_copy checks a copy. Returns the CUDA error (a pitch below the width: nothing copied).
CUDA_EMU_API int device_copy2d(void* d, size_t dpitch, const void* s, size_t spitch, size_t width, size_t height,
                               int kind, int value, int line);
CUDA_EMU_API size_t device_pitch(size_t width);  // cudaMallocPitch's row pitch
// A kernel's pointer argument `index` (from 0) at a launch: false (reported) when it points to host memory, which a
// GPU's kernel cannot reach (null, and a pointer into or just past device memory, are fine).
CUDA_EMU_API bool kernel_pointer(const char* kernel, int line, int index, const void* p);
// A __device__ or __constant__ variable (rewrite.py registers each): device memory, as a cudaMalloc block is.
CUDA_EMU_API void register_device_variable(const void* p, size_t n, const char* name, int line);
struct DeviceVarReg {
    template <class T> DeviceVarReg(T& v, const char* name, int line) {
        register_device_variable((const void*)&v, sizeof(T), name, line);
    }
};

template <class S> static inline const void* stream_of(S&& s) {  // a launch's stream: 0, nullptr or a handle
    if constexpr (std::is_integral_v<std::decay_t<S>>) return (const void*)(uintptr_t)s;
    else return (const void*)s;
}
template <class T> static inline bool kernel_arg_ok(const char* name, int line, int i, const T& v) {
    if constexpr (std::is_pointer_v<T> && std::is_object_v<std::remove_pointer_t<T>>)
        return kernel_pointer(name, line, i, (const void*)v);
    else return true;
}
template <class K, class Tup> struct LaunchCtx { K fn; Tup* args; };
template <class K, class Tup> static void run_thread(void* p) {
    auto* c = static_cast<LaunchCtx<K, Tup>*>(p);
    std::apply(c->fn, *c->args);  // each thread gets its own copy of the parameters, as in CUDA
}
// `kern<<<g, b, smem, stream>>>(args)` is rewritten into this call.
template <class S, class... P, class... A>
static void launch(const char* name, int line, bool fibers, dim3 g, dim3 b, size_t smem, S&& stream,
                   void (*fn)(P...), A&&... args) {
    if (!stream_ok(stream_of(stream), "launches kernel", name, line)) return;
    using Tup = std::tuple<std::decay_t<P>...>;
    Tup tup(std::forward<A>(args)...);
    bool host = false;  // a pointer argument to host memory: reported, and the kernel not run
    [&]<size_t... I>(std::index_sequence<I...>) {
        ((host = host || !kernel_arg_ok(name, line, (int)I, std::get<I>(tup))), ...);
    }(std::index_sequence_for<P...>{});
    if (host) return;
    LaunchCtx<void (*)(P...), Tup> ctx{fn, &tup};
    launch_grid(name, line, (const void*)fn, g, b, smem, fibers, &run_thread<void (*)(P...), Tup>, &ctx);
}
template <class T> static void register_array(T& a, const char* name) {
    unsigned dims[8] = {};
    constexpr int rank = std::rank<T>::value;
    static_assert(rank <= 8, "__shared__ arrays of more than 8 dimensions are not supported");
    [&]<size_t... I>(std::index_sequence<I...>) { ((dims[I] = std::extent<T, I>::value), ...); }
    (std::make_index_sequence<rank>{});
    register_shared((const void*)&a, sizeof(T), name, dims, rank, sizeof(std::remove_all_extents_t<T>));
}
struct SharedReg {
    const void* array;
    size_t bytes;
    const void* seen = nullptr;
    template <class T> SharedReg(T& a, const char* name) : array((const void*)&a), bytes(sizeof(T)) {
        register_array(a, name);
    }
    void use() { shared_in_kernel(array, bytes, &seen); }
};
template <class T> static inline uint64_t to_bits(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                  "warp shuffles of types larger than 8 bytes are not supported by the CPU backend");
    uint64_t b = 0; std::memcpy(&b, &v, sizeof(T)); return b;
}
template <class T> static inline T from_bits(uint64_t b) { T v; std::memcpy(&v, &b, sizeof(T)); return v; }
template <int Op, class T>
static inline T shfl(int line, unsigned mask, T v, int arg, int width = 32) {
    return from_bits<T>(warp_sync(line, Op, mask, to_bits(v), arg, width));
}
template <int Op, class T> static inline T reduce(int line, unsigned mask, T v) {  // arg: signed compare
    return (T)(uint32_t)warp_sync(line, Op, mask, (uint32_t)v, std::is_signed<T>::value, 32);
}
}  // namespace cuda_emu

// ---- barriers and warp intrinsics (macros so they know their source line) -------
#define __syncthreads() ((void)::cuda_emu::block_sync(__LINE__, ::cuda_emu::SYNC, 0))
#define __syncthreads_count(p) ::cuda_emu::block_sync(__LINE__, ::cuda_emu::SYNC_COUNT, (p) != 0)
#define __syncthreads_and(p) ::cuda_emu::block_sync(__LINE__, ::cuda_emu::SYNC_AND, (p) != 0)
#define __syncthreads_or(p) ::cuda_emu::block_sync(__LINE__, ::cuda_emu::SYNC_OR, (p) != 0)
#define __syncwarp(...) ((void)::cuda_emu::warp_sync(__LINE__, ::cuda_emu::SYNCWARP, (__VA_ARGS__ + 0) ? (__VA_ARGS__ + 0) : 0xffffffffu, 0, 0, 32))
#define __shfl_sync(...) ::cuda_emu::shfl<::cuda_emu::SHFL_IDX>(__LINE__, __VA_ARGS__)
#define __shfl_up_sync(...) ::cuda_emu::shfl<::cuda_emu::SHFL_UP>(__LINE__, __VA_ARGS__)
#define __shfl_down_sync(...) ::cuda_emu::shfl<::cuda_emu::SHFL_DOWN>(__LINE__, __VA_ARGS__)
#define __shfl_xor_sync(...) ::cuda_emu::shfl<::cuda_emu::SHFL_XOR>(__LINE__, __VA_ARGS__)
#define __ballot_sync(m, p) ((unsigned)::cuda_emu::warp_sync(__LINE__, ::cuda_emu::BALLOT, (m), (p) != 0, 0, 32))
#define __any_sync(m, p) ((int)::cuda_emu::warp_sync(__LINE__, ::cuda_emu::ANY, (m), (p) != 0, 0, 32))
#define __all_sync(m, p) ((int)::cuda_emu::warp_sync(__LINE__, ::cuda_emu::ALL, (m), (p) != 0, 0, 32))
// The lanes of the warp that call this same __activemask() once every lane has exited or
// blocked: that is the set of lanes that took the caller's branch.
#define __activemask() ((unsigned)::cuda_emu::warp_sync(__LINE__, ::cuda_emu::ACTIVEMASK, 0, 0, 0, 32))
// Warp reductions (sm_80) and matches: functions whose default argument is the caller's line.
#define CUDA_EMU_REDUCE(name, op, T) \
    static inline T name(unsigned m, T v, int line = __builtin_LINE()) { return ::cuda_emu::reduce<op>(line, m, v); }
CUDA_EMU_REDUCE(__reduce_add_sync, ::cuda_emu::REDUCE_ADD, int)
CUDA_EMU_REDUCE(__reduce_add_sync, ::cuda_emu::REDUCE_ADD, unsigned)
CUDA_EMU_REDUCE(__reduce_min_sync, ::cuda_emu::REDUCE_MIN, int)
CUDA_EMU_REDUCE(__reduce_min_sync, ::cuda_emu::REDUCE_MIN, unsigned)
CUDA_EMU_REDUCE(__reduce_max_sync, ::cuda_emu::REDUCE_MAX, int)
CUDA_EMU_REDUCE(__reduce_max_sync, ::cuda_emu::REDUCE_MAX, unsigned)
CUDA_EMU_REDUCE(__reduce_and_sync, ::cuda_emu::REDUCE_AND, unsigned)
CUDA_EMU_REDUCE(__reduce_or_sync, ::cuda_emu::REDUCE_OR, unsigned)
CUDA_EMU_REDUCE(__reduce_xor_sync, ::cuda_emu::REDUCE_XOR, unsigned)
#undef CUDA_EMU_REDUCE
template <class T> static inline unsigned __match_any_sync(unsigned m, T v, int line = __builtin_LINE()) {
    return (unsigned)::cuda_emu::warp_sync(line, ::cuda_emu::MATCH_ANY, m, ::cuda_emu::to_bits(v), 0, 32);
}
template <class T> static inline unsigned __match_all_sync(unsigned m, T v, int* pred, int line = __builtin_LINE()) {
    unsigned r = (unsigned)::cuda_emu::warp_sync(line, ::cuda_emu::MATCH_ALL, m, ::cuda_emu::to_bits(v), 0, 32);
    *pred = r != 0;
    return r;
}
#define __trap() ::cuda_emu::trap(__LINE__, "__trap()")
// A fence orders the thread's earlier global accesses before its later ones for every block (the race detector's
// release and acquire through atomics: globals.cpp); within a block it orders nothing a barrier does not.
#define __threadfence() ::cuda_emu::thread_fence()
#define __threadfence_system() ::cuda_emu::thread_fence()
#define __threadfence_block() ((void)0)

// ---- math and bit intrinsics ------------------------------------------------------
#define CUDA_EMU_MINMAX(T)                                                             \
    static inline T min(T a, T b) { return b < a ? b : a; }                            \
    static inline T max(T a, T b) { return a < b ? b : a; }
CUDA_EMU_MINMAX(int)
CUDA_EMU_MINMAX(unsigned)
CUDA_EMU_MINMAX(long)
CUDA_EMU_MINMAX(unsigned long)
CUDA_EMU_MINMAX(long long)
CUDA_EMU_MINMAX(unsigned long long)
CUDA_EMU_MINMAX(float)
CUDA_EMU_MINMAX(double)
#undef CUDA_EMU_MINMAX
// Mixed forms resolve as in CUDA's math headers: to the unsigned or floating type.
static inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
static inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
static inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
static inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
static inline float min(float a, int b) { return fminf(a, (float)b); }
static inline float min(int a, float b) { return fminf((float)a, b); }
static inline float max(float a, int b) { return fmaxf(a, (float)b); }
static inline float max(int a, float b) { return fmaxf((float)a, b); }
static inline double min(double a, float b) { return fmin(a, (double)b); }
static inline double min(float a, double b) { return fmin((double)a, b); }
static inline double max(double a, float b) { return fmax(a, (double)b); }
static inline double max(float a, double b) { return fmax((double)a, b); }

static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline int __float_as_int(float f) { int u; std::memcpy(&u, &f, 4); return u; }
static inline float __int_as_float(int u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline long long __double_as_longlong(double d) { long long u; std::memcpy(&u, &d, 8); return u; }
static inline double __longlong_as_double(long long u) { double d; std::memcpy(&d, &u, 8); return d; }
static inline float __fdividef(float a, float b) { return a / b; }
// glibc declares these names itself, so they are function-like macros here.
#define __expf(x) expf(x)
#define __exp10f(x) powf(10.f, (x))
#define __logf(x) logf(x)
#define __log2f(x) log2f(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __tanf(x) tanf(x)
#define __powf(a, b) powf((a), (b))
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
// Funnel shifts: hi:lo as one 64-bit value; _l returns its upper 32 bits after a left shift, _r its
// lower 32 after a right shift; the shift is taken mod 32, or (the c forms) clamped to 32.
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
    return (unsigned)(((((unsigned long long)hi << 32) | lo) << (shift & 31)) >> 32);
}
static inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
    return (unsigned)(((((unsigned long long)hi << 32) | lo) << (shift < 32 ? shift : 32)) >> 32);
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
    return (unsigned)((((unsigned long long)hi << 32) | lo) >> (shift & 31));
}
static inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
    return (unsigned)((((unsigned long long)hi << 32) | lo) >> (shift < 32 ? shift : 32));
}
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline int __mul24(int a, int b) { return a * b; }
static inline unsigned __umul24(unsigned a, unsigned b) { return a * b; }
// Loads and stores with cache hints: plain accesses here (the hints are about the GPU's caches).
template <class T> static inline T __ldg(const T* p) { return *p; }
template <class T> static inline T __ldcg(const T* p) { return *p; }
template <class T> static inline T __ldca(const T* p) { return *p; }
template <class T> static inline T __ldcs(const T* p) { return *p; }
template <class T> static inline T __ldlu(const T* p) { return *p; }
template <class T> static inline T __ldcv(const T* p) { return *p; }
template <class T> static inline void __stwb(T* p, std::type_identity_t<T> v) { *p = v; }
template <class T> static inline void __stcg(T* p, std::type_identity_t<T> v) { *p = v; }
template <class T> static inline void __stcs(T* p, std::type_identity_t<T> v) { *p = v; }
template <class T> static inline void __stwt(T* p, std::type_identity_t<T> v) { *p = v; }
// The thread's virtual clock (device_clock above): a fixed step per read, whatever ran in between.
static inline long long clock64() { return ::cuda_emu::device_clock(); }

// ---- atomics: a fiber never switches inside one, so plain RMW is atomic -----------
// CUDA_EMU_AT: the output race detector sees the atomic (the return address names the caller's line).
#define CUDA_EMU_AT(p, op) ::cuda_emu::atomic_access((p), sizeof *(p), __builtin_return_address(0), (op))
// An add, sub, or or xor of 0 (an and of all ones) changes nothing: a read (op 0), such as a spin on a flag.
#define CUDA_EMU_ATOMICS(T)                                                                       \
    CUDA_EMU_ATOMIC T atomicAdd(T* p, T v) { CUDA_EMU_AT(p, v == (T)0 ? 0 : 1); T o = *p; *p = o + v; return o; } \
    CUDA_EMU_ATOMIC T atomicSub(T* p, T v) { CUDA_EMU_AT(p, v == (T)0 ? 0 : 1); T o = *p; *p = o - v; return o; } \
    CUDA_EMU_ATOMIC T atomicExch(T* p, T v) { CUDA_EMU_AT(p, 2); T o = *p; *p = v; return o; }        \
    CUDA_EMU_ATOMIC T atomicMin(T* p, T v) { CUDA_EMU_AT(p, 3); T o = *p; *p = v < o ? v : o; return o; } \
    CUDA_EMU_ATOMIC T atomicMax(T* p, T v) { CUDA_EMU_AT(p, 4); T o = *p; *p = o < v ? v : o; return o; } \
    CUDA_EMU_ATOMIC T atomicCAS(T* p, T c, T v) { CUDA_EMU_AT(p, 0); T o = *p; if (o == c) *p = v; return o; }
#define CUDA_EMU_BIT_ATOMICS(T)                                                                   \
    CUDA_EMU_ATOMIC T atomicOr(T* p, T v) { CUDA_EMU_AT(p, v == (T)0 ? 0 : 5); T o = *p; *p = o | v; return o; } \
    CUDA_EMU_ATOMIC T atomicAnd(T* p, T v) { CUDA_EMU_AT(p, v == (T)~(T)0 ? 0 : 6); T o = *p; *p = o & v; return o; } \
    CUDA_EMU_ATOMIC T atomicXor(T* p, T v) { CUDA_EMU_AT(p, v == (T)0 ? 0 : 7); T o = *p; *p = o ^ v; return o; }
CUDA_EMU_ATOMICS(int)
CUDA_EMU_ATOMICS(unsigned)
CUDA_EMU_ATOMICS(unsigned long long)
CUDA_EMU_ATOMICS(long long)
CUDA_EMU_BIT_ATOMICS(int)
CUDA_EMU_BIT_ATOMICS(unsigned)
CUDA_EMU_BIT_ATOMICS(unsigned long long)
CUDA_EMU_ATOMIC float atomicAdd(float* p, float v) { CUDA_EMU_AT(p, 1); float o = *p; *p = o + v; return o; }
CUDA_EMU_ATOMIC double atomicAdd(double* p, double v) { CUDA_EMU_AT(p, 1); double o = *p; *p = o + v; return o; }
CUDA_EMU_ATOMIC float atomicExch(float* p, float v) { CUDA_EMU_AT(p, 2); float o = *p; *p = v; return o; }
CUDA_EMU_ATOMIC unsigned atomicInc(unsigned* p, unsigned v) {
    CUDA_EMU_AT(p, 0); unsigned o = *p; *p = o >= v ? 0 : o + 1; return o;
}
CUDA_EMU_ATOMIC unsigned atomicDec(unsigned* p, unsigned v) {
    CUDA_EMU_AT(p, 0); unsigned o = *p; *p = (o == 0 || o > v) ? v : o - 1; return o;
}
#undef CUDA_EMU_ATOMICS
#undef CUDA_EMU_BIT_ATOMICS
#undef CUDA_EMU_AT
#define atomicAdd_block atomicAdd
#define atomicMax_block atomicMax
#define atomicAdd_system atomicAdd

// ---- runtime API on host memory -----------------------------------------------------
typedef int cudaError_t;
enum : int {
    cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9, cudaErrorInvalidPitchValue = 12, cudaErrorInvalidDevice = 101,
    cudaErrorLaunchOutOfResources = 701, cudaErrorLaunchFailure = 719,
};
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                      cudaMemcpyDeviceToDevice, cudaMemcpyDefault };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
                         cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
// The copies and memsets go through the runtime (not instrumented: host code's own loads and stores of
// device memory are what the access hooks report), with the caller's line as a default argument.
static inline cudaError_t cudaMalloc(void** p, size_t n, int line = __builtin_LINE()) {
    *p = ::cuda_emu::device_malloc(n, line);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <class T> static inline cudaError_t cudaMalloc(T** p, size_t n, int line = __builtin_LINE()) {
    return cudaMalloc((void**)p, n, line);
}
static inline cudaError_t cudaFree(void* p) { ::cuda_emu::device_free(p); return cudaSuccess; }
static inline cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t, int line = __builtin_LINE()) {
    return cudaMalloc(p, n, line);
}
template <class T> static inline cudaError_t cudaMallocAsync(T** p, size_t n, cudaStream_t s, int line = __builtin_LINE()) {
    return cudaMallocAsync((void**)p, n, s, line);
}
static inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
static inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind, int line = __builtin_LINE()) {
    ::cuda_emu::device_copy(d, s, n, 0, 0, line); return cudaSuccess;
}
static inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t st = nullptr,
                                          int line = __builtin_LINE()) {
    if (::cuda_emu::stream_ok(st, "cudaMemcpyAsync", nullptr, line)) ::cuda_emu::device_copy(d, s, n, 0, 0, line);
    return cudaSuccess;
}
static inline cudaError_t cudaMemset(void* d, int v, size_t n, int line = __builtin_LINE()) {
    ::cuda_emu::device_copy(d, nullptr, n, 1, v, line); return cudaSuccess;
}
static inline cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t st = nullptr, int line = __builtin_LINE()) {
    if (::cuda_emu::stream_ok(st, "cudaMemsetAsync", nullptr, line)) ::cuda_emu::device_copy(d, nullptr, n, 1, v, line);
    return cudaSuccess;
}
// Pitched copies and memsets: one checked copy per row; a pitch below the width is cudaErrorInvalidPitchValue, as
// on a GPU (nothing is copied), and rows that run past the end of a device buffer are reported.
static inline cudaError_t cudaMemcpy2D(void* d, size_t dpitch, const void* s, size_t spitch, size_t width,
                                       size_t height, cudaMemcpyKind, int line = __builtin_LINE()) {
    return ::cuda_emu::device_copy2d(d, dpitch, s, spitch, width, height, 0, 0, line);
}
static inline cudaError_t cudaMemcpy2DAsync(void* d, size_t dpitch, const void* s, size_t spitch, size_t width,
                                            size_t height, cudaMemcpyKind, cudaStream_t st = nullptr,
                                            int line = __builtin_LINE()) {
    if (!::cuda_emu::stream_ok(st, "cudaMemcpy2DAsync", nullptr, line)) return cudaSuccess;
    return ::cuda_emu::device_copy2d(d, dpitch, s, spitch, width, height, 0, 0, line);
}
static inline cudaError_t cudaMemset2D(void* d, size_t pitch, int v, size_t width, size_t height,
                                       int line = __builtin_LINE()) {
    return ::cuda_emu::device_copy2d(d, pitch, nullptr, pitch, width, height, 1, v, line);
}
static inline cudaError_t cudaMemset2DAsync(void* d, size_t pitch, int v, size_t width, size_t height,
                                            cudaStream_t st = nullptr, int line = __builtin_LINE()) {
    if (!::cuda_emu::stream_ok(st, "cudaMemset2DAsync", nullptr, line)) return cudaSuccess;
    return ::cuda_emu::device_copy2d(d, pitch, nullptr, pitch, width, height, 1, v, line);
}
// Rows padded to the GPU's pitch alignment (512 bytes on an H200).
static inline cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height,
                                          int line = __builtin_LINE()) {
    *pitch = ::cuda_emu::device_pitch(width);
    return cudaMalloc(p, *pitch * (height ? height : 1), line);
}
template <class T> static inline cudaError_t cudaMallocPitch(T** p, size_t* pitch, size_t width, size_t height,
                                                             int line = __builtin_LINE()) {
    return cudaMallocPitch((void**)p, pitch, width, height, line);
}
template <class T> static inline cudaError_t cudaMemcpyToSymbol(T& sym, const void* s, size_t n, size_t off = 0,
                                                                 cudaMemcpyKind = cudaMemcpyHostToDevice,
                                                                 int line = __builtin_LINE()) {
    ::cuda_emu::device_copy((char*)&sym + off, s, n, 2, 0, line); return cudaSuccess;
}
template <class T> static inline cudaError_t cudaMemcpyToSymbolAsync(T& sym, const void* s, size_t n, size_t off = 0,
                                                                      cudaMemcpyKind = cudaMemcpyHostToDevice,
                                                                      cudaStream_t st = nullptr, int line = __builtin_LINE()) {
    if (::cuda_emu::stream_ok(st, "cudaMemcpyToSymbolAsync", nullptr, line))
        ::cuda_emu::device_copy((char*)&sym + off, s, n, 2, 0, line);
    return cudaSuccess;
}
template <class T> static inline cudaError_t cudaMemcpyFromSymbol(void* d, const T& sym, size_t n, size_t off = 0,
                                                                   cudaMemcpyKind = cudaMemcpyDeviceToHost,
                                                                   int line = __builtin_LINE()) {
    ::cuda_emu::device_copy(d, (const char*)&sym + off, n, 3, 0, line); return cudaSuccess;
}
template <class T> static inline cudaError_t cudaMemcpyFromSymbolAsync(void* d, const T& sym, size_t n, size_t off = 0,
                                                                        cudaMemcpyKind = cudaMemcpyDeviceToHost,
                                                                        cudaStream_t st = nullptr,
                                                                        int line = __builtin_LINE()) {
    if (::cuda_emu::stream_ok(st, "cudaMemcpyFromSymbolAsync", nullptr, line))
        ::cuda_emu::device_copy(d, (const char*)&sym + off, n, 3, 0, line);
    return cudaSuccess;
}
// One emulated GPU (device 0): a Tesla T4, the course's lowest (sm_75), with its limits; deviceQuery's figures
// (chiemon.github.io/2024/12/25/显卡信息.html). CUDA_EMU_MAX_DYN_SMEM plays a GPU with more shared memory per block.
enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxBlockDimX = 2, cudaDevAttrMaxBlockDimY = 3,
    cudaDevAttrMaxBlockDimZ = 4, cudaDevAttrMaxGridDimX = 5, cudaDevAttrMaxGridDimY = 6, cudaDevAttrMaxGridDimZ = 7,
    cudaDevAttrMaxSharedMemoryPerBlock = 8, cudaDevAttrTotalConstantMemory = 9, cudaDevAttrWarpSize = 10,
    cudaDevAttrMaxRegistersPerBlock = 12, cudaDevAttrClockRate = 13, cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrConcurrentKernels = 31, cudaDevAttrMemoryClockRate = 36, cudaDevAttrGlobalMemoryBusWidth = 37,
    cudaDevAttrL2CacheSize = 38, cudaDevAttrMaxThreadsPerMultiProcessor = 39, cudaDevAttrUnifiedAddressing = 41,
    cudaDevAttrComputeCapabilityMajor = 75, cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81, cudaDevAttrMaxRegistersPerMultiprocessor = 82,
    cudaDevAttrCooperativeLaunch = 95, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
    cudaDevAttrMaxBlocksPerMultiprocessor = 106, cudaDevAttrMemoryPoolsSupported = 115,
};
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem, sharedMemPerBlock;
    int regsPerBlock, warpSize;
    size_t memPitch;
    int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate;
    size_t totalConstMem;
    int major, minor;
    size_t textureAlignment;
    int multiProcessorCount, memoryClockRate, memoryBusWidth, l2CacheSize, maxThreadsPerMultiProcessor;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor;
    size_t sharedMemPerBlockOptin;
    int maxBlocksPerMultiProcessor, concurrentKernels, cooperativeLaunch, unifiedAddressing, integrated;
};
static inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
static inline cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
static inline cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
static inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int d) {
    if (d != 0) return cudaErrorInvalidDevice;
    return ::cuda_emu::device_attribute((int)a, v) ? cudaErrorInvalidValue : cudaSuccess;
}
static inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
    if (d != 0) return cudaErrorInvalidDevice;
    std::memset(p, 0, sizeof *p);
    std::strcpy(p->name, "Tesla T4");
    auto a = [](cudaDeviceAttr x) { int v = 0; ::cuda_emu::device_attribute((int)x, &v); return v; };
    p->totalGlobalMem = 15843721216ull;
    p->sharedMemPerBlock = a(cudaDevAttrMaxSharedMemoryPerBlock);
    p->regsPerBlock = a(cudaDevAttrMaxRegistersPerBlock);
    p->warpSize = a(cudaDevAttrWarpSize);
    p->memPitch = 2147483647;
    p->maxThreadsPerBlock = a(cudaDevAttrMaxThreadsPerBlock);
    p->maxThreadsDim[0] = a(cudaDevAttrMaxBlockDimX); p->maxThreadsDim[1] = a(cudaDevAttrMaxBlockDimY);
    p->maxThreadsDim[2] = a(cudaDevAttrMaxBlockDimZ);
    p->maxGridSize[0] = a(cudaDevAttrMaxGridDimX); p->maxGridSize[1] = a(cudaDevAttrMaxGridDimY);
    p->maxGridSize[2] = a(cudaDevAttrMaxGridDimZ);
    p->clockRate = a(cudaDevAttrClockRate);
    p->totalConstMem = a(cudaDevAttrTotalConstantMemory);
    p->major = a(cudaDevAttrComputeCapabilityMajor); p->minor = a(cudaDevAttrComputeCapabilityMinor);
    p->textureAlignment = 512;
    p->multiProcessorCount = a(cudaDevAttrMultiProcessorCount);
    p->memoryClockRate = a(cudaDevAttrMemoryClockRate);
    p->memoryBusWidth = a(cudaDevAttrGlobalMemoryBusWidth);
    p->l2CacheSize = a(cudaDevAttrL2CacheSize);
    p->maxThreadsPerMultiProcessor = a(cudaDevAttrMaxThreadsPerMultiProcessor);
    p->sharedMemPerMultiprocessor = a(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
    p->regsPerMultiprocessor = a(cudaDevAttrMaxRegistersPerMultiprocessor);
    p->sharedMemPerBlockOptin = a(cudaDevAttrMaxSharedMemoryPerBlockOptin);
    p->maxBlocksPerMultiProcessor = a(cudaDevAttrMaxBlocksPerMultiprocessor);
    p->concurrentKernels = a(cudaDevAttrConcurrentKernels); p->cooperativeLaunch = a(cudaDevAttrCooperativeLaunch);
    p->unifiedAddressing = a(cudaDevAttrUnifiedAddressing);
    return cudaSuccess;
}
// Events. Kernels run to the end when launched here, so every event is complete when recorded, and holds the
// virtual host clock of its record (host_clock_ns): an elapsed time is the modelled time of the launches between the
// two, never how long they took here (a launcher may time itself; the grader times on a GPU). At least a GPU event's
// resolution (about 0.5 us), never 0.
struct CUevent_st { int recorded; long long ns; };
typedef CUevent_st* cudaEvent_t;
enum : unsigned { cudaEventDefault = 0, cudaEventBlockingSync = 1, cudaEventDisableTiming = 2, cudaEventInterprocess = 4 };
static inline cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = new CUevent_st{0, 0}; return cudaSuccess; }
static inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
static inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) {
    if (!e) return cudaErrorInvalidValue;
    e->recorded = 1;
    e->ns = ::cuda_emu::host_clock_ns();
    return cudaSuccess;
}
static inline cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s = nullptr, unsigned = 0) {
    return cudaEventRecord(e, s);
}
static inline cudaError_t cudaEventSynchronize(cudaEvent_t e) { return e ? cudaSuccess : cudaErrorInvalidValue; }
static inline cudaError_t cudaEventQuery(cudaEvent_t e) { return e ? cudaSuccess : cudaErrorInvalidValue; }
static inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t e, unsigned = 0) {
    return e ? cudaSuccess : cudaErrorInvalidValue;
}
static inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
    if (!ms || !a || !b || !a->recorded || !b->recorded) return cudaErrorInvalidValue;
    long long ns = b->ns - a->ns;
    if (ns >= 0 && ns < 500) ns = 500;
    *ms = (float)(ns / 1e6);
    return cudaSuccess;
}
static inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
static inline cudaError_t cudaGetLastError() { return ::cuda_emu::take_launch_status(); }
static inline cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
static inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
static inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
// Streams: distinct non-null handles (the caller's, cuda_emu_stream_create; a kernel file may not create its own).
extern "C" cudaStream_t cuda_emu_stream_create(void);
static inline cudaError_t cudaStreamCreate(cudaStream_t* s) { *s = cuda_emu_stream_create(); return cudaSuccess; }
static inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { return cudaStreamCreate(s); }
static inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
static inline const char* cudaGetErrorName(cudaError_t e) {
    return e == cudaSuccess ? "cudaSuccess" : e == cudaErrorInvalidValue ? "cudaErrorInvalidValue"
         : e == cudaErrorMemoryAllocation ? "cudaErrorMemoryAllocation"
         : e == cudaErrorInvalidConfiguration ? "cudaErrorInvalidConfiguration"
         : e == cudaErrorInvalidPitchValue ? "cudaErrorInvalidPitchValue"
         : e == cudaErrorInvalidDevice ? "cudaErrorInvalidDevice"
         : e == cudaErrorLaunchOutOfResources ? "cudaErrorLaunchOutOfResources" : "cudaErrorLaunchFailure";
}
static inline const char* cudaGetErrorString(cudaError_t e) {
    return e == cudaSuccess ? "no error" : e == cudaErrorInvalidConfiguration ? "invalid configuration argument"
         : e == cudaErrorInvalidPitchValue ? "invalid pitch argument"
         : e == cudaErrorLaunchOutOfResources ? "too many resources requested for launch"
         : "unspecified launch failure (see the CPU backend's message)";
}
template <class F> static inline cudaError_t cudaFuncSetAttribute(F* fn, cudaFuncAttribute a, int v) {
    if (a == cudaFuncAttributeMaxDynamicSharedMemorySize && ::cuda_emu::set_max_dyn_smem((const void*)fn, v))
        return cudaErrorInvalidValue;
    return cudaSuccess;
}
#define C10_CUDA_KERNEL_LAUNCH_CHECK() ((void)0)
