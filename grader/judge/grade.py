"""Grade one kernel file: compile, run in a child on secret inputs, check, time.

    result = grade("tiled", "my_tiled.cu")      # -> Result (see its fields)

The parent draws the inputs from a secret seed, computes the float64 reference
from its own copies, and compares what the child sends back; the child only runs
the kernel. On a GPU the kernel is timed against its exercise's baseline in the
same child, the same way, and must reach the exercise's threshold.

A verdict is a sequence of stages over one GradeContext (grade_at): read and scan, build (the
worker's start, the CPU profile of a GPU verdict and the drawing of the cases run beside the
compiler, on the context's one executor), the request, the run in the worker, then the judging:
correctness, then speed (timed) or access counts (CPU backend).
"""

from __future__ import annotations

import functools
import os
import random
import re
import secrets
import shlex
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import torch

from grader.run import binding, host, sandbox
from grader.judge import calibration, profile, submissions
from grader.spec import checks, exercises, mlp, shapes
from grader.compile import forbidden, toolchain
from grader.compile.cpu import progress as cpu_progress
from grader.errors import CannotGrade, CompileError, Forbidden, GraderError, SubmissionError

SCHEDULES_CPU = [0, 12345]  # in order, then shuffled: a race changes the result


@dataclass
class ShapeResult:
    shape: list[int]
    correct: bool
    detail: str = ""


@dataclass
class Result:
    exercise: str
    backend: str
    compiled: bool = False
    correct: bool = False
    passed: bool = False
    speedup: float | None = None  # baseline time / kernel time (GPU only)
    threshold: float | None = None
    message: str = ""
    hint: str = ""
    shapes: list[ShapeResult] = field(default_factory=list)
    timing: dict | None = None  # medians in ms of kernel, baseline, cuBLAS/torch
    pct_cublas: float | None = None
    output: str = ""  # what the kernel printed (capped)
    calibration: str = ""  # where the threshold comes from (GPU only): grader.judge.calibration
    evidence: str = "correctness only"  # what a pass rests on: "timed on GPU", "access counts (CPU, no timing)"
    profile: dict | None = None  # the access profile (grader.judge.profile), counted on the CPU backend
    seed: int | None = None  # the test inputs' and drawn shapes' seed (`check --seed` reproduces them)
    phases: dict | None = None  # seconds each part of grading took (benchmarks/verdict_latency.py)

    def as_dict(self) -> dict:
        """The same fields as `python -m grader check --json`."""
        return asdict(self)

    def __repr__(self) -> str:  # short: a notebook shows the HTML verdict, then this line
        verdict = "PASSED" if self.passed else "FAILED"
        speed = f", {self.speedup:.2f}x (needs {self.threshold:.2f}x)" if self.speedup is not None else ""
        return f"<grader.Result {self.exercise} [{self.backend}]: {verdict}{speed}>"

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


@dataclass
class Options:
    """How to grade, as grade() takes it (see its docstring)."""

    seed: int | None = None
    timeout: float | None = None
    time_it: bool = True
    compile_timeout: float | None = None
    gpu: int | None = None
    scan: bool = True
    gpu_lock: str | None = None
    lock_wait: float = 0.0
    profile_on_gpu: bool = True


@dataclass
class GradeContext:
    """One verdict in the making: what each stage reads and what it leaves for the next."""

    ex: exercises.Exercise
    source_or_path: object
    backend: str
    opts: Options
    res: Result
    on_host: bool
    timed: bool
    # what runs beside the compiler, on one executor: the worker's start, the cases, the CPU profile
    pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(3))
    clock: float = field(default_factory=time.perf_counter)
    source: str = ""
    filename: str = ""
    seed: int = 0
    beside: Future | None = None  # the CPU backend's profile of a timed GPU verdict
    early: Future | None = None  # the worker, started while the compiler runs (_start_early)
    drawing: Future | None = None  # (cases, profiled, step) from _draw_cases
    build: toolchain.Build | None = None
    cases: list = field(default_factory=list)
    step: checks.Case | None = None  # mlp_step's training step, after the launchers
    profiled: "Profiled | None" = None  # the cases counted on the CPU backend (_profiled_cases)
    request: dict = field(default_factory=dict)
    wire: list = field(default_factory=list)
    run: sandbox.ChildRun | None = None

    @property
    def exercise(self) -> str:
        return self.ex.name

    def lap(self, name: str) -> None:
        """The time since the previous lap, as phases[name]."""
        now = time.perf_counter()
        self.res.phases[name] = round(now - self.clock, 4)
        self.clock = now

    def close(self) -> None:
        """A worker started early that no run took is ended; the executor's threads end with their tasks
        (a profile beside the timing, or cases drawn for a verdict that did not compile, are not waited for)."""
        if self.early is not None:
            _discard(self.early)
            self.early = None
        self.pool.shutdown(wait=False)


def grade(
    exercise: str,
    source_or_path,
    *,
    backend: str = "auto",
    seed: int | None = None,
    thresholds_file=None,
    timeout: float | None = None,
    time_it: bool = True,
    compile_timeout: float | None = None,
    gpu: int | None = None,
    scan: bool = True,
    gpu_lock: str | None = None,
    lock_wait: float = 0.0,
    require_gpu: bool = False,
    profile_on_gpu: bool = True,
) -> Result:
    """Grade a kernel file. Raises CannotGrade when grading is impossible (exit 2).

    timeout: seconds the child may run the kernel (all shapes and the timed runs);
    compile_timeout: seconds nvcc or g++ may take; gpu: the GPU index the child runs on (batch);
    scan=False skips the forbidden-construct scan and the check of what the built code calls
    (only for the grader's own tests of its other defences);
    gpu_lock, lock_wait: batch --per-gpu, several children share one GPU (grader.run.sandbox);
    require_gpu: only a timed GPU verdict counts (CannotGrade without a GPU, or with backend "cpu");
    profile_on_gpu: on a GPU also count accesses on the CPU backend (reported, not judged).
    """
    ex = exercises.get(exercise, thresholds_file)
    backend = _backend(exercise, backend, require_gpu)
    opts = Options(seed, timeout, time_it, compile_timeout, gpu, scan, gpu_lock, lock_wait, profile_on_gpu)
    calibrated = ""
    if backend == "cuda" and time_it and ex.threshold is not None:  # this GPU's threshold (grader.judge.calibration)
        # calibration grades the shipped solutions through grade_at: at the threshold given, never resolved again
        ex, calibrated = calibration.resolve(ex, thresholds_file, functools.partial(grade_at, backend="cuda"))
    return grade_at(ex, source_or_path, backend=backend, calibration=calibrated, opts=opts)


def _backend(exercise: str, backend: str, require_gpu: bool) -> str:
    """The backend a verdict runs on; CannotGrade where --require-gpu cannot be met."""
    on_host = exercises.kind(exercise).host  # plain C++ on the CPU: CPU backend, timed on any machine
    if require_gpu and (backend == "cpu" and not on_host):
        raise CannotGrade("--require-gpu asks for a timed GPU verdict, but --backend cpu was given")
    backend = "cpu" if on_host else binding.resolve_backend(backend)
    if require_gpu and backend != "cuda" and not on_host:
        raise CannotGrade(
            "--require-gpu: this machine has no GPU torch can use, and a CPU-backend verdict "
            "(access counts, no timing) is not accepted; grade on a GPU machine"
        )
    return backend


def grade_at(
    ex: exercises.Exercise, source_or_path, *, backend: str, calibration: str = "", opts: Options | None = None
) -> Result:
    """Grade against `ex` as given: its threshold is the bar, looked up nowhere else (`calibration` names
    where it came from). grade() resolves the threshold first; grader.judge.calibration measures through this."""
    opts = opts or Options()
    on_host = ex.kind.host
    res = Result(
        ex.name, backend, threshold=ex.threshold if backend == "cuda" or on_host else None, calibration=calibration
    )
    res.phases = {}
    timed = (backend == "cuda" or on_host) and opts.time_it and ex.threshold is not None
    ctx = GradeContext(ex, source_or_path, backend, opts, res, on_host, timed)
    try:
        if _read_and_build(ctx) and _prepare_run(ctx):
            _run(ctx)
            if _judge_correctness(ctx):
                _judge_speed_or_access(ctx)
    finally:
        ctx.close()
    return res


def _read_and_build(ctx: GradeContext) -> bool:
    """Stages read+scan and build; the worker's start and the cases' drawing run beside the compiler.
    False: the verdict is final already (refused, or it does not compile)."""
    res, opts = ctx.res, ctx.opts
    try:
        ctx.source, ctx.filename = submissions.read(ctx.source_or_path, ctx.exercise)
        if not ctx.source.strip():
            raise SubmissionError(f'{ctx.filename} is empty: write the kernel and its extern "C" launcher(s).')
        problems = forbidden.scan(ctx.source, timeout=opts.compile_timeout) if opts.scan else []
        if problems:
            raise Forbidden(forbidden.message(problems, ctx.filename))
        if ctx.backend == "cuda" and ctx.timed and opts.profile_on_gpu and ctx.ex.access and not ctx.on_host:
            ctx.beside = ctx.pool.submit(
                _profile_beside, ctx.exercise, ctx.source, ctx.filename, ctx.ex, opts.compile_timeout, opts.timeout
            )
        ctx.lap("read_and_scan")
        ctx.early = _start_early(ctx)
        # the test cases (and their float64 answers) are drawn while the compiler runs
        res.seed = ctx.seed = opts.seed if opts.seed is not None else secrets.randbits(63)
        ctx.drawing = ctx.pool.submit(_draw_cases, ctx.exercise, ctx.ex, ctx.backend, ctx.seed)
        ctx.build = toolchain.build(
            ctx.source,
            backend=ctx.backend,
            exercise=ctx.exercise,
            filename=ctx.filename,
            timeout=opts.compile_timeout,
            check_calls=opts.scan,
        )
        ctx.lap("build")
    except Forbidden as e:  # the source scan, or the check of what the built code calls
        res.message = str(e)
        res.hint = (
            "Do the work yourself in __global__ kernels launched on the given stream, with the CUDA "
            "runtime and standard headers only; the list above says what to remove."
        )
        return False
    except CompileError as e:
        res.message = f"does not compile:\n{e}"
        return False
    except SubmissionError as e:
        res.message = str(e)
        return False
    res.compiled = True
    return True


def _prepare_run(ctx: GradeContext) -> bool:
    """Stage: the worker's request (cases, the profiled case, the timing and its baseline) and the cases on
    the wire. False: the verdict is final (a host exercise's optimised build is refused or fails)."""
    cases, ctx.profiled, ctx.step = ctx.drawing.result()
    ctx.cases = cases
    ctx.request = {
        "lib": str(ctx.build.path),
        "exercise": ctx.exercise,
        "backend": ctx.backend,
        "schedules": SCHEDULES_CPU if ctx.backend == "cpu" else [0],
    }
    if ctx.profiled is not None:  # two cases are at the profile shapes: they are checked and counted
        counted = [i for i, _, _ in ctx.profiled.cases]
        ctx.request["profile"] = profile.grading_request(ctx.exercise, counted, ctx.profiled.seed)
    if ctx.timed and ctx.on_host:
        try:
            ctx.request |= {"timing": host.timing_request(ctx.ex, ctx.source, ctx.filename, ctx.opts.compile_timeout)}
        except Forbidden as e:  # the optimised build is checked too (it may differ: #ifndef __CUDACC__)
            ctx.res.message = str(e)
            return False
        except CompileError as e:
            ctx.res.message = f"does not compile with the optimised host build (g++ -O3):\n{e}"
            return False
    elif ctx.timed:
        ctx.request |= _gpu_timing_request(ctx.ex)
    ctx.wire = [
        ({"case": i, "shape": list(c.shape)}, {k: v.numpy() for k, v in c.inputs.items()}) for i, c in enumerate(cases)
    ]
    if ctx.step is not None:
        ctx.wire.append(
            ({"step": True, "shape": list(ctx.step.shape)}, {k: v.numpy() for k, v in ctx.step.inputs.items()})
        )
    ctx.lap("cases_and_baseline")
    return True


def _gpu_timing_request(ex: exercises.Exercise) -> dict:
    """What the worker needs to time a GPU exercise: the shape, a fresh seed, the baseline (built here)."""
    base = (
        toolchain.build(
            ex.baseline_path.read_text(), backend="cuda", exercise=ex.baseline_exercise, filename=ex.baseline
        )
        if ex.baseline_path
        else None
    )
    return {
        "timing": {
            "shape": list(ex.bench_shape),
            "seed": secrets.randbits(62),
            "baseline": "lib" if base else ex.baseline,
            "baseline_epilogue": ex.baseline_epilogue,
        },
        "baseline_lib": str(base.path) if base else None,
        "baseline_exercise": ex.baseline_exercise,
    }


def _run(ctx: GradeContext) -> None:
    """Stage: the run in the worker (the one started early, else a fresh one); its phases and output."""
    opts, phases = ctx.opts, ctx.res.phases
    worker = ctx.early.result() if ctx.early is not None else sandbox.start_worker(gpu=opts.gpu, gpu_lock=opts.gpu_lock)
    ctx.early = None  # in use: run() cleans up after it
    ctx.run = run = worker.run(
        ctx.request, ctx.wire, timeout=opts.timeout or sandbox.RUN_TIMEOUT_S, lock_wait=opts.lock_wait
    )
    ctx.lap("worker")
    if run.arrivals:  # inside the worker's time: its start (and the first case), the other cases, the timing
        phases["worker_first_result"] = round(run.arrivals[0], 4)
        phases["worker_last_result"] = round(run.arrivals[-1], 4)
        phases["worker_done"] = round(run.ended or 0.0, 4)
        done = [a for (m, _), a in zip(run.messages, run.arrivals) if "case" in m or "step" in m]
        if done and len(done) < len(run.arrivals):  # the timing came after the cases
            phases["worker_cases_done"] = round(done[-1], 4)
    if opts.gpu_lock and run.timed_out and run.lock_wait_s is None:  # never got the GPU: not the kernel's fault
        raise CannotGrade(
            f"waited {opts.lock_wait:.0f} s for the GPU (other submissions held it); grade this one again"
        )
    output = cpu_progress.strip(run.output)  # the CPU backend's progress lines are for _died_message
    ctx.res.output = output if run.crashed or run.timed_out else output.strip()


def _judge_correctness(ctx: GradeContext) -> bool:
    """Stage: every case (and mlp_step's training step) against its float64 reference; a CPU-backend crash
    re-run under AddressSanitizer; how to draw the same inputs again. False: the channel was tampered with."""
    res, run = ctx.res, ctx.run
    if run.protocol_error:
        res.message = f"the grader's result channel was tampered with: {run.protocol_error}. Not graded as correct."
        res.hint = "Results reach the grader only through its own worker; a kernel file must not write to it."
        return False
    _verdict_correctness(res, ctx.cases, run)
    if res.correct and ctx.step is not None:
        _verdict_step(res, ctx.step, run)
    # a crash, or a fault the CPU runtime caught and reported as an illegal memory access
    if ctx.backend == "cpu" and not res.correct and (run.crashed or "illegal memory access" in res.message):
        opts = ctx.opts
        _explain_cpu_crash(
            res,
            ctx.source,
            ctx.exercise,
            ctx.filename,
            ctx.cases,
            ctx.request,
            ctx.wire,
            opts.compile_timeout,
            opts.timeout or sandbox.RUN_TIMEOUT_S,
        )
    if not res.correct and res.shapes:
        given = str(ctx.source_or_path)
        shown = shlex.quote(given) if "\n" not in given and len(given) < 200 else "FILE"
        res.message += (
            f"\n(Inputs and the shapes drawn for this run come from seed {ctx.seed}: "
            f"`python -m grader check {ctx.exercise} {shown} --seed {ctx.seed}` draws the same ones.)"
        )
    return True


def _judge_speed_or_access(ctx: GradeContext) -> None:
    """Stage: a correct kernel's verdict: its speed (timed), its access counts (CPU backend), or correctness."""
    res, ex, run, opts = ctx.res, ctx.ex, ctx.run, ctx.opts
    if res.correct and ctx.timed:
        _verdict_speed(res, ex, run)
        res.evidence = profile.EVIDENCE_HOST if ctx.on_host else profile.EVIDENCE_GPU
        if ctx.beside is not None:  # reported beside the time, not a verdict
            res.profile = ctx.beside.result()
            ctx.lap("profile_wait")
    elif res.correct and ctx.request.get("profile"):
        lib, profiled = ctx.build.path, ctx.profiled.cases
        _verdict_access(res, ex, run, profiled, lib, ctx.filename)
        if not res.passed and profile.NO_GLOBAL_LOADS in res.message and res.profile and res.profile.get("sampled"):
            # the sampled blocks did nothing (a persistent kernel whose first block took every tile off a
            # queue): count every block before saying no kernel did the work
            counted = [shape for _, shape, _ in profiled]
            again = _profile_run(
                ctx.exercise, ctx.source, ctx.filename, ex, opts.compile_timeout, opts.timeout, "all", counted
            )
            if again is not None:
                renumbered = [(i, shape, odd) for i, (_, shape, odd) in enumerate(profiled)]
                _verdict_access(res, ex, again, renumbered, lib, ctx.filename)
    elif res.correct and ctx.step is not None:
        res.passed = True
        res.message = (
            "correct on every shape, and one training step of an MLP on these launchers matches "
            "float64 autograd (correctness only: mlp_step is not timed; notebook 08 measures the step)"
        )
    elif res.correct:
        res.passed = True
        if ctx.backend == "cpu":
            res.message = (
                "correct on every shape (CPU backend: correctness only; the speed "
                "threshold is not measured without a GPU)"
            )
        else:
            res.message = "correct on every shape"


def _start_early(ctx: GradeContext) -> Future | None:
    """Start the worker now, while the compiler runs, so that its start (and on a GPU its CUDA
    context, cuBLAS and the grader's own kernels: worker.warm_up) costs the verdict nothing. Not in
    batch --per-gpu (gpu_lock): a worker holds its GPU's lock from its first GPU operation on.
    GRADER_PRESTART=0 starts it after the build instead (benchmarks/verdict_latency.py, before/after)."""
    if ctx.opts.gpu_lock or os.environ.get("GRADER_PRESTART", "1").strip() == "0":
        return None
    backend, gpu = ctx.backend, ctx.opts.gpu
    warm = {"backend": backend, "exercise": ctx.exercise, "timed": ctx.timed}

    def start():
        if backend == "cuda":  # the runner's CUDA context comes up while the compiler runs, too
            from grader.run.runner.build import runner_binary

            warm["runner"] = str(runner_binary(backend))
        return sandbox.start_worker(gpu=gpu, warm=warm)

    return ctx.pool.submit(start)


def _discard(early: Future) -> None:
    """End a worker started by _start_early that no run will use (now, or once it has started)."""

    def close(f: Future) -> None:
        if f.exception() is None:
            f.result().close()

    early.add_done_callback(close)


@dataclass
class Profiled:
    """The counted cases of a CPU-backend grade: (index in the cases, shape, unaligned?) each."""

    seed: int  # the blocks sampled are drawn from it
    cases: list[tuple[int, tuple[int, ...], bool]]


def _draw_cases(exercise: str, ex: exercises.Exercise, backend: str, seed: int):
    """The run's test cases from its seed: (cases, the Profiled cases or None, the mlp_step step or None)."""
    gen = torch.Generator().manual_seed(seed)
    fixed = ex.shapes if backend == "cuda" else ex.cpu_shapes
    # two fresh inputs per fixed shape (a kernel that replays an earlier answer fails), then one
    # per shape drawn from the seed (grader.spec.shapes: every dimension aligned in turn, the others odd)
    cases = [ex.kind.make_case(s, gen) for s in fixed for _ in range(2)]
    drawn = shapes.draw(len(fixed[0]), seed, rows=backend == "cuda" or ex.cpu_long_rows)
    cases += [ex.kind.make_case(s, gen, variant=i) for i, s in enumerate(drawn)]  # some scaled
    profiled = None
    if backend == "cpu" and ex.access and not ex.kind.host:  # two more cases, counted
        profiled = _profiled_cases(ex, seed, gen, cases)
    step = mlp.step_case(gen) if ex.kind.training_step else None  # one training step, after the launchers
    return cases, profiled, step


def _profiled_cases(ex: exercises.Exercise, seed: int, gen: torch.Generator, cases: list) -> Profiled:
    """Add the cases at the two profile shapes (grader.spec.shapes.profile_shapes: aligned, unaligned) to `cases`,
    each at a place drawn from the seed: a launcher that runs its lesson's kernel only on its last call
    (or its n-th), or only where every dimension is aligned, is counted where it does not."""
    profile_seed = int(torch.randint(1 << 62, (1,), generator=gen))
    made = [ex.kind.make_case(s, gen) for s in shapes.profile_shapes(ex.profile_shape, seed)]
    place = random.Random(f"grader.grade/profiled/{seed}")
    for case in made:
        cases.insert(place.randint(0, len(cases)), case)
    where = [next(i for i, c in enumerate(cases) if c is case) for case in made]
    return Profiled(profile_seed, [(i, tuple(c.shape), odd) for i, c, odd in zip(where, made, (False, True))])


def _verdict_access(
    res: Result, ex: exercises.Exercise, run: sandbox.ChildRun, profiled: list, lib, filename: str
) -> None:
    """The CPU backend's verdict on a correct kernel: the exercise's access bounds, on the counts of the
    checked runs of the profiled cases (grader.judge.profile; `profiled`: Profiled.cases), at the unaligned
    shape with each bound's slack there (exercises.AccessBound.unaligned)."""
    judged = []
    for case, shape, odd in profiled:
        raw = next((m["profile"] for m, _ in run.messages if m.get("case") == case and "profile" in m), None)
        prof, problems = profile.judge(ex.name, shape, raw, lib, filename, unaligned=odd)
        if prof is None:
            res.correct = False
            res.message = "correct on the test shapes, but the profiled run sent no access counts"
            return
        judged.append((prof, problems, "x".join(map(str, shape)), odd))
    prof, problems, dims, odd = next((j for j in judged if j[1]), judged[0])  # a miss, else the aligned shape
    res.profile = prof.as_dict()
    res.evidence = profile.EVIDENCE_CPU  # a pass or a miss, the verdict rests on the access counts
    if problems:
        odd_note = "no dimension aligned, so the bounds allow for partial tiles; " if odd else ""
        res.message = (
            f"correct, but the access profile at {dims} misses this exercise's idea "
            f"({odd_note}CPU backend: {prof.sampled or 'every block'}):\n  " + "\n  ".join(problems)
        )
        res.hint = ex.slow_hint
        return
    res.passed = True
    others = " and ".join(d for _, _, d, _ in judged[1:])
    res.message = (
        f"correct on every shape; access counts at {dims} meet the exercise's bounds: {profile.summary(prof)} "
        f"(and at {others}, no dimension aligned; CPU backend: no timing without a GPU)"
    )


def _profile_beside(
    exercise: str,
    source: str,
    filename: str,
    ex: exercises.Exercise,
    compile_timeout: float | None,
    timeout: float | None,
) -> dict | None:
    """On a GPU: the CPU backend's access profile of the same file, reported beside the timing
    (in a child like every run of a submission); None when it cannot be had."""
    run = _profile_run(exercise, source, filename, ex, compile_timeout, timeout)
    if run is None:
        return None
    raw = next((m["profile"] for m, _ in run.messages if "profile" in m), None)
    try:
        lib = toolchain.build(source, backend="cpu", exercise=exercise, filename=filename, timeout=compile_timeout)
        prof, _ = profile.judge(exercise, ex.profile_shape, raw, lib.path, filename)
    except GraderError:
        return None
    return prof.as_dict() if prof else None


def _profile_run(
    exercise: str,
    source: str,
    filename: str,
    ex: exercises.Exercise,
    compile_timeout: float | None,
    timeout: float | None,
    blocks: str = "sample",
    shape: list[tuple[int, ...]] | None = None,
) -> sandbox.ChildRun | None:
    """One counted run of the file on the CPU backend at each of these shapes (default: the exercise's profile
    shape), on fresh inputs (cases 0, 1 ...), in a child; None when it cannot be had."""
    try:
        build = toolchain.build(source, backend="cpu", exercise=exercise, filename=filename, timeout=compile_timeout)
        gen = torch.Generator().manual_seed(secrets.randbits(62))
        cases = [ex.kind.make_case(s, gen) for s in shape or [ex.profile_shape]]
        request = {
            "lib": str(build.path),
            "exercise": exercise,
            "backend": "cpu",
            "schedules": [0],
            "profile": profile.grading_request(exercise, list(range(len(cases))), secrets.randbits(62), blocks=blocks),
        }
        wire = [
            ({"case": i, "shape": list(c.shape)}, {k: v.numpy() for k, v in c.inputs.items()})
            for i, c in enumerate(cases)
        ]
        return sandbox.run_worker(request, wire, timeout=timeout or sandbox.RUN_TIMEOUT_S)
    except GraderError:
        return None


def _explain_cpu_crash(
    res: Result,
    source: str,
    exercise: str,
    filename: str,
    cases: list,
    request: dict,
    wire: list,
    compile_timeout: float | None,
    timeout: float,
) -> None:
    """A crash on the CPU backend: re-run the input that crashed under AddressSanitizer and
    name the access and its line (a GPU would have said 'illegal memory access', no more)."""
    from grader.compile import cpu

    crashed = next((i for i, s in enumerate(res.shapes) if not s.correct), None)
    if crashed is None:
        return
    try:
        build = toolchain.build(
            source, backend="cpu", exercise=exercise, filename=filename, sanitize=True, timeout=compile_timeout
        )
    except GraderError:
        return
    run = sandbox.run_worker(
        request | {"lib": str(build.path), "schedules": [0]},
        [wire[crashed]],
        timeout=timeout,
        extra_env=cpu.sanitizer_env(),
    )
    report = _asan_summary(run.output, filename)
    if report:
        res.message += f"\nAddressSanitizer, re-running that input: {report}"
        res.hint = (
            "An out-of-bounds access: compare every index with the size of the array it "
            "indexes, and check the bounds test guards each load and store."
        )


def _asan_summary(output: str, filename: str) -> str:
    """'heap-buffer-overflow: WRITE of size 4 at mine.cu:8' from an AddressSanitizer report."""
    kind = re.search(r"ERROR: AddressSanitizer: ([\w-]+)", output)
    if not kind:
        return ""
    access = re.search(r"(READ|WRITE) of size (\d+)", output)
    where = re.search(rf"#\d+ 0x[0-9a-f]+ in .*?({re.escape(filename)}:\d+)", output)
    text = kind.group(1)
    if access:
        text += f": {access.group(1)} of size {access.group(2)}"
    elif "SEGV" in kind.group(1) or "SEGV" in output:
        text += " (a wild address)"
    return text + (f" at {where.group(1)}" if where else "")


def _verdict_correctness(res: Result, cases: list[checks.Case], run: sandbox.ChildRun) -> None:
    fatal = next((m["fatal"] for m, _ in run.messages if "fatal" in m), None)
    if fatal:
        res.message = fatal
        return
    by_case: dict[int, list[tuple[dict, dict]]] = {}
    for meta, arrays in run.messages:
        if "case" in meta:
            by_case.setdefault(meta["case"], []).append((meta, arrays))
    mismatches, passed_shapes, n_wrong_inputs = [], [], 0
    seen: dict[tuple, list] = {}  # shape -> (output, was right) so far: a replayed answer shows
    unstable = False
    for i, case in enumerate(cases):
        got = by_case.get(i, [])
        if not got:
            what = run.describe_exit() if (run.crashed or run.timed_out) else "returned no result"
            res.shapes.append(ShapeResult(list(case.shape), False, f"the kernel {what}"))
            res.message = _died_message(run, case.shape)
            res.hint = res.hint or (
                "A crash is usually an out-of-bounds access (check the bounds tests); "
                "a time-out, a loop that never ends or a barrier some threads never reach."
            )
            return
        errors = [m["error"] for m, _ in got if "error" in m]
        if errors and mismatches:  # the first wrong input decides (a later launch past a limit must not hide it)
            n_wrong_inputs, cases = n_wrong_inputs + 1, cases[: i + 1]  # (the rest are not judged)
            res.shapes.append(ShapeResult(list(case.shape), False, errors[0]))
            break
        if errors:
            res.shapes.append(ShapeResult(list(case.shape), False, errors[0]))
            res.message = f"at shape {'x'.join(map(str, case.shape))}: {errors[0]}"
            res.hint = checks.error_hint(errors[0], case.shape)
            return
        judged = _judge_outputs(res, case, got, seen)
        if judged is None:  # the verdict is final
            return
        problems, varies = judged
        if problems and varies:
            unstable = True
        if problems:
            mismatches += [(case.shape, p) for p in problems]  # every wrong output: hints read them all
            n_wrong_inputs += 1
            res.shapes.append(ShapeResult(list(case.shape), False, problems[0].describe(case.shape)))
        else:
            passed_shapes.append(case.shape)
            res.shapes.append(ShapeResult(list(case.shape), True))
    if mismatches:
        res.message = f"wrong results on {n_wrong_inputs} of {len(cases)} inputs.\n" + mismatches[0][1].describe(
            mismatches[0][0]
        )
        res.hint = checks.hint(mismatches, passed_shapes, exercises.kind(res.exercise))
        if unstable:
            res.hint += (
                " The result also changes from run to run with the same input: a race, or reads "
                "outside the matrices (an index past the end reads whatever lies there)."
            )
        return
    res.correct = True


def _judge_outputs(res: Result, case: checks.Case, got: list, seen: dict) -> tuple[list, bool] | None:
    """One case's runs (one per schedule): (its wrong outputs, whether runs differ), or None with the
    verdict made (it wrote an input, races: right in some runs only, or replays an earlier answer)."""
    dims = "x".join(map(str, case.shape))
    tampered = sorted({k for m, _ in got for k, h in m.get("inputs_sha256", {}).items() if h != case.digests[k]})
    if tampered:
        res.shapes.append(ShapeResult(list(case.shape), False, f"wrote to its input {', '.join(tampered)}"))
        res.message = (
            f"the kernel wrote to its input {' and '.join(tampered)} at shape "
            f"{dims}: inputs are const and must be left as they were."
        )
        res.hint = (
            "Only the output(s) may be written. Look for a store through a const_cast pointer, or "
            "an index that runs past the output into another buffer."
        )
        return None
    outs = [{k: torch.from_numpy(v) for k, v in arrays.items()} for _, arrays in got]
    runs_problems = [
        [p for name in case.expected if (p := checks.compare(case, name, o.get(name, torch.empty(0))))] for o in outs
    ]
    problems = runs_problems[0]
    varies = len(outs) > 1 and any(not _same(outs[0], o) for o in outs[1:])
    if varies and not all(runs_problems):
        # right in some runs, wrong in others, on the same input: a race
        res.shapes.append(ShapeResult(list(case.shape), False, "result changes between runs"))
        res.message = (
            f"at shape {dims} the result changes from run to run "
            "with the same input (right in some runs, wrong in others)"
        )
        res.hint = (
            "A race: threads read shared memory that other threads are still writing. "
            "Is there a __syncthreads() after loading a tile AND after using it? (Notebook 03, hint 3.)"
        )
        return None
    key = tuple(case.shape)
    replayed = bool(problems) and any(ok and _same(prev, outs[0]) for prev, ok in seen.get(key, []))
    seen.setdefault(key, []).append((outs[0], not problems))
    if replayed:
        res.shapes.append(ShapeResult(list(case.shape), False, "replays the answer to an earlier input"))
        res.message = (
            f"at shape {dims} the kernel returned, for a new input, "
            "exactly the answer it gave for an earlier input of the same shape: results must "
            "be computed from the inputs of each call, not replayed."
        )
        res.hint = "Do not keep results between calls (static buffers, caches keyed by shape)."
        return None
    return problems, varies


def _verdict_step(res: Result, step: checks.Case, run: sandbox.ChildRun) -> None:
    """mlp_step: the launchers were right one at a time; now the loss and every gradient of one
    training step through grader.spec.mlp's layers on them, against the parent's float64 autograd."""
    got = next(((m, a) for m, a in run.messages if m.get("step")), None)
    batch, d_in, hidden, classes = step.shape
    where = (
        f"one training step of an MLP {d_in} -> {hidden} -> {hidden} -> {classes} on a batch of {batch} "
        "(grader/spec/mlp.py: forward gemm_relu, backward relu_backward on forward's mask, gemm for dX and dW)"
    )
    hint = (
        "Each launcher passed its own check, so look at what a training step adds: forward's mask must be "
        "the one relu_backward reads (nothing kept between calls), and gemm is called on transposed, "
        "non-square operands (dW = X^T . dZ is in x N with K = the batch)."
    )
    res.correct = False
    if got is None:
        ended = run.describe_exit() if run.crashed or run.timed_out else "sent no result"
        res.message = f"every launcher is right on its own, but {where} {ended}"
        res.hint = hint
        return
    meta, arrays = got
    if "error" in meta:
        res.message = f"every launcher is right on its own, but in {where}: {meta['error']}"
        res.hint = hint
        return
    tampered = sorted(k for k, h in meta.get("inputs_sha256", {}).items() if h != step.digests[k])
    got_arrays = {name: torch.from_numpy(arrays[name]) if name in arrays else torch.empty(0) for name in step.expected}
    problems = [p for name in step.expected if (p := checks.compare(step, name, got_arrays[name]))]
    if tampered or problems:
        res.message = f"every launcher is right on its own, but {where} is wrong against float64 autograd:\n" + (
            f"the step changed its inputs {', '.join(tampered)}"
            if tampered
            else "\n".join(p.describe(step.shape) for p in problems[:3])
        )
        res.hint = hint
        return
    res.correct = True


def _same(a: dict, b: dict) -> bool:
    return all(torch.equal(torch.nan_to_num(a[k]), torch.nan_to_num(b[k])) for k in a)


def _died_message(run: sandbox.ChildRun, shape) -> str:
    dims = "x".join(map(str, shape))
    progress = cpu_progress.last(run.output) if run.timed_out else None
    if progress:  # the CPU backend said how far it got: slow is not the same as hung
        runs = sum(1 for m, _ in run.messages if "case" in m)
        return cpu_progress.timeout_message(progress, dims, runs)
    if run.timed_out:
        return (
            f"the kernel did not finish at shape {dims}: killed after the time limit (a hang? a loop that "
            "never ends, in the kernel or in its launcher)"
        )
    output = cpu_progress.strip(run.output)
    return f"the kernel {run.describe_exit()} at shape {dims}" + (
        f"; its output ends with:\n{output[-800:]}" if output.strip() else ""
    )


# gemm_relu: the plain `gemm` may be at most this much slower than the fused kernel. Not 1.03 (noise): on the
# H200 (2026-12-02) kernels/07's gemm, the same compiled kernel with the epilogue switched off at run time,
# ran 5-6 % slower than with it, with or without ReLU's zeros (cause not found). A `gemm` slowed by less
# than this lets a kernel whose epilogue costs a little more than the separate pass still pass.
OWN_GEMM_SLACK = 1.10
LIBRARY_FACTOR = 10.0  # faster than cuBLAS / torch by this much: not believable
HOST_FACTOR, HOST_SLACK_MS = 3.0, 0.5


def plausibility(t: dict, ex: exercises.Exercise, device: dict | None = None) -> str:
    """Why the timing cannot be believed ("" when it can): hidden work on another stream shows as
    host time far above event time; beating the library (itself near the chip's peak) by 10x,
    or a GEMM above the chip's peak FLOP rate, cannot happen."""
    k = t["kernel"]
    if k["host_ms"] > HOST_FACTOR * k["median_ms"] + HOST_SLACK_MS:
        return (
            f"the CUDA events saw {k['median_ms']:.3f} ms but the host clock {k['host_ms']:.3f} ms per call "
            "(is work launched on another stream?)"
        )
    ref = t.get("cublas") or t.get("torch") or t.get("numpy")
    if ref and ref["median_ms"] / k["median_ms"] > LIBRARY_FACTOR:
        lib = "cuBLAS" if t.get("cublas") else "torch" if t.get("torch") else "numpy"
        return f"{ref['median_ms'] / k['median_ms']:.0f}x faster than {lib}"
    peak = (device or {}).get("peak_fp32_tflops")
    if len(ex.bench_shape) == 3 and peak:
        m, n, kk = ex.bench_shape
        tf = 2.0 * m * n * kk / (k["median_ms"] * 1e-3) / 1e12
        if tf > peak:
            return f"{tf:.0f} TFLOP/s is above the chip's float32 peak (at most {peak:.0f})"
    return ""


def _timing_meta(res: Result, ex: exercises.Exercise, run: sandbox.ChildRun) -> dict | None:
    """The worker's timing message, or None with the verdict made: no timing (a crash or hang at the timed
    size), a failed or unavailable timing, inputs written or a wrong result during the timed rounds."""
    timings = [(m, a) for m, a in run.messages if {"timing", "timing_error", "timing_unavailable"} & m.keys()]
    if len(timings) != 1 or run.crashed or run.timed_out or run.messages[-1][0] is not timings[0][0]:
        # no timing: it crashed or hung at the timed size, so the kernel is not correct there either
        res.correct = False
        res.message = (
            f"correct on the test shapes, but at the timed size {'x'.join(map(str, ex.bench_shape))} "
            f"the kernel {run.describe_exit() if run.crashed or run.timed_out else 'sent no timing'}"
        )
        res.hint = (
            "It works on the small shapes only: look for a fixed-size array, an int that overflows, "
            "or a grid dimension over its limit at the large size."
        )
        return None
    meta, _ = timings[0]
    if "timing_error" in meta:
        res.correct = False
        res.message = (
            f"correct on the test shapes, but the timed run at "
            f"{'x'.join(map(str, ex.bench_shape))} failed: {meta['timing_error']}"
        )
        return None
    if "timing_unavailable" in meta:
        res.message = f"correct on every shape, but not timed: {meta['timing_unavailable']}"
        res.hint = ex.slow_hint
        return None
    if meta.get("inputs_changed"):
        res.correct = False
        res.message = (
            f"the kernel wrote to its input {' and '.join(meta['inputs_changed'])} during the timed "
            "runs: inputs are const and must be left as they were."
        )
        return None
    if meta.get("timed_failure"):  # the worker checks every timed round on its fresh inputs
        res.correct = False
        res.message = "correct on the test shapes but wrong in the timed runs, " + meta["timed_failure"]
        res.hint = (
            "Each call must compute its result from the inputs it is given now: a result kept from an "
            "earlier call, or work skipped when the inputs look unchanged, is wrong here."
        )
        return None
    return meta


def _verdict_speed(res: Result, ex: exercises.Exercise, run: sandbox.ChildRun) -> None:
    meta = _timing_meta(res, ex, run)
    if meta is None:  # no usable timing: the verdict is made
        return
    t = meta["timing"]
    if ex.baseline == "cublas" and "baseline" not in t and "cublas" in t:  # warptile: the bar is cuBLAS itself
        t = t | {"baseline": t["cublas"]}
    res.timing = {k: v["median_ms"] for k, v in t.items()}
    k_ms = t["kernel"]["median_ms"]
    if t.get("cublas"):
        res.pct_cublas = 100.0 * t["cublas"]["median_ms"] / k_ms
    res.speedup = t["baseline"]["median_ms"] / k_ms if "baseline" in t else None
    implausible = plausibility(t, ex, meta.get("device"))
    if implausible:
        res.message = f"timing is implausible: {implausible}. Not passed."
        res.hint = (
            "Launch every kernel on the stream the launcher is given, and do all the work in the "
            "launcher's call; the grader times with events on that stream and checks the host clock."
        )
        return
    alone = t.get("gemm_alone")  # gemm_relu: the submission's own GEMM without the epilogue
    # held to the fused kernel with every output positive (the zeros are not what makes it faster; kept), else to the kernel
    dense_ms = t["fused_dense"]["median_ms"] if t.get("fused_dense") else k_ms
    if alone and alone["median_ms"] > OWN_GEMM_SLACK * dense_ms:
        res.message = (
            f"correct, but your `gemm` alone ({alone['median_ms']:.3f} ms) is slower than your fused "
            f"gemm_relu ({dense_ms:.3f} ms with a bias that makes every output positive), which does the "
            "same GEMM and more. The fusion is measured against your GEMM at full speed: make `gemm` the "
            "same kernel without the epilogue. Not passed."
        )
        res.hint = ex.slow_hint
        return
    res.passed = res.speedup is None or res.speedup >= ex.threshold
    verdict = "passed" if res.passed else "too slow"
    if not res.passed:
        res.hint = ex.slow_hint
    baseline = (
        "your gemm + a separate bias/ReLU/mask pass"
        if alone
        else "cuBLAS's speed (FP32, TF32 off)"
        if ex.baseline == "cublas"
        else f"the baseline {ex.baseline}"
    )
    res.message = (
        f"correct; {verdict}: {res.speedup:.2f}x {baseline} "
        f"(threshold {ex.threshold:.2f}x)"
        + (f", {res.pct_cublas:.0f}% of cuBLAS" if res.pct_cublas and ex.baseline != "cublas" else "")
        + (f", {100 * t['numpy']['median_ms'] / k_ms:.0f}% of numpy's speed" if t.get("numpy") else "")
        + (f"; the fused kernel takes {k_ms / alone['median_ms']:.3f}x your GEMM alone" if alone else "")
        + (f"; thresholds: {res.calibration}" if res.calibration else "")
    )
