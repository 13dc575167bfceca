// State shared by runtime.cpp (scheduler) and checks.cpp (race detector, sanitizer hooks).
#pragma once
#include <cstdint>
#include <string>
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
};

extern CUDA_EMU_API LaunchInfo g_launch;
extern CUDA_EMU_API int g_linear;           // linear id of the running CUDA thread
extern CUDA_EMU_API bool g_abort;           // an error happened: skip the rest of the launch
extern CUDA_EMU_API int g_flags;            // cuda_emu_configure flags
// Race detector clocks: every barrier release bumps g_clock.
extern CUDA_EMU_API uint64_t g_clock, g_block_sync, g_warp_sync[32];
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
CUDA_EMU_API void checks_new_block();  // sets whether this block's shared accesses are checked

}  // namespace cuda_emu
