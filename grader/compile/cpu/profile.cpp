// The access profile: what Nsight Compute would count for a kernel's memory instructions.
//
// It receives the same access events as the race detector (checks.cpp: the __tsan_* hooks call
// profile_access for shared memory, and for global memory: the launch's buffers that the caller
// named with cuda_emu_set_buffers, and every other piece of device memory, which a kernel can
// stage the operands in as well (a copy of A read naively is still A's traffic): cudaMalloc's
// blocks, named "scratch", and the __device__ / __constant__ variables, "scratch (their name)";
// grader/judge/profile.py counts them in every global figure). A warp-level instruction is the set of accesses that the lanes of
// one warp make at the same source-level access (site) for the same time (the k-th execution by
// each lane since the last barrier): lanes run one after another here, so accesses wait in
// groups, keyed by (warp, site, k), until the next barrier or the block's end, and are then
// counted. A site is a code address (pc) of the CPU build, except that g++ may copy one access
// into several code paths (jump threading: `y = x > 0 ? x : 0; Y[i] = y;` became a store of x
// and a store of 0 at two addresses, one per branch), so lanes that diverge there would make two
// half-full instructions where nvcc has one: grader/judge/profile.py passes the code addresses that
// share their source location (inline chain of function, file and line; cuda_emu_profile_sites)
// and such addresses are one site.
//   global: 1 request per instruction; sectors = distinct 32-byte segments its lanes touch;
//           ideal = ceil(distinct bytes its lanes ask for / 32), what they would take coalesced;
//   shared: 1 request per instruction; wavefronts as the bank model below; conflicts =
//           wavefronts - the ideal count (what the same bytes would take without conflicts).
// Bank model (32 banks of 4 bytes, calibrated on the H200's ncu counts, see
// kernels/results/profile_vs_ncu.md): lanes are served in passes of 128 bytes per lane-group:
// 32-bit and 64-bit accesses as one warp, 128-bit accesses per half-warp; in a pass, distinct
// words of one bank serialise (the same word is a broadcast), so a pass takes
// max(distinct words in any bank, ceil(distinct words / 32)) wavefronts, ideal
// ceil(distinct words / 32).
// nvcc merges a lane's consecutive 32-bit shared loads from one array into 64/128-bit loads
// when it can prove the alignment (the row of a tile, unrolled); the CPU compiler does not.
// So before counting, groups of one warp's interval that are 2 or 4 consecutive words of the
// same array for every lane, aligned, and aligned like that in every warp and every occurrence
// of the block (as a compile-time proof would be), are counted as one wider instruction.
//
// Only some blocks are recorded (profile_new_block): blocks fall into classes by whether they
// are the last in x, y, z (edge tiles behave differently); each class is sampled, chosen from a
// seed, and its counts are scaled by (blocks in class) / (sampled in class).
#include "runtime_internal.h"

#include <dlfcn.h>
#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace cuda_emu {
bool g_profile_block = false;  // read by checks.cpp: record this block's accesses
bool g_profile_tally = false;  // ... or, in a sampled launch, only count the bytes it loads (profile_tally)

namespace {

struct Buffer {
    int name;  // index into g_buffer_names (launchers name the same buffer alike: "mask")
    uintptr_t lo = 0, hi = 0;
};

struct SiteKey {
    const void* pc;
    int buffer;  // index into g_buffers (global) or the race detector's range index (shared)
    int space;   // 0 shared, 1 global
    int write;
    bool operator==(const SiteKey& o) const {
        return pc == o.pc && buffer == o.buffer && space == o.space && write == o.write;
    }
};
struct SiteHash {
    size_t operator()(const SiteKey& k) const {
        return std::hash<const void*>()(k.pc) ^ ((size_t)k.buffer << 20) ^ ((size_t)k.space << 30) ^ k.write;
    }
};

struct Stats {
    double requests = 0, units = 0, ideal = 0, lanes = 0, bytes = 0;  // units: sectors or wavefronts
                                                                      // ideal: sectors or wavefronts
    double requests_as_written = 0, units_as_written = 0;             // before merging (shared)
    double one_sector = 0;  // global: requests of one sector, their ideal (a broadcast, lanes within one sector)
};

struct Group {
    uint32_t mask = 0;
    uint32_t size = 0;  // bytes per lane (the widest lane)
    const void* pc = nullptr;  // the code address of its first lane, and which execution of that
    uint32_t pc_occ = 0;       // address (not of the site) it was: merge_accesses pairs by these
    uint64_t addr[32];  // global: the address; shared: offset in the block's shared-memory view
};

struct TraceRec {  // one lane's access (numpy dtype in grader/judge/profile.py)
    int32_t launch, site, bx, by, bz, warp, occurrence, lane;
    uint64_t offset;  // byte offset in its buffer
    uint32_t size, merged;
};

struct SharedRange { std::string name; uintptr_t vbase = 0; };

struct LaunchProfile {
    std::string kernel;
    dim3 grid, block;
    size_t smem = 0;
    long long blocks_total = 0, blocks_profiled = 0;
    std::string sample;            // how the blocks were chosen
    std::unordered_map<int, Stats> stats;  // site -> counts (scaled)
    double loads_all = 0;          // bytes the lanes of every block loaded from the launch's buffers (not scaled)
};

// configuration (cuda_emu_profile_configure)
int g_mode = 0;  // 0 off, 1 sample, 2 all blocks, 3 the listed blocks
uint64_t g_seed = 1;
int g_budget = 8;
bool g_trace = false;
std::vector<uint3> g_listed;

std::vector<Buffer> g_named;    // cuda_emu_set_buffers'
std::vector<Buffer> g_buffers;  // ... and the device memory outside them, as each launch starts
std::vector<std::string> g_buffer_names;
std::vector<SharedRange> g_shared;
uintptr_t g_shared_vtop = 0;

std::vector<SiteKey> g_sites;
std::unordered_map<SiteKey, int, SiteHash> g_site_ids;
// code addresses of the CPU build -> the site's address (cuda_emu_profile_sites), as offsets in the library
std::unordered_map<uintptr_t, uintptr_t> g_canon;
uintptr_t g_lib_base = 0;
// per code address (the raw key): its own id (for pc_occ) and its site's
std::unordered_map<SiteKey, int, SiteHash> g_raw_ids;
struct CacheEntry { SiteKey key; int id, raw; };
CacheEntry g_cache[1024];

std::vector<LaunchProfile> g_launches;
std::vector<TraceRec> g_trace_recs;
std::string g_text;

// per launch: which blocks are recorded, with their weight
std::unordered_map<long long, double> g_chosen;  // linear block id -> weight
double g_weight = 0;
uint3 g_block{};  // the recorded block (blockIdx moves on before its last interval is counted)

// per block: occurrences and open groups
int g_nthreads = 0, g_nwarps = 0;
uint32_t g_epoch = 1;
std::vector<std::vector<uint64_t>> g_occ;  // per thread, per site: (epoch << 32) | count
std::vector<std::vector<uint64_t>> g_occ_raw;  // per thread, per code address: the same
std::vector<std::vector<Group>> g_groups;  // [warp * g_site_cap + site]
int g_site_cap = 0;
std::vector<int> g_dirty;                  // indices of g_groups with content
std::vector<int> g_trace_base;             // per g_groups index: groups traced in this block before

uint64_t rng_state = 1;
uint64_t rnd() {
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

const void* site_pc(const void* pc) {  // the address that stands for pc's source location
    if (g_canon.empty()) return pc;
    auto it = g_canon.find((uintptr_t)pc - g_lib_base);
    return it == g_canon.end() ? pc : (const void*)(g_lib_base + it->second);
}

int site_id(const void* pc, int buffer, int space, bool write, int& raw) {
    SiteKey k{pc, buffer, space, write};
    CacheEntry& c = g_cache[((uintptr_t)pc >> 1 ^ (uintptr_t)buffer * 7 ^ (uintptr_t)space * 13 ^ write) & 1023];
    if (c.id > 0 && c.key == k) { raw = c.raw; return c.id - 1; }
    auto r = g_raw_ids.find(k);
    raw = r != g_raw_ids.end() ? r->second : (int)g_raw_ids.size();
    if (r == g_raw_ids.end()) g_raw_ids.emplace(k, raw);
    SiteKey s{site_pc(pc), buffer, space, write};
    auto it = g_site_ids.find(s);
    int id;
    if (it != g_site_ids.end()) id = it->second;
    else {
        id = (int)g_sites.size();
        g_sites.push_back(s);
        g_site_ids.emplace(s, id);
    }
    c.key = k; c.id = id + 1; c.raw = raw;
    return id;
}

void grow_sites(int need) {
    if (need <= g_site_cap) return;
    int cap = std::max(need, g_site_cap * 2 + 16);
    std::vector<std::vector<Group>> groups((size_t)g_nwarps * cap);
    for (int w = 0; w < g_nwarps; ++w)
        for (int s = 0; s < g_site_cap; ++s) groups[(size_t)w * cap + s].swap(g_groups[(size_t)w * g_site_cap + s]);
    for (int& d : g_dirty) d = (d / g_site_cap) * cap + d % g_site_cap;
    if (g_trace) {
        std::vector<int> base((size_t)g_nwarps * cap, 0);
        for (int w = 0; w < g_nwarps; ++w)
            for (int s = 0; s < g_site_cap && (size_t)(w * g_site_cap + s) < g_trace_base.size(); ++s)
                base[(size_t)w * cap + s] = g_trace_base[(size_t)w * g_site_cap + s];
        g_trace_base.swap(base);
    }
    g_groups.swap(groups);
    g_site_cap = cap;
}

// ---- counting -------------------------------------------------------------------
int distinct_sectors(const Group& g) {
    uint64_t sec[32 * 2];
    int n = 0;
    for (int l = 0; l < 32; ++l) {
        if (!(g.mask >> l & 1)) continue;
        uint64_t a = g.addr[l], e = a + g.size - 1;
        for (uint64_t s = a >> 5; s <= e >> 5 && n < 64; ++s) sec[n++] = s;
    }
    std::sort(sec, sec + n);
    return (int)(std::unique(sec, sec + n) - sec);
}

// ceil(distinct bytes the lanes ask for / 32): the sectors of the same bytes, coalesced
int ideal_sectors(const Group& g) {
    std::pair<uint64_t, uint64_t> iv[32];
    int n = 0;
    for (int l = 0; l < 32; ++l)
        if (g.mask >> l & 1) iv[n++] = {g.addr[l], g.addr[l] + g.size};
    std::sort(iv, iv + n);
    uint64_t bytes = 0, end = 0;
    for (int i = 0; i < n; ++i) {
        uint64_t lo = std::max(iv[i].first, end);
        if (iv[i].second > lo) bytes += iv[i].second - lo;
        end = std::max(end, iv[i].second);
    }
    return (int)((bytes + 31) / 32);
}

// wavefronts and ideal wavefronts of one pass over the lanes in `mask`
void shared_pass(const Group& g, uint32_t mask, double& waves, double& ideal) {
    if (!mask) return;
    if (g.size <= 4) {  // fast paths: every lane the same word (broadcast), or consecutive words
        const int first = __builtin_ctz(mask);
        const uint64_t w0 = g.addr[first] >> 2;
        bool same = true, consecutive = true;
        for (int l = first + 1; l < 32; ++l)
            if (mask >> l & 1) {
                const uint64_t w = g.addr[l] >> 2;
                same = same && w == w0;
                consecutive = consecutive && w == w0 + (uint64_t)(l - first);
            }
        if (same || consecutive) { waves += 1; ideal += 1; return; }
    }
    uint64_t words[32 * 4];
    int n = 0;
    for (int l = 0; l < 32; ++l) {
        if (!(mask >> l & 1)) continue;
        uint64_t a = g.addr[l] >> 2, e = (g.addr[l] + g.size - 1) >> 2;
        for (uint64_t w = a; w <= e && n < 128; ++w) words[n++] = w;
    }
    if (!n) return;
    std::sort(words, words + n);
    n = (int)(std::unique(words, words + n) - words);
    int per_bank[32] = {0}, worst = 0;
    for (int i = 0; i < n; ++i) worst = std::max(worst, ++per_bank[words[i] & 31]);
    int best = (n + 31) / 32;
    waves += std::max(worst, best);
    ideal += best;
}

void shared_wavefronts(const Group& g, double& waves, double& ideal) {
    if (g.size > 8) {  // 128-bit: per half-warp
        shared_pass(g, g.mask & 0xffffu, waves, ideal);
        shared_pass(g, g.mask & 0xffff0000u, waves, ideal);
    } else {
        shared_pass(g, g.mask, waves, ideal);
    }
}

int popcount(uint32_t m) { return __builtin_popcount(m); }

void trace_group(const Group& g, int site, int warp, int occ, uint32_t merged) {
    const SiteKey& k = g_sites[site];
    uint64_t base = g_shared[0].vbase;
    if (k.space) {  // the buffer that holds the first lane's address (several cudaMalloc blocks are "scratch")
        const uint64_t a = g.addr[__builtin_ctz(g.mask)];
        for (const Buffer& b : g_buffers)
            if (b.name == k.buffer && a >= b.lo && a < b.hi) { base = b.lo; break; }
    } else {
        base = g_shared[k.buffer].vbase;
    }
    for (int l = 0; l < 32; ++l)
        if (g.mask >> l & 1)
            g_trace_recs.push_back(TraceRec{(int32_t)g_launches.size() - 1, site, (int)g_block.x, (int)g_block.y,
                                            (int)g_block.z, warp, occ, l, g.addr[l] - base, g.size, merged});
}

// Accesses that nvcc issues as one wider instruction (see the top). Three kinds of partners:
//  - a 16-byte value that the CPU compiler split into 4-byte stores (a float4 built from its
//    components): other instructions of the CPU build, the same execution of them, the next
//    words, in every lane;
//  - a vector load that the CPU compiler split into 4-byte loads (a float4 of B of which only the
//    components are used): the same, but of the same site (one source-level access): scalar
//    loads that merely happen to be aligned (A[k], A[k+1] ... guarded one by one, on lines of
//    their own) stay separate instructions in nvcc's code too;
//  - shared loads of consecutive words by the same lanes (an unrolled loop over a tile's row),
//    also from other occurrences of the same site (the CPU compiler did not unroll).
// Returns, per dirty group-list, which groups are absorbed (0) or widened (2 or 4).
struct MergePlan { std::vector<std::vector<uint8_t>> factor; };

void merge_accesses(MergePlan& plan) {
    plan.factor.assign(g_dirty.size(), {});
    struct Ref { int d, i; };
    std::vector<std::pair<uint64_t, Ref>> by_addr;  // sorted by key (a flat index: no allocation per key)
    auto key_of = [](int warp, const Group& g, uint64_t delta, int kind) {
        int l = __builtin_ctz(g.mask);
        return ((g.addr[l] + delta) * 1315423911ull) ^ ((uint64_t)warp << 48) ^ ((uint64_t)g.mask * 2654435761ull) ^
               ((uint64_t)kind << 60);
    };
    auto kind_of = [](const SiteKey& k) { return k.space * 2 + k.write; };
    for (size_t d = 0; d < g_dirty.size(); ++d) {
        int idx = g_dirty[d], site = idx % g_site_cap, warp = idx / g_site_cap;
        plan.factor[d].assign(g_groups[idx].size(), 1);
        const auto& gs = g_groups[idx];
        const SiteKey& k = g_sites[site];
        for (int i = 0; i < (int)gs.size(); ++i)
            if (gs[i].mask && gs[i].size == 4)
                by_addr.emplace_back(key_of(warp, gs[i], 0, kind_of(k)), Ref{(int)d, i});
    }
    if (by_addr.empty()) return;
    std::sort(by_addr.begin(), by_addr.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    auto partner = [&](int warp, int site, const Group& g, uint64_t delta) -> Ref {
        const SiteKey& k = g_sites[site];
        const bool any_occurrence = k.space == 0 && !k.write;
        const uint64_t key = key_of(warp, g, delta, kind_of(k));
        auto it = std::lower_bound(by_addr.begin(), by_addr.end(), key,
                                   [](const auto& a, uint64_t v) { return a.first < v; });
        for (; it != by_addr.end() && it->first == key; ++it) {
            const Ref& r = it->second;
            const Group& h = g_groups[g_dirty[r.d]][r.i];
            int hsite = g_dirty[r.d] % g_site_cap;
            const SiteKey& hk = g_sites[hsite];
            if (h.mask != g.mask || hk.buffer != k.buffer || kind_of(hk) != kind_of(k)) continue;
            // another instruction of the CPU build, the same execution of it (a site may hold
            // several instructions: the components of a float4 at one source line)
            if (!any_occurrence && (h.pc == g.pc || h.pc_occ != g.pc_occ)) continue;
            if (k.space == 1 && !k.write && hsite != site) continue;  // global loads: one source access
            bool ok = true;
            for (int l = 0; l < 32 && ok; ++l)
                if (g.mask >> l & 1) ok = h.addr[l] == g.addr[l] + delta;
            if (ok) return r;
        }
        return Ref{-1, -1};
    };
    // A run: a group whose lanes are all aligned to the wide access, and its partners. A site's
    // groups are merged only if all of them are (as leader or partner): nvcc's proof holds for
    // every thread, or it does not merge.
    std::unordered_map<int, long long> site_left;  // groups of a site not settled yet
    for (size_t d = 0; d < g_dirty.size(); ++d) {
        int idx = g_dirty[d];
        for (const Group& g : g_groups[idx]) site_left[idx % g_site_cap] += g.mask != 0;
    }
    for (int width : {4, 2}) {
        std::vector<std::vector<Ref>> runs;
        std::vector<std::vector<uint8_t>> taken(g_dirty.size());
        for (size_t d = 0; d < g_dirty.size(); ++d) taken[d].assign(g_groups[g_dirty[d]].size(), 0);
        for (size_t d = 0; d < g_dirty.size(); ++d) {
            int idx = g_dirty[d], site = idx % g_site_cap, warp = idx / g_site_cap;
            const auto& gs = g_groups[idx];
            for (int i = 0; i < (int)gs.size(); ++i) {
                const Group& g = gs[i];
                if (!g.mask || g.size != 4 || plan.factor[d][i] != 1 || taken[d][i]) continue;
                bool ok = true;
                for (int l = 0; l < 32 && ok; ++l)
                    if (g.mask >> l & 1) ok = g.addr[l] % (4 * width) == 0;
                std::vector<Ref> refs{Ref{(int)d, i}};
                for (int j = 1; j < width && ok; ++j) {
                    Ref r = partner(warp, site, g, 4 * j);
                    ok = r.d >= 0 && plan.factor[r.d][r.i] == 1 && !taken[r.d][r.i];
                    refs.push_back(r);
                }
                if (!ok) continue;
                for (const Ref& r : refs) taken[r.d][r.i] = 1;
                runs.push_back(std::move(refs));
            }
        }
        // drop runs touching a site with groups left out, until none is left
        std::vector<uint8_t> alive(runs.size(), 1);
        for (bool changed = true; changed;) {
            changed = false;
            std::unordered_map<int, long long> covered;
            for (size_t r = 0; r < runs.size(); ++r)
                if (alive[r])
                    for (const Ref& x : runs[r]) covered[g_dirty[x.d] % g_site_cap]++;
            for (size_t r = 0; r < runs.size(); ++r) {
                if (!alive[r]) continue;
                for (const Ref& x : runs[r]) {
                    int site = g_dirty[x.d] % g_site_cap;
                    if (covered[site] != site_left[site]) { alive[r] = 0; changed = true; break; }
                }
            }
        }
        for (size_t r = 0; r < runs.size(); ++r) {
            if (!alive[r]) continue;
            plan.factor[runs[r][0].d][runs[r][0].i] = (uint8_t)width;
            for (size_t j = 1; j < runs[r].size(); ++j) plan.factor[runs[r][j].d][runs[r][j].i] = 0;
            for (const Ref& x : runs[r]) site_left[g_dirty[x.d] % g_site_cap]--;
        }
    }
}

void flush() {
    if (g_dirty.empty()) return;
    LaunchProfile& P = g_launches.back();
    MergePlan plan;
    merge_accesses(plan);
    const double w = g_weight;
    for (size_t d = 0; d < g_dirty.size(); ++d) {
        int idx = g_dirty[d], site = idx % g_site_cap, warp = idx / g_site_cap;
        auto& gs = g_groups[idx];
        const SiteKey& k = g_sites[site];
        Stats& S = P.stats[site];
        for (size_t i = 0; i < gs.size(); ++i) {
            Group& g = gs[i];
            if (!g.mask) continue;
            uint8_t f = plan.factor[d][i];
            S.lanes += w * popcount(g.mask);
            S.bytes += w * popcount(g.mask) * g.size;
            if (k.space) {
                int sectors = distinct_sectors(g), ideal = ideal_sectors(g);
                S.requests_as_written += w;
                S.units_as_written += w * sectors;
                if (f > 1) {  // counted as one f*4-byte access
                    Group wide = g;
                    wide.size = 4 * f;
                    sectors = distinct_sectors(wide);
                    ideal = ideal_sectors(wide);
                }
                if (f) {
                    S.requests += w;
                    S.units += w * sectors;
                    S.ideal += w * ideal;
                    if (sectors == 1 && ideal == 1) S.one_sector += w;
                }
            } else {
                double waves = 0, ideal = 0;
                shared_wavefronts(g, waves, ideal);
                S.requests_as_written += w;
                S.units_as_written += w * waves;
                if (f > 1) {  // counted as one f*4-byte load
                    Group wide = g;
                    wide.size = 4 * f;
                    waves = ideal = 0;
                    shared_wavefronts(wide, waves, ideal);
                }
                if (f) {
                    S.requests += w;
                    S.units += w * waves;
                    S.ideal += w * ideal;
                }
            }
            if (g_trace) trace_group(g, site, warp, g_trace_base[idx] + (int)i, f);
            g.mask = 0;
        }
        if (g_trace) g_trace_base[idx] += (int)gs.size();
        gs.clear();
    }
    g_dirty.clear();
    ++g_epoch;
}

std::string dims(dim3 d) {
    return std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z);
}

}  // namespace

void profile_shared_range(int id, const char* name, size_t bytes) {
    if ((int)g_shared.size() <= id) g_shared.resize(id + 1);
    g_shared[id].name = name;
    g_shared[id].vbase = g_shared_vtop;
    g_shared_vtop = (g_shared_vtop + bytes + 127) & ~(uintptr_t)127;  // each array starts at bank 0
}

uintptr_t profile_shared_vbase(int id) { return g_shared[id].vbase; }

void profile_global_window(uintptr_t& lo, uintptr_t& span) {
    lo = UINTPTR_MAX;
    uintptr_t hi = 0;
    for (const Buffer& b : g_buffers) { lo = std::min(lo, b.lo); hi = std::max(hi, b.hi); }
    span = hi > lo ? hi - lo : 0;
    if (!span) lo = 0;
}

namespace {
int name_id(const std::string& name) {
    auto it = std::find(g_buffer_names.begin(), g_buffer_names.end(), name);
    if (it != g_buffer_names.end()) return (int)(it - g_buffer_names.begin());
    g_buffer_names.push_back(name);
    return (int)g_buffer_names.size() - 1;
}

// The launch's global memory: the named buffers first (they win where a block holds one), then the rest of
// device memory (a kernel cannot allocate any while it runs).
void watch_device_memory() {
    static std::vector<DeviceSpan> spans;
    device_memory(spans);
    g_buffers = g_named;
    for (const DeviceSpan& d : spans)
        if (d.hi > d.lo)
            g_buffers.push_back(Buffer{name_id(d.name ? "scratch (" + std::string(d.name) + ")" : "scratch"), d.lo, d.hi});
}

}  // namespace

void profile_new_launch() {
    g_profile_block = false;
    if (!g_mode) return;
    watch_device_memory();
    const LaunchInfo& L = g_launch;
    g_launches.emplace_back();
    LaunchProfile& P = g_launches.back();
    P.kernel = L.kernel; P.grid = L.grid; P.block = L.block; P.smem = L.smem;
    const long long gx = L.grid.x, gy = L.grid.y, gz = L.grid.z, total = gx * gy * gz;
    P.blocks_total = total;
    g_profile_tally = g_mode == 1;  // a sample stands for the launch only if it loads its share (grader/judge/profile.py)
    g_chosen.clear();
    g_nthreads = L.nthreads;
    g_nwarps = (g_nthreads + 31) / 32;
    g_groups.assign((size_t)g_nwarps * g_site_cap, {});
    g_occ.assign(g_nthreads, {});
    g_occ_raw.assign(g_nthreads, {});
    g_dirty.clear();
    if (g_mode == 2) {
        for (long long b = 0; b < total; ++b) g_chosen[b] = 1.0;
        P.sample = "";
    } else if (g_mode == 3) {
        for (const uint3& b : g_listed)
            if (b.x < L.grid.x && b.y < L.grid.y && b.z < L.grid.z) g_chosen[b.x + gx * (b.y + gy * b.z)] = 1.0;
        P.sample = std::to_string(g_chosen.size()) + " listed blocks of " + std::to_string(total) + " (not scaled)";
    } else {
        // classes: last in x?, last in y?, last in z? -> count and sample each (reservoir, from the seed)
        rng_state = g_seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull + (uint64_t)g_launches.size();
        long long count[8] = {0};
        auto cls = [&](long long x, long long y, long long z) {
            return (int)((x == gx - 1 && gx > 1) | ((y == gy - 1 && gy > 1) << 1) | ((z == gz - 1 && gz > 1) << 2));
        };
        for (long long z = 0; z < gz; ++z)
            for (long long y = 0; y < gy; ++y)
                for (long long x = 0; x < gx; ++x) ++count[cls(x, y, z)];
        int edge_classes = 0;
        for (int c = 1; c < 8; ++c) edge_classes += count[c] > 0;
        long long want[8];
        for (int c = 0; c < 8; ++c)
            want[c] = std::min<long long>(count[c], c == 0 ? std::max(1, g_budget - edge_classes) : 1);
        std::vector<std::vector<long long>> pick(8);
        long long seen[8] = {0};
        for (long long z = 0; z < gz; ++z)
            for (long long y = 0; y < gy; ++y)
                for (long long x = 0; x < gx; ++x) {
                    int c = cls(x, y, z);
                    long long id = x + gx * (y + gy * z), s = seen[c]++;
                    if ((long long)pick[c].size() < want[c]) pick[c].push_back(id);
                    else if (want[c]) {
                        long long r = (long long)(rnd() % (uint64_t)(s + 1));
                        if (r < want[c]) pick[c][r] = id;
                    }
                }
        long long n = 0;
        for (int c = 0; c < 8; ++c)
            for (long long id : pick[c]) { g_chosen[id] = (double)count[c] / (double)want[c]; ++n; }
        if (n == total) P.sample = "";
        else {
            P.sample = std::to_string(n) + " of " + std::to_string(total) + " blocks (" +
                       std::to_string(n - (long long)pick[0].size()) + " of them edge blocks: last in x, y or z), "
                       "chosen from seed " + std::to_string(g_seed) + "; counts scaled per class by "
                       "blocks in the class / sampled";
        }
    }
}

void profile_new_block() {
    if (!g_mode) { g_profile_block = false; return; }
    const dim3 g = g_launch.grid;
    long long id = blockIdx.x + (long long)g.x * (blockIdx.y + (long long)g.y * blockIdx.z);
    auto it = g_chosen.find(id);
    g_profile_block = it != g_chosen.end();
    g_weight = g_profile_block ? it->second : 0;
    g_block = blockIdx;
    if (g_trace) g_trace_base.assign(g_groups.size(), 0);  // occurrences count from the block's start
    if (g_profile_block) g_launches.back().blocks_profiled++;
}

void profile_interval() {  // a barrier was released, or a block starts or ends
    if (!g_dirty.empty()) flush();
}

void profile_access(int space, int buffer, uintptr_t addr, size_t n, bool write, const void* pc) {
    int raw;
    int site = site_id(pc, buffer, space, write, raw);
    if (site >= g_site_cap) grow_sites(site + 1);
    int tid = g_linear;
    auto next = [](std::vector<uint64_t>& occ, int i, size_t cap) {  // this thread's k-th execution of i
        if (occ.size() <= (size_t)i) occ.resize(std::max(cap, (size_t)i + 1), 0);
        uint64_t& o = occ[i];
        uint32_t k = (uint32_t)(o >> 32) == g_epoch ? (uint32_t)o : 0;
        o = ((uint64_t)g_epoch << 32) | (k + 1);
        return k;
    };
    if (space == 1 && !write) g_launches.back().loads_all += (double)n;
    uint32_t k = next(g_occ[tid], site, g_site_cap);
    uint32_t k_raw = next(g_occ_raw[tid], raw, g_raw_ids.size());
    size_t idx = (size_t)(tid / 32) * g_site_cap + site;
    auto& gs = g_groups[idx];
    if (gs.empty()) g_dirty.push_back((int)idx);
    if (gs.size() <= k) gs.resize(k + 1);
    Group& g = gs[k];
    int lane = tid & 31;
    if (!g.mask) { g.pc = pc; g.pc_occ = k_raw; }
    g.mask |= 1u << lane;
    g.addr[lane] = addr;
    if (n > g.size) g.size = (uint32_t)n;
}

void profile_tally(uintptr_t a, size_t n, bool write) {
    if (!write && profile_buffer_of(a) >= 0) g_launches.back().loads_all += (double)n;
}

int profile_buffer_of(uintptr_t a) {
    for (const Buffer& b : g_buffers)
        if (a >= b.lo && a < b.hi) return b.name;
    return -1;
}

void profile_end_launch() {
    profile_interval();
    g_profile_block = false;
    g_profile_tally = false;
}

}  // namespace cuda_emu

using namespace cuda_emu;

// ---- C API (grader/judge/profile.py) --------------------------------------------------------
// mode: 0 off, 1 sample `budget` blocks chosen from `seed` (edge blocks included), 2 every block,
// 3 the blocks given to cuda_emu_profile_blocks. trace: also record every lane's access.
extern "C" __attribute__((visibility("default"))) void cuda_emu_profile_configure(int mode, unsigned long long seed,
                                                                                int budget, int trace) {
    g_mode = mode; g_seed = seed ? seed : 1; g_budget = budget > 0 ? budget : 8; g_trace = trace != 0;
    g_launches.clear();
    g_trace_recs.clear();
}

// Code addresses (return addresses of the access hooks' calls, offsets in this library) that are
// one site: pcs[i] counts as canon[i] (grader/judge/profile.py: those that share a source location).
extern "C" __attribute__((visibility("default"))) void cuda_emu_profile_sites(int n, const unsigned long long* pcs,
                                                                            const unsigned long long* canon) {
    Dl_info self{};
    g_lib_base = dladdr((void*)&cuda_emu_profile_sites, &self) ? (uintptr_t)self.dli_fbase : 0;
    g_canon.clear();
    for (int i = 0; i < n; ++i) g_canon[(uintptr_t)pcs[i]] = (uintptr_t)canon[i];
    std::memset(g_cache, 0, sizeof g_cache);  // ids were cached for the previous map
}

extern "C" __attribute__((visibility("default"))) void cuda_emu_profile_blocks(int n, const unsigned* xyz) {
    g_listed.clear();
    for (int i = 0; i < n; ++i) g_listed.push_back(uint3{xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]});
}

// The global buffers of the next launches (the launcher's arguments), by name.
extern "C" __attribute__((visibility("default"))) void cuda_emu_set_buffers(int n, const char* const* names,
                                                                          const unsigned long long* ptrs,
                                                                          const unsigned long long* bytes) {
    g_named.clear();
    for (int i = 0; i < n; ++i)
        if (bytes[i]) g_named.push_back(Buffer{name_id(names[i]), (uintptr_t)ptrs[i], (uintptr_t)(ptrs[i] + bytes[i])});
    g_buffers = g_named;
}

// What was counted since the last configure, as text (parsed by grader/judge/profile.py):
//   L <tab> grid <tab> block <tab> smem <tab> blocks_total <tab> blocks_profiled <tab> sample <tab> kernel
//     <tab> bytes every block loaded (sampled launches: counted in every block, not scaled; else 0)
//   S <tab> launch <tab> site <tab> pc offset <tab> space <tab> op <tab> buffer <tab> requests <tab> units
//     <tab> ideal <tab> lanes <tab> bytes <tab> requests_as_written <tab> units_as_written <tab> one_sector
extern "C" __attribute__((visibility("default"))) const char* cuda_emu_profile_take() {
    Dl_info self{};
    uintptr_t base = dladdr((void*)&cuda_emu_profile_take, &self) ? (uintptr_t)self.dli_fbase : 0;
    std::string& t = g_text;
    t.clear();
    char buf[512];
    for (size_t i = 0; i < g_launches.size(); ++i) {
        const LaunchProfile& P = g_launches[i];
        t += "L\t" + dims(P.grid) + "\t" + dims(P.block) + "\t" + std::to_string(P.smem) + "\t" +
             std::to_string(P.blocks_total) + "\t" + std::to_string(P.blocks_profiled) + "\t" + P.sample + "\t" +
             P.kernel + "\t" + std::to_string((long long)P.loads_all) + "\n";
        for (const auto& [site, S] : P.stats) {
            const SiteKey& k = g_sites[site];
            std::string buffer = k.space ? g_buffer_names[k.buffer] : g_shared[k.buffer].name;
            std::snprintf(buf, sizeof buf,
                          "S\t%zu\t%d\t%lx\t%s\t%s\t%s\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\n",
                          i, site, (unsigned long)((uintptr_t)k.pc - base - 1), k.space ? "global" : "shared",
                          k.write ? "st" : "ld", buffer.c_str(), S.requests, S.units, S.ideal, S.lanes, S.bytes,
                          S.requests_as_written, S.units_as_written, S.one_sector);
            t += buf;
        }
    }
    return t.c_str();
}

extern "C" __attribute__((visibility("default"))) const void* cuda_emu_profile_trace(unsigned long long* count) {
    *count = g_trace_recs.size();
    return g_trace_recs.data();
}
