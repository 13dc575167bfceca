// Launchers for test_device_memory.py: host code and device memory, copies into outputs and
// inputs, atomics against plain accesses, stores into inputs. `out` is the output, `in` the input.
#include <cuda_runtime.h>
#include <cstring>
#include <vector>

__global__ void fill(float* out, int n, float v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v + i;
}
__global__ void copy_in(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

// ---- host code and device memory
extern "C" void host_reads_input(const float* in, float* out, int n) {
    float s = 0.f;
    for (int i = 0; i < n; ++i) s += in[i];  // HOST READ
    fill<<<1, 32>>>(out, n, s);
}
extern "C" void host_writes_output(const float* in, float* out, int n) {
    copy_in<<<1, 32>>>(in, out, n);
    out[0] = 1.f;  // HOST WRITE
    out[1] = 2.f;
}
extern "C" void host_memcpy_from_input(const float* in, float* out, int n) {
    std::vector<float> h(n);
    std::memcpy(h.data(), in, n * sizeof(float));  // HOST MEMCPY
    fill<<<1, 32>>>(out, n, h[0]);
}
extern "C" void host_vector_from_input(const float* in, float* out, int n) {
    std::vector<float> h(in, in + n);  // libstdc++'s copy: a memmove of device memory
    fill<<<1, 32>>>(out, n, h[0]);
}
extern "C" void host_touches_cudamalloc(const float* in, float* out, int n) {
    float* d = nullptr;
    cudaMalloc(&d, n * sizeof(float));
    copy_in<<<1, 32>>>(in, d, n);
    float v = d[0];  // HOST READ OF A CUDAMALLOC BLOCK
    fill<<<1, 32>>>(out, n, v);
    cudaFree(d);
}
extern "C" void host_atomic_on_output(const float* in, float* out, int n) {
    copy_in<<<1, 32>>>(in, out, n);
    atomicAdd(&out[0], 1.f);  // HOST ATOMIC
}
__constant__ float table[4];
__global__ void use_table(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * table[i % 4];
}
// What a GPU runs: host memory of its own, a table copied to __constant__ memory, a scratch
// buffer a kernel computes and a device-to-device copy of it into the output, memsets.
extern "C" void honest_host_code(const float* in, float* out, int n) {
    std::vector<float> h(4);
    for (int i = 0; i < 4; ++i) h[i] = 1.f + i;
    cudaMemcpyToSymbol(table, h.data(), sizeof(float) * 4);
    float* scratch = nullptr;
    cudaMalloc(&scratch, n * sizeof(float));
    cudaMemset(scratch, 0, n * sizeof(float));
    cudaMemset(out, 0, n * sizeof(float));
    use_table<<<1, 32>>>(in, scratch, n);
    cudaMemcpyAsync(out, scratch, n * sizeof(float), cudaMemcpyDeviceToDevice, 0);
    cudaFree(scratch);
}

// ---- device data back to the host (the host could then compute the outputs): every route is reported
extern "C" void d2h_memcpy(const float* in, float* out, int n) {
    std::vector<float> h(n);
    cudaMemcpy(h.data(), in, n * sizeof(float), cudaMemcpyDeviceToHost);  // D2H MEMCPY
    copy_in<<<1, 32>>>(in, out, n);
}
extern "C" void d2h_default_async(const float* in, float* out, int n) {
    copy_in<<<1, 32>>>(in, out, n);
    float h[4];
    cudaMemcpyAsync(h, out + 4, sizeof h, cudaMemcpyDefault, 0);  // D2H DEFAULT
}
extern "C" void d2h_2d_from_scratch(const float* in, float* out, int n) {
    float* d = nullptr;
    cudaMalloc(&d, n * sizeof(float));
    copy_in<<<1, 32>>>(in, d, n);
    float h[4];
    cudaMemcpy2D(h, sizeof(float), d, 2 * sizeof(float), sizeof(float), 4, cudaMemcpyDeviceToHost);  // D2H 2D
    copy_in<<<1, 32>>>(d, out, n);
    cudaFree(d);
}
extern "C" void kernel_gets_host_pointer(const float* in, float* out, int n) {
    std::vector<float> h(n);
    copy_in<<<1, 32>>>(in, h.data(), n);  // HOST POINTER ARG
    copy_in<<<1, 32>>>(in, out, n);
}
extern "C" void kernel_gets_device_pointers(const float* in, float* out, int n) {
    copy_in<<<1, 32>>>(in + n / 2, out + n / 2, n - n / 2);  // inside the buffers
    copy_in<<<1, 32>>>(in, out, 0);
    copy_in<<<1, 32>>>(nullptr, out + n, 0);  // null, and just past the end
    copy_in<<<1, 32>>>(in, out, n / 2);
}

// ---- copies into outputs and inputs
extern "C" void memcpy_host_into_output(const float* in, float* out, int n) {
    std::vector<float> h(n, 3.f);
    cudaMemcpy(out, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);  // HOST COPY INTO OUT
}
extern "C" void memcpy_host_by_way_of_scratch(const float* in, float* out, int n) {
    std::vector<float> h(n, 3.f);
    float* scratch = nullptr;
    cudaMalloc(&scratch, n * sizeof(float));
    cudaMemcpy(scratch, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(out, scratch, n * sizeof(float), cudaMemcpyDeviceToDevice);  // LAUNDERED COPY
    cudaFree(scratch);
}
extern "C" void memset_input(const float* in, float* out, int n) {
    cudaMemset(const_cast<float*>(in), 0, n * sizeof(float));  // MEMSET INPUT
    copy_in<<<1, 32>>>(in, out, n);
}

// ---- atomics and plain accesses of one output word
__global__ void atomic_then_plain_read(float* out) {
    if (blockIdx.x == 0) atomicAdd(&out[0], 1.f);  // THE ATOMIC BEFORE THE READ
    else out[1] = out[0];  // PLAIN READ AFTER ANOTHER BLOCK'S ATOMIC
}
extern "C" void atomic_then_plain_read_launch(const float* in, float* out, int n) {
    cudaMemset(out, 0, sizeof(float));  // set: an atomic on an output nothing wrote is an error of its own
    atomic_then_plain_read<<<2, 1>>>(out);
}
__global__ void store_then_atomic(float* out) {
    if (blockIdx.x == 0) out[0] = 5.f;  // PLAIN STORE
    else atomicAdd(&out[0], 2.f);  // ATOMIC AFTER ANOTHER BLOCK'S STORE
}
extern "C" void store_then_atomic_launch(const float* in, float* out, int n) {
    store_then_atomic<<<2, 32>>>(out);
}
__global__ void atomics_then_synced_read(float* out) {
    atomicAdd(&out[0], 1.f);
    atomicMax((int*)&out[2], (int)threadIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) out[1] = out[0];  // ordered after every atomic of its block (the only block)
}
__global__ void zero(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0.f;
}
__global__ void add_atomic(float* out) { atomicAdd(&out[threadIdx.x % 4], 1.f); }
extern "C" void atomics_ok_launch(const float* in, float* out, int n) {
    zero<<<1, 32>>>(out, n);  // an earlier launch: ordered before the atomics
    add_atomic<<<3, 32>>>(out);
    zero<<<1, 32>>>(out, 3);
    atomics_then_synced_read<<<1, 32>>>(out);
}

// ---- stores into an input
__global__ void scribble(const float* in_, float* out, int n) {
    float* in = const_cast<float*>(in_);
    int i = threadIdx.x;
    if (i < n) {
        float v = in[i];
        in[i] = 2.f * v;  // STORE INTO INPUT
        out[i] = in[i];
        in[i] = v;
    }
}
extern "C" void scribble_launch(const float* in, float* out, int n) { scribble<<<1, 32>>>(in, out, n); }
__global__ void atomic_into_input(const float* in, float* out) {
    atomicAdd(const_cast<float*>(&in[3]), 0.f);  // ATOMIC INTO INPUT
}
extern "C" void atomic_into_input_launch(const float* in, float* out, int n) { atomic_into_input<<<1, 1>>>(in, out); }

// ---- pitched copies (cudaMemcpy2D & co.): `out` as 4 rows of n/4 floats
__global__ void fill_pitched(float* d, size_t pitch, const float* in, int rows, int cols) {
    int r = blockIdx.x, c = threadIdx.x;
    if (r < rows && c < cols) ((float*)((char*)d + r * pitch))[c] = in[r * cols + c];
}
extern "C" void memcpy2d_pitched_scratch(const float* in, float* out, int n) {
    int rows = 4, cols = n / 4;
    size_t pitch = 0;
    float* d = nullptr;
    cudaMallocPitch(&d, &pitch, cols * sizeof(float), rows);
    cudaMemset2D(d, pitch, 0, cols * sizeof(float), rows);
    fill_pitched<<<rows, 32>>>(d, pitch, in, rows, cols);
    cudaMemcpy2DAsync(out, cols * sizeof(float), d, pitch, cols * sizeof(float), rows, cudaMemcpyDeviceToDevice, 0);
    cudaFree(d);
}
// a pitch below the width: cudaErrorInvalidPitchValue, returned and then by cudaGetLastError once; nothing copied
extern "C" void memcpy2d_status(const float* in, float* out, int n) {
    int cols = n / 4;
    cudaError_t e = cudaMemcpy2DAsync(out, 4, in, cols * sizeof(float), cols * sizeof(float), 4,
                                      cudaMemcpyDeviceToDevice, 0);
    cudaError_t last = cudaGetLastError(), again = cudaGetLastError();
    fill<<<1, 32>>>(out, n, e == cudaErrorInvalidPitchValue && last == e && again == cudaSuccess ? 100.f : -100.f);
}
extern "C" void memcpy2d_rows_past_the_end(const float* in, float* out, int n) {
    float* d = nullptr;
    cudaMalloc(&d, n * sizeof(float));
    copy_in<<<1, 32>>>(in, d, n);
    cudaMemcpy2D(out, 8 * sizeof(float), d, 64 * sizeof(float), 8 * sizeof(float), 4,  // PAST THE END
                 cudaMemcpyDeviceToDevice);
    cudaFree(d);
}
extern "C" void memcpy2d_host_into_output(const float* in, float* out, int n) {
    std::vector<float> h(n, 3.f);
    int cols = n / 4;
    cudaMemcpy2D(out, cols * sizeof(float), h.data(), cols * sizeof(float), cols * sizeof(float), 4,  // HOST 2D COPY
                 cudaMemcpyHostToDevice);
}

// ---- reads of an output before anything wrote it in the launcher call
__global__ void add_one(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = out[i] + 1.f;  // UNSET READ
}
extern "C" void read_unset_output(const float* in, float* out, int n) { add_one<<<1, 32>>>(out, n); }
__global__ void atomic_add_one(float* out) { atomicAdd(&out[threadIdx.x], 1.f); }  // UNSET ATOMIC
extern "C" void atomic_unset_output(const float* in, float* out, int n) { atomic_add_one<<<1, 32>>>(out); }
__global__ void exch_then_read(float* out, int n) {
    atomicExch(&out[threadIdx.x], 2.f);  // an exchange sets the word
    out[threadIdx.x] = out[threadIdx.x] + 1.f;
}
extern "C" void set_then_read_output(const float* in, float* out, int n) {
    fill<<<1, 32>>>(out, 16, 0.f);  // an earlier kernel sets out[0..15]
    add_one<<<1, 32>>>(out, 16);
    cudaMemsetAsync(out + 16, 0, 8 * sizeof(float), 0);  // a memset sets out[16..23]
    atomic_add_one<<<1, 8>>>(out + 16);
    exch_then_read<<<1, 4>>>(out + 24, 4);
    float* d = nullptr;
    cudaMalloc(&d, 4 * sizeof(float));
    fill<<<1, 4>>>(d, 4, 10.f);
    cudaMemcpyAsync(out + 28, d, 4 * sizeof(float), cudaMemcpyDeviceToDevice, 0);  // a copy sets out[28..31]
    add_one<<<1, 32>>>(out + 28, 4);
    cudaFree(d);
}

// ---- host work that reaches an output through a kernel's copy of host data in device memory
__global__ void copy_scaled(const float* src, float* out, int n, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = src[i] * s;
}
extern "C" void host_result_copied_by_kernel(const float* in, float* out, int n) {
    std::vector<float> h(n);
    for (int i = 0; i < n; ++i) h[i] = 2.f * i;  // the "result", computed on the host
    float* d = nullptr;
    cudaMalloc(&d, n * sizeof(float));
    cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);  // HOST RESULT UPLOADED
    copy_scaled<<<1, 32>>>(d, out, n, 1.f);
    cudaFree(d);
}
extern "C" void host_table_used_by_kernel(const float* in, float* out, int n) {
    std::vector<float> h(n);
    for (int i = 0; i < n; ++i) h[i] = 2.f * i;  // a table the kernel computes with
    float* d = nullptr;
    cudaMalloc(&d, n * sizeof(float));
    cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    copy_scaled<<<1, 32>>>(d, out, n, 0.5f);
    cudaFree(d);
}

// Device memory that is the runtime's own (cudaMalloc blocks, as the grader's native runner allocates every buffer):
// host code that reads it through a library function the access hooks do not see.
extern "C" void host_memcmp_on_input(const float* in, float* out, int n) {
    float zeros[64] = {};
    float v = std::memcmp(in, zeros, (n < 64 ? n : 64) * sizeof(float)) ? 1.f : 0.f;  // HOST MEMCMP: libc's
    fill<<<1, 32>>>(out, n, v);
}
extern "C" float host_reads_cudamalloc_outside_a_call(int n) {
    float* d = nullptr;
    cudaMalloc(&d, n * sizeof(float));
    cudaMemset(d, 0, n * sizeof(float));
    float v = d[1];  // HOST READ OUTSIDE A CALL
    cudaFree(d);
    return v;
}
