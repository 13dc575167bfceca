"""The CPU backend's access profile (grader/profile.py, grader/cpu/profile.cpp): what it counts,
how it samples, and the verdicts it gives on each rung's idea."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import profile

ROOT = Path(__file__).resolve().parent.parent
K = ROOT / "kernels"
SMALL = (64, 64, 64)


def _p(ex, file, shape=SMALL, **kw):
    kw.setdefault("resources", False)
    return profile.run(ex, K / file, shape, **kw)


def test_coalesced_loads_touch_fewer_sectors():
    good, bad = _p("naive", "01_naive.cu", blocks="all"), _p("naive", "01a_naive_uncoalesced.cu", blocks="all")
    assert bad.derived["sectors_per_request_ld"] > 3 * good.derived["sectors_per_request_ld"]
    # every element of C is stored once: 64*64 floats = 512 sectors when coalesced
    assert good.metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == 64 * 64 * 4 / 32
    assert good.derived["global_loads_per_fma"] == 2.0  # one float of A and one of B per multiply-add


def test_bank_conflicts_counted_like_ncu():
    """03_bank_conflicts reads a column of a 32x32 tile: 32 words in one bank (ncu on the H200 at
    2048^3: 272 load wavefronts and 224 conflicts per warp per tile step; see kernels/README.md)."""
    bad, good = _p("conflict_free", "03_bank_conflicts.cu"), _p("conflict_free", "03_conflict_free.cu")
    steps = (64 // 32) ** 2 * 32 * (64 // 32)  # blocks * warps * tile steps
    assert bad.metrics["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 272 * steps
    assert bad.metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 224 * steps
    assert good.metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 0
    assert good.metrics["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 48 * steps
    assert good.derived["wavefronts_per_shared_load"] == pytest.approx(1.2)


def test_sampling_scales_to_the_whole_grid():
    shape = (160, 128, 64)  # 02_tiled: 4 x 5 blocks, the last row of blocks half empty
    every = _p("tiled", "02_tiled.cu", shape, blocks="all")
    some = _p("tiled", "02_tiled.cu", shape, blocks="sample", budget=4, seed=3)
    assert every.sampled == "" and "of 20 blocks" in some.sampled and "edge" in some.sampled
    for name, value in every.metrics.items():
        assert some.metrics[name] == pytest.approx(value), name


def test_trace_groups_lanes_into_warp_instructions():
    p = _p("tiled", "02_tiled.cu", (32, 32, 32), blocks=[(0, 0, 0)], trace=True)
    loads_b = [a for a in p.trace if a.buffer == "B" and a.op == "ld"]
    assert len(loads_b) == 32  # one tile step: 32 warps, one load each
    a = loads_b[0]
    assert a.space == "global" and len(a.lanes) == 32 and a.line > 0 and a.kernel == "tiled_gemm_kernel"
    lane, tid, offset, size = a.lanes[5]
    assert lane == 5 and tid == (5, a.warp, 0) and size == 4 and offset == 4 * (32 * a.warp + 5)
    assert json.dumps(p.as_dict())  # JSON-able


def test_profile_command_json():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "profile",
            "naive",
            str(K / "01_naive.cu"),
            "--shape",
            "33",
            "17",
            "9",
            "--json",
            "--no-resources",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["shape"] == [33, 17, 9] and d["metrics"]["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"] > 0
    bad = subprocess.run(
        [sys.executable, "-m", "grader", "profile", "naive", str(K / "01_naive.cu"), "--shape", "3", "--no-resources"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 2 and "shape" in bad.stderr


# ---------------------------------------------------------------------------- verdicts
HAS_GPU = __import__("torch").cuda.is_available()
MISGRADED = [  # issue 14: each passed its wrong exercise on the CPU backend before access bounds
    ("tiled", "01_naive.cu", "bytes_per_flop"),
    ("register_blocked", "01_naive.cu", "bytes_per_flop"),
    ("naive", "01a_naive_uncoalesced.cu", "sectors_per_request_ld"),
    ("conflict_free", "03_bank_conflicts.cu", "bank_conflicts_per_shared_request"),
]


@pytest.mark.skipif(HAS_GPU, reason="the CPU backend's verdict (on a GPU the speed threshold decides)")
@pytest.mark.parametrize("exercise,file,figure", MISGRADED, ids=[f"{f}-for-{e}" for e, f, _ in MISGRADED])
def test_misgraded_kernels_fail_on_their_access_counts(exercise, file, figure):
    from grader import grade

    r = grade.grade(exercise, K / file, backend="cpu")
    assert r.correct and not r.passed, r.message
    assert figure in r.message and "the exercise needs at most" in r.message, r.message
    assert r.profile and r.profile["derived"][figure] > 0 and r.evidence == profile.EVIDENCE_NONE


SHIPPED = [
    ("naive", "01_naive.cu"),
    ("tiled", "02_tiled.cu"),
    ("conflict_free", "03_conflict_free.cu"),
    ("register_blocked", "04_register_blocked.cu"),
    ("register_blocked", "05_warptile_pipelined.cu"),
    ("relu_mask", "06_relu_mask.cu"),
    ("gemm_relu", "07_gemm_relu.cu"),
]


@pytest.mark.parametrize("exercise,file", SHIPPED, ids=[f for _, f in SHIPPED])
def test_shipped_solutions_meet_their_access_bounds(exercise, file):
    """(The notebooks' kernels are graded by tests/test_notebooks.py, bounds included.) Blocks sampled
    from a few seeds, as grading does."""
    for seed in (1, 2):
        p = profile.run(exercise, K / file, seed=seed, resources=False)
        assert profile.check_bounds(exercise, p) == [], (file, seed)


def test_gemm_relu_second_pass_over_c_fails():
    """The unfused alternative (GEMM, then a second kernel that reads C back and rewrites it)."""
    src = (K / "04_register_blocked.cu").read_text().replace('extern "C" void gemm(', "static void gemm_only(")
    src += """
__global__ void epilogue(const float* bias, float* C, uint32_t* mask, int M, int N) {
    int row = blockIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    float v = col < N ? C[(size_t)row * N + col] + bias[col] : 0.f;
    v = v > 0.f ? v : 0.f;
    unsigned bits = __ballot_sync(0xffffffffu, v > 0.f);
    if (col < N) C[(size_t)row * N + col] = v;
    if (threadIdx.x == 0) mask[(size_t)row * ((N + 31) / 32) + blockIdx.x] = bits;
}
extern "C" void gemm_relu(const float* A, const float* B, const float* bias, float* C, uint32_t* mask,
                          int M, int N, int K, cudaStream_t stream) {
    gemm_only(A, B, C, M, N, K, stream);
    epilogue<<<dim3((N + 31) / 32, M), 32, 0, stream>>>(bias, C, mask, M, N);
}
"""
    p = profile.run("gemm_relu", src, (64, 64, 32), resources=False)
    assert p.derived["C_writes_per_element"] == 2.0 and p.derived["C_reads_per_element"] == 1.0
    problems = profile.check_bounds("gemm_relu", p)
    assert any("C_writes_per_element" in m for m in problems) and any("second pass" in m for m in problems)


@pytest.mark.skipif(HAS_GPU, reason="needs a machine without a GPU")
def test_require_gpu_refuses_a_cpu_verdict():
    from grader import grade
    from grader.errors import CannotGrade

    with pytest.raises(CannotGrade, match="--require-gpu"):
        grade.grade("naive", K / "01_naive.cu", require_gpu=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run(
        [sys.executable, "-m", "grader", "check", "naive", str(K / "01_naive.cu"), "--require-gpu"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 2 and "--require-gpu" in r.stderr


@pytest.mark.skipif(HAS_GPU, reason="the CPU backend's evidence")
def test_gradebook_says_what_a_pass_rests_on(tmp_path):
    from grader import batch

    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.cu").write_text((K / "01_naive.cu").read_text())
    rows = batch.run_batch("naive", subs, tmp_path / "grades.csv", backend="cpu", progress=False)
    assert rows[0]["passed"] and rows[0]["evidence"] == profile.EVIDENCE_CPU
    assert "evidence" in (tmp_path / "grades.csv").read_text().splitlines()[0]


@pytest.mark.gpu
def test_gpu_verdict_is_timed_with_the_profile_beside():
    from grader import grade

    if not HAS_GPU:
        pytest.skip("needs a GPU")
    r = grade.grade("tiled", K / "02_tiled.cu", backend="cuda")
    assert r.passed and r.evidence == profile.EVIDENCE_GPU and r.speedup
    assert r.profile and r.profile["derived"]["bytes_per_flop"] < 0.5


def test_a_kernel_cannot_see_which_blocks_are_watched():
    """The backend's internals are linked into the submission's library: a kernel that declared
    cuda_emu::g_profile_block could be coalesced only in the recorded blocks. The scan refuses it."""
    from grader import forbidden, grade

    src = (K / "01a_naive_uncoalesced.cu").read_text()
    src = "namespace cuda_emu { extern bool g_profile_block; }\n" + src
    problems = forbidden.scan(src)
    assert problems and "internals" in forbidden.message(problems, "cheat.cu")
    r = grade.grade("naive", src, backend="cpu")
    assert not r.compiled and "forbidden" in r.message
