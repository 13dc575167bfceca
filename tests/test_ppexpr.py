"""The CPU backend evaluates `#if ... __CUDA_ARCH__` lines itself (grader/compile/cpu/ppexpr.py), in the grader's
own process: as g++ does, in 64 bits, and never with Python's eval, whose big integers let a submission's
`(1 << (1 << 33))` take seconds and gigabytes there."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from grader.compile.cpu import ppexpr
from grader.compile.cpu.rewrite import LaunchSyntaxError, UnsupportedConstruct, rewrite

# (expression, what g++ -E makes of it): C's semantics, where Python's differ
CASES = [
    "1 < 2 < 3",  # (1 < 2) < 3 in C; a chain in Python
    "-7 / 2 == -3",  # C truncates toward zero
    "-7 % 2 == -1",
    "-1 < 0u",  # the usual arithmetic conversions: unsigned
    "-1 > 0",
    "0xFFFFFFFFFFFFFFFF == -1",  # a literal past intmax_t is unsigned
    "(0x7FFFFFFFFFFFFFFF + 1) < 0",  # signed wrap, as GCC's
    "~0u == 18446744073709551615u",
    "1 ? 2 : 3",
    "0 ? 1 : -1",
    "0 && (1 / 0)",  # never evaluated
    "1 || (1 << 99)",
    "!0 + !5",
    "(1 << 63) < 0",
    "-8 >> 1 == -4",
    "0b101 == 5 && 017 == 15 && 1'000 == 1000",
    "true && !false",
    "(((((((((1)))))))))",
    "3 & 5 ^ 6 | 8",
    "10 - 2 - 3 == 5",
]


def _gcc(expr: str) -> bool:
    src = f"#if {expr}\nYES\n#else\nNO\n#endif\n"
    r = subprocess.run(["g++", "-std=c++20", "-E", "-P", "-x", "c++", "-"], input=src, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return "YES" in r.stdout


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("expr", CASES)
def test_values_are_gccs(expr):
    assert (ppexpr.value(expr) != 0) == _gcc(expr), expr


def test_names_are_not_guessed():
    assert ppexpr.value("0 >= 800 && USE_FAST") is None
    assert ppexpr.value("defined(OTHER)") is None
    assert ppexpr.value("1.5 > 1") is None


@pytest.mark.parametrize(
    "expr, why",
    [
        ("1 << (1 << 33)", "shift by 8589934592"),
        ("1 << 64", "shift by 64"),
        ("1 >> -1", "shift by -1"),
        ("123456789012345678901234567890", "more than 64 bits"),
        ("(" * 100 + "1" + ")" * 100, "nested"),
        ("-" * 100 + "1", "nested"),
        ("+".join(["1"] * 2000), "tokens"),
    ],
)
def test_what_is_not_evaluated_says_why_at_once(expr, why):
    t = time.perf_counter()
    with pytest.raises(ppexpr.Unsupported, match=why):
        ppexpr.value(expr)
    assert time.perf_counter() - t < 0.5


def test_a_huge_shift_in_a_submissions_if_costs_the_grader_nothing():
    """The filed case: eval took 4 s and 1.3 GB for this line; now it is refused with its line."""
    src = "#include <cuda_runtime.h>\n#if __CUDA_ARCH__ >= 800 || (1<<(1<<33))\nint fast;\n#endif\n"
    t = time.perf_counter()
    with pytest.raises(UnsupportedConstruct, match=r"line 2: a shift by 8589934592 bits"):
        rewrite(src)
    assert time.perf_counter() - t < 2.0
    with pytest.raises(LaunchSyntaxError, match="line 1: division by zero"):
        rewrite("#if __CUDA_ARCH__ >= 800 || 1 / 0\n#endif\n")


def test_the_fallback_of_a_version_test_is_what_is_checked():
    """`#if __CUDA_ARCH__ >= 800 ... #else` runs the fallback here: asm in the fast path is not refused,
    asm in the fallback is."""
    fast = '#if __CUDA_ARCH__ >= 800 && (1 << 3) == 8\n__device__ void f() { asm("nop;"); }\n#else\n#endif\n'
    rewrite(fast)
    with pytest.raises(UnsupportedConstruct, match="line 4: inline PTX"):
        rewrite(fast.replace("#else\n", '#else\n__device__ void g() { asm("nop;"); }\n'))
