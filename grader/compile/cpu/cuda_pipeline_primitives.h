// cuda_pipeline_primitives.h for the CPU backend (found through -I before any CUDA header; the
// nvcc build uses NVIDIA's own). The asynchronous-copy primitives, emulated so that the classic
// pipeline bugs show (checks.cpp): each thread keeps a queue of its pending copies, and a copy
// lands only when a __pipeline_wait_prior covers its committed group (or when the thread exits),
// the latest moment a GPU may complete it. Until then the destination holds what it held before
// (at block start: the poison), and any access to it is reported; the write is also checked
// against the other threads' accesses since the last barrier at the moment it is issued, the
// earliest moment a GPU may complete it. Macros, so that every message names the caller's line.
#pragma once
#include "cuda_emu.h"

namespace cuda_emu {
CUDA_EMU_API void pipeline_memcpy_async(int line, void* dst_shared, const void* src_global, size_t size_and_align,
                                        size_t zfill = 0);
CUDA_EMU_API void pipeline_commit(int line);
CUDA_EMU_API void pipeline_wait_prior(int line, size_t prior);
}  // namespace cuda_emu

// Copies size_and_align - zfill bytes (4, 8 or 16 in all, both pointers aligned to that size) from
// global to shared memory and zero-fills the last zfill bytes, as one asynchronous copy.
#define __pipeline_memcpy_async(...) ::cuda_emu::pipeline_memcpy_async(__LINE__, __VA_ARGS__)
// Closes the calling thread's current group of copies (an empty group counts too).
#define __pipeline_commit() ::cuda_emu::pipeline_commit(__LINE__)
// Waits until at most `prior` of the calling thread's committed groups are pending (NVIDIA's
// header treats any prior above 8 as 8); copies issued after the last commit stay pending.
#define __pipeline_wait_prior(prior) ::cuda_emu::pipeline_wait_prior(__LINE__, (prior))
