"""`python -m grader batch EXERCISE DIR [--out grades.csv] [--jobs N]`: grade a folder.

One submission per entry of DIR: a .cu file, a notebook (its kernel cell), or a student
folder (grader.judge.submissions says how each is found).

Two phases: every submission is compiled first, `--jobs` at a time (nvcc or g++ use
the CPUs); then each is run and checked in its own child process: on a GPU one at a
time per GPU (timing must not share the chip), on the CPU backend `--jobs` at a time.
With `per_gpu` K (default 2), K children per GPU start at once and queue on a lock file
for the GPU itself: starts and checks overlap, kernels and timings never do (K=1: strictly one
child per GPU).
The gradebook (CSV, and JSON beside it) is rewritten after every submission, so an
interrupted batch loses nothing; a rerun regrades only submissions whose source,
exercise, backend, thresholds or grader changed. One broken submission never stops
the batch: anything that goes wrong becomes that submission's message.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

from grader.errors import CannotGrade, GraderError
from grader.classroom.gradebook import FIELDS, write_gradebook  # noqa: F401  (batch.FIELDS, as before)
from grader.judge.submissions import Submission, discover, kernel_filename

# ---------------------------------------------------------------------------- gradebook
GRADING_MODULES = (  # dotted names: they stay right wherever the modules live
    "grader.judge.grade",
    "grader.spec.checks",
    "grader.run.worker",
    "grader.run.sandbox",
    "grader.run.protocol",
    "grader.spec.exercises",
    "grader.judge.submissions",
    "grader.judge.profile",
    "grader.compile.forbidden",
    "grader.compile.linkcheck",
    "grader.spec.contract",
    "grader.compile.toolchain",
    "grader.run.binding",
    "grader.run.timing",
    "grader.errors",
    "grader.compile.bounded",
)


def _module_files() -> list[Path]:
    from importlib.util import find_spec

    cpu = Path(next(iter(find_spec("grader.compile.cpu").submodule_search_locations)))
    return [Path(find_spec(n).origin) for n in GRADING_MODULES] + sorted(cpu.glob("*"))


def grader_version() -> str:
    """A hash of the code that decides a verdict (and of the CPU backend): a change regrades everything."""
    h = hashlib.sha256()
    for p in _module_files():
        if p.is_file():
            h.update(p.name.encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def load_gradebook(path: Path) -> dict[str, dict]:
    """Rows of an earlier run, by student id (the JSON beside the CSV, else the CSV)."""
    js = path.with_suffix(".json")
    try:
        if js.exists():
            rows = json.loads(js.read_text())["grades"]
        elif path.exists():
            with path.open(newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
        else:
            return {}
    except (OSError, ValueError, KeyError, csv.Error):
        return {}
    return {r["student_id"]: r for r in rows if "student_id" in r}


def check_writable(path: Path, flag: str) -> None:
    """CannotGrade (exit 2) now, before any grading, when `path` cannot be written (its folder is made)."""
    what = f"{flag} {path}: cannot write there"
    if path.is_dir():
        raise CannotGrade(f"{what} (a folder of that name exists)")
    probe = path.with_name(path.name + ".tmp")  # what the writers write, then rename
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        probe.touch()
        probe.unlink()
    except OSError as e:
        raise CannotGrade(f"{what} ({e.strerror or e})") from None


# what went wrong, in a word, from the verdict's message (first match wins)
_OUTCOMES = [
    (("could not grade",), "could not grade"),
    (("forbidden:",), "forbidden"),
    (("does not compile",), "does not compile"),
    (
        (
            "is empty",
            "not a UTF-8",
            "no kernel cell",
            "no .cu file",
            "several candidate files",
            "not a readable notebook",
            "a notebook may be at most",
            "several files marked",
            "is a link to a file outside",
            "cannot be read",
            "cell is not valid Python",
            "does not set SOURCE",
        ),
        "nothing to grade",
    ),
    (("launcher `",), "missing launcher"),
    (("result channel was tampered",), "tampered with the grader"),
    (("wrong in the timed runs", "at the timed size", "the timed run at"), "wrong when timed"),
    (("did not finish", "time limit", "the kernel timed out"), "hang"),
    (
        # (the CPU backend's out-of-bounds reads, accesses and copies, with their line, as `check` shows them)
        (
            "illegal memory access",
            "crashed",
            "wrote past",
            "wrote before",
            "out-of-bounds",
            "CUDA error",
            "AddressSanitizer",
        ),
        "crash or out of bounds",
    ),
    (("wrote to its input",), "wrote its inputs"),
    (("exactly the answer",), "replayed an answer"),
]


ACCESS_MISS = "misses this exercise's idea"  # grade._verdict_access's message when a bound is missed
ACCESS_MISSED = "misses the access bound (CPU)"


def outcome(row: dict) -> str:
    """One word for the gradebook and the summary: passed, too slow, hang, wrong results, ..."""

    def yes(v) -> bool:
        return str(v) in ("True", "true", "1")

    msg = str(row.get("message") or "")
    if yes(row.get("passed")):
        return "passed"
    if yes(row.get("correct")):
        if ACCESS_MISS in msg:  # the CPU backend's verdict: no timing, the access counts decided (grade.py)
            return ACCESS_MISSED
        return "too slow" if "too slow" in msg else "timing not accepted"
    return next((name for keys, name in _OUTCOMES if any(k in msg for k in keys)), "wrong results")


def score(passed: bool, correct: bool) -> float:
    """1 for a pass; 0.5 for a correct kernel below the speed threshold; else 0."""
    return 1.0 if passed else 0.5 if correct else 0.0


# ---------------------------------------------------------------------------- grading
class _Progress:
    """tqdm when installed, else a line per submission on stderr."""

    def __init__(self, total: int, desc: str):
        self.n, self.total, self.desc = 0, total, desc
        try:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="sub", file=sys.stderr)
        except ImportError:
            self.bar = None
        self.lock = threading.Lock()

    def update(self, label: str) -> None:
        with self.lock:
            self.n += 1
            if self.bar is not None:
                self.bar.set_postfix_str(label[:30], refresh=False)
                self.bar.update(1)
            else:
                print(f"[{self.n}/{self.total}] {self.desc}: {label}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _row(
    sub: Submission,
    exercise: str,
    backend: str,
    key: str,
    version: str,
    r=None,
    message: str = "",
    seconds: float = 0.0,
) -> dict:
    passed = bool(r and r.passed)
    correct = bool(r and r.correct)
    s = score(passed, correct)
    row = {
        "student_id": sub.student_id,
        "assignment": exercise,
        "exercise": exercise,
        "backend": backend,
        "compiled": bool(r and r.compiled),
        "correct": correct,
        "passed": passed,
        "speedup": round(r.speedup, 4) if r and r.speedup is not None else None,
        "threshold": r.threshold if r else None,
        "pct_cublas": round(r.pct_cublas, 1) if r and r.pct_cublas is not None else None,
        "raw_score": s,
        "score": s,
        "max_score": 1.0,
        "message": (r.message if r else message),
        "hint": r.hint if r else "",
        "file": str(sub.path) if sub.path else "",
        "source_sha256": key,
        "grader_version": version,
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(seconds, 2),
        # what the verdict rests on: "timed on GPU" or "access counts (CPU, no timing)" (grader.judge.profile)
        "evidence": r.evidence if r and r.compiled else "",
    }
    row["outcome"] = outcome(row)  # an access-bound miss: evidence "access counts" (grade sets it)
    return row


def run_batch(
    exercise: str,
    root,
    out,
    *,
    jobs: int = 0,
    backend: str = "auto",
    thresholds=None,
    timeout: float | None = None,
    compile_timeout: float | None = None,
    gpus: int | None = None,
    regrade: bool = False,
    progress: bool = True,
    per_gpu: int = 2,
    require_gpu: bool = False,
    shard: tuple[int, int] | None = None,
    one: bool = False,
) -> list[dict]:
    """Grade every submission in `root` into the gradebook `out` (CSV; JSON beside it).
    one: `root` is one student's upload (Gradescope), graded as a student folder: one row.
    require_gpu: only timed GPU verdicts (CannotGrade on a machine without a GPU).
    shard=(I, N): only share I of N (grader.classroom.merge), the JSON records the roster for `merge`."""
    from grader.classroom import merge
    from grader.run import sandbox

    ex, backend, calibrated = _settle(exercise, backend, thresholds, require_gpu)
    root, out = Path(root), Path(out)
    _check_paths(root, out)
    sandbox.hide(root, out.parent)
    jobs = jobs or max(1, (os.cpu_count() or 2))
    version = grader_version()
    subs = discover(root, exercise, one=one)
    roster = [s.student_id for s in subs]
    if shard:
        subs = merge.select(subs, *shard)
    old = {} if regrade else load_gradebook(out)
    ident = f"{exercise}|{backend}|{ex.threshold}|{version}|{timeout}|{compile_timeout}"
    rows, todo = _plan(subs, old, ident)
    meta = {
        "exercise": exercise,
        "backend": backend,
        "threshold": ex.threshold,
        "calibration": calibrated,
        "grader_version": version,
        "dir": str(root),
    }
    if shard:
        meta |= merge.shard_meta(roster, *shard)
    lock = threading.Lock()

    def record(row: dict) -> None:
        with lock:
            rows[row["student_id"]] = row
            write_gradebook(out, [rows[s.student_id] for s in subs if s.student_id in rows], meta)

    _compile_all(todo, exercise, backend, compile_timeout, jobs, progress)
    grade_kw = {
        "backend": backend,
        "thresholds_file": thresholds,
        "timeout": timeout,
        "compile_timeout": compile_timeout,
    }
    _grade_all(todo, exercise, version, grade_kw, record, jobs=jobs, gpus=gpus, per_gpu=per_gpu, progress=progress)
    final = [rows[s.student_id] for s in subs if s.student_id in rows]
    write_gradebook(out, final, meta)
    return final


def _settle(exercise: str, backend: str, thresholds, require_gpu: bool):
    """(the exercise at this GPU's threshold, the backend, the calibration's name): once, before any grading;
    CannotGrade for an unknown exercise, bad thresholds or a --require-gpu that cannot be met."""
    from grader.run import binding
    from grader.judge import calibration, grade
    from grader.spec import exercises

    ex = exercises.get(exercise, thresholds)  # unknown exercise / bad thresholds: CannotGrade
    require_gpu = require_gpu and not ex.kind.host  # host-code exercises are timed on the CPU anyway
    if require_gpu and backend == "cpu":
        raise CannotGrade("--require-gpu asks for timed GPU verdicts, but --backend cpu was given")
    backend = binding.resolve_backend(backend)
    if require_gpu and backend != "cuda":
        raise CannotGrade(
            "--require-gpu: this machine has no GPU torch can use, and CPU-backend verdicts "
            "(access counts, no timing) are not accepted; grade on a GPU machine"
        )
    calibrated = ""
    if backend == "cuda" and ex.threshold is not None:  # once, before the parallel phase (grader.judge.calibration)
        ex, calibrated = calibration.resolve(ex, thresholds, functools.partial(grade.grade_at, backend="cuda"))
    return ex, backend, calibrated


def _check_paths(root: Path, out: Path) -> None:
    if not root.is_dir():
        raise CannotGrade(f"{root}: not a folder of submissions")
    if out.suffix.lower() == ".json":
        raise CannotGrade(f"--out {out}: name the CSV gradebook (e.g. grades.csv); the JSON is written beside it")
    # the workers see neither the submissions nor the gradebook; its folder is made now, so that the
    # sandbox's policy (what it hides) is the same for the whole run
    for path in (out, out.with_suffix(".json")):
        check_writable(path, "--out")


def _plan(subs: list[Submission], old: dict, ident: str) -> tuple[dict[str, dict], list[tuple[Submission, str]]]:
    """(rows kept from the earlier gradebook, the submissions to grade with their keys)."""
    rows: dict[str, dict] = {}
    todo: list[tuple[Submission, str]] = []
    for sub in subs:
        key = hashlib.sha256(f"{ident}|{sub.sha256}".encode()).hexdigest()[:24]
        prev = old.get(sub.student_id)
        if prev and prev.get("source_sha256") == key and not str(prev.get("message", "")).startswith("could not grade"):
            rows[sub.student_id] = prev | {"outcome": prev.get("outcome") or outcome(prev)}
        else:
            todo.append((sub, key))
    return rows, todo


def _compile_all(todo: list, exercise: str, backend: str, compile_timeout, jobs: int, progress: bool) -> None:
    """Phase 1: compile, `jobs` at a time (builds are cached: phase 2 finds them, or their error)."""
    from grader.compile import forbidden, toolchain

    bar = _Progress(len(todo), f"compile {exercise}") if progress and todo else None

    def compile_one(item):
        sub, _ = item
        try:
            if (
                isinstance(sub.source, str)
                and sub.source.strip()
                and not forbidden.scan(sub.source, timeout=compile_timeout)
            ):
                # the file name phase 2 gives it (grade reads the file), so phase 2 finds this build or its error
                toolchain.build(
                    sub.source,
                    backend=backend,
                    exercise=exercise,
                    timeout=compile_timeout,
                    filename=kernel_filename(sub.path),
                )
        except GraderError:
            pass  # phase 2 grades it again and reports the error
        except Exception:  # noqa: BLE001 — never stop the batch
            pass
        if bar:
            bar.update(sub.student_id)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(compile_one, todo))
    if bar:
        bar.close()


def _grade_all(todo: list, exercise: str, version: str, grade_kw: dict, record, *, jobs, gpus, per_gpu, progress):
    """Phase 2: run and check. On a GPU `per_gpu` children per GPU, queued on a lock file for the GPU
    itself; on the CPU backend `jobs` at a time. Each row is recorded (the gradebook rewritten) as it comes."""
    from grader.run import sandbox

    backend, timeout = grade_kw["backend"], grade_kw["timeout"]
    n_gpus = 1
    if backend == "cuda":
        import torch

        n_gpus = max(1, min(gpus or torch.cuda.device_count(), torch.cuda.device_count()))
    per_gpu = max(1, per_gpu) if backend == "cuda" else 1
    workers = n_gpus * per_gpu if backend == "cuda" else jobs
    bar = _Progress(len(todo), f"grade {exercise}") if progress and todo else None
    free_gpus = [g for g in range(n_gpus) for _ in range(per_gpu)]
    gpu_lock = threading.Lock()
    lock_dir = tempfile.TemporaryDirectory(prefix="grader-gpu-locks-") if per_gpu > 1 else None
    lock_wait = (per_gpu - 1) * ((timeout or sandbox.RUN_TIMEOUT_S) + 30.0)

    def grade_one(item):
        sub, key = item
        t0 = time.perf_counter()
        gpu = None
        if backend == "cuda" and (n_gpus > 1 or lock_dir):
            with gpu_lock:
                gpu = free_gpus.pop()
        where = {
            "gpu": gpu if n_gpus > 1 else None,
            "gpu_lock": f"{lock_dir.name}/gpu{gpu}.lock" if lock_dir else None,
            "lock_wait": lock_wait,
        }
        try:
            row = _grade_row(sub, key, exercise, version, grade_kw | where, t0)
        finally:
            if gpu is not None:
                with gpu_lock:
                    free_gpus.append(gpu)
        row["seconds"] = round(time.perf_counter() - t0, 2)
        record(row)
        if bar:
            bar.update(sub.student_id)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(grade_one, todo))
    if bar:
        bar.close()
    if lock_dir:
        lock_dir.cleanup()


def _grade_row(sub: Submission, key: str, exercise: str, version: str, kw: dict, t0: float) -> dict:
    """One submission's gradebook row; anything that goes wrong becomes its message."""
    from grader.judge import grade

    backend = kw["backend"]
    try:
        if sub.source is None:
            return _row(sub, exercise, backend, key, version, message=sub.problem)
        src = sub.source
        if sub.path:  # the file itself: its name in diagnostics; a notebook's SOURCE is never a path
            src = sub.path
        r = grade.grade(exercise, src, **kw)
        return _row(sub, exercise, backend, key, version, r, seconds=time.perf_counter() - t0)
    except GraderError as e:
        return _row(sub, exercise, backend, key, version, message=f"could not grade: {e}")
    except Exception as e:  # noqa: BLE001 — one broken submission never stops the batch
        return _row(
            sub, exercise, backend, key, version, message=f"could not grade: internal error {type(e).__name__}: {e}"
        )


def main(args, chart=None) -> int:
    """CLI entry: 0 when every submission got a verdict, 1 when some could not be graded.
    chart(rows, exercise, path): draws --plot (the CLI passes the course's chart: grader.course.plots)."""
    t0 = time.perf_counter()
    fmt = getattr(args, "format", "csv") or "csv"
    shard = None
    if getattr(args, "shard", None):
        from grader.classroom import merge

        shard = merge.parse(args.shard)
    gradebook = args.out
    if fmt == "gradescope":  # --out names results.json; the gradebook goes beside it
        if Path(args.out).suffix.lower() != ".json":
            raise CannotGrade(f"--format gradescope: --out names Gradescope's results.json, not {args.out}")
        gradebook = str(Path(args.out).with_name(Path(args.out).stem + "-gradebook.csv"))
        check_writable(Path(args.out), "--out")
    rows = run_batch(
        args.exercise,
        args.dir,
        gradebook,
        jobs=args.jobs,
        backend=args.backend,
        thresholds=args.thresholds,
        timeout=getattr(args, "timeout", None),
        compile_timeout=getattr(args, "compile_timeout", None),
        gpus=getattr(args, "gpus", None),
        regrade=getattr(args, "regrade", False),
        progress=not getattr(args, "quiet", False),
        per_gpu=getattr(args, "per_gpu", 2),
        require_gpu=getattr(args, "require_gpu", False),
        shard=shard,
        one=fmt == "gradescope",  # results.json is one student's: the upload is their folder
    )
    if fmt == "gradescope":
        from grader.classroom import lms

        meta = json.loads(Path(gradebook).with_suffix(".json").read_text())
        lms.write_gradescope(args.out, rows, meta, time.perf_counter() - t0)
    n = len(rows)
    passed = sum(1 for r in rows if str(r["passed"]) in ("True", "true", "1"))
    failed_infra = sum(1 for r in rows if str(r["message"]).startswith("could not grade"))
    print(
        f"{args.exercise}: {n} submissions, {passed} passed, {n - passed - failed_infra} failed"
        + (f", {failed_infra} could not be graded" if failed_infra else "")
        + f"; gradebook {gradebook} (+ {Path(gradebook).with_suffix('.json').name}) "
        + (f"; Gradescope results {args.out} " if fmt == "gradescope" else "")
        + f"in {time.perf_counter() - t0:.1f} s"
    )
    if rows:
        counts = Counter(r["outcome"] for r in rows)
        print("outcomes: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    if getattr(args, "plot", None) and rows and chart:
        chart(rows, args.exercise, args.plot)
        print(f"chart: {args.plot}")
    return 1 if failed_infra else 0
