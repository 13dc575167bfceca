// Kernels with the bugs the CPU backend must catch (each marked with a BUG comment).
#include <cuda_runtime.h>
#define T 16

__global__ void early_return(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[T][T], Bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    if (row >= M || col >= N) return;  // BUG: early return
    float acc = 0.f;
    for (int t = 0; t < K; t += T) {
        As[ty][tx] = t + tx < K ? A[row * K + t + tx] : 0.f;
        Bs[ty][tx] = t + ty < K ? B[(t + ty) * N + col] : 0.f;
        __syncthreads();  // WAIT: first barrier
        for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * N + col] = acc;
}

__global__ void missing_barrier(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[T][T], Bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.f;
    for (int t = 0; t < K; t += T) {
        As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.f;  // WRITE: tile load
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.f;
        __syncthreads();
        for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];  // READ: tile use
        // BUG: no second __syncthreads()
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

#define LAUNCH_GEMM(kern)                                                              \
    extern "C" void kern##_gemm(const float* A, const float* B, float* C, int M, int N, int K) { \
        kern<<<dim3((N + T - 1) / T, (M + T - 1) / T), dim3(T, T)>>>(A, B, C, M, N, K);  \
    }
LAUNCH_GEMM(early_return)
LAUNCH_GEMM(missing_barrier)

__global__ void branch_barriers(float* out) {
    if (threadIdx.x < 8) {
        __syncthreads();  // BARRIER A
    } else {
        __syncthreads();  // BARRIER B
    }
    out[threadIdx.x] = 1.f;
}
extern "C" void divergent(float* out) { branch_barriers<<<1, 32>>>(out); }

__global__ void shared_oob(float* out) {
    __shared__ float tile[T][T];
    tile[threadIdx.y][threadIdx.x] = 1.f;
    __syncthreads();
    out[threadIdx.y * T + threadIdx.x] = tile[threadIdx.y][threadIdx.x + 1];  // BUG: OOB
}
extern "C" void shared_oob_launch(float* out) { shared_oob<<<1, dim3(T, T)>>>(out); }

__global__ void dyn_oob(float* out, int n) {
    extern __shared__ float buf[];
    buf[threadIdx.x] = 1.f;  // BUG: dyn OOB
    __syncthreads();
    out[threadIdx.x] = buf[threadIdx.x];
}
extern "C" void dyn_oob_launch(float* out, int n) { dyn_oob<<<1, n, 32 * sizeof(float)>>>(out, n); }

__global__ void bad_shuffle(int* out) {
    int v = __shfl_down_sync(0xffffu, (int)threadIdx.x, 8);  // BUG: lanes 8..15 read outside the mask
    out[threadIdx.x] = v;
}
extern "C" void bad_shuffle_launch(int* out) { bad_shuffle<<<1, 16>>>(out); }

__global__ void marks(float* out) {
    out[blockIdx.x] = 1.f;
    if (blockIdx.x == 1 && threadIdx.x == 0) return;  // BUG: block 1 diverges
    __syncthreads();
}
extern "C" void sticky(float* out, int blocks) { marks<<<blocks, 32>>>(out); }

extern "C" int too_many_threads(float* out) {
    marks<<<1, 2048>>>(out);  // BUG: 2048 threads per block
    return cudaGetLastError();
}

__global__ void misaligned(const float* in, float* out) {
    float4 v = *reinterpret_cast<const float4*>(in + 1);  // BUG: misaligned
    out[0] = v.x;
}
extern "C" void misaligned_launch(const float* in, float* out) { misaligned<<<1, 1>>>(in, out); }

// Dynamic shared memory is undefined at the start of every block: a kernel that reads what
// an earlier block left there worked on the H200 by luck.
__global__ void dyn_stale(const float* in, float* out) {
    extern __shared__ float table[];
    if (blockIdx.x == 0) table[threadIdx.x] = in[threadIdx.x];  // BUG: only block 0 fills the table
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = table[threadIdx.x];
}
extern "C" void dyn_stale_launch(const float* in, float* out) { dyn_stale<<<2, 32, 32 * sizeof(float)>>>(in, out); }

// __syncwarp(mask) orders only the lanes in its mask.
__global__ void half_syncwarp(int* out) {
    __shared__ int buf[32];
    int lane = threadIdx.x;
    buf[lane] = lane;  // WRITE: half sync
    if (lane < 16) __syncwarp(0x0000ffffu); else __syncwarp(0xffff0000u);
    out[lane] = buf[31 - lane];  // BUG: lane 0 reads what lane 31 wrote; they never synced
}
extern "C" void half_syncwarp_launch(int* out) { half_syncwarp<<<1, 32>>>(out); }

// An accumulator that is never initialised: a GPU register holds whatever was there.
__global__ void uninit_sum(const float* x, float* out, int n) {
    float acc;  // BUG: never initialised
    for (int i = 0; i < n; ++i) acc += x[i];
    out[threadIdx.x] = acc;
}
extern "C" void uninit_sum_launch(const float* x, float* out, int n) { uninit_sum<<<1, 32>>>(x, out, n); }

// Global-memory races on an output (the caller names `out` an output with cuda_emu_set_buffers).
__global__ void blocks_add(float* out) {
    out[threadIdx.x] += 1.f;  // BUG: every block adds to the same elements without atomicAdd
}
extern "C" void blocks_add_launch(float* out) {
    cudaMemset(out, 0, 8 * sizeof(float));  // set: reading an output nothing wrote is an error of its own
    blocks_add<<<3, 8>>>(out);
}

__global__ void neighbour_read(float* out) {
    out[threadIdx.x] = (float)threadIdx.x;  // WRITE: own element
    out[64 + threadIdx.x] = out[(threadIdx.x + 1) % 32];  // BUG: reads a neighbour's element with no barrier
}
extern "C" void neighbour_read_launch(float* out) {
    cudaMemset(out, 0, 32 * sizeof(float));
    neighbour_read<<<1, 32>>>(out);
}

__global__ void last_block_wins(float* out) {
    if (threadIdx.x == 0) out[0] = (float)blockIdx.x;  // BUG: every block writes its own value to out[0]
}
extern "C" void last_block_wins_launch(float* out) { last_block_wins<<<4, 32>>>(out); }

// Correct: a barrier orders the neighbour read; every lane writes the same word with the same
// value; atomics; and a later launch reads what an earlier one wrote.
__global__ void ordered_ok(float* out, unsigned* word) {
    out[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    out[64 + threadIdx.x] = out[(threadIdx.x + 1) % 32];
    unsigned bits = __ballot_sync(0xffffffffu, threadIdx.x % 2 == 0);
    word[0] = bits;
    atomicAdd(&out[128], 1.f);
}
__global__ void second_pass(float* out) { out[threadIdx.x] += out[64 + threadIdx.x]; }
extern "C" void ordered_ok_launch(float* out, unsigned* word) {
    cudaMemset(out + 128, 0, sizeof(float));  // the atomics' word, set before they add to it
    ordered_ok<<<1, 32>>>(out, word);
    second_pass<<<1, 32>>>(out);
}

// Two threads, one element, one statement: the index divides threadIdx.x away (a barrier cannot fix it).
__global__ void same_element_store(float* out) {
    __shared__ float s[16];
    s[threadIdx.x / 2] = (float)threadIdx.x;  // BUG: lanes 2i and 2i+1 store s[i]
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x / 2];
}
extern "C" void same_element_store_launch(float* out) { same_element_store<<<1, 32>>>(out); }

// The same in global memory: the store's index leaves out threadIdx.x.
__global__ void one_element_per_block(float* out) {
    out[blockIdx.x] = (float)threadIdx.x;  // BUG: every thread of the block stores out[blockIdx.x]
}
extern "C" void one_element_per_block_launch(float* out) { one_element_per_block<<<2, 32>>>(out); }

// Every lane ORs its bit into the warp's word with a plain load and store (the fix: a ballot or atomicOr).
__global__ void mask_or(const float* x, unsigned* words) {
    if (threadIdx.x == 0) words[0] = 0u;
    __syncwarp();
    if (x[threadIdx.x] > 0.f) words[0] |= 1u << threadIdx.x;  // BUG: mask word |=
}
extern "C" void mask_or_launch(const float* x, unsigned* words) { mask_or<<<1, 32>>>(x, words); }
