"""The shapes drawn from each grade's seed (grader.spec.shapes): the coverage property itself, over
many seeds, written out here independently of the module."""

from __future__ import annotations

import itertools

import pytest

from grader.spec import shapes

SEEDS = range(300)
MODULI = (4, 8, 32, 128)


@pytest.mark.parametrize("ndims", [3, 2])
def test_every_dimension_covers_zero_and_nonzero_residues_independently(ndims):
    for seed in SEEDS:
        drawn = shapes.draw(ndims, seed)
        for d, m in itertools.product(range(ndims), MODULI):
            residues = [s[d] % m for s in drawn]
            assert 0 in residues and any(residues), (seed, d, m, drawn)
        # independently: wherever one dimension is a multiple of m, there is a shape in which
        # another is not, and in fact is odd (as unaligned as it gets)
        for a, b in itertools.permutations(range(ndims), 2):
            for m in MODULI:
                assert any(s[a] % m == 0 and s[b] % m for s in drawn), (seed, a, b, m, drawn)
                assert any(s[a] % m == 0 and s[b] % 2 for s in drawn), (seed, a, b, m, drawn)


@pytest.mark.parametrize("ndims", [3, 2])
def test_each_dimension_meets_each_modulus_exactly_with_the_others_odd(ndims):
    """a multiple of m but not of 2m: a path that tests d % 4 but needs d % 8 is taken and fails"""
    for seed in SEEDS:
        drawn = shapes.draw(ndims, seed)
        for d, m in itertools.product(range(ndims), MODULI):
            exact = [
                s
                for s in drawn
                if s[d] % m == 0 and (m == 128 or s[d] % (2 * m)) and all(s[o] % 2 for o in range(ndims) if o != d)
            ]
            assert exact, (seed, d, m, drawn)


def test_k_exceeds_128_in_every_draw_and_the_cpu_cost_is_capped():
    for seed in SEEDS:
        gemm = [s for s in shapes.draw(3, seed) if not shapes.past_limits(s)]
        assert max(k for _, _, k in gemm) > 128
        assert all(min(s) >= 1 for s in gemm)
        assert sum(shapes.cost(s) for s in gemm) <= 14 * shapes.COST_CAP[3]
        assert all(shapes.cost(s) <= shapes.COST_CAP[2] for s in shapes.draw(2, seed) if not shapes.past_limits(s))


def test_one_shape_passes_a_staging_array_of_2_18_floats():
    """M * K > 2^18 with N = 3 (relu_mask: M * N > 2^18): a __device__ float[1 << 18] that A is staged in,
    with a wrapped index, is wrong there (tests/submissions/device_stage_wrapped.cu)."""
    for seed in SEEDS:
        assert [s for s in shapes.draw(3, seed) if s[1] == 3 and 2**18 < s[0] * s[2] < 2**18 * 1.25]
        assert [s for s in shapes.draw(2, seed) if 2**18 < s[0] * s[1] < 2**18 * 1.25]


def test_one_shape_has_more_rows_than_grid_dim_y_allows_and_stays_cheap():
    """M > 65535 with N and K small (tests/submissions/rows_on_grid_y.cu); warptile leaves it out on the CPU."""
    for seed in SEEDS:
        for ndims in (3, 2):
            tall = [s for s in shapes.draw(ndims, seed) if s[0] > 65535]
            assert len(tall) == 1 and max(tall[0][1:]) < 8, (seed, tall)
            assert not [s for s in shapes.draw(ndims, seed, rows=False) if s[0] > 65535]


def test_one_gemm_shape_is_wider_than_a_block_has_threads_and_stays_cheap():
    """N > 1024 with M and K small (tests/submissions/block_per_row.cu: <<<M, N>>> does not launch there)."""
    for seed in SEEDS:
        for rows in (True, False):
            wide = [s for s in shapes.draw(3, seed, rows=rows) if s[1] > 1024]
            assert len(wide) == 1 and wide[0][0] < 4 and wide[0][2] < 6 and shapes.past_limits(wide[0]), (seed, wide)


def test_the_profile_shapes_are_drawn_from_the_seed_one_aligned_one_not_and_cost_no_more_than_their_base():
    """A launcher that recognises 256^3 (or 1024^2), or any shape whose dimensions are all multiples of 128, and
    runs its lesson's kernel only there meets another shape (tests/submissions/profile_shape_*.cu)."""
    for base in ((256, 256, 256), (1024, 1024)):
        drawn = [shapes.profile_shapes(base, seed) for seed in SEEDS]
        assert len(set(drawn)) >= 15 and all(base not in pair for pair in drawn)
        assert all(shapes.cost(base) // 4 <= shapes.cost(s) <= shapes.cost(base) // 2 for pair in drawn for s in pair)
        assert all(a[-1] % 128 == 0 for a, _ in drawn)  # whole tiles (the docstring of profile_shapes says why)
        assert all(d % 2 for _, odd in drawn for d in odd)  # no dimension aligned, the tiles nearly whole:
        assert all(-d % 128 <= shapes.SHORT_OF_TILE for _, odd in drawn for d in (odd if len(base) == 3 else odd[1:]))
        assert shapes.profile_shapes(base, 7) == shapes.profile_shapes(base, 7)


def test_one_shape_is_long_past_a_fixed_row_cache():
    """K > 512 (relu_mask: N > 1024) in every draw, within twice the cost cap: a kernel that keeps a row of
    A in a float[512] is wrong there and on no other CPU shape."""
    for seed in SEEDS:
        assert any(k > 512 and shapes.cost((m, n, k)) <= 2 * shapes.COST_CAP[3] for m, n, k in shapes.draw(3, seed))
        assert any(n > 1024 and shapes.cost((m, n)) <= shapes.COST_CAP[2] for m, n in shapes.draw(2, seed))


def test_the_seed_fixes_the_shapes_and_different_seeds_differ():
    assert shapes.draw(3, 1234) == shapes.draw(3, 1234)
    assert len({tuple(shapes.draw(3, s)) for s in range(50)}) == 50
    # values vary within each class: not a handful a learner could special-case
    assert len({shapes.draw(3, s)[0] for s in range(200)}) > 100


def test_alignment_names_the_aligned_and_the_odd_dimensions():
    assert shapes.alignment((41, 59, 32)) == "K is a multiple of 32; M and N are not multiples of 4"
    assert shapes.alignment((51, 96)) == "N is a multiple of 32; M is not a multiple of 4"
    assert shapes.alignment((64, 64, 64)) == "" and shapes.alignment((3, 5, 7)) == ""
