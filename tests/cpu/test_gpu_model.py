"""The CPU backend plays a real GPU (a Tesla T4, the course's lowest): its properties, the limits it enforces
at a launch (grid, block, shared memory, __launch_bounds__), events that measure a modelled time, and the stream
contract (every launch on the stream the launcher was given)."""

import ctypes
import pathlib

import numpy as np
import pytest

from cpu_helpers import Lib, build, line_of

SRC = (pathlib.Path(__file__).parent / "kernels_limits.cu").read_text()
INVALID_CONFIGURATION, INVALID_VALUE, OUT_OF_RESOURCES = 9, 1, 701


@pytest.fixture(scope="module")
def lib():
    return Lib(build(SRC, "limits"))


@pytest.fixture
def streams(lib):
    lib.dll.cuda_emu_stream_create.restype = ctypes.c_void_p
    lib.dll.cuda_emu_expect_stream.argtypes = [ctypes.c_void_p]
    yield lib
    lib.dll.cuda_emu_expect_stream(None)


def _ptr(a):
    return ctypes.c_void_p(a.ctypes.data)


def test_properties_are_a_tesla_t4s(lib):
    out, name = np.zeros(11, np.int32), ctypes.create_string_buffer(256)
    lib.dll.properties(_ptr(out), name)
    assert name.value == b"Tesla T4"
    # major, minor, SMs, shared per block, opt-in (property and attribute), threads, warp, threads per SM, grid y,
    # shared per SM (deviceQuery on a T4)
    assert out.tolist() == [7, 5, 40, 49152, 65536, 65536, 1024, 32, 1024, 65535, 65536]


def test_events_measure_a_modelled_time_between_their_records(lib):
    """Not the host's clock: how long a launch takes here depends on what the grader records (tests/cpu/
    test_virtual_clock.py), so a launch counts a fixed cost and one per thread, whatever its kernel does."""
    x = np.zeros(32, np.float32)
    f = lib.dll.timed
    f.restype = ctypes.c_float
    ms = f(_ptr(x), 200_000)
    assert lib.error() is None
    assert 0 < ms < 0.1 and f(_ptr(x), 0) == ms, ms  # an empty kernel takes as long, and time: never 0 ms


@pytest.mark.parametrize(
    "config,limit",
    [
        ((1, 65536, 1, 1, 1, 1), "gridDim.y"),  # rows on gridDim.y: M > 65535 fails on a GPU
        ((1, 1, 65536, 1, 1, 1), "gridDim.z"),
        ((1, 1, 1, 1025, 1, 1), "1024 threads"),
        ((1, 1, 1, 32, 33, 1), "1024 threads"),
        ((1, 1, 1, 1, 1, 65), "blockDim.z"),
        ((0, 1, 1, 32, 1, 1), "at least 1"),
    ],
)
def test_a_launch_past_the_gpus_limits_fails_naming_the_limit(lib, config, limit):
    x = np.zeros(1, np.float32)
    assert lib.dll.launch_config(_ptr(x), *config) == INVALID_CONFIGURATION
    err = lib.error()
    assert err and "invalid launch configuration" in err and limit in err, err
    assert x[0] == 0  # not run
    assert lib.dll.launch_config(_ptr(x), 1, 65535, 1, 1024, 1, 1) == 0 and lib.error() is None


def test_static_shared_memory_past_48_kb_fails_the_launch(lib):
    x = np.arange(32, dtype=np.float32)
    assert lib.dll.launch_big_static(_ptr(x)) != 0
    err = lib.error()
    assert err and "49156 bytes of static shared memory" in err and "48 KB" in err and "big_static" in err, err


@pytest.mark.parametrize("plus_first", [0, 1])
def test_a_device_functions_shared_array_counts_in_every_kernel_that_calls_it(lib, plus_first):
    """32 KB in stage(), called by staged and by staged_plus (20 KB of its own): 52 KB in staged_plus, as nvcc
    counts it, whichever kernel registered the array first."""
    x = np.arange(32, dtype=np.float32)
    assert lib.dll.launch_staged(_ptr(x), plus_first) != 0
    err = lib.error()
    assert err and "staged_plus uses 53248 bytes of static shared memory" in err and "48 KB" in err, err


def test_static_plus_dynamic_shared_memory_is_bounded_by_the_opt_in_limit(lib):
    x = np.arange(32, dtype=np.float32)
    assert lib.dll.launch_static_and_dynamic(_ptr(x), 32 * 1024) == 0 and lib.error() is None  # 64 KB in all
    assert lib.dll.launch_static_and_dynamic(_ptr(x), 32 * 1024 + 4) != 0  # 4 bytes over
    err = lib.error()
    assert err and "65540 bytes of shared memory" in err and "65536" in err, err


def test_a_launch_above_launch_bounds_fails(lib):
    x = np.zeros(256, np.float32)
    assert lib.dll.launch_bounded(_ptr(x), 128) == 0 and lib.error() is None and x[0] == 128
    x[:] = 0
    assert lib.dll.launch_bounded(_ptr(x), 256) == OUT_OF_RESOURCES
    err = lib.error()
    assert err and "256 threads" in err and "__launch_bounds__(128)" in err, err
    assert f"limits.cu:{line_of(SRC, '__launch_bounds__(THREADS)')}" in err, err
    assert not x.any()


def test_launch_bounds_on_a_declaration_only_bind_the_definition(lib):
    """`__global__ void __launch_bounds__(64) k(...);`, then k defined without it: nvcc applies the 64."""
    x = np.zeros(256, np.float32)
    assert lib.dll.launch_declared_bounded(_ptr(x), 64) == 0 and lib.error() is None and x[0] == 64
    x[:] = 0
    assert lib.dll.launch_declared_bounded(_ptr(x), 256) == OUT_OF_RESOURCES
    err = lib.error()
    assert err and "256 threads" in err and "__launch_bounds__(64)" in err, err
    assert f"limits.cu:{line_of(SRC, '__launch_bounds__(64) declared_bounded')}" in err, err
    assert not x.any()


def _call(lib, fn, stream, n=100):
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, np.nan, np.float32)
    getattr(lib.dll, fn)(_ptr(x), _ptr(y), n, ctypes.c_void_p(stream))
    return x, y, lib.error()


def test_streams_are_distinct_and_not_the_default_stream(streams):
    lib = streams
    s = {lib.dll.cuda_emu_stream_create() for _ in range(3)}
    assert len(s) == 3 and None not in s and 0 not in s


def test_work_on_the_given_stream_passes(streams):
    lib = streams
    s = lib.dll.cuda_emu_stream_create()
    lib.dll.cuda_emu_expect_stream(s)
    for fn in ("on_stream", "synchronous_calls"):
        x, y, err = _call(lib, fn, s)
        assert err is None and (x == y).all(), (fn, err)


@pytest.mark.parametrize(
    "fn,what,marker",
    [
        ("on_default_stream", "launches kernel copy", "copy<<<(n + 63) / 64, 64>>>"),
        ("memset_on_default_stream", "cudaMemsetAsync", "cudaMemsetAsync(y"),
    ],
)
def test_work_on_another_stream_fails_naming_both(streams, fn, what, marker):
    lib = streams
    s, other = lib.dll.cuda_emu_stream_create(), lib.dll.cuda_emu_stream_create()
    lib.dll.cuda_emu_expect_stream(s)
    _, _, err = _call(lib, fn, s)
    assert err and what in err and "the default stream (0)" in err and hex(s) in err, err
    assert f"limits.cu:{line_of(SRC, marker)}" in err, err
    _, _, err = _call(lib, "on_stream", other)  # the launcher was handed another stream than expected
    assert err and hex(other) in err and hex(s) in err, err
    lib.dll.cuda_emu_expect_stream(None)
    x, y, err = _call(lib, fn, s)  # no expectation set: any stream will do
    assert err is None and (x == y).all()
