"""The pipeline primitives of <cuda_pipeline.h> on the CPU backend: __pipeline_memcpy_async,
__pipeline_commit and __pipeline_wait_prior. A copy lands only when a wait covers its group (or
its thread exits), so the classic pipeline bugs (no wait, no barrier after the wait, a stage
refilled while in use or in flight) fail with a message naming the cause and the lines; wrong
arguments fail with the line; the APIs the backend cannot run are "could not grade", with the
primitives suggested."""

from __future__ import annotations

import ctypes
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

from cpu_helpers import Lib, build, line_of

SRC = (pathlib.Path(__file__).parent / "kernels_pipeline.cu").read_text()
ROOT = pathlib.Path(__file__).resolve().parents[2]
SUBS = ROOT / "tests" / "submissions"


@pytest.fixture(scope="module")
def lib():
    return Lib(build(SRC, "pipeline"))


def data(n):
    return np.arange(1, n + 1, dtype=np.float32)


def test_copies_land_with_their_sizes_and_zero_fill(lib):
    inp, out = data(512), np.full(512, np.nan, np.float32)
    assert lib("launch_copy_kinds", inp, out, 4) is None
    got, want = out.reshape(64, 8), inp.reshape(64, 8).copy()
    want[:, 3] = 0.0  # the 16-byte copy's last 4 bytes are zero-filled
    want[:, 7] = -1.0
    np.testing.assert_array_equal(got, want)
    assert lib("launch_copy_kinds", inp, out, 16) is None  # all 16 bytes zero-filled: nothing read
    assert (out.reshape(64, 8)[:, :4] == 0).all()


@pytest.mark.parametrize("prior,which", [(0, 0), (0, 2), (1, 0), (1, 1), (2, 0)])
def test_wait_prior_lands_every_group_but_the_newest_n(lib, prior, which):
    inp, out = data(128), np.full(32, np.nan, np.float32)
    assert lib("launch_groups", inp, out, prior, which) is None
    np.testing.assert_array_equal(out, inp[32 * which : 32 * which + 32])


@pytest.mark.parametrize("prior,which", [(1, 2), (2, 1), (9, 0), (0, 3)])
def test_a_read_before_the_wait_covers_its_group_fails_with_both_lines(lib, prior, which):
    """wait_prior(N) leaves the newest N committed groups in flight (N > 8 counts as 8, as in
    NVIDIA's header), and a copy issued after the last commit is in no group yet."""
    inp, out = data(128), np.zeros(32, np.float32)
    err = lib("launch_groups", inp, out, prior, which)
    assert err and "before its own asynchronous copy" in err and "__pipeline_wait_prior" in err, err
    copy = line_of(SRC, "COPY: uncommitted") if which == 3 else line_of(SRC, "COPY: group g")
    assert f"pipeline.cu:{line_of(SRC, 'READ: own copy')}" in err and f"line {copy})" in err, err
    assert re.search(r"reads s\[\d\]\[\d+\]", err), err
    if which == 3:
        assert "no group yet" in err


def test_no_barrier_between_the_wait_and_other_threads_reads_fails(lib):
    inp, out = data(64), np.zeros(64, np.float32)
    assert lib("launch_neighbour", inp, out, 1) is None
    np.testing.assert_array_equal(out, np.roll(inp, -1))
    for seed in (0, 1, 2):  # whatever the schedule: in flight, or landed unordered with the read
        lib.configure(seed, 1)
        err = lib("launch_neighbour", inp, out, 0)
        lib.configure(0, 1)
        assert err and "__syncthreads()" in err, err
        assert "still in flight" in err or "shared-memory race" in err, err
        assert f"pipeline.cu:{line_of(SRC, 'READ: neighbour')}" in err, err
        assert f"{line_of(SRC, 'COPY: neighbour')}" in err, err


def test_refilling_a_word_whose_copy_is_in_flight_fails(lib):
    err = lib("launch_refill_in_flight", data(128), np.zeros(64, np.float32))
    assert err and "still in flight" in err and "ring index" in err, err
    assert f"line {line_of(SRC, 'COPY: refill')}" in err


def test_refilling_a_stage_other_threads_read_since_the_barrier_fails(lib):
    """The copy may land as soon as it is issued: it races with the reads before it, too."""
    for seed in (0, 3):
        lib.configure(seed, 1)
        err = lib("launch_refill_while_read", data(128), np.zeros(64, np.float32))
        lib.configure(0, 1)
        assert err and ("shared-memory race" in err or "still in flight" in err), err
        assert f"pipeline.cu:{line_of(SRC, 'READ: stage')}" in err, err
        assert str(line_of(SRC, "COPY: too early")) in err, err


def test_copies_no_wait_covers_land_at_thread_exit_and_count_in_the_profile(lib):
    """A landed copy is its thread's global load and shared store (of its bytes) in the profile."""
    inp = data(64)
    dll = lib.dll
    dll.cuda_emu_profile_configure.argtypes = [ctypes.c_int, ctypes.c_ulonglong, ctypes.c_int, ctypes.c_int]
    dll.cuda_emu_profile_take.restype = ctypes.c_char_p
    dll.cuda_emu_profile_configure(2, 1, 8, 0)
    lib.buffers(inputs={"in": inp})
    try:
        assert lib("launch_never_waits", inp) is None
        text = dll.cuda_emu_profile_take().decode()
    finally:
        dll.cuda_emu_profile_configure(0, 1, 8, 0)
        lib.buffers()
    rows = [r.split("\t") for r in text.splitlines() if r.startswith("S\t")]
    by_kind = {(r[4], r[5]): r for r in rows}
    ld, st = by_kind[("global", "ld")], by_kind[("shared", "st")]
    assert ld[6] == "in" and float(ld[11]) == 2 * 64 * 4 and float(ld[7]) == 2 * 2  # 2 blocks x 2 warps
    assert float(st[11]) == 2 * 64 * 4 and float(st[7]) == 2 * 2
    a = inp.ctypes.data  # coalesced: a warp's 128 bytes touch 4 sectors, or 5 when not 32-byte aligned
    sectors = sum((a + 128 * w + 127) // 32 - (a + 128 * w) // 32 + 1 for w in (0, 1))
    assert float(ld[8]) == 2 * sectors


@pytest.mark.parametrize(
    "mode,marker,words",
    [
        (0, "BAD: size", r"size_and_align is 12; it must be 4, 8 or 16"),
        (1, "BAD: zfill", r"zfill is 8, more than size_and_align \(4\)"),
        (2, "BAD: global dst", r"is not in shared memory"),
        (3, "BAD: dst align", r"misaligned address: the shared destination s\[2\] .* 16 bytes"),
        (4, "BAD: src align", r"misaligned address: the global source .* 8 bytes"),
    ],
)
def test_wrong_arguments_fail_with_the_line(lib, mode, marker, words):
    err = lib("launch_bad_args", data(64), np.zeros(64, np.float32), mode)
    assert err and f"__pipeline_memcpy_async at line {line_of(SRC, marker)}:" in err, err
    assert re.search(words, err), err


def test_kernel_05_without_its_wait_fails_on_the_cpu_backend(tmp_path):
    """kernels/05's copy helpers call the primitives off sm_80+: the CPU backend runs the deferred
    copies there too, so its pipeline bugs show."""
    torch = pytest.importorskip("torch")
    from grader.run import binding
    from grader.run.binding import KernelError

    src = (ROOT / "kernels" / "05_warptile_pipelined.cu").read_text()
    wait = "waitAsyncGroups<STAGES - 2>();"
    # one wait before the first tile's fragments, one in the loop before the next tile's: each is needed
    starts = [i for i in range(len(src)) if src.startswith(wait, i)]
    assert len(starts) == 2
    variants = [("ok.cu", src)] + [
        (f"no_wait_{j}.cu", src[:i] + ";" + src[i + len(wait) :]) for j, i in enumerate(starts)
    ]
    for name, text in variants:
        (tmp_path / name).write_text(text)
        mod = binding.load(tmp_path / name, "register_blocked", backend="cpu")
        A, B = torch.randn(70, 90), torch.randn(90, 66)
        C = torch.full((70, 66), float("nan"))
        mod.launch.gemm(A, B, C)
        if name == "ok.cu":
            mod.check_error("gemm")
            torch.testing.assert_close(C.double(), A.double() @ B.double(), rtol=1e-4, atol=1e-4)
        else:
            with pytest.raises(KernelError, match=r"asynchronous copy into it .*(has landed|still in flight)"):
                mod.check_error("gemm")


# ---------------------------------------------------------------------------- what it refuses
@pytest.mark.parametrize(
    "code,what",
    [
        (
            "#include <cuda/pipeline>\n__global__ void k(float* a) {}\n",
            r"cuda::pipeline \(<cuda/pipeline>\)",
        ),
        (
            "__global__ void k(float* d, const float* s) {\n    cuda::memcpy_async(d, s, 4, pipe);\n}\n",
            r"asynchronous copies .*: memcpy_async is not supported",
        ),
        (
            "__global__ void k(float* d, const float* s) {\n"
            '    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\\n" :: "r"(0), "l"(s));\n}\n',
            r"inline PTX cp\.async \(asm\)",
        ),
        (
            "#include <cuda_pipeline.h>\n__global__ void k(__mbarrier_t* b) {\n    __pipeline_arrive_on(b);\n}\n",
            r"asynchronous copies .*: __pipeline_arrive_on is not supported",
        ),
    ],
)
def test_other_async_copy_apis_cannot_be_graded_and_the_primitives_are_suggested(tmp_path, code, what):
    from grader.compile.cpu import compile_library
    from grader.compile.cpu.build import NotOnCpu

    with pytest.raises(NotOnCpu) as e:
        compile_library(code, tmp_path / "k.so", filename="k.cu")
    msg = str(e.value)
    assert msg.startswith("could not grade on the CPU backend: k.cu:") and re.search(what, msg), msg
    assert "__pipeline_memcpy_async" in msg and "__pipeline_wait_prior" in msg, msg


def test_the_primitives_without_their_header_do_not_compile(tmp_path):
    """As with nvcc: a compile error at the line, not "could not grade"."""
    from grader.compile.cpu import compile_library
    from grader.errors import CompileError

    code = "__global__ void k() {\n    __pipeline_commit();\n}\n"
    with pytest.raises(CompileError, match=r"k\.cu:2:.*__pipeline_commit"):
        compile_library(code, tmp_path / "k.so", filename="k.cu")


@pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
def test_the_gpu_build_uses_nvidias_header_cp_async_on_sm_90(tmp_path):
    ptx = tmp_path / "k.ptx"
    proc = subprocess.run(
        ["nvcc", "-arch=sm_90", "-ptx", str(SUBS / "good_pipelined_3stage.cu"), "-o", str(ptx)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    text = ptx.read_text()
    assert "cp.async.ca.shared.global" in text and "cp.async.wait_group 1" in text
