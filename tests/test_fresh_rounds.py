"""Timed runs draw fresh inputs every round and check every round's output, so a kernel that
remembers an earlier answer is caught. The machinery is device-agnostic: CPU tensors here,
stand-ins for the kernel's launcher in Python."""

from pathlib import Path

import pytest
import torch

from grader.spec import contract, exercises
from grader.run import timing, worker
from grader.run.runner.memory import Local, Remote


def _setup(exercise, shape, seed=7):
    """Inputs and outputs as buffers of this process (Local memory), and their FreshRounds."""
    dims = worker._dims(exercise, shape)
    mem = Local.plain(exercise)

    def alloc(name):
        dtype = torch.int32 if contract.is_mask(name) else torch.float32
        return mem.alloc(name, [dims[d] for d in contract.SHAPES[name]], dtype, 0)

    ins = {n: alloc(n) for n in worker._graded_inputs(exercise)}
    outs = {}
    for launcher in exercises.launchers(exercise):
        for name in contract.outputs(launcher):
            outs.setdefault(name, alloc(name))
    fr = worker.FreshRounds(exercise, shape, mem, ins, outs, seed)
    return {n: mem.tensor(h) for n, h in ins.items()}, {n: mem.tensor(h) for n, h in outs.items()}, fr


def _rounds(fr, kernel, n=5):
    """Run n rounds as time_gpu does: refresh, call, check. Returns the round that failed, or None."""
    for i in range(n):
        fr.refresh()
        kernel()
        if fr.check():
            return i + 1
    return None


def test_inputs_differ_from_round_to_round_and_outputs_are_poisoned():
    ins, outs, fr = _setup("tiled", (9, 7, 5))
    a0 = ins["A"].clone()
    fr.refresh()
    assert not torch.equal(a0, ins["A"]) and abs(ins["A"].mean()) < 1.0
    assert torch.isnan(outs["C"]).all()


def test_an_honest_gemm_passes_every_round():
    ins, outs, fr = _setup("tiled", (33, 17, 65))
    assert _rounds(fr, lambda: torch.matmul(ins["A"], ins["B"], out=outs["C"])) is None
    assert fr.rounds == 5 and fr.failure is None


def test_a_cached_answer_fails_in_the_second_round():
    ins, outs, fr = _setup("tiled", (33, 17, 65))
    cache = {}

    def cached():  # computes once, then copies its stored answer: as fast as a copy
        if "C" not in cache:
            cache["C"] = ins["A"] @ ins["B"]
        outs["C"].copy_(cache["C"])

    assert _rounds(fr, cached) == 2
    assert "in round 2 (inputs drawn afresh" in fr.failure and "elements wrong" in fr.failure


def test_skipping_work_leaves_the_poison_and_fails():
    ins, outs, fr = _setup("tiled", (20, 20, 20))
    calls = []

    def skips():  # works only on the first call (e.g. "same pointers as last time: nothing to do")
        if not calls:
            torch.matmul(ins["A"], ins["B"], out=outs["C"])
        calls.append(1)

    assert _rounds(fr, skips) == 2 and "never written" in fr.failure


def test_writing_an_input_is_named():
    ins, outs, fr = _setup("tiled", (8, 8, 8))

    def tampers():
        torch.matmul(ins["A"], ins["B"], out=outs["C"])
        ins["B"].zero_()

    assert _rounds(fr, tampers) == 1 and fr.inputs_changed == ["B"]


def test_relu_mask_and_gemm_relu_honest_kernels_pass():
    from grader.spec.checks import pack_mask

    ins, outs, fr = _setup("relu_mask", (6, 70))

    def relu_pair():
        outs["Y"].copy_(ins["X"].clamp_min(0))
        outs["mask"].copy_(pack_mask(ins["X"] > 0))
        torch.where(ins["X"] > 0, ins["dY"], torch.zeros_like(ins["dY"]), out=outs["dX"])

    assert _rounds(fr, relu_pair) is None, fr.failure

    ins, outs, fr = _setup("gemm_relu", (10, 40, 12))

    def fused():
        c = torch.addmm(ins["bias"], ins["A"], ins["B"]).clamp_min(0)
        outs["C"].copy_(c)
        outs["mask"].copy_(pack_mask(c > 0))

    assert _rounds(fr, fused) is None, fr.failure


def _fake_gpu_timing(monkeypatch):
    class FakeEvent:
        def __init__(self, **_):
            pass

        def record(self):
            pass

        def elapsed_time(self, other):
            return 1.0

    monkeypatch.setattr(timing.torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(timing.torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(timing, "flush_l2", lambda mode="write": None)


def test_time_gpu_calls_the_round_hooks_outside_the_timed_calls(monkeypatch):
    _fake_gpu_timing(monkeypatch)  # the hooks' order is what is tested
    log = []
    stop_after = 4
    t = timing.time_gpu(
        {"k": lambda: log.append("k"), "b": lambda: log.append("b")},
        warmup=1,
        min_runs=10,
        before_round=lambda: log.append("before"),
        after_round=lambda: log.append("after") or log.count("after") == stop_after,
    )
    assert log[:2] == ["k", "b"]  # warm-up
    # stopped early by after_round; each round starts with the next function (rotate, the default)
    assert log[2:] == ["before", "k", "b", "after", "before", "b", "k", "after"] * (stop_after // 2)
    assert t["k"].runs == stop_after


# ---------------------------------------------------------------- the whole timed path, on the CPU backend
KERNELS = Path(__file__).resolve().parent.parent / "kernels"

CACHED = """
#include <cuda_runtime.h>
__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int i = 0; i < K; ++i) s += A[row * K + i] * B[i * N + col];
        C[row * N + col] = s;
    }
}
// remembers its pointers: called again with the same ones, it returns at once (C keeps the
// previous answer)
extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    static const float* last = nullptr;
    if (A == last) return;
    last = A;
    k<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16), 0, stream>>>(A, B, C, M, N, K);
}
"""


@pytest.fixture(params=["here", "runner"])
def where(request):
    """Where the submission runs: a library of this process, or the native runner (as when graded)."""
    runners = []

    def place(mod, others=None):
        if request.param == "here":
            return mod
        from grader.run.runner.build import runner_binary
        from grader.run.runner.client import Runner

        r = Runner(str(runner_binary("cpu")), "cpu")
        runners.append(r)
        for lib, m in (others or {}).items():
            r.load(lib, str(m.build.path))
        r.load("sub", str(mod.build.path))
        return Remote(r, mod.exercise, "cpu", lib_path=str(mod.build.path))

    yield place
    for r in runners:
        r.close()


def test_time_kernels_checks_every_round_end_to_end(monkeypatch, where):
    from grader.run import binding

    _fake_gpu_timing(monkeypatch)
    mod = where(binding.load(KERNELS / "02_tiled.cu", "tiled", backend="cpu"))
    base = binding.load(KERNELS / "01_naive.cu", "tiled", backend="cpu")
    req = {"shape": [37, 29, 41], "seed": 5, "baseline": "lib", "max_seconds": 0.0}
    times, rounds = worker.time_kernels(mod, base, req, copy_device="cpu")
    assert set(times) == {"kernel", "baseline", "cublas"}
    assert rounds.failure is None and not rounds.inputs_changed and rounds.rounds == 10  # min_runs

    cheat = where(binding.load(CACHED, "tiled", backend="cpu"))
    _, rounds = worker.time_kernels(cheat, base, req, copy_device="cpu")
    assert rounds.rounds == 1 and "in round 1 (inputs drawn afresh" in rounds.failure


def test_time_kernels_relu_pair_and_fused_epilogue_end_to_end(monkeypatch, where):
    from grader.run import binding

    _fake_gpu_timing(monkeypatch)
    relu = where(binding.load(KERNELS / "06_relu_mask.cu", "relu_mask", backend="cpu"))
    times, rounds = worker.time_kernels(
        relu, None, {"shape": [9, 70], "seed": 3, "baseline": "torch", "max_seconds": 0.0}, copy_device="cpu"
    )
    assert {"kernel", "torch"} <= set(times) and rounds.failure is None, rounds.failure
    pass_ = binding.load(KERNELS / "07a_bias_relu_pass.cu", "bias_relu_pass", backend="cpu")
    fused = where(binding.load(KERNELS / "07_gemm_relu.cu", "gemm_relu", backend="cpu"), {"pass": pass_})
    times, rounds = worker.time_kernels(
        fused,
        pass_,
        {
            "shape": [20, 70, 12],
            "seed": 4,
            "baseline": "lib",
            "baseline_epilogue": "own_gemm_then_pass",
            "max_seconds": 0.0,
        },
        copy_device="cpu",
    )
    assert {"kernel", "baseline", "gemm_alone", "cublas"} <= set(times) and rounds.failure is None, rounds.failure


def test_gemm_relu_without_its_own_gemm_cannot_be_timed_and_says_what_to_add(monkeypatch, tmp_path):
    """The fusion is timed against the file's own `gemm` + a separate pass: a file without `gemm`
    gets a message naming the launcher to add (not a crash, not a silent other baseline)."""
    from grader.run import binding
    from grader.errors import LauncherError

    _fake_gpu_timing(monkeypatch)
    src = (KERNELS / "07_gemm_relu.cu").read_text()
    only_fused = src[: src.index('extern "C" void gemm(')]  # drop the plain-GEMM launcher (it is last)
    path = tmp_path / "fused_only.cu"
    path.write_text(only_fused)
    fused = binding.load(path, "gemm_relu", backend="cpu")
    assert not hasattr(fused.launch, "gemm")
    pass_ = binding.load(KERNELS / "07a_bias_relu_pass.cu", "bias_relu_pass", backend="cpu")
    with pytest.raises(LauncherError, match=r"extern \"C\" void gemm\(const float\* A"):
        worker.time_kernels(
            fused,
            pass_,
            {
                "shape": [20, 70, 12],
                "seed": 4,
                "baseline": "lib",
                "baseline_epilogue": "own_gemm_then_pass",
                "max_seconds": 0.0,
            },
        )


def test_warmup_ms_keeps_calling_before_timing(monkeypatch):
    _fake_gpu_timing(monkeypatch)
    calls = []
    timing.time_gpu({"k": lambda: calls.append(1)}, warmup=1, min_runs=1, max_runs=1, warmup_ms=30)
    assert len(calls) > 2  # 1 fixed warm-up + at least one more round of warm-up + 1 timed run


def test_rows_skipped_or_faked_at_the_timed_size_fail_every_time():
    """Four random rows per round would miss a kernel that skips a few rows most of the time;
    the poison scan and the column sums catch it in the first round."""
    ins, outs, fr = _setup("tiled", (256, 64, 96))

    def skips_rows():  # leaves 3 rows unwritten (still the poison)
        torch.matmul(ins["A"][:-3], ins["B"], out=outs["C"][:-3])

    assert _rounds(fr, skips_rows) == 1 and "never written" in fr.failure

    def fakes_rows():  # writes zeros in 3 rows instead of computing them
        torch.matmul(ins["A"], ins["B"], out=outs["C"])
        outs["C"][100:103] = 0.0

    ins, outs, fr = _setup("tiled", (256, 64, 96))
    assert _rounds(fr, fakes_rows) == 1 and ("column" in fr.failure or "elements wrong" in fr.failure)


def test_rotate_starts_each_round_with_the_next_function(monkeypatch):
    _fake_gpu_timing(monkeypatch)
    calls = []
    fns = {k: (lambda k=k: calls.append(k)) for k in "abc"}
    timing.time_gpu(fns, warmup=0, min_runs=3, max_runs=3)  # rotate is the default
    assert calls == list("abcbcacab")
    calls.clear()
    timing.time_gpu(fns, warmup=0, min_runs=2, max_runs=2, rotate=False)
    assert calls == list("abcabc")  # rotate=False keeps one order


@pytest.mark.gpu
def test_gpu_timing_leaves_out_the_hosts_launch_overhead():
    # a call whose host side takes 100 us before a 20 us GPU spin: the events time the spin, because
    # the head start keeps the GPU busy while the host queues the call
    import time

    timing.head_start(1)  # the clock rate is read once, outside the timed calls
    cycles = int(20 * timing._CYCLES_PER_US[torch.cuda.current_device()])

    def slow_host_call():
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 1e-4:
            pass
        torch.cuda._sleep(cycles)

    # no flush: it would give the host a head start of its own
    t = timing.time_gpu({"call": slow_host_call}, min_runs=20, max_runs=20, flush=False)["call"]
    assert t.median_ms < 0.06, t  # 0.1 ms or more if the host's 100 us were timed
    untimed = timing.time_gpu({"call": slow_host_call}, min_runs=20, max_runs=20, flush=False, head_start_us=0)
    assert untimed["call"].median_ms >= 0.1, untimed  # without the head start they are: the test can fail


@pytest.mark.gpu
def test_gpu_timing_clean_flush_does_not_charge_the_timed_call_for_write_backs():
    # after a "write" flush the L2 is full of dirty lines: a 32 MB read evicts 32 MB of them, and
    # writing those back doubles its memory traffic. The clean flush (the default) writes them back
    # before the timed call.
    x = torch.ones(8 << 20, device="cuda")
    t = {
        mode: timing.time_gpu({"sum": lambda: x.sum()}, min_runs=40, max_runs=40, flush=mode)["sum"].median_ms
        for mode in ("write", "clean")
    }
    assert t["clean"] < 0.9 * t["write"], t


def test_the_sandbagging_guard_times_gemm_relu_on_the_graded_inputs(monkeypatch):
    """gemm_relu's own `gemm` is held to the fused kernel's time, so that a slowed `gemm` cannot inflate
    the baseline. That comparison used a bias of 1e4 (every output kept), which a file could recognise
    (bias[0] > 1000: slow both, 1.96x "fusion" on the H200). Every timed call now sees the same inputs,
    drawn like the graded ones."""
    from types import SimpleNamespace as NS

    from grader.spec.checks import pack_mask

    _fake_gpu_timing(monkeypatch)
    seen = []

    def gemm_relu(A, B, bias, C, mask):
        seen.append(float(bias.abs().max()))
        c = torch.addmm(bias, A, B).clamp_min(0)
        C.copy_(c)
        mask.copy_(pack_mask(c > 0))

    def bias_relu_mask(C, bias, Y, mask):
        y = (C + bias).clamp_min(0)
        Y.copy_(y)
        mask.copy_(pack_mask(y > 0))

    def module(exercise, **launch):
        return NS(
            exercise=exercise,
            backend="cpu",
            device=torch.device("cpu"),
            launch=NS(**launch),
            check_error=lambda *a, **k: None,
        )

    fused = module("gemm_relu", gemm_relu=gemm_relu, gemm=lambda A, B, C: torch.matmul(A, B, out=C))
    req = {
        "shape": [12, 40, 9],
        "seed": 2,
        "baseline": "lib",
        "baseline_epilogue": "own_gemm_then_pass",
        "max_seconds": 0.0,
    }
    times, rounds = worker.time_kernels(fused, module("bias_relu_pass", bias_relu_mask=bias_relu_mask), req)
    assert rounds.failure is None and {"kernel", "baseline", "gemm_alone"} <= set(times)
    assert seen and max(seen) < 10.0, f"a timed call saw a bias no graded input has: {max(seen)}"


# ---------------------------------------------------------------- one runner request per round, per case
def _counting(runner):
    """Count the runner's requests by op (a batch's requests count as one request each)."""
    ops: dict[str, int] = {}
    sent = runner.request

    def request(op, arrays=None, **meta):
        ops[op] = ops.get(op, 0) + 1
        ops["bytes sent"] = ops.get("bytes sent", 0) + sum(a.nbytes for a in (arrays or {}).values())
        return sent(op, arrays, **meta)

    runner.request = request
    return ops


def test_a_timed_round_is_one_runner_request(monkeypatch, where):
    """Each timed round of the submission is one request to its runner: the fresh inputs, the poison,
    the timed call and every check of the round travel together (ten requests per round, each waiting
    for the GPU, doubled the worker's time on the H200)."""
    from grader.run import binding

    _fake_gpu_timing(monkeypatch)
    mod = where(binding.load(KERNELS / "02_tiled.cu", "tiled", backend="cpu"))
    if not isinstance(mod, Remote):
        pytest.skip("the runner's requests")
    base = binding.load(KERNELS / "01_naive.cu", "tiled", backend="cpu")
    ops = _counting(mod.runner)
    req = {"shape": [37, 29, 41], "seed": 5, "baseline": "lib", "max_seconds": 0.0}
    _, rounds = worker.time_kernels(mod, base, req, copy_device="cpu")
    assert rounds.failure is None and rounds.rounds == 10
    warmup = 3
    # the buffers, the first draw (before the warm-up calls), the warm-up, then one request per round
    assert ops.pop("bytes sent") == 0 and ops == {"alloc": 3, "round": 1 + rounds.rounds, "call": warmup}


def test_a_case_is_one_runner_request_and_its_inputs_cross_once(where):
    from grader.run import binding
    from grader.spec import checks

    mod = where(binding.load(KERNELS / "06_relu_mask.cu", "relu_mask", backend="cpu"))
    if not isinstance(mod, Remote):
        pytest.skip("the runner's requests")
    case = exercises.kind("relu_mask").make_case((70, 45), torch.Generator().manual_seed(1))
    ops = _counting(mod.runner)
    first = worker.run_case(mod, case.shape, case.inputs)
    sent = ops.pop("bytes sent")
    assert ops == {"batch": 1} and sent >= sum(t.numel() * 4 for t in case.inputs.values())
    second = worker.run_case(mod, case.shape, case.inputs)  # the next schedule: the same inputs, not sent again
    assert ops.pop("bytes sent") == 0 and ops == {"batch": 2}
    assert all(torch.equal(first[k].view(torch.int32), second[k].view(torch.int32)) for k in first)
    assert not checks.compare(case, "Y", first["Y"]) and not checks.compare(case, "dX", first["dX"])


def test_a_reused_buffer_still_shows_a_write_past_its_end(where):
    """A case's next schedule reuses its buffers when their guard zones were intact: a kernel that
    writes past the end only on its second call is still caught."""
    from grader.run import binding
    from grader.errors import KernelError

    src = (
        (KERNELS / "01_naive.cu")
        .read_text()
        .replace(
            'extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {',
            "__global__ void past(float* C, int n) { C[n] = 1.0f; }\nstatic int calls = 0;\n"
            'extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {\n'
            "    if (calls++ == 1) past<<<1, 1, 0, stream>>>(C, M * N);",
        )
    )
    assert "past<<<" in src
    mod = where(binding.load(src, "naive", backend="cpu"))
    case = exercises.kind("naive").make_case((9, 7, 5), torch.Generator().manual_seed(2))
    worker.run_case(mod, case.shape, case.inputs)
    with pytest.raises(KernelError, match="wrote past the end of C"):
        worker.run_case(mod, case.shape, case.inputs)


def test_the_runner_draws_a_rounds_inputs_poisons_and_checks_in_one_request(where):
    """op round, against the worker's own copies: inputs drawn bit for bit, outputs poisoned, input
    checksums, NaN counts and column sums as the worker computes them, and a row sample that the
    runner draws after the round (so it is not in the request a kernel could read)."""
    from grader.run import binding
    from grader.run.runner import rng
    from grader.run.runner.memory import checksum

    mod = where(binding.load(KERNELS / "01_naive.cu", "naive", backend="cpu"))
    if not isinstance(mod, Remote):
        pytest.skip("the runner's requests")
    a = mod.alloc("A", (300, 8), torch.float32, 0)
    c = mod.alloc("C", (300, 5), torch.float32, 0)
    samples = set()
    for seed in (11, 12, 13):
        spec = {
            "draw": [{"id": "A", "seed": seed, "relu": False}],
            "poison": [{"id": "C", "word": worker._bits(worker.POISON_BITS)}],
            "stats": [{"id": "A", "cols": 8, "colsum": True}, {"id": "C", "cols": 5}],
            "rows": {"m": 300, "n": 4, "of": [{"id": "A", "cols": 8}]},
        }
        reply = mod.round([], spec)
        want = rng.fill_(torch.empty(300, 8), seed)
        assert torch.equal(mod.read(a), want) and torch.isnan(mod.read(c)).all()
        st = reply["stats"]
        assert (int(st[0]["sum"]), int(st[0]["weighted"])) == checksum(want) and int(st[0]["nonfinite"]) == 0
        assert int(st[1]["nonfinite"]) == 300 * 5
        assert torch.allclose(torch.from_numpy(reply["_arrays"]["colsum0"]), want.double().sum(0))
        rows = reply["rows"]
        assert rows == sorted(set(rows)) and len(rows) == 4 and all(0 <= r < 300 for r in rows)
        assert torch.equal(torch.from_numpy(reply["_arrays"]["rows0"]).view(torch.float32), want[rows])
        samples.add(tuple(rows))
    assert len(samples) > 1  # drawn afresh each time


@pytest.mark.parametrize(
    "cheat, said",
    [
        ("const_cast<float*>(B)[7] += 1.0f;", "wrote to its input B during the timed"),  # an input changed
        ("C[(M - 1) * N] = 0.0f;", "wrong in the timed runs"),  # one element wrong (the column sums see it)
        ('C[(M / 2) * N + 3] = __builtin_nanf("");', "wrong in the timed runs"),  # one element unwritten
    ],
)
def test_a_host_kernel_wrong_only_at_the_timed_size_fails_through_the_runner(cheat, said):
    """cpu_blocked is timed in the runner on this machine (grader.run.host): each round's checks come back
    with its one request, and catch what the kernel does only at the timed size."""
    from grader.judge import grade

    blocked = (KERNELS / "00_cpu_blocked.cu").read_text()
    head = 'extern "C" void gemm_cpu(const float* A, const float* B, float* C, int M, int N, int K) {'
    src = blocked.replace(head, "static void honest" + head[len('extern "C" void gemm_cpu') :]) + (
        f"\n{head}\n    honest(A, B, C, M, N, K);\n    if ((long)M * N * K > 50000000) {{ {cheat} }}\n}}\n"
    )
    r = grade.grade("cpu_blocked", src)
    assert r.correct is False and said in r.message, r.message
