"""The access profile's sample of blocks must stand for the launch: the bytes every block loads are counted
(without the sample's detail), and a sample whose loads, scaled to the grid, are far from them (one block doing
all of the work, sampled or not) sends the grader to count every block."""

import pathlib

from grader.judge import grade, profile

SUBS = pathlib.Path(__file__).resolve().parent.parent / "submissions"


def test_a_sample_that_misses_the_working_block_is_unrepresentative():
    p = profile.run("naive", SUBS / "middle_block_does_all_uncoalesced.cu", blocks="sample", seed=7, resources=False)
    assert p.sampled and p.unrepresentative, p.launches
    assert profile.check_bounds("naive", p) == [profile.NO_GLOBAL_LOADS]
    full = profile.run("naive", SUBS / "middle_block_does_all_uncoalesced.cu", blocks="all", resources=False)
    assert not full.unrepresentative and full.derived["sectors_over_ideal_ld"] > 3


def test_an_honest_kernels_sample_stands_for_it():
    for seed in (1, 2, 3):
        p = profile.run("naive", SUBS / "good_naive.cu", blocks="sample", seed=seed, resources=False)
        assert p.sampled and not p.unrepresentative, p.unrepresentative


def test_the_grade_counts_every_block_then():
    r = grade.grade("naive", str(SUBS / "middle_block_does_all_uncoalesced.cu"), backend="cpu", seed=3, scan=False)
    assert not r.passed and "(CPU backend: every block)" in r.message and "sectors_over_ideal_ld" in r.message, (
        r.message
    )


def test_one_sector_loads_do_not_dilute_the_coalescing_figure():
    """An uncoalesced kernel padded with broadcasts (one sector each, ideal) keeps 01a's figure (8: a sector per
    lane); left in, the broadcasts pulled it under the naive bound of 3."""
    p = profile.run("naive", SUBS / "profile_padding_broadcasts.cu", (64, 64, 16), blocks="all", resources=False)
    one = sum(r.get("one_sector_requests", 0) for r in p.per_line if r["space"] == "global" and r["op"] == "ld")
    assert one > 0 and p.derived["sectors_over_ideal_ld"] > 3, p.derived
    good = profile.run("naive", SUBS / "good_naive.cu", (64, 64, 16), blocks="all", resources=False)
    assert good.derived["sectors_over_ideal_ld"] < 1.5  # its A loads are broadcasts too: left out, B is coalesced
