"""Device memory on the CPU backend, where it is host memory: host code doing a kernel's work
(loads and stores of the launch's buffers or of cudaMalloc's blocks, host memory copied into an
output) passed there and faults or computes nothing on a GPU; a plain store racing with atomics;
a kernel's store into an input, even one it undoes before returning."""

import pathlib
import re

import numpy as np
import pytest

from cpu_helpers import Lib, build, line_of
from grader.judge import grade

HERE = pathlib.Path(__file__).parent
SRC = (HERE / "kernels_device.cu").read_text()
SUBS = HERE.parent / "submissions"
N = 32


@pytest.fixture(scope="module")
def lib():
    return Lib(build(SRC, "device"))


def call(lib, fn, device=True, inp=None):
    inp = np.arange(N, dtype=np.float32) + 1 if inp is None else inp
    out = np.zeros(N, np.float32)
    lib.buffers(outputs={"out": out}, inputs={"in": inp}, device=device)
    return lib(fn, inp, out, N), inp, out


def at(marker):
    return f"device.cu:{line_of(SRC, marker)}"


@pytest.mark.parametrize(
    "fn, what, marker",
    [
        ("host_reads_input", "read in", "HOST READ"),
        ("host_writes_output", "wrote out", "HOST WRITE"),
        ("host_memcpy_from_input", "read in", "HOST MEMCPY"),
        ("host_touches_cudamalloc", "read a cudaMalloc block", "HOST READ OF A CUDAMALLOC"),
        ("host_atomic_on_output", "wrote out", "HOST ATOMIC"),
    ],
)
def test_host_code_touching_device_memory_is_reported_with_its_line(lib, fn, what, marker):
    err, _, _ = call(lib, fn)
    assert err and err.startswith(f"the launcher's host code {what} (device memory) at {at(marker)}: on a GPU"), err
    assert "[kernel" not in err  # host code: no kernel's context
    assert lib.error() is None  # once per call


def test_host_code_copying_device_memory_in_library_code_is_reported(lib):
    err, _, _ = call(lib, "host_vector_from_input")
    assert err and err.startswith("the launcher's host code read in (device memory) at "), err


def test_one_report_per_launcher_call_and_a_fresh_one_for_the_next(lib):
    assert call(lib, "host_writes_output")[0]
    err, _, _ = call(lib, "host_reads_input")
    assert err and "read in" in err, err


def test_host_exercise_buffers_are_host_memory(lib):
    """cpu_blocked's buffers are not device memory: its host code may touch them."""
    err, inp, out = call(lib, "host_reads_input", device=False)
    assert err is None and out[0] == inp.sum()


def test_honest_host_code_passes(lib):
    """Host vectors, a table copied to __constant__ memory, cudaMemset of a scratch buffer and of the
    output, a device-to-device copy of what a kernel computed."""
    err, inp, out = call(lib, "honest_host_code")
    assert err is None, err
    np.testing.assert_array_equal(out, inp * (1 + np.arange(N) % 4))


@pytest.mark.parametrize(
    "fn, call_, what, marker",
    [
        ("d2h_memcpy", "cudaMemcpy", "in", "D2H MEMCPY"),
        ("d2h_default_async", "cudaMemcpy", "out", "D2H DEFAULT"),
        ("d2h_2d_from_scratch", "cudaMemcpy2D", "a cudaMalloc block", "D2H 2D"),
    ],
)
def test_device_data_copied_to_the_host_is_reported(lib, fn, call_, what, marker):
    """With device data the host could compute the outputs and hand them on unseen (negated, in kernel arguments)."""
    err, _, _ = call(lib, fn)
    assert err and err.startswith(
        f"{call_} at {at(marker)} copies {what} (device memory) to host memory: the launcher's host code may not read "
        "device data"
    ), err


def test_a_kernel_launched_with_a_host_pointer_is_reported(lib):
    err, _, _ = call(lib, "kernel_gets_host_pointer")
    assert err and err.startswith(
        f"the launcher's host code launches kernel copy_in at {at('HOST POINTER ARG')} with host memory as its argument 2"
    ), err
    err, inp, out = call(lib, "kernel_gets_device_pointers")
    assert err is None, err
    np.testing.assert_array_equal(out, inp)


def test_host_memory_copied_into_an_output_is_reported(lib):
    err, _, out = call(lib, "memcpy_host_into_output")
    assert err and err.startswith(
        f"the launcher copied host memory into out (cudaMemcpy at {at('HOST COPY INTO OUT')}): the outputs must be "
        "computed by kernels"
    ), err
    err, _, _ = call(lib, "memcpy_host_by_way_of_scratch")
    assert err and f"copied host memory into out by way of device memory (cudaMemcpy at {at('LAUNDERED')}" in err


def test_a_memset_of_an_input_is_reported(lib):
    err, _, _ = call(lib, "memset_input")
    assert err and err.startswith(f"the launcher wrote to its input in (cudaMemset at {at('MEMSET INPUT')})"), err


def test_a_plain_read_after_another_blocks_atomic_is_a_race(lib):
    err, _, _ = call(lib, "atomic_then_plain_read_launch")
    assert err and "global-memory race on out[0]" in err, err
    assert re.search(
        rf"reads it at {at('PLAIN READ AFTER')}, but .* of block \(0,0,0\) atomically updated it at "
        rf"{at('THE ATOMIC BEFORE')}\b",
        err,
    ), err


def test_an_atomic_after_another_blocks_store_is_a_race(lib):
    err, _, _ = call(lib, "store_then_atomic_launch")
    assert err and "global-memory race on out[0]" in err, err
    assert f"atomically updates it at {at('ATOMIC AFTER')}" in err and f"wrote it at {at('PLAIN STORE')}" in err
    assert "An atomic orders nothing against a plain load or store" in err


def test_atomics_with_atomics_and_ordered_plain_accesses_are_not_races(lib):
    err, _, out = call(lib, "atomics_ok_launch")
    assert err is None, err
    assert out[0] == 32 and out[1] == 32 and out[2].view(np.int32) == 31 and out[3] == 24


@pytest.mark.parametrize(
    "fn, marker", [("scribble_launch", "STORE INTO INPUT"), ("atomic_into_input_launch", "ATOMIC INTO INPUT")]
)
def test_a_kernels_store_into_an_input_is_reported_even_if_undone(lib, fn, marker):
    err, inp, _ = call(lib, fn)
    assert err and err.startswith("the kernel wrote to its input in (in[") and f"at {at(marker)}" in err, err
    assert "inputs are read-only" in err


def test_memcpy_line_is_the_callers_through_a_macro(lib):
    src = (
        "#include <cuda_runtime.h>\n#include <vector>\n#define CHECK(x) (void)(x)\n"
        'extern "C" void f(const float* in, float* out, int n) {\n'
        "    std::vector<float> h(n);\n"
        "    CHECK(cudaMemcpyAsync(out, h.data(), n * sizeof(float), cudaMemcpyHostToDevice, 0));\n}\n"
    )
    other = Lib(build(src, "memcpy_macro"))
    err, _, _ = call(other, "f")
    assert err and "(cudaMemcpy at memcpy_macro.cu:6)" in err, err


@pytest.mark.parametrize(
    "name, exercise, pattern",
    [
        ("host_side_gemm.cu", "naive", r"host code read A \(device memory\) at host_side_gemm\.cu:11"),
        ("host_memcpy_gemm.cu", "naive", r"cudaMemcpy at host_memcpy_gemm\.cu:11 copies A \(device memory\) to host"),
        ("splitk_store_then_atomic.cu", "naive", r"global-memory race on C\[.*atomically updates"),
        ("input_scratch_restore.cu", "naive", r"the kernel wrote to its input A \(A\["),
    ],
)
def test_submissions_fail_on_the_cpu_backend(name, exercise, pattern):
    r = grade.grade(exercise, str(SUBS / name), backend="cpu", seed=1, scan=False)
    assert not r.passed and not r.correct and re.search(pattern, r.message), r.message


def test_split_k_zeroed_with_memset_then_atomics_passes():
    r = grade.grade("naive", str(SUBS / "good_splitk_atomic.cu"), backend="cpu", seed=1, scan=False)
    assert r.passed, r.message


def test_pitched_copies_and_memsets_pass(lib):
    """cudaMallocPitch, cudaMemset2D, a kernel writing the pitched block, cudaMemcpy2DAsync of it into the
    output (device to device)."""
    err, inp, out = call(lib, "memcpy2d_pitched_scratch")
    assert err is None, err
    np.testing.assert_array_equal(out, inp)


def test_a_pitch_below_the_width_is_an_error_and_copies_nothing(lib):
    err, _, out = call(lib, "memcpy2d_status")
    assert err is None, err
    assert (out == 100 + np.arange(N)).all(), out  # the status came back, as on a GPU


def test_pitched_rows_past_the_end_of_a_buffer_are_reported(lib):
    err, _, _ = call(lib, "memcpy2d_rows_past_the_end")
    assert err and err.startswith(
        f"cudaMemcpy2D at {at('PAST THE END')}: the source's 4 rows of 32 bytes, 256 bytes apart, end"
    ), err
    assert "past the end of a cudaMalloc block" in err


def test_host_memory_copied_into_an_output_by_a_pitched_copy_is_reported(lib):
    err, _, _ = call(lib, "memcpy2d_host_into_output")
    assert err and err.startswith(
        f"the launcher copied host memory into out (cudaMemcpy2D at {at('HOST 2D COPY')}): the outputs must be"
    ), err


@pytest.mark.parametrize(
    "fn, what, marker",
    [("read_unset_output", "reads", "UNSET READ"), ("atomic_unset_output", "atomically updates", "UNSET ATOMIC")],
)
def test_a_read_of_an_output_nothing_wrote_in_the_call_is_reported(lib, fn, what, marker):
    """Whatever the grader's poison is, an output read before it is written reads undefined memory on a GPU."""
    err, _, _ = call(lib, fn)
    assert err and err.startswith(
        f"the kernel {what} out[0] at {at(marker)} (thread (0,0,0) of block (0,0,0)) "
        "before anything wrote it in this launcher call"
    ), err


def test_an_output_set_by_a_kernel_memset_atomicexch_or_copy_may_be_read(lib):
    err, _, out = call(lib, "set_then_read_output")
    assert err is None, err
    np.testing.assert_array_equal(out[:16], 1 + np.arange(16))
    np.testing.assert_array_equal(out[16:24], 1)
    np.testing.assert_array_equal(out[24:28], 3)
    np.testing.assert_array_equal(out[28:], 11 + np.arange(4))


def test_what_an_earlier_call_wrote_is_not_set_in_the_next(lib):
    inp, out = np.ones(N, np.float32), np.zeros(N, np.float32)
    for fn in ("set_then_read_output", "read_unset_output"):  # the same buffer, as the grader's rounds reuse it
        lib.buffers(outputs={"out": out}, inputs={"in": inp}, device=True)
        err = lib(fn, inp, out, N)
    assert err and "before anything wrote it in this launcher call" in err, err


DEVICE_VARIABLE = """#include <cuda_runtime.h>
__device__ float dv[4];
__constant__ float cv[4];
__global__ void from_dv(float* out) { out[threadIdx.x] = dv[threadIdx.x % 4] + cv[threadIdx.x % 4]; }
extern "C" void host_writes_device_variable(const float* in, float* out, int n) {
    dv[0] = 1.f;  // HOST WRITE OF DV
    from_dv<<<1, 32>>>(out);
}
extern "C" void host_reads_constant(const float* in, float* out, int n) {
    float x = cv[1];  // HOST READ OF CV
    if (x > 1e30f) return;
    from_dv<<<1, 32>>>(out);
}
extern "C" void symbols_copied(const float* in, float* out, int n) {
    float h[4] = {1.f, 2.f, 3.f, 4.f};
    cudaMemcpyToSymbol(dv, h, sizeof h);
    cudaMemcpyToSymbol(cv, h, sizeof h);
    from_dv<<<1, 32>>>(out);
    float* d = nullptr;
    cudaMalloc(&d, sizeof h);
    cudaMemcpyFromSymbol(d, dv, sizeof h, 0, cudaMemcpyDeviceToDevice);
    cudaFree(d);
}
extern "C" void symbol_to_host(const float* in, float* out, int n) {
    float h[4];
    from_dv<<<1, 32>>>(out);
    cudaMemcpyFromSymbol(h, dv, sizeof h);  // SYMBOL TO HOST
}
"""


@pytest.fixture(scope="module")
def dvlib():
    return Lib(build(DEVICE_VARIABLE, "devvar"))


@pytest.mark.parametrize(
    "fn, what, marker",
    [
        ("host_writes_device_variable", "wrote the __device__ variable dv", "HOST WRITE OF DV"),
        ("host_reads_constant", "read the __device__ variable cv", "HOST READ OF CV"),
    ],
)
def test_host_code_touching_a_device_variable_is_reported(dvlib, fn, what, marker):
    err, _, _ = call(dvlib, fn)
    line = line_of(DEVICE_VARIABLE, marker)
    assert err and err.startswith(f"the launcher's host code {what} at devvar.cu:{line}: on a GPU host code"), err


def test_a_device_variable_copied_to_the_host_is_reported(dvlib):
    err, _, _ = call(dvlib, "symbol_to_host")
    line = line_of(DEVICE_VARIABLE, "SYMBOL TO HOST")
    assert err and err.startswith(f"cudaMemcpyFromSymbol at devvar.cu:{line} copies dv (device memory) to host"), err


def test_device_variables_set_and_read_with_the_symbol_calls_pass(dvlib):
    err, _, out = call(dvlib, "symbols_copied")
    assert err is None, err
    np.testing.assert_array_equal(out, 2 * (1 + np.arange(N) % 4))


def ended(lib, fn):
    """call(), then the call's end as grader.run.binding marks it (the buffers forgotten): what it reported."""
    err, inp, out = call(lib, fn)
    lib.buffers()
    return err or lib.error(), inp, out


def test_an_output_equal_to_uploaded_host_data_is_host_work(lib):
    err, _, _ = ended(lib, "host_result_copied_by_kernel")
    assert err and err.startswith(
        f"the launcher computed out on the host: after the call it holds exactly the host data copied into device "
        f"memory at {at('HOST RESULT UPLOADED')} (cudaMemcpy)"
    ), err
    err, _, out = ended(lib, "host_table_used_by_kernel")  # the kernel computes from the table: fine
    assert err is None and (out == np.arange(N)).all(), err


# ---- the runtime's own allocations (the native runner allocates every buffer with them) are page-protected
def _device(lib, host: np.ndarray) -> int:
    import ctypes

    lib.dll.cuda_emu_device_alloc.restype = ctypes.c_void_p
    lib.dll.cuda_emu_device_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulonglong]
    p = lib.dll.cuda_emu_device_alloc(host.nbytes)
    lib.dll.cuda_emu_device_copy(p, host.ctypes.data, host.nbytes)
    return p


def _register(lib, bufs: dict, outputs=()):
    import ctypes

    n = len(bufs)
    names = (ctypes.c_char_p * n)(*(k.encode() for k in bufs))
    ptrs = (ctypes.c_ulonglong * n)(*(p for p, _ in bufs.values()))
    sizes = (ctypes.c_ulonglong * n)(*(b for _, b in bufs.values()))
    lib.dll.cuda_emu_set_buffers(n, names, ptrs, sizes)
    flags = (ctypes.c_int * n)(*(2 | (k in outputs) for k in bufs))
    lib.dll.cuda_emu_set_outputs(n, names, ptrs, sizes, (ctypes.c_int * n)(*([0] * n)), flags)


def test_host_code_reading_runtime_device_memory_through_a_library_function_is_reported():
    import ctypes

    lib = Lib(build(SRC, "device_protected"))  # a process-wide fault handler: a library of its own
    host_in = np.arange(N, dtype=np.float32) + 1
    d_in, d_out = _device(lib, host_in), _device(lib, np.zeros(N, np.float32))
    _register(lib, {"in": (d_in, host_in.nbytes), "out": (d_out, host_in.nbytes)}, outputs=("out",))
    lib.dll.host_memcmp_on_input(ctypes.c_void_p(d_in), ctypes.c_void_p(d_out), N)
    lib.dll.cuda_emu_set_outputs(0, None, None, None, None, None)
    err = lib.error()
    assert err and err.startswith("the launcher's host code read in (device memory) in "), err
    assert re.search(r"in \S+ \(libc\.so\.6\), a library function|in a library function of libc\.so\.6", err), err
    back = np.full(N, np.nan, np.float32)
    lib.dll.cuda_emu_device_copy(back.ctypes.data, d_out, back.nbytes)  # the runtime's own copies still work
    assert (back == 1 + np.arange(N)).all()  # and the kernel ran


def test_host_code_touching_cudamalloc_memory_outside_a_launcher_call_is_reported_and_lives_on():
    import ctypes

    lib = Lib(build(SRC, "device_protected2"))
    f = lib.dll.host_reads_cudamalloc_outside_a_call
    f.restype = ctypes.c_float
    assert f(N) == 0.0  # the process lives on, the read completes...
    err = lib.error()  # ... and is reported with its line
    assert err and err.startswith(
        f"the launcher's host code read a cudaMalloc block (device memory) at "
        f"{at('HOST READ OUTSIDE A CALL').replace('device.cu', 'device_protected2.cu')}"
    ), err


def test_host_code_touching_a_large_block_anywhere_is_reported():
    """A block of several MiB (on huge pages: globals.cpp map_block) faults for host code at its first
    word, in its middle and at its last word, as a small one does; the runtime's own copies still work."""
    import ctypes

    lib = Lib(build(SRC, "device_protected3"))
    host = np.arange((5 << 20) // 4 + 3, dtype=np.float32)  # 5 MiB and 12 bytes: huge pages and a 4 KiB tail
    d = _device(lib, host)
    for word in (0, host.size // 2, host.size - 1):
        _register(lib, {"in": (d, host.nbytes)})
        got = ctypes.c_float()
        ctypes.memmove(ctypes.byref(got), d + 4 * word, 4)
        lib.dll.cuda_emu_set_outputs(0, None, None, None, None, None)
        err = lib.error()
        assert err and err.startswith("the launcher's host code read in (device memory) in "), (word, err)
        assert got.value == host[word]  # the read completed
    back = np.zeros_like(host)
    lib.dll.cuda_emu_device_copy(back.ctypes.data, d, back.nbytes)
    assert (back == host).all()
