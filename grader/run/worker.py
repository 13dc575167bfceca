"""The worker: a child process that drives one verdict's native runner (grader/run/runner).

    python -m grader.run.worker RESULT_FD      (request on stdin, see grader.run.sandbox)

It starts the runner, which alone loads the submission's library (a process with no interpreter,
torch or BLAS in it), runs each case there on the inputs it is sent (outputs poisoned first, inside
guard zones) and sends the raw outputs back; the parent decides what is right. On a GPU it then times
the kernel (the runner times its own rounds with CUDA events), its baseline and cuBLAS (timed here),
round-robin, with inputs drawn afresh before every round (FreshRounds) and every round's output
checked, and reports the times and the first bad round. A crash in the runner ends this worker the
same way, so the parent sees it as before; nothing else is lost.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import resource
import signal
import sys
import traceback
from pathlib import Path

import numpy as np
import torch

from grader.run import binding, protocol
from grader.spec import checks, contract, exercises
from grader.compile.cpu import counters
from grader.run.binding import KernelModule
from grader.spec.checks import INPUT_GUARD_BITS, POISON_BITS, POISON_MASK
from grader.errors import GraderError, KernelError, LauncherError
from grader.run.runner import rng
from grader.run.runner.client import STREAM, Runner, RunnerDied
from grader.run.runner.memory import Handle, Local, Remote, checksum, digest
from grader.compile.toolchain import Build


GUARD = 1024  # elements of poison before and after each buffer a test call gets
OUTPUT_FILE_CAP = 64 << 20  # bytes any file written by the worker (its stdout log) may grow to


def _load_local(path: str, exercise: str, backend: str, key: str | None = None) -> KernelModule:
    """A library of the grader's own (a baseline) in this process: grader.run.sandbox passes it as
    /proc/self/fd/N, with its build key. The submission's library never loads here (the runner)."""
    lib = Path(path)
    return KernelModule(Build(path=lib, backend=backend, exercise=exercise, key=key or lib.parent.name, cached=True))


def _poison_word(dtype: torch.dtype, is_input: bool = False) -> int:
    """The int32 bit pattern of an unwritten output (or of an input's guard zone). Inputs' guards
    differ from outputs' poison, so a value computed from an out-of-bounds read (a NaN keeps its
    payload) cannot pass for the untouched guard of an output."""
    return INPUT_GUARD_BITS[dtype] if is_input else (POISON_BITS if dtype == torch.float32 else POISON_MASK)


def _damage(name: str, mem, h: Handle) -> str | None:
    """How a kernel wrote outside `name`, judged by its guard zones (counted where the buffer lives);
    None when it did not."""
    return _guard_problem(name, mem.guards(h), h)


def _guard_problem(name: str, g: dict, h: Handle) -> str | None:
    """_damage on the guard counts `g` (mem.guards(h), or a batch's)."""
    if g["after"]:
        return (
            f"wrote past the end of {name}: {g['after']} element(s) in the {h.after} after it "
            f"(the first at index {h.numel + g['first_after']} of a {h.numel}-element array)"
        )
    if g["before"]:
        return f"wrote before the start of {name}: {g['before']} element(s) at negative indices"
    return None


def _bits(word: int) -> int:
    word &= 0xFFFFFFFF
    return word - (1 << 32) if word >= 1 << 31 else word


def _dtype(name: str) -> torch.dtype:
    return torch.int32 if contract.is_mask(name) else torch.float32


def _alloc(
    mem, name: str, dims: dict[str, int], content=None, after: int = GUARD, buffer_id: str | None = None
) -> Handle:
    """A guarded buffer for contract argument `name`: a copy of `content` (an input, inside its input
    guard words) or poisoned (an output, inside the output poison)."""
    shape = [dims[d] for d in contract.SHAPES[name]]
    dt = _dtype(name)
    word = _poison_word(dt, content is not None)
    h = mem.alloc(buffer_id or name, shape, dt, word, content, GUARD, after)
    if content is None:
        h.words["guard"] = word
    return h


def _dims(exercise: str, shape) -> dict[str, int]:
    return exercises.kind(exercise).dims(shape)


def _launch_args(launcher: contract.Launcher, bufs: dict[str, Handle], dims: dict[str, int]) -> list:
    """The launcher's arguments in order: buffers, the dimensions, the stream."""
    return [bufs[n] if n in bufs else (STREAM if n == "stream" else dims[n]) for _, n in launcher.params]


def _call(mem, lib: str, launcher: contract.Launcher, bufs: dict[str, Handle], dims: dict[str, int]) -> None:
    err = mem.call(
        lib, launcher.name, _launch_args(launcher, bufs, dims), outs={bufs[n].name for n in contract.outputs(launcher)}
    )
    if err:
        raise KernelError(err)


def run_case(
    mod, shape, inputs: dict[str, torch.Tensor], digests: dict[str, str] | None = None
) -> dict[str, torch.Tensor]:
    """Call every launcher of the exercise once, in order, and return their outputs.

    mod: a grader.run.runner.memory Local or Remote (or a KernelModule, run here). Each launcher's outputs
    are read as soon as it has run, so a later launcher cannot do an earlier one's work (a relu_forward
    that leaves everything to relu_backward fails). Before the next launcher runs, every buffer it is
    not given is poisoned: the earlier launchers' outputs and the inputs only they take (relu_backward
    then runs with X and Y poisoned, on the mask the grader made, inputs["mask"], not on forward's). A
    launcher's input missing from `inputs` is an earlier launcher's output (relu_backward reads
    forward's mask). If `digests` is given, it receives the hash of every input as it is after the last
    launcher that takes it (a kernel that writes its inputs shows). The whole case is one batch (one
    runner request), which stops at a launcher's error."""
    mem = mod if hasattr(mod, "alloc") else Local(mod)
    dims = _dims(mem.exercise, shape)
    launchers = exercises.launchers(mem.exercise)
    # An input's guard after it covers a read with a wrong row stride (index up to max(dim)^2): such a
    # read then finds the guard word (a NaN whose payload the checks recognise), never another buffer
    # (an output: the CPU backend would call that read a race, or a value the kernel wrote: no sign).
    # (capped at 2^24 elements, 64 MB: a long shape's M = 70000 would otherwise ask for 20 GB)
    after = max(GUARD, min(max(dims.values()) ** 2, 1 << 24))
    batch = mem.batch()
    # buffer ids: an input and an output may share a name (relu_mask's mask: the grader's, forward's)
    guarded = {k: _alloc(batch, k, dims, v, after, buffer_id=f"in:{k}") for k, v in inputs.items()}
    produced: dict[str, Handle] = {}
    every_output: list[tuple[str, Handle]] = []
    errors, reads, hashes = [], {}, {}
    keys = {(l.name, n): key for l, n, key in exercises.result_keys(mem.exercise)}  # mlp_step: gemm's C
    for i, launcher in enumerate(launchers):
        outs = {
            n: _alloc(batch, n, dims, buffer_id=f"out:{keys[launcher.name, n]}") for n in contract.outputs(launcher)
        }
        given = {n: guarded.get(n) or produced[n] for n in contract.inputs(launcher)}
        args = _launch_args(launcher, given | outs, dims)
        errors.append(batch.call("sub", launcher.name, args, outs={h.name for h in outs.values()}))
        for n, h in outs.items():
            reads[keys[launcher.name, n]] = batch.read(h)  # read now: nothing later may change it
            produced.setdefault(n, h)
            every_output.append((n, h))
        later = {n for l in launchers[i + 1 :] for n in contract.inputs(l)}
        for n, h in guarded.items():
            if n not in later and n not in hashes:
                hashes[n] = batch.read(h)
                if later:
                    batch.fill(h, _poison_word(h.dtype))
        for n, h in produced.items():
            if later and (n not in later or n in guarded):
                batch.fill(h, _poison_word(h.dtype))
    guards = [(name, h, batch.guards(h)) for name, h in list(guarded.items()) + every_output]
    batch.run()
    for e in errors:
        if e.value:
            raise KernelError(e.value)
    for name, h, g in guards:
        problem = _guard_problem(name, g.value, h)
        if problem:
            raise KernelError(problem)
    if digests is not None:
        digests.update({n: digest(t.value) for n, t in hashes.items()})
    return {k: t.value for k, t in reads.items()}


class Ops:
    """The exercise's launchers as functions of tensors (grader.spec.mlp's training step calls them so), run
    in `mem` on guarded copies: out = ops.gemm(A, B); ops.device is where the results come back."""

    def __init__(self, mem):
        self.mem, self.exercise, self.device = mem, mem.exercise, mem.device
        for launcher in exercises.launchers(mem.exercise) + exercises.timing_launchers(mem.exercise):
            setattr(self, launcher.name, self._op(launcher))

    def _op(self, launcher: contract.Launcher):
        def run(*args: torch.Tensor):
            ins = dict(zip(contract.inputs(launcher), args))
            dims: dict[str, int] = {}
            for n, t in ins.items():
                dims.update(zip(contract.SHAPES[n], t.shape))
            dims.setdefault("W", contract.mask_words(dims["N"]))
            bufs = {n: _alloc(self.mem, n, dims, t.detach().contiguous()) for n, t in ins.items()}
            outs = {n: _alloc(self.mem, n, dims) for n in contract.outputs(launcher)}
            _call(self.mem, "sub", launcher, bufs | outs, dims)
            for n, h in list(bufs.items()) + list(outs.items()):
                problem = _damage(n, self.mem, h)
                if problem:
                    raise KernelError(f"{launcher.name}: {problem}")
            res = [self.mem.read(h).to(args[0].device) for h in outs.values()]
            return res[0] if len(res) == 1 else tuple(res)

        run.__name__ = launcher.name
        return run

    def check_error(self, what: str, synchronize: bool = False) -> None:
        self.mem.check_error(what)


class FreshRounds:
    """Fresh inputs for every round of the timed runs, and a check of every round's output.

    A kernel that remembers an earlier answer (a cache keyed on pointers or on a checksum of
    the inputs, or work skipped when the inputs look unchanged) would be timed doing nothing
    if the inputs stayed the same. So before each round (outside the timed region) the inputs
    are redrawn in place from a fresh seed (grader.run.runner.rng: the memory draws them where they
    live, and this process draws the same numbers into its own copy, `copies`) and the kernel's
    outputs are poisoned; after it, a few random rows of its outputs are compared with a float64
    reference of that round's inputs, with the same tolerance as the correctness cases, every
    output element is checked for NaN/inf (unwritten) and a GEMM's column sums against (1^T A) B;
    the inputs must still hold what was drawn (an exact checksum).

    Bound to the runner's timed calls (`bound`, grader.run.runner.memory.Remote.timed), a round is one
    runner request: the draws and poison go with the round's first runner call, the checks come
    back with the submission's (observe), and the runner draws the sampled rows after the kernel ran.
    Otherwise refresh() and check() ask the memory directly (Local: the grader's tests).
    """

    def __init__(self, exercise: str, shape, mem, ins: dict, outs: dict, seed: int, copy_device="cpu", n_rows: int = 4):
        self.exercise, self.shape, self.mem, self.ins, self.outs = exercise, tuple(shape), mem, ins, outs
        self.copies = {n: torch.empty(h.shape, dtype=h.dtype, device=copy_device) for n, h in ins.items()}
        self.seed, self.draws = seed, 0
        self.pick = np.random.default_rng(seed)
        self.n_rows = n_rows
        self.rounds = 0
        self.failure: str | None = None  # what went wrong in the first bad round
        self.inputs_changed: list[str] = []
        self.bound = False
        self.pending: dict = {}  # the draws and poison the runner has not made yet
        self.seen: dict | None = None  # what this round's runner requests observed
        self.refresh()

    def _seed(self, k: int) -> int:
        raw = hashlib.sha256(f"{self.seed}:{self.draws}:{k}".encode()).digest()
        return int.from_bytes(raw[:8], "little") & ((1 << 63) - 1)

    def refresh(self) -> None:
        """New inputs (in place: the kernel keeps its pointers), poisoned outputs."""
        self.draws += 1
        draw = []
        for k, (name, h) in enumerate(self.ins.items()):
            seed, relu = self._seed(k), name == "X"
            draw.append({"id": h.name, "seed": seed, "relu": relu})
            rng.fill_(self.copies[name], seed, relu)
        poison = [{"id": h.name, "word": _bits(_poison_word(h.dtype))} for h in self.outs.values()]
        self.expect = {n: checksum(c) for n, c in self.copies.items()}
        self.pending, self.seen = {"draw": draw, "poison": poison}, None
        if self.bound:
            return  # made by the round's first runner request
        if hasattr(self.mem, "round"):  # the runner: one request
            self.mem.round([], self.pending)
        else:
            by_id = {h.name: h for h in list(self.ins.values()) + list(self.outs.values())}
            for d in draw:
                self.mem.random(by_id[d["id"]], d["seed"], d["relu"])
            for p in poison:
                self.mem.fill(by_id[p["id"]], p["word"])
        self.pending = {}

    def round_spec(self, checked: bool) -> dict:
        """What a runner request of this round does besides its calls: the pending draws and poison, then
        the input checksums (every runner call: none may change the inputs) and, if `checked` (the
        submission's timed call), the outputs' checks and a row sample."""
        spec, self.pending = self.pending, {}
        stats = [{"id": h.name, "cols": h.shape[-1]} for h in self.ins.values()]
        if checked:
            colsum = exercises.kind(self.exercise).linear
            stats += [
                {"id": h.name, "cols": h.shape[-1], "colsum": colsum and n == "C"}
                for n, h in self.outs.items()
                if h.dtype == torch.float32
            ]
            of = [{"id": h.name, "cols": h.shape[-1]} for h in self.outs.values()]
            spec = spec | {"rows": {"m": self.shape[0], "n": self.n_rows, "of": of}}
        return spec | {"stats": stats}

    def observe(self, reply: dict, spec: dict) -> None:
        """A runner reply to round_spec's request (grader.run.runner.client.Runner.round)."""
        seen = self.seen = self.seen or {"changed": []}
        names = {h.name: n for n, h in list(self.ins.items()) + list(self.outs.items())}
        for k, (want, got) in enumerate(zip(spec["stats"], reply["stats"])):
            n = names[want["id"]]
            if n in self.ins and (int(got["sum"]), int(got["weighted"])) != self.expect[n]:
                seen["changed"] += [] if n in seen["changed"] else [n]
            elif n in self.outs:
                seen.setdefault("nonfinite", {})[n] = int(got["nonfinite"])
                if want.get("colsum"):
                    seen["colsum"] = torch.from_numpy(reply["_arrays"][f"colsum{k}"])
        if "rows" in spec:
            seen["rows"] = [int(r) for r in reply["rows"]]
            seen["row_values"] = {
                names[o["id"]]: torch.from_numpy(reply["_arrays"][f"rows{k}"]).view(self.outs[names[o["id"]]].dtype)
                for k, o in enumerate(spec["rows"]["of"])
            }

    def _observe_here(self) -> dict:
        """The round's checks asked of the memory, one request each (no runner request brought them)."""
        m = self.shape[0]
        rows = sorted(self.pick.choice(m, size=min(self.n_rows, m), replace=False).tolist())
        changed = [
            n for n, h in self.ins.items() if tuple(self.mem.stats(h)[k] for k in ("sum", "weighted")) != self.expect[n]
        ]
        float_outs = {n: h for n, h in self.outs.items() if h.dtype == torch.float32}
        stats = {
            n: self.mem.stats(h, colsum=n == "C" and exercises.kind(self.exercise).linear)
            for n, h in float_outs.items()
        }
        return {
            "changed": changed,
            "rows": rows,
            "row_values": {n: self.mem.rows(h, rows) for n, h in self.outs.items()},
            "nonfinite": {n: st["nonfinite"] for n, st in stats.items()},
            "colsum": stats["C"].get("colsum") if "C" in stats else None,
        }

    def check(self) -> bool:
        """Check the round just timed; True to stop timing (a round failed)."""
        self.rounds += 1
        obs, self.seen = self.seen or {"changed": []}, None
        if "rows" not in obs:  # no runner request brought the checks
            here = self._observe_here()
            obs = here | {"changed": obs["changed"] + [n for n in here["changed"] if n not in obs["changed"]]}
        if obs["changed"]:
            self.inputs_changed = obs["changed"]
            return True
        rows, m = obs["rows"], self.shape[0]
        if len(rows) != min(self.n_rows, m) or len(set(rows)) != len(rows) or not all(0 <= r < m for r in rows):
            self.failure = f"in round {self.rounds}: the runner's sample of rows came back malformed ({rows})"
            return True
        case = _to_cpu(exercises.kind(self.exercise).make_case_from(self.shape, self.copies, rows=rows))
        for name in case.expected:
            mm = checks.compare(case, name, obs["row_values"][name])
            if mm:
                self.failure = (
                    f"in round {self.rounds} (inputs drawn afresh every round), rows {rows}:\n"
                    + mm.describe(case.shape)
                )
                return True
        # the rows above are a sample; these look at every element, cheaply
        unwritten = [n for n, bad in obs["nonfinite"].items() if bad]
        if unwritten:  # the poison left anywhere (rows skipped at the timed size), or a NaN/inf
            self.failure = (
                f"in round {self.rounds} (inputs drawn afresh every round): {', '.join(unwritten)} "
                "holds NaN/inf or elements never written"
            )
            return True
        return exercises.kind(self.exercise).linear and not self._column_sums_ok(obs["colsum"])

    def _column_sums_ok(self, got: torch.Tensor) -> bool:
        """Every row counts: C's column sums must equal (1^T A) B, within the sum of the rows' tolerances
        (a kernel that writes plausible values in a few rows it skipped fails here, not only by chance)."""
        a, b = self.copies["A"].double(), self.copies["B"].double()
        expected = (a.sum(0) @ b).cpu()
        tol = checks.gemm_tolerance(a.abs().sum(0) @ b.abs(), self.shape[2]).cpu()
        bad = ((got.double() - expected).abs() > tol).nonzero().flatten()
        if len(bad):
            self.failure = (
                f"in round {self.rounds} (inputs drawn afresh every round): the sums of "
                f"{len(bad)} of C's columns (e.g. column {int(bad[0])}) are off: some rows are wrong"
            )
        return not len(bad)


def _to_cpu(case: checks.Case) -> checks.Case:
    move = lambda d: {k: v.cpu() for k, v in d.items()}  # noqa: E731
    return checks.Case(case.shape, {}, move(case.expected), move(case.tolerance), move(case.either))


def _graded_inputs(exercise: str) -> list[str]:
    """The inputs the launchers take that no earlier launcher writes (relu_backward's mask is forward's)."""
    made, names = set(), []
    for launcher in exercises.launchers(exercise):
        names += [n for n in contract.inputs(launcher) if n not in made and n not in names]
        made.update(contract.outputs(launcher))
    return names


def time_kernels(mem, baseline: KernelModule | None, req: dict, copy_device=None) -> tuple[dict, FreshRounds]:
    """Time the kernel, its baseline and the library reference, round-robin, on inputs drawn
    afresh for every round (FreshRounds: every round's output is checked too).

    mem: where the submission runs (grader.run.runner.memory.Remote: the runner, which times its own
    calls with CUDA events; Local in the grader's tests). The baseline file and the library reference
    run here, in the grader's process, on this process's copy of the inputs (FreshRounds.copies).
    req["baseline"]: "lib" (the baseline kernel file loaded as `baseline`), "torch" (the
    library reference is the baseline: relu_mask's torch pair) or absent.
    req["baseline_epilogue"]: "own_gemm_then_pass": the baseline is the submission's own `gemm`
    followed by the baseline file's pass, both where the submission runs (library "pass"), so that the
    pass reads the submission's C; `gemm_alone` is timed too (a `gemm` slowed to inflate the baseline).
    """
    from grader.run.timing import time_gpu

    own_pass = req.get("baseline_epilogue") == "own_gemm_then_pass"
    if not hasattr(mem, "alloc"):  # a KernelModule of this process (the grader's tests, benchmarks)
        mem = Local(mem, {"pass": baseline} if own_pass else None)
    copy_device = copy_device or (mem.device if isinstance(mem, Local) else "cuda")
    exercise = mem.exercise
    shape = tuple(req["shape"])
    dims = _dims(exercise, shape)
    alloc = lambda n, buffer_id=None: mem.alloc(  # noqa: E731
        buffer_id or n, [dims[d] for d in contract.SHAPES[n]], _dtype(n), _poison_word(_dtype(n))
    )
    bufs = {n: alloc(n) for n in _graded_inputs(exercise)}
    outs: dict[str, Handle] = {}
    steps = []
    for launcher in exercises.launchers(exercise):
        for n in contract.outputs(launcher):
            outs.setdefault(n, alloc(n))
        steps.append(("sub", launcher.name, _launch_args(launcher, bufs | outs, dims)))
    rounds = FreshRounds(exercise, shape, mem, bufs, outs, req["seed"], copy_device)
    calls = {"kernel": mem.timed(steps, rounds, checked=True)}
    if own_pass:
        calls |= _own_gemm_then_pass(mem, rounds, bufs, dims, alloc)
    elif baseline is not None:
        calls["baseline"] = _file_baseline(baseline, rounds.copies, dims)
    before_round = rounds.refresh
    reference, refresh_reference = _library_reference(exercise, rounds.copies, dims, copy_device)
    calls |= reference
    if refresh_reference:

        def before_round():
            rounds.refresh()
            refresh_reference()

    times = time_gpu(
        calls, max_seconds=req.get("max_seconds", 10.0), before_round=before_round, after_round=rounds.check
    )
    mem.check_error("timed runs")
    if req.get("baseline") == "torch" and "torch" in times:
        times["baseline"] = times["torch"]
    return {k: t.as_dict() for k, t in times.items()}, rounds


def _own_gemm_then_pass(mem, rounds: FreshRounds, bufs: dict, dims: dict, alloc) -> dict:
    """gemm_relu's baseline: the submission's own `gemm`, then the baseline file's separate pass on its C
    (library "pass", in the runner); and that `gemm` alone."""
    gemm = contract.GEMM
    if not mem.has("sub", gemm.name):
        raise LauncherError(
            "the timed run compares gemm_relu with your own GEMM followed by a separate bias + ReLU + mask "
            'pass, so the file must also define\n    extern "C" '
            + gemm.signature
            + "\n(your kernel without the epilogue: C = A . B)"
        )
    mine = {n: alloc(n, f"{n} (gemm)") for n in ("C", "Y", "mask")}
    alone = ("sub", gemm.name, _launch_args(gemm, bufs | {"C": mine["C"]}, dims))
    pass_args = _launch_args(
        contract.BIAS_RELU_MASK, {"C": mine["C"], "bias": bufs["bias"], "Y": mine["Y"], "mask": mine["mask"]}, dims
    )
    return {
        "baseline": mem.timed([alone, ("pass", contract.BIAS_RELU_MASK.name, pass_args)], rounds),
        "gemm_alone": mem.timed([alone], rounds),
    }


def _file_baseline(baseline: KernelModule, ins: dict, dims: dict):
    """The baseline kernel file's launchers, here, on this process's copy of the inputs."""
    local = Local(baseline)
    made = {}
    for launcher in exercises.launchers(baseline.exercise):
        for n in contract.outputs(launcher):
            made.setdefault(
                n, local.alloc(n, [dims[d] for d in contract.SHAPES[n]], _dtype(n), _poison_word(_dtype(n)))
            )
    args = [
        [ins[n] if n in ins else local.tensor(made[n]) for _, n in contract.tensor_params(l)]
        for l in exercises.launchers(baseline.exercise)
    ]
    fns = [getattr(baseline.launch, l.name) for l in exercises.launchers(baseline.exercise)]
    return lambda: [f(*a) for f, a in zip(fns, args)]


def _library_reference(exercise: str, ins: dict, dims: dict, copy_device) -> tuple[dict, object]:
    """The library's version, for the ratio quoted beside the baseline's: cuBLAS (a GEMM; addmm + relu
    for the fused epilogue) or torch's ReLU pair; and what must run before each round (or None)."""
    kind = exercises.kind(exercise)
    if kind.cublas:
        c = torch.empty(dims["M"], dims["N"], device=copy_device)
        torch.backends.cuda.matmul.allow_tf32 = False
        if kind.epilogue:
            return {"cublas": lambda: torch.addmm(ins["bias"], ins["A"], ins["B"], out=c).relu_()}, None
        return {"cublas": lambda: torch.matmul(ins["A"], ins["B"], out=c)}, None
    if kind.torch_pair:
        # torch's pair with the activation it saves: computed before the round, so that its backward reads
        # Y from memory as it would in training (reading the Y relu() just wrote finds part of it in L2)
        saved = torch.empty_like(ins["X"])

        def torch_pair():
            return torch.relu(ins["X"]), torch.ops.aten.threshold_backward(ins["dY"], saved, 0)

        def refresh():
            saved.copy_(torch.relu(ins["X"]))

        refresh()
        return {"torch": torch_pair}, refresh
    return {}, None


def _device() -> dict:
    """The GPU, and a generous bound on its float32 peak: 128 FMA lanes per SM at 2.5 GHz."""
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "name": p.name,
        "sms": p.multi_processor_count,
        "peak_fp32_tflops": p.multi_processor_count * 128 * 2 * 2.5e9 / 1e12,
    }


def _start_runner(req: dict, early: Runner | None = None) -> tuple[Runner, Remote]:
    """The native runner with the submission's library (and gemm_relu's separate pass) in it, confined
    before it loads either (grader.run.seccomp: it may signal, trace or re-limit no process, not even this one).
    early: one started with the warm-up (its CUDA context is up), used if it is of this backend."""
    if early is not None and early.backend != req["backend"]:
        early.close()
        early = None
    runner = early or Runner(req["runner"], req["backend"], env=dict(os.environ))
    from grader.run import seccomp

    if seccomp.available() == "":
        runner.confine(seccomp.program(runner.proc.pid))
    if req.get("timing") and req.get("baseline_lib") and req["timing"].get("baseline_epilogue") == "own_gemm_then_pass":
        runner.load("pass", req["baseline_lib"])  # first: the submission's code has not run yet
    runner.load("sub", req["lib"])
    missing = runner.missing("sub", [l.name for l in exercises.launchers(req["exercise"])])
    if missing:
        runner.close()
        raise LauncherError(binding.missing_launcher_message(req["exercise"], missing[0]))
    mem = Remote(
        runner, req["exercise"], req["backend"], device=not exercises.is_host(req["exercise"]), lib_path=req["lib"]
    )
    return runner, mem


def _die_like(e: RunnerDied) -> None:
    """The runner died (the kernel crashed it): end this worker the same way, so the parent sees the
    crash it would have seen with the kernel in this process (its messages, exit, output tail)."""
    print(f"grader: {e}", file=sys.stderr, flush=True)
    traceback.print_exc()
    sys.stdout.flush()
    rc = e.returncode
    if rc is not None and rc < 0:
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
    os._exit(rc if rc else 4)


def serve(result_fd: int, stdin_fd: int = 0) -> int:
    """Read the request and all cases, then run them, streaming one message per result."""
    first = protocol.recv(stdin_fd)
    early = None  # the runner, started while the compiler runs
    if first is not None and "warm" in first[0]:  # started while the compiler runs (grader.run.sandbox.start_worker)
        spec = first[0]["warm"]
        if "runner" in first[1]:
            try:
                early = Runner(
                    _in_memory(first[1]["runner"], "runner"), spec.get("backend", "cuda"), env=dict(os.environ)
                )
            except GraderError:
                early = None  # the run proper starts one, and reports what is wrong
        warm_up(spec)
        first = protocol.recv(stdin_fd)
    if first is None:
        return 3
    req, _ = first
    token = req.get("token")  # the parent drops any message without it (one forged by the kernel's code)
    for where in req.get("files", []):  # each library, as bytes: loaded from memory, no file system needed
        blob = protocol.recv(stdin_fd)
        if blob is None:
            return 3
        d = req
        for k in where[:-1]:
            d = d[k]
        d[where[-1]] = _in_memory(blob[1]["bytes"], where[-1])

    def send(meta: dict, arrays: dict | None = None) -> None:
        protocol.send(result_fd, meta | {"token": token}, arrays)

    cases = []
    while (m := protocol.recv(stdin_fd)) is not None:
        cases.append(m)
    os.close(stdin_fd)
    if req.get("gpu_lock"):  # batch --per-gpu: wait for the GPU; held until this process exits
        lock_fd = os.open(req["gpu_lock"], os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        send({"gpu_lock": "held"})
    if (
        req.get("backend") == "cpu"
    ):  # the CPU runtime then reports how far a long launch got (grader/compile/cpu/progress.py)
        os.environ["CUDA_EMU_PROGRESS"] = "1"
    try:
        base = None
        if (
            req.get("timing")
            and req.get("baseline_lib")
            and req["timing"].get("baseline_epilogue") != "own_gemm_then_pass"
        ):
            base = _load_local(req["baseline_lib"], req["baseline_exercise"], "cuda", req.get("baseline_key"))
        runner, mem = _start_runner(req, early)
    except RunnerDied as e:
        _die_like(e)
    except GraderError as e:
        send({"fatal": str(e)})
        return 0
    try:
        rc = _serve_cases(req, cases, mem, base, send)
        send({"done": True})  # every result is out: the parent need not wait for this process to end
        return rc
    except RunnerDied as e:
        _die_like(e)
    finally:
        runner.close()
    return 0


def _serve_cases(req: dict, cases: list, mem: Remote, base, send) -> int:
    for meta, arrays in cases:
        inputs = {k: torch.from_numpy(v) for k, v in arrays.items()}
        if meta.get("step"):  # mlp_step: one training step through grader.spec.mlp on the launchers
            if not _run_step(mem, inputs, send):
                return 0
            continue
        for seed in counters.schedules(req, meta["case"], meta["shape"]):
            mem.configure_cpu(schedule_seed=seed)
            digests: dict[str, str] = {}
            # the first run of every case of a counted grade records (the same cost in each); the profiled cases are judged
            recording, judged = counters.counting(req, meta["case"], seed, mem)
            try:
                outs = run_case(mem, meta["shape"], inputs, digests)
            except RunnerDied:
                raise
            except GraderError as e:
                if recording:
                    counters.take(mem)
                send({"case": meta["case"], "schedule": seed, "error": str(e)})
                if mem.backend == "cuda":
                    return 0  # a CUDA error poisons the context: nothing after it is trustworthy
                continue
            counts = counters.take(mem) if recording else None
            send(
                {"case": meta["case"], "schedule": seed, "inputs_sha256": digests}
                | ({"profile": counts} if judged else {}),
                {k: v.numpy() for k, v in outs.items()},
            )
    if req.get("timing") and req["timing"].get("host"):  # a host exercise: timed on the CPU (grader.run.host)
        from grader.run import host

        try:
            times, rounds = _time_host(mem, req["timing"], req["exercise"])
            send(
                {
                    "timing": times,
                    "inputs_changed": rounds.inputs_changed,
                    "timed_failure": rounds.failure,
                    "rounds": rounds.rounds,
                    "device": {"name": host.cpu_name()},
                }
            )
        except RunnerDied:
            raise
        except GraderError as e:
            send({"timing_error": str(e)})
    elif req.get("timing") and mem.backend == "cuda":
        try:
            times, rounds = time_kernels(mem, base, req["timing"])
            send(
                {
                    "timing": times,
                    "inputs_changed": rounds.inputs_changed,
                    "timed_failure": rounds.failure,
                    "rounds": rounds.rounds,
                    "device": _device(),
                }
            )
        except LauncherError as e:  # correct, but a launcher the timed comparison needs is missing
            send({"timing_unavailable": str(e)})
        except RunnerDied:
            raise
        except GraderError as e:
            send({"timing_error": str(e)})
    return 0


def _time_host(mem, req: dict, exercise: str) -> tuple[dict, FreshRounds]:
    """The worker's speed measurement of a host exercise (grader.run.host): the submission's optimised build
    (req["lib"], loaded as library "fast" where the submission runs: the native runner, whose clock times
    it), its baseline (req["baseline_lib"], in this process) and numpy's matmul (for information), on
    inputs drawn afresh every round. Here, not in grader.run.host: it drives this module's FreshRounds."""
    from grader.run.host import HostGemm, time_calls

    shape = tuple(req["shape"])
    m, n, _ = shape
    dims = _dims(exercise, shape)
    (launcher,) = exercises.launchers(exercise)
    mem.runner.load("fast", req["lib"])
    word = _poison_word(torch.float32)
    bufs = {
        k: mem.alloc(k, [dims[d] for d in contract.SHAPES[k]], torch.float32, word) for k in _graded_inputs(exercise)
    }
    c = mem.alloc("C", [m, n], torch.float32, word)
    rounds = FreshRounds(exercise, shape, mem, bufs, {"C": c}, req["seed"], "cpu")
    ins = rounds.copies
    base = HostGemm(Path(req["baseline_lib"]), exercise)
    c_base, c_np = torch.empty(m, n), np.empty((m, n), dtype=np.float32)
    a_np, b_np = ins["A"].numpy(), ins["B"].numpy()  # views: redrawn in place with the copies
    calls = {
        "kernel": mem.timed([("fast", launcher.name, _launch_args(launcher, bufs | {"C": c}, dims))], rounds, True),
        "baseline": lambda: base.raw(ins["A"], ins["B"], c_base),
        "numpy": lambda: np.matmul(a_np, b_np, out=c_np),
    }
    times = time_calls(
        calls, max_seconds=req.get("max_seconds", 6.0), before_round=rounds.refresh, after_round=rounds.check
    )
    return {k: t.as_dict() for k, t in times.items()}, rounds


def _in_memory(data: np.ndarray, name: str) -> str:
    """A path to a copy of `data` in an anonymous memory file (memfd) of this process."""
    fd = os.memfd_create(name)
    view = memoryview(np.ascontiguousarray(data)).cast("B")
    while view:
        view = view[os.write(fd, view) :]
    return f"/proc/self/fd/{fd}"


def warm_up(spec: dict) -> None:
    """What a GPU verdict needs before the submission's library arrives (the parent is still
    compiling it): the CUDA context, the grader's own kernels that run_case and the timed rounds
    use (module loading is lazy: each costs its first call), cuBLAS and the L2 flush buffer.
    Nothing here is timed or checked; any failure is left for the real run to report."""
    if spec.get("backend") != "cuda":
        return
    try:
        from grader.run.timing import flush_l2, head_start

        dev = torch.device("cuda")
        # what this process does on the GPU in the timed rounds: draw its copy of the inputs, check sums
        relu = spec.get("exercise") in exercises.EXERCISES and "X" in _graded_inputs(spec["exercise"])
        x = rng.fill_(torch.empty(64, 64, device=dev), 1, relu=relu)  # X is drawn as FreshRounds draws it
        checksum(x)
        bool(torch.isfinite(x).all())
        x.double().sum(0)
        if spec.get("timed"):
            torch.backends.cuda.matmul.allow_tf32 = False
            a = torch.randn(256, 256, device=dev)
            torch.matmul(a, a, out=torch.empty_like(a))  # cuBLAS: its library, handle and a kernel
            a.double() @ a.double()
            flush_l2("clean")
            head_start(1)
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - the run proper reports what is wrong with the GPU
        pass


def _run_step(mem, inputs: dict[str, torch.Tensor], send) -> bool:
    """mlp_step's end-to-end case (grader.spec.mlp.step_outputs): the loss and gradients go back to the parent,
    which compares them with float64 autograd. False when a CUDA error leaves nothing trustworthy."""
    from grader.spec import mlp

    mem.configure_cpu(schedule_seed=0)
    try:
        outs = mlp.step_outputs(Ops(mem), inputs)
    except RunnerDied:
        raise
    except GraderError as e:
        send({"step": True, "error": str(e)})
        return mem.backend != "cuda"
    send(
        {"step": True, "inputs_sha256": {k: digest(v) for k, v in inputs.items()}},
        {k: v.numpy() for k, v in outs.items()},
    )
    return True


def limit_self(parent: int | None = None) -> None:
    """Before the submission's library is loaded: die with the parent (a killed batch leaves no
    kernel spinning on a GPU), cap the size of any file this process writes (its output goes to a
    file: a printf flood must not fill the disk), and confine it (confine()).

    parent: the pid the parent must still have once we asked to die with it (None: any but init);
    0: someone else saw to that (grader.run.forkserver's child, or bubblewrap's --die-with-parent)."""
    if parent != 0:
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
        except (OSError, AttributeError):
            pass
        gone = os.getppid() == 1 if parent is None else os.getppid() != parent
        if gone:  # the parent died before we asked to die with it
            sys.exit(5)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the cap fail instead of killing us
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_FILE_CAP, OUTPUT_FILE_CAP))
    confine()


def confine() -> str:
    """Keep the kernel's native code away from every other process (grader.run.seccomp: no signals,
    traces or limits aimed at another pid); drop any capabilities (a worker run as root keeps
    uid 0 but cannot override the kernel's checks, e.g. open another process's memory); and
    make this process non-dumpable (its memory holds the result token: another worker of the
    same user cannot read it through /proc). Returns '' or why seccomp is not active
    (`python -m grader doctor` reports it)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
        _drop_capabilities(libc)
    except (OSError, AttributeError):
        pass
    from grader.run import seccomp

    return seccomp.install()


def _drop_capabilities(libc) -> None:
    """capset(2) with empty sets (no-op for an ordinary user)."""
    import ctypes

    try:
        with open("/proc/self/status") as f:
            eff = next((ln.split()[1] for ln in f if ln.startswith("CapEff:")), "0")
    except OSError:
        return
    if int(eff, 16) == 0:
        return
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable x 2: all empty
    libc.syscall(126 if os.uname().machine == "x86_64" else 91, header, data)  # SYS_capset (x86_64, aarch64)


def main(argv: list[str]) -> int:
    """`python -m grader.run.worker [PARENT_PID SCRATCH_FD] RESULT_FD`: the request on stdin
    (grader.run.sandbox). PARENT_PID: see limit_self. SCRATCH_FD: an open directory (or -1), the
    worker's private scratch: its working directory and TMPDIR, the only place it may write
    inside the sandbox."""
    parent, scratch = (int(argv[1]), int(argv[2])) if len(argv) > 3 else (None, -1)
    limit_self(parent)
    if scratch >= 0:
        os.fchdir(scratch)
        os.close(scratch)
        os.environ["TMPDIR"] = "/proc/self/cwd"  # a path to it that works even where it is hidden
    try:
        return serve(int(argv[-1]))
    except Exception:  # report, never hang the parent
        traceback.print_exc()
        return 4


if __name__ == "__main__":
    sys.exit(main(sys.argv))
