"""Races on the outputs in global memory: the CPU backend runs blocks one after another, so a
non-atomic read-modify-write from several blocks gave the right answer there (and lost updates
on a GPU). Writes and reads of every output are tracked within a launch."""

import pathlib

import numpy as np
import pytest

from cpu_helpers import Lib, build, line_of
from grader.judge import grade

HERE = pathlib.Path(__file__).parent
SPLITK = (HERE / "splitk_race.cu").read_text()


def test_split_k_without_atomics_fails_the_grade_naming_the_race():
    r = grade.grade("naive", str(HERE / "splitk_race.cu"), backend="cpu", seed=1, scan=False)
    assert not r.passed and not r.correct
    assert "global-memory race" in r.message and "C[" in r.message, r.message
    assert f"splitk_race.cu:{line_of(SPLITK, 'BUG: not atomic')}" in r.message, r.message
    assert "block (" in r.message and "atomicAdd" in r.message


def test_split_k_with_atomics_passes():
    src = SPLITK.replace("C[row * N + col] += acc;", "atomicAdd(&C[row * N + col], acc);")
    r = grade.grade("naive", src, backend="cpu", seed=1, scan=False)
    assert r.passed, r.message


BUGS = (HERE / "kernels_bugs.cu").read_text()


@pytest.fixture(scope="module")
def lib():
    return Lib(build(BUGS, "bugs_global"))


def test_blocks_adding_to_one_element_race(lib):
    out = np.zeros(8, np.float32)
    lib.buffers(outputs={"out": out})
    err = lib("blocks_add_launch", out)
    assert err and "global-memory race on out[" in err, err
    assert "block (1,0,0)" in err and "block (0,0,0)" in err
    assert f"bugs_global.cu:{line_of(BUGS, 'BUG: every block adds')}" in err


def test_unordered_read_of_a_neighbours_output_in_one_block(lib):
    out = np.zeros(128, np.float32)
    lib.buffers(outputs={"out": out})
    err = lib("neighbour_read_launch", out)
    assert err and "global-memory race on out[" in err and "reads" in err, err
    assert f"bugs_global.cu:{line_of(BUGS, 'WRITE: own element')}" in err


def test_writes_of_different_values_race_at_the_end_of_the_launch(lib):
    out = np.zeros(1, np.float32)
    lib.buffers(outputs={"out": out})
    err = lib("last_block_wins_launch", out)
    assert err and "global-memory race on out[0]" in err and "different value" in err, err


def test_ordered_accesses_same_values_and_atomics_are_not_races(lib):
    out = np.zeros(129, np.float32)
    word = np.zeros(1, np.uint32)
    lib.buffers(outputs={"out": out, "word": word})
    assert lib("ordered_ok_launch", out, word) is None
    lane = np.arange(32)
    np.testing.assert_array_equal(out[:32], lane + (lane + 1) % 32)
    assert out[128] == 32 and word[0] == 0x55555555


def test_untracked_buffers_are_not_checked(lib):
    out = np.zeros(8, np.float32)
    lib.buffers()  # the launcher's arrays unnamed: nothing to check (a notebook's own calls)
    assert lib("blocks_add_launch", out) is None
    assert (out == 3).all()


SUBS = HERE.parent / "submissions"


def test_a_flag_orders_split_k_slices_only_after_a_fence():
    """The serial split-K's flag (an atomic the next slice waits for) orders the slices' updates of C when a
    __threadfence() comes before the release; without the fences the same kernel races (the flag may be seen
    before the data)."""
    src = (SUBS / "good_serial_splitk_flag.cu").read_text()
    assert grade.grade("naive", src, backend="cpu", seed=1, scan=False).passed
    r = grade.grade("naive", src.replace("__threadfence();", ""), backend="cpu", seed=1, scan=False)
    assert not r.passed and "global-memory race on C[" in r.message and "block (0,0,1)" in r.message, r.message


def test_without_the_barrier_after_the_acquire_the_other_threads_race():
    src = (SUBS / "good_serial_splitk_flag.cu").read_text()
    first = src.index("__syncthreads();")  # the one after thread 0's wait
    r = grade.grade("naive", src[:first] + src[first + len("__syncthreads();") :], backend="cpu", seed=1, scan=False)
    assert not r.passed and "global-memory race on C[" in r.message, r.message


def test_stores_of_one_statement_name_the_index(lib):
    out = np.zeros(2, np.float32)
    lib.buffers(outputs={"out": out})
    err = lib("one_element_per_block_launch", out)
    assert err and "global-memory race on out[" in err and "different value" in err, err
    assert "one statement" in err and "threadIdx" in err, err


def test_a_race_on_a_mask_word_suggests_a_ballot_or_atomic_or(lib):
    x = np.linspace(-1, 1, 32, dtype=np.float32)
    for name in ("mask", "bits"):
        words = np.zeros(1, np.uint32)
        lib.buffers(outputs={name: words}, inputs={"x": x})
        err = lib("mask_or_launch", x, words)
        assert err and f"global-memory race on {name}[0]" in err, err
        assert f"bugs_global.cu:{line_of(BUGS, 'BUG: mask word |=')}" in err, err
        assert "atomicOr" in err, err  # any word of bits: the atomic that sets them
        if name == "mask":  # the contract's mask: a ballot per warp, and atomicAdd is not the fix
            assert "__ballot_sync(0xffffffff" in err and "use atomicAdd" not in err, err
