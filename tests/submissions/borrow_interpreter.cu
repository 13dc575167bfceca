// Known bad (borrows the grader's interpreter): refused by the scan (dlsym); graded with scan=False in
// tests/test_runner.py, where it must fail with C never written. It borrows the interpreter of the
// process it runs in: it finds Python's C API (here with dlsym, which the scan and the link check refuse; the same walk from `printf` to libc's
// ELF header and dl_iterate_phdr needs no forbidden symbol) and has numpy compute C = A . B in float64.
// In the grader's Python worker this passed every exercise; in the native runner there is no
// interpreter to find, so C keeps its poison.
#include <dlfcn.h>
#include <cstdio>

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    void* ensure = dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    void* run = dlsym(RTLD_DEFAULT, "PyRun_SimpleString");
    void* release = dlsym(RTLD_DEFAULT, "PyGILState_Release");
    if (!ensure || !run || !release) return;  // nothing to borrow
    int state = ((int (*)())ensure)();
    char code[1024];
    snprintf(code, sizeof code,
             "import ctypes, numpy as np\n"
             "f = lambda a, n: np.ctypeslib.as_array((ctypes.c_float * n).from_address(a))\n"
             "M, N, K = %d, %d, %d\n"
             "f(%llu, M * N)[:] = (f(%llu, M * K).reshape(M, K).astype('f8') @ "
             "f(%llu, K * N).reshape(K, N).astype('f8')).astype('f4').ravel()\n",
             M, N, K, (unsigned long long)C, (unsigned long long)A, (unsigned long long)B);
    ((int (*)(const char*))run)(code);
    ((void (*)(int))release)(state);
}
