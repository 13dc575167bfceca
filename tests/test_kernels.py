"""Reference kernels in kernels/: every file compiles for sm_75, sm_80 and sm_90 (nvcc, compile
only), and is correct on the GPU when one is present (float64 reference, NaN-poisoned outputs,
shapes that are multiples of no tile). Skipped, visibly, without nvcc or a GPU.

CPU backend: once `grader.run.binding.load(..., backend="cpu")` runs these files, the same
correctness checks run there too (test_cpu_backend_* below; skipped while it cannot build).
"""

from __future__ import annotations

from grader.spec import exercises
import shutil
import subprocess
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
FILES = sorted(p.name for p in KERNELS.glob("*.cu"))
ARCHS = ["sm_75", "sm_80", "sm_90"]
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)

# file -> exercise (whose launchers it defines)
EXERCISE = {
    "01_naive.cu": "naive",
    "01a_naive_uncoalesced.cu": "naive",
    "02_tiled.cu": "tiled",
    "03_bank_conflicts.cu": "conflict_free",
    "03_conflict_free.cu": "conflict_free",
    "04a_register_1d.cu": "register_blocked",
    "04_register_blocked.cu": "register_blocked",
    "06_relu_mask.cu": "relu_mask",
    "07_gemm_relu.cu": "gemm_relu",
    "07b_gemm_relu_warptile.cu": "gemm_relu",
    "07a_bias_relu_pass.cu": "bias_relu_pass",  # the separate pass gemm_relu is timed against
    "08_mlp_step.cu": "mlp_step",  # 07's gemm_relu and gemm with 06's relu_backward
    "00_machine.cu": None,  # notebook 00's probes (grader.course.machine): no exercise, no launcher contract
    "00_cpu_naive.cu": "cpu_blocked",
    "00_cpu_blocked.cu": "cpu_blocked",  # plain C++ (tests/test_host.py)
}


def exercise_of(name: str) -> str | None:
    return EXERCISE.get(name, "register_blocked")  # 05_* files are GEMMs with the `gemm` launcher


def test_every_kernel_file_is_known():
    assert {
        "01_naive.cu",
        "02_tiled.cu",
        "03_conflict_free.cu",
        "04_register_blocked.cu",
        "06_relu_mask.cu",
        "07_gemm_relu.cu",
    } <= set(FILES)
    assert any(f.startswith("05_") for f in FILES)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", FILES)
def test_compiles(name, arch, tmp_path):
    if not NVCC:
        pytest.skip("nvcc not found: compile checks skipped")

    src = tmp_path / name
    # The grader prepends the contract's declarations: a wrong launcher signature fails here.
    prelude = exercises.declarations(exercise_of(name)) if exercise_of(name) else ""
    src.write_text(prelude + f'#line 1 "{name}"\n' + (KERNELS / name).read_text())
    # Device code for each arch (-cubin: ptxas's report, for the spill check). The host pass does not depend on
    # the arch: test_builds_as_the_grader_builds runs it once (sm_90, nvcc -c and -shared), in a build that
    # tests/test_linkcheck.py then finds in the session's cache; a host exercise (plain C++) gets -c here.
    host = arch == ARCHS[-1] and exercises.is_host(exercise_of(name))
    out = ["-c", "-o", str(tmp_path / "k.o")] if host else ["-cubin", "-o", str(tmp_path / "k.cubin")]
    proc = subprocess.run(
        [NVCC, f"-arch={arch}", "-O3", "--std=c++17", "-Xptxas", "-v", *out, str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "warning" not in proc.stderr.lower().replace("ptxas info", ""), proc.stderr[-2000:]
    # Register blocking must not spill (lesson 04): no local-memory traffic on the tuned targets.
    # (On sm_75 the 128 x 256 tiles of 05/07, tuned for the H200, spill a few bytes in the
    # synchronous-copy path: correct, and not what the T4 is timed on.)
    for line in proc.stderr.splitlines() if arch != "sm_75" else []:
        if "spill" in line:
            assert " 0 bytes spill stores, 0 bytes spill loads" in line, f"{name} {arch}: {line}"


@pytest.mark.nvcc
@pytest.mark.parametrize("name", FILES)
def test_builds_as_the_grader_builds(name, monkeypatch):
    """nvcc -c (the host pass too) and -shared as the grader runs them for a GPU (sm_90), its call check included."""
    from grader.compile import toolchain

    if not NVCC:
        pytest.skip("nvcc not found: compile checks skipped")
    if exercises.is_host(exercise_of(name)):
        pytest.skip("a host exercise (plain C++): never built with nvcc")
    monkeypatch.setattr(toolchain, "gpu_arch", lambda: "sm_90")
    b = toolchain.build((KERNELS / name).read_text(), backend="cuda", exercise=exercise_of(name), filename=name)
    log = (b.path.parent / "build.log").read_text()
    assert "warning" not in log.lower(), log[-2000:]


def _gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU: GPU correctness skipped")
    return torch


SHAPES = [
    (1, 1, 1),
    (17, 33, 65),
    (127, 253, 61),
    (64, 128, 8),
    (129, 131, 257),
    (1000, 1000, 1000),
    (300, 4, 5),
    (5, 300, 4),
]


@pytest.mark.gpu
@pytest.mark.parametrize(
    "name", [f for f in FILES if exercise_of(f) in ("naive", "tiled", "conflict_free", "register_blocked")]
)
def test_gemm_correct_on_gpu(name):
    _gpu()
    from grader.course import bench

    mod = bench.load_kernel(name, exercise_of(name))
    for i, shape in enumerate(SHAPES):
        err = bench.check_gemm(mod, *shape, seed=100 + i)
        assert bench._ok(err), f"{name} {shape}: relative error {err}"


@pytest.mark.gpu
def test_relu_mask_correct_on_gpu():
    _gpu()
    from grader.course import bench

    mod = bench.load_kernel("06_relu_mask.cu", "relu_mask")
    for i, (m, n) in enumerate([(1, 1), (17, 33), (127, 253), (3, 64), (3, 256), (1000, 1000), (2, 4097), (7, 4096)]):
        assert bench.check_relu(mod, m, n, seed=i) == 0.0, (m, n)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["07_gemm_relu.cu", "07b_gemm_relu_warptile.cu"])
def test_gemm_relu_correct_on_gpu(name):
    _gpu()
    from grader.course import bench

    mod = bench.load_kernel(name, "gemm_relu")
    for i, shape in enumerate(SHAPES + [(4096, 4096, 256)]):  # the last: the big tile, interior and edge-free
        err = bench.check_gemm_relu(mod, *shape, seed=200 + i)
        assert bench._ok(err), f"{shape}: error {err} (nan = wrong values or wrong mask)"
        err = bench.check_gemm(mod, *shape, seed=300 + i)  # its `gemm`, the fusion's baseline
        assert bench._ok(err), f"gemm {shape}: relative error {err}"


# 07b is 05 with an epilogue: these parts of 05, from each start line to the line before its end,
# must appear in 07b character for character (07b once kept an old copy of 05's main loop and lost
# the fusion to 05 + a separate pass; kernels/README.md, "Does the fusion win?").
SHARED_WITH_05 = [
    ("#include <cuda_runtime.h>", "// MIN_BLOCKS:"),  # includes, copy helpers, constants, TileConfig
    ("    using Cfg = TileConfig", "    // Prologue: start the first"),
    ("    // Prologue: start the first", "    // Epilogue: registers -> C."),
    ("// The large configuration;", "template <bool VEC"),
]


def _between(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i + len(start))]


def test_07b_is_05_plus_the_epilogue():
    """Drift between 05 and 07b's copy of it fails here, with the first differing lines."""
    import difflib

    k05 = (KERNELS / "05_warptile_pipelined.cu").read_text()
    k07b = (KERNELS / "07b_gemm_relu_warptile.cu").read_text()
    assert "for (int tileIdx = 0; tileIdx < numTiles; ++tileIdx)" in _between(k05, *SHARED_WITH_05[2])
    for start, end in SHARED_WITH_05:
        part = _between(k05, start, end)
        if part not in k07b:
            theirs = _between(k07b, start, end) if start in k07b and end in k07b else ""
            diff = difflib.unified_diff(part.splitlines(), theirs.splitlines(), "05", "07b", lineterm="", n=1)
            pytest.fail(f"07b differs from 05 in the part from {start.strip()!r}:\n" + "\n".join(list(diff)[:30]))


# ---------------------------------------------------------------------------- CPU backend
def _cpu_module(name, extra_flags=()):
    torch = pytest.importorskip("torch")
    try:
        from grader.run import binding

        return torch, binding.load(KERNELS / name, exercise_of(name), backend="cpu", extra_flags=extra_flags)
    except Exception as e:  # backend absent or not yet able to build this file
        pytest.skip(
            f"CPU backend cannot run {name} yet: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        )


CPU_SHAPES = [(1, 1, 1), (17, 33, 65), (33, 70, 19), (127, 253, 61)]


@pytest.mark.parametrize(
    "name", [f for f in FILES if exercise_of(f) in ("naive", "tiled", "conflict_free", "register_blocked")]
)
def test_gemm_correct_on_cpu_backend(name):
    import torch

    from grader.run import binding

    # the CPU backend builds every reference GEMM: a build failure fails here, it is not a skip
    mod = binding.load(KERNELS / name, exercise_of(name), backend="cpu")
    g = torch.Generator().manual_seed(0)
    for m, n, k in CPU_SHAPES:
        assert _gemm_rel_err(torch, mod, m, n, k, g) < 1e-4, (name, m, n, k)


def _gemm_rel_err(torch, mod, m, n, k, g) -> float:
    """Relative error of the module's gemm against float64, output poisoned first."""
    A, B = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    C = torch.full((m, n), float("nan"))
    mod.launch.gemm(A, B, C)
    mod.check_error("gemm")
    ref = A.double() @ B.double()
    return ((C.double() - ref).norm() / ref.norm()).item()


def test_relu_mask_on_cpu_backend():
    torch, mod = _cpu_module("06_relu_mask.cu")
    from grader.spec.checks import pack_mask

    g = torch.Generator().manual_seed(1)
    for m, n in [(1, 1), (17, 33), (5, 64), (127, 253), (1000, 1000)]:
        X, dY = torch.randn(m, n, generator=g), torch.randn(m, n, generator=g)
        Y, dX = torch.full_like(X, float("nan")), torch.full_like(X, float("nan"))
        mask = torch.full((m, (n + 31) // 32), -1, dtype=torch.int32)
        mod.launch.relu_forward(X, Y, mask)
        mod.launch.relu_backward(mask, dY, dX)
        mod.check_error("relu")
        assert torch.equal(Y, torch.relu(X)) and torch.equal(mask, pack_mask(X > 0))
        assert torch.equal(dX, torch.where(X > 0, dY, torch.zeros_like(dY)))


# 05 and 07 pick their 128 x 256 tile only for large outputs; SMALL_TILE_THRESHOLD=0 forces it
# (and with it 07's staged epilogue) onto small shapes so the CPU backend can check that path too.
BIG_TILE = ("-DSMALL_TILE_THRESHOLD=0",)


def test_big_tile_gemm_on_cpu_backend(monkeypatch):
    monkeypatch.setenv("CUDA_EMU_MAX_DYN_SMEM", str(227 * 1024))  # the 97 KB tile needs more than a T4 has: an H200
    torch, mod = _cpu_module("05_warptile_pipelined.cu", BIG_TILE + ("-DPLAYING_AN_H200",))
    g = torch.Generator().manual_seed(3)
    for m, n, k in CPU_SHAPES + [(130, 260, 40)]:
        assert _gemm_rel_err(torch, mod, m, n, k, g) < 1e-4, (m, n, k)


@pytest.mark.parametrize("name", ["05_warptile_pipelined.cu", "07b_gemm_relu_warptile.cu"])
def test_big_tile_falls_back_when_the_gpu_has_less_shared_memory(name, monkeypatch):
    """On a T4 (64 KB per block) the 97 KB big tile is refused; the launcher must fall back to
    its 64x64 tile and still be right. The CPU backend plays that GPU (by default)."""
    monkeypatch.setenv("CUDA_EMU_MAX_DYN_SMEM", str(64 * 1024))
    # a build of its own: the launcher asks for the shared memory once per process (a static)
    torch, mod = _cpu_module(name, BIG_TILE + ("-DPLAYING_A_T4",))
    from grader.spec.checks import pack_mask

    g = torch.Generator().manual_seed(4)
    m, n, k = 130, 260, 40
    A, B, bias = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g), torch.randn(n, generator=g)
    C = torch.full((m, n), float("nan"))
    if name.startswith("05"):
        mod.launch.gemm(A, B, C)
        ref = A.double() @ B.double()
    else:
        mask = torch.full((m, (n + 31) // 32), -1, dtype=torch.int32)
        mod.launch.gemm_relu(A, B, bias, C, mask)
        ref = torch.relu(A.double() @ B.double() + bias.double())
        assert torch.equal(mask, pack_mask(C > 0))
    mod.check_error(name)  # no launch error: the refused configuration was not launched
    assert ((C.double() - ref).norm() / ref.norm()).item() < 1e-4


@pytest.mark.parametrize(
    "flags",
    [(), BIG_TILE, BIG_TILE + ("-DMASK_TRANSPOSE=0",), BIG_TILE + ("-DBIAS_MODE=2",), ("-DBIAS_MODE=0",)],
    ids=["default", "big_tile", "big_tile_mask_shuffles", "big_tile_bias_init", "bias_global"],
)
def test_gemm_relu_on_cpu_backend(flags, monkeypatch):
    """07b's epilogue variants (benchmarks/gpu_fusion.py): 130 x 260 has interior and edge blocks of the big tile."""
    if BIG_TILE[0] in flags:  # the 97 KB tile needs more shared memory than the emulated T4 has: play an H200
        monkeypatch.setenv("CUDA_EMU_MAX_DYN_SMEM", str(227 * 1024))
    torch, mod = _cpu_module("07b_gemm_relu_warptile.cu", flags)
    from grader.spec.checks import pack_mask

    g = torch.Generator().manual_seed(2)
    if flags == BIG_TILE:  # its `gemm` too: 05's store, the fusion's baseline
        assert _gemm_rel_err(torch, mod, 130, 260, 40, g) < 1e-4
    for m, n, k in CPU_SHAPES + ([(130, 260, 40)] if flags else []):
        A, B, bias = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g), torch.randn(n, generator=g)
        C = torch.full((m, n), float("nan"))
        mask = torch.full((m, (n + 31) // 32), -1, dtype=torch.int32)
        mod.launch.gemm_relu(A, B, bias, C, mask)
        mod.check_error("gemm_relu")
        ref = torch.relu(A.double() @ B.double() + bias.double())
        assert ((C.double() - ref).norm() / max(ref.norm().item(), 1e-30)).item() < 1e-4
        assert torch.equal(mask, pack_mask(C > 0))


@pytest.mark.nvcc
def test_the_standalone_relu_benchmark_builds(tmp_path):
    # benchmarks/relu_bandwidth.cu is a program of its own (its figures are in kernels/README.md): CI has
    # nvcc but no GPU, so it is only built here
    if not NVCC:
        pytest.skip("nvcc not found: compile checks skipped")
    src = KERNELS.parent / "benchmarks" / "relu_bandwidth.cu"
    proc = subprocess.run(
        [NVCC, "-arch=sm_90", "-O3", "-o", str(tmp_path / "relu_bw"), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "warning" not in proc.stderr.lower(), proc.stderr[-2000:]
