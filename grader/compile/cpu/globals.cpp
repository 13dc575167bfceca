// The race detector for the launcher's outputs in global memory. The caller (grader.run.binding
// on the CPU backend) names the outputs before each launcher call with cuda_emu_set_outputs
// (beside cuda_emu_set_buffers, the access profile's names for every buffer); checks.cpp's
// access hooks send the accesses inside the global window here.
//
// Races: blocks run one after another here, so a non-atomic `C[i] += partial` from several
// blocks (or unordered threads of one block) adds up correctly on the CPU and loses updates on
// a GPU. While a launch runs, every load and store to an output is checked, as the shared-memory
// detector does: a thread that reads an element another thread wrote in this launch, or writes
// one another thread read, with nothing ordering the two (threads of different blocks are not, but
// through an atomic flag: a release after a __threadfence(), an acquire that sees it, then a fence;
// within a block a __syncthreads() or a warp sync of both lanes), is a race. Two writes of
// different values are one too (checked when the launch ends: equal values are harmless).
// The cudaMalloc blocks are watched as the outputs are while a launch runs (a split-K's scratch
// sums, a block reading what another staged there); a read of an output word that nothing wrote in
// this launcher call (store, atomic, cudaMemset, copy) is reported whatever the grader's poison is.
// Atomics (cuda_emu.h calls atomic_access) are atomic accesses: an atomic and a plain load or store of
// the same word by unordered threads race (a split-K whose first slice stores and the others atomicAdd is
// right only if the store comes first), and so do two atomics of kinds that do not commute (an atomicExch
// and an atomicAdd); atomics of one kind, and CAS/Inc/Dec (locks, queues), do not.
//
// Device memory: on a GPU the launch's buffers and cudaMalloc's blocks are device memory, which
// host code cannot touch (it faults); here they are host memory. So while no kernel runs, the
// access hooks send loads and stores inside them here (host_access: the launcher's host code did
// the kernel's work), once per launcher call; cudaMemcpy and cudaMemset come here too
// (device_copy): host memory copied into an output, and a copy or memset into an input, are
// reported with the caller's line. While a kernel runs, a store into an input is reported.
#include "runtime_internal.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace cuda_emu {

bool g_race_outputs = false;
uintptr_t g_host_lo = 0, g_host_span = 0, g_in_lo = 0, g_in_span = 0, g_oob_lo = 0, g_oob_span = 0;

namespace {

struct Output {
    uintptr_t lo, hi;
    std::string name;      // the launcher's parameter: C, Y, mask, dX
    int cols;              // elements per row (0: one-dimensional)
    bool scratch = false;  // a cudaMalloc block, watched during a launch as the outputs are
    int line = 0;          // ... and the line of its cudaMalloc
};
// The launcher's outputs, then (while a launch runs) the cudaMalloc blocks: a race through a scratch buffer (a
// split-K's partial sums, a block reading what another block staged there) is one on a GPU too.
std::vector<Output> g_outputs;
size_t g_n_outputs = 0;  // how many of g_outputs are the launcher's outputs
uintptr_t g_out_lo = 0, g_out_hi = 0, g_outputs_lo = 0, g_outputs_hi = 0;  // all watched; the outputs alone

struct GShadow {  // one per 4-byte word of an output
    uint64_t w_clock = 0, r_clock = 0, r2_clock = 0;
    uint32_t w_who = 0, r_who = 0, r2_who = 0;  // block_linear * nthreads + thread
    const void *w_pc = nullptr, *r_pc = nullptr, *r2_pc = nullptr;
    uint32_t set_call = 0;  // the launcher call (g_call) that last wrote any of its bytes: store, atomic, memset, copy
};

struct Suspect {  // a second unordered write: a race if the values differ
    const Output* buf;
    size_t word;
    uint32_t first, second;
    const void *first_pc, *second_pc;
    uint32_t first_value;
};

struct AShadow {  // one per 4-byte word of an output that an atomic touched: the last two atomics
    uint64_t clock = 0, clock2 = 0;
    uint32_t who = 0, who2 = 0;
    const void *pc = nullptr, *pc2 = nullptr;
    uint8_t op = 0, op2 = 0;  // cuda_emu.h's atomic_access op of each
    int rel = -1;             // the release (g_releases) of the last fenced atomic on it, at rel_clock
    uint64_t rel_clock = 0;
};

const char* op_name(int op) {
    static const char* const names[] = {"atomicCAS/Inc/Dec", "atomicAdd", "atomicExch", "atomicMin",
                                        "atomicMax", "atomicOr", "atomicAnd", "atomicXor"};
    return op >= 0 && op < 8 ? names[op] : "an atomic";
}
bool conflicts(int a, int b) { return a != b && a != 0 && b != 0; }  // do not commute (CAS & co.: locks)

std::vector<std::vector<GShadow>> g_shadow;  // per buffer (kept between calls: clocks tell stale entries)
std::vector<std::vector<AShadow>> g_ashadow;  // per buffer, allocated at its first atomic
std::vector<Suspect> g_suspects;
uint64_t g_launch_clock = 0;
uint32_t g_call = 0;  // counts the launcher calls (cuda_emu_set_outputs with outputs)
constexpr size_t kMaxSuspects = 64;

uint32_t block_linear(uint3 b) { return b.x + g_launch.grid.x * (b.y + g_launch.grid.y * b.z); }

std::string who_name(uint32_t who) {
    unsigned n = (unsigned)g_launch.nthreads, bl = who / n, gx = g_launch.grid.x, gy = g_launch.grid.y;
    char buf[96];
    std::snprintf(buf, sizeof buf, "thread %s of block (%u,%u,%u)", thread_name((int)(who % n)).c_str(), bl % gx,
                  (bl / gx) % gy, bl / (gx * gy));
    return buf;
}

std::string element(const Output& b, size_t word) {
    size_t i = word;  // 4-byte elements: float, int32 and uint32 outputs
    if (b.scratch && !b.name.empty())
        return b.name + " (4-byte word " + std::to_string(i) + "; a __device__ variable, line " +
               std::to_string(b.line) + ")";
    if (b.scratch)
        return "element " + std::to_string(i) + " (4-byte words) of the cudaMalloc block allocated at line " +
               std::to_string(b.line);
    if (b.cols > 0) return b.name + "[" + std::to_string(i / b.cols) + "][" + std::to_string(i % b.cols) + "]";
    return b.name + "[" + std::to_string(i) + "]";
}

// ---- ordering between blocks: release and acquire through atomics --------------------------------------------
// Blocks of a launch are unordered, except through memory: a block's accesses that a __threadfence() orders
// before an atomic of one of its threads (the release) are ordered before whatever a thread of another block
// does after an atomic of its own on that word, which sees the value (the acquire); the acquiring block's other
// threads are ordered after it once a __syncthreads() follows the acquire. So a serial split-K whose slices wait
// on a flag, and the Programming Guide's last-block reduction (__threadfence(), then atomicInc on a counter),
// pass; without the release's fence nothing is ordered (the flag may be seen before the data).
struct Release {
    uint32_t block;                // block linear id of the releasing thread
    std::vector<uint64_t> upto;    // per thread of that block: its accesses up to this clock are released
    std::vector<int> prior;        // the releases that block had acquired (and theirs): ordered before this one
};
std::vector<Release> g_releases;  // this launch's
struct Acquire { int release; int thread; uint64_t clock; };
std::vector<Acquire> g_acquires;  // the running block's
std::vector<uint64_t> g_fence;    // per thread of the running block: the clock of its last __threadfence(), or 0

bool released(const Release& r, uint32_t who, uint64_t clock) {
    const unsigned n = (unsigned)g_launch.nthreads;
    if (r.block == who / n && clock <= r.upto[who % n]) return true;
    for (int p : r.prior) {
        const Release& q = g_releases[p];
        if (q.block == who / n && clock <= q.upto[who % n]) return true;
    }
    return false;
}

// Thread `me` (of the running block) acquired, itself or for its block's other threads before a barrier, a release
// that holds what `who` did at `clock`.
bool acquired(uint32_t who, uint64_t clock, uint32_t me) {
    const int t = (int)(me % (unsigned)g_launch.nthreads);
    for (const Acquire& a : g_acquires)
        if ((a.thread == t || g_block_sync > a.clock) && released(g_releases[a.release], who, clock)) return true;
    return false;
}

// Is what thread `who` did at `clock` ordered before the running thread's access?
bool ordered(uint32_t who, uint64_t clock, uint32_t me) {
    if (who == me) return true;
    unsigned n = (unsigned)g_launch.nthreads;
    if (who / n != me / n) return !g_acquires.empty() && acquired(who, clock, me);  // another block
    if (clock < g_block_sync) return true;  // a __syncthreads() since
    int a = (int)(who % n), b = (int)(me % n);
    return a / 32 == b / 32 && warp_synced(a, clock, b);
}

const char* const kOtherBlock =
    "Blocks run in any order on a GPU, and at the same time: what one block writes is there for another only in a "
    "later launch, or after an atomic flag that the writer sets after a __threadfence() and the reader waits for. "
    "To add up partial sums use atomicAdd; else split the kernel in two, or have every block compute what it reads";

// A mask (the contract's `mask` outputs, grader.spec.contract.is_mask) holds 32 lanes' bits per word: a plain |= of
// several threads loses bits, and atomicAdd would add them, not set them.
const char* const kMaskWord =
    "Several threads set bits of one mask word: a plain store or |= loses the others' bits, and atomicAdd would add "
    "them, not set them. "
    "Build the word once per warp with __ballot_sync(0xffffffff, ...) and let one lane store it, or set each bit with "
    "atomicOr on a word zeroed before (cudaMemset)";

bool is_mask(const Output& b) { return !b.scratch && b.name == "mask"; }

[[noreturn]] void race(const Output& b, size_t word, const char* what_me, const void* pc, uint32_t other,
                       const char* what_other, const void* opc, uint32_t me, bool atomic = false,
                       const char* advice = nullptr) {
    if (!atomic && is_mask(b)) advice = kMaskWord;
    report("global-memory race on %s: %s %s it at %s, but %s %s it at %s in the same launch, and nothing orders "
           "the two (threads of different blocks are not, but through an atomic flag and __threadfence(); in a block "
           "only __syncthreads() is). %s",
           element(b, word).c_str(), who_name(me).c_str(), what_me, source_line(pc).c_str(),
           who_name(other).c_str(), what_other, source_line(opc).c_str(),
           advice ? advice
           : atomic ? "An atomic orders nothing against a plain load or store: on a GPU either may come first. Make "
                      "every access to it in the launch atomic (zero it before the launch with cudaMemset, or in an "
                      "earlier kernel)"
                    : "On a GPU one update is lost: make it atomic (atomicAdd to add, atomicOr to set bits), or give "
                      "every element one thread that writes it");
    abandon_thread();
    __builtin_unreachable();
}

const Output* find_output(uintptr_t a) {
    for (const Output& b : g_outputs)
        if (a - b.lo < b.hi - b.lo) return &b;
    return nullptr;
}

// An output's contents are undefined when the launcher is called (on a GPU: torch.empty's, or what the last call
// left), whatever the grader's poison happens to be: a read of a word nothing has written in this call reads that.
[[noreturn]] void unset_read(const Output& b, size_t word, const char* what, const void* pc, uint32_t me) {
    report("the kernel %s %s at %s (%s) before anything wrote it in this launcher call: an output holds no "
           "defined value when the launcher is called (on a GPU, whatever the memory held: torch.empty, or the "
           "previous call's result). Write every element before reading it, or clear the output first (cudaMemset, "
           "or an earlier kernel)", what, element(b, word).c_str(), source_line(pc).c_str(), who_name(me).c_str());
    abandon_thread();
    __builtin_unreachable();
}

// Races with the atomics of this launch: an unordered atomic on a word the running thread loads
// or stores plainly.
void check_atomics(const Output& b, size_t w, const char* what_me, const void* pc, uint32_t me) {
    const std::vector<AShadow>& ash = g_ashadow[&b - g_outputs.data()];
    if (w >= ash.size()) return;
    const AShadow& t = ash[w];
    const uint64_t L = g_launch_clock;
    if (t.clock >= L && !ordered(t.who, t.clock, me)) race(b, w, what_me, pc, t.who, "atomically updated", t.pc, me, true);
    if (t.clock2 >= L && !ordered(t.who2, t.clock2, me))
        race(b, w, what_me, pc, t.who2, "atomically updated", t.pc2, me, true);
}

constexpr size_t kMaxReleases = 1 << 16;

// A release by the running thread: what its block did that a __threadfence() orders before now.
int release() {
    const int n = g_launch.nthreads, t = g_linear;
    const uint64_t mine = g_fence[t];
    // the thread's fence after the last barrier also orders what the block did before that barrier
    const uint64_t all = mine >= g_block_sync ? g_block_sync - 1 : 0;
    Release r{block_linear(blockIdx), std::vector<uint64_t>(n), {}};
    for (int k = 0; k < n; ++k)  // another thread's accesses before its own fence, with a barrier since
        r.upto[k] = std::max(k == t ? mine : g_fence[k] && g_fence[k] < g_block_sync ? g_fence[k] : 0, all);
    for (const Acquire& a : g_acquires) {
        r.prior.push_back(a.release);
        r.prior.insert(r.prior.end(), g_releases[a.release].prior.begin(), g_releases[a.release].prior.end());
    }
    std::sort(r.prior.begin(), r.prior.end());
    r.prior.erase(std::unique(r.prior.begin(), r.prior.end()), r.prior.end());
    g_releases.push_back(std::move(r));
    return (int)g_releases.size() - 1;
}

// The running thread's atomic on a word that holds another block's release: an acquire.
void acquire(const AShadow& t, uint32_t me) {
    if (t.rel < 0 || t.rel_clock < g_launch_clock || g_releases[t.rel].block == me / (uint32_t)g_launch.nthreads) return;
    if (!g_acquires.empty() && g_acquires.back().release == t.rel && g_acquires.back().thread == g_linear) return;
    g_acquires.push_back(Acquire{t.rel, g_linear, g_clock});
}

void global_atomic(const void* p, size_t n, const void* pc, int op) {
    uintptr_t a = (uintptr_t)p;
    const Output* b = find_output(a);
    if (!b) return;
    const size_t i = b - g_outputs.data();
    std::vector<GShadow>& sh = g_shadow[i];
    if (g_ashadow.size() <= i) g_ashadow.resize(i + 1);
    std::vector<AShadow>& ash = g_ashadow[i];
    if (ash.size() < sh.size()) ash.resize(sh.size());
    const uint32_t me = block_linear(blockIdx) * (uint32_t)g_launch.nthreads + (uint32_t)g_linear;
    const uint64_t L = g_launch_clock;
    const char* what = "atomically updates";
    for (size_t w = (a - b->lo) / 4; w <= (a + n - 1 - b->lo) / 4 && w < sh.size(); ++w) {
        GShadow& s = sh[w];
        acquire(ash[w], me);
        // an exchange ignores the old value (unless the kernel uses what it returns: not seen here); the others
        // combine it with theirs
        if (s.set_call != g_call && op != 2 && !b->scratch) unset_read(*b, w, "atomically updates", pc, me);
        s.set_call = g_call;
        if (s.w_clock >= L && !ordered(s.w_who, s.w_clock, me)) race(*b, w, what, pc, s.w_who, "wrote", s.w_pc, me, true);
        if (s.r_clock >= L && !ordered(s.r_who, s.r_clock, me)) race(*b, w, what, pc, s.r_who, "read", s.r_pc, me, true);
        if (s.r2_clock >= L && !ordered(s.r2_who, s.r2_clock, me)) race(*b, w, what, pc, s.r2_who, "read", s.r2_pc, me, true);
        AShadow& t = ash[w];
        static const char* const kOrder = "Atomics of different kinds on one word do not commute (an exchange "
            "then an add is not an add then an exchange), and nothing orders them: on a GPU either may come first. "
            "Set the word before the launch (cudaMemset, or an earlier kernel) and use one kind of atomic on it";
        char what_other[64];
        if (t.clock >= L && conflicts(op, t.op) && !ordered(t.who, t.clock, me)) {
            std::snprintf(what_other, sizeof what_other, "updated (%s)", op_name(t.op));
            race(*b, w, op == 2 ? "exchanges" : "atomically updates", pc, t.who, what_other, t.pc, me, true, kOrder);
        }
        if (t.clock2 >= L && conflicts(op, t.op2) && !ordered(t.who2, t.clock2, me)) {
            std::snprintf(what_other, sizeof what_other, "updated (%s)", op_name(t.op2));
            race(*b, w, op == 2 ? "exchanges" : "atomically updates", pc, t.who2, what_other, t.pc2, me, true, kOrder);
        }
        if (t.clock < L || t.who == me) { t.who = me; t.clock = g_clock; t.pc = pc; t.op = (uint8_t)op; }
        else { t.who2 = me; t.clock2 = g_clock; t.pc2 = pc; t.op2 = (uint8_t)op; }
        if (g_fence[g_linear] && g_releases.size() < kMaxReleases) {  // a fenced atomic: a release
            t.rel = release();
            t.rel_clock = g_clock;
        }
    }
}

// ---- device memory --------------------------------------------------------------------------
struct Buf {
    uintptr_t lo, hi;
    std::string name;
    int cols;
    bool output;
    uintptr_t alo = 0, ahi = 0;  // the allocation around it, when it has room outside the buffer (guard zones)
};
std::vector<Buf> g_bufs;       // every buffer the launcher call was given
bool g_device = false;         // ... and they are device memory (flags bit 1: not a host exercise)
struct Span {
    uintptr_t lo, hi;
    int line = 0;
    const char* name = nullptr;
    size_t mapped = 0;  // a cudaMalloc block of its own pages (mmap): [lo, lo + mapped), a PROT_NONE page after
    bool buffer = false;  // the caller's (cuda_emu_device_alloc: the runner's buffers), not the launcher's scratch
};
// cudaMalloc's blocks (line: the cudaMalloc's), and the __device__ / __constant__ variables (name: theirs)
std::vector<Span> g_blocks;
// the race detector's shadows of each cudaMalloc block, kept between launches (clocks tell stale entries)
std::unordered_map<uintptr_t, std::pair<std::vector<GShadow>, std::vector<AShadow>>> g_scratch_shadow;
std::vector<Span> g_tainted;   // device memory a host copy filled, no kernel launched since
bool g_host_reported = false;  // this launcher call's host code already reported
// Host data copied into device memory in this launcher call (at least 64 bytes, not one repeated word): a kernel
// that copies it into an output makes that output host work (checked when the call ends).
struct HostCopy { size_t n; uint64_t hash; int line; const char* call; };
std::vector<HostCopy> g_host_copies;

uint64_t fnv(const void* p, size_t n) {
    const unsigned char* b = (const unsigned char*)p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

bool one_word(const void* p, size_t n) {  // [p, p+n) is one 4-byte word repeated (zeros, a fill)
    uint32_t w0, w;
    std::memcpy(&w0, p, 4);
    for (size_t i = 4; i + 4 <= n; i += 4) {
        std::memcpy(&w, (const char*)p + i, 4);
        if (w != w0) return false;
    }
    return true;
}
bool g_in_launch = false;
// Allocations that hold the launch's buffers with room around them (cuda_emu_set_allocations: torch tensors inside
// guarded storage; and the runtime's own cudaMalloc blocks): a kernel's read there, outside every buffer, is out of
// bounds. Watched while a kernel runs: [g_oob_lo, +g_oob_span) spans them.
struct Alloc { uintptr_t lo, hi; };
std::vector<Alloc> g_allocs;

bool overlaps(uintptr_t lo, uintptr_t hi, uintptr_t a, size_t n) { return a < hi && a + n > lo; }

void update_host_window() {
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    if (g_device && !g_host_reported && !g_in_launch) {
        for (const Buf& b : g_bufs) lo = std::min(lo, b.lo), hi = std::max(hi, b.hi);
        for (const Span& b : g_blocks) lo = std::min(lo, b.lo), hi = std::max(hi, b.hi);
    }
    if (hi > lo) { g_host_lo = lo; g_host_span = hi - lo; }
    else { g_host_lo = 0; g_host_span = 0; }
}

std::string base_name() {
    std::string name = source_name;
    size_t slash = name.rfind('/');
    return slash == std::string::npos ? name : name.substr(slash + 1);
}

// The device memory [a, a+n) overlaps: a launch buffer's name, "a cudaMalloc block", or null.
const char* device_name(uintptr_t a, size_t n, const Buf** buf = nullptr) {
    for (const Buf& b : g_bufs)
        if (overlaps(b.lo, b.hi, a, n)) { if (buf) *buf = &b; return b.name.c_str(); }
    for (const Span& b : g_blocks)
        if (overlaps(b.lo, b.hi, a, n)) return b.name ? b.name : "a cudaMalloc block";
    return nullptr;
}

bool inside_device(uintptr_t a, size_t n) {  // [a, a+n) lies in one buffer or block
    for (const Buf& b : g_bufs)
        if (a >= b.lo && a + n <= b.hi) return true;
    for (const Span& b : g_blocks)
        if (a >= b.lo && a + n <= b.hi) return true;
    return false;
}

bool tainted(uintptr_t a, size_t n) {
    for (const Span& t : g_tainted)
        if (overlaps(t.lo, t.hi, a, n)) return true;
    return false;
}

// The words of the outputs in [p, p+n) hold defined values from now on in this launcher call (a cudaMemset or a
// copy into them).
void mark_set(const void* p, size_t n) {
    const uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; i < g_outputs.size(); ++i) {
        const Output& b = g_outputs[i];
        if (!overlaps(b.lo, b.hi, a, n)) continue;
        std::vector<GShadow>& sh = g_shadow[i];
        for (size_t w = (std::max(a, b.lo) - b.lo) / 4; w <= (std::min(a + n, b.hi) - 1 - b.lo) / 4 && w < sh.size(); ++w)
            sh[w].set_call = g_call;
    }
}

}  // namespace

void host_access(const void* p, size_t n, bool write, const void* pc) {
    const char* name = device_name((uintptr_t)p, n);
    if (!name || g_host_reported) return;  // host memory between the device buffers
    g_host_reported = true;
    update_host_window();  // closed for the rest of this launcher call
    bool block = std::strcmp(name, "a cudaMalloc block") == 0;
    const Buf* buf = nullptr;
    device_name((uintptr_t)p, n, &buf);
    if (!block && !buf)  // a __device__ / __constant__ variable
        report_host("the launcher's host code %s the __device__ variable %s at %s: on a GPU host code reaches only "
                    "its own copy of it, which kernels never see (nor it theirs); cudaMemcpyToSymbol and "
                    "cudaMemcpyFromSymbol copy between the two", write ? "wrote" : "read", name,
                    source_line(pc).c_str());
    else
        report_host("the launcher's host code %s %s (device memory) at %s: on a GPU that %s faults; only kernels may "
                    "read and write %s (cudaMemcpy copies between host and device)", write ? "wrote" : "read", name,
                    source_line(pc).c_str(), write ? "write" : "read", block ? "device memory" : "the launch's buffers");
}

void input_write(const void* p, size_t n, const void* pc) {
    const uintptr_t a = (uintptr_t)p;
    for (const Buf& b : g_bufs) {
        if (b.output || !overlaps(b.lo, b.hi, a, n)) continue;
        size_t word = (std::max(a, b.lo) - b.lo) / 4;
        std::string el = b.cols > 0 ? b.name + "[" + std::to_string(word / b.cols) + "][" +
                                          std::to_string(word % b.cols) + "]"
                                    : b.name + "[" + std::to_string(word) + "]";
        report("the kernel wrote to its input %s (%s, at %s, thread %s): inputs are read-only, even when the kernel "
               "restores them; only the outputs may be written (keep scratch values in registers, shared memory or "
               "an output)", b.name.c_str(), el.c_str(), source_line(pc).c_str(), thread_name(g_linear).c_str());
        abandon_thread();
    }
}

// A kernel's load in an allocation that holds a launch buffer (the window), but not inside a buffer: past its end
// or before its start. On a GPU it reads whatever lies there (a guard zone, another buffer) or faults.
void oob_read(const void* p, size_t n, const void* pc) {
    static size_t last = 0;  // the buffer the last in-bounds read hit: most reads hit it again
    const uintptr_t a = (uintptr_t)p;
    if (last < g_bufs.size() && a - g_bufs[last].lo <= g_bufs[last].hi - g_bufs[last].lo - n) return;
    const Buf* near = nullptr;
    for (size_t i = 0; i < g_bufs.size(); ++i) {
        const Buf& b = g_bufs[i];
        if (b.hi - b.lo >= n && a - b.lo <= b.hi - b.lo - n) { last = i; return; }
        if (b.ahi > b.alo && a + n > b.alo && a < b.ahi) near = &b;
    }
    if (!near) return;  // between the allocations
    const Buf& b = *near;
    const long long words = (long long)((b.hi - b.lo) / 4), e = ((long long)a - (long long)b.lo) / 4 -
                                                                  ((long long)a < (long long)b.lo && (b.lo - a) % 4);
    const bool past = a + n > b.hi;
    std::string el = b.cols > 0 && e >= 0 ? b.name + "[" + std::to_string(e / b.cols) + "][" + std::to_string(e % b.cols) + "]"
                                          : b.name + "[" + std::to_string(e) + "]";
    std::string shape = b.cols > 0 ? std::to_string(words / b.cols) + "x" + std::to_string(b.cols) + " "
                                   : std::to_string(words) + "-element ";
    const size_t off = past ? a + n - b.hi : b.lo - a;
    report("out-of-bounds read of %s at %s: thread %s reads %s, %s the %sarray (%zu byte%s %s it); on a GPU that "
           "reads whatever lies there, or faults. Every load needs its bounds test, even one whose value is not used "
           "(a tile load guarded only by k < K needs row < M too; a bias read before the column test)",
           b.name.c_str(), source_line(pc).c_str(), thread_name(g_linear).c_str(), el.c_str(),
           past ? "past the end of" : "before the start of", shape.c_str(), off, off == 1 ? "" : "s",
           past ? "past" : "before");
    abandon_thread();
}

void atomic_access(const void* p, size_t n, const void* pc, int op) {
    const uintptr_t a = (uintptr_t)p;
    if (a - g_host_lo < g_host_span) return host_access(p, n, true, pc);  // an atomic in host code
    if (a - g_in_lo < g_in_span) input_write(p, n, pc);
    if (g_race_outputs && a - g_out_lo < g_out_hi - g_out_lo) global_atomic(p, n, pc, op);
}

// The kernel file's memcpy, memmove and memset (cuda_emu.h): host code that copies from or into
// device memory with them is reported as its loads and stores are; a kernel's into an input too.
static void mem_range(void* d, const void* s, size_t n, const void* pc) {
    if (!n) return;
    if (g_host_span) {
        if (s) host_access(s, n, false, pc);
        host_access(d, n, true, pc);
    } else if (g_in_launch) {
        if (g_in_span) input_write(d, n, pc);
        mark_set(d, n);  // a kernel's memcpy into an output (not seen by the access hooks) sets its words
    }
}

// ---- protection of cudaMalloc's blocks ----------------------------------------------------------------------
// Each block has pages of its own (and a PROT_NONE page after them), which are PROT_NONE except while a kernel
// runs and inside the runtime's own copies: host code that touches a block, by any route (its own loads, a
// library function, a copy the instrumentation does not see), faults. The fault handler (installed with the
// first block, chained to the one before it) notes the access, opens the block so the access completes, and
// the note becomes the launcher call's error at the next runtime call: host code touching device memory, with
// its line. Sanitize builds keep heap blocks (AddressSanitizer must see overflows) and the hooks' detection.
namespace {
#ifndef CUDA_EMU_ASAN
constexpr size_t kPage = 4096;
int g_open = 0;  // nesting of the scopes in which device memory is open (kernels, the runtime's copies)
struct HostFault { void* addr; void* pc; int write; };  // write: 1, 0, or -1 when the CPU does not say
volatile sig_atomic_t g_fault_pending = 0;
HostFault g_host_fault{};
struct sigaction g_prev_segv;
bool g_segv_installed = false;

void protect_blocks(int prot) {
    for (const Span& b : g_blocks)
        if (b.mapped) mprotect((void*)b.lo, b.mapped, prot);
}

void host_fault_handler(int sig, siginfo_t* si, void* uc) {
    const uintptr_t a = (uintptr_t)si->si_addr;
    for (const Span& b : g_blocks)  // (no allocation: a plain walk of the vector)
        if (b.mapped && a - b.lo < b.mapped && si->si_code > 0) {
            if (!g_fault_pending) {
                g_host_fault.addr = si->si_addr;
#if defined(__x86_64__) && defined(__linux__)
                g_host_fault.pc = (void*)((ucontext_t*)uc)->uc_mcontext.gregs[REG_RIP];
                g_host_fault.write = (((ucontext_t*)uc)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
                g_host_fault.pc = nullptr;
                g_host_fault.write = -1;
#endif
                g_fault_pending = 1;
            }
            mprotect((void*)b.lo, b.mapped, PROT_READ | PROT_WRITE);  // the access completes; closed again later
            return;
        }
    // not a block: the handler that was there before
    if (g_prev_segv.sa_flags & SA_SIGINFO) {
        if (g_prev_segv.sa_sigaction) return g_prev_segv.sa_sigaction(sig, si, uc);
    } else if (g_prev_segv.sa_handler != SIG_DFL && g_prev_segv.sa_handler != SIG_IGN) {
        return g_prev_segv.sa_handler(sig);
    }
    signal(sig, SIG_DFL);  // the instruction faults again, now with the default action
}

// A block's pages (PROT_NONE) and the PROT_NONE page after them. A block of 2 MiB or more starts on a 2 MiB
// boundary and asks for huge pages: opening and closing device memory (an mprotect of every block, twice a
// launch) then rewrites one page-table entry per 2 MiB, not one per 4 KiB page (a 64 MiB buffer: 32, not 16384).
constexpr size_t kHuge = size_t(2) << 20;
void* map_block(size_t bytes) {
    const size_t slack = bytes >= kHuge ? kHuge : 0, span = bytes + kPage + slack;
    char* m = (char*)mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED || !slack) return m;
    char* p = (char*)(((uintptr_t)m + kHuge - 1) & ~(uintptr_t)(kHuge - 1));
    if (p > m) munmap(m, (size_t)(p - m));
    if (m + span > p + bytes + kPage) munmap(p + bytes + kPage, (size_t)(m + span - (p + bytes + kPage)));
    madvise(p, bytes, MADV_HUGEPAGE);  // a hint: without huge pages it works as before, only slower
    return p;
}

void install_host_fault_handler() {
    if (g_segv_installed) return;
    struct sigaction sa{};
    sa.sa_sigaction = host_fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    g_segv_installed = sigaction(SIGSEGV, &sa, &g_prev_segv) == 0;
}
#endif

}  // namespace

// Device memory is open (kernels and the runtime's copies may touch it) between these (they nest).
void device_open() {
#ifndef CUDA_EMU_ASAN
    if (!g_open++) protect_blocks(PROT_READ | PROT_WRITE);
#endif
}
void device_close() {
#ifndef CUDA_EMU_ASAN
    if (g_open > 0 && !--g_open) protect_blocks(PROT_NONE);
#endif
}

// A host access that faulted on a closed block, reported as the hooks report one (host_access).
void take_host_fault() {
#ifndef CUDA_EMU_ASAN
    if (!g_fault_pending) return;
    g_fault_pending = 0;
    const HostFault f = g_host_fault;
    if (g_host_reported) return;  // this call's host code was reported already (the hooks saw it first)
    g_host_reported = true;
    update_host_window();
    const char* name = device_name((uintptr_t)f.addr, 1);
    const bool block = !name || std::strcmp(name, "a cudaMalloc block") == 0;
    const char* what = f.write > 0 ? "wrote" : f.write == 0 ? "read" : "touched";
    // the kernel file's line, or the library function it called (libc's memcmp, ...)
    std::string where = "at " + source_line(f.pc);
    Dl_info mine{}, at{};
    if (f.pc && dladdr((void*)&take_host_fault, &mine) && dladdr(f.pc, &at) && at.dli_fbase != mine.dli_fbase) {
        std::string lib = at.dli_fname ? at.dli_fname : "?";
        lib = lib.substr(lib.rfind('/') == std::string::npos ? 0 : lib.rfind('/') + 1);
        where = at.dli_sname ? "in " + std::string(at.dli_sname) + " (" + lib + "), a library function the launcher called"
                             : "in a library function of " + lib + " that the launcher called";
    }
    report_host("the launcher's host code %s %s (device memory) %s: on a GPU that %s faults; only kernels may "
                "read and write %s (cudaMemcpy copies between host and device)", what,
                name ? name : "a cudaMalloc block", where.c_str(),
                f.write > 0 ? "write" : f.write == 0 ? "read" : "access", block ? "device memory" : "the launch's buffers");
#endif
}

void* device_malloc(size_t n, int line) {
#ifdef CUDA_EMU_ASAN
    size_t bytes = (n + 255) / 256 * 256 + 256;
    void* p = std::aligned_alloc(256, bytes);
    if (p) {
        g_blocks.push_back(Span{(uintptr_t)p, (uintptr_t)p + bytes, line});
        update_host_window();
    }
    return p;
#else
    // the block as a GPU rounds it (256 bytes, and 256 more: what a copy may run into), on pages of its own
    const size_t block = (n + 255) / 256 * 256 + 256, bytes = (block + kPage - 1) / kPage * kPage;
    void* p = map_block(bytes);
    if (p == MAP_FAILED) return nullptr;
    install_host_fault_handler();
    g_blocks.push_back(Span{(uintptr_t)p, (uintptr_t)p + block, line, nullptr, bytes});
    if (g_open) mprotect(p, bytes, PROT_READ | PROT_WRITE);  // (allocated inside an open scope)
    update_host_window();
    return p;
#endif
}

bool kernel_pointer(const char* kernel, int line, int index, const void* p) {
    const uintptr_t a = (uintptr_t)p;
    if (!g_device || !p) return true;
    for (const Buf& b : g_bufs)
        if (a >= b.lo && a <= b.hi) return true;
    for (const Alloc& al : g_allocs)
        if (a >= al.lo && a <= al.hi) return true;
    for (const Span& b : g_blocks)
        if (a >= b.lo && a <= b.hi) return true;
    report_host("the launcher's host code launches kernel %s at %s:%d with host memory as its argument %d (a pointer "
                "to no launch buffer, cudaMalloc block or __device__ variable): on a GPU the kernel's accesses "
                "through it fault; kernels read and write device memory only", kernel, base_name().c_str(), line,
                index + 1);
    return false;
}

void register_device_variable(const void* p, size_t n, const char* name, int line) {
    g_blocks.push_back(Span{(uintptr_t)p, (uintptr_t)p + n, line, name});
    update_host_window();
}

void device_memory(std::vector<DeviceSpan>& out) {
    out.clear();
    for (const Span& b : g_blocks)
        if (!b.buffer) out.push_back(DeviceSpan{b.lo, b.hi, b.name, b.line});
}

void device_free(void* p) {
    if (!p) return;
    for (size_t i = 0; i < g_blocks.size(); ++i)
        if (g_blocks[i].lo == (uintptr_t)p && !g_blocks[i].name) {
            const Span b = g_blocks[i];
            g_blocks.erase(g_blocks.begin() + i);
            g_scratch_shadow.erase(b.lo);
            g_tainted.erase(std::remove_if(g_tainted.begin(), g_tainted.end(),
                                           [&](const Span& t) { return overlaps(b.lo, b.hi, t.lo, t.hi - t.lo); }),
                            g_tainted.end());
            update_host_window();
#ifdef CUDA_EMU_ASAN
            std::free(p);
#else
            munmap(p, b.mapped + kPage);
#endif
            return;
        }
    // not a block of cudaMalloc's: a GPU answers cudaErrorInvalidValue, and nothing is freed
}

namespace {

// A copy or memset by the launcher (`call`: its name in messages), checked as device_copy says.
// The __device__ / __constant__ variable [a, a+n) overlaps, or null.
const char* device_variable(uintptr_t a, size_t n) {
    for (const Span& b : g_blocks)
        if (b.name && overlaps(b.lo, b.hi, a, n)) return b.name;
    return nullptr;
}

void copy_checked(void* d, const void* s, size_t n, int kind, int value, int line, const char* call) {
    // a __device__ variable's name in host code is the host's copy of it: only the *Symbol calls reach the device's
    const char* var = n && g_device && kind < 2 ? device_variable((uintptr_t)d, n) : nullptr;
    if (!var && n && g_device && kind == 0) var = device_variable((uintptr_t)s, n);
    if (var)
        report_host("%s at %s:%d copies %s the __device__ variable %s by its name: in host code that is the host's "
                    "own copy of it, which kernels never see; use cudaMemcpyToSymbol / cudaMemcpyFromSymbol", call,
                    base_name().c_str(), line, device_variable((uintptr_t)d, n) ? "into" : "from", var);
    // Device data never reaches the launcher's host code: with it the host could compute the outputs and pass them
    // on in ways no check sees (negated, in kernel arguments). Refused, and not copied.
    if (n && g_device && kind != 1 && !device_name((uintptr_t)d, n) && (kind == 3 || device_name((uintptr_t)s, n))) {
        const char* from = kind == 3 ? device_variable((uintptr_t)s, n) : device_name((uintptr_t)s, n);
        report_host("%s at %s:%d copies %s (device memory) to host memory: the launcher's host code may not read "
                    "device data (the outputs must be computed by kernels); keep it on the device, where kernels "
                    "read it (a device-to-device copy is fine)", call, base_name().c_str(), line,
                    from ? from : "a __device__ variable");
        return;
    }
    if (n && g_device) {
        const uintptr_t a = (uintptr_t)d, src = (uintptr_t)s;
        const Buf* b = nullptr;
        device_name(a, n, &b);
        const std::string at = base_name() + ":" + std::to_string(line);
        if (b && !b->output)
            report_host("the launcher wrote to its input %s (%s at %s): inputs are read-only; only the outputs may be "
                        "written", b->name.c_str(), call, at.c_str());
        else if (b && kind != 1 && kind != 3 && !inside_device(src, n))
            report_host("the launcher copied host memory into %s (%s at %s): the outputs must be computed by kernels "
                        "(a copy into an output must come from device memory a kernel wrote)", b->name.c_str(),
                        call, at.c_str());
        else if (b && kind != 1 && tainted(src, n))
            report_host("the launcher copied host memory into %s by way of device memory (%s at %s, from a buffer "
                        "a host copy filled, with no kernel launched since): the outputs must be computed by kernels",
                        b->name.c_str(), call, at.c_str());
        else if (!b && kind != 1 && (kind == 2 || inside_device(a, n)) &&
                 (kind == 3 ? tainted(src, n) : !inside_device(src, n) || tainted(src, n))) {
            g_tainted.push_back(Span{a, a + n});  // host data in device memory (or a symbol)
            if (kind != 3 && !inside_device(src, n) && n >= 64 && !one_word(s, n))
                g_host_copies.push_back(HostCopy{n, fnv(s, n), line, call});
        }
    }
    if (n) mark_set(d, n);
    DeviceOpen open;
    if (kind == 1) std::memset(d, value, n);
    else std::memmove(d, s, n);
}

// A pitched copy's rows: [p, p + (height-1)*pitch + width). Where it starts inside a launch buffer or a
// cudaMalloc block it must end there too (on a GPU the rows past the end write another allocation, or fault).
bool rows_fit(const void* p, size_t pitch, size_t width, size_t height, const char* what, const char* call, int line) {
    const uintptr_t a = (uintptr_t)p, extent = (height - 1) * pitch + width;
    uintptr_t hi = 0;
    const char* name = nullptr;
    for (const Buf& b : g_bufs)
        if (a - b.lo < b.hi - b.lo) { hi = b.hi; name = b.name.c_str(); break; }
    if (!name)
        for (const Span& b : g_blocks)
            if (a - b.lo < b.hi - b.lo) { hi = b.hi; name = "a cudaMalloc block"; break; }
    if (!name || extent <= hi - a) return true;
    report_host("%s at %s:%d: the %s's %zu rows of %zu bytes, %zu bytes apart, end %zu bytes past the end of %s "
                "(%zu bytes from the row's start to the end): check the pitch (in bytes) and the height",
                call, base_name().c_str(), line, what, height, width, pitch, (size_t)(extent - (hi - a)), name,
                (size_t)(hi - a));
    return false;
}

}  // namespace

void device_copy(void* d, const void* s, size_t n, int kind, int value, int line) {
    static const char* const calls[] = {"cudaMemcpy", "cudaMemset", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol"};
    copy_checked(d, s, n, kind, value, line, calls[kind]);
}

size_t device_pitch(size_t width) { return (std::max<size_t>(width, 1) + 511) / 512 * 512; }

int device_copy2d(void* d, size_t dpitch, const void* s, size_t spitch, size_t width, size_t height, int kind,
                  int value, int line) {
    const char* call = kind == 1 ? "cudaMemset2D" : "cudaMemcpy2D";
    if (!width || !height) return 0;
    // A GPU refuses a pitch below the width (rows would overlap) or above cudaDeviceProp::memPitch, and copies nothing.
    const size_t max_pitch = (size_t)1 << 31;
    if (width > dpitch || dpitch > max_pitch || (kind == 0 && (width > spitch || spitch > max_pitch))) {
        set_status(cudaErrorInvalidPitchValue);
        return cudaErrorInvalidPitchValue;
    }
    if (g_device && (!rows_fit(d, dpitch, width, height, "destination", call, line) ||
                     (kind == 0 && !rows_fit(s, spitch, width, height, "source", call, line))))
        return 0;  // reported; copying would write past a buffer
    DeviceOpen open;  // once for every row (a row's own copy would open and close the pages: 2 mprotects a row)
    for (size_t r = 0; r < height; ++r)
        copy_checked((char*)d + r * dpitch, kind == 1 ? nullptr : (const char*)s + r * spitch, width, kind, value,
                     line, call);
    return 0;
}

void global_access(const void* p, size_t n, bool write, const void* pc) {
    uintptr_t a = (uintptr_t)p;
    const Output* b = find_output(a);
    if (!b) return;  // an input (the window spans every buffer the profile or this detector watches)
    const size_t i = b - g_outputs.data();
    std::vector<GShadow>& sh = g_shadow[i];
    const bool atomics = i < g_ashadow.size() && !g_ashadow[i].empty();
    const uint32_t me = block_linear(blockIdx) * (uint32_t)g_launch.nthreads + (uint32_t)g_linear;
    const uint64_t L = g_launch_clock;
    for (size_t w = (a - b->lo) / 4; w <= (a + n - 1 - b->lo) / 4 && w < sh.size(); ++w) {
        GShadow& s = sh[w];
        bool wrote = s.w_clock >= L && !ordered(s.w_who, s.w_clock, me);
        if (!write) {
            if (wrote)
                race(*b, w, "reads", pc, s.w_who, "wrote", s.w_pc, me, false,
                     s.w_who / (uint32_t)g_launch.nthreads == me / (uint32_t)g_launch.nthreads ? nullptr : kOtherBlock);
            if (s.set_call != g_call && !b->scratch) unset_read(*b, w, "reads", pc, me);
            if (atomics) check_atomics(*b, w, "reads", pc, me);
            if (s.r_clock < L || s.r_who == me) { s.r_who = me; s.r_clock = g_clock; s.r_pc = pc; }
            else { s.r2_who = me; s.r2_clock = g_clock; s.r2_pc = pc; }
            continue;
        }
        if (s.r_clock >= L && !ordered(s.r_who, s.r_clock, me)) race(*b, w, "writes", pc, s.r_who, "read", s.r_pc, me);
        if (atomics) check_atomics(*b, w, "writes", pc, me);
        if (s.r2_clock >= L && !ordered(s.r2_who, s.r2_clock, me))
            race(*b, w, "writes", pc, s.r2_who, "read", s.r2_pc, me);
        if (wrote && g_suspects.size() < kMaxSuspects) {
            uint32_t v;
            std::memcpy(&v, (const void*)(b->lo + w * 4), 4);
            g_suspects.push_back({b, w, s.w_who, me, s.w_pc, pc, v});
        }
        s.w_who = me; s.w_clock = g_clock; s.w_pc = pc; s.set_call = g_call;
    }
}

// Each buffer's allocation: one of cuda_emu_set_allocations', else the cudaMalloc block that holds it; the window
// spans those with room outside their buffer.
static void open_oob_window() {
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (Buf& b : g_bufs) {
        b.alo = b.ahi = 0;
        for (const Alloc& al : g_allocs)
            if (b.lo >= al.lo && b.hi <= al.hi) { b.alo = al.lo; b.ahi = al.hi; break; }
        if (!b.ahi)
            for (const Span& blk : g_blocks)
                if (!blk.name && b.lo >= blk.lo && b.hi <= blk.hi) { b.alo = blk.lo; b.ahi = blk.hi; break; }
        if (b.alo == b.lo && b.ahi == b.hi) b.alo = b.ahi = 0;  // no room around it
        if (b.ahi) lo = std::min(lo, b.alo), hi = std::max(hi, b.ahi);
    }
    if (hi > lo) { g_oob_lo = lo; g_oob_span = hi - lo; }
    else { g_oob_lo = 0; g_oob_span = 0; }
}

void globals_new_launch() {
    take_host_fault();  // the launcher's host code before this launch
    device_open();      // closed in globals_end_launch
    g_launch_clock = g_clock + 1;  // the first block's interval starts after it
    g_suspects.clear();
    g_race_outputs = (g_flags & 1) && !g_outputs.empty();
    g_tainted.clear();  // a kernel may overwrite what a host copy put in device memory
    g_in_launch = true;
    update_host_window();  // closed: kernels may touch device memory
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (const Buf& b : g_bufs)
        if (!b.output) lo = std::min(lo, b.lo), hi = std::max(hi, b.hi);
    if (hi > lo) { g_in_lo = lo; g_in_span = hi - lo; }
    open_oob_window();
    g_releases.clear();
    if (!g_race_outputs) return;
    // the cudaMalloc blocks are watched as the outputs are, for this launch (with the shadows they had)
    g_outputs.resize(g_n_outputs);
    g_outputs.reserve(g_n_outputs + g_blocks.size());
    for (const Span& blk : g_blocks) {
        if (blk.buffer) continue;  // the runner's buffers: watched as the launch's outputs and inputs, when they are
        g_outputs.push_back(Output{blk.lo, blk.hi, blk.name ? blk.name : "", 0, true, blk.line});
        g_out_lo = std::min(g_out_lo, blk.lo);
        g_out_hi = std::max(g_out_hi, blk.hi);
    }
    g_shadow.resize(std::max(g_shadow.size(), g_outputs.size()));
    g_ashadow.resize(std::max(g_ashadow.size(), g_outputs.size()));
    for (size_t i = g_n_outputs; i < g_outputs.size(); ++i) {
        auto& kept = g_scratch_shadow[g_outputs[i].lo];
        g_shadow[i].swap(kept.first);
        g_ashadow[i].swap(kept.second);
        size_t words = (g_outputs[i].hi - g_outputs[i].lo + 3) / 4;
        if (g_shadow[i].size() < words) g_shadow[i].resize(words);
        if (!g_ashadow[i].empty() && g_ashadow[i].size() < words) g_ashadow[i].resize(words);
    }
}

// The scratch blocks' shadows back to where they are kept; only the outputs are watched between launches.
static void unwatch_scratch() {
    for (size_t i = g_n_outputs; i < g_outputs.size(); ++i) {
        auto& kept = g_scratch_shadow[g_outputs[i].lo];
        g_shadow[i].swap(kept.first);
        g_ashadow[i].swap(kept.second);
        g_shadow[i].clear();
        g_ashadow[i].clear();
    }
    g_outputs.resize(g_n_outputs);
    g_out_lo = g_outputs_lo;
    g_out_hi = g_outputs_hi;
}

void globals_new_block() {
    g_fence.assign(g_launch.nthreads, 0);
    g_acquires.clear();
}

void thread_fence() {
    if (!g_in_launch || (size_t)g_linear >= g_fence.size()) return;  // host code's: orders nothing here
    g_fence[g_linear] = g_clock;
    ++g_clock;  // the thread's later accesses come after it
}

void globals_window(uintptr_t& lo, uintptr_t& span) {
    if (!g_race_outputs) return;
    uintptr_t hi = span ? lo + span : 0;
    lo = span ? std::min(lo, g_out_lo) : g_out_lo;
    hi = std::max(hi, g_out_hi);
    span = hi - lo;
}

void globals_end_launch() {
    DeviceOpen open;  // the suspects' values are read below
    device_close();   // the launch's (globals_new_launch)
    g_race_outputs = false;  // (checks.cpp closes the window at the next launch or block)
    g_in_lo = g_in_span = 0;
    g_oob_lo = g_oob_span = 0;
    g_in_launch = false;
    update_host_window();
    struct Unwatch { ~Unwatch() { unwatch_scratch(); } } unwatch;  // after the suspects, which point into g_outputs
    if (g_abort) return;  // the first error is the one reported
    for (const Suspect& s : g_suspects) {
        uint32_t now;
        std::memcpy(&now, (const void*)(s.buf->lo + s.word * 4), 4);
        if (now == s.first_value) continue;  // both wrote the same value
        const std::string first = source_line(s.first_pc), second = source_line(s.second_pc);
        // one statement: nothing can order it against itself; its index maps two threads to one element
        const bool one = first == second && first != "an unknown line";
        report("global-memory race on %s: %s wrote it at %s and %s wrote a different value at %s in the same "
               "launch, with nothing ordering the two (threads of different blocks are not, but through an atomic flag "
               "and __threadfence(); in a block only __syncthreads() is). On a GPU either value may be the one left: %s",
               element(*s.buf, s.word).c_str(), who_name(s.first).c_str(), first.c_str(), who_name(s.second).c_str(),
               second.c_str(),
               is_mask(*s.buf) ? kMaskWord
               : one ? "a write-write race of one statement, whose index does not tell the threads apart (a threadIdx "
                       "or blockIdx term missing or divided away?): give every element one thread that writes it"
                     : "give every element one thread that writes it");
        return;
    }
}

}  // namespace cuda_emu

// The buffers of the next launcher calls (cuda_emu_set_buffers' list): flags bit 0 marks an output,
// bit 1 device memory (every buffer of a CUDA exercise; not for host code, cpu_blocked); cols:
// elements per row (0: one-dimensional), for messages like C[3][17]. The buffers that are not
// outputs are the inputs, which no kernel may write. n = 0 forgets them (after the call).
namespace cuda_emu {
// The launcher call is over: an output that holds exactly the host data the call copied into device memory was
// computed on the host and copied to it by a kernel (the copy's taint does not survive the kernel otherwise).
static void end_of_call() {
    take_host_fault();
    DeviceOpen open;  // the outputs are read
    if (g_device && !g_host_copies.empty())
        for (size_t i = 0; i < g_n_outputs && i < g_outputs.size(); ++i) {
            const Output& o = g_outputs[i];
            const size_t n = o.hi - o.lo;
            for (const HostCopy& c : g_host_copies)
                if (c.n == n && c.hash == fnv((const void*)o.lo, n)) {
                    report_host("the launcher computed %s on the host: after the call it holds exactly the host data "
                                "copied into device memory at %s:%d (%s), which a kernel copied into it; the outputs "
                                "must be computed by kernels", o.name.c_str(), base_name().c_str(), c.line, c.call);
                    break;
                }
        }
    g_host_copies.clear();
}
}  // namespace cuda_emu

extern "C" __attribute__((visibility("default"))) void cuda_emu_set_outputs(int n, const char* const* names,
                                                                           const unsigned long long* ptrs,
                                                                           const unsigned long long* bytes,
                                                                           const int* cols, const int* flags) {
    using namespace cuda_emu;
    end_of_call();
    if (n == 0) g_allocs.clear();  // the call is over
    g_outputs.clear();
    g_out_lo = UINTPTR_MAX;
    g_out_hi = 0;
    g_bufs.clear();
    g_device = false;
    g_host_reported = false;
    for (int i = 0; i < n; ++i) {
        if (!bytes[i]) continue;
        g_bufs.push_back(Buf{(uintptr_t)ptrs[i], (uintptr_t)(ptrs[i] + bytes[i]), names[i], cols[i], (flags[i] & 1) != 0});
        g_device |= (flags[i] & 2) != 0;
    }
    update_host_window();
    for (int i = 0; i < n; ++i) {
        if (!(flags[i] & 1) || !bytes[i]) continue;
        g_outputs.push_back(Output{(uintptr_t)ptrs[i], (uintptr_t)(ptrs[i] + bytes[i]), names[i], cols[i]});
        g_out_lo = std::min(g_out_lo, (uintptr_t)ptrs[i]);
        g_out_hi = std::max(g_out_hi, (uintptr_t)(ptrs[i] + bytes[i]));
    }
    if (g_outputs.empty()) g_out_lo = 0;
    else ++g_call;  // a new launcher call: nothing in its outputs is set yet
    g_n_outputs = g_outputs.size();
    g_outputs_lo = g_out_lo;
    g_outputs_hi = g_out_hi;
    if (g_shadow.size() < g_outputs.size()) g_shadow.resize(g_outputs.size());
    for (size_t i = 0; i < g_outputs.size(); ++i) {
        size_t words = (g_outputs[i].hi - g_outputs[i].lo + 3) / 4;
        if (g_shadow[i].size() < words) g_shadow[i].resize(words);
    }
}

extern "C" __attribute__((visibility("default"))) void cuda_emu_set_allocations(int n, const unsigned long long* ptrs,
                                                                              const unsigned long long* bytes) {
    using namespace cuda_emu;
    g_allocs.clear();
    for (int i = 0; i < n; ++i)
        if (bytes[i]) g_allocs.push_back(Alloc{(uintptr_t)ptrs[i], (uintptr_t)(ptrs[i] + bytes[i])});
}

extern "C" CUDA_EMU_API void* cuda_emu_memcpy(void* d, const void* s, size_t n) noexcept {
    cuda_emu::mem_range(d, s, n, __builtin_return_address(0));
    return std::memcpy(d, s, n);
}
extern "C" CUDA_EMU_API void* cuda_emu_memmove(void* d, const void* s, size_t n) noexcept {
    cuda_emu::mem_range(d, s, n, __builtin_return_address(0));
    return std::memmove(d, s, n);
}
extern "C" CUDA_EMU_API void* cuda_emu_memset(void* d, int v, size_t n) noexcept {
    cuda_emu::mem_range(d, nullptr, n, __builtin_return_address(0));
    return std::memset(d, v, n);
}

// The caller's device memory (grader's native runner): what cudaMalloc, cudaFree and an unchecked cudaMemcpy do,
// for a caller that reaches this runtime through the kernel library (dlsym), not through cuda_emu.h.
extern "C" __attribute__((visibility("default"))) void* cuda_emu_device_alloc(unsigned long long bytes) {
    void* p = cuda_emu::device_malloc((size_t)bytes, 0);
    if (p) cuda_emu::g_blocks.back().buffer = true;
    return p;
}
extern "C" __attribute__((visibility("default"))) void cuda_emu_device_free(void* p) { cuda_emu::device_free(p); }
extern "C" __attribute__((visibility("default"))) void cuda_emu_device_copy(void* dst, const void* src,
                                                                           unsigned long long bytes) {
    cuda_emu::DeviceOpen open;  // the runtime's own copy: never reported
    std::memmove(dst, src, (size_t)bytes);
}
