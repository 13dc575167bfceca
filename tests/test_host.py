"""cpu_blocked: a host C++ exercise, graded on the CPU backend and timed on the CPU (grader.run.host).
These run on any machine (g++ only); the timed ones take a few seconds each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grader.run import binding, host
from grader.spec import exercises
from grader.judge import grade

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
NAIVE = (KERNELS / "00_cpu_naive.cu").read_text()


def test_host_exercise_is_in_the_contract():
    assert exercises.is_host("cpu_blocked")
    (launcher,) = exercises.launchers("cpu_blocked")
    assert launcher.signature == "void gemm_cpu(const float* A, const float* B, float* C, int M, int N, int K)"
    ex = exercises.get("cpu_blocked")
    assert ex.reference_path.is_file() and ex.baseline_path.is_file() and ex.threshold > 1


@pytest.mark.parametrize("name", ["00_cpu_naive.cu", "00_cpu_blocked.cu"])
def test_host_build_matches_the_spec(name):
    lib = host.load(KERNELS / name)
    rng = np.random.default_rng(0)
    for m, n, k in [(1, 1, 1), (127, 253, 61), (200, 129, 300)]:
        a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
        np.testing.assert_allclose(lib(a, b), a.astype(np.float64) @ b, atol=1e-4 * k)


def test_load_always_uses_the_cpu_backend():
    # host code dereferences its pointers on the CPU: even with a GPU it must never get device memory
    mod = binding.load(KERNELS / "00_cpu_blocked.cu", "cpu_blocked", backend="auto")
    assert mod.backend == "cpu"


def test_reference_passes_with_a_timing():
    r = grade.grade("cpu_blocked", KERNELS / "00_cpu_blocked.cu")
    assert r.passed and r.backend == "cpu", r.message
    assert r.speedup >= r.threshold and set(r.timing) == {"kernel", "baseline", "numpy"}


def test_the_naive_loop_is_correct_but_too_slow():
    r = grade.grade("cpu_blocked", NAIVE)
    assert r.correct and not r.passed and "too slow" in r.message, r.message
    assert r.hint == exercises.get("cpu_blocked").slow_hint


def test_a_missing_edge_fails_correctness():
    # blocks of 64 rows without std::min: rows past the last full block are never written
    wrong = NAIVE.replace("for (int i = 0; i < M; ++i)", "for (int i = 0; i < M / 64 * 64; ++i)")
    r = grade.grade("cpu_blocked", wrong, time_it=False)
    assert r.compiled and not r.correct, r.message


def test_a_borrowed_blas_does_not_link():
    # torch and numpy load a BLAS into the grader's processes: a submission must not reach it
    src = (
        'extern "C" void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*,\n'
        "    const float*, const int*, const float*, const int*, const float*, float*, const int*);\n"
        'extern "C" void gemm_cpu(const float* A, const float* B, float* C, int M, int N, int K) {\n'
        "    const float one = 1, zero = 0;\n"
        '    sgemm_("N", "N", &N, &M, &K, &one, B, &N, A, &K, &zero, C, &N);\n}\n'
    )
    r = grade.grade("cpu_blocked", src)
    assert not r.passed and not r.compiled, r.message
    with pytest.raises(Exception, match="sgemm_"):
        host.build(src, "cpu_blocked", "blas.cu")


def test_compile_errors_name_the_learners_line():
    with pytest.raises(Exception, match=r"mine\.cu:2"):
        host.build(
            'extern "C" void gemm_cpu(const float* A, const float* B, float* C, int M, int N, int K) {\n'
            "    undefined_thing;\n}\n",
            "cpu_blocked",
            "mine.cu",
        )


def test_work_skipped_when_the_pointers_repeat_fails_in_the_timed_runs():
    # the timed rounds reuse the same buffers: a kernel that skips the work when A and C are the ones it
    # saw last would time as nearly free; the inputs are redrawn and C poisoned before every round
    blocked = (KERNELS / "00_cpu_blocked.cu").read_text()
    src = blocked.replace(
        'extern "C" void gemm_cpu(const float* A, const float* B, float* C, int M, int N, int K) {',
        "static const float* seen_a = nullptr;\nstatic float* seen_c = nullptr;\n"
        'extern "C" void gemm_cpu(const float* A, const float* B, float* C, int M, int N, int K) {\n'
        "    if (A == seen_a && C == seen_c && (long)M * N * K > 50000000) return;  // only at the timed size\n"
        "    seen_a = A; seen_c = C;",
    )
    assert "seen_a" in src
    r = grade.grade("cpu_blocked", src)
    assert not r.passed and "timed runs" in r.message, r.message
