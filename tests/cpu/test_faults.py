"""A kernel that faults (SIGSEGV, SIGBUS, SIGFPE) gives a launch error; the process lives on."""

import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cpu_helpers import Lib, build

SRC = (pathlib.Path(__file__).parent / "kernels_faults.cu").read_text()
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lib():
    return Lib(build(SRC, "faults"))


def test_wild_write_is_an_illegal_memory_access_and_later_launches_work(lib):
    a = np.arange(200, dtype=np.float32)
    c = np.zeros(200, np.float32)
    err = lib("wild_launch", a, c, 200)
    assert err and "illegal memory access in kernel wild," in err, err
    assert "block (0,0,0), thread (37,0,0)" in err and re.search(r"SIGSEGV at 0x[0-9a-f]+", err), err
    assert "faults.cu:8" in err, err  # the faulting line, when it is the kernel file's
    assert lib.error() is None  # taken once
    np.testing.assert_array_equal(c[:37], a[:37] * 2)  # threads before the fault ran...
    assert not c[64:].any()  # ...the blocks after it were skipped
    c[:] = 0
    assert lib("wild_launch", a, c, 30) is None  # the same kernel, no wild thread: correct
    np.testing.assert_array_equal(c[:30], a[:30] * 2)


def test_wild_read_on_a_fiber_then_a_correct_launch(lib):
    a = np.arange(256, dtype=np.float32)
    c = np.zeros(256, np.float32)
    for _ in range(2):  # the fibers abandoned mid-kernel are reused
        err = lib("wild_synced_launch", a, c, 256)
        assert err and "illegal memory access in kernel wild_synced," in err, err
        assert "block (1,0,0), thread (6,0,0)" in err, err
        c[:] = 0
        assert lib("wild_synced_launch", a, c, 70) is None
        np.testing.assert_array_equal(c[:70], a[:70] * 2)


@pytest.mark.parametrize("fn,arg", [("recursion_launch", 1_000_000), ("big_local_launch", 8)])
def test_stack_overflow_is_an_error(lib, fn, arg):
    out = np.zeros(32, np.float32 if fn == "big_local_launch" else np.int32)
    err = lib(fn, out, arg)
    assert err and "illegal memory access" in err and "overflowed its stack" in err, err
    if fn == "recursion_launch":
        assert lib(fn, out, 3) is None  # shallow enough: fine
    a, c = np.ones(64, np.float32), np.zeros(64, np.float32)
    assert lib("wild_synced_launch", a, c, 64) is None and (c == 2).all()


def test_integer_division_by_zero(lib):
    out = np.zeros(32, np.int32)
    err = lib("divide_launch", out, 0)
    assert err and "division by zero" in err and "thread (5,0,0)" in err, err
    assert lib("divide_launch", out, 100) is None and out[0] == 1


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_grader_load_raises_kernel_error_and_the_process_lives_on():
    src = (ROOT / "tests" / "submissions" / "oob_write.cu").read_text()
    r = _python(f"""
        import ctypes, torch, grader
        mod = grader.load({src!r}, "naive", backend="cpu")
        a, b = torch.randn(40, 24), torch.randn(24, 50)
        try:
            mod.gemm(a, b)
        except grader.KernelError as e:
            print("KernelError:", e)
        good = grader.load("kernels/01_naive.cu", "naive", backend="cpu")
        assert torch.allclose(good.gemm(a, b), a @ b, rtol=1e-4, atol=1e-4)
        print("alive")
        ctypes.string_at(1)  # a fault outside a kernel: the previous handler (faulthandler) runs
    """)
    assert "KernelError:" in r.stdout and "illegal memory access in kernel k," in r.stdout, r.stdout + r.stderr
    assert "alive" in r.stdout
    assert r.returncode == -11 and "Segmentation fault" in r.stderr, (r.returncode, r.stderr)
