"""The native runner (grader/run/runner): the process a submission's library runs in holds nothing worth
borrowing, draws the timed rounds' inputs exactly as the worker's copy does, and checks sums the same way."""

from pathlib import Path

import numpy as np
import pytest
import torch

from grader.judge import grade
from grader.run.runner import client, rng
from grader.run.runner.build import runner_binary
from grader.run.runner.client import Runner, RunnerFailed
from grader.run.runner.memory import checksum

SUBMISSIONS = Path(__file__).resolve().parent / "submissions"


@pytest.fixture(scope="module")
def runner():
    r = Runner(str(runner_binary("cpu")), "cpu")
    yield r
    r.close()


@pytest.mark.parametrize("relu", [False, True])
def test_the_runner_draws_the_timed_inputs_bit_for_bit_as_the_worker(runner, relu):
    n, seed = 4099, 0x5DEECE66D1234567
    runner.alloc("X", n, 0)
    runner.random("X", seed, relu)
    got = runner.read("X")
    want = rng.values(n, seed, relu).numpy().view(np.int32)
    assert np.array_equal(got, want)
    x = want.view(np.float32)
    assert abs(x.mean()) < 0.1 and 0.9 < x.std() < 1.1  # zero mean, unit scale
    zeros = np.count_nonzero(x == 0)
    assert (zeros > n / 32) == relu  # ReLU inputs carry exact zeros (of both signs)
    if relu:
        assert np.count_nonzero(np.signbit(x) & (x == 0)) > 0
    other = rng.values(n, seed + 1, relu).numpy()
    assert np.count_nonzero(other == x) < n / 8  # another seed, other numbers


def test_stats_checksum_and_column_sums_match_the_worker(runner):
    x = torch.randn(37, 11)
    runner.alloc("S", x.numel(), 0, data=x.numpy())
    reply = runner.request("stats", id="S", cols=11, colsum=True)
    assert (int(reply["sum"]), int(reply["weighted"])) == checksum(x)
    assert np.allclose(reply["_arrays"]["colsum"], x.double().sum(0).numpy())
    assert int(reply["nonfinite"]) == 0
    y = x.clone()
    y[3, 4], y[5, 0] = float("nan"), float("inf")
    runner.write("S", y.numpy())
    assert int(runner.request("stats", id="S", cols=11)["nonfinite"]) == 2
    z = x.clone().view(-1)
    z[[0, 1]] = z[[1, 0]]  # the same words in another order: the weighted sum sees it
    assert checksum(z)[0] == checksum(x)[0] and checksum(z)[1] != checksum(x)[1]


def test_the_runner_process_maps_no_interpreter_torch_or_blas(runner):
    maps = Path(f"/proc/{runner.proc.pid}/maps").read_text().lower()
    for name in ("python", "torch", "numpy", "blas", "mkl", "cublas"):
        assert name not in maps, name


def test_a_bad_request_is_refused_not_fatal(runner):
    with pytest.raises(RunnerFailed, match="no buffer"):
        runner.read("never allocated")
    runner.alloc("ok", 1, 7)
    assert runner.read("ok").tolist() == [7]


def test_a_kernel_that_borrows_the_interpreter_finds_none():
    """tests/submissions/borrow_interpreter.cu has numpy compute C through Python's C API, found in
    its own process. In the Python worker it was correct on every shape; in the runner C stays poison.
    (scan=False: the scan and link check refuse its dlsym; the real attack needs no forbidden symbol.)"""
    r = grade.grade("naive", SUBMISSIONS / "borrow_interpreter.cu", backend="cpu", scan=False)
    assert not r.correct and "never written" in r.message


@pytest.mark.gpu
def test_the_gpu_runner_draws_the_timed_inputs_as_the_worker_does_on_the_gpu():
    r = Runner(str(runner_binary("cuda")), "cuda")
    try:
        for relu in (False, True):
            r.alloc("X", 1 << 20, 0)
            r.random("X", 987654321987, relu)
            want = rng.values(1 << 20, 987654321987, relu, device="cuda").cpu().numpy().view(np.int32)
            assert np.array_equal(r.read("X"), want)
        x = rng.values(1 << 16, 5, device="cuda").view(64, 1024)
        r.alloc("S", x.numel(), 0, data=x.cpu().numpy())
        reply = r.request("stats", id="S", cols=1024, colsum=True)
        assert (int(reply["sum"]), int(reply["weighted"])) == checksum(x)
        assert np.allclose(reply["_arrays"]["colsum"], x.double().sum(0).cpu().numpy())
    finally:
        r.close()


@pytest.mark.gpu
def test_a_launcher_that_ignores_its_stream_fails_on_the_gpu():
    r = grade.grade("naive", SUBMISSIONS / "gpu" / "default_stream.cu", backend="cuda")
    assert r.compiled and not r.correct and "another stream" in r.message, r.message
    good = grade.grade("naive", SUBMISSIONS / "good_naive.cu", backend="cuda", time_it=False)
    assert good.correct, good.message


def test_the_kernels_printf_reaches_the_verdicts_output(tmp_path):
    """The runner writes to the worker's log (stdout and stderr), also when the worker was forked by the
    warm template, whose descriptors 0-2 are close-on-exec: a runner started without them lost every
    printf, and gave their numbers to its library, whose line lookups then failed."""
    src = (SUBMISSIONS / "good_naive.cu").read_text()
    marker = '#include <cstdio>\n__global__ void hello() { printf("hello from the kernel\\n"); }\n'
    src = marker + src.replace("cudaStream_t stream) {", "cudaStream_t stream) {\n    hello<<<1, 1, 0, stream>>>();", 1)
    assert "hello<<<" in src
    path = tmp_path / "printf.cu"
    path.write_text(src)
    r = grade.grade("naive", path, backend="cpu", time_it=False)
    assert r.correct, r.message
    assert "hello from the kernel" in r.output


def test_a_kernel_that_looks_for_libraries_on_disk_finds_none(monkeypatch):
    """tests/submissions/borrow_library_files.cu looks for libpython, Python's standard library, torch's and cuBLAS's
    libraries (dlopen by name, opendir of the usual folders) and does the work only when it finds one. In the
    worker's view of the file system it found them and passed; in the runner's own view there is nothing."""
    probe = Runner(str(runner_binary("cpu")), "cpu")
    probe.close()
    if probe.view:
        pytest.skip(f"the runner cannot make a view of its own here: {probe.view}")
    r = grade.grade("naive", SUBMISSIONS / "borrow_library_files.cu", backend="cpu", scan=False, time_it=False)
    assert r.compiled and not r.correct and "never written" in r.message, r.message
    monkeypatch.setenv("GRADER_RUNNER_VIEW", "0")  # the control: in the worker's view it finds one and passes
    r = grade.grade("naive", SUBMISSIONS / "borrow_library_files.cu", backend="cpu", scan=False, time_it=False)
    assert r.correct, r.message


@pytest.mark.gpu
def test_on_the_gpu_the_runners_view_holds_no_library_to_borrow(monkeypatch):
    """The same kernel on a GPU, with the runner's view on (the default, set here in case it changes): the
    CUDA driver keeps working after the pivot (the kernel runs and writes nothing), and no Python, torch or
    cuBLAS is on disk."""
    monkeypatch.setenv("GRADER_RUNNER_VIEW", "1")
    r = grade.grade("naive", SUBMISSIONS / "borrow_library_files.cu", backend="cuda", scan=False, time_it=False)
    assert r.compiled and not r.correct and "never written" in r.message, r.message
    monkeypatch.setenv("GRADER_RUNNER_VIEW", "0")  # the control: in the worker's view it finds one and passes
    r = grade.grade("naive", SUBMISSIONS / "borrow_library_files.cu", backend="cuda", scan=False, time_it=False)
    assert r.correct, r.message


def test_the_view_can_be_switched_off(monkeypatch):
    """GRADER_RUNNER_VIEW=0: the runner stays in the worker's view and says so (the way out where a GPU's
    driver stops working after the pivot). By default the view is on for both backends."""
    monkeypatch.setenv("GRADER_RUNNER_VIEW", "0")
    r = Runner(str(runner_binary("cpu")), "cpu")
    r.close()
    assert r.view == "off (GRADER_RUNNER_VIEW)"
    monkeypatch.delenv("GRADER_RUNNER_VIEW")
    assert client.view_wanted()
    monkeypatch.setenv("GRADER_RUNNER_VIEW", "off")
    assert not client.view_wanted()


def test_the_notebooks_setup_builds_the_runner_before_the_first_check(tmp_path, monkeypatch):
    """lab.setup() (every notebook's first cell) starts the runner's build, so that the first check of a
    session does not wait for nvcc or g++ to build it (measured on an H100: 9.9 s before the runner, 14.7 s
    after with a fresh cache)."""
    import time

    from grader.course import lab
    from grader.run import binding

    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    monkeypatch.setattr(binding, "resolve_backend", lambda: "cpu")
    assert not list(tmp_path.glob("runner/cpu-*/runner"))
    assert lab.setup(verbose=False) == "cpu"
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("runner/cpu-*/runner")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list(tmp_path.glob("runner/cpu-*/runner")), "setup() did not build the runner"


def test_a_runner_without_a_shared_cpp_runtime_still_loads_a_gpp_library(tmp_path):
    """A runner built by a $CXX that links the C++ runtime statically did not load libstdc++; in its own
    view nothing else can be found by name, so a g++-built kernel library failed to load ("libstdc++.so.6:
    cannot open shared object file", seen on the GPU machine's CPU backend). The runner loads the C++
    runtime before it makes the view."""
    import subprocess

    from grader.run.runner import build

    binary = tmp_path / "runner"
    made = subprocess.run([*build._command("cpu", binary), "-static-libstdc++", "-static-libgcc"], capture_output=True)
    if made.returncode:
        pytest.skip(f"no static C++ runtime to link here: {made.stderr.decode()[-300:]}")
    (tmp_path / "k.cpp").write_text(
        '#include <string>\nextern "C" int f(int n) { return (int)std::to_string(n).size(); }\n'
    )
    subprocess.run(
        ["g++", "-O1", "-shared", "-fPIC", "-o", str(tmp_path / "k.so"), str(tmp_path / "k.cpp")], check=True
    )
    r = Runner(str(binary), "cpu")
    try:
        if r.view:
            pytest.skip(f"the runner cannot make a view of its own here: {r.view}")
        r.load("k", str(tmp_path / "k.so"))
        assert r.missing("k", ["f"]) == []
    finally:
        r.close()
