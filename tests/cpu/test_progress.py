"""A kernel that outlasts the time limit on the CPU backend: the verdict says how far it got,
and tells a slow kernel (blocks still finishing) from a stuck one."""

import textwrap

import pytest

from grader.judge import grade
from grader.compile.cpu import progress

SLOW = textwrap.dedent("""\
    // correct, but every thread does a lot of redundant work: far too slow for the CPU backend
    __global__ void slow(const float* A, const float* B, float* C, int M, int N, int K) {
        int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
        if (row >= M || col >= N) return;
        float acc = 0.f;
        for (int rep = 0; rep < 2000; ++rep) {
            acc = 0.f;
            for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = acc;
    }
    extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
        slow<<<dim3((N + 7) / 8, (M + 7) / 8), dim3(8, 8), 0, stream>>>(A, B, C, M, N, K);
    }
    """)
STUCK = SLOW.replace("for (int rep = 0; rep < 2000; ++rep) {", "for (volatile int rep = 0; rep < 1; rep *= 1) {")


TIMEOUT_S = 20  # the worker's start (python, torch) counts too, and this machine may be busy


@pytest.fixture(scope="module")
def verdicts():
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:  # both wait out their time limit: together
        slow, stuck = pool.map(
            lambda src: grade.grade("naive", src, backend="cpu", seed=1, scan=False, timeout=TIMEOUT_S), [SLOW, STUCK]
        )
    return {"slow": slow, "stuck": stuck}


def test_a_slow_kernel_is_not_called_a_hang(verdicts):
    r = verdicts["slow"]
    assert not r.passed
    assert "did not finish within the time limit on the CPU backend" in r.message, r.message
    # still advancing, or (a busy machine: the time ran out in a launch's first block) its earlier runs finished
    assert "hang" not in r.message and "(--timeout)" in r.message and "never ends" not in r.message, r.message
    assert "kernel slow" in r.message and "block " in r.message and " of " in r.message
    assert "cuda_emu progress" not in r.output


def test_a_stuck_kernel_is_told_apart(verdicts):
    r = verdicts["stuck"]
    assert not r.passed
    assert "did not finish within the time limit on the CPU backend" in r.message, r.message
    assert "block 1 of" in r.message and "still advancing" not in r.message and "(--timeout)" not in r.message
    # "that block had run for N s of CPU time" once it has had 3 s of CPU (a busy machine may not give it)


def test_progress_lines_parse_and_strip():
    out = (
        "hello\n\ncuda_emu progress: launch 2, block 3 of 40, 1.0 s, 0.1 s CPU in this block, kernel k<16>\n"
        "\ncuda_emu progress: launch 2, block 9 of 40, 2.0 s, 0.2 s CPU in this block, kernel k<16>\nbye\n"
    )
    p = progress.last(out)
    assert (p.launch, p.block, p.blocks, p.kernel, p.state) == (2, 9, 40, "k<16>", "advancing")
    stuck = "".join(
        f"\ncuda_emu progress: launch 1, block 1 of 1, {s}.0 s, {s}.0 s CPU in this block, kernel k\n"
        for s in range(1, 6)
    )
    assert progress.last(stuck).state == "stuck"
    assert progress.last(stuck.split("\n\n")[0] + "\n").state == "unknown"
    assert progress.last("nothing") is None


def test_a_time_out_in_a_first_block_after_finished_runs_is_called_slow_not_stuck():
    # a busy machine: the limit hit 1 s into a new launch, still in block 1. Nothing says stuck, and the kernel
    # had finished 4 runs: more likely slow. With no finished run there is nothing to go on.
    p = progress.last("\ncuda_emu progress: launch 5, block 1 of 15, 1.0 s, 0.9 s CPU in this block, kernel slow\n")
    assert p.state == "unknown"
    slow = progress.timeout_message(p, "17x33x65", 4)
    assert "more likely slow than stuck" in slow and "(--timeout)" in slow and "never ends" not in slow
    unknown = progress.timeout_message(p, "17x33x65", 0)
    assert "more likely slow" not in unknown and "(--timeout)" not in unknown


def test_strip_gives_back_exactly_what_the_kernel_printed():
    # the runtime writes "\n" + line + "\n" (runtime.cpp), so the line starts on a line of its own even when it
    # interrupts one of the kernel's: taking exactly that out gives the kernel's output back, byte for byte
    line = "cuda_emu progress: launch 2, block 3 of 40, 1.0 s, 0.1 s CPU in this block, kernel k<16>"
    assert progress.strip(f"hello\n\n{line}\n\n{line}\nbye\n") == "hello\nbye\n"
    assert progress.strip(f"hel\n{line}\nlo\n") == "hello\n"
    assert progress.strip(f"\n{line}\n\n\nafter a blank line\n") == "\n\nafter a blank line\n"
    assert progress.strip(f"cut off\n\n{line[:30]}") == "cut off\n"  # the output cap cut the last line
    assert progress.strip("no progress\n\n") == "no progress\n\n"  # noqa: B005 - grader.compile.cpu.progress.strip
