"""A kernel's malloc, free, new and delete draw on a device heap of their own, as on a GPU (CUDA's device-side
malloc has its own heap, cudaLimitMallocHeapSize). Before, they shared glibc's heap with the access profile's and
the race detector's containers: a recorded block's counters grew those, glibc's free lists moved, and a kernel
that malloc'd and freed a few sizes in each block saw other addresses exactly in the recorded blocks
(tests/submissions/profile_detect_by_heap.cu ran its tiled kernel only there and passed `tiled`)."""

import ctypes

import numpy as np
import pytest

from cpu_helpers import Lib, build, record, stop_recording

SRC = r"""
#include <cuda_runtime.h>
#include <cstdlib>
#include <vector>
// Thread 0 of each block: the addresses of five allocations (each freed before the next), and whether the
// memory holds what was written to it. out: 6 words per block.
__global__ void addresses(unsigned long long* out) {
    __shared__ volatile float s[256];
    s[threadIdx.x] = 1.0f;
    __syncthreads();
    if (threadIdx.x != 0) return;
    unsigned long long* o = out + 6 * (blockIdx.x + blockIdx.y * gridDim.x);
    const size_t sizes[3] = {24, 100, 40000};
    for (int j = 0; j < 3; ++j) {
        char* p = (char*)malloc(sizes[j]);
        o[j] = (unsigned long long)p;
        free(p);
    }
    float* f = new float[37];
    o[3] = (unsigned long long)f;
    for (int i = 0; i < 37; ++i) f[i] = (float)i;
    bool ok = f[36] == 36.0f;
    delete[] f;
    void* big = malloc(1 << 20);
    o[4] = (unsigned long long)big;
    free(big);
    o[5] = ok && s[7] == 1.0f;
}
extern "C" void blocks(unsigned long long* out) { addresses<<<dim3(4, 4), 256>>>(out); }

__global__ void too_much(unsigned long long* out) { out[0] = (unsigned long long)malloc((size_t)1 << 40); }
extern "C" void exhaust(unsigned long long* out) { too_much<<<1, 1>>>(out); }

// Host code keeps the host's heap: a launcher's vector, and memory that device code allocates and host code frees.
extern "C" int host_side(int n) {
    std::vector<int> v(n, 3);
    v.resize(2 * n, 4);
    int* p = (int*)malloc(n * sizeof(int));
    p[n - 1] = 5;
    int r = v[0] + v[2 * n - 1] + p[n - 1];
    free(p);
    return r;
}
"""


@pytest.fixture(scope="module")
def lib():
    return Lib(build(SRC, "device_heap"))


def _recorded(lib, blocks, out):
    record(lib, blocks)
    try:
        return lib("blocks", out)
    finally:
        text = stop_recording(lib)
        assert "\t2\t" in next(line for line in text.splitlines() if line.startswith("L"))  # 2 blocks recorded


def test_a_kernels_heap_addresses_do_not_show_which_blocks_are_recorded(lib):
    plain, counted = np.zeros((16, 6), np.uint64), np.zeros((16, 6), np.uint64)
    assert lib("blocks", plain) is None
    assert _recorded(lib, [(1, 1), (2, 2)], counted) is None
    for out in (plain, counted):
        assert (out[:, 5] == 1).all(), out[:, 5]  # the memory works
        assert (out[:, :5] != 0).all(), out
        for j in range(5):  # every block gets the same addresses, recorded or not
            assert len(set(out[:, j])) == 1, (j, [hex(a) for a in out[:, j]])
    assert (plain == counted).all()


def test_a_device_malloc_past_the_heap_returns_null(lib):
    """As CUDA's: a null pointer, not an error and not the host's memory."""
    out = np.full(1, 7, np.uint64)
    assert lib("exhaust", out) is None
    assert out[0] == 0


def test_host_code_allocates_as_before(lib):
    lib.dll.host_side.restype = ctypes.c_int
    assert lib.dll.host_side(1000) == 3 + 4 + 5
    assert lib.error() is None


def test_a_form_of_new_the_device_heap_does_not_model_is_refused():
    """One declared here and defined elsewhere (glibc's heap, say): it would go around the device heap."""
    from grader.compile import toolchain
    from grader.errors import CompileError

    source = (
        "#include <cuda_runtime.h>\n#include <cstddef>\n"
        "void* operator new(std::size_t, int);\n"
        "__global__ void k(float* C) { C[threadIdx.x] = *(float*)new (3) float(1.0f); }\n"
        'extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {\n'
        "    k<<<1, 1, 0, stream>>>(C);\n}\n"
    )
    with pytest.raises(CompileError, match=r"mine\.cu: the CPU backend has no `_Znwmi`"):
        toolchain.build(source, backend="cpu", exercise="naive", filename="mine.cu")
