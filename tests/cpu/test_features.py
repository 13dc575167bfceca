"""Every CUDA feature the CPU backend must run, checked against numpy."""

import pathlib

import numpy as np
import pytest

from cpu_helpers import Lib, build, capture_stdout

SRC = (pathlib.Path(__file__).parent / "kernels_features.cu").read_text()


@pytest.fixture(scope="module")
def lib():
    return Lib(build(SRC, "features"))


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (70, 50, 33), (17, 33, 65)])
@pytest.mark.parametrize("seed", [0, 7])
def test_tiled_gemm_template_shared_syncthreads(lib, m, n, k, seed):
    lib.configure(seed, 1)
    a, b = rand(m, k), rand(k, n, seed=1)
    c = np.full((m, n), np.nan, np.float32)
    assert lib("gemm_tiled", a, b, c, m, n, k) is None
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    lib.configure(0, 1)


def test_block_sum_dynamic_shared_shuffles_atomics(lib):
    x = rand(1000)
    out = np.zeros(1, np.float32)
    assert lib("sum", x, out, 1000) is None
    np.testing.assert_allclose(out[0], x.sum(dtype=np.float64), rtol=1e-4)


def test_shuffle_variants_ballot_activemask(lib):
    out = np.zeros(8 * 32, np.int32)
    assert lib("shuffle_test", out) is None
    o = out.reshape(8, 32)
    lane = np.arange(32)
    np.testing.assert_array_equal(o[0], np.full(32, 30))
    np.testing.assert_array_equal(o[1], (lane // 16 * 16 + 5) * 10)
    np.testing.assert_array_equal(o[2], np.where(lane % 8 >= 2, lane - 2, lane))
    np.testing.assert_array_equal(o[3], np.where(lane + 3 < 32, lane + 3, lane))
    np.testing.assert_array_equal(o[4], lane ^ 1)
    ballot = sum(1 << i for i in range(32) if i % 3 == 0)
    np.testing.assert_array_equal(o[5].view(np.uint32), np.full(32, ballot, np.uint32))
    np.testing.assert_array_equal(o[6], np.full(32, 3))
    np.testing.assert_array_equal(o[7][:20].view(np.uint32), np.full(20, 0xFFFFF, np.uint32))


def test_float4_float2_vector_loads(lib):
    x = rand(256)
    y = np.zeros_like(x)
    assert lib("scale4", x, y, 256) is None
    np.testing.assert_allclose(y, x * 2.5, rtol=1e-6)


def test_ballot_mask_and_integer_atomics(lib):
    n = 300
    x = rand(n)
    y = np.zeros(n, np.float32)
    mask = np.zeros((n + 31) // 32, np.uint32)
    stats = np.array([0, -(2**31), 0], np.int32)
    assert lib("relu", x, y, mask, stats, n) is None
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    bits = np.zeros(mask.size * 32, bool)
    bits[:n] = y > 0
    want = (bits.reshape(-1, 32) * (1 << np.arange(32, dtype=np.uint64))).sum(1).astype(np.uint32)
    np.testing.assert_array_equal(mask, want)
    assert stats[0] == (y > 0).sum()
    assert stats[1] == int((x * 1000).astype(np.float32).astype(np.int32).max())
    assert stats[2] == -1  # every bit set


def test_math_intrinsics_and_min_max(lib):
    n = 16
    x = np.linspace(-1, 1, n).astype(np.float32)
    out = np.zeros(7 * n, np.float32)
    assert lib("math_test", x, out, n) is None
    o = out.reshape(7, n)
    i = np.arange(n)
    np.testing.assert_allclose(o[0], np.minimum(x, 0.5) + np.maximum(x, -0.5))
    np.testing.assert_array_equal(o[1], np.minimum(i, 3) + np.maximum(i, 5))
    np.testing.assert_array_equal(o[2], x)
    np.testing.assert_allclose(o[3], x / 4, rtol=1e-6)
    np.testing.assert_allclose(o[4], np.exp(x), rtol=1e-5)
    np.testing.assert_allclose(o[5], 1 / np.sqrt(x + 2), rtol=1e-5)
    np.testing.assert_allclose(o[6], x * 2 + 1 + np.minimum(x, 0.25) + np.maximum(x, 0.75), rtol=1e-5, atol=1e-6)


def test_runtime_api_and_large_dynamic_shared_memory(lib):
    import ctypes

    n = 16384  # 64 KiB of dynamic shared memory: needs cudaFuncSetAttribute
    x = rand(n)
    y = np.zeros_like(x)
    f = lib.dll.runtime_api
    f.restype = ctypes.c_int
    assert f(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data), n) == 0
    assert lib.error() is None
    np.testing.assert_array_equal(y, x[::-1])


def test_kernel_printf_reaches_stdout(lib):
    out = capture_stdout(lambda: lib("say_hello", 42))
    assert sorted(out.splitlines()) == ["hello from block 0 thread 1 tag 42", "hello from block 1 thread 1 tag 42"]


def test_syncthreads_count_and_or(lib):
    out = np.zeros(3, np.int32)
    assert lib("count_test", out) is None
    assert list(out) == [16, 1, 1]


def test_partial_syncwarp_within_each_half(lib):
    out = np.zeros(32, np.int32)
    assert lib("half_exchange_launch", out) is None
    np.testing.assert_array_equal(out, (np.arange(32) ^ 1) * 3)


def test_runtime_calls_and_cache_hint_loads_stores(lib):
    import ctypes

    n = 200
    x = rand(n)
    y = np.full(n, np.nan, np.float32)
    info = np.zeros(6, np.int32)
    f = lib.dll.runtime_calls
    f.restype = ctypes.c_int
    assert f(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data), n, ctypes.c_void_p(info.ctypes.data)) == 0
    assert lib.error() is None
    np.testing.assert_allclose(y, 8 * x, rtol=1e-5)
    assert info[0] == 0 and info[1] == info[5] > 0 and info[2] >= 48 * 1024 and info[3] == 1024 and info[4] == 32


def test_warp_reductions(lib):
    x = np.random.default_rng(3).integers(-1000, 1000, 32).astype(np.int32)
    out = np.zeros(8 * 32, np.int32)
    assert lib("warp_reduce_launch", x, out) is None
    o, u = out.reshape(8, 32), x.view(np.uint32)
    assert (o[0] == x.sum()).all() and (o[1] == x.min()).all() and (o[2] == x.max()).all()
    assert (o[3].view(np.uint32) == np.bitwise_and.reduce(u)).all()
    assert (o[4].view(np.uint32) == np.bitwise_or.reduce(u)).all()
    assert (o[5].view(np.uint32) == np.bitwise_xor.reduce(u)).all()
    assert (o[6].view(np.uint32) == (int(u.astype(np.uint64).sum()) & 0xFFFFFFFF)).all()
    assert (o[7][:16] == x[:16].sum()).all() and (o[7][16:] == -1).all()


def test_cooperative_groups_block_and_tiles(lib):
    n = 1000
    x = rand(n)
    out = np.zeros(1, np.float32)
    ballots = np.zeros((n + 31) // 32 + 8, np.uint32)
    assert lib("cg_sum_launch", x, out, ballots, n) is None
    np.testing.assert_allclose(out[0], x.sum(dtype=np.float64), rtol=1e-4)
    bits = np.zeros(ballots.size * 32, bool)
    bits[:n] = x > 0
    want = (bits.reshape(-1, 32) * (1 << np.arange(32, dtype=np.uint64))).sum(1).astype(np.uint32)
    np.testing.assert_array_equal(ballots[: (n + 255) // 256 * 8], want[: (n + 255) // 256 * 8])


def test_volatile_shared_warp_reduction(lib):
    x = rand(64)
    out = np.zeros(1, np.float32)
    assert lib("volatile_sum_launch", x, out) is None
    np.testing.assert_allclose(out[0], x.sum(dtype=np.float64), rtol=1e-5)


def test_bit_intrinsics_funnel_shifts_and_brev(lib):
    n = 40
    rng = np.random.default_rng(3)
    lo = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    hi = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    shift = np.arange(n, dtype=np.uint32)  # 0..39: past 32 the two forms differ
    s_ = [int(s) for s in shift]
    hi[:6] = np.array([0.0, -0.0, 1e-45, 2.0, -3.0, np.nan], np.float32).view(np.uint32)
    out = np.zeros(6 * n, np.uint32)
    assert lib("bits_test", lo, hi, shift, out, n) is None
    o = out.reshape(6, n)
    both = [(int(h) << 32) | int(l) for l, h in zip(lo, hi)]
    mask = 2**32 - 1
    assert list(o[0]) == [((v << (s % 32)) >> 32) & mask for v, s in zip(both, s_)]
    assert list(o[1]) == [((v << min(s, 32)) >> 32) & mask for v, s in zip(both, s_)]
    assert list(o[2]) == [(v >> (s % 32)) & mask for v, s in zip(both, s_)]
    assert list(o[3]) == [(v >> min(s, 32)) & mask for v, s in zip(both, s_)]
    assert list(o[4]) == [int(f"{int(v):032b}"[::-1], 2) for v in lo]
    assert list(o[5][:6]) == [0, 0, 1, 1, 0, 0]  # +0, -0, the smallest denormal, 2, -3, NaN
