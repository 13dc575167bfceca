"""Edit -> graded verdict: how long `grader.check` takes after a kernel file changed.

For each exercise the course's reference kernel gets a fresh comment (a new source: it must
be compiled again, as after a learner's edit), then grader.check grades it; the time from
the edit to the Result is one sample. Median of --edits samples per exercise.

Targets (issue #13.10): within 2.5 s on the H200, within 3 s on the CPU backend.

    python benchmarks/verdict_latency.py                   # auto backend, 3 edits each
    python benchmarks/verdict_latency.py --backend cpu --edits 5
    GRADER_FORKSERVER=0 python benchmarks/verdict_latency.py   # without the warm template (before)
    GRADER_PRESTART=0 python benchmarks/verdict_latency.py     # the worker started after the build, not during it

It prints one line per exercise and a JSON summary (--json FILE writes it too). The first
check of a session also starts the template (grader.run.forkserver); like a notebook's first cell
it is reported separately ("first") and not counted in the median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import grader  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = ["naive", "tiled", "register_blocked", "relu_mask"]


def one_edit(exercise: str, source: str, backend: str, tag: str) -> tuple[float, bool, dict]:
    edited = source + f"\n// edit {tag}\n"
    t0 = time.perf_counter()
    r = grader.check(exercise, edited, backend=backend, display=False)
    return time.perf_counter() - t0, r.passed, r.phases or {}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--edits", type=int, default=3)
    ap.add_argument("--exercises", nargs="*", default=DEFAULT)
    ap.add_argument("--json", help="also write the summary here")
    args = ap.parse_args(argv)
    backend = grader.resolve_backend(args.backend)
    from grader.run import sandbox

    launcher = getattr(sandbox, "launcher_name", lambda: "subprocess")
    summary = {"backend": backend, "launcher": launcher(), "edits": args.edits, "exercises": {}}
    first = None
    for ex in args.exercises:
        source = open(os.path.join(ROOT, _reference(ex))).read()
        samples, passed, phases = [], [], []
        for i in range(args.edits + (first is None)):
            s, ok, ph = one_edit(ex, source, backend, f"{time.time_ns()}-{i}")
            if first is None:
                first = s
                continue
            samples.append(s)
            passed.append(ok)
            phases.append(ph)
        med = statistics.median(samples)
        # where the time went: the median of each part over the edits (grade.Result.phases)
        parts = {k: round(statistics.median(p.get(k, 0.0) for p in phases), 3) for k in phases[0]} if phases else {}
        summary["exercises"][ex] = {
            "median_s": round(med, 3),
            "max_s": round(max(samples), 3),
            "samples_s": [round(s, 3) for s in samples],
            "all_passed": all(passed),
            "phases_s": parts,
        }
        print(
            f"{ex:18} median {med:5.2f} s  max {max(samples):5.2f} s  ({len(samples)} edits, "
            f"{'all passed' if all(passed) else 'NOT ALL PASSED'})\n    "
            + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()),
            flush=True,
        )
    summary["first_check_s"] = round(first or 0.0, 3)
    summary["launcher"] = launcher()
    print(f"first check of the session (starts the template): {first:.2f} s; launcher: {summary['launcher']}")
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 0


def _reference(exercise: str) -> str:
    """The course's reference kernel file of an exercise (exercises.Exercise.reference_path)."""
    from grader.spec import exercises

    return str(exercises.get(exercise).reference_path)


if __name__ == "__main__":
    sys.exit(main())
