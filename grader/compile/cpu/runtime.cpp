// ---- The runtime's C API (extern "C", default visibility in the kernel library) ---------------------------------
// A caller (grader/run/binding.py through ctypes, the grader's native runner through dlsym) drives one launcher call so:
//   before any call:
//     cuda_emu_configure(unsigned schedule_seed, int flags)     thread order (0: in order) and checks (bit 0: races,
//                                                              bit 1: every block); runtime.cpp
//     cudaStream_t cuda_emu_stream_create(void)                 a stream handle: distinct, never 0; runtime.cpp
//     void* cuda_emu_device_alloc(unsigned long long bytes)     device memory: a cudaMalloc block on pages of its
//     void  cuda_emu_device_free(void* p)                       own, PROT_NONE outside kernels and the runtime's
//     void  cuda_emu_device_copy(void* dst, const void* src,    copies (host code that touches it is reported);
//                                unsigned long long bytes)      the copy is the runtime's own: never reported;
//                                                              globals.cpp. One allocation per buffer, guard zones
//                                                              inside it: a kernel's read in them is reported
//     void  cuda_emu_device_access(int open)                    open (1) and close (0) device memory for the caller's
//                                                              own accesses, or a trusted library's kernels (they nest)
//   each call, in this order:
//     cuda_emu_set_buffers(n, names, ptrs, bytes)               the buffers' names for the access profile
//                                                              (profile.cpp); the inner extent, without guards
//     cuda_emu_set_outputs(n, names, ptrs, bytes, cols, flags)  the same buffers: flags bit 0 output, bit 1 device
//                                                              memory; cols: elements per row (0: 1-D); globals.cpp
//     cuda_emu_set_allocations(n, ptrs, bytes)                  optional: the allocations around buffers that are
//                                                              not cudaMalloc blocks (torch tensors in guarded
//                                                              storage), for the out-of-bounds read check
//     cuda_emu_expect_stream(cudaStream_t s)                    the stream the launcher is given: a launch, memset
//                                                              or async copy on any other stream (0 included) is
//                                                              reported, naming both; runtime.cpp
//     ... call the launcher with s ...
//     cuda_emu_expect_stream(0)                                 no expectation
//     cuda_emu_set_outputs(0, 0, 0, 0, 0, 0)                    the call is over (its end-of-call checks run; the
//                                                              allocations are forgotten)
//     const char* cuda_emu_take_error(void)                     the call's first error, or null; runtime.cpp
//   the access profile (profile.cpp): cuda_emu_profile_configure / _sites / _blocks before, cuda_emu_profile_take
//   after (what it counted, as text).
//
// The CPU backend's scheduler: blocks run one after another; the threads of a block
// run as fibers that yield at __syncthreads and warp intrinsics. A round resumes every
// runnable fiber once; when none is runnable, a barrier is released (or an error is
// reported: divergent barrier, thread exited while others wait, deadlock).
// A fault (SIGSEGV, SIGBUS, SIGFPE) raised while kernel code runs becomes a launch error
// (see "Faults" below), as a GPU reports an illegal memory access instead of dying.
#undef _FORTIFY_SOURCE  // __longjmp_chk aborts on a jump from a fiber's stack to the launch's
#include "runtime_internal.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <csetjmp>
#include <csignal>
#include <cstdlib>
#include <cstdarg>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <pthread.h>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#if defined(CUDA_EMU_UCONTEXT) || !(defined(__x86_64__) && defined(__linux__))
#define CUDA_EMU_USE_UCONTEXT 1
#include <ucontext.h>
#else
extern "C" void cuda_emu_switch(void** save_sp, void* new_sp) __attribute__((visibility("hidden")));
#endif
#ifdef CUDA_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#else
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#endif

CUDA_EMU_API uint3 threadIdx, blockIdx;
CUDA_EMU_API dim3 blockDim, gridDim;

namespace cuda_emu {

LaunchInfo g_launch;
int g_linear = 0;
bool g_abort = false;
int g_flags = 1;  // race detection on by default
uint64_t g_clock = 1, g_block_sync = 1, g_warp_sync[32], g_lane_sync[32][32][32];
size_t g_dyn_smem_cap = 227 * 1024;  // the most an H100/H200 block may ask for: what the buffer holds
// The emulated GPU is a T4 (cuda_emu.h): 64 KB of shared memory per block with the opt-in attribute.
// CUDA_EMU_MAX_DYN_SMEM=232448 plays an H200 (227 KB), so a launcher's tile for such GPUs can be checked here.
// Read at each use: tests change it.
static size_t dyn_smem_cap() {
    const char* env = std::getenv("CUDA_EMU_MAX_DYN_SMEM");
    const size_t v = env ? std::strtoull(env, nullptr, 10) : 0;
    return v > 0 ? std::min(v, g_dyn_smem_cap) : 64 * 1024;
}
alignas(64) unsigned char g_dyn_smem[227 * 1024];

bool g_running = false;  // a launch's threads run (a static __shared__ registered now is its kernel's; heap.cpp)

namespace {
#ifdef CUDA_EMU_ASAN
constexpr size_t kStack = 512 * 1024;  // ASan frames are much larger
#else
constexpr size_t kStack = 128 * 1024;
#endif
constexpr size_t kGuard = 4096;
constexpr size_t kDefaultSmemLimit = 48 * 1024;

std::mutex g_mutex;             // one launch at a time (shared state is global)
std::vector<Fiber> g_fibers;    // stacks are kept between launches
std::vector<int> g_order;       // the order of a round (shuffled with a seed)
int g_pos = 0;                  // position of the running fiber in g_order
Fiber* g_cur = nullptr;
bool g_plain = false;           // running a kernel with no barriers as a plain loop
void (*g_thread_fn)(void*) = nullptr;
void* g_thread_ctx = nullptr;
unsigned g_seed = 0;
uint64_t g_rng = 0;
std::string g_error, g_taken;
int g_status = 0;               // for cudaGetLastError
std::unordered_map<const void*, int> g_smem_limit;
std::unordered_map<const void*, size_t> g_static_smem;  // kernel -> bytes of the static __shared__ arrays it reached
std::unordered_map<const void*, std::unordered_set<const void*>> g_static_arrays;  // kernel -> those arrays
const void* g_expected_stream = nullptr;  // cuda_emu_expect_stream's
bool g_expecting = false;
constexpr size_t kStaticSmemLimit = 48 * 1024;  // static __shared__ per block: ptxas refuses more

#ifdef CUDA_EMU_USE_UCONTEXT
ucontext_t g_sched_uc;
#else
void* g_sched_sp = nullptr;
#endif
#ifdef CUDA_EMU_ASAN
const void* g_main_stack = nullptr;
size_t g_main_stack_size = 0;
#endif

const char* op_name(bool warp, int op) {
    static const char* warp_ops[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
                                     "__ballot_sync", "__any_sync", "__all_sync", "__syncwarp", "__activemask",
                                     "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync",
                                     "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync",
                                     "__match_any_sync", "__match_all_sync"};
    static const char* block_ops[] = {"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                                      "__syncthreads_or"};
    return warp ? warp_ops[op] : block_ops[op];
}

void fiber_body();

extern "C" void fiber_entry() {
#ifdef CUDA_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &g_main_stack, &g_main_stack_size);
#endif
    fiber_body();
}

void ensure_fibers(size_t n) {
    while (g_fibers.size() < n) {
        Fiber f;
        char* mem = (char*)mmap(nullptr, kStack + kGuard, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mem == MAP_FAILED) { std::perror("cuda_emu: mmap fiber stack"); std::abort(); }
        mprotect(mem, kGuard, PROT_NONE);  // a stack overflow faults instead of corrupting memory
        f.stack = mem + kGuard;
        f.stack_size = kStack;
#ifdef CUDA_EMU_USE_UCONTEXT
        f.uc = new ucontext_t;
#endif
        g_fibers.push_back(f);
    }
}

void fiber_start(Fiber& f) {
#ifdef CUDA_EMU_ASAN
    ASAN_UNPOISON_MEMORY_REGION(f.stack, f.stack_size);  // frames of abandoned fibers
#endif
#ifdef CUDA_EMU_USE_UCONTEXT
    auto* uc = (ucontext_t*)f.uc;
    getcontext(uc);
    uc->uc_stack.ss_sp = f.stack;
    uc->uc_stack.ss_size = f.stack_size;
    uc->uc_link = nullptr;
    makecontext(uc, fiber_entry, 0);
#else
    // Frame popped by cuda_emu_switch: fcw, mxcsr, r15..rbp (zero), return -> fiber_entry.
    uintptr_t top = ((uintptr_t)(f.stack + f.stack_size)) & ~(uintptr_t)15;
    auto* sp = (uint64_t*)(top - 80);
    std::memset(sp, 0, 80);
    uint32_t csr[2] = {0x037F, 0x1F80};  // default x87 control word and MXCSR
    std::memcpy(sp, csr, 8);
    std::memcpy((char*)sp + 8, &csr[1], 4);
    sp[8] = (uint64_t)(uintptr_t)&fiber_entry;  // at top-16; top-8 is a fake return address
    f.sp = sp;
#endif
}

void enter(Fiber& f) {
    g_cur = &f;
    g_linear = f.linear;
    threadIdx = f.tid;
}

// The next runnable fiber of this round, in the round's order (nullptr at the end).
Fiber* next_runnable() {
    while (++g_pos < (int)g_order.size()) {
        Fiber& f = g_fibers[g_order[g_pos]];
        if (f.state == RUNNABLE) return &f;
    }
    return nullptr;
}

void resume(Fiber& f) {  // scheduler -> fiber; returns when the round is over
    enter(f);
#ifdef CUDA_EMU_ASAN
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f.stack, f.stack_size);
#endif
#ifdef CUDA_EMU_USE_UCONTEXT
    swapcontext(&g_sched_uc, (ucontext_t*)f.uc);
#else
    cuda_emu_switch(&g_sched_sp, f.sp);
#endif
#ifdef CUDA_EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
    g_cur = nullptr;
}

// Leaves the running fiber: straight to the next runnable one (half the switches of
// going through the scheduler), or back to the scheduler at the end of the round.
// Returns when this fiber is resumed.
void yield(bool final) {
    Fiber& f = *g_cur;
#ifndef CUDA_EMU_ASAN
    Fiber* next = g_abort || g_plain ? nullptr : next_runnable();
    if (next) {
        enter(*next);
#ifdef CUDA_EMU_USE_UCONTEXT
        swapcontext((ucontext_t*)f.uc, (ucontext_t*)next->uc);
#else
        cuda_emu_switch(&f.sp, next->sp);
#endif
        return;
    }
#endif
#ifdef CUDA_EMU_ASAN
    __sanitizer_start_switch_fiber(final ? nullptr : &f.asan_fake, g_main_stack, g_main_stack_size);
#else
    (void)final;
#endif
#ifdef CUDA_EMU_USE_UCONTEXT
    swapcontext((ucontext_t*)f.uc, &g_sched_uc);
#else
    cuda_emu_switch(&f.sp, g_sched_sp);
#endif
#ifdef CUDA_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &g_main_stack, &g_main_stack_size);
#endif
}

uint3 unflatten(int linear, dim3 d) {
    return uint3{linear % d.x, (linear / d.x) % d.y, linear / (d.x * d.y)};
}

void new_interval() {  // a barrier was released: earlier accesses no longer race
    profile_interval();  // and the profile counts the warp instructions before it
    g_block_sync = ++g_clock;
}

// ---- Progress -----------------------------------------------------------------------
// With CUDA_EMU_PROGRESS set (the grader's worker sets it), a watcher thread writes a line to
// stderr every second while one launch has run for a second or more:
//   cuda_emu progress: launch 3, block 37 of 144, 12.0 s, 0.4 s CPU in this block, kernel tiled<16>
// so a time-out can say how far the kernel got (grader/compile/cpu/progress.py reads the lines back).
// CPU time, not wall time, tells a stuck block from a slow machine.
std::atomic<const char*> g_prog_kernel{nullptr};  // null: no launch running
std::atomic<long long> g_prog_block{0}, g_prog_blocks{0}, g_prog_start_ns{0}, g_prog_block_cpu_ns{0};
std::atomic<int> g_prog_launch{0};
clockid_t g_prog_clock;  // the launching thread's CPU clock

long long clock_ns(clockid_t c) {
    timespec ts{};
    clock_gettime(c, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void progress_watch() {
    for (;;) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        const char* k = g_prog_kernel.load();
        double s = (clock_ns(CLOCK_MONOTONIC) - g_prog_start_ns.load()) / 1e9;
        if (!k || s < 1.0) continue;
        double cpu = (clock_ns(g_prog_clock) - g_prog_block_cpu_ns.load()) / 1e9;
        char line[400];
        int len = std::snprintf(line, sizeof line,
                                "\ncuda_emu progress: launch %d, block %lld of %lld, %.1f s, %.1f s CPU in this block, "
                                "kernel %s\n", g_prog_launch.load(), g_prog_block.load(), g_prog_blocks.load(), s,
                                cpu < 0 ? 0.0 : cpu, k);
        if (len > 0 && write(2, line, std::min<size_t>((size_t)len, sizeof line - 1)) < 0) return;
    }
}

bool g_prog_on = false;

void progress_start(const LaunchInfo& L) {
    static const bool on = [] {
        const char* env = std::getenv("CUDA_EMU_PROGRESS");
        if (!env || !*env || *env == '0') return false;
        if (pthread_getcpuclockid(pthread_self(), &g_prog_clock) != 0) return false;
        std::thread(progress_watch).detach();
        return true;
    }();
    g_prog_on = on;
    if (!on) return;
    g_prog_blocks = (long long)L.grid.x * L.grid.y * L.grid.z;
    g_prog_block = 0;
    g_prog_start_ns = clock_ns(CLOCK_MONOTONIC);
    ++g_prog_launch;
    g_prog_kernel = L.kernel;
}

// ---- Virtual clocks ----------------------------------------------------------------------
// What a kernel file reads as time (cuda_emu.h: clock64(), clock(), events) is modelled, never measured: the access
// profile makes a recorded block (and the race detector a checked one) several times slower per access, and a
// counted run slower than the others, so a kernel that timed its own shared loads, or a launcher that timed a probe
// kernel, could run its lesson's kernel only where it is counted. A thread's clock starts afresh with its block and
// advances by kClockStep per read; the host clock moves by a modelled cost per launch (kLaunchNs, kThreadNs per
// thread of the grid) and 1 ns per read. (grader/compile/linkcheck.py refuses rdtsc and its kin; the host's own
// clocks are not on its allow-list.)
constexpr long long kClockBase = 1LL << 20, kClockStep = 16;
constexpr long long kLaunchNs = 2000, kThreadNs = 1;
long long g_thread_clock[1024];  // per thread of the running block (linear id), a block has at most 1024
std::atomic<long long> g_host_vtime_ns{1000000000LL};

void model_launch_time(const LaunchInfo& L) {
    const double threads = (double)L.grid.x * L.grid.y * L.grid.z * (double)L.nthreads;
    g_host_vtime_ns += kLaunchNs + (long long)std::min(threads * kThreadNs, 1e12);
}

void new_block(uint3 b) {
    std::fill(g_thread_clock, g_thread_clock + std::min(g_launch.nthreads, 1024), 0LL);
    if (g_prog_on) {
        g_prog_block_cpu_ns.store(clock_ns(g_prog_clock), std::memory_order_relaxed);
        g_prog_block.fetch_add(1, std::memory_order_relaxed);
    }
    blockIdx = b;
    new_interval();
    checks_new_block();
}

void run_threads_plain() {
    const LaunchInfo& L = g_launch;
    for (unsigned bz = 0; bz < L.grid.z; ++bz)
        for (unsigned by = 0; by < L.grid.y; ++by)
            for (unsigned bx = 0; bx < L.grid.x; ++bx) {
                new_block(uint3{bx, by, bz});
                int linear = 0;
                for (unsigned z = 0; z < L.block.z; ++z)
                    for (unsigned y = 0; y < L.block.y; ++y)
                        for (unsigned x = 0; x < L.block.x; ++x) {
                            threadIdx = uint3{x, y, z};
                            g_linear = linear++;
                            g_thread_fn(g_thread_ctx);
                            pipeline_thread_exit();
                        }
                if (g_abort) return;  // an error a sanitizer reported and recovered from
            }
}

void fiber_body() {
    if (g_plain) run_threads_plain();
    else {
        g_thread_fn(g_thread_ctx);
        pipeline_thread_exit();  // copies still in flight land when their thread exits
    }
    g_cur->state = DONE;
    yield(true);
    __builtin_unreachable();  // a finished fiber is never resumed
}

uint64_t next_random() {  // xorshift64*
    g_rng ^= g_rng >> 12; g_rng ^= g_rng << 25; g_rng ^= g_rng >> 27;
    return g_rng * 2685821657736338717ull;
}

// Lane `j` of a warp op group `m` (lanes of warp `base`): its result.
bool warp_result(Fiber* lanes, unsigned m, int j, uint64_t& out) {
    Fiber& f = lanes[j];
    if (f.op == SYNCWARP) { out = 0; return true; }
    if (f.op == BALLOT || f.op == ANY || f.op == ALL) {
        unsigned bits = 0;
        for (int k = 0; k < 32; ++k)
            if ((m >> k & 1) && lanes[k].value) bits |= 1u << k;
        out = f.op == BALLOT ? bits : f.op == ANY ? bits != 0 : bits == m;
        return true;
    }
    if (f.op >= REDUCE_ADD && f.op <= REDUCE_XOR) {  // 32-bit values; arg: compare as signed
        uint32_t acc = f.op == REDUCE_AND ? ~0u : f.op == REDUCE_MIN ? (f.arg ? 0x7fffffffu : ~0u)
                     : f.op == REDUCE_MAX ? (f.arg ? 0x80000000u : 0u) : 0u;
        for (int k = 0; k < 32; ++k) {
            if (!(m >> k & 1)) continue;
            uint32_t v = (uint32_t)lanes[k].value;
            bool less = f.arg ? (int32_t)v < (int32_t)acc : v < acc;
            switch (f.op) {
                case REDUCE_ADD: acc += v; break;
                case REDUCE_MIN: if (less) acc = v; break;
                case REDUCE_MAX: if (!less && v != acc) acc = v; break;
                case REDUCE_AND: acc &= v; break;
                case REDUCE_OR: acc |= v; break;
                default: acc ^= v; break;
            }
        }
        out = acc;
        return true;
    }
    if (f.op == MATCH_ANY || f.op == MATCH_ALL) {
        unsigned same = 0;
        for (int k = 0; k < 32; ++k)
            if ((m >> k & 1) && lanes[k].value == f.value) same |= 1u << k;
        out = f.op == MATCH_ANY ? same : same == m ? m : 0;
        return true;
    }
    int w = f.width;
    if (w < 1 || w > 32 || (w & (w - 1))) {
        report("%s at line %d: width %d must be a power of two between 1 and 32", op_name(true, f.op), f.line, w);
        return false;
    }
    int seg = j & ~(w - 1), src = j, rel = j & (w - 1);
    unsigned a = (unsigned)f.arg;
    switch (f.op) {
        case SHFL_IDX: src = seg + (int)(a & (unsigned)(w - 1)); break;
        case SHFL_UP: src = (unsigned)rel >= a ? j - (int)a : j; break;
        case SHFL_DOWN: src = rel + a < (unsigned)w ? j + (int)a : j; break;
        case SHFL_XOR: src = (int)((unsigned)j ^ a); if (src >= seg + w) src = j; break;
    }
    if (src != j && !(m >> src & 1)) {
        report("%s at line %d: lane %d reads lane %d, which is not in the mask 0x%08x (or does not exist); "
               "the value would be undefined on a GPU (thread %s)",
               op_name(true, f.op), f.line, j, src, m, thread_name(f.linear).c_str());
        return false;
    }
    out = lanes[src].value;
    return true;
}

// Releases every warp op group whose lanes have all arrived. Returns whether any did.
bool release_warps(int n) {
    bool progress = false;
    for (int base = 0; base < n; base += 32) {
        Fiber* lanes = &g_fibers[base];
        int count = n - base < 32 ? n - base : 32;
        unsigned exist = count == 32 ? 0xffffffffu : ((1u << count) - 1);
        unsigned handled = 0;
        bool pending_mask = false, warp_progress = false;
        for (int l = 0; l < count; ++l) {
            Fiber& f = lanes[l];
            if (f.state != AT_WARP_OP || (handled >> l & 1)) continue;
            if (f.op == ACTIVEMASK) { pending_mask = true; continue; }
            unsigned m = f.mask & exist;
            if (!(m >> l & 1)) {
                report("%s at line %d: the mask 0x%08x does not include the calling lane %d (thread %s)",
                       op_name(true, f.op), f.line, f.mask, l, thread_name(f.linear).c_str());
                return false;
            }
            bool ready = true;
            for (int k = 0; k < count && ready; ++k) {
                if (!(m >> k & 1)) continue;
                Fiber& g = lanes[k];
                if (g.state == DONE) {
                    report("thread %s waits in %s at line %d for lane %d (thread %s), which has exited; "
                           "every lane named in the mask must call it",
                           thread_name(f.linear).c_str(), op_name(true, f.op), f.line, k, thread_name(g.linear).c_str());
                    return false;
                }
                if (g.state != AT_WARP_OP) { ready = false; break; }
                if ((g.mask & exist) != m || g.op != f.op) {
                    report("divergent warp operation: thread %s calls %s(mask 0x%08x) at line %d while thread %s "
                           "calls %s(mask 0x%08x) at line %d",
                           thread_name(f.linear).c_str(), op_name(true, f.op), f.mask, f.line,
                           thread_name(g.linear).c_str(), op_name(true, g.op), g.mask, g.line);
                    return false;
                }
            }
            if (!ready) continue;
            for (int k = 0; k < count; ++k)
                if ((m >> k & 1) && !warp_result(lanes, m, k, lanes[k].result)) return false;
            for (int k = 0; k < count; ++k)
                if (m >> k & 1) lanes[k].state = RUNNABLE;
            handled |= m;
            progress = warp_progress = true;
            if (m == exist) {
                g_warp_sync[base / 32] = ++g_clock;
            } else {  // a partial mask orders only the lanes in it
                const uint64_t c = ++g_clock;
                for (unsigned a = m; a; a &= a - 1)
                    for (unsigned b = m; b; b &= b - 1)
                        g_lane_sync[base / 32][__builtin_ctz(a)][__builtin_ctz(b)] = c;
            }
        }
        // __activemask() answers once no lane of the warp can run: the lanes waiting at the
        // same call are then the lanes that took the caller's branch.
        if (pending_mask && !warp_progress) {
            for (int l = 0; l < count; ++l) {
                Fiber& f = lanes[l];
                if (f.state != AT_WARP_OP || f.op != ACTIVEMASK) continue;
                unsigned here = 0;
                for (int k = 0; k < count; ++k)
                    if (lanes[k].state == AT_WARP_OP && lanes[k].op == ACTIVEMASK && lanes[k].line == f.line)
                        here |= 1u << k;
                for (int k = 0; k < count; ++k)
                    if (here >> k & 1) { lanes[k].result = here; lanes[k].state = RUNNABLE; }
                progress = true;
            }
        }
    }
    return progress;
}

// All live threads wait at a __syncthreads: check they agree, then release them.
bool release_block(int n) {
    Fiber *waiting = nullptr, *done = nullptr, *warp = nullptr;
    for (int i = 0; i < n; ++i) {
        Fiber& f = g_fibers[i];
        if (f.state == AT_BARRIER && !waiting) waiting = &f;
        if (f.state == DONE && !done) done = &f;
        if (f.state == AT_WARP_OP && !warp) warp = &f;
    }
    if (warp) {
        if (waiting)
            report("deadlock: thread %s waits in %s at line %d for lanes that wait at %s at line %d (thread %s)",
                   thread_name(warp->linear).c_str(), op_name(true, warp->op), warp->line,
                   op_name(false, waiting->op), waiting->line, thread_name(waiting->linear).c_str());
        else
            report("deadlock: thread %s waits in %s(mask 0x%08x) at line %d for lanes that never arrive",
                   thread_name(warp->linear).c_str(), op_name(true, warp->op), warp->mask, warp->line);
        return false;
    }
    if (!waiting) {
        report("internal error: no thread can run, yet none waits at a barrier");
        return false;
    }
    if (done) {
        report("divergent barrier: thread %s exited while other threads wait at %s() at line %d. Every thread of a "
               "block must reach each __syncthreads(); instead of an early 'return', guard the loads and stores",
               thread_name(done->linear).c_str(), op_name(false, waiting->op), waiting->line);
        return false;
    }
    int count = 0;
    for (int i = 0; i < n; ++i) {
        Fiber& f = g_fibers[i];
        if (f.line != waiting->line || f.op != waiting->op) {
            report("divergent barrier: thread %s waits at %s() at line %d while thread %s waits at %s() at line %d; "
                   "all threads of a block must reach the same __syncthreads()",
                   thread_name(waiting->linear).c_str(), op_name(false, waiting->op), waiting->line,
                   thread_name(f.linear).c_str(), op_name(false, f.op), f.line);
            return false;
        }
        count += f.value != 0;
    }
    uint64_t r = waiting->op == SYNC_COUNT ? count : waiting->op == SYNC_AND ? count == n
               : waiting->op == SYNC_OR ? count != 0 : 0;
    for (int i = 0; i < n; ++i) {
        g_fibers[i].result = r;
        g_fibers[i].state = RUNNABLE;
    }
    new_interval();
    return true;
}

void run_block(int n) {
    std::vector<int>& order = g_order;
    dim3 b = g_launch.block;
    for (int i = 0; i < n; ++i) {
        Fiber& f = g_fibers[i];
        f.tid = unflatten(i, b);
        f.linear = i;
        f.state = RUNNABLE;
        fiber_start(f);
    }
    for (;;) {
        if (g_seed)  // a different thread order in every round exposes missing barriers
            for (int i = n - 1; i > 0; --i) std::swap(order[i], order[next_random() % (i + 1)]);
        g_pos = -1;
        while (Fiber* f = next_runnable()) {  // with chaining, resume returns at the round's end
            resume(*f);
            if (g_abort) return;
        }
        bool all_done = true;
        bool any_warp = false;
        for (int i = 0; i < n; ++i) {
            all_done &= g_fibers[i].state == DONE;
            any_warp |= g_fibers[i].state == AT_WARP_OP;
        }
        if (all_done) return;
        if (any_warp && release_warps(n)) continue;
        if (g_abort || !release_block(n)) return;
    }
}

// The kernel's own name (the launch text may be a macro parameter): its symbol, demangled.
const char* kernel_name(const void* fn, const char* text) {
    static std::unordered_map<const void*, std::string> names;
    auto it = names.find(fn);
    if (it != names.end()) return it->second.c_str();
    std::string name = text;
    Dl_info info;
    if (dladdr(fn, &info) && info.dli_sname && info.dli_saddr == fn) {
        int status = 0;
        char* d = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
        std::string full = status == 0 && d ? d : info.dli_sname;
        std::free(d);
        size_t paren = full.find('(');
        full = full.substr(0, paren);
        if (full.rfind("void ", 0) == 0) full = full.substr(5);
        if (!full.empty()) name = full;
    }
    return names.emplace(fn, name).first->second.c_str();
}

// The shared memory a launch of `fn` needs (its static arrays, once registered, and `smem` dynamic bytes) against
// what a GPU gives a block: false after reporting it.
bool shared_fits(const void* fn, size_t smem) {
    auto st = g_static_smem.find(fn);
    const size_t stat = st == g_static_smem.end() ? 0 : st->second;
    if (stat > kStaticSmemLimit) {
        g_status = cudaErrorInvalidValue;
        report("kernel %s uses %zu bytes of static shared memory (its __shared__ arrays); a block may have at most 48 KB "
               "(%zu bytes) of it, and nvcc refuses more ('uses too much shared data'). For more, use extern __shared__ "
               "memory and cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), up to "
               "%zu bytes on a T4", g_launch.kernel, stat, kStaticSmemLimit, dyn_smem_cap());
        return false;
    }
    auto it = g_smem_limit.find(fn);
    size_t limit = it == g_smem_limit.end() ? kDefaultSmemLimit : (size_t)it->second;
    if (smem > limit || stat + smem > dyn_smem_cap()) {
        g_status = cudaErrorInvalidValue;
        if (stat + smem > dyn_smem_cap())
            report("the launch of %s needs %zu bytes of shared memory (%zu static, %zu dynamic); a block may have at "
                   "most %zu bytes (a T4's limit with cudaFuncSetAttribute(kernel, "
                   "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes))", g_launch.kernel, stat + smem, stat, smem,
                   dyn_smem_cap());
        else
            report("the launch asks for %zu bytes of dynamic shared memory; without cudaFuncSetAttribute("
                   "kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) the limit is 48 KiB, and at most %zu",
                   smem, dyn_smem_cap());
        return false;
    }
    return true;
}

bool check_config(const void* fn, dim3 g, dim3 b, size_t smem) {
    long long nt = (long long)b.x * b.y * b.z;
    char why[96] = "";
    if (g.x == 0 || g.y == 0 || g.z == 0 || nt < 1) std::snprintf(why, sizeof why, "every dimension must be at least 1");
    else if (nt > 1024) std::snprintf(why, sizeof why, "a block may have at most 1024 threads (it has %lld)", nt);
    else if (b.z > 64) std::snprintf(why, sizeof why, "blockDim.z may be at most 64 (x and y 1024)");
    else if (g.y > 65535) std::snprintf(why, sizeof why, "gridDim.y may be at most 65535 (x 2^31 - 1)");
    else if (g.z > 65535) std::snprintf(why, sizeof why, "gridDim.z may be at most 65535 (x 2^31 - 1)");
    else if (g.x > 2147483647u) std::snprintf(why, sizeof why, "gridDim.x may be at most 2^31 - 1");
    if (why[0]) {
        g_status = cudaErrorInvalidConfiguration;
        report("invalid launch configuration: grid (%u,%u,%u), block (%u,%u,%u): %s; a GPU refuses the launch "
               "(cudaErrorInvalidConfiguration)", g.x, g.y, g.z, b.x, b.y, b.z, why);
        return false;
    }
    return shared_fits(fn, smem);
}

#ifndef CUDA_EMU_ASAN
// ---- Faults ----------------------------------------------------------------------
// While a launch runs, SIGSEGV, SIGBUS and SIGFPE have this handler, on an alternate
// signal stack (a fiber that overflows its stack faults in its guard page, with no stack
// left to run a handler on). A fault on the launching thread while a CUDA thread runs
// jumps back to launch_grid (siglongjmp: the fibers are abandoned, their stacks reused),
// which reports it as a launch error. Any other fault gets the handler that was there
// before. Sanitize builds install nothing: AddressSanitizer must see the fault.
constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGFPE};
constexpr int kNumFaultSignals = 3;
constexpr size_t kAltStack = 64 * 1024;
struct sigaction g_old_action[kNumFaultSignals];
stack_t g_old_altstack;
bool g_altstack_set = false;
char* g_altstack = nullptr;
sigjmp_buf g_fault_jmp;
volatile sig_atomic_t g_armed = 0;
pid_t g_launch_tid = 0;
struct FaultInfo {
    int sig = 0, code = 0;
    void* addr = nullptr;
    void* pc = nullptr;
    int linear = 0;
    bool overflow = false;  // in a fiber's guard page
} g_fault;

int fault_index(int sig) {
    for (int i = 0; i < kNumFaultSignals; ++i)
        if (kFaultSignals[i] == sig) return i;
    return 0;
}

void* fault_pc(void* uc) {
#if defined(__x86_64__) && defined(__linux__)
    return (void*)((ucontext_t*)uc)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__) && defined(__linux__)
    return (void*)((ucontext_t*)uc)->uc_mcontext.pc;
#else
    (void)uc;
    return nullptr;
#endif
}

void fault_handler(int sig, siginfo_t* si, void* uc) {
    // si_code > 0: raised by the CPU (not kill); gettid: not another thread of the process
    if (g_armed && g_cur && si->si_code > 0 && (pid_t)syscall(SYS_gettid) == g_launch_tid) {
        g_armed = 0;
        g_fault.sig = sig;
        g_fault.code = si->si_code;
        g_fault.addr = si->si_addr;
        g_fault.pc = fault_pc(uc);
        g_fault.linear = g_linear;
        uintptr_t a = (uintptr_t)si->si_addr;
        g_fault.overflow = false;
        for (const Fiber& f : g_fibers)
            if (a >= (uintptr_t)f.stack - kGuard && a < (uintptr_t)f.stack) g_fault.overflow = true;
        siglongjmp(g_fault_jmp, 1);
    }
    // Not a kernel's fault: back to the previous handler, which sees the fault again when
    // the instruction re-executes (or now, for a signal sent with kill).
    sigaction(sig, &g_old_action[fault_index(sig)], nullptr);
    if (si->si_code <= 0) raise(sig);
}

void arm_faults() {
    if (!g_altstack) {
        void* mem = mmap(nullptr, kAltStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) return;  // no protection, as before
        g_altstack = (char*)mem;
    }
    stack_t ss{};
    ss.ss_sp = g_altstack;
    ss.ss_size = kAltStack;
    g_altstack_set = sigaltstack(&ss, &g_old_altstack) == 0;
    struct sigaction sa{};
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < kNumFaultSignals; ++i) sigaction(kFaultSignals[i], &sa, &g_old_action[i]);
    g_launch_tid = (pid_t)syscall(SYS_gettid);
}

void disarm_faults() {
    g_armed = 0;
    for (int i = 0; i < kNumFaultSignals; ++i) {
        struct sigaction cur{};
        // only ours: another library may have installed its own since (it restores ours)
        if (sigaction(kFaultSignals[i], nullptr, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == fault_handler)
            sigaction(kFaultSignals[i], &g_old_action[i], nullptr);
    }
    if (g_altstack_set) sigaltstack(&g_old_altstack, nullptr);
    g_altstack_set = false;
}

void report_fault() {
    const FaultInfo& F = g_fault;
    std::string t = thread_name(F.linear);
    uint3 b = blockIdx;
    const char* sig = F.sig == SIGSEGV ? "SIGSEGV" : F.sig == SIGBUS ? "SIGBUS" : "SIGFPE";
    // the kernel file's line, when the faulting instruction is in its code
    std::string where;
    Dl_info mine, at;
    if (F.pc && dladdr((void*)&fault_handler, &mine) && dladdr(F.pc, &at) && mine.dli_fbase == at.dli_fbase) {
        std::string line = source_line((const char*)F.pc + 1);  // source_line takes a return address
        std::string base = source_name;
        base = base.substr(base.rfind('/') == std::string::npos ? 0 : base.rfind('/') + 1);
        if (line.rfind(base + ":", 0) == 0) where = ", at " + line;
    }
    if (F.sig == SIGFPE)
        report("arithmetic error in kernel %s, block (%u,%u,%u), thread %s: an integer division by zero (or "
               "INT_MIN / -1) (SIGFPE%s); on a GPU it gives an undefined value", g_launch.kernel, b.x, b.y, b.z,
               t.c_str(), where.c_str());
    else if (F.overflow)
        report("illegal memory access in kernel %s, block (%u,%u,%u), thread %s: the thread overflowed its stack "
               "(%zu KiB per thread on the CPU backend): deep recursion or a large local array (%s at %p%s)",
               g_launch.kernel, b.x, b.y, b.z, t.c_str(), kStack / 1024, sig, F.addr, where.c_str());
    else
        report("illegal memory access in kernel %s, block (%u,%u,%u), thread %s: the kernel read or wrote an "
               "address outside every buffer (%s at %p%s); the grader re-runs it under AddressSanitizer to find "
               "the line", g_launch.kernel, b.x, b.y, b.z, t.c_str(), sig, F.addr, where.c_str());
}
#endif

// Runs every block of the launch (set up by launch_grid).
__attribute__((noinline)) void run_grid() {
    const LaunchInfo& L = g_launch;
    int n = L.nthreads;
    if (g_plain) {  // one fiber runs every thread in turn, so errors can still leave it
        ensure_fibers(1);
        g_fibers[0].linear = 0;
        g_fibers[0].state = RUNNABLE;
        fiber_start(g_fibers[0]);
        resume(g_fibers[0]);
    } else {
        ensure_fibers(n);
        g_order.resize(n);
        for (int i = 0; i < n; ++i) g_order[i] = i;
        for (unsigned bz = 0; bz < L.grid.z && !g_abort; ++bz)
            for (unsigned by = 0; by < L.grid.y && !g_abort; ++by)
                for (unsigned bx = 0; bx < L.grid.x && !g_abort; ++bx) {
                    new_block(uint3{bx, by, bz});
                    run_block(n);
                }
    }
}
}  // namespace

std::string thread_name(int linear) {
    uint3 t = unflatten(linear, g_launch.block);
    char buf[48];
    std::snprintf(buf, sizeof buf, "(%u,%u,%u)", t.x, t.y, t.z);
    return buf;
}

void report(const char* fmt, ...) {
    g_abort = true;
    if (!g_status) g_status = cudaErrorLaunchFailure;
    if (!g_error.empty()) return;  // the first error is the one to fix
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char ctx[512];
    std::snprintf(ctx, sizeof ctx, " [kernel '%s' launched at %s:%d, block (%u,%u,%u)]", g_launch.kernel,
                  source_name, g_launch.line, blockIdx.x, blockIdx.y, blockIdx.z);
    g_error = std::string(msg) + ctx;
}

void report_host(const char* fmt, ...) {
    if (!g_error.empty()) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    g_error = msg;
}

void abandon_thread() {
    g_abort = true;
    if (g_cur) yield(true);  // never resumed: the scheduler stops the launch
    std::fprintf(stderr, "cuda_emu: fatal error outside a kernel thread\n");
    std::abort();
}

int block_sync(int line, int op, int pred) {
    if (!g_cur || g_plain) {
        report("%s() at line %d was called outside a kernel the CPU backend runs with barriers", op_name(false, op), line);
        abandon_thread();
    }
    Fiber& f = *g_cur;
    f.state = AT_BARRIER; f.line = line; f.op = op; f.value = (uint64_t)pred;
    yield(false);
    return (int)f.result;
}

uint64_t warp_sync(int line, int op, unsigned mask, uint64_t value, int arg, int width) {
    if (!g_cur || g_plain) {
        report("%s at line %d was called outside a kernel the CPU backend runs with barriers", op_name(true, op), line);
        abandon_thread();
    }
    Fiber& f = *g_cur;
    f.state = AT_WARP_OP; f.line = line; f.op = op; f.mask = mask;
    f.value = value; f.arg = arg; f.width = width;
    yield(false);
    return f.result;
}

void* dyn_smem(const char*) { return g_dyn_smem; }

int set_max_dyn_smem(const void* fn, int bytes) {  // cudaErrorInvalidValue above the GPU's limit
    auto st = g_static_smem.find(fn);  // (its static arrays count, once a launch has registered them)
    if (bytes < 0 || (size_t)bytes + (st == g_static_smem.end() ? 0 : st->second) > dyn_smem_cap()) return 1;
    g_smem_limit[fn] = bytes;
    return 0;
}

int device_attribute(int attr, int* value) {  // a Tesla T4's (cudaDeviceAttr numbers; cuda_emu.h cites them)
    int v;
    const int optin = (int)dyn_smem_cap();
    switch (attr) {
        case cudaDevAttrMaxThreadsPerBlock: case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: v = 1024; break;
        case cudaDevAttrMaxBlockDimZ: v = 64; break;
        case cudaDevAttrMaxGridDimX: v = 2147483647; break;
        case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: v = 65535; break;
        case cudaDevAttrMaxSharedMemoryPerBlock: v = (int)kDefaultSmemLimit; break;
        case cudaDevAttrTotalConstantMemory: v = 65536; break;
        case cudaDevAttrWarpSize: v = 32; break;
        case cudaDevAttrMaxRegistersPerBlock: case cudaDevAttrMaxRegistersPerMultiprocessor: v = 65536; break;
        case cudaDevAttrClockRate: v = 1590000; break;
        case cudaDevAttrMultiProcessorCount: v = 40; break;
        case cudaDevAttrMemoryClockRate: v = 5001000; break;
        case cudaDevAttrGlobalMemoryBusWidth: v = 256; break;
        case cudaDevAttrL2CacheSize: v = 4 * 1024 * 1024; break;
        case cudaDevAttrMaxThreadsPerMultiProcessor: v = 1024; break;
        case cudaDevAttrComputeCapabilityMajor: v = 7; break;
        case cudaDevAttrComputeCapabilityMinor: v = 5; break;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin: v = optin; break;
        case cudaDevAttrMaxSharedMemoryPerMultiprocessor: v = optin <= 65536 ? 65536 : optin + 1024; break;
        case cudaDevAttrMaxBlocksPerMultiprocessor: v = 16; break;
        case cudaDevAttrConcurrentKernels: case cudaDevAttrUnifiedAddressing: case cudaDevAttrMemoryPoolsSupported:
        case cudaDevAttrCooperativeLaunch: v = 1; break;  // (a grid-wide sync cannot be graded here: rewrite.py)
        default: return 1;
    }
    *value = v;
    return 0;
}

void set_status(int error) { g_status = error; }

int take_launch_status() {
    int s = g_status;
    g_status = 0;
    return s;
}

void shared_in_kernel(const void* array, size_t bytes, const void** seen) {
    if (*seen == g_launch.fn) return;  // (the common case: this kernel's threads reached it before)
    *seen = g_launch.fn;
    note_static_shared(array, bytes);
}

void launch_bounds(int line, long long max_threads, long long, long long) {
    if (max_threads <= 0 || g_launch.nthreads <= max_threads) return;
    g_status = cudaErrorLaunchOutOfResources;
    report("kernel %s was launched with %d threads per block, more than its __launch_bounds__(%lld) at %s:%d allows: "
           "a GPU refuses the launch (cudaErrorLaunchOutOfResources: too many resources requested for launch)",
           g_launch.kernel, g_launch.nthreads, max_threads, source_name, line);
    abandon_thread();
}

void note_static_shared(const void* array, size_t bytes) {
    if (!g_running || !g_launch.fn || !g_static_arrays[g_launch.fn].insert(array).second) return;
    size_t& total = g_static_smem[g_launch.fn];
    total += bytes;
    if (total > kStaticSmemLimit || total + g_launch.smem > dyn_smem_cap()) {
        shared_fits(g_launch.fn, g_launch.smem);  // reports it
        abandon_thread();
    }
}

long long host_clock_ns() { return ++g_host_vtime_ns; }

long long device_clock() {
    if (!g_running) return host_clock_ns();  // host code's clock64() (not CUDA's): the host's virtual clock
    long long& c = g_thread_clock[g_linear & 1023];
    c += kClockStep;
    return kClockBase + c;
}

static std::string stream_name(const void* s) {
    char buf[64];
    if (s) std::snprintf(buf, sizeof buf, "stream %p", s);
    else std::snprintf(buf, sizeof buf, "the default stream (0)");
    return buf;
}

bool stream_ok(const void* s, const char* what, const char* kernel, int line) {
    if (!g_expecting || s == g_expected_stream) return true;
    const std::string call = kernel ? std::string(what) + " " + kernel : std::string(what);
    report_host("the launcher %s on %s at %s:%d, but the launcher's stream is %s: launch every kernel, and every "
                "cudaMemsetAsync and cudaMemcpyAsync, on the stream the launcher gets (kernel<<<grid, block, "
                "shared_bytes, stream>>>); work on another stream is not ordered with the caller's",
                call.c_str(), stream_name(s).c_str(), source_name, line, stream_name(g_expected_stream).c_str());
    return false;
}

void trap(int line, const char* what) {
    report("%s at line %d (thread %s)", what, line, thread_name(g_linear).c_str());
    abandon_thread();
}

void launch_grid(const char* kernel, int line, const void* fn, dim3 grid, dim3 block, size_t smem, bool fibers,
                 void (*thread)(void*), void* ctx) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_abort = false;
    g_launch = LaunchInfo{kernel_name(fn, kernel), line, grid, block, smem, (int)(block.x * block.y * block.z), fn};
    blockIdx = uint3{0, 0, 0};
    if (!check_config(fn, grid, block, smem)) return;
    model_launch_time(g_launch);
    blockDim = block;
    gridDim = grid;
    g_thread_fn = thread;
    g_thread_ctx = ctx;
    g_rng = 0x9E3779B97F4A7C15ull * (g_seed | 1) + g_seed;
    std::memset(g_dyn_smem, 0xff, smem);  // NaN / -1: reading unwritten shared memory shows
    globals_new_launch();
    checks_new_launch();
    progress_start(g_launch);
    g_plain = !fibers;
#ifdef CUDA_EMU_ASAN
    g_running = true;
    run_grid();
    g_running = false;
    profile_end_launch();
#else
    arm_faults();
    if (sigsetjmp(g_fault_jmp, 1) == 0) {  // 1: the mask is restored (the handler blocks its signal)
        g_armed = 1;
        g_running = true;
        run_grid();
    } else {  // a fault in kernel code: its fibers are abandoned
        g_cur = nullptr;
        for (Fiber& f : g_fibers) f.state = DONE;
        report_fault();
    }
    g_running = false;
    profile_end_launch();
    disarm_faults();
#endif
    globals_end_launch();
    g_prog_kernel = nullptr;
    g_plain = false;
    std::fflush(stdout);  // kernel printf shows before the caller reads fd 1
}

}  // namespace cuda_emu

extern "C" __attribute__((visibility("default"))) const char* cuda_emu_take_error(void) {
    using namespace cuda_emu;
    std::lock_guard<std::mutex> lock(g_mutex);
    take_host_fault();  // host code that touched device memory since the last launch
    if (g_error.empty()) return nullptr;
    g_taken.swap(g_error);
    g_error.clear();
    return g_taken.c_str();
}

// The kernel file's clock() (cuda_emu.h renames it): a kernel thread's virtual clock, or the host's in microseconds
// (CLOCKS_PER_SEC), never the process's CPU time.
extern "C" CUDA_EMU_API long cuda_emu_clock(void) noexcept {
    using namespace cuda_emu;
    return g_running ? (long)device_clock() : (long)(host_clock_ns() / 1000);
}

extern "C" __attribute__((visibility("default"))) void cuda_emu_configure(unsigned schedule_seed, int flags) {
    using namespace cuda_emu;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_seed = schedule_seed;
    g_flags = flags;
}

// ---- Streams: the launcher contract ----------------------------------------------------------------------------
extern "C" __attribute__((visibility("default"))) cudaStream_t cuda_emu_stream_create(void) {
    static std::atomic<uintptr_t> next{0};
    return (cudaStream_t)(0x5000 + 0x10 * ++next);  // distinct, never 0 (the default stream); never dereferenced
}

extern "C" __attribute__((visibility("default"))) void cuda_emu_expect_stream(cudaStream_t s) {
    using namespace cuda_emu;
    g_expected_stream = s;
    g_expecting = s != nullptr;
}

// The caller's own accesses to device memory (the native runner's fills, reads and checks; another library's kernels,
// which this runtime does not see launch): open between cuda_emu_device_access(1) and (0), which nest.
extern "C" __attribute__((visibility("default"))) void cuda_emu_device_access(int open) {
    if (open) cuda_emu::device_open();
    else cuda_emu::device_close();
}
