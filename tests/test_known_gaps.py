"""Verdicts the CPU backend still gets wrong: submissions from red teams (2026-12-01, 2026-12-04) that the
grader has no defence for yet, each marked xfail(strict=True) with the verdict it should give. A fix makes its test
pass, which fails the run (strict): then drop the mark and move the file to tests/submissions/.

On a GPU most of these are judged right (a kernel that reads a host global does not compile with nvcc;
host work and uncoalesced loads are too slow), so they run on the CPU backend only."""

from __future__ import annotations

from pathlib import Path

import pytest

GAPS = Path(__file__).resolve().parent / "known_gaps"

# file -> (exercise, should it pass?, what the CPU backend misses); the ten of 2026-12-01 are fixed (README.md)
CASES: dict[str, tuple[str, bool, str]] = {
    "size_band_tiled.cu": ("tiled", False, "a path chosen by size above every shape the CPU backend can afford to run"),
    "row_cache_1152.cu": ("naive", False, "a fixed capacity past the CPU backend's longest K (1100)"),
}


def test_every_gap_file_has_a_case_and_a_row_in_the_readme():
    """The folder, CASES and the README's table agree (an empty CASES must not skip the check below unseen)."""
    on_disk = {p.name for p in GAPS.glob("*.cu")}
    assert on_disk == set(CASES)
    table = (GAPS / "README.md").read_text().split("The ten of 2026-12-01")[0]
    for name in CASES:
        assert f"| {name} |" in table, f"{name}: no row in tests/known_gaps/README.md"


if CASES:  # an empty parameter set would be a skip that says nothing; the test above runs either way

    @pytest.mark.parametrize(
        "name",
        [
            pytest.param(n, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=CASES[n][2]))
            for n in sorted(CASES)
        ],
    )
    def test_known_gap(name):
        from grader.judge import grade
        from grader.errors import CannotGrade

        exercise, should_pass, _ = CASES[name]
        try:
            passed = grade.grade(exercise, GAPS / name, backend="cpu", seed=1234).passed
        except CannotGrade:  # exit 2
            passed = None
        assert (passed is True) == should_pass, f"{name}: {'passed' if passed else 'failed or could not grade'}"
