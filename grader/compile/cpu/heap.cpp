// heap.cpp: the device heap. What a kernel file's malloc, calloc, realloc, free, aligned allocations and
// operator new/delete call (build.py renames them in the kernel file's object: cuda_emu_heap_<name>).
//
// Device code (inside a launch) allocates from a region of its own, as CUDA's device-side malloc does (its heap,
// cudaLimitMallocHeapSize, is apart from the host's): with glibc's heap, which the access profile's and the race
// detector's containers share, a kernel saw other addresses in exactly the blocks they record
// (tests/submissions/profile_detect_by_heap.cu). Here an address depends on nothing but the kernel file's own
// allocations: blocks of 16 << c bytes, a free list per size class, handed out from one static array. Past its
// end malloc returns null, as CUDA's does. Host code (a launcher, a static constructor) keeps glibc's heap;
// a pointer is freed into the heap it came from, whoever frees it.
// One OS thread runs a launch (fibers never switch inside these functions): no lock.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "runtime_internal.h"

namespace cuda_emu {
namespace {

constexpr size_t kHeapBytes = size_t{64} << 20;  // 8x CUDA's default device heap (8 MB)
constexpr int kClasses = 23;                     // 16 B .. 64 MiB
constexpr size_t kHeader = 16;                   // before every pointer handed out: {class, offset from its block}
alignas(4096) unsigned char g_heap[kHeapBytes];
size_t g_used = 0;                 // bytes of g_heap handed out as blocks so far
unsigned char* g_free[kClasses];   // free blocks per class, linked through their first word

struct Header {
    uint32_t cls;
    uint32_t offset;
};

bool ours(const void* p) { return p >= g_heap && p < g_heap + kHeapBytes; }

void* take(size_t bytes, size_t align) {  // align: a power of two
    if (align < kHeader) align = kHeader;
    if (bytes > kHeapBytes || align > kHeapBytes / 2) return nullptr;
    const size_t need = bytes + kHeader + (align - kHeader);
    int c = 0;
    while ((size_t{16} << c) < need) ++c;
    if (c >= kClasses) return nullptr;
    unsigned char* block = g_free[c];
    if (block) {
        std::memcpy(&g_free[c], block, sizeof block);
    } else {
        const size_t size = size_t{16} << c;
        if (kHeapBytes - g_used < size) return nullptr;
        block = g_heap + g_used;
        g_used += size;
    }
    uintptr_t user = ((uintptr_t)block + kHeader + align - 1) & ~(uintptr_t)(align - 1);
    Header h{(uint32_t)c, (uint32_t)(user - (uintptr_t)block)};
    std::memcpy((void*)(user - kHeader), &h, sizeof h);
    return (void*)user;
}

void give(void* p) {
    Header h;
    std::memcpy(&h, (unsigned char*)p - kHeader, sizeof h);
    unsigned char* block = (unsigned char*)p - h.offset;
    std::memcpy(block, &g_free[h.cls], sizeof block);
    g_free[h.cls] = block;
}

size_t capacity(void* p) {  // bytes usable from p
    Header h;
    std::memcpy(&h, (unsigned char*)p - kHeader, sizeof h);
    return (size_t{16} << h.cls) - h.offset;
}

void* aligned(size_t bytes, size_t align) { return g_running ? take(bytes, align) : std::aligned_alloc(align, bytes); }
void release(void* p) {
    if (ours(p)) give(p);
    else std::free(p);
}
void* checked_new(size_t bytes, size_t align) {  // operator new: device code gets null when full (CUDA's)
    if (g_running) return take(bytes, align);
    return align > alignof(std::max_align_t) ? ::operator new(bytes, std::align_val_t(align)) : ::operator new(bytes);
}
void* nothrow_new(size_t bytes, size_t align) {
    if (g_running) return take(bytes, align);
    return align > alignof(std::max_align_t) ? ::operator new(bytes, std::align_val_t(align), std::nothrow)
                                             : ::operator new(bytes, std::nothrow);
}
void release_new(void* p, size_t align) {
    if (ours(p)) give(p);
    else if (align > alignof(std::max_align_t)) ::operator delete(p, std::align_val_t(align));
    else ::operator delete(p);
}

}  // namespace
}  // namespace cuda_emu

using namespace cuda_emu;
#define HEAP_API extern "C" CUDA_EMU_API

HEAP_API void* cuda_emu_heap_malloc(size_t n) { return g_running ? take(n, 16) : std::malloc(n); }
HEAP_API void* cuda_emu_heap_calloc(size_t n, size_t size) {
    if (!g_running) return std::calloc(n, size);
    if (size && n > kHeapBytes / size) return nullptr;
    void* p = take(n * size, 16);
    if (p) std::memset(p, 0, n * size);
    return p;
}
HEAP_API void* cuda_emu_heap_realloc(void* p, size_t n) {
    if (!p) return cuda_emu_heap_malloc(n);
    if (!ours(p)) return std::realloc(p, n);
    if (n <= capacity(p)) return p;
    void* q = take(n, 16);
    if (q) {
        std::memcpy(q, p, capacity(p));
        give(p);
    }
    return q;
}
HEAP_API void cuda_emu_heap_free(void* p) {
    if (p) release(p);
}
HEAP_API void* cuda_emu_heap_aligned_alloc(size_t align, size_t n) { return aligned(n, align); }
HEAP_API void* cuda_emu_heap_memalign(size_t align, size_t n) { return aligned(n, align); }
HEAP_API int cuda_emu_heap_posix_memalign(void** out, size_t align, size_t n) {
    if (align < sizeof(void*) || (align & (align - 1))) return 22;  // EINVAL
    if (!g_running) return posix_memalign(out, align, n);
    *out = take(n, align);
    return *out ? 0 : 12;  // ENOMEM
}

// operator new and delete, every form (mangled: build.py's HEAP_SYMBOLS)
using A = std::align_val_t;
using NT = const std::nothrow_t&;
constexpr size_t kPlain = alignof(std::max_align_t);
HEAP_API void* cuda_emu_heap__Znwm(size_t n) { return checked_new(n, kPlain); }
HEAP_API void* cuda_emu_heap__Znam(size_t n) { return checked_new(n, kPlain); }
HEAP_API void* cuda_emu_heap__ZnwmRKSt9nothrow_t(size_t n, NT) { return nothrow_new(n, kPlain); }
HEAP_API void* cuda_emu_heap__ZnamRKSt9nothrow_t(size_t n, NT) { return nothrow_new(n, kPlain); }
HEAP_API void* cuda_emu_heap__ZnwmSt11align_val_t(size_t n, A a) { return checked_new(n, (size_t)a); }
HEAP_API void* cuda_emu_heap__ZnamSt11align_val_t(size_t n, A a) { return checked_new(n, (size_t)a); }
HEAP_API void* cuda_emu_heap__ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, A a, NT) { return nothrow_new(n, (size_t)a); }
HEAP_API void* cuda_emu_heap__ZnamSt11align_val_tRKSt9nothrow_t(size_t n, A a, NT) { return nothrow_new(n, (size_t)a); }
HEAP_API void cuda_emu_heap__ZdlPv(void* p) { release_new(p, kPlain); }
HEAP_API void cuda_emu_heap__ZdaPv(void* p) { release_new(p, kPlain); }
HEAP_API void cuda_emu_heap__ZdlPvm(void* p, size_t) { release_new(p, kPlain); }
HEAP_API void cuda_emu_heap__ZdaPvm(void* p, size_t) { release_new(p, kPlain); }
HEAP_API void cuda_emu_heap__ZdlPvRKSt9nothrow_t(void* p, NT) { release_new(p, kPlain); }
HEAP_API void cuda_emu_heap__ZdaPvRKSt9nothrow_t(void* p, NT) { release_new(p, kPlain); }
HEAP_API void cuda_emu_heap__ZdlPvSt11align_val_t(void* p, A a) { release_new(p, (size_t)a); }
HEAP_API void cuda_emu_heap__ZdaPvSt11align_val_t(void* p, A a) { release_new(p, (size_t)a); }
HEAP_API void cuda_emu_heap__ZdlPvmSt11align_val_t(void* p, size_t, A a) { release_new(p, (size_t)a); }
HEAP_API void cuda_emu_heap__ZdaPvmSt11align_val_t(void* p, size_t, A a) { release_new(p, (size_t)a); }
HEAP_API void cuda_emu_heap__ZdlPvSt11align_val_tRKSt9nothrow_t(void* p, A a, NT) { release_new(p, (size_t)a); }
HEAP_API void cuda_emu_heap__ZdaPvSt11align_val_tRKSt9nothrow_t(void* p, A a, NT) { release_new(p, (size_t)a); }
