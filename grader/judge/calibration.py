"""Speed thresholds on any GPU: which calibration a verdict uses, and measuring one where none exists.

The committed thresholds (grader.spec.exercises) are 80 % of the slower shipped solution's speed-up as
measured on an H200. On another GPU the ratios differ (a T4 has other bandwidth and clocks), so:

    1. a thresholds file (--thresholds FILE / $GRADER_THRESHOLDS) wins          -> "file my.json"
    2. on an H200, the committed calibration                                     -> "H200 (committed)"
    3. a calibration measured earlier on this GPU model (cached)                 -> "measured on Tesla T4 (cached ...)"
    4. else measured now: the shipped solutions of the exercise (its reference kernel in kernels/
       and its solution notebook's kernel cell) are graded on this GPU and the threshold is
       CALIBRATION (80 %) of the slower one's speed-up, then cached per GPU model  -> "measured here on Tesla T4"

$GRADER_CALIBRATION=measure forces 4 (also on an H200: compare with the committed one);
=committed forces the H200 numbers anywhere. The verdict names the calibration it used.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from grader.spec import exercises
from grader.compile import toolchain

COMMITTED = "H200 (committed)"
GradeOne = Callable[[exercises.Exercise, str], object]  # (exercise at its threshold, source) -> Result


def gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name()


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "gpu"


def cache_path(gpu: str) -> Path:
    """One JSON per GPU model (and nvcc version: code generation changes speed-ups)."""
    return toolchain.cache_dir() / "calibration" / f"{_slug(gpu)}-nvcc{toolchain.nvcc_version() or 'none'}.json"


def solutions_dir() -> Path:
    """solutions/ of the checkout, else the copy a wheel carries beside kernels/ (setup.py)."""
    checkout = exercises.KERNELS_DIR.parent / "solutions"
    return checkout if checkout.is_dir() else exercises.KERNELS_DIR / "solutions"


def shipped_solutions(ex: exercises.Exercise) -> dict[str, str]:
    """label -> kernel source of each solution the course ships for `ex` (the ones the H200 calibration used)."""
    from grader.judge import submissions

    found = {}
    labels = exercises.SHIPPED_SPEEDUP_H200.get(ex.name)
    if labels is None:  # not calibrated on the H200 yet (PROVISIONAL_SPEEDUP_H200): the reference and every notebook
        labels = [ex.reference] + [p.name for p in sorted(solutions_dir().glob("*.ipynb"))]
    for label in labels:
        if label.endswith(".ipynb"):
            nb = solutions_dir() / label
            src = submissions.notebook_kernel(nb.read_text(), ex.name) if nb.is_file() else None
        else:
            path = exercises.KERNELS_DIR / label
            src = path.read_text() if path.is_file() else None
        if src is not None:
            found[label] = src
    return found


def measure(ex: exercises.Exercise, repeat: int | None = None, grade_one: GradeOne | None = None) -> dict:
    """Grade each shipped solution on this GPU; threshold = CALIBRATION x the slower one's speed-up.

    grade_one(ex, source) -> grader.judge.grade.Result grades at the threshold given (grader.judge.grade.grade_at):
    passed in, since the verdict sits above this module and calls it; its threshold is not used here."""
    if grade_one is None:
        raise TypeError("calibration.measure needs grade_one: pass functools.partial(grade.grade_at, backend='cuda')")
    repeat = repeat or int(os.environ.get("GRADER_CALIBRATION_REPEAT", "1"))
    speedups: dict[str, float] = {}
    for label, src in shipped_solutions(ex).items():
        runs = []
        for _ in range(repeat):
            r = grade_one(ex, src)
            if r.speedup is None or not r.correct:
                break
            runs.append(r.speedup)
        if runs:
            speedups[label] = sorted(runs)[len(runs) // 2]
    if not speedups:
        raise RuntimeError(f"no shipped solution of {ex.name} could be timed on this GPU")
    return {
        "threshold": threshold_from(ex.name, min(speedups.values())),
        "speedups": speedups,
        "measured": time.strftime("%Y-%m-%d %H:%M"),
        "gpu": gpu_name(),
        "nvcc": toolchain.nvcc_version(),
    }


def threshold_from(exercise: str, slower: float) -> float:
    """The threshold for this GPU from the slower shipped solution's speed-up: CALIBRATION x it, or the
    exercise's fixed bar (exercises.FIXED_BARS) where the shipped solutions clear that bar by 2 %; where
    they do not, 95 % of the slower one (on that GPU even the course's kernels do not beat the bar)."""
    bar = exercises.FIXED_BARS.get(exercise)
    if bar is None:
        return round(exercises.CALIBRATION * slower, 2)
    return bar if slower >= 1.02 * bar else round(0.95 * slower, 2)


@contextlib.contextmanager
def _locked(path: Path):
    """One process measures a GPU model's calibration; the others wait and read it."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def resolve(
    ex: exercises.Exercise, thresholds_file=None, grade_one: GradeOne | None = None
) -> tuple[exercises.Exercise, str]:
    """(the exercise with the threshold to use on this GPU, which calibration that is). grade_one: how
    to grade a shipped solution where this GPU must be measured (see measure)."""
    path = thresholds_file or os.environ.get("GRADER_THRESHOLDS")
    if path and ex.name in exercises.load_thresholds(path):
        return ex, f"file {Path(path).name}"
    mode = os.environ.get("GRADER_CALIBRATION", "auto")
    if ex.threshold is None or mode == "committed":
        return ex, COMMITTED
    gpu = gpu_name()
    if mode != "measure" and "H200" in gpu:
        return ex, COMMITTED
    cache = cache_path(gpu)
    with _locked(cache):
        known = _read(cache)
        entry = known.get(ex.name)
        how = f"measured on {gpu} ({entry['measured']}, cached in {cache})" if entry else ""
        if not entry:
            entry = measure(ex, grade_one=grade_one)
            known[ex.name] = entry
            tmp = cache.with_suffix(".tmp")
            tmp.write_text(json.dumps(known, indent=1))
            os.replace(tmp, cache)
            how = f"measured here on {gpu}: {exercises.CALIBRATION:.0%} of the slower shipped solution"
    return replace(ex, threshold=float(entry["threshold"])), how
