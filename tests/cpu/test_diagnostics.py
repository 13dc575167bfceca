"""Bugs the CPU backend must catch, with a message that names the problem and the line."""

import pathlib
import re

import numpy as np
import pytest

from cpu_helpers import Lib, build, line_of

SRC = (pathlib.Path(__file__).parent / "kernels_bugs.cu").read_text()


@pytest.fixture(scope="module")
def lib():
    return Lib(build(SRC, "bugs"))


def gemm_args(m=40, n=24, k=32):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return a, b, np.zeros((m, n), np.float32), m, n, k


def test_early_return_before_barrier_is_a_divergent_barrier(lib):
    err = lib("early_return_gemm", *gemm_args())
    assert err and "divergent barrier" in err and "exited" in err
    assert f"line {line_of(SRC, 'WAIT: first barrier')}" in err
    assert "early_return" in err and "block (" in err


@pytest.mark.parametrize("flags", [1, 3])
def test_missing_second_barrier_is_a_race(lib, flags):
    lib.configure(0, flags)
    err = lib("missing_barrier_gemm", *gemm_args())
    lib.configure(0, 1)
    assert err and "shared-memory race" in err
    assert re.search(r"(As|Bs)\[\d+\]\[\d+\]", err)
    lines = {line_of(SRC, "WRITE: tile load"), line_of(SRC, "WRITE: tile load") + 1, line_of(SRC, "READ: tile use")}
    found = {int(x) for x in re.findall(r"bugs\.cu:(\d+)", err.split(" [kernel")[0])}
    assert found and found <= lines, err


def test_missing_barrier_gives_wrong_results_under_shuffled_schedules(lib):
    a, b, c, m, n, k = gemm_args(32, 32, 64)
    lib.configure(0, 0)  # race detector off: schedules alone must expose it
    wrong = 0
    for seed in (1, 2, 3):
        lib.configure(seed, 0)
        c[:] = 0
        lib("missing_barrier_gemm", a, b, c, m, n, k)
        wrong += not np.allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    lib.configure(0, 1)
    assert wrong >= 1


def test_barriers_in_different_branches(lib):
    err = lib("divergent", np.zeros(32, np.float32))
    assert err and "divergent barrier" in err
    assert f"line {line_of(SRC, 'BARRIER A')}" in err and f"line {line_of(SRC, 'BARRIER B')}" in err


def test_shared_out_of_bounds(lib):
    err = lib("shared_oob_launch", np.zeros(256, np.float32))
    assert err and "out-of-bounds" in err and f"bugs.cu:{line_of(SRC, 'BUG: OOB')}:" in err
    assert "index 16" in err


def test_dynamic_shared_out_of_bounds(lib):
    err = lib("dyn_oob_launch", np.zeros(64, np.float32), 64)
    assert err and "out-of-bounds" in err and "128 bytes" in err
    assert f"bugs.cu:{line_of(SRC, 'BUG: dyn OOB')}" in err


def test_shuffle_from_lane_outside_mask(lib):
    err = lib("bad_shuffle_launch", np.zeros(16, np.int32))
    assert err and "__shfl_down_sync" in err and "not in the mask" in err
    assert f"line {line_of(SRC, 'outside the mask')}" in err


def test_error_is_sticky_for_the_launch_and_later_launches_run(lib):
    out = np.zeros(4, np.float32)
    err = lib("sticky", out, 4)
    assert err and "block (1,0,0)" in err
    assert list(out) == [1, 1, 0, 0]  # blocks after the failing one are skipped
    assert lib.error() is None  # taken once
    out[:] = 0
    assert lib("early_return_gemm", *gemm_args(32, 32, 32)) is None  # no ragged tiles: fine
    a, b, c, m, n, k = gemm_args(32, 32, 32)
    assert lib("early_return_gemm", a, b, c, m, n, k) is None
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_invalid_launch_configuration(lib):
    import ctypes

    f = lib.dll.too_many_threads
    f.restype = ctypes.c_int
    assert f(ctypes.c_void_p(np.zeros(4, np.float32).ctypes.data)) == 9  # cudaErrorInvalidConfiguration
    err = lib.error()
    assert err and "1024" in err and "2048" in err


def test_misaligned_float4(lib):
    err = lib("misaligned_launch", np.zeros(8, np.float32), np.zeros(1, np.float32))
    assert err and "misaligned" in err and f"bugs.cu:{line_of(SRC, 'BUG: misaligned')}" in err


def test_dynamic_shared_memory_is_poisoned_for_every_block(lib):
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(64, np.float32)
    assert lib("dyn_stale_launch", x, out) is None
    np.testing.assert_array_equal(out[:32], x)
    assert np.isnan(out[32:]).all(), "block 1 saw what block 0 left in dynamic shared memory"


def test_partial_syncwarp_orders_only_the_lanes_in_its_mask(lib):
    err = lib("half_syncwarp_launch", np.zeros(32, np.int32))
    assert err and "shared-memory race" in err and "buf[31]" in err
    assert f"bugs.cu:{line_of(SRC, 'BUG: lane 0 reads')}" in err
    assert f"bugs.cu:{line_of(SRC, 'WRITE: half sync')}" in err


@pytest.mark.skipif(
    __import__("grader.compile.cpu.build", fromlist=["_gcc_major"])._gcc_major() < 12,
    reason="-ftrivial-auto-var-init needs GCC 12",
)
def test_uninitialised_accumulator_is_not_zero(lib):
    x = np.ones(8, np.float32)
    out = np.zeros(32, np.float32)
    assert lib("uninit_sum_launch", x, out, 8) is None
    assert not np.isclose(out, 8).any(), "an uninitialised local started at 0"


def test_two_threads_storing_one_element_at_one_line_name_the_index_not_a_barrier(lib):
    err = lib("same_element_store_launch", np.zeros(32, np.float32))
    line = line_of(SRC, "BUG: lanes 2i and 2i+1")
    assert err and "shared-memory race on s[" in err and f"bugs.cu:{line}" in err, err
    assert "write-write race of one statement" in err and "threadIdx" in err, err
    assert "barrier is missing" not in err, err
    # a store and a read at different lines still name the missing barrier
    err = lib("missing_barrier_gemm", *gemm_args())
    assert err and "a barrier is missing" in err and "one statement" not in err, err
