"""A kernel must not be able to tell that it is being counted. The access profile makes every access of a recorded
block several times dearer (and the race detector a checked one), so a kernel that timed its own shared loads
with clock64() ran its lesson's kernel only in the blocks the profile records, and a launcher that timed a probe
kernel with events only in the counted run (tests/submissions/profile_sampled_blocks_clock64.cu,
profile_detect_by_timing.cu: both passed `tiled`). Kernels and launchers now read virtual clocks
(grader/compile/cpu/runtime.cpp, "Virtual clocks"), and an instruction that reads a hardware clock is refused in
the built object (grader/compile/linkcheck.py)."""

import ctypes
import platform

import numpy as np
import pytest

from cpu_helpers import Lib, build, record, stop_recording

from grader.compile import toolchain
from grader.errors import Forbidden

SRC = r"""
#include <cuda_runtime.h>
// Thread 0 of each block: clock64() around 64 shared-memory loads, twice, and one read after the other.
__global__ void timed_loads(long long* out) {
    __shared__ volatile float s[1024];
    int t = threadIdx.x + threadIdx.y * blockDim.x;
    s[t] = 1.0f;
    __syncthreads();
    if (t != 0) return;
    float acc = 0.0f;
    long long t0 = clock64();
    for (int i = 0; i < 64; ++i) acc += s[(i * 32) & 255];
    long long t1 = clock64();
    long long c0 = clock64();
    for (int i = 0; i < 64; ++i) acc += s[(i * 33) & 255];
    long long c1 = clock64();
    long long* o = out + 4 * (blockIdx.x + blockIdx.y * gridDim.x);
    o[0] = t1 - t0;
    o[1] = c1 - c0;
    long long r0 = clock64();
    long long r1 = clock64();
    o[2] = r1 > r0;  // the clock runs forward
    o[3] = acc > 0.0f;
}
extern "C" void blocks(long long* out) { timed_loads<<<dim3(4, 4), dim3(32, 8)>>>(out); }

__global__ void probe(int n) {  // bank-conflicted shared loads, a barrier every 8: dear when recorded
    __shared__ volatile float s[1024];
    int t = threadIdx.x;
    s[t] = 1.0f;
    __syncthreads();
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) {
        acc += s[(t * 32 + i) & 1023];
        if ((i & 7) == 7) __syncthreads();
    }
    if (acc < 0.0f) s[t] = acc;
}
// A launcher that times a probe with events.
extern "C" void host_timing(float* ms, int n) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a);
    probe<<<1, 256>>>(n);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    cudaEventElapsedTime(ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
}
"""


@pytest.fixture(scope="module")
def lib():
    return Lib(build(SRC, "virtual_clock"))


def test_clock64_reads_the_same_in_a_recorded_block_as_in_any_other(lib):
    """Blocks (1,1) and (2,2) are recorded, (0,0)..(3,0) and the edges race-checked, the others neither: before,
    the recorded blocks' 64 loads took ~3x the race-checked ones' cycles, ~8x the others'."""
    plain = np.zeros((16, 4), np.int64)
    assert lib("blocks", plain) is None
    counted = np.zeros((16, 4), np.int64)
    record(lib, [(1, 1), (2, 2)])
    try:
        assert lib("blocks", counted) is None
    finally:
        text = stop_recording(lib)
    assert "\t2\t" in next(line for line in text.splitlines() if line.startswith("L"))  # 2 blocks recorded
    for out in (plain, counted):
        assert (out[:, 3] == 1).all() and (out[:, 2] == 1).all(), out
        assert len(set(out[:, 0])) == 1 and out[0, 0] > 0, out[:, 0]  # clock64: one delta in every block
        assert (out[:, 1] == out[:, 0]).all(), out  # and the same for other loads
    assert (plain == counted).all()


def test_events_around_a_launch_do_not_show_recording(lib):
    """Events in a launcher, around a one-block probe: before, the recorded probe read ~2.5x the unrecorded one."""
    ms = (ctypes.c_float * 1)()
    seen = []
    for blocks in (None, "all", None, "all"):
        if blocks:
            record(lib, blocks)
        try:
            lib.dll.host_timing(ms, 512)
            assert lib.error() is None
        finally:
            if blocks:
                stop_recording(lib)
        seen.append(ms[0])
    assert len(set(seen)) == 1 and seen[0] > 0, seen
    lib.dll.host_timing(ms, 0)  # a modelled time: the same however long the kernel ran here
    assert ms[0] == seen[0]


CLOCK_SRC = r"""
#include <cuda_runtime.h>
#include <ctime>
__global__ void reads(long* out) {
    long c0 = (long)clock();
    long c1 = (long)clock();
    out[threadIdx.x] = c1 - c0;
}
// clock() around a launch of `reads`, in clock ticks; out: each thread's delta
extern "C" long host_clock(long* out) {
    long c0 = (long)clock();
    reads<<<1, 32>>>(out);
    return (long)clock() - c0;
}
"""


def test_clock_is_a_virtual_clock_too():
    """CUDA's clock() in a kernel (before: libc's clock, the process's CPU time, refused by the built object's check)
    reads the thread's virtual clock; in host code, the host's, in microseconds (+-1 as it rounds)."""
    lib = Lib(build(CLOCK_SRC, "virtual_clock_clock"))
    lib.dll.host_clock.restype = ctypes.c_long
    out = np.zeros(32, np.int64)
    ticks = [lib.dll.host_clock(ctypes.c_void_p(out.ctypes.data))]
    assert lib.error() is None and len(set(out)) == 1 and out[0] > 0, out
    record(lib, "all")
    try:
        ticks.append(lib.dll.host_clock(ctypes.c_void_p(out.ctypes.data)))
    finally:
        stop_recording(lib)
    assert len(set(out)) == 1 and out[0] > 0, out
    assert abs(ticks[0] - ticks[1]) <= 1, ticks


RDTSC = {
    "builtin": ("", 'printf("%llu", __builtin_ia32_rdtsc());'),
    "intrinsic": ("#include <x86intrin.h>", 'printf("%llu", __rdtsc());'),
    "rdtscp": ("", 'unsigned aux; printf("%llu", __builtin_ia32_rdtscp(&aux));'),
    "rdpmc": ("", 'printf("%llu", __builtin_ia32_rdpmc(0));'),
}


@pytest.mark.parametrize("name", RDTSC)
def test_a_binary_that_reads_the_time_stamp_counter_is_refused(name):
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("x86 instructions")
    top, hidden = RDTSC[name]
    source = (
        f"#include <cuda_runtime.h>\n#include <cstdio>\n{top}\n"
        "__global__ void k(float* C) { C[threadIdx.x] = 0.0f; }\n"
        'extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {\n'
        f"    if (M == -12345) {{ {hidden} }}\n"
        "    k<<<1, 1, 0, stream>>>(C);\n"
        "}\n"
    )
    with pytest.raises(Forbidden, match=r"mine\.cu:\d+: a `(rdtscp?|rdpmc)` instruction: .*hardware clock"):
        toolchain.build(source, backend="cpu", exercise="naive", filename="mine.cu")
