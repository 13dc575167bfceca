"""The worker: a child process that runs a learner's kernel and nothing else.

    python -m grader.worker RESULT_FD      (request on stdin, see grader.sandbox)

It loads the built library, runs each case on the inputs it is sent (outputs
poisoned first) and sends the raw outputs back; the parent decides what is
right. On a GPU it then times the kernel, its baseline and cuBLAS, redrawing
the inputs (from a seed the parent chose) before every round and checking every
round's output (FreshRounds), and reports the times and the first bad round. A
crash here costs the parent nothing but this submission's verdict.
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

from . import checks, contract, profile, protocol
from .binding import KernelModule
from .checks import INPUT_GUARD_BITS, POISON_BITS, POISON_MASK, random_inputs
from .errors import GraderError, KernelError, LauncherError
from .toolchain import Build


def _load(path: str, exercise: str, backend: str, key: str | None = None) -> KernelModule:
    """The library at `path` (grader.sandbox passes it as /proc/self/fd/N, with its build key)."""
    lib = Path(path)
    return KernelModule(Build(path=lib, backend=backend, exercise=exercise, key=key or lib.parent.name, cached=True))


GUARD = 1024  # elements of poison before and after each buffer a test call gets
GEMM_ONLY = (
    "naive",
    "tiled",
    "conflict_free",
    "register_blocked",
    "register_1d",
    "warptile",
    "cpu_blocked",
)  # C = A B: column sums are linear
OUTPUT_FILE_CAP = 64 << 20  # bytes any file written by the worker (its stdout log) may grow to


def _poison_word(dtype: torch.dtype, is_input: bool = False) -> int:
    """The int32 bit pattern of an unwritten output (or of an input's guard zone). Inputs' guards
    differ from outputs' poison, so a value computed from an out-of-bounds read (a NaN keeps its
    payload) cannot pass for the untouched guard of an output."""
    return INPUT_GUARD_BITS[dtype] if is_input else (POISON_BITS if dtype == torch.float32 else POISON_MASK)


def _guarded(
    shape: list[int], dtype: torch.dtype, device, content: torch.Tensor | None = None, after: int = GUARD
) -> tuple[torch.Tensor, torch.Tensor]:
    """A tensor of `shape` (poisoned, or a copy of the input `content`) inside a buffer whose
    GUARD elements before it and `after` elements after it hold a guard word: a write out of
    bounds lands there and shows. Returns (tensor, whole buffer)."""
    numel = int(np.prod(shape, dtype=np.int64))
    # torch.full, not a word copied from the host: no synchronisation (it cost ~1 ms a buffer on the H200)
    word = _poison_word(dtype, content is not None)
    base = torch.full((numel + GUARD + after,), word, dtype=torch.int32, device=device).view(dtype)
    inner = base[GUARD : GUARD + numel].view(shape)
    if content is not None:
        inner.copy_(content)
    return inner, base


def _damage(name: str, base: torch.Tensor, numel: int, is_input: bool) -> str | None:
    """How a kernel wrote outside `name`, judged by its guard zones; None when it did not."""
    bits, word = base.view(torch.int32), _poison_word(base.dtype, is_input)
    hit_after = (bits[GUARD + numel :] != word).nonzero().flatten()
    hit_before = (bits[:GUARD] != word).nonzero().flatten()
    if len(hit_after):
        return (
            f"wrote past the end of {name}: {len(hit_after)} element(s) in the {len(bits) - GUARD - numel} after it "
            f"(the first at index {numel + int(hit_after[0])} of a {numel}-element array)"
        )
    if len(hit_before):
        return f"wrote before the start of {name}: {len(hit_before)} element(s) at negative indices"
    return None


def _alloc_outputs(launcher, dims: dict[str, int], device) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(tensor, guarded buffer) per output, poisoned: unwritten elements and stray writes show."""
    outs = []
    for name in contract.outputs(launcher):
        shape = [dims[d] for d in contract.SHAPES[name]]
        outs.append(_guarded(shape, torch.int32 if contract.is_mask(name) else torch.float32, device))
    return outs


def _dims(exercise: str, shape) -> dict[str, int]:
    if exercise == "relu_mask":
        m, n = shape
        return {"M": m, "N": n, "W": contract.mask_words(n)}
    m, n, k = shape
    return {"M": m, "N": n, "K": k, "W": contract.mask_words(n)}


def digest(t: torch.Tensor) -> str:
    """sha256 of a tensor's bytes: the parent compares it with its own copy of the input."""
    return hashlib.sha256(t.detach().cpu().contiguous().numpy().tobytes()).hexdigest()


def run_case(
    mod: KernelModule, shape, inputs: dict[str, torch.Tensor], digests: dict[str, str] | None = None
) -> dict[str, torch.Tensor]:
    """Call every launcher of the exercise once, in order, and return their outputs.

    Each launcher's outputs are read as soon as it has run, so a later launcher cannot do an
    earlier one's work (a relu_forward that leaves everything to relu_backward fails). Before the
    next launcher runs, every buffer it is not given is poisoned: the earlier launchers' outputs
    and the inputs only they take (relu_backward then runs with X and Y poisoned, on the mask the
    grader made, inputs["mask"], not on forward's). A launcher's input missing from `inputs` is an
    earlier launcher's output (relu_backward reads forward's mask). If `digests` is given, it
    receives the hash of every input as it is after the last launcher that takes it (a kernel
    that writes its inputs shows)."""
    dims = _dims(mod.exercise, shape)
    launchers = contract.LAUNCHERS[mod.exercise]
    # An input's guard after it covers a read with a wrong row stride (index up to max(dim)^2): such a
    # read then finds the guard word (a NaN whose payload the checks recognise), never another buffer
    # (an output: the CPU backend would call that read a race, or a value the kernel wrote: no sign).
    after = max(GUARD, max(dims.values()) ** 2)
    guarded = {k: _guarded(list(v.shape), v.dtype, mod.device, v, after) for k, v in inputs.items()}
    produced: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    results: dict[str, torch.Tensor] = {}
    hashes: dict[str, str] = {}
    keys = {(l.name, n): key for l, n, key in contract.result_keys(mod.exercise)}  # mlp_step: gemm's C
    for i, launcher in enumerate(launchers):
        outs = _alloc_outputs(launcher, dims, mod.device)
        args = [(guarded.get(n) or produced[n])[0] for n in contract.inputs(launcher)]
        getattr(mod.launch, launcher.name)(*args, *[t for t, _ in outs])
        mod.check_error(launcher.name, synchronize=True)
        for n, (t, base) in zip(contract.outputs(launcher), outs):
            results[keys[launcher.name, n]] = t.detach().cpu().clone()  # read now: nothing later may change it
            produced.setdefault(n, (t, base))
        later = {n for l in launchers[i + 1 :] for n in contract.inputs(l)}
        for n, (t, _) in guarded.items():
            if n not in later and n not in hashes:
                hashes[n] = digest(t)
                if later:
                    t.view(torch.int32).fill_(_poison_word(t.dtype))
        for n, (t, _) in produced.items():
            if later and (n not in later or n in guarded):
                t.view(torch.int32).fill_(_poison_word(t.dtype))
    if mod.backend == "cuda":
        torch.cuda.synchronize()
    for is_input, buffers in ((True, guarded), (False, produced)):
        for name, (t, base) in buffers.items():
            problem = _damage(name, base, t.numel(), is_input)
            if problem:
                raise KernelError(problem)
    if digests is not None:
        digests.update(hashes)
    return results


class FreshRounds:
    """Fresh inputs for every round of the timed runs, and a check of every round's output.

    A kernel that remembers an earlier answer (a cache keyed on pointers or on a checksum of
    the inputs, or work skipped when the inputs look unchanged) would be timed doing nothing
    if the inputs stayed the same. So before each round (outside the timed region) the inputs
    are redrawn in place from a seeded generator on the inputs' device and the kernel's outputs
    are poisoned; after it, a few random rows of its outputs are compared with a float64
    reference of that round's inputs, and the inputs with the copy taken before the round.
    """

    def __init__(
        self,
        exercise: str,
        shape,
        ins: dict[str, torch.Tensor],
        outs: dict[str, torch.Tensor],
        seed: int,
        n_rows: int = 4,
    ):
        self.exercise, self.shape, self.ins, self.outs = exercise, tuple(shape), ins, outs
        self.gen = torch.Generator(device=next(iter(ins.values())).device).manual_seed(seed)
        self.pick = np.random.default_rng(seed)
        self.n_rows = n_rows
        self.rounds = 0
        self.failure: str | None = None  # what went wrong in the first bad round
        self.inputs_changed: list[str] = []
        self.refresh()

    def refresh(self) -> None:
        """New inputs (in place: the kernel keeps its pointers), poisoned outputs, a copy to compare."""
        for name, t in random_inputs(self.exercise, self.shape, self.gen).items():
            self.ins[name].copy_(t)
        for t in self.outs.values():
            t.view(torch.int32).fill_(_poison_word(t.dtype))
        self.copies = {k: v.clone() for k, v in self.ins.items()}

    def check(self) -> bool:
        """Check the round just timed; True to stop timing (a round failed)."""
        self.rounds += 1
        changed = [k for k, v in self.ins.items() if not torch.equal(v, self.copies[k])]
        if changed:
            self.inputs_changed = changed
            return True
        m = self.shape[0]
        rows = sorted(self.pick.choice(m, size=min(self.n_rows, m), replace=False).tolist())
        case = checks.make_case_from(self.exercise, self.shape, self.ins, rows=rows)
        case = _to_cpu(case)
        for name in case.expected:
            mm = checks.compare(case, name, self.outs[name][rows].cpu())
            if mm:
                self.failure = (
                    f"in round {self.rounds} (inputs drawn afresh every round), rows {rows}:\n"
                    + mm.describe(case.shape)
                )
                return True
        # the rows above are a sample; these look at every row, cheaply
        unwritten = [k for k, v in self.outs.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
        if unwritten:  # the poison left anywhere (rows skipped at the timed size), or a NaN/inf
            self.failure = (
                f"in round {self.rounds} (inputs drawn afresh every round): {', '.join(unwritten)} "
                "holds NaN/inf or elements never written"
            )
            return True
        return self.exercise in GEMM_ONLY and not self._column_sums_ok()

    def _column_sums_ok(self) -> bool:
        """Every row counts: C's column sums must equal (1^T A) B, within the sum of the rows' tolerances
        (a kernel that writes plausible values in a few rows it skipped fails here, not only by chance)."""
        a, b, c = self.ins["A"].double(), self.ins["B"].double(), self.outs["C"].double()
        expected = a.sum(0) @ b
        tol = checks.gemm_tolerance(a.abs().sum(0) @ b.abs(), self.shape[2])
        bad = ((c.sum(0) - expected).abs() > tol).nonzero().flatten()
        if len(bad):
            self.failure = (
                f"in round {self.rounds} (inputs drawn afresh every round): the sums of "
                f"{len(bad)} of C's columns (e.g. column {int(bad[0])}) are off: some rows are wrong"
            )
        return not len(bad)


def _to_cpu(case: checks.Case) -> checks.Case:
    move = lambda d: {k: v.cpu() for k, v in d.items()}  # noqa: E731
    return checks.Case(case.shape, {}, move(case.expected), move(case.tolerance), move(case.either))


def _own_gemm_then_pass(mod: KernelModule, pass_mod: KernelModule, ins: dict, dims: dict):
    """gemm_relu's unfused alternative, from the submission's own GEMM: its `gemm` launcher (the same
    main loop without the epilogue), then a separate bias + ReLU + mask pass over C (07a). Returns
    (GEMM then pass, GEMM alone, the fused kernel with a bias that makes every output positive).
    The last is what the GEMM alone is held to (grade: a `gemm` slowed to inflate the baseline): the same
    work as the fused kernel with every output kept, so ReLU's zeros cannot make the fused kernel look
    faster than the GEMM (on the H200 they did not: kernels/07 was 5-6 % faster than its gemm either way)."""
    if not hasattr(mod.launch, "gemm"):
        raise LauncherError(
            "the timed run compares gemm_relu with your own GEMM followed by a separate bias + ReLU + mask "
            'pass, so the file must also define\n    extern "C" '
            + contract.GEMM.signature
            + "\n(your kernel without the epilogue: C = A . B)"
        )
    dev = ins["A"].device
    c = torch.empty(dims["M"], dims["N"], device=dev)
    y = torch.empty_like(c)
    mask = torch.empty(dims["M"], dims["W"], dtype=torch.int32, device=dev)

    def gemm():
        mod.launch.gemm(ins["A"], ins["B"], c)

    def gemm_then_pass():
        gemm()
        pass_mod.launch.bias_relu_mask(c, ins["bias"], y, mask)

    positive = torch.full_like(ins["bias"], 1e4)  # |A . B| is far below it at the timed shape
    c2, mask2 = torch.empty_like(c), torch.empty_like(mask)

    def fused_dense():
        mod.launch.gemm_relu(ins["A"], ins["B"], positive, c2, mask2)

    return gemm_then_pass, gemm, fused_dense


def time_kernels(mod: KernelModule, baseline: KernelModule | None, req: dict) -> tuple[dict, dict]:
    """Time the kernel, its baseline and the library reference, round-robin, on inputs drawn
    afresh for every round (FreshRounds: every round's output is checked too).

    req["baseline"]: "lib" (the baseline kernel file loaded as `baseline`), "torch" (the
    library reference is the baseline: relu_mask's torch pair) or absent.
    req["baseline_epilogue"]: "own_gemm_then_pass": the baseline is the submission's own `gemm`
    followed by the baseline file's pass (gemm_relu's unfused alternative); `gemm_alone` is timed too.
    """
    from .timing import time_gpu

    shape = tuple(req["shape"])
    dims = _dims(mod.exercise, shape)
    dev = mod.device  # cuda; the CPU backend only in the grader's own tests (fake events)
    ins = random_inputs(mod.exercise, shape, torch.Generator(device=dev).manual_seed(req["seed"]))
    calls, outputs = {}, {}
    for label, m in (("kernel", mod), ("baseline", baseline)):
        if m is None:
            continue
        if label == "baseline" and req.get("baseline_epilogue") == "own_gemm_then_pass":
            calls["baseline"], calls["gemm_alone"], calls["fused_dense"] = _own_gemm_then_pass(mod, m, ins, dims)
            continue
        bufs = {}
        steps = []
        for launcher in contract.launchers(m.exercise):
            outs = [t for t, _ in _alloc_outputs(launcher, dims, dev)]
            for n, t in zip(contract.outputs(launcher), outs):
                bufs.setdefault(n, t)
            args = [ins.get(n, bufs.get(n)) for n in contract.inputs(launcher)]
            steps.append((getattr(m.launch, launcher.name), args + outs))
        calls[label] = lambda steps=steps: [fn(*a) for fn, a in steps]
        outputs[label] = bufs
    if mod.exercise in GEMM_ONLY + ("gemm_relu",):
        c = torch.empty(dims["M"], dims["N"], device=dev)
        torch.backends.cuda.matmul.allow_tf32 = False
        if mod.exercise == "gemm_relu":
            calls["cublas"] = lambda: torch.addmm(ins["bias"], ins["A"], ins["B"], out=c).relu_()
        else:
            calls["cublas"] = lambda: torch.matmul(ins["A"], ins["B"], out=c)
    elif mod.exercise == "relu_mask":
        # torch's pair with the activation it saves: computed before the round, so that its backward reads
        # Y from memory as it would in training (reading the Y relu() just wrote finds part of it in L2)
        saved = torch.relu(ins["X"])
        calls["torch"] = lambda: (torch.relu(ins["X"]), torch.ops.aten.threshold_backward(ins["dY"], saved, 0))
    rounds = FreshRounds(mod.exercise, shape, ins, outputs["kernel"], req["seed"])
    times = time_gpu(
        calls, max_seconds=req.get("max_seconds", 10.0), before_round=rounds.refresh, after_round=rounds.check
    )
    mod.check_error("timed runs", synchronize=True)
    if req.get("baseline") == "torch" and "torch" in times:
        times["baseline"] = times["torch"]
    result = {k: t.as_dict() for k, t in times.items()}
    return result, rounds


def _device() -> dict:
    """The GPU, and a generous bound on its float32 peak: 128 FMA lanes per SM at 2.5 GHz."""
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "name": p.name,
        "sms": p.multi_processor_count,
        "peak_fp32_tflops": p.multi_processor_count * 128 * 2 * 2.5e9 / 1e12,
    }


def serve(result_fd: int, stdin_fd: int = 0) -> int:
    """Read the request and all cases, then run them, streaming one message per result."""
    first = protocol.recv(stdin_fd)
    if first is not None and "warm" in first[0]:  # started while the compiler runs (grader.sandbox.start_worker)
        warm_up(first[0]["warm"])
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
    if req.get("backend") == "cpu":  # the CPU runtime then reports how far a long launch got (grader/cpu/progress.py)
        os.environ["CUDA_EMU_PROGRESS"] = "1"
    try:
        # the baseline first: once the submission's code has run (its library's constructors
        # included), nothing it could have swapped is loaded any more
        base = (
            _load(req["baseline_lib"], req["baseline_exercise"], "cuda", req.get("baseline_key"))
            if req.get("timing") and req.get("baseline_lib")
            else None
        )
        mod = _load(req["lib"], req["exercise"], req["backend"], req.get("lib_key"))
    except GraderError as e:
        send({"fatal": str(e)})
        return 0
    for meta, arrays in cases:
        inputs = {k: torch.from_numpy(v) for k, v in arrays.items()}
        if meta.get("step"):  # mlp_step: one training step through grader.mlp on the launchers
            if not _run_step(mod, inputs, send):
                return 0
            continue
        for seed in profile.schedules(req, meta["case"]):
            mod.configure_cpu(schedule_seed=seed)
            digests: dict[str, str] = {}
            counted = profile.counting(req, meta["case"], seed, mod)  # access counts of this very run
            try:
                outs = run_case(mod, meta["shape"], inputs, digests)
            except GraderError as e:
                if counted:
                    profile.take(mod)
                send({"case": meta["case"], "schedule": seed, "error": str(e)})
                if mod.backend == "cuda":
                    return 0  # a CUDA error poisons the context: nothing after it is trustworthy
                continue
            send(
                {"case": meta["case"], "schedule": seed, "inputs_sha256": digests}
                | ({"profile": profile.take(mod)} if counted else {}),
                {k: v.numpy() for k, v in outs.items()},
            )
    if req.get("timing") and req["timing"].get("host"):  # a host exercise: timed on the CPU (grader.host)
        from . import host

        try:
            times, rounds = host.time_kernels(req["timing"], req["exercise"])
            send(
                {
                    "timing": times,
                    "inputs_changed": rounds.inputs_changed,
                    "timed_failure": rounds.failure,
                    "rounds": rounds.rounds,
                    "device": {"name": host.cpu_name()},
                }
            )
        except GraderError as e:
            send({"timing_error": str(e)})
    elif req.get("timing") and mod.backend == "cuda":
        try:
            times, rounds = time_kernels(mod, base, req["timing"])
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
        except GraderError as e:
            send({"timing_error": str(e)})
    return 0


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
        from .timing import flush_l2, head_start

        dev = torch.device("cuda")
        gen = torch.Generator(device=dev).manual_seed(0)
        relu = spec.get("exercise") == "relu_mask"
        ins = random_inputs("relu_mask" if relu else "gemm_relu", (64, 64) if relu else (64, 64, 64), gen)
        for name, x in ins.items():
            inner, base = _guarded(list(x.shape), x.dtype, dev, x)
            _damage(name, base, inner.numel(), True)
            digest(inner)
            inner.view(torch.int32).fill_(_poison_word(x.dtype))
            bool(torch.isfinite(inner).all())
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


def _run_step(mod: KernelModule, inputs: dict[str, torch.Tensor], send) -> bool:
    """mlp_step's end-to-end case (grader.mlp.step_outputs): the loss and gradients go back to the parent,
    which compares them with float64 autograd. False when a CUDA error leaves nothing trustworthy."""
    from . import mlp

    mod.configure_cpu(schedule_seed=0)
    try:
        outs = mlp.step_outputs(mod, inputs)
        mod.check_error("the training step", synchronize=True)
    except GraderError as e:
        send({"step": True, "error": str(e)})
        return mod.backend != "cuda"
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
    0: someone else saw to that (grader.forkserver's child, or bubblewrap's --die-with-parent)."""
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
    """Keep the kernel's native code away from every other process (grader.seccomp: no signals,
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
    from . import seccomp

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
    """`python -m grader.worker [PARENT_PID SCRATCH_FD] RESULT_FD`: the request on stdin
    (grader.sandbox). PARENT_PID: see limit_self. SCRATCH_FD: an open directory (or -1), the
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
