// State shared by runtime.cpp (scheduler) and checks.cpp (race detector, sanitizer hooks).
#pragma once
#define CUDA_EMU_RUNTIME 1  // cuda_emu.h: libc's memcpy, memmove and memset here
#include <cstdint>
#include <string>
#include <vector>
#include "cuda_emu.h"

namespace cuda_emu {

enum State { RUNNABLE, AT_BARRIER, AT_WARP_OP, DONE };

struct Fiber {
    void* sp = nullptr;      // saved stack pointer (assembly switch)
    void* uc = nullptr;      // ucontext_t* (portable / sanitizer switch)
    char* stack = nullptr;   // lowest usable byte
    size_t stack_size = 0;
    uint3 tid{};
    int linear = 0;
    State state = DONE;
    int line = 0, op = 0;    // where it waits and for what
    unsigned mask = 0;       // warp ops
    uint64_t value = 0, result = 0;
    int arg = 0, width = 32;
    void* asan_fake = nullptr;
};

struct LaunchInfo {
    const char* kernel = "";
    int line = 0;
    dim3 grid, block;
    size_t smem = 0;
    int nthreads = 0;
    const void* fn = nullptr;  // the kernel's function
};

extern CUDA_EMU_API LaunchInfo g_launch;
extern CUDA_EMU_API int g_linear;           // linear id of the running CUDA thread
extern CUDA_EMU_API bool g_abort;           // an error happened: skip the rest of the launch
extern CUDA_EMU_API int g_flags;            // cuda_emu_configure flags
extern CUDA_EMU_API bool g_running;         // a launch's threads run (device code)
// Race detector clocks: every barrier release bumps g_clock. g_warp_sync[w]: the last sync of
// every lane of warp w; g_lane_sync[w][a][b]: the last sync with a partial mask holding lanes a and b.
extern CUDA_EMU_API uint64_t g_clock, g_block_sync, g_warp_sync[32], g_lane_sync[32][32][32];
// Is thread b (linear id) ordered after what thread a of the same warp did at clock_a?
inline bool warp_synced(int a, uint64_t clock_a, int b) {
    return g_warp_sync[a / 32] > clock_a || g_lane_sync[a / 32][a % 32][b % 32] > clock_a;
}
extern CUDA_EMU_API unsigned char g_dyn_smem[];
extern CUDA_EMU_API size_t g_dyn_smem_cap;

// Records the first error of a launch (printf-style), with kernel/block/thread context.
CUDA_EMU_API void report(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Leaves the running CUDA thread for good after an error (back to the scheduler).
CUDA_EMU_API void abandon_thread();
CUDA_EMU_API std::string thread_name(int linear);
// "kernel.cu:42" for a code address in this library ("line ?" if unknown).
CUDA_EMU_API std::string source_line(const void* pc);
CUDA_EMU_API void checks_new_launch();
// A static __shared__ array of `bytes` was reached by the running kernel's threads: it counts in that kernel's
// static shared memory, once (an array of a __device__ function counts in every kernel that calls it, as in nvcc).
CUDA_EMU_API void note_static_shared(const void* array, size_t bytes);

// ---- the race detector for the launcher's outputs in global memory (globals.cpp) ----------
extern CUDA_EMU_API bool g_race_outputs;  // this launch checks the accesses to the outputs
CUDA_EMU_API void globals_new_launch();   // before checks_new_launch (which opens the windows)
CUDA_EMU_API void globals_window(uintptr_t& lo, uintptr_t& span);  // widens [lo, lo+span) to the outputs
CUDA_EMU_API void global_access(const void* p, size_t n, bool write, const void* pc);  // ignores non-outputs
CUDA_EMU_API void globals_end_launch();   // reports two unordered writes of different values
CUDA_EMU_API void globals_new_block();    // a block starts: no fences, no acquires yet (from checks_new_block)
// Device memory (globals.cpp): the launch's buffers (cuda_emu_set_outputs, flags bit 1) and
// cudaMalloc's blocks. [g_host_lo, +g_host_span) covers them while no kernel runs (closed during a
// launch, and after the first report of a launcher call): host code that touches them is reported
// (host_access). [g_in_lo, +g_in_span) covers the launch's inputs while a kernel runs: a store there
// is reported (input_write).
extern CUDA_EMU_API uintptr_t g_host_lo, g_host_span, g_in_lo, g_in_span;
CUDA_EMU_API void host_access(const void* p, size_t n, bool write, const void* pc);
CUDA_EMU_API void input_write(const void* p, size_t n, const void* pc);
// [g_oob_lo, +g_oob_span) spans the allocations around the launch's buffers while a kernel runs: a load there
// outside every buffer (a guard zone) is reported (oob_read).
extern CUDA_EMU_API uintptr_t g_oob_lo, g_oob_span;
CUDA_EMU_API void oob_read(const void* p, size_t n, const void* pc);
CUDA_EMU_API void set_status(int error);
// cudaMalloc's blocks are PROT_NONE outside kernels and the runtime's own copies (globals.cpp): open while one of
// these lives (they nest). take_host_fault: a host access that faulted on a closed block becomes the error.
CUDA_EMU_API void device_open();
CUDA_EMU_API void device_close();
struct DeviceOpen {
    DeviceOpen() { device_open(); }
    ~DeviceOpen() { device_close(); }
    DeviceOpen(const DeviceOpen&) = delete;
    DeviceOpen& operator=(const DeviceOpen&) = delete;
};
// The device memory a kernel may reach besides the launcher's buffers (the access profile counts it): cudaMalloc's
// blocks (name null) and the __device__ / __constant__ variables (name: theirs); not the runner's own buffers.
struct DeviceSpan { uintptr_t lo, hi; const char* name; int line; };
CUDA_EMU_API void device_memory(std::vector<DeviceSpan>& out);
CUDA_EMU_API void take_host_fault();  // what the next cudaGetLastError returns (a runtime call failed)
// Records an error found in the launcher's host code (no kernel context); the first error stays.
CUDA_EMU_API void report_host(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
CUDA_EMU_API void checks_new_block();  // sets whether this block's shared accesses are checked
// The pipeline primitives (checks.cpp): a new block drops what an abandoned thread left in flight;
// a thread's exit lands its copies still in flight.
CUDA_EMU_API void pipeline_new_block();
CUDA_EMU_API void pipeline_thread_exit();

// The access profile (profile.cpp), fed by the same access hooks as the race detector.
extern CUDA_EMU_API bool g_profile_block;  // record this block's accesses
extern CUDA_EMU_API bool g_profile_tally;  // in a sampled launch: count every block's global loads (bytes)
CUDA_EMU_API void profile_tally(uintptr_t addr, size_t n, bool write);  // a global access of an unrecorded block
CUDA_EMU_API void profile_new_launch();     // chooses the blocks to record (from checks_new_launch)
CUDA_EMU_API void profile_new_block();      // sets g_profile_block (from checks_new_block)
CUDA_EMU_API void profile_interval();       // a barrier was released or a block starts: count
CUDA_EMU_API void profile_end_launch();
// space 0: shared (buffer = race detector's range index, addr = offset in the shared view);
// space 1: global (buffer = index of the launch buffer's name, addr = the address)
CUDA_EMU_API void profile_access(int space, int buffer, uintptr_t addr, size_t n, bool write, const void* pc);
CUDA_EMU_API void profile_shared_range(int id, const char* name, size_t bytes);
CUDA_EMU_API uintptr_t profile_shared_vbase(int id);
CUDA_EMU_API void profile_global_window(uintptr_t& lo, uintptr_t& span);
CUDA_EMU_API int profile_buffer_of(uintptr_t a);  // name index of the launch buffer holding a, or -1

}  // namespace cuda_emu
