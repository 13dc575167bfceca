// The race detector for the launcher's outputs in global memory. The caller (grader.binding
// on the CPU backend) names the outputs before each launcher call with cuda_emu_set_outputs
// (beside cuda_emu_set_buffers, the access profile's names for every buffer); checks.cpp's
// access hooks send the accesses inside the global window here.
//
// Races: blocks run one after another here, so a non-atomic `C[i] += partial` from several
// blocks (or unordered threads of one block) adds up correctly on the CPU and loses updates on
// a GPU. While a launch runs, every load and store to an output is checked, as the shared-memory
// detector does: a thread that reads an element another thread wrote in this launch, or writes
// one another thread read, with nothing ordering the two (threads of different blocks never are;
// within a block a __syncthreads() or a warp sync of both lanes), is a race. Two writes of
// different values are one too (checked when the launch ends: equal values are harmless).
// Atomics are not instrumented, so atomicAdd and friends never count.
#include "runtime_internal.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace cuda_emu {

bool g_race_outputs = false;

namespace {

struct Output {
    uintptr_t lo, hi;
    std::string name;  // the launcher's parameter: C, Y, mask, dX
    int cols;          // elements per row (0: one-dimensional)
};
std::vector<Output> g_outputs;
uintptr_t g_out_lo = 0, g_out_hi = 0;

struct GShadow {  // one per 4-byte word of an output
    uint64_t w_clock = 0, r_clock = 0, r2_clock = 0;
    uint32_t w_who = 0, r_who = 0, r2_who = 0;  // block_linear * nthreads + thread
    const void *w_pc = nullptr, *r_pc = nullptr, *r2_pc = nullptr;
};

struct Suspect {  // a second unordered write: a race if the values differ
    const Output* buf;
    size_t word;
    uint32_t first, second;
    const void *first_pc, *second_pc;
    uint32_t first_value;
};

std::vector<std::vector<GShadow>> g_shadow;  // per buffer (kept between calls: clocks tell stale entries)
std::vector<Suspect> g_suspects;
uint64_t g_launch_clock = 0;
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
    if (b.cols > 0) return b.name + "[" + std::to_string(i / b.cols) + "][" + std::to_string(i % b.cols) + "]";
    return b.name + "[" + std::to_string(i) + "]";
}

// Is what thread `who` did at `clock` ordered before the running thread's access?
bool ordered(uint32_t who, uint64_t clock, uint32_t me) {
    if (who == me) return true;
    unsigned n = (unsigned)g_launch.nthreads;
    if (who / n != me / n) return false;  // another block
    if (clock < g_block_sync) return true;  // a __syncthreads() since
    int a = (int)(who % n), b = (int)(me % n);
    return a / 32 == b / 32 && warp_synced(a, clock, b);
}

[[noreturn]] void race(const Output& b, size_t word, const char* what_me, const void* pc, uint32_t other,
                       const char* what_other, const void* opc, uint32_t me) {
    report("global-memory race on %s: %s %s it at %s, but %s %s it at %s in the same launch, and nothing orders "
           "the two (threads of different blocks never are; in a block only __syncthreads() is). On a GPU one "
           "update is lost: use atomicAdd, or give every element one thread that writes it",
           element(b, word).c_str(), who_name(me).c_str(), what_me, source_line(pc).c_str(),
           who_name(other).c_str(), what_other, source_line(opc).c_str());
    abandon_thread();
    __builtin_unreachable();
}

const Output* find_output(uintptr_t a) {
    for (const Output& b : g_outputs)
        if (a - b.lo < b.hi - b.lo) return &b;
    return nullptr;
}

}  // namespace

void global_access(const void* p, size_t n, bool write, const void* pc) {
    uintptr_t a = (uintptr_t)p;
    const Output* b = find_output(a);
    if (!b) return;  // an input (the window spans every buffer the profile or this detector watches)
    std::vector<GShadow>& sh = g_shadow[b - g_outputs.data()];
    const uint32_t me = block_linear(blockIdx) * (uint32_t)g_launch.nthreads + (uint32_t)g_linear;
    const uint64_t L = g_launch_clock;
    for (size_t w = (a - b->lo) / 4; w <= (a + n - 1 - b->lo) / 4 && w < sh.size(); ++w) {
        GShadow& s = sh[w];
        bool wrote = s.w_clock >= L && !ordered(s.w_who, s.w_clock, me);
        if (!write) {
            if (wrote) race(*b, w, "reads", pc, s.w_who, "wrote", s.w_pc, me);
            if (s.r_clock < L || s.r_who == me) { s.r_who = me; s.r_clock = g_clock; s.r_pc = pc; }
            else { s.r2_who = me; s.r2_clock = g_clock; s.r2_pc = pc; }
            continue;
        }
        if (s.r_clock >= L && !ordered(s.r_who, s.r_clock, me)) race(*b, w, "writes", pc, s.r_who, "read", s.r_pc, me);
        if (s.r2_clock >= L && !ordered(s.r2_who, s.r2_clock, me))
            race(*b, w, "writes", pc, s.r2_who, "read", s.r2_pc, me);
        if (wrote && g_suspects.size() < kMaxSuspects) {
            uint32_t v;
            std::memcpy(&v, (const void*)(b->lo + w * 4), 4);
            g_suspects.push_back({b, w, s.w_who, me, s.w_pc, pc, v});
        }
        s.w_who = me; s.w_clock = g_clock; s.w_pc = pc;
    }
}

void globals_new_launch() {
    g_launch_clock = g_clock + 1;  // the first block's interval starts after it
    g_suspects.clear();
    g_race_outputs = (g_flags & 1) && !g_outputs.empty();
}

void globals_window(uintptr_t& lo, uintptr_t& span) {
    if (!g_race_outputs) return;
    uintptr_t hi = span ? lo + span : 0;
    lo = span ? std::min(lo, g_out_lo) : g_out_lo;
    hi = std::max(hi, g_out_hi);
    span = hi - lo;
}

void globals_end_launch() {
    g_race_outputs = false;  // (checks.cpp closes the window at the next launch or block)
    if (g_abort) return;  // the first error is the one reported
    for (const Suspect& s : g_suspects) {
        uint32_t now;
        std::memcpy(&now, (const void*)(s.buf->lo + s.word * 4), 4);
        if (now == s.first_value) continue;  // both wrote the same value
        report("global-memory race on %s: %s wrote it at %s and %s wrote a different value at %s in the same "
               "launch, with nothing ordering the two (threads of different blocks never are; in a block only "
               "__syncthreads() is). On a GPU either value may be the one left: give every element one thread "
               "that writes it", element(*s.buf, s.word).c_str(), who_name(s.first).c_str(),
               source_line(s.first_pc).c_str(), who_name(s.second).c_str(), source_line(s.second_pc).c_str());
        return;
    }
}

}  // namespace cuda_emu

// The outputs of the next launcher calls (a subset of cuda_emu_set_buffers' list): flags bit 0
// marks an output; cols: elements per row (0: one-dimensional), for messages like C[3][17].
extern "C" __attribute__((visibility("default"))) void cuda_emu_set_outputs(int n, const char* const* names,
                                                                           const unsigned long long* ptrs,
                                                                           const unsigned long long* bytes,
                                                                           const int* cols, const int* flags) {
    using namespace cuda_emu;
    g_outputs.clear();
    g_out_lo = UINTPTR_MAX;
    g_out_hi = 0;
    for (int i = 0; i < n; ++i) {
        if (!(flags[i] & 1) || !bytes[i]) continue;
        g_outputs.push_back(Output{(uintptr_t)ptrs[i], (uintptr_t)(ptrs[i] + bytes[i]), names[i], cols[i]});
        g_out_lo = std::min(g_out_lo, (uintptr_t)ptrs[i]);
        g_out_hi = std::max(g_out_hi, (uintptr_t)(ptrs[i] + bytes[i]));
    }
    if (g_outputs.empty()) g_out_lo = 0;
    if (g_shadow.size() < g_outputs.size()) g_shadow.resize(g_outputs.size());
    for (size_t i = 0; i < g_outputs.size(); ++i) {
        size_t words = (g_outputs[i].hi - g_outputs[i].lo + 3) / 4;
        if (g_shadow[i].size() < words) g_shadow[i].resize(words);
    }
}
