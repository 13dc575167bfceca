// runner.cpp: the process a learner's kernel library runs in, and nothing else.
//
// The grader's worker (grader/run/worker.py, Python + torch) starts this program and drives it over
// two pipes with the grader's raw-array protocol (grader/run/protocol.py: an 8-byte little-endian
// length, a JSON header {"meta": {...}, "arrays": [[name, dtype, shape], ...]}, then each array's
// bytes). Here there is no interpreter, no torch, no numpy and no BLAS: a kernel file that walks
// its own address space finds libc, the CUDA runtime (GPU build) and this program. The worker
// keeps the inputs, references and baselines; this program only
//   - loads libraries sent as bytes (memfd + dlopen; the submission, and gemm_relu's separate pass),
//   - allocates buffers with guard zones, fills, poisons and reads them,
//   - calls launchers on its own stream, checks their errors, and times a round of calls with
//     CUDA events after an L2 flush and a head start (grader/run/timing.py does the same in Python),
//   - draws the timed rounds' inputs from a seed (rng_hash below; grader/run/runner/rng.py draws the
//     same numbers in torch, so the worker checks the outputs against its own copy of the inputs).
// Built twice (grader/run/runner/build.py): with nvcc and -DRUNNER_CUDA (buffers in device memory), and
// with g++ for the CPU backend, whose libraries carry their own emulated runtime (buffers here are
// page-aligned host memory, named to that runtime before every call, as grader/run/binding.py does).
//
// Requests (meta.op) and replies: see grader/run/runner/client.py, which is the only caller.

#include <dlfcn.h>
#include <fcntl.h>
#include <glob.h>
#include <link.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef RUNNER_CUDA
#include <cuda_runtime.h>
#endif

// ------------------------------------------------------------------------------------ JSON
// Enough JSON for the protocol's headers: objects, arrays, strings, numbers, true/false/null.
struct Json {
    enum Kind { Null, Bool, Num, Str, Arr, Obj } kind = Null;
    bool b = false;
    double num = 0;
    long long integer = 0;  // exact when the number had no fraction or exponent
    std::string str;
    std::vector<Json> arr;
    std::vector<std::pair<std::string, Json>> obj;

    const Json* get(const char* key) const {
        for (auto& kv : obj)
            if (kv.first == key) return &kv.second;
        return nullptr;
    }
    long long i(const char* key, long long dflt = 0) const {
        const Json* v = get(key);
        return v && v->kind == Num ? v->integer : dflt;
    }
    std::string s(const char* key, const char* dflt = "") const {
        const Json* v = get(key);
        return v && v->kind == Str ? v->str : dflt;
    }
    bool flag(const char* key) const {
        const Json* v = get(key);
        return v && ((v->kind == Bool && v->b) || (v->kind == Num && v->integer));
    }
};

struct Parser {
    const char* p;
    const char* end;
    int depth = 0;
    void ws() {
        while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++;
    }
    [[noreturn]] void fail(const char* what) { throw std::runtime_error(std::string("bad JSON: ") + what); }
    Json value() {
        if (++depth > 64) fail("nested too deep");
        ws();
        if (p >= end) fail("unexpected end");
        Json v;
        if (*p == '{') {
            v.kind = Json::Obj;
            p++;
            ws();
            if (p < end && *p == '}') { p++; depth--; return v; }
            for (;;) {
                ws();
                Json k = value();
                if (k.kind != Json::Str) fail("object key");
                ws();
                if (p >= end || *p != ':') fail("':'");
                p++;
                v.obj.emplace_back(k.str, value());
                ws();
                if (p < end && *p == ',') { p++; continue; }
                if (p < end && *p == '}') { p++; break; }
                fail("',' or '}'");
            }
        } else if (*p == '[') {
            v.kind = Json::Arr;
            p++;
            ws();
            if (p < end && *p == ']') { p++; depth--; return v; }
            for (;;) {
                v.arr.push_back(value());
                ws();
                if (p < end && *p == ',') { p++; continue; }
                if (p < end && *p == ']') { p++; break; }
                fail("',' or ']'");
            }
        } else if (*p == '"') {
            v.kind = Json::Str;
            p++;
            while (p < end && *p != '"') {
                if (*p == '\\' && p + 1 < end) {
                    p++;
                    char c = *p++;
                    if (c == 'n') v.str += '\n';
                    else if (c == 't') v.str += '\t';
                    else if (c == 'u' && p + 4 <= end) {  // ASCII only (the worker sends plain names)
                        v.str += (char)strtol(std::string(p, 4).c_str(), nullptr, 16);
                        p += 4;
                    } else v.str += c;
                } else v.str += *p++;
            }
            if (p >= end) fail("unterminated string");
            p++;
        } else if (!strncmp(p, "true", 4)) { v.kind = Json::Bool; v.b = true; p += 4; }
        else if (!strncmp(p, "false", 5)) { v.kind = Json::Bool; p += 5; }
        else if (!strncmp(p, "null", 4)) { p += 4; }
        else {
            v.kind = Json::Num;
            const char* s = p;
            bool integral = true;
            while (p < end && strchr("+-0123456789.eE", *p)) {
                if (strchr(".eE", *p)) integral = false;
                p++;
            }
            if (s == p) fail("value");
            std::string t(s, p);
            v.num = strtod(t.c_str(), nullptr);
            v.integer = integral ? strtoll(t.c_str(), nullptr, 10) : (long long)v.num;
        }
        depth--;
        return v;
    }
};

static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') { out += '\\'; out += (char)c; }
        else if (c == '\n') out += "\\n";
        else if (c < 0x20 || c >= 0x7f) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); out += b; }
        else out += (char)c;
    }
    return out + "\"";
}

// ------------------------------------------------------------------------------------ wire
static int IN_FD = 3, OUT_FD = 4;

static bool read_exact(void* dst, size_t n) {
    char* p = (char*)dst;
    while (n) {
        ssize_t got = read(IN_FD, p, n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        p += got;
        n -= (size_t)got;
    }
    return true;
}

static void write_all(const void* src, size_t n) {
    const char* p = (const char*)src;
    while (n) {
        ssize_t put = write(OUT_FD, p, n);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) _exit(3);  // the worker is gone
        p += put;
        n -= (size_t)put;
    }
}

struct Array {
    std::string name, dtype;
    std::vector<long long> shape;
    std::vector<char> bytes;
};

static size_t itemsize(const std::string& dtype) {
    if (dtype == "float64") return 8;
    if (dtype == "float32" || dtype == "int32") return 4;
    if (dtype == "uint8") return 1;
    throw std::runtime_error("unknown dtype " + dtype);
}

struct Message {
    Json meta;
    std::map<std::string, Array> arrays;
};

static bool recv(Message& m) {
    uint64_t n;
    if (!read_exact(&n, 8)) return false;
    if (n > (1u << 20)) throw std::runtime_error("header too large");
    std::string header(n, '\0');
    if (!read_exact(&header[0], n)) return false;
    Parser ps{header.data(), header.data() + header.size()};
    Json h = ps.value();
    const Json* meta = h.get("meta");
    const Json* arrays = h.get("arrays");
    if (!meta || !arrays || arrays->kind != Json::Arr) throw std::runtime_error("bad header");
    m.meta = *meta;
    m.arrays.clear();
    for (auto& a : arrays->arr) {
        if (a.kind != Json::Arr || a.arr.size() != 3) throw std::runtime_error("bad array entry");
        Array arr{a.arr[0].str, a.arr[1].str, {}, {}};
        size_t count = 1;
        for (auto& d : a.arr[2].arr) {
            arr.shape.push_back(d.integer);
            count *= (size_t)d.integer;
        }
        arr.bytes.resize(count * itemsize(arr.dtype));
        if (!arr.bytes.empty() && !read_exact(arr.bytes.data(), arr.bytes.size())) return false;
        m.arrays[arr.name] = std::move(arr);
    }
    return true;
}

struct Reply {
    std::string meta = "{}";  // a JSON object's text
    std::vector<std::pair<std::string, Array>> arrays;
    bool stop = false;  // a launcher reported an error: a batch ends here (op "batch")
};

static void send(const Reply& r) {
    std::string header = "{\"meta\": " + r.meta + ", \"arrays\": [";
    for (size_t i = 0; i < r.arrays.size(); i++) {
        auto& a = r.arrays[i].second;
        header += (i ? ", [" : "[") + quote(r.arrays[i].first) + ", " + quote(a.dtype) + ", [";
        for (size_t d = 0; d < a.shape.size(); d++) header += (d ? ", " : "") + std::to_string(a.shape[d]);
        header += "]]";
    }
    header += "]}";
    uint64_t n = header.size();
    write_all(&n, 8);
    write_all(header.data(), header.size());
    for (auto& a : r.arrays) write_all(a.second.bytes.data(), a.second.bytes.size());
}

static std::string obj(std::initializer_list<std::pair<const char*, std::string>> kv) {
    std::string out = "{";
    bool first = true;
    for (auto& [k, v] : kv) {
        out += (first ? "" : ", ") + quote(k) + ": " + v;
        first = false;
    }
    return out + "}";
}

// ------------------------------------------------------------------------------------ the RNG
// Timed rounds' inputs, drawn here and in grader/run/runner/rng.py from the same formula, bit for bit:
// one 32-bit hash of (seed, i) (lowbias32, Chris Wellons' integer hash, twice), its two 16-bit halves
// summed (a triangular distribution: zero mean, unit variance after the scale), and for ReLU inputs exact
// zeros of both signs (1/32 each). One hash per element, not four: rng.py's copy in torch costs a few
// elementwise passes per round (~30), not ~120.
#ifdef RUNNER_CUDA
#define HD __host__ __device__
#else
#define HD
#endif
HD static inline uint32_t lowbias32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}
HD static inline uint32_t rng_hash(uint64_t seed, uint32_t i) {
    return lowbias32(lowbias32(i ^ (uint32_t)seed) + (uint32_t)(seed >> 32));
}
HD static inline float rng_value(uint64_t seed, uint32_t i, int relu) {
    uint32_t h = rng_hash(seed, i);
    int32_t s = (int32_t)(h & 0xffffu) + (int32_t)(h >> 16) - 65535;
    // (float)s is exact (|s| < 2^17); * 2^-16 is exact; * sqrt(6) rounds once, to nearest, on both sides
#ifdef __CUDA_ARCH__
    float x = __fmul_rn(__fmul_rn((float)s, 1.52587890625e-05f), 2.449489742783178f);
#else
    volatile float t = (float)s * 1.52587890625e-05f;  // volatile: no contraction into an FMA
    float x = t * 2.449489742783178f;
#endif
    if (relu) {
        uint32_t z = lowbias32(h) & 31u;
        if (z == 0) x = 0.0f;
        else if (z == 1) x = -0.0f;
    }
    return x;
}

// ------------------------------------------------------------------------------------ memory
struct Buffer {
    char* base = nullptr;   // the whole allocation: before + n + after 4-byte words
    size_t before = 0, n = 0, after = 0;
    long long cols = 0;     // the last dimension (the CPU backend's diagnostics name elements by row, col)
    struct Library* owner = nullptr;  // CPU backend: the library whose runtime allocated it as device memory
    char* inner() const { return base + 4 * before; }
    size_t bytes() const { return 4 * (before + n + after); }
};

static std::map<std::string, Buffer> BUFFERS;
static std::map<std::string, std::vector<char>> STASH;  // op "stash": inputs kept for a case's next schedule

#ifdef RUNNER_CUDA
static cudaStream_t STREAM;
static void cuda_ok(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
__global__ void fill_words(uint32_t* p, size_t n, uint32_t word) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = word;
}
__global__ void fill_random(float* p, size_t n, uint64_t seed, int relu) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = rng_value(seed, (uint32_t)i, relu);
}
// The timed rounds' checks of a buffer (op "stats"): an exact, order-free checksum of its words (their
// sum, and their sum weighted by i % 61 + 1, as 64-bit integers: the worker computes the same on its
// copy), how many of its floats are NaN or infinite, and a float32 matrix's column sums in double.
__global__ void stats_kernel(const uint32_t* p, size_t n, unsigned long long* sums) {
    unsigned long long s = 0, w = 0, bad = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const unsigned step = stride % 61;
    for (unsigned r = i % 61; i < n; i += stride) {  // r = i % 61, kept by an add (no 64-bit division per word)
        uint32_t v = p[i];
        s += v;
        w += (unsigned long long)v * (r + 1);
        bad += (v & 0x7f800000u) == 0x7f800000u;
        r += step;
        r -= r >= 61 ? 61 : 0;
    }
    atomicAdd(&sums[0], s);
    atomicAdd(&sums[1], w);
    atomicAdd(&sums[2], bad);
}
// Column sums of a rows x cols float matrix: a thread per column and slice of rows (coalesced along the
// row), one double atomic per thread (a per-element atomic would be rows x cols contended ones a round).
__global__ void colsum_kernel(const float* p, size_t rows, size_t cols, double* colsum) {
    const size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (c >= cols) return;
    double acc = 0.0;
    for (size_t r = blockIdx.y; r < rows; r += gridDim.y) acc += p[r * cols + c];
    atomicAdd(&colsum[c], acc);
}
#endif

static void dev_fill(char* p, size_t words, uint32_t word) {
#ifdef RUNNER_CUDA
    if (words) fill_words<<<256, 256, 0, STREAM>>>((uint32_t*)p, words, word);
    cuda_ok(cudaStreamSynchronize(STREAM), "fill");
#else
    uint32_t* q = (uint32_t*)p;
    for (size_t i = 0; i < words; i++) q[i] = word;
#endif
}

// Copies and memsets go on our stream and are waited for: ours is a non-blocking stream, which the
// legacy default stream (plain cudaMemcpy, cudaMemset) is not ordered with, and a copy from pageable
// memory may return before its DMA has landed.
static void to_dev(char* dst, const void* src, size_t n) {
#ifdef RUNNER_CUDA
    cuda_ok(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, STREAM), "copy to the device");
    cuda_ok(cudaStreamSynchronize(STREAM), "copy to the device");
#else
    memcpy(dst, src, n);
#endif
}

static void from_dev(void* dst, const char* src, size_t n) {
#ifdef RUNNER_CUDA
    cuda_ok(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, STREAM), "copy from the device");
    cuda_ok(cudaStreamSynchronize(STREAM), "copy from the device");
#else
    memcpy(dst, src, n);
#endif
}

static void release(Buffer& b);

static Buffer& buffer(const std::string& id) {
    auto it = BUFFERS.find(id);
    if (it == BUFFERS.end()) throw std::runtime_error("no buffer " + id);
    return it->second;
}

// ------------------------------------------------------------------------------------ libraries
struct Library {
    void* handle = nullptr;
    // the error API every built library has (grader/compile/toolchain.py's CUDA_EPILOGUE; the CPU runtime's own)
    int (*last_error)() = nullptr;
    int (*synchronize)() = nullptr;
    const char* (*error_string)(int) = nullptr;
    const char* (*take_error)() = nullptr;
    void (*set_buffers)(int, const char**, const unsigned long long*, const unsigned long long*) = nullptr;
    void (*set_outputs)(int, const char**, const unsigned long long*, const unsigned long long*, const int*,
                        const int*) = nullptr;
    void (*expect_stream)(void*) = nullptr;  // the CPU runtime: launches on any other stream are an error
    // the CPU runtime: the allocation around each buffer (its guard zones), where a kernel's read is out of bounds
    void (*set_allocations)(int, const unsigned long long*, const unsigned long long*) = nullptr;
    // the CPU runtime's device memory (globals.cpp): PROT_NONE while no kernel of its runs, open between access(1)
    // and access(0), so that the launcher's host code faults on it, by whatever route it reads or writes
    void* (*device_alloc)(unsigned long long) = nullptr;
    void (*device_free)(void*) = nullptr;
    void (*device_access)(int) = nullptr;
};
static std::map<std::string, Library> LIBS;
// CPU backend: the submission's library, whose runtime holds a CUDA exercise's buffers as device memory
static Library* DEVICE_OWNER = nullptr;

// While one lives, the runner itself (or a trusted library: gemm_relu's separate pass) may touch device memory.
struct DeviceAccess {
    Library* lib;
    explicit DeviceAccess(bool open) : lib(open && DEVICE_OWNER ? DEVICE_OWNER : nullptr) {
        if (lib) lib->device_access(1);
    }
    ~DeviceAccess() {
        if (lib) lib->device_access(0);
    }
};

static void release(Buffer& b) {
#ifdef RUNNER_CUDA
    cudaFree(b.base);
#else
    if (b.owner) b.owner->device_free(b.base);
    else munmap(b.base, b.bytes());
#endif
    b.base = nullptr;
}

// Where libraries are written inside the runner's own view (enter_view; "": none, they load from memory): there,
// /proc/self/fd/N names the runner's descriptor, which the CPU runtime's addr2line child may not open.
static std::string LIBRARY_DIR;

static Library load_library(const std::string& name, const Array& bytes) {
    static int loaded = 0;
    std::string file = LIBRARY_DIR + "/" + std::to_string(++loaded) + ".so";
    int fd = LIBRARY_DIR.empty() ? memfd_create(name.c_str(), 0) : open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0500);
    if (fd < 0) throw std::runtime_error("could not store the library");
    size_t off = 0;
    while (off < bytes.bytes.size()) {
        ssize_t put = write(fd, bytes.bytes.data() + off, bytes.bytes.size() - off);
        if (put <= 0) throw std::runtime_error("could not write the library to memory");
        off += (size_t)put;
    }
    std::string path = LIBRARY_DIR.empty() ? "/proc/self/fd/" + std::to_string(fd) : file;
    if (!LIBRARY_DIR.empty()) close(fd);
    Library lib;
    lib.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib.handle) throw std::runtime_error(std::string("could not load the library: ") + dlerror());
    lib.last_error = (int (*)())dlsym(lib.handle, "grader_last_error");
    lib.synchronize = (int (*)())dlsym(lib.handle, "grader_synchronize");
    lib.error_string = (const char* (*)(int))dlsym(lib.handle, "grader_error_string");
    lib.take_error = (const char* (*)())dlsym(lib.handle, "cuda_emu_take_error");
    lib.set_buffers = (decltype(lib.set_buffers))dlsym(lib.handle, "cuda_emu_set_buffers");
    lib.set_outputs = (decltype(lib.set_outputs))dlsym(lib.handle, "cuda_emu_set_outputs");
    lib.expect_stream = (decltype(lib.expect_stream))dlsym(lib.handle, "cuda_emu_expect_stream");
    lib.set_allocations = (decltype(lib.set_allocations))dlsym(lib.handle, "cuda_emu_set_allocations");
    lib.device_alloc = (decltype(lib.device_alloc))dlsym(lib.handle, "cuda_emu_device_alloc");
    lib.device_free = (decltype(lib.device_free))dlsym(lib.handle, "cuda_emu_device_free");
    lib.device_access = (decltype(lib.device_access))dlsym(lib.handle, "cuda_emu_device_access");
    return lib;
}

static Library& library(const std::string& id) {
    auto it = LIBS.find(id);
    if (it == LIBS.end()) throw std::runtime_error("no library " + id);
    return it->second;
}

// A launcher's parameters are pointers, ints and a stream: each travels in one 64-bit argument slot
// (x86-64 System V and AArch64 alike), so every launcher is called through one signature with
// twelve slots; the callee reads the slots it declares and ignores the rest.
typedef void (*Slots)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                      uint64_t, uint64_t, uint64_t);

struct Call {
    Library* lib;
    Slots fn;
    std::string name;
    uint64_t slot[12] = {};
    std::vector<std::string> bufs;  // the buffers it gets, in order
    std::vector<std::string> names; // their parameters' names (the CPU runtime's diagnostics say these)
    std::vector<int> outs;          // per buffer: written by this launcher
};

static void* stream_handle() {
#ifdef RUNNER_CUDA
    return (void*)STREAM;
#else
    static char fake_stream;  // the CPU runtime's streams are opaque handles; ours is not the default (null)
    return &fake_stream;
#endif
}

static Call parse_call(const Json& c) {
    Call call;
    call.lib = &library(c.s("lib", "sub"));
    call.name = c.s("fn");
    call.fn = (Slots)dlsym(call.lib->handle, call.name.c_str());
    if (!call.fn) throw std::runtime_error("launcher " + call.name + " not found");
    const Json* args = c.get("args");
    if (!args || args->arr.size() > 12) throw std::runtime_error("bad call arguments");
    for (size_t k = 0; k < args->arr.size(); k++) {
        const Json& a = args->arr[k];
        if (a.get("b")) {
            Buffer& b = buffer(a.s("b"));
            call.slot[k] = (uint64_t)(uintptr_t)b.inner();
            call.bufs.push_back(a.s("b"));
            call.names.push_back(a.s("name", a.s("b").c_str()));
            call.outs.push_back(a.flag("out"));
        } else if (a.get("i")) {
            call.slot[k] = (uint64_t)(int64_t)(int32_t)a.i("i");
        } else {
            call.slot[k] = (uint64_t)(uintptr_t)stream_handle();
        }
    }
    return call;
}

#ifndef RUNNER_CUDA
// CPU backend: name the call's buffers to the library's runtime (as grader/run/binding.py does for torch
// tensors): outputs are checked for races, the others are inputs no kernel may write, and for a CUDA
// exercise all of them are device memory (flag 2) that host code must not touch.
static void name_buffers(Call& c, bool device) {
    if (!c.lib->set_buffers || !c.lib->set_outputs) return;
    int n = (int)c.bufs.size();
    std::vector<const char*> names(n);
    std::vector<unsigned long long> ptrs(n), sizes(n), bases(n), whole(n);
    std::vector<int> cols(n), flags(n);
    for (int k = 0; k < n; k++) {
        Buffer& b = buffer(c.bufs[k]);
        names[k] = c.names[k].c_str();
        ptrs[k] = (unsigned long long)(uintptr_t)b.inner();
        sizes[k] = 4ull * b.n;
        bases[k] = (unsigned long long)(uintptr_t)b.base;
        whole[k] = b.bytes();
        cols[k] = (int)b.cols;
        flags[k] = c.outs[k] | (device ? 2 : 0);
    }
    c.lib->set_buffers(n, names.data(), ptrs.data(), sizes.data());
    c.lib->set_outputs(n, names.data(), ptrs.data(), sizes.data(), cols.data(), flags.data());
    if (c.lib->set_allocations) c.lib->set_allocations(n, bases.data(), whole.data());
}
#endif

static void invoke(Call& c, bool device) {
#ifndef RUNNER_CUDA
    DeviceAccess trusted(c.lib != DEVICE_OWNER);  // another library's kernels: the submission's runtime lets them in
    name_buffers(c, device);
    if (c.lib->expect_stream) c.lib->expect_stream(stream_handle());
#else
    (void)device;
#endif
    c.fn(c.slot[0], c.slot[1], c.slot[2], c.slot[3], c.slot[4], c.slot[5], c.slot[6], c.slot[7], c.slot[8],
         c.slot[9], c.slot[10], c.slot[11]);
#ifndef RUNNER_CUDA
    if (c.lib->set_outputs) c.lib->set_outputs(0, nullptr, nullptr, nullptr, nullptr, nullptr);  // forgotten
    if (c.lib->expect_stream) c.lib->expect_stream(nullptr);
#endif
}

// The error the library's launches left ("" if none): its own CUDA runtime's, or the CPU runtime's report.
static std::string library_error(Library& lib, bool sync) {
    if (lib.take_error) {
        const char* msg = lib.take_error();
        return msg ? msg : "";
    }
    int err = 0;
#ifdef RUNNER_CUDA
    if (sync) {
        cudaError_t e = cudaStreamSynchronize(STREAM);
        if (e != cudaSuccess) return std::string(cudaGetErrorName(e)) + " (error " + std::to_string((int)e) + ")";
    }
#endif
    if (sync && lib.synchronize) err = lib.synchronize();
    if (!err && lib.last_error) err = lib.last_error();
    if (!err) return "";
    std::string name = lib.error_string ? lib.error_string(err) : "error";
    return name + " (error " + std::to_string(err) + ")";
}

// ------------------------------------------------------------------------------------ the stream contract
// A launcher must launch on the stream it is given. Ours is a non-blocking stream; before a checked call
// a gate kernel holds the legacy default stream (which every blocking stream waits for), so work that a
// launcher put there waits. Once our stream has finished, the outputs are copied (on our stream); then the
// gate opens. Outputs that change after that were written elsewhere. A launcher that waits on the default
// stream itself (cudaDeviceSynchronize, a synchronous cudaMemcpy) would wait for the gate: it opens on its
// own after GATE_MS and the check is off for the rest of the run (it cannot be judged, and is not blamed).
#ifdef RUNNER_CUDA
static const double GATE_MS = 1000.0;
static volatile int* GATE_OPEN = nullptr;  // mapped host memory the gate kernel polls
static int* GATE_OPEN_DEV = nullptr;
static int* GATE_TIMED_OUT = nullptr;
static bool GATE_USABLE = true;

__global__ void gate(volatile int* open, long long max_cycles, int* timed_out) {
    long long t0 = clock64();
    while (!*open)
        if (clock64() - t0 > max_cycles) {
            *timed_out = 1;
            return;
        }
}

static bool gate_close() {
    if (!GATE_USABLE) return false;
    if (!GATE_OPEN) {
        int* host;
        if (cudaHostAlloc(&host, 2 * sizeof(int), cudaHostAllocMapped) != cudaSuccess) {
            GATE_USABLE = false;
            return false;
        }
        GATE_OPEN = host;
        GATE_TIMED_OUT = host + 1;
        cudaHostGetDevicePointer(&GATE_OPEN_DEV, host, 0);
    }
    GATE_OPEN[0] = 0;
    GATE_TIMED_OUT[0] = 0;
    int dev, khz = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev);
    gate<<<1, 1, 0, cudaStreamLegacy>>>(GATE_OPEN_DEV, (long long)(GATE_MS * (khz > 0 ? khz : 2000000)), GATE_OPEN_DEV + 1);
    return true;
}

// After the launcher returned: "" or what ran outside our stream. The outputs are snapshot on the device
// (a copy on our stream, then a kernel counting the words that differ once the gate opened): at the timed
// size a host copy of C cost ~30 ms a call (two 64 MB copies and a compare), the device ~0.1 ms.
static char* SNAPSHOT = nullptr;
static size_t SNAPSHOT_BYTES = 0;

// Before the gate closes (cudaFree synchronises the device: behind a closed gate it would wait).
static void snapshot_reserve(size_t total) {
    if (total <= SNAPSHOT_BYTES) return;
    cudaFree(SNAPSHOT);
    SNAPSHOT_BYTES = 0;
    if (cudaMalloc(&SNAPSHOT, total) == cudaSuccess) SNAPSHOT_BYTES = total;
}

__global__ void count_differing(const uint32_t* a, const uint32_t* b, size_t n, unsigned long long* out) {
    unsigned long long d = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        d += a[i] != b[i];
    if (d) atomicAdd(out, d);
}

static char* scratch(size_t bytes);

static std::string gate_open_and_judge(const std::vector<std::pair<char*, size_t>>& outputs) {
    size_t total = 0;
    for (auto& o : outputs) total += o.second;
    cudaError_t e = cudaStreamSynchronize(STREAM);
    if (total > SNAPSHOT_BYTES) e = cudaErrorMemoryAllocation;  // no judgement, the gate just opens
    size_t off = 0;
    for (auto& [p, n] : outputs) {
        if (e == cudaSuccess) e = cudaMemcpyAsync(SNAPSHOT + off, p, n, cudaMemcpyDeviceToDevice, STREAM);
        off += n;
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(STREAM);
    __sync_synchronize();
    GATE_OPEN[0] = 1;
    cudaDeviceSynchronize();  // whatever the launcher queued elsewhere has run now
    if (GATE_TIMED_OUT[0]) {
        GATE_USABLE = false;
        return "";
    }
    if (e != cudaSuccess) return "";  // the launch's own error is reported
    unsigned long long* count = (unsigned long long*)scratch(8);
    if (cudaMemsetAsync(count, 0, 8, STREAM) != cudaSuccess) return "";
    off = 0;
    for (auto& [p, n] : outputs) {
        count_differing<<<264, 256, 0, STREAM>>>((const uint32_t*)p, (const uint32_t*)(SNAPSHOT + off), n / 4, count);
        off += n;
    }
    unsigned long long differing = 0;
    if (cudaMemcpyAsync(&differing, count, 8, cudaMemcpyDeviceToHost, STREAM) != cudaSuccess ||
        cudaStreamSynchronize(STREAM) != cudaSuccess)
        return "";
    if (differing)
        return "its outputs changed after the stream it was given had finished: some of its work ran on "
               "another stream (the default stream?). Launch every kernel with <<<grid, block, shared, stream>>> "
               "and every copy or memset with the Async call on `stream`.";
    return "";
}
#endif

// ------------------------------------------------------------------------------------ timing
static double now_ms() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

#ifdef RUNNER_CUDA
static float* FLUSH = nullptr;
static size_t FLUSH_N = 0;
static double* FLUSH_SUM = nullptr;
static int CLOCK_KHZ = 2000000;

__global__ void read_sum(const float* p, size_t n, double* out) {  // reads every line of the flush buffer
    float s = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) s += p[i];
    if (s == 12345.678f) *out = s;  // never true (the buffer holds ones): keeps the loads
}
__global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

// grader/run/timing.py's flush_l2: "write" fills a buffer twice the L2's size, "read" reads it, "clean" both
static void flush_l2(const std::string& mode) {
    if (!FLUSH) {
        int dev, l2 = 0;
        cuda_ok(cudaGetDevice(&dev), "device");
        cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
        FLUSH_N = 2 * (size_t)(l2 ? l2 : 64 << 20) / 4;
        cuda_ok(cudaMalloc(&FLUSH, FLUSH_N * 4), "flush buffer");
        cuda_ok(cudaMalloc(&FLUSH_SUM, 8), "flush buffer");
        cudaDeviceGetAttribute(&CLOCK_KHZ, cudaDevAttrClockRate, dev);
        if (CLOCK_KHZ <= 0) CLOCK_KHZ = 2000000;
    }
    if (mode == "write" || mode == "clean") fill_words<<<1024, 256, 0, STREAM>>>((uint32_t*)FLUSH, FLUSH_N, 0x3f800000u);
    if (mode == "read" || mode == "clean") read_sum<<<1024, 256, 0, STREAM>>>(FLUSH, FLUSH_N, FLUSH_SUM);
}
#endif

// One timed round of `calls` (grader/run/timing.py time_gpu's loop body): on a GPU, synchronise, flush the
// L2, keep the GPU busy for a head start, then time the calls between two events; on the CPU backend's
// host exercise, the host clock around the calls. (event ms, host ms, the error).
struct Timed {
    double ms = 0, host_ms = 0;
    std::string error;
};

static Timed timed_round(std::vector<Call>& calls, const std::string& flush, double head_start_us, bool device) {
#ifdef RUNNER_CUDA
    static cudaEvent_t pre, start, end;
    static bool made = false;
    if (!made) {
        cuda_ok(cudaEventCreate(&pre), "event");
        cuda_ok(cudaEventCreate(&start), "event");
        cuda_ok(cudaEventCreate(&end), "event");
        made = true;
    }
    cuda_ok(cudaDeviceSynchronize(), "synchronize");
    double h0 = now_ms();
    cudaEventRecord(pre, STREAM);
    if (!flush.empty()) flush_l2(flush);
    if (head_start_us > 0) {
        if (!FLUSH) flush_l2("");
        spin<<<1, 1, 0, STREAM>>>((long long)(head_start_us * CLOCK_KHZ / 1e3));
    }
    cudaEventRecord(start, STREAM);
    for (auto& c : calls) invoke(c, device);
    cudaEventRecord(end, STREAM);
    cudaError_t e = cudaDeviceSynchronize();
    double h1 = now_ms();
    std::string err = e != cudaSuccess ? cudaGetErrorName(e) : "";
    for (auto& c : calls)
        if (err.empty()) err = library_error(*c.lib, false);
    float ms = 0, lead = 0;
    if (err.empty()) {
        cudaEventElapsedTime(&ms, start, end);
        cudaEventElapsedTime(&lead, pre, start);
    }
    double host = h1 - h0 - lead;
    return Timed{ms, host > 0 ? host : 0, err};
#else
    (void)flush;
    (void)head_start_us;
    double h0 = now_ms();
    for (auto& c : calls) invoke(c, device);
    double ms = now_ms() - h0;
    std::string err;
    for (auto& c : calls)
        if (err.empty()) err = library_error(*c.lib, false);
    return Timed{ms, ms, err};
#endif
}

// ------------------------------------------------------------------------------------ checks in place
// What the worker asks about buffers after a case or a timed round, computed where the buffers live:
// on a GPU with kernels into persistent scratch (no cudaMalloc/cudaFree per request: cudaFree
// synchronises the device) and one copy back; nothing large crosses the pipe.
struct Stat {
    unsigned long long sum = 0, weighted = 0, nonfinite = 0;
    std::vector<double> colsum;  // empty unless asked for
};

#ifdef RUNNER_CUDA
static char* SCRATCH = nullptr;  // device memory for the checks' sums, grown as needed, never freed
static size_t SCRATCH_BYTES = 0;
static char* scratch(size_t bytes) {
    if (bytes > SCRATCH_BYTES) {
        cuda_ok(cudaStreamSynchronize(STREAM), "scratch");
        cudaFree(SCRATCH);
        SCRATCH = nullptr;
        SCRATCH_BYTES = 0;
        cuda_ok(cudaMalloc(&SCRATCH, bytes), "scratch");
        SCRATCH_BYTES = bytes;
    }
    return SCRATCH;
}

// Changed words in a buffer's guard zones: [0] before, [1] after, [2] the first index after (or ~0).
__global__ void guards_kernel(const uint32_t* base, size_t before, size_t n, size_t after, uint32_t word,
                              unsigned long long* out) {
    unsigned long long hit_before = 0, hit_after = 0, first = ~0ull;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < before + after; j += (size_t)gridDim.x * blockDim.x) {
        bool in_before = j < before;
        if (base[in_before ? j : n + j] != word) {
            if (in_before) hit_before++;
            else {
                hit_after++;
                if (j - before < first) first = j - before;
            }
        }
    }
    if (hit_before) atomicAdd(&out[0], hit_before);
    if (hit_after) {
        atomicAdd(&out[1], hit_after);
        atomicMin(&out[2], first);
    }
}
__global__ void set_words64(unsigned long long* p, unsigned long long a, unsigned long long b, unsigned long long c) {
    p[0] = a;
    p[1] = b;
    p[2] = c;
}
#endif

// An exact, order-free checksum of each buffer's words (their sum, and their sum weighted by i % 61 + 1,
// as 64-bit integers: grader.run.runner.memory.checksum computes the same), its NaN/inf count, and where
// asked a float32 matrix's column sums in double.
static std::vector<Stat> buffer_stats(const std::vector<Buffer*>& bufs, const std::vector<size_t>& cols,
                                      const std::vector<bool>& want_cols) {
    std::vector<Stat> out(bufs.size());
#ifdef RUNNER_CUDA
    size_t total_cols = 0;
    std::vector<size_t> at(bufs.size());
    for (size_t k = 0; k < bufs.size(); k++) {
        at[k] = total_cols;
        total_cols += want_cols[k] ? cols[k] : 0;
    }
    size_t sum_bytes = 24 * bufs.size(), bytes = sum_bytes + 8 * total_cols;
    char* s = scratch(bytes ? bytes : 8);
    cuda_ok(cudaMemsetAsync(s, 0, bytes, STREAM), "stats");
    for (size_t k = 0; k < bufs.size(); k++) {
        stats_kernel<<<264, 256, 0, STREAM>>>((const uint32_t*)bufs[k]->inner(), bufs[k]->n,
                                               (unsigned long long*)(s + 24 * k));
        if (!want_cols[k] || !cols[k]) continue;
        const size_t rows = bufs[k]->n / cols[k];  // a thread sums >= 32 rows; at most 1024 slices
        const dim3 grid((unsigned)((cols[k] + 255) / 256), (unsigned)std::min<size_t>((rows + 31) / 32 + (rows == 0), 1024));
        colsum_kernel<<<grid, 256, 0, STREAM>>>((const float*)bufs[k]->inner(), rows, cols[k],
                                                 (double*)(s + sum_bytes) + at[k]);
    }
    std::vector<char> host(bytes);
    from_dev(host.data(), s, bytes);  // waits for the kernels (our stream)
    for (size_t k = 0; k < bufs.size(); k++) {
        unsigned long long v[3];
        memcpy(v, host.data() + 24 * k, 24);
        out[k].sum = v[0];
        out[k].weighted = v[1];
        out[k].nonfinite = v[2];
        if (want_cols[k]) {
            const double* c = (const double*)(host.data() + sum_bytes) + at[k];
            out[k].colsum.assign(c, c + cols[k]);
        }
    }
#else
    for (size_t k = 0; k < bufs.size(); k++) {
        const uint32_t* p = (const uint32_t*)bufs[k]->inner();
        Stat& st = out[k];
        if (want_cols[k]) st.colsum.assign(cols[k], 0.0);
        for (size_t i = 0; i < bufs[k]->n; i++) {
            uint32_t v = p[i];
            st.sum += v;
            st.weighted += (unsigned long long)v * (i % 61 + 1);
            st.nonfinite += (v & 0x7f800000u) == 0x7f800000u;
            if (want_cols[k]) {
                float f;
                memcpy(&f, &v, 4);
                st.colsum[i % cols[k]] += f;
            }
        }
    }
#endif
    return out;
}

static std::string stat_json(const Stat& st) {
    return obj({{"sum", std::to_string(st.sum)}, {"weighted", std::to_string(st.weighted)},
                {"nonfinite", std::to_string(st.nonfinite)}});
}

// Guard words that changed, counted in place (a long shape's input has a 64 MB guard after it).
static void count_guards(Buffer& b, uint32_t word, long long& before, long long& after, long long& first) {
#ifdef RUNNER_CUDA
    unsigned long long* s = (unsigned long long*)scratch(24);
    set_words64<<<1, 1, 0, STREAM>>>(s, 0, 0, ~0ull);
    if (b.before + b.after)
        guards_kernel<<<264, 256, 0, STREAM>>>((const uint32_t*)b.base, b.before, b.n, b.after, word, s);
    unsigned long long v[3];
    from_dev(v, (const char*)s, sizeof v);
    before = (long long)v[0];
    after = (long long)v[1];
    first = v[1] ? (long long)v[2] : -1;
#else
    const uint32_t* w = (const uint32_t*)b.base;
    before = after = 0;
    first = -1;
    for (size_t i = 0; i < b.before; i++) before += w[i] != word;
    const uint32_t* tail = w + b.before + b.n;
    for (size_t i = 0; i < b.after; i++)
        if (tail[i] != word) {
            if (first < 0) first = (long long)i;
            after++;
        }
#endif
}

// Rows of a row-major matrix's inner region into dst (cols words each); on a GPU the copies are queued
// and waited for once.
static void read_rows(Buffer& b, const std::vector<size_t>& rows, size_t cols, char* dst) {
    for (size_t k = 0; k < rows.size(); k++)
        if ((rows[k] + 1) * cols > b.n) throw std::runtime_error("rows: out of range");
#ifdef RUNNER_CUDA
    for (size_t k = 0; k < rows.size(); k++)
        cuda_ok(cudaMemcpyAsync(dst + 4 * cols * k, b.inner() + 4 * cols * rows[k], 4 * cols, cudaMemcpyDeviceToHost,
                                STREAM),
                "rows");
    cuda_ok(cudaStreamSynchronize(STREAM), "rows");
#else
    for (size_t k = 0; k < rows.size(); k++) memcpy(dst + 4 * cols * k, b.inner() + 4 * cols * rows[k], 4 * cols);
#endif
}

// n distinct rows of m, drawn after the round from the kernel's entropy (getrandom): the sample is
// nowhere in this process while the submission's code runs, so a kernel cannot compute only those rows.
static std::vector<size_t> draw_rows(size_t m, size_t n) {
    std::vector<size_t> rows;
    n = n < m ? n : m;
    while (rows.size() < n) {
        uint64_t r;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) throw std::runtime_error("getrandom failed");
        size_t row = (size_t)(r % m);
        bool seen = false;
        for (size_t x : rows) seen |= x == row;
        if (!seen) rows.push_back(row);
    }
    std::sort(rows.begin(), rows.end());
    return rows;
}

// The timed rounds' fresh inputs (rng_value), queued on our stream (the timed round synchronises first).
static void draw_random(Buffer& b, uint64_t seed, bool relu) {
#ifdef RUNNER_CUDA
    if (b.n) fill_random<<<1024, 256, 0, STREAM>>>((float*)b.inner(), b.n, seed, (int)relu);
#else
    for (size_t i = 0; i < b.n; i++) ((float*)b.inner())[i] = rng_value(seed, (uint32_t)i, (int)relu);
#endif
}

static void fill_async(Buffer& b, uint32_t word) {
#ifdef RUNNER_CUDA
    if (b.n) fill_words<<<256, 256, 0, STREAM>>>((uint32_t*)b.inner(), b.n, word);
#else
    dev_fill(b.inner(), b.n, word);
#endif
}

// Op "round": one timed round of the submission with everything around it, in one request
// (grader.run.worker.FreshRounds): (a) the inputs redrawn in place from their seeds and (b) the outputs
// poisoned, (c) the calls timed exactly as op "time" times them, (d) the round's checks: every listed
// buffer's stats (input checksums, NaN/inf counts, column sums) and `rows.n` rows, drawn now, of
// each listed output. Nothing is checked after a launcher's error.
static void round_request(const Json& q, Reply& r) {
    {
        DeviceAccess runner_side(true);  // the runner's own writes; closed again before the launcher runs
        if (const Json* draw = q.get("draw"))
            for (auto& d : draw->arr) draw_random(buffer(d.s("id")), (uint64_t)d.i("seed"), d.flag("relu"));
        if (const Json* poison = q.get("poison"))
            for (auto& p : poison->arr) fill_async(buffer(p.s("id")), (uint32_t)p.i("word"));
    }
    std::vector<Call> calls;
    if (const Json* cs = q.get("calls"))
        for (auto& c : cs->arr) calls.push_back(parse_call(c));
    Timed t;
    if (!calls.empty()) t = timed_round(calls, q.s("flush"), q.get("head_start_us") ? q.get("head_start_us")->num : 0.0,
                                        q.flag("device"));
#ifdef RUNNER_CUDA
    else cuda_ok(cudaStreamSynchronize(STREAM), "round");
#endif
    std::string stats = "[", rows_json = "[";
    if (t.error.empty()) {
        DeviceAccess runner_side(true);  // the checks read what the launcher left
        std::vector<Buffer*> bufs;
        std::vector<size_t> cols;
        std::vector<bool> want;
        const Json* st = q.get("stats");
        for (size_t k = 0; st && k < st->arr.size(); k++) {
            bufs.push_back(&buffer(st->arr[k].s("id")));
            cols.push_back((size_t)(st->arr[k].i("cols") > 0 ? st->arr[k].i("cols") : 1));
            want.push_back(st->arr[k].flag("colsum"));
        }
        std::vector<Stat> got = buffer_stats(bufs, cols, want);
        for (size_t k = 0; k < got.size(); k++) {
            stats += (k ? ", " : "") + stat_json(got[k]);
            if (!got[k].colsum.empty())
                r.arrays.emplace_back("colsum" + std::to_string(k),
                                      Array{"", "float64", {(long long)cols[k]},
                                            std::vector<char>((char*)got[k].colsum.data(),
                                                              (char*)got[k].colsum.data() + 8 * cols[k])});
        }
        const Json* rq = q.get("rows");
        if (rq && rq->get("of")) {
            std::vector<size_t> rows = draw_rows((size_t)rq->i("m"), (size_t)rq->i("n"));
            for (size_t k = 0; k < rows.size(); k++) rows_json += (k ? ", " : "") + std::to_string(rows[k]);
            const Json* of = rq->get("of");
            for (size_t k = 0; k < of->arr.size(); k++) {
                size_t c = (size_t)of->arr[k].i("cols");
                Array a{"", "int32", {(long long)rows.size(), (long long)c}, std::vector<char>(4 * c * rows.size())};
                read_rows(buffer(of->arr[k].s("id")), rows, c, a.bytes.data());
                r.arrays.emplace_back("rows" + std::to_string(k), std::move(a));
            }
        }
    }
    r.stop = !t.error.empty();
    r.meta = obj({{"ms", std::to_string(t.ms)}, {"host_ms", std::to_string(t.host_ms)}, {"error", quote(t.error)},
                  {"stats", stats + "]"}, {"rows", rows_json + "]"}});
}

// ------------------------------------------------------------------------------------ requests
static Reply handle(Message& m) {
    const Json& q = m.meta;
    std::string op = q.s("op");
    Reply r;
    bool device = q.flag("device");
#ifndef RUNNER_CUDA
    // the runner's own reads and writes of device memory (calls open it for their kernels only)
    // ("round" opens it around its own parts; a batch's requests each open it as they would alone)
    DeviceAccess runner_side(op != "call" && op != "time" && op != "emu" && op != "round" && op != "batch");
#endif
    if (op == "confine") {  // program: the worker's seccomp filter for this process (grader/run/seccomp.py)
        auto it = m.arrays.find("program");
        if (it == m.arrays.end() || it->second.bytes.size() % sizeof(sock_filter)) throw std::runtime_error("confine: bad program");
        sock_fprog prog{(unsigned short)(it->second.bytes.size() / sizeof(sock_filter)), (sock_filter*)it->second.bytes.data()};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
            throw std::runtime_error(std::string("seccomp: ") + strerror(errno));
    } else if (op == "load") {  // {lib}, bytes: a built library
        auto it = m.arrays.find("bytes");
        if (it == m.arrays.end()) throw std::runtime_error("load without bytes");
        Library& lib = LIBS[q.s("lib")] = load_library(q.s("lib"), it->second);
        if (lib.last_error) lib.last_error();  // its own CUDA runtime starts (and loads its modules) now, ungated
        if (q.s("lib") == "sub" && lib.device_alloc && lib.device_free && lib.device_access) DEVICE_OWNER = &lib;
    } else if (op == "symbols") {  // {lib, names}: which of them the library lacks
        Library& lib = library(q.s("lib"));
        std::string missing = "[";
        for (auto& n : q.get("names")->arr)
            if (!dlsym(lib.handle, n.str.c_str())) missing += (missing.size() > 1 ? ", " : "") + quote(n.str);
        r.meta = obj({{"missing", missing + "]"}});
    } else if (op == "alloc") {  // {id, n, before, after, word, cols}, data?: a guarded buffer
        Buffer b;
        b.before = (size_t)q.i("before");
        b.n = (size_t)q.i("n");
        b.after = (size_t)q.i("after");
        b.cols = q.i("cols");
        auto old = BUFFERS.find(q.s("id"));
        if (old != BUFFERS.end()) {
            release(old->second);
            BUFFERS.erase(old);
        }
#ifdef RUNNER_CUDA
        cuda_ok(cudaMalloc(&b.base, b.bytes() ? b.bytes() : 4), "allocate");
#else
        if (device && DEVICE_OWNER) {  // {device}: a CUDA exercise's buffer, in the runtime's device memory
            b.owner = DEVICE_OWNER;
            b.base = (char*)b.owner->device_alloc(b.bytes() ? b.bytes() : 4);
            if (!b.base) throw std::runtime_error("out of memory");
        } else {
            void* p = mmap(nullptr, b.bytes() ? b.bytes() : 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) throw std::runtime_error("out of memory");
            b.base = (char*)p;
        }
#endif
        dev_fill(b.base, b.before + b.n + b.after, (uint32_t)q.i("word"));
        auto it = m.arrays.find("data");
        if (it != m.arrays.end()) {
            if (it->second.bytes.size() != 4 * b.n) throw std::runtime_error("alloc: data of the wrong size");
            to_dev(b.inner(), it->second.bytes.data(), it->second.bytes.size());
        }
        BUFFERS[q.s("id")] = b;
    } else if (op == "fill") {  // {id, word}: the inner region, e.g. poison
        Buffer& b = buffer(q.s("id"));
        dev_fill(b.inner(), b.n, (uint32_t)q.i("word"));
    } else if (op == "write") {  // {id}, data: the inner region
        Buffer& b = buffer(q.s("id"));
        auto it = m.arrays.find("data");
        if (it == m.arrays.end() || it->second.bytes.size() != 4 * b.n) throw std::runtime_error("write: bad data");
        to_dev(b.inner(), it->second.bytes.data(), it->second.bytes.size());
    } else if (op == "read") {  // {id, whole}: the inner region, or the whole buffer with its guards
        Buffer& b = buffer(q.s("id"));
        bool whole = q.flag("whole");
        size_t words = whole ? b.before + b.n + b.after : b.n;
        Array a{"data", "int32", {(long long)words}, std::vector<char>(4 * words)};
        from_dev(a.bytes.data(), whole ? b.base : b.inner(), 4 * words);
        r.arrays.emplace_back("data", std::move(a));
    } else if (op == "guards") {  // {id, word}: how many guard words before and after the region changed
        long long before, after, first;
        count_guards(buffer(q.s("id")), (uint32_t)q.i("word"), before, after, first);
        r.meta = obj({{"before", std::to_string(before)}, {"after", std::to_string(after)}, {"first_after", std::to_string(first)}});
    } else if (op == "rows") {  // {id, rows, cols}: some rows of a row-major matrix's inner region
        size_t cols = (size_t)q.i("cols");
        std::vector<size_t> rows;
        for (auto& x : q.get("rows")->arr) rows.push_back((size_t)x.integer);
        Array a{"data", "int32", {(long long)rows.size(), (long long)cols}, std::vector<char>(4 * cols * rows.size())};
        read_rows(buffer(q.s("id")), rows, cols, a.bytes.data());
        r.arrays.emplace_back("data", std::move(a));
    } else if (op == "free") {
        for (auto& kv : BUFFERS) release(kv.second);
        BUFFERS.clear();
    } else if (op == "random") {  // {id, seed, relu}: the timed rounds' fresh inputs (rng_value)
        draw_random(buffer(q.s("id")), (uint64_t)q.i("seed"), q.flag("relu"));
#ifdef RUNNER_CUDA
        cuda_ok(cudaStreamSynchronize(STREAM), "random inputs");
#endif
    } else if (op == "stats") {  // {id, cols, colsum}: checksum, non-finite count, column sums
        size_t cols = (size_t)(q.i("cols") > 0 ? q.i("cols") : 1);
        Stat st = buffer_stats({&buffer(q.s("id"))}, {cols}, {q.flag("colsum")})[0];
        r.meta = stat_json(st);
        if (!st.colsum.empty())
            r.arrays.emplace_back("colsum", Array{"colsum", "float64", {(long long)cols},
                                                  std::vector<char>((char*)st.colsum.data(), (char*)st.colsum.data() + 8 * cols)});
    } else if (op == "stash") {  // {id}, data: kept here, so that a case's later schedules are not sent it again
        auto it = m.arrays.find("data");
        if (it == m.arrays.end()) throw std::runtime_error("stash without data");
        STASH[q.s("id")] = std::move(it->second.bytes);
    } else if (op == "restore") {  // {id, from}: a stash into the inner region
        Buffer& b = buffer(q.s("id"));
        auto it = STASH.find(q.s("from"));
        if (it == STASH.end() || it->second.size() != 4 * b.n) throw std::runtime_error("restore: no stash of that size");
        to_dev(b.inner(), it->second.data(), it->second.size());
    } else if (op == "call") {  // {lib, fn, args: [{b, out} | {i} | {s}], device}: one launcher, synchronised
        Call c = parse_call(q);
#ifdef RUNNER_CUDA
        std::vector<std::pair<char*, size_t>> outputs;
        size_t total = 0;
        for (size_t k = 0; k < c.bufs.size(); k++)
            if (c.outs[k]) {
                outputs.emplace_back(buffer(c.bufs[k]).inner(), 4 * buffer(c.bufs[k]).n);
                total += outputs.back().second;
            }
        snapshot_reserve(total);
        bool gated = gate_close();
        invoke(c, device);
        std::string elsewhere;
        if (gated) elsewhere = gate_open_and_judge(outputs);
        std::string err = library_error(*c.lib, true);
        if (err.empty()) err = elsewhere;
#else
        invoke(c, device);
        std::string err = library_error(*c.lib, true);
#endif
        r.meta = obj({{"error", quote(err)}});
        r.stop = !err.empty();
    } else if (op == "time") {  // {calls, flush, head_start_us, device}: one timed round
        std::vector<Call> calls;
        for (auto& c : q.get("calls")->arr) calls.push_back(parse_call(c));
        Timed t = timed_round(calls, q.s("flush"), q.get("head_start_us") ? q.get("head_start_us")->num : 0.0, device);
        r.meta = obj({{"ms", std::to_string(t.ms)}, {"host_ms", std::to_string(t.host_ms)}, {"error", quote(t.error)}});
        r.stop = !t.error.empty();
    } else if (op == "round") {  // see round_request: a timed round with its fresh inputs and its checks
        round_request(q, r);
    } else if (op == "batch") {  // {reqs}, arrays "K/name": requests in order, until one fails or a launcher errs
        const Json* reqs = q.get("reqs");
        if (!reqs || reqs->kind != Json::Arr) throw std::runtime_error("batch without reqs");
        std::string replies = "[";
        for (size_t k = 0; k < reqs->arr.size() && !r.stop; k++) {
            Message sub;
            sub.meta = reqs->arr[k];
            if (sub.meta.s("op") == "batch" || sub.meta.s("op") == "exit") throw std::runtime_error("batch: not inside a batch");
            std::string prefix = std::to_string(k) + "/";
            for (auto& kv : m.arrays)
                if (!kv.first.compare(0, prefix.size(), prefix)) sub.arrays[kv.first.substr(prefix.size())] = std::move(kv.second);
            Reply one = handle(sub);
            replies += (k ? ", " : "") + one.meta;
            for (auto& a : one.arrays) r.arrays.emplace_back(prefix + a.first, std::move(a.second));
            r.stop = one.stop;
        }
        r.meta = obj({{"replies", replies + "]"}});
    } else if (op == "emu") {  // {fn, args, ret}: the CPU runtime's own API (cuda_emu_*: schedules, the profile)
        std::string fn = q.s("fn");
        if (fn.rfind("cuda_emu_", 0) != 0) throw std::runtime_error("emu: not a CPU-runtime function");
        void* f = dlsym(library(q.s("lib", "sub")).handle, fn.c_str());
        if (!f) throw std::runtime_error("emu: the library has no " + fn);
        uint64_t a[6] = {};
        const Json* args = q.get("args");
        for (size_t k = 0; args && k < args->arr.size() && k < 6; k++) {
            const Json& v = args->arr[k];
            if (v.kind == Json::Obj) {  // {"a": name}: a pointer to one of the message's arrays
                auto it = m.arrays.find(v.s("a"));
                if (it == m.arrays.end()) throw std::runtime_error("emu: no array " + v.s("a"));
                a[k] = (uint64_t)(uintptr_t)it->second.bytes.data();
            } else {
                a[k] = (uint64_t)v.integer;
            }
        }
        typedef uint64_t (*F)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
        uint64_t v = ((F)f)(a[0], a[1], a[2], a[3], a[4], a[5]);
        std::string ret = q.s("ret", "void");
        if (ret == "str") r.meta = obj({{"value", v ? quote((const char*)(uintptr_t)v) : "null"}});
        else if (ret == "int") r.meta = obj({{"value", std::to_string((int)v)}});
    } else if (op == "device") {  // the GPU's name and size (grade.plausibility's float32 peak)
#ifdef RUNNER_CUDA
        cudaDeviceProp p;
        int dev;
        cuda_ok(cudaGetDevice(&dev), "device");
        cuda_ok(cudaGetDeviceProperties(&p, dev), "device properties");
        r.meta = obj({{"name", quote(p.name)}, {"sms", std::to_string(p.multiProcessorCount)}});
#else
        r.meta = obj({{"name", quote("cpu")}, {"sms", "0"}});
#endif
    } else {
        throw std::runtime_error("unknown request " + op);
    }
    return r;
}

// ------------------------------------------------------------------------------------ the file system view
// Before anything of the submission's loads, the runner leaves the worker's view of the file system (Python,
// torch, cuBLAS, the course) for one of its own: a read-only tmpfs holding only the files this process has
// loaded (libc, libstdc++, the CUDA driver on a GPU: loaded at the context's start, above), the shell and
// addr2line with their libraries (the CPU runtime names source lines with them), a few device nodes (the
// GPU's too), its own /proc/<pid> and parts of /sys. A library that reaches dlopen or open by walking its
// own address space finds no libpython, no libcublas and no torch to load. It needs a user namespace of its
// own (bubblewrap's worker runs as a non-root uid for this: grader/run/bwrap.py); where none can be made the
// runner runs on in the worker's view and says why in its first reply ("view").
#ifndef RUNNER_NO_VIEW
static std::string VIEW_ROOT;  // the new root while it is built

static bool write_file(const char* path, const std::string& text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = write(fd, text.data(), text.size()) == (ssize_t)text.size();
    close(fd);
    return ok;
}

static void make_dirs(const std::string& path) {  // mkdir -p (inside VIEW_ROOT)
    for (size_t i = 1; i <= path.size(); i++)
        if (i == path.size() || path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
}

// `path` of the worker's view appears at the same place in the new one (read-only; a directory with what
// is under it when `tree`). Missing paths are skipped: each caller lists what may exist.
static void bind_in(const std::string& path, bool tree = false) {
    struct stat st;
    if (path.empty() || path[0] != '/' || stat(path.c_str(), &st)) return;
    std::string dst = VIEW_ROOT + path;
    make_dirs(S_ISDIR(st.st_mode) ? dst : dst.substr(0, dst.rfind('/')));
    if (!S_ISDIR(st.st_mode)) {
        int fd = open(dst.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) close(fd);
    }
    if (mount(path.c_str(), dst.c_str(), nullptr, MS_BIND | (tree ? MS_REC : 0), nullptr)) return;
    unsigned long keep = S_ISCHR(st.st_mode) ? 0 : MS_NODEV;  // device nodes must stay usable
    mount(nullptr, dst.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | keep, nullptr);
}

static int each_object(dl_phdr_info* info, size_t, void* out) {
    const char* name = info->dlpi_name;
    if (name && name[0] == '/' && !strstr(name, "/proc/self/fd/")) ((std::vector<std::string>*)out)->push_back(name);
    return 0;
}

// `program` (found on PATH) and the libraries the dynamic loader resolves for it (`ld.so --list`).
static void program_and_libraries(const char* program, const std::string& loader, std::vector<std::string>& out) {
    std::string path;
    const char* env = getenv("PATH");
    std::string dirs = env ? env : "/usr/bin:/bin";
    for (size_t a = 0, b; a <= dirs.size(); a = b + 1) {
        b = dirs.find(':', a);
        if (b == std::string::npos) b = dirs.size();
        std::string p = dirs.substr(a, b - a) + "/" + program;
        if (b > a && access(p.c_str(), X_OK) == 0) { path = p; break; }
    }
    if (path.empty() || loader.empty()) return;
    out.push_back(path);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC)) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char* argv[] = {(char*)loader.c_str(), (char*)"--list", (char*)path.c_str(), nullptr};
    pid_t pid;
    bool spawned = posix_spawn(&pid, loader.c_str(), &fa, nullptr, argv, environ) == 0;
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    std::string text;
    char buf[4096];
    for (ssize_t got; spawned && (got = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, (size_t)got);
    close(fds[0]);
    if (spawned) waitpid(pid, nullptr, 0);
    // lines "\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" and "\t/lib64/ld-linux-x86-64.so.2 (0x...)"
    for (size_t a = 0, b; a < text.size(); a = b + 1) {
        b = text.find('\n', a);
        if (b == std::string::npos) b = text.size();
        std::string line = text.substr(a, b - a);
        size_t arrow = line.find("=> "), start = arrow != std::string::npos ? arrow + 3 : line.find('/');
        if (start == std::string::npos || start >= line.size() || line[start] != '/') continue;
        out.push_back(line.substr(start, line.find(' ', start) - start));
    }
}

// Everything the new view holds, as paths of the current one.
static std::vector<std::string> view_files() {
    // libraries a kernel library may need beyond the runner's own: loaded now, resolved by name later
    for (const char* lib : {"libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0"}) dlopen(lib, RTLD_NOW);
#ifndef RUNNER_CUDA
    // and the C++ runtime a g++-built kernel library needs, which this runner may not have loaded itself (a
    // $CXX that links it statically): once the view is made, nothing outside it can be found by name
    for (const char* lib : {"libstdc++.so.6", "libgcc_s.so.1"}) dlopen(lib, RTLD_NOW);
#endif
    std::vector<std::string> files;
    dl_iterate_phdr(each_object, &files);
    std::string loader;
    for (auto& f : files)
        if (f.find("/ld-linux") != std::string::npos || f.find("/ld64.so") != std::string::npos) loader = f;
    program_and_libraries("sh", loader, files);  // popen's /bin/sh and the runtime's addr2line
    if (access("/bin/sh", X_OK) == 0) files.push_back("/bin/sh");
    program_and_libraries("addr2line", loader, files);
#ifdef RUNNER_CUDA
    // the driver's own libraries beside libcuda (it may load some later: the PTX JIT, ...)
    std::vector<std::string> more;
    for (auto& f : files) {
        size_t slash = f.rfind('/');
        if (f.find("/libcuda.so") == std::string::npos || slash == std::string::npos) continue;
        for (const char* pattern : {"libcuda.so*", "libnvidia-*.so*"}) {
            glob_t g;
            if (glob((f.substr(0, slash + 1) + pattern).c_str(), 0, nullptr, &g) == 0)
                for (size_t i = 0; i < g.gl_pathc; i++) more.push_back(g.gl_pathv[i]);
            globfree(&g);
        }
    }
    files.insert(files.end(), more.begin(), more.end());
#endif
    return files;
}

static void drop_capabilities() {
    for (int c = 0; c <= 63; c++) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
    __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct d[2] = {};
    syscall(SYS_capset, &h, d);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

static std::string view_error(const char* step) { return std::string(step) + ": " + strerror(errno); }

// The new root, on a tmpfs mounted over an existing directory of this (private) mount namespace.
static std::string build_view(const std::vector<std::string>& files) {
    const char* at = nullptr;
    for (const char* d : {"/tmp", "/mnt", "/var/tmp", "/dev"})
        if (access(d, F_OK) == 0) { at = d; break; }
    if (!at) return "no directory to build the view on";
    if (mount("runner-view", at, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")) return view_error("tmpfs");
    VIEW_ROOT = at;
    for (auto& f : files) bind_in(f);
    make_dirs(VIEW_ROOT + "/dev/shm");
    for (const char* node : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}) bind_in(node);
    glob_t g;
    if (glob("/dev/nvidia*", 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; i++) bind_in(g.gl_pathv[i], true);
    globfree(&g);
    // its own /proc/<pid> (/proc/self: the libraries load from /proc/self/fd/N), never another process's
    std::string pid = std::to_string(getpid());
    bind_in("/proc/" + pid);
    if (symlink(pid.c_str(), (VIEW_ROOT + "/proc/self").c_str())) return view_error("/proc/self");
    for (const char* p : {"/proc/cpuinfo", "/proc/meminfo", "/proc/stat"}) bind_in(p);
    for (const char* p : {"/proc/driver/nvidia", "/sys/devices", "/sys/bus", "/sys/class"}) bind_in(p);
    // the libraries it is sent (load_library), on a tmpfs of their own
    make_dirs(VIEW_ROOT + "/libraries");
    if (mount("runner-libraries", (VIEW_ROOT + "/libraries").c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1g,mode=0700"))
        return view_error("tmpfs for libraries");
    make_dirs(VIEW_ROOT + "/.old");
    if (chdir(at) || syscall(SYS_pivot_root, ".", ".old")) return view_error("pivot_root");
    if (umount2("/.old", MNT_DETACH) || rmdir("/.old") || chdir("/")) return view_error("leaving the old root");
    if (mount(nullptr, "/", nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr)) return view_error("ro");
    LIBRARY_DIR = "/libraries";
    return "";
}

// Step 1, while the process has one thread (a user namespace cannot be entered later: the CUDA driver starts
// threads): its own user and mount namespaces, the same ids inside. '' or why not.
static std::string leave_namespaces() {
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) return view_error("unshare");
    if (!write_file("/proc/self/setgroups", "deny") ||
        !write_file("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
        !write_file("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1"))
        return view_error("user namespace id map");
    return mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) ? view_error("private mounts") : "";
}

// Step 2, once the GPU's context is up (the driver is loaded): the view. '' once the runner is in it.
static std::string enter_view(const std::string& namespaces) {
    std::string err = namespaces.empty() ? build_view(view_files()) : namespaces;
    drop_capabilities();  // those of the new user namespace (the runner had none outside it)
    return err;
}
#else
static std::string leave_namespaces() { return "built without it (RUNNER_NO_VIEW)"; }
static std::string enter_view(const std::string& namespaces) { return namespaces; }
#endif

int main(int argc, char** argv) {
    // Before any library of the submission is loaded: die with the worker, never dump core
    // (the worker's memory is not ours to read, and ours holds nothing worth reading either).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_DUMPABLE, 0);
    if (argc > 2) {
        IN_FD = atoi(argv[1]);
        OUT_FD = atoi(argv[2]);
    }
    if (argc > 3 && getppid() != atoi(argv[3])) return 5;  // the worker died before we asked to die with it
    // new credentials clear the death signal and the dumpable flag: set both again
    // argv[4] "noview": stay in the worker's view (grader/run/runner/client.py view_wanted)
    bool view_on = !(argc > 4 && !strcmp(argv[4], "noview"));
    std::string namespaces = view_on ? leave_namespaces() : "off (GRADER_RUNNER_VIEW)";
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_DUMPABLE, 0);
    if (argc > 3 && getppid() != atoi(argv[3])) return 5;
#ifdef RUNNER_CUDA
    // Every module of a library loads with it, not at its kernel's first launch: a lazy load inside a
    // checked call would wait behind the gate on the default stream (the stream contract, above).
    setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    // the context and our stream now (the worker starts us while the compiler may still run)
    cudaError_t e = cudaStreamCreateWithFlags(&STREAM, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        Reply r;
        r.meta = obj({{"fatal", quote(std::string("no GPU for the runner: ") + cudaGetErrorString(e))}});
        send(r);
        return 0;
    }
#endif
    std::string view = view_on ? enter_view(namespaces) : namespaces;
    prctl(PR_SET_DUMPABLE, 0);
    Reply ready;
    ready.meta = obj({{"ready", "true"}, {"view", quote(view)}});
    send(ready);
    Message m;
    for (;;) {
        try {
            if (!recv(m)) return 0;
        } catch (std::exception& ex) {
            Reply r;
            r.meta = obj({{"fatal", quote(ex.what())}});
            send(r);
            return 3;
        }
        if (m.meta.s("op") == "exit") return 0;
        Reply r;
        try {
            r = handle(m);
        } catch (std::exception& ex) {
            r = Reply();
            r.meta = obj({{"fail", quote(ex.what())}});
        }
        fflush(stdout);  // the kernel's printf reaches the log before the reply
        send(r);
    }
}
