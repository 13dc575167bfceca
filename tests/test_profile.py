"""The CPU backend's access profile (grader/judge/profile.py, grader/compile/cpu/profile.cpp): what it counts,
how it samples, and the verdicts it gives on each rung's idea."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.judge import profile

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
    ("naive", "01a_naive_uncoalesced.cu", "sectors_over_ideal_ld"),
    ("conflict_free", "03_bank_conflicts.cu", "bank_conflicts_per_shared_request"),
    # issue 22: register_1d had no bound, so a naive and a plain tiled kernel passed it
    ("register_1d", "01_naive.cu", "bytes_per_flop"),
    ("register_1d", "02_tiled.cu", "shared_loads_per_fma"),
]


@pytest.mark.skipif(HAS_GPU, reason="the CPU backend's verdict (on a GPU the speed threshold decides)")
@pytest.mark.parametrize("exercise,file,figure", MISGRADED, ids=[f"{f}-for-{e}" for e, f, _ in MISGRADED])
def test_misgraded_kernels_fail_on_their_access_counts(exercise, file, figure):
    from grader.judge import grade

    r = grade.grade(exercise, K / file, backend="cpu")
    assert r.correct and not r.passed, r.message
    assert figure in r.message and "the exercise needs at most" in r.message, r.message
    # the verdict rests on the access counts, and says so (not "correctness only")
    assert r.profile and r.profile["derived"][figure] > 0 and r.evidence == profile.EVIDENCE_CPU


SHIPPED = [
    ("naive", "01_naive.cu"),
    ("tiled", "02_tiled.cu"),
    ("conflict_free", "03_conflict_free.cu"),
    ("register_blocked", "04_register_blocked.cu"),
    ("register_1d", "04a_register_1d.cu"),
    ("register_blocked", "05_warptile_pipelined.cu"),
    ("relu_mask", "06_relu_mask.cu"),
    ("gemm_relu", "07_gemm_relu.cu"),
]


@pytest.mark.parametrize("exercise,file", SHIPPED, ids=[f for _, f in SHIPPED])
def test_shipped_solutions_meet_their_access_bounds(exercise, file):
    """(The notebooks' kernels are graded by tests/test_notebooks.py, bounds included.) At the profile shapes
    of a few seeds, blocks sampled as grading does: the aligned shape at the bounds, the unaligned one with
    each bound's slack there."""
    from grader.spec import exercises, shapes

    for seed in (1, 2):
        for shape, odd in zip(shapes.profile_shapes(exercises.get(exercise).profile_shape, seed), (False, True)):
            p = profile.run(exercise, K / file, shape, seed=seed, resources=False)
            assert profile.check_bounds(exercise, p, unaligned=odd) == [], (file, shape)


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
    from grader.judge import grade
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
    from grader.classroom import batch

    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.cu").write_text((K / "01_naive.cu").read_text())
    rows = batch.run_batch("naive", subs, tmp_path / "grades.csv", backend="cpu", progress=False)
    assert rows[0]["passed"] and rows[0]["evidence"] == profile.EVIDENCE_CPU
    assert "evidence" in (tmp_path / "grades.csv").read_text().splitlines()[0]


@pytest.mark.gpu
def test_gpu_verdict_is_timed_with_the_profile_beside():
    from grader.judge import grade

    if not HAS_GPU:
        pytest.skip("needs a GPU")
    r = grade.grade("tiled", K / "02_tiled.cu", backend="cuda")
    assert r.passed and r.evidence == profile.EVIDENCE_GPU and r.speedup
    assert r.profile and r.profile["derived"]["bytes_per_flop"] < 0.5


def test_a_kernel_cannot_see_which_blocks_are_watched():
    """The backend's internals are linked into the submission's library: a kernel that declared
    cuda_emu::g_profile_block could be coalesced only in the recorded blocks. The scan refuses it."""
    from grader.compile import forbidden
    from grader.judge import grade

    src = (K / "01a_naive_uncoalesced.cu").read_text()
    src = "namespace cuda_emu { extern bool g_profile_block; }\n" + src
    problems = forbidden.scan(src)
    assert problems and "internals" in forbidden.message(problems, "cheat.cu")
    r = grade.grade("naive", src, backend="cpu")
    assert not r.compiled and "forbidden" in r.message


# ---------------------------------------------------------------------------- grouping and figures
RELU_ONE_SHUFFLE = r"""
#include <cuda_runtime.h>
#include <cstdint>
__global__ void fwd(const float* X, float* Y, uint32_t* mask, int M, int N, int W) {
    int row = blockIdx.y, word = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    int j = word * 32 + lane; bool in = word < W && j < N;
    float x = in ? X[(size_t)row * N + j] : 0.0f, y = x > 0.0f ? x : 0.0f;
    if (in) Y[(size_t)row * N + j] = y;
    uint32_t mine = (y > 0.0f) ? (1u << lane) : 0u;
    uint32_t d = __ballot_sync(0xffffffffu, y > 0.0f) | (__shfl_xor_sync(0xffffffffu, mine, 1) & 0);
    __shared__ uint32_t words[8];  // the block's 8 mask words, stored by 8 lanes: one sector
    if (lane == 0) words[threadIdx.x / 32] = d;
    __syncthreads();
    int w = blockIdx.x * 8 + threadIdx.x;
    if (threadIdx.x < 8 && w < W) mask[(size_t)row * W + w] = words[threadIdx.x];
}
__global__ void bwd(const uint32_t* mask, const float* dY, float* dX, int M, int N, int W) {
    int row = blockIdx.y, word = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    int j = word * 32 + lane;
    uint32_t w = 0; if (lane == 0 && word < W) w = mask[(size_t)row * W + word];
    w = __shfl_sync(0xffffffffu, w, 0);
    if (word < W && j < N) dX[(size_t)row * N + j] = (w >> lane) & 1u ? dY[(size_t)row * N + j] : 0.0f;
}
extern "C" void relu_forward(const float* X, float* Y, uint32_t* mask, int M, int N, cudaStream_t s) {
    int W = (N + 31) / 32; dim3 g((W + 7) / 8, M); fwd<<<g, 256, 0, s>>>(X, Y, mask, M, N, W);
}
extern "C" void relu_backward(const uint32_t* mask, const float* dY, float* dX, int M, int N, cudaStream_t s) {
    int W = (N + 31) / 32; dim3 g((W + 7) / 8, M); bwd<<<g, 256, 0, s>>>(mask, dY, dX, M, N, W);
}
"""


def test_a_store_that_gxx_duplicated_is_one_warp_instruction():
    """g++ threads the jump on y > 0 through the shuffle: Y's store is copied into both branches (a store of
    x, a store of 0, two code addresses at one line). Lanes that diverge there execute one source-level
    store, one instruction on the GPU: 512 requests at 64x256, not 1024 half-full ones (red team, h04)."""
    p = profile.run("relu_mask", RELU_ONE_SHUFFLE, (64, 256), blocks="all", resources=False)
    y = [r for r in p.per_line if r["buffer"] == "Y"]
    assert sum(r["requests"] for r in y) == 64 * 8 and sum(r["sectors"] for r in y) == 64 * 8 * 4
    assert p.derived["forward_bytes_written_per_element"] == pytest.approx(4.125)  # Y 4, the mask 1/8 (8.125 before)
    assert profile.check_bounds("relu_mask", p) == []


NAIVE_FLOAT4_B = r"""
#include <cuda_runtime.h>
__global__ void k(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c4 = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c4 * 4 < N) {
        float4 s = make_float4(0, 0, 0, 0);
        for (int k = 0; k < K; ++k) {
            float a = A[(size_t)r * K + k]; float4 b = reinterpret_cast<const float4*>(B + (size_t)k * N)[c4];
            s.x += a * b.x; s.y += a * b.y; s.z += a * b.z; s.w += a * b.w;
        }
        reinterpret_cast<float4*>(C + (size_t)r * N)[c4] = s;
    }
}
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    dim3 b(32, 8), g((N / 4 + 31) / 32, (M + 7) / 8);
    k<<<g, b, 0, st>>>(A, B, C, M, N, K);
}
"""


def test_naive_bound_judges_coalescing_not_width():
    """A coalesced float4 load of B touches 16 sectors per request, its ideal: the naive bound
    (sectors_over_ideal_ld) passes it, where the raw sectors per request (8.5 with A's broadcasts) is over
    4. g++ splits the float4 into 4 scalar loads at one line: counted as nvcc's one LDG.128."""
    p = profile.run("naive", NAIVE_FLOAT4_B, (64, 128, 32), blocks="all", resources=False)
    b = [r for r in p.per_line if r["buffer"] == "B"]
    assert sum(r["requests"] for r in b) == 64 * 32  # a warp's 32 float4 of a row of B: one request per k
    assert p.derived["sectors_per_request_ld"] > 4 and p.derived["sectors_over_ideal_ld"] == pytest.approx(1.0)
    assert profile.check_bounds("naive", p) == []
    good, bad = _p("naive", "01_naive.cu"), _p("naive", "01a_naive_uncoalesced.cu")
    assert good.derived["sectors_over_ideal_ld"] < 1.5 and bad.derived["sectors_over_ideal_ld"] > 5


def _site(launch, space, op, buffer, requests, units):
    return {
        "launch": launch, "site": 0, "pc": 0, "space": space, "op": op, "buffer": buffer, "requests": requests,
        "units": units, "ideal": units, "lanes": 32 * requests, "bytes": 128 * requests,
        "requests_as_written": requests, "units_as_written": units,
    }  # fmt: skip


def test_a_bound_without_data_fails():
    """A launcher that launches no kernel (the work done on the host) profiles empty: every figure is 0,
    and an upper bound on 0 would pass. A figure without data fails its bound instead."""
    empty = {"launches": [], "sites": []}
    for exercise, shape in (("naive", (64, 64, 64)), ("relu_mask", (64, 256)), ("gemm_relu", (64, 64, 64))):
        p = profile.from_raw(exercise, shape, empty)
        assert profile.check_bounds(exercise, p) == [profile.NO_GLOBAL_LOADS], exercise
    assert "did a kernel do the work?" in profile.NO_GLOBAL_LOADS
    # relu_mask: a forward kernel, but no backward one
    launch = {"kernel": "fwd", "grid": [1, 64, 1], "block": [256, 1, 1], "smem": 0, "blocks_total": 64}
    raw = {
        "launches": [launch | {"blocks_recorded": 64, "sample": ""}],
        "sites": [_site(0, "global", "ld", "X", 512, 2048), _site(0, "global", "st", "Y", 512, 2048)],
    }
    problems = profile.check_bounds("relu_mask", profile.from_raw("relu_mask", (64, 256), raw))
    assert len(problems) == 1 and "no global accesses by a relu_backward kernel" in problems[0], problems
    # conflict_free: global loads, but not one shared-memory access to judge bank conflicts by
    raw = {"launches": raw["launches"], "sites": [_site(0, "global", "ld", "A", 512, 2048)]}
    problems = profile.check_bounds("conflict_free", profile.from_raw("conflict_free", (64, 64, 64), raw))
    assert any("no shared-memory accesses" in m for m in problems), problems


SUBS = ROOT / "tests" / "submissions"


@pytest.mark.parametrize(
    "file,scratch", [("scratch_copy_naive.cu", "scratch"), ("scratch_device_array_naive.cu", "scratch (g_copy)")]
)
def test_device_memory_outside_the_buffers_is_global_traffic(file, scratch):
    """A copy of A and B in cudaMalloc'd or __device__ memory, read naively: the loads count under the scratch's
    name in every global figure (red team A), in sampled launches as in the cross-check over every block."""
    every = profile.run("tiled", SUBS / file, SMALL, blocks="all", trace=True, resources=False)
    naive = [r for r in every.per_line if r["kernel"].startswith("naive") and r["op"] == "ld"]
    assert {r["buffer"] for r in naive} == {scratch} and profile.is_scratch(scratch)
    assert every.derived["global_loads_per_fma"] > 2.0 and every.derived["bytes_per_flop"] > 1.0
    # trace offsets are within the scratch (several cudaMalloc blocks share the name)
    offs = [off for a in every.trace if a.buffer == scratch for _, _, off, _ in a.lanes]
    assert offs and 0 <= min(offs) and max(offs) < 2 * 64 * 64 * 4
    some = profile.run("tiled", SUBS / file, SMALL, blocks="sample", budget=4, seed=3, resources=False)
    assert some.sampled and some.unrepresentative == []
    assert some.derived["bytes_per_flop"] == pytest.approx(every.derived["bytes_per_flop"], rel=0.05)
    assert any("bytes_per_flop" in m for m in profile.check_bounds("tiled", some))


def test_relu_figures_sum_every_kernel_of_a_role():
    """A tiny second kernel of a role (one element, red team A) adds to the launcher's figures, not replaces them."""
    launch = {"grid": [1, 64, 1], "block": [256, 1, 1], "smem": 0, "blocks_total": 64, "blocks_recorded": 64}
    launches = [launch | {"kernel": k, "sample": ""} for k in ("fwd", "fwd_fix", "bwd", "bwd_fix")]
    sites = [  # 64 x 256 elements: 512 warp loads of 32 sectors (uncoalesced), then one of one sector
        _site(0, "global", "ld", "X", 512, 512 * 32),
        _site(0, "global", "st", "Y", 512, 512 * 32),
        _site(1, "global", "ld", "X", 1, 1),
        _site(1, "global", "st", "Y", 1, 1),
        _site(2, "global", "ld", "dY", 512, 512 * 32),
        _site(2, "global", "st", "dX", 512, 512 * 32),
        _site(3, "global", "ld", "mask", 1, 1),
        _site(3, "global", "st", "dX", 1, 1),
    ]
    p = profile.from_raw("relu_mask", (64, 256), {"launches": launches, "sites": sites})
    assert p.derived["forward_bytes_written_per_element"] == pytest.approx((512 * 32 + 1) * 32 / (64 * 256))
    assert p.derived["backward_bytes_read_per_element"] == pytest.approx((512 * 32 + 1) * 32 / (64 * 256))
    assert len(profile.check_bounds("relu_mask", p)) == 2


def test_managed_variables_are_refused():
    """A __managed__ array (no __device__) was neither a host variable nor registered device memory: a kernel
    could stage A and B there out of the profile's sight. Managed memory is refused, as cudaMallocManaged is."""
    from grader.compile.cpu.rewrite import UnsupportedConstruct, rewrite

    src = "#include <cuda_runtime.h>\n__managed__ float g_copy[1024];\n__global__ void k() { g_copy[0] = 1.0f; }\n"
    for decl in ("__managed__", "__device__ __managed__"):
        with pytest.raises(UnsupportedConstruct, match="line 2: .*managed"):
            rewrite(src.replace("__managed__", decl))
