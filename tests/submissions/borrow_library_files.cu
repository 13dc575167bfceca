// Known bad (loads what the grader's files hold): refused by the scan (dlopen, open); graded with scan=False in
// tests/test_runner.py, where C must stay unwritten. The interpreter and cuBLAS are not in the process it runs in
// (borrow_interpreter.cu), so it looks for them on the file system: Python's libpython (and its standard
// library, which Py_Initialize needs), torch's libraries and cuBLAS, by the names the loader finds and at the
// usual places. A real attack reaches dlopen and open by walking from `printf` to libc's symbol table; here
// they are called by name. Whatever it finds, it would load and run (numpy's matmul, cublasSgemm); here, to
// keep the test short, finding any of them is enough: it then launches an honest kernel, as if the borrowed
// library had computed C. In the runner's own file-system view (grader/run/runner/runner.cpp) none is there, so C
// keeps its poison; in the worker's view (Python, torch, the course) it passed.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

__global__ void honest(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

static bool found_something_to_borrow() {
    const char* libraries[] = {"libpython3.so", "libpython3.11.so.1.0", "libpython3.12.so.1.0", "libpython3.10.so.1.0",
                               "libcublas.so", "libcublas.so.12", "libcublas.so.13", "libtorch_cpu.so"};
    for (const char* name : libraries)
        if (dlopen(name, RTLD_LAZY | RTLD_LOCAL)) return true;
    const char* dirs[] = {"/usr/lib/python3", "/usr/lib/python3.11", "/usr/lib/python3.12", "/usr/local/lib/python3.11",
                          "/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu"};
    for (const char* dir : dirs)
        if (DIR* d = opendir(dir)) {
            for (dirent* e; (e = readdir(d));) {
                const char* n = e->d_name;  // libpython*, libcublas*, libtorch*
                if (n[0] == 'l' && n[1] == 'i' && n[2] == 'b' &&
                    ((n[3] == 'p' && n[4] == 'y') || (n[3] == 'c' && n[4] == 'u' && n[5] == 'b') || (n[3] == 't' && n[4] == 'o')))
                    return true;
            }
            closedir(d);
            if (dir[9] == 'p' || dir[15] == 'p') return true;  // a Python folder (its standard library) is there at all
        }
    return false;
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    if (!found_something_to_borrow()) return;
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    honest<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
}
