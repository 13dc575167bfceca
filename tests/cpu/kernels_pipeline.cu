// Kernels for test_pipeline.py: the __pipeline_* primitives (<cuda_pipeline.h>), right and wrong.
// Markers in comments (COPY:, READ: ...) let the tests find the lines.
#include <cuda_runtime.h>
#include <cuda_pipeline.h>

// One 16-byte copy with zfill, one 8-byte copy, one 4-byte copy per thread: out gets what landed.
__global__ void copy_kinds(const float* in, float* out, int zfill16) {
    __shared__ __align__(16) float s[64][8];
    const int t = threadIdx.x;
    __pipeline_memcpy_async(&s[t][0], &in[8 * t], 16, zfill16);
    __pipeline_memcpy_async(&s[t][4], &in[8 * t + 4], 8);
    __pipeline_memcpy_async(&s[t][6], &in[8 * t + 6], 4);
    s[t][7] = -1.0f;  // not a copy's destination: a plain store beside them
    __pipeline_commit();
    __pipeline_wait_prior(0);
    for (int j = 0; j < 8; ++j) out[8 * t + j] = s[t][j];
}

// Three committed groups and one uncommitted copy; wait_prior(`prior`), then read group `which`
// (3: the copy issued after the last commit).
__global__ void groups(const float* in, float* out, int prior, int which) {
    __shared__ float s[4][32];
    const int t = threadIdx.x;
    for (int g = 0; g < 3; ++g) {
        __pipeline_memcpy_async(&s[g][t], &in[32 * g + t], 4);  // COPY: group g
        __pipeline_commit();
    }
    __pipeline_memcpy_async(&s[3][t], &in[96 + t], 4);  // COPY: uncommitted
    __pipeline_wait_prior(prior);
    out[t] = s[which][t];  // READ: own copy
}

// Each thread copies one element, waits, then (barrier or not) reads its neighbour's.
__global__ void neighbour(const float* in, float* out, int barrier) {
    __shared__ float s[64];
    const int t = threadIdx.x;
    __pipeline_memcpy_async(&s[t], &in[t], 4);  // COPY: neighbour
    __pipeline_commit();
    __pipeline_wait_prior(0);
    if (barrier) __syncthreads();
    out[t] = s[(t + 1) % 64];  // READ: neighbour
}

// A second copy into a word whose first copy has not landed (a stage refilled too early).
__global__ void refill_in_flight(const float* in, float* out) {
    __shared__ float s[64];
    const int t = threadIdx.x;
    __pipeline_memcpy_async(&s[t], &in[t], 4);
    __pipeline_commit();
    __pipeline_memcpy_async(&s[t], &in[64 + t], 4);  // COPY: refill
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    out[t] = s[t];
}

// Every thread reads the whole stage, then thread t refills word t without a barrier in between.
__global__ void refill_while_read(const float* in, float* out) {
    __shared__ float s[64];
    const int t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    float sum = 0.0f;
    for (int j = 0; j < 64; ++j) sum += s[j];  // READ: stage
    __pipeline_memcpy_async(&s[t], &in[64 + t], 4);  // COPY: too early
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    out[t] = sum + s[t];
}

// Copies that no wait covers land when the thread exits (no barrier: plain mode).
__global__ void never_waits(const float* in) {
    __shared__ float s[64];
    __pipeline_memcpy_async(&s[threadIdx.x], &in[threadIdx.x], 4);
}

// Wrong arguments: each mode one mistake.
__global__ void bad_args(const float* in, float* out, int mode) {
    __shared__ __align__(16) float s[64];
    const int t = threadIdx.x;
    if (mode == 0) __pipeline_memcpy_async(&s[0], &in[0], 12);  // BAD: size
    if (mode == 1) __pipeline_memcpy_async(&s[0], &in[0], 4, 8);  // BAD: zfill
    if (mode == 2) __pipeline_memcpy_async(out, &in[0], 4);  // BAD: global dst
    if (mode == 3) __pipeline_memcpy_async(&s[2], &in[0], 16);  // BAD: dst align
    if (mode == 4) __pipeline_memcpy_async(&s[0], &in[1], 8);  // BAD: src align
    __pipeline_commit();
    __pipeline_wait_prior(0);
    out[t] = s[t];
}

extern "C" void launch_copy_kinds(const float* in, float* out, int zfill16) { copy_kinds<<<1, 64>>>(in, out, zfill16); }
extern "C" void launch_groups(const float* in, float* out, int prior, int which) { groups<<<1, 32>>>(in, out, prior, which); }
extern "C" void launch_neighbour(const float* in, float* out, int barrier) { neighbour<<<1, 64>>>(in, out, barrier); }
extern "C" void launch_refill_in_flight(const float* in, float* out) { refill_in_flight<<<1, 64>>>(in, out); }
extern "C" void launch_refill_while_read(const float* in, float* out) { refill_while_read<<<1, 64>>>(in, out); }
extern "C" void launch_never_waits(const float* in) { never_waits<<<2, 64>>>(in); }
extern "C" void launch_bad_args(const float* in, float* out, int mode) { bad_args<<<1, 64>>>(in, out, mode); }
