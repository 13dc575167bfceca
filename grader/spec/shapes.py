"""Shapes drawn afresh for every grade from its seed, on top of an exercise's fixed shapes.

A kernel with a special path for aligned sizes passes fixed shapes whenever none of them meets
the path's blind spot: a fast path taken when K % 32 == 0 that skips the M/N bounds checks
(every fixed shape with K % 32 == 0 had M and N multiples of 32), float4 loads of A enabled by
testing N % 4 instead of K % 4, a ReLU path for N % 32 == 0 without a tail check, a row of A
cached in float[128]. So each grade also draws, from its seed:

  for every dimension d (M, N, K; for relu_mask M, N) and every m in MODULI, one shape in which
  d is a multiple of m but not of 2m (for m = 128: 128, 256 or 384) and every other dimension
  is odd.

  and one long shape: K (relu_mask: N) drawn from LONG, past any fixed-size cache a kernel might
  keep of a row (a float[512] of A passed every other CPU shape), the other dimensions under 32.

  and, past sizes a kernel may silently assume (LONG_ROWS, STAGE): M above gridDim.y's limit of 65535
  with N and K small (one block row per row of C fails to launch; N > 3 also makes M * N > 2^18), and
  M * K just above 2^18 with N = 3 (a fixed __device__ staging array of 2^18 floats overflows); relu_mask:
  M * N just above 2^18; GEMM: N above a block's 1024 threads with M and K small (one block per row of C,
  one thread per column, does not launch there). These are not held to COST_CAP: they cost 0.1-1 s a run on the CPU backend for
  a kernel with tiles of up to 64 rows, more for 128-row tiles (`rows=False` leaves the long-M shape out).
  (A grade on the CPU backend takes 4-10 s with them: good_naive.cu 5.9 s, 05 as register_blocked 9.8 s.)

Across the set each dimension then has both zero and non-zero residues mod 4, 8, 32 and 128,
independently of the others: wherever one dimension is aligned, the others are as unaligned as
they can be, which is where such a path goes wrong. K's multiple of 128 is 256 or 384, so K >
128 on every backend. The values inside these classes are random, and kept small enough for
the CPU backend by a cost cap per shape (COST_CAP: about 10-20 ms of the CPU backend's time for
a 32 x 32 tiled kernel). The same seed gives the same shapes (`check --seed S` reproduces a run).
"""

from __future__ import annotations

import random

MODULI = (4, 8, 32, 128)  # each divides the next: the classes below rely on it
ODD_MAX = 255  # odd dimensions are drawn from 1 .. ODD_MAX
# cost of a shape ~ the work of a kernel tiled by 32 (GEMM: padded M*N*K; relu: M * padded N,
# whose CPU cost per element is higher: a warp vote per word)
COST_CAP = {3: 600_000, 2: 12_288}
LONG = {3: (513, 1100), 2: (1025, 2100)}  # the long shape's K (GEMM) or N (relu): beyond 512 / 1024
LONG_COST_CAP = {3: 1_200_000, 2: 12_288}  # one shape, up to twice COST_CAP for a GEMM


LONG_ROWS = (65537, 70000)  # M past gridDim.y's limit (65535)
WIDE = (1025, 4100)  # GEMM: N past a block's 1024 threads (one thread per column of C does not launch)
STAGE = 1 << 18  # floats: a fixed staging array this large overflows past it
# the profile shapes: each dimension within these bounds of the exercise's base shape (256^3, 1024^2), each
# shape's cost within PROFILE_COST of the base's (two shapes: together no dearer than the base), so that a
# launcher cannot recognise them and grading gets no slower
PROFILE_RANGE = (0.5, 2.0)
PROFILE_COST = (0.25, 0.5)
PROFILE_ALIGN = 128
SHORT_OF_TILE = 15  # the unaligned profile shape's dimensions are 1 .. this (odd) short of a multiple of 128


def _pad32(x: int) -> int:
    return -(-x // 32) * 32


def cost(shape: tuple[int, ...]) -> int:
    """What a shape costs the CPU backend, in COST_CAP's units."""
    if len(shape) == 3:
        return _pad32(shape[0]) * _pad32(shape[1]) * _pad32(shape[2])
    return shape[0] * _pad32(shape[1])


def _aligned(rng: random.Random, m: int, is_k: bool) -> int:
    """A multiple of m that is not a multiple of 2m (any multiple for the largest modulus)."""
    if m == MODULI[-1]:
        return m * rng.choice((2, 3) if is_k else (1, 2, 3))
    top = max(1, 200 // m)  # odd multipliers up to about 200 / m
    return m * rng.randrange(1, top + 1, 2)


def _odd(rng: random.Random) -> int:
    """An odd size, as often small (one tile) as medium or large (several tiles and a tail)."""
    lo, hi = rng.choice(((1, 31), (33, 127), (129, ODD_MAX)))
    return rng.randrange(lo, hi + 1, 2)


def _fit(shape: list[int], keep: int, cap: int) -> list[int]:
    """Shrink the odd dimensions (all but index `keep`) until the shape costs at most `cap`."""
    while cost(tuple(shape)) > cap:
        i = max((j for j in range(len(shape)) if j != keep), key=lambda j: shape[j])
        if shape[i] == 1:
            break
        shape[i] = max(1, shape[i] // 2 | 1)
    return shape


def draw(ndims: int, seed: int, rows: bool = True) -> list[tuple[int, ...]]:
    """The drawn shapes for an exercise whose shapes have `ndims` dimensions (3: M, N, K; 2: M, N);
    rows=False: without the shape whose M passes gridDim.y's limit."""
    rng = random.Random(f"grader.shapes/{ndims}/{seed}")
    cap = COST_CAP[ndims]
    shapes = []
    for d in range(ndims):
        for m in MODULI:
            for _attempt in range(20):  # redraw the odd sizes while the shape is too costly
                shape = [_odd(rng) for _ in range(ndims)]
                shape[d] = _aligned(rng, m, is_k=(ndims == 3 and d == 2))
                if cost(tuple(shape)) <= cap:
                    break
            shapes.append(tuple(_fit(shape, d, cap)))
    lo, hi = LONG[ndims]
    long = [rng.randrange(1, 32, 2) for _ in range(ndims)]
    long[-1] = rng.randrange(lo, hi + 1)
    shapes.append(tuple(_fit(long, ndims - 1, LONG_COST_CAP[ndims])))
    shapes += _past_limits(ndims, rng, rows)
    return shapes


def _past_limits(ndims: int, rng: random.Random, rows: bool) -> list[tuple[int, ...]]:
    """The shapes past gridDim.y's limit and a 2^18-float staging array (module docstring)."""
    if ndims == 2:
        n = rng.randrange(513, 700, 2)
        staged, tall = (STAGE // n + rng.randrange(1, 40, 2), n), (rng.randrange(*LONG_ROWS, 2), 3)
    else:
        k = rng.randrange(129, 256, 2)
        staged = (STAGE // k + rng.randrange(1, 200, 2), 3, k)
        tall = (rng.randrange(*LONG_ROWS, 2), rng.randrange(5, 8, 2), rng.randrange(1, 6, 2))
        wide = (rng.randrange(1, 4, 2), rng.randrange(*WIDE, 2), rng.randrange(1, 6, 2))
        return [tall, staged, wide] if rows else [staged, wide]
    return [tall, staged] if rows else [staged]


def past_limits(shape: tuple[int, ...]) -> bool:
    """Is this one of _past_limits' shapes (not held to COST_CAP)?"""
    m = shape[0]
    return m > LONG_ROWS[0] - 2 or m * shape[-1] > STAGE or (len(shape) == 3 and shape[1] >= WIDE[0])


def profile_shapes(base: tuple[int, ...], seed: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The two shapes the CPU backend's access profile counts at, drawn from the grade's seed around the
    exercise's `base` (256^3, 1024^2): a launcher that recognises a public profile shape (or an aligned one)
    and runs its lesson's kernel only there meets the other.

    aligned: every dimension a multiple of PROFILE_ALIGN (relu_mask: N; M is any), whole tiles, where the
    exercises' access bounds hold as they are. unaligned: every dimension odd, 1 .. SHORT_OF_TILE short of
    a multiple of 128 (nearly full partial tiles), where the bounds hold with a slack (exercises.AccessBound
    .unaligned): the partial tiles of a 128 x 128 block tile and scalar loads in place of float4 ones raise
    the shipped solutions' figures there (04 at 249x241x251: 0.23 B/FLOP against 0.047 at 256^3; 06 at
    N = 487: 6.1 bytes per element against 4.25), as misaligned rows do ReLU's. Each costs PROFILE_COST
    of the base's."""
    rng = random.Random(f"grader.shapes/profile/{base}/{seed}")
    return _profile_shape(base, rng, 0), _profile_shape(base, rng, SHORT_OF_TILE)


def _profile_shape(base: tuple[int, ...], rng: random.Random, short: int) -> tuple[int, ...]:
    """One of profile_shapes' shapes: multiples of PROFILE_ALIGN less an odd 1 .. `short` (0: none)."""
    lo, hi = PROFILE_RANGE
    cheap, dear = (int(cost(tuple(base)) * f) for f in PROFILE_COST)
    for _attempt in range(200):
        shape = [
            PROFILE_ALIGN * rng.randint(max(1, round(d * lo / PROFILE_ALIGN)), round(d * hi / PROFILE_ALIGN))
            - (rng.randrange(1, short + 1, 2) if short else 0)
            for d in base
        ]
        if len(base) == 2:
            shape[0] = rng.randrange(int(base[0] * lo), int(base[0] * hi)) | (1 if short else 0)
        shape = tuple(shape)
        if cheap <= cost(shape) <= dear:
            return shape
    raise AssertionError(f"no profile shape for {base}")  # PROFILE_RANGE and PROFILE_COST always leave some


def dim_names(shape) -> tuple[str, ...]:
    return ("M", "N", "K")[: len(shape)]


def alignment(shape) -> str:
    """'K is a multiple of 32; M and N are not multiples of 4' for a shape with aligned and
    unaligned dimensions ("" otherwise): where a path chosen for aligned sizes goes wrong."""
    names = dim_names(shape)
    aligned = [(n, max(m for m in MODULI if d % m == 0)) for n, d in zip(names, shape) if d % MODULI[0] == 0]
    unaligned = [n for n, d in zip(names, shape) if d % MODULI[0]]
    if not aligned or not unaligned:
        return ""
    said = "; ".join(f"{n} is a multiple of {m}" for n, m in aligned)
    verb = "is not a multiple" if len(unaligned) == 1 else "are not multiples"
    return f"{said}; {' and '.join(unaligned)} {verb} of 4"
