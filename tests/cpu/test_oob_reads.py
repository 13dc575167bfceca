"""A kernel's load outside the buffer it was given, whose value it may throw away (a tile load guarded only by
k < K, a bias read before the column test): on a GPU it reads whatever lies there or faults, and the result may
still come out right. The CPU backend knows each buffer's extent and the allocation around it (the grader's guard
zones, or its own cudaMalloc block), and reports such a read with its line."""

import ctypes
import textwrap

import numpy as np
import pytest

from cpu_helpers import Lib, build, line_of

SRC = textwrap.dedent("""\
    __global__ void shift(const float* x, float* y, int n, int d) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float v = x[i + d];  // READ
        if (i < n) y[i] = i + d >= 0 && i + d < n ? v : 0.f;
    }
    extern "C" void shift_launch(const float* x, float* y, int n, int d) { shift<<<(n + 31) / 32, 32>>>(x, y, n, d); }
    extern "C" void* device_alloc(int bytes) { void* p = nullptr; cudaMalloc(&p, bytes); return p; }
    """)
GUARD = 64  # floats around each buffer


@pytest.fixture(scope="module")
def lib():
    return Lib(build(SRC, "oob"))


def guarded(n):
    whole = np.full(n + 2 * GUARD, np.nan, np.float32)
    return whole, whole[GUARD : GUARD + n]


def call(lib, n, d, allocations=True):
    xw, x = guarded(n)
    yw, y = guarded(n)
    x[:] = np.arange(n, dtype=np.float32)
    lib.buffers(outputs={"y": y}, inputs={"x": x}, device=True)
    if allocations:
        arrs = [xw, yw]
        lib.dll.cuda_emu_set_allocations(
            2,
            (ctypes.c_ulonglong * 2)(*[a.ctypes.data for a in arrs]),
            (ctypes.c_ulonglong * 2)(*[a.nbytes for a in arrs]),
        )
    err = lib("shift_launch", x, y, n, d)
    lib.dll.cuda_emu_set_outputs(0, None, None, None, None, None)
    return err, y


def test_in_bounds_reads_pass(lib):
    err, y = call(lib, 64, 0)
    assert err is None and (y == np.arange(64)).all()


@pytest.mark.parametrize("d,where,element", [(1, "past the end of", "x[40]"), (-1, "before the start of", "x[-1]")])
def test_a_read_outside_its_buffer_is_reported_with_its_line(lib, d, where, element):
    err, _ = call(lib, 40, d)  # the rounded-up grid's threads 40..63 (or thread 0 for d = -1) read outside x
    line = line_of(SRC, "// READ")
    assert err and err.startswith(f"out-of-bounds read of x at oob.cu:{line}: thread "), err
    assert f"reads {element}, {where} the 40-element array" in err, err


def test_without_the_allocation_nothing_is_known_around_the_buffer(lib):
    err, _ = call(lib, 40, 1, allocations=False)  # a notebook's plain tensors: the old checks only
    assert err is None


def test_the_runtimes_own_cudamalloc_blocks_are_allocations(lib):
    lib.dll.device_alloc.restype = ctypes.c_void_p
    n = 40
    base = lib.dll.device_alloc((n + 2 * GUARD) * 4)
    ybase = lib.dll.device_alloc((n + 2 * GUARD) * 4)
    x, y = base + GUARD * 4, ybase + GUARD * 4
    names = (ctypes.c_char_p * 2)(b"x", b"y")
    ptrs = (ctypes.c_ulonglong * 2)(x, y)
    sizes = (ctypes.c_ulonglong * 2)(n * 4, n * 4)
    lib.dll.cuda_emu_set_buffers(2, names, ptrs, sizes)
    lib.dll.cuda_emu_set_outputs(2, names, ptrs, sizes, (ctypes.c_int * 2)(0, 0), (ctypes.c_int * 2)(2, 3))
    lib.dll.shift_launch(ctypes.c_void_p(x), ctypes.c_void_p(y), n, 1)
    lib.dll.cuda_emu_set_outputs(0, None, None, None, None, None)
    err = lib.error()
    assert err and err.startswith("out-of-bounds read of x at oob.cu:"), err
