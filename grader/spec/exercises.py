"""The exercises: one spec each, in one place.

An exercise names the launchers its kernel file defines (grader.spec.contract), the
reference kernel in kernels/ that solves it, the shapes its correctness check
uses, and its speed threshold: the speed-up over a baseline kernel that a
submission must reach on a GPU, timed in the same process the same way.

Thresholds are calibrated at 80 % of the slower of the two solutions the course ships for
an exercise, its reference kernel in kernels/ and the kernel of its solution notebook, as
graded by this grader on an H200 (SHIPPED_SPEEDUP_H200, measured with
benchmarks/calibrate.py), so that both pass with margin. Other GPUs may need others:
run benchmarks/calibrate.py there, or override them with a JSON file (`--thresholds FILE`,
or $GRADER_THRESHOLDS) mapping exercise name to a number.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

from grader.spec import contract, kinds
from grader.errors import CannotGrade


def _kernels_dir() -> Path:
    """kernels/ of the checkout this package lives in, else the copy a wheel carries (setup.py)."""
    here = Path(__file__).resolve().parent.parent
    checkout = here.parent / "kernels"
    return checkout if (checkout / "01_naive.cu").is_file() else here / "_kernels"


KERNELS_DIR = _kernels_dir()

# (M, N, K). None of the odd ones is a multiple of any tile size; M != N != K.
GEMM_SHAPES = ((1, 1, 1), (17, 33, 65), (127, 253, 61), (64, 64, 64), (131, 9, 97), (200, 129, 300), (513, 257, 1000))
# for the CPU backend, which runs kernels ~1000x slower: still M > 128 and K > 80 (131x9x97 is cheap)
GEMM_SHAPES_SMALL = GEMM_SHAPES[:5]
RELU_SHAPES = ((1, 1), (3, 31), (17, 33), (64, 96), (127, 1000), (1000, 1031))
RELU_SHAPES_SMALL = RELU_SHAPES[:5]


# Speed-up over the exercise's baseline of each solution the course ships, on the H200: medians of
# three grades each by `python benchmarks/calibrate.py` (every exercise on 2026-12-02, session 8, with
# grader.run.timing's clean flush, rotated rounds and head start, and the worker warmed up while nvcc runs;
# log in kernels/results/h200_calibration.txt). warptile's baseline is cuBLAS itself: its speed-ups are
# fractions of cuBLAS's speed (re-graded on 2026-12-02 in session 10 after 05's sweep 5, which timed it at
# 95.7 % of cuBLAS in one round-robin; session 9's grades, 0.938, came from a start of the machine on which
# 05 ran 1.8 % slower: benchmarks/warptile_timing_gap.py found no difference between the grader's timing
# and the sweep's).
SHIPPED_SPEEDUP_H200 = {
    "naive": {"01_naive.cu": 5.655, "02_first_kernel.ipynb": 5.653},
    "tiled": {"02_tiled.cu": 1.608, "03_tiling.ipynb": 1.609},
    "conflict_free": {"03_conflict_free.cu": 5.048, "04_bank_conflicts.ipynb": 5.048},
    "register_blocked": {"04_register_blocked.cu": 3.852, "05_register_blocking.ipynb": 3.867},
    "register_1d": {"04a_register_1d.cu": 2.146, "05_register_blocking.ipynb": 2.146},
    "relu_mask": {"06_relu_mask.cu": 1.199, "06_relu_mask.ipynb": 1.186},
    "gemm_relu": {"07_gemm_relu.cu": 1.198, "07_fused_epilogue.ipynb": 1.112},
    "warptile": {"05_warptile_pipelined.cu": 0.955, "09_beyond.ipynb": 0.890},
}
CALIBRATION = 0.8
# PROVISIONAL: an exercise no H200 grade has calibrated yet gets {label: speed-up} here from another H200
# figure (e.g. its reference's share of cuBLAS in `python -m grader bench`), and CALIBRATION x that as its
# threshold, until `python benchmarks/calibrate.py --exercises NAME` on an H200 grades its shipped solutions
# and their medians move into SHIPPED_SPEEDUP_H200 (grader.judge.calibration then finds the reference and the
# solution notebooks on other GPUs). None at present: warptile's 0.74 from 05's bench figure (92.2 %) was
# replaced by its grades on 2026-12-01.
PROVISIONAL_SPEEDUP_H200: dict[str, dict[str, float]] = {}
# cpu_blocked is timed on the CPU (grader.run.host), against the naive C++ loop: medians of three grades
# each on this course's 2-core CI machine (an Intel Xeon shared with other jobs, 2026-12-01; ranges
# 5.57-8.02x and 6.84-8.87x; log in kernels/results/cpu_blocked_calibration.txt, by
# `python benchmarks/calibrate.py --exercises cpu_blocked`). The ratio depends on the CPU's caches and
# vector units much more than a GPU kernel's does on its GPU: use --thresholds to set another.
SHIPPED_SPEEDUP_CPU = {"cpu_blocked": {"00_cpu_blocked.cu": 6.048, "01_triple_loop.ipynb": 8.813}}
# gemm_relu is timed against its own GEMM + a separate pass (a ratio near 1 + pass / GEMM): its bar
# is that the fusion wins, by more than the timing's spread, not a share of a shipped speed-up.
FUSION_THRESHOLD = 1.03
# relu_mask is timed against PyTorch's pair, and passing means beating it. The shipped solutions run
# at 1.18-1.20x (2026-12-02). Until then the grader measured them level with PyTorch (0.98-1.04x): its
# flush left the L2 full of dirty lines for the timed call, and its events timed the Python launcher's
# overhead (grader.run.timing: the clean flush and the head start; kernels/README.md, "The ReLU pair").
RELU_THRESHOLD = 1.0
# Bars that mean something in themselves (beat PyTorch's pair; the fusion won), kept on every GPU where
# the shipped solutions clear them, instead of 80 % of their speed-up (grader.judge.calibration.measure).
FIXED_BARS = {"relu_mask": RELU_THRESHOLD, "gemm_relu": FUSION_THRESHOLD}


def _threshold(name: str) -> float:
    shipped = SHIPPED_SPEEDUP_CPU.get(name) or SHIPPED_SPEEDUP_H200.get(name) or PROVISIONAL_SPEEDUP_H200[name]
    return round(CALIBRATION * min(shipped.values()), 2)


@dataclass(frozen=True)
class AccessBound:
    """An access property an exercise's lesson is about, checked on the CPU backend's profile
    (grader/judge/profile.py): `figure` (a key of Profile.derived) must be <= most / >= least.
    `says` describes the counted figure ({value} is filled in); `fix` says what to change.
    `unaligned`: the factor on `most` at the profile's unaligned shape (grader.spec.shapes.profile_shapes:
    partial tiles and scalar loads raise the shipped solutions' figures there); None: judged at the
    aligned shape only."""

    figure: str
    most: float | None = None
    least: float | None = None
    says: str = ""
    fix: str = ""
    # 1.5: the shipped GEMMs at the unaligned shapes reach 1.2 x their bounds (04 and 05 as register_blocked:
    # 0.30 B/FLOP at 509x113x125, where A's loads are scalar); a naive fallback moves 2+ B/FLOP
    unaligned: float | None = 1.5

    def at_unaligned(self) -> AccessBound:
        """This bound as judged at the unaligned profile shape."""
        return replace(self, most=None if self.most is None else self.most * self.unaligned)


@dataclass(frozen=True)
class Exercise:
    name: str
    summary: str
    reference: str  # file in kernels/
    baseline: str | None  # file in kernels/ to time against, or "cublas"
    threshold: float | None  # speed-up over the baseline needed on a GPU (None: not timed)
    shapes: tuple[tuple[int, ...], ...]
    cpu_shapes: tuple[tuple[int, ...], ...]
    bench_shape: tuple[int, ...]
    kind: kinds.Kind  # what the family does (grader.spec.kinds): launchers, inputs, references, hints, timing
    baseline_exercise: str | None = None  # whose launchers the baseline file defines (default: this one)
    baseline_epilogue: str | None = None  # "own_gemm_then_pass": the submission's `gemm`, then the baseline file
    slow_hint: str = ""  # what to look at when a correct kernel is too slow
    profile_shape: tuple[int, ...] = (256, 256, 256)  # the CPU backend's access profile runs here
    access: tuple[AccessBound, ...] = ()  # checked on the CPU backend (no timing there)
    # the drawn shape with M > 65535 (grader.spec.shapes) on the CPU backend too; warptile's 128-row tiles make it
    # dear there (05 at 70000 x 3 x 3: 10.8 s a call through grader.load, 2026-12-03), and no 128-row tile
    # can pass gridDim.y's limit
    cpu_long_rows: bool = True
    # grader.course.widgets: a small shape whose trace of every block is cheap (with edge blocks), and the
    # profile figures the lesson is about (the first that exist are shown)
    trace_shape: tuple[int, ...] | None = None
    lesson: tuple[str, ...] = ()
    # grader.course.lab: the learner's kernel cells this exercise's notebook starts from, ((notebook, exercise), ...)
    builds_on: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        if self.baseline_exercise is None:
            object.__setattr__(self, "baseline_exercise", self.name)

    @property
    def launchers(self) -> tuple[contract.Launcher, ...]:
        return self.kind.launchers

    @property
    def reference_path(self) -> Path:
        return KERNELS_DIR / self.reference

    @property
    def baseline_path(self) -> Path | None:
        return None if self.baseline in (None, "cublas", "torch") else KERNELS_DIR / self.baseline


# The access property each lesson is about, checked on the CPU backend at the profile shape
# (grader/judge/profile.py; figures of the shipped solutions at 256^3 / 1024^2 in the comments, measured
# with `python -m grader profile`; kernels/README.md has the table and the check against ncu).
_REUSE = AccessBound(
    "bytes_per_flop",
    most=0.5,
    says="the kernel moves {value:.2f} bytes between global memory and the SMs per FLOP (every element of A and "
    "B is read from global memory once per thread that uses it: 32 times per tile of 32)",
    fix="load a tile of A and of B into shared memory once per step of K (__syncthreads() after the loads and "
    "after the use) and let every thread of the block read them from there",
)  # 02: 0.133, 01: 2.0


def _operands(most: float, unaligned: float, fix: str) -> AccessBound:
    """Floats loaded per FMA from global and shared memory together: a bound on shared loads alone passes a kernel
    that reads one operand straight from global memory (warp broadcasts of A, one output per thread)."""
    return AccessBound(
        "operand_loads_per_fma",
        most=most,
        says="each multiply-add loads {value:.2f} floats from memory ({global_loads_per_fma:.2f} from global, "
        "{shared_loads_per_fma:.2f} from shared memory): an operand read from memory for every FMA is not held "
        "in a register",
        fix=fix,
        unaligned=unaligned,
    )


# 04: 0.27, 05: 0.28 (unaligned: up to 0.30, 0.31); 4 x 4 per thread: 0.53 (0.63), 0.625 with 16 x 16 block
# tiles; 2 x 1 per thread with A from global memory: 0.5 shared + 1 global
_TILE_OPERANDS = _operands(
    0.75,
    1.5,
    "load TM floats of A and TN of B into registers per step of k (from shared memory) and use each of them TN "
    "(TM) times; a value read from global memory for each FMA is no reuse",
)
ACCESS_BOUNDS = {
    "naive": (
        # coalescing, not width: sectors over ceil(distinct bytes asked for / 32) per instruction (a float4
        # load's 16 sectors are ideal; sectors_per_request_ld, the raw figure, is 16 there)
        AccessBound(
            "sectors_over_ideal_ld",
            most=3.0,
            says="a warp's global loads touch {value:.1f} times the 32-byte sectors that the bytes they ask for "
            "need (32 lanes reading consecutive floats, or float4s, touch just those; lanes walking down a column "
            "touch a sector each, 8 times too many)",
            fix="put the column of C on threadIdx.x (col = blockIdx.x * blockDim.x + threadIdx.x), so that the 32 "
            "lanes of a warp read consecutive floats of B and write consecutive floats of C",
        ),
    ),  # 01: 1.33 (notebook 02: 1.33; B as float4, 32 x 8 threads: 1.0), 01a: 8.0 (sectors_per_request_ld 8.5; one-sector loads are left out)
    "tiled": (_REUSE,),
    "conflict_free": (
        AccessBound(
            "bank_conflicts_per_shared_request",
            most=0.25,
            says="shared-memory accesses cost {value:.1f} extra wavefronts per request (bank conflicts: lanes of a warp "
            "reading different words of the same bank are served one after another)",
            fix="pad each row of the shared tile by one float (or swizzle the column) so that the 32 lanes of a warp "
            "hit 32 different banks, in the loads and in the stores",
        ),
        _REUSE,
    ),  # 03: 0 / 14.2
    "register_blocked": (
        AccessBound(
            "shared_loads_per_fma",
            most=0.5,
            says="each multiply-add loads {value:.2f} floats from shared memory",
            fix="keep a TM x TN tile of C in registers (e.g. 8 x 8): per step of k load TM floats of A and TN of B "
            "into registers once and use each of them TN (TM) times in an outer product",
        ),  # 04, 05: 0.25; 02: 2.0
        AccessBound("bytes_per_flop", most=0.25, says=_REUSE.says, fix=_REUSE.fix),
        _TILE_OPERANDS,
    ),  # 04: 0.047, 05: 0.070
    # between a column of TM outputs per thread (1 + 1/TM floats per FMA: 1.125 at TM = 8) and plain
    # tiling (2: a float of A and of B per FMA); the reuse bound keeps an untiled kernel (0 shared loads) out
    "register_1d": (
        AccessBound(
            "shared_loads_per_fma",
            most=1.5,
            says="each multiply-add loads {value:.2f} floats from shared memory (plain tiling loads 2: one of A, one of B)",
            fix="keep TM = 8 running sums per thread in registers: per step of k load Bs[k][col] into a register "
            "once and use it for all TM multiply-adds (one B load per TM FMAs)",
            unaligned=1.2,  # 04a at the unaligned shapes: up to 1.33 (plain tiling: 2.0 and more)
        ),
        _REUSE,
        # 04a: 1.16 (unaligned: up to 1.30); A from global memory as broadcasts, one output per thread: 2.03 (2.14)
        _operands(
            1.5,
            1.2,
            "keep TM = 8 running sums per thread: per step of k load Bs[k][col] once and a column of TM values of A "
            "(from shared memory into registers), then TM multiply-adds; reading A from global memory for every "
            "FMA loads as many floats as plain tiling",
        ),
    ),  # 04a, notebook 05: 1.125 / 0.070; 02: 2.0 / 0.133; 01: 0 / 2.0
    "warptile": (
        AccessBound(
            "bank_conflicts_per_shared_request",
            most=0.25,
            says="shared-memory accesses cost {value:.2f} extra wavefronts per request (bank conflicts: the lanes of "
            "a warp reading their B fragments as float4 from addresses 32 or more bytes apart, as an 8 x 8 tile "
            "per thread does, need more wavefronts than the bytes they read)",
            fix="lay the 32 lanes of a warp out as a 4 x 8 grid inside the warp's tile and give each thread 4 x 4 "
            "sub-tiles that sit a lane grid apart: then the 8 lanes of a row read 8 consecutive float4 of B "
            "(128 contiguous bytes, one wavefront) and the lanes of a column share one float4 of A (a broadcast)",
            unaligned=None,  # the float4 fragments need K % 4 == 0: 05's scalar path at odd K has 0.5
        ),  # 05: 0, notebook 09: 0; 04 (8 x 8 per thread, no warp tile): 1.84
        AccessBound(
            "shared_loads_per_fma",
            most=0.5,
            says="each multiply-add loads {value:.2f} floats from shared memory",
            fix="keep each thread's 8 x 8 (or 8 x 16) outputs in registers and, per step of k, load its fragments of "
            "A and B into registers once, then add their outer product",
        ),  # 05: 0.25, notebook 09: 0.25
        AccessBound("bytes_per_flop", most=0.25, says=_REUSE.says, fix=_REUSE.fix),  # 05: 0.070, notebook 09: 0.070
        _TILE_OPERANDS,
    ),
    "relu_mask": (
        AccessBound(
            "backward_bytes_read_per_element",
            most=6.0,
            says="relu_backward moves {value:.2f} bytes from global memory per element (dY is 4; the mask 1 bit)",
            fix="read dY coalesced (consecutive lanes, consecutive floats) and one 32-bit mask word per 32 "
            "elements, not a value per element",
            unaligned=1.25,  # 06 at odd N: up to 6.05 (misaligned rows: a sector more per row and buffer)
        ),  # 06: 4.25, notebook 06: 4.25
        AccessBound(
            "forward_bytes_written_per_element",
            most=6.0,
            says="relu_forward moves {value:.2f} bytes to global memory per element (Y is 4; the mask 1 bit)",
            fix="write Y coalesced and one mask word per 32 elements (from __ballot_sync), by one lane",
            unaligned=1.25,
        ),
    ),  # 06: 4.25, notebook 06: 4.25 (Y 4, the mask 1/4)
    "gemm_relu": (
        AccessBound(
            "C_writes_per_element",
            most=1.25,
            says="each element of C is written {value:.2f} times (of them {scratch_writes_per_element:.2f} into device "
            "memory the launcher allocated, cudaMalloc'd or __device__ scratch: an intermediate of C's size that a "
            "second pass reads back is not fused)",
            fix="apply bias, ReLU and the mask in the GEMM's epilogue, on the values in registers, and store C once "
            "(no intermediate in scratch memory)",
            unaligned=1.25,  # 07 at the unaligned shapes: 0.8 and 0, as at aligned ones
        ),
        AccessBound(
            "C_reads_per_element",
            most=0.25,
            says="C is read back {value:.2f} times per element (a second pass over C; of them "
            "{scratch_reads_per_element:.2f} from scratch device memory, cudaMalloc'd or __device__)",
            fix="do not read C after storing it: compute bias + ReLU and the mask bits before the one store",
            unaligned=1.25,
        ),
    ),  # 07: 1, 0
}

EXERCISES: dict[str, Exercise] = {
    e.name: e
    for e in (
        Exercise(
            "naive",
            "one thread per element of C; the seed's first CUDA kernel",
            "01_naive.cu",
            "01a_naive_uncoalesced.cu",
            _threshold("naive"),
            GEMM_SHAPES,
            GEMM_SHAPES_SMALL,
            (2048, 2048, 2048),
            kind=kinds.GEMM,
            slow_hint="Take the column of C from threadIdx.x, so that the 32 lanes of a warp read consecutive "
            "floats of B and write consecutive floats of C (coalesced; notebook 02, hint 1).",
        ),
        Exercise(
            "tiled",
            "shared-memory tiles: each element of A and B is read from DRAM once per tile",
            "02_tiled.cu",
            "01_naive.cu",
            _threshold("tiled"),
            GEMM_SHAPES,
            GEMM_SHAPES_SMALL,
            (4096, 4096, 4096),
            kind=kinds.GEMM,
            slow_hint="Copy a T x T tile of A and of B into shared memory once per step of K (T = 32), then let"
            " every thread do T multiply-adds from shared memory (notebook 03, hints 1 and 3).",
        ),
        Exercise(
            "conflict_free",
            "a shared-memory layout without bank conflicts (padding or swizzle)",
            "03_conflict_free.cu",
            "03_bank_conflicts.cu",
            _threshold("conflict_free"),
            GEMM_SHAPES,
            GEMM_SHAPES_SMALL,
            (4096, 4096, 4096),
            kind=kinds.GEMM,
            slow_hint="Lanes that read different words of one shared-memory bank are served one after another: "
            "pad each row of the tile by one float or swizzle the column (notebook 04, "
            "conflict_degree; the hints of step 1).",
        ),
        Exercise(
            "register_blocked",
            "each thread computes a TM x TN tile of C from registers, float4 loads",
            "04_register_blocked.cu",
            "02_tiled.cu",
            _threshold("register_blocked"),
            GEMM_SHAPES,
            GEMM_SHAPES_SMALL,
            (4096, 4096, 4096),
            kind=kinds.GEMM,
            slow_hint="Give each thread an 8 x 8 tile of C in registers: per step of k, load TM values of A and"
            " TN of B into registers (float4, A stored transposed) and add their outer product "
            "(notebook 05, hints 1-3).",
        ),
        # baseline "cublas": the speed-up is cuBLAS's time / the kernel's (FP32, TF32 off), the kernel's speed
        # as a fraction of cuBLAS's. The CPU backend cannot tell a pipelined kernel from a plain one by its
        # counts; it checks the pipeline's correctness (a missing wait or barrier fails) and the warp tile's
        # conflict-free fragment reads (ACCESS_BOUNDS).
        Exercise(
            "warptile",
            "warp tiling and a multi-stage cp.async pipeline",
            "05_warptile_pipelined.cu",
            "cublas",
            _threshold("warptile"),
            GEMM_SHAPES,
            GEMM_SHAPES_SMALL,
            (4096, 4096, 4096),
            kind=kinds.GEMM,
            cpu_long_rows=False,
            slow_hint="Arrange each warp's lanes as 4 x 8 over a 32 x 128 warp tile with 8 x 16 outputs per thread "
            "(2 x 4 sub-tiles of 4 x 4), and keep the next K-tile's copies in flight while this one is "
            "multiplied: __pipeline_memcpy_async into the next ring slot, one commit group per tile, "
            "__pipeline_wait_prior(STAGES - 2) then one __syncthreads per tile (notebook 09, hints 1-3).",
        ),
        # plain C++ on the CPU (kinds.HOST_GEMM): correctness on the CPU backend, speed timed on the CPU
        # (grader.run.host) against the naive triple loop, on any machine
        Exercise(
            "cpu_blocked",
            "a cache-blocked GEMM in plain C++ on the CPU, against the naive triple loop",
            "00_cpu_blocked.cu",
            "00_cpu_naive.cu",
            _threshold("cpu_blocked"),
            GEMM_SHAPES[:6],
            GEMM_SHAPES[:6],
            (384, 512, 640),
            kind=kinds.HOST_GEMM,
            slow_hint="Make the innermost loop walk along a row of B and of C (loop order i-k-j), then cut C "
            "into blocks and K into slices so that a panel of B stays in the cache while a block "
            "of rows uses it (notebook 01, hints 1-3).",
        ),
        Exercise(
            "register_1d",
            "each thread computes a column of TM outputs: one shared load reused TM times",
            "04a_register_1d.cu",
            "02_tiled.cu",
            _threshold("register_1d"),
            GEMM_SHAPES,
            GEMM_SHAPES_SMALL,
            (4096, 4096, 4096),
            kind=kinds.GEMM,
            slow_hint="Keep TM = 8 running sums per thread in registers; per step of k, load Bs[k][threadCol] into "
            "a register once and use it for all TM multiply-adds (notebook 05, exercise 1, hints 1-3).",
        ),
        # baseline: torch's pair, relu(X) then threshold_backward(dY, Y, 0) (Y kept instead of a mask)
        Exercise(
            "relu_mask",
            "ReLU forward writes a 1-bit mask with __ballot_sync; backward reads the mask",
            "06_relu_mask.cu",
            "torch",
            RELU_THRESHOLD,
            RELU_SHAPES,
            RELU_SHAPES_SMALL,
            (8192, 8192),
            kind=kinds.RELU_PAIR,
            slow_hint="A memory-bound kernel needs bytes in flight and few instructions per byte: issue several "
            "independent float4 loads per thread before using any, build each mask word from 8 lanes' "
            "nibbles with 3 shuffles, and keep divisions out of the per-element path (notebook 06, hint 3).",
            profile_shape=(1024, 1024),
        ),
        # baseline: the submission's own `gemm` (the same GEMM without the epilogue) followed by a separate
        # bias + ReLU + mask pass (07a): a pass means the fusion won. At K = 256 the pass costs about a
        # tenth of the GEMM (benchmarks/gpu_capstone.py), so there is something to win.
        Exercise(
            "gemm_relu",
            "GEMM with bias + ReLU + mask fused into its epilogue",
            "07_gemm_relu.cu",
            "07a_bias_relu_pass.cu",
            FUSION_THRESHOLD,
            GEMM_SHAPES,
            GEMM_SHAPES_SMALL,
            (4096, 4096, 256),
            kind=kinds.FUSED_EPILOGUE,
            baseline_exercise="bias_relu_pass",
            baseline_epilogue="own_gemm_then_pass",
            slow_hint="The fused kernel must beat your own `gemm` followed by a separate pass over C: keep the "
            "epilogue in registers (bias loaded once per thread, the mask word built with shuffles or "
            "ballots, no second read of C) and the main loop exactly your gemm's (notebook 07, hints 1-3).",
        ),
        # correctness only (no threshold, no baseline): each launcher on its own, then one training step of a
        # small MLP through grader/spec/mlp.py's layers on the file's launchers, against float64 autograd.
        # Notebook 08 measures the step's time against nn.Linear + nn.ReLU; nothing here times it.
        Exercise(
            "mlp_step",
            "a training step's launchers: gemm_relu forward, relu_backward on its mask, gemm for the "
            "rest; one MLP step against float64 autograd (correctness only)",
            "08_mlp_step.cu",
            None,
            None,
            GEMM_SHAPES,
            GEMM_SHAPES_SMALL,
            (4096, 2048, 2048),
            kind=kinds.TRAINING_STEP,
        ),
    )
}
# grader.course.widgets' small shapes (M, N, K) or (M, N) that still have edge blocks, so a trace of every block is cheap
TRACE_SHAPES = {
    "naive": (40, 36, 24),
    "tiled": (48, 40, 64),
    "conflict_free": (48, 40, 64),
    "register_blocked": (136, 132, 16),
    "warptile": (136, 132, 32),  # 64 x 64 tiles (the small configuration): 3 x 3 blocks, 4 K-tiles through 3 slots
    "gemm_relu": (136, 132, 16),
    "relu_mask": (3, 200),
}
# the profile figures (grader.judge.profile's derived names) each lesson is about: grader.course.widgets.compare
# shows the first that exist
LESSONS = {
    "naive": ("sectors_per_request_ld", "sectors_over_ideal_ld", "global_loads_per_fma", "bytes_per_flop"),
    "tiled": ("bytes_per_flop", "global_loads_per_fma", "shared_loads_per_fma"),
    "conflict_free": ("wavefronts_per_shared_request", "bank_conflicts_per_shared_request", "bytes_per_flop"),
    "register_blocked": ("shared_loads_per_fma", "wavefronts_per_shared_request", "bytes_per_flop"),
    "warptile": (
        "wavefronts_per_shared_load",
        "bank_conflicts_per_shared_request",
        "shared_loads_per_fma",
        "bytes_per_flop",
    ),
    "relu_mask": (
        "forward_bytes_read_per_element",
        "forward_bytes_written_per_element",
        "backward_bytes_read_per_element",
        "backward_bytes_written_per_element",
    ),
    "gemm_relu": ("bytes_per_flop", "C_writes_per_element", "C_bytes_per_element", "mask_bytes_per_element"),
}
# grader.course.lab: the learner's kernel cells ((notebook, exercise), ...) an exercise's notebook starts from
# (07: notebook 05's GEMM when it passes) or joins into its kernel file (08: 07's and 06's)
BUILDS_ON = {
    "gemm_relu": (("05_register_blocking.ipynb", "register_blocked"),),
    "mlp_step": (("07_fused_epilogue.ipynb", "gemm_relu"), ("06_relu_mask.ipynb", "relu_mask")),
}
EXERCISES = {
    name: replace(
        e,
        access=ACCESS_BOUNDS.get(name, ()),
        trace_shape=TRACE_SHAPES.get(name),
        lesson=LESSONS.get(name, ()),
        builds_on=BUILDS_ON.get(name, ()),
    )
    for name, e in EXERCISES.items()
}

# `python -m grader bench` (grader.course.bench): the GEMM ladder in teaching order, (name in the table, file,
# the exercise whose launchers it defines), and the other kernel files it times (file, exercise)
BENCH_GEMM_LADDER = (
    ("naive_uncoalesced", "01a_naive_uncoalesced.cu", "naive"),
    ("naive", "01_naive.cu", "naive"),
    ("tiled", "02_tiled.cu", "tiled"),
    ("bank_conflicts", "03_bank_conflicts.cu", "conflict_free"),
    ("conflict_free", "03_conflict_free.cu", "conflict_free"),
    ("register_1d", "04a_register_1d.cu", "register_blocked"),
    ("register_blocked", "04_register_blocked.cu", "register_blocked"),
    ("warptile_pipelined", "05_warptile_pipelined.cu", "register_blocked"),
)
BENCH_RELU = ("06_relu_mask.cu", "relu_mask")
BENCH_FUSED = ("07b_gemm_relu_warptile.cu", "gemm_relu")  # the fused epilogue on 05 (07 is on 04: grader.course.fusion)
BENCH_BEST_GEMM = ("05_warptile_pipelined.cu", "register_blocked")


def kind(name: str) -> kinds.Kind:
    """The kind of exercise `name` (grader.spec.kinds)."""
    return EXERCISES[name].kind


def of_kind(k: kinds.Kind) -> Exercise:
    """The first exercise of kind `k` (the course's first GEMM, its ReLU pair ...)."""
    return next(e for e in EXERCISES.values() if e.kind is k)


def launchers(name: str) -> tuple[contract.Launcher, ...]:
    """The launchers a file for exercise (or baseline) `name` must define."""
    return EXERCISES[name].launchers if name in EXERCISES else contract.BASELINE_LAUNCHERS[name]


def timing_launchers(name: str) -> tuple[contract.Launcher, ...]:
    """Launchers a file may define for the timed comparison only (grader.spec.kinds.Kind.timing_launchers)."""
    return EXERCISES[name].kind.timing_launchers if name in EXERCISES else ()


def is_host(name: str) -> bool:
    """Host code: its pointers are CPU memory, it runs on the CPU backend whatever GPU there is, and its
    speed is timed on the CPU (grader.run.host)."""
    return name in EXERCISES and EXERCISES[name].kind.host


def declarations(name: str) -> str:
    """C declarations of the launchers of `name` (and its timing-only ones), prepended before compiling."""
    return contract.declarations(launchers(name) + timing_launchers(name))


def result_keys(name: str) -> list[tuple[contract.Launcher, str, str]]:
    """contract.result_keys of the exercise's launchers."""
    return contract.result_keys(launchers(name))


def get(name: str, thresholds_file: str | os.PathLike | None = None) -> Exercise:
    """The exercise `name`, with any threshold overrides applied."""
    if name not in EXERCISES:
        close = [e for e in EXERCISES if e.startswith(name[:3])]
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise CannotGrade(
            f"unknown exercise {name!r}.{hint} Exercises: {', '.join(EXERCISES)} (python -m grader list)."
        )
    ex = EXERCISES[name]
    overrides = load_thresholds(thresholds_file)
    return replace(ex, threshold=float(overrides[name])) if name in overrides else ex


def load_thresholds(path: str | os.PathLike | None = None) -> dict[str, float]:
    path = path or os.environ.get("GRADER_THRESHOLDS")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise CannotGrade(f"cannot read thresholds file {path}: {e}") from None
    if not isinstance(data, dict) or not all(isinstance(v, (int, float)) for v in data.values()):
        raise CannotGrade(f'thresholds file {path} must map exercise names to numbers, e.g. {{"tiled": 1.2}}')
    unknown = set(data) - set(EXERCISES)
    if unknown:
        raise CannotGrade(f"thresholds file {path} names unknown exercises: {', '.join(sorted(unknown))}")
    return data
