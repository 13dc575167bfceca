"""On the H200: does a calibration measured in the run (grader.judge.calibration, what a GPU without one gets)
give the same verdicts as the committed H200 calibration?

For every exercise: measure() grades each shipped solution `--repeat` times (reference kernel and
solution notebook) and takes 80 % of the slower one's median speed-up; a probe that must fail the
speed check (the exercise's baseline kernel, where it is a kernel file of the same contract) is graded
once. Each kernel's verdict is then decided under both thresholds. Prints a table, writes JSON, and
exits 1 when any verdict differs.

    python benchmarks/calibration_check.py [--repeat 3] [--json $OUT/calibration_check.json]
"""

import argparse
import functools
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.judge import calibration, grade
from grader.spec import exercises  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--exercises", nargs="*", default=list(exercises.SHIPPED_SPEEDUP_H200))
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args()

    rows, differ = [], 0
    print(f"GPU: {calibration.gpu_name()}")
    for name in args.exercises:
        ex = exercises.get(name)
        m = calibration.measure(ex, repeat=args.repeat, grade_one=functools.partial(grade.grade_at, backend="cuda"))
        kernels = dict(m["speedups"])
        if ex.baseline_path and ex.baseline_exercise == name:  # a kernel that must be too slow
            with tempfile.TemporaryDirectory() as tmp:
                f = Path(tmp, "t.json")
                f.write_text(json.dumps({name: 0.0}))
                r = grade.grade(name, ex.baseline_path, backend="cuda", thresholds_file=f)
            if r.speedup is not None:
                kernels[f"{ex.baseline} (baseline)"] = r.speedup
        for label, s in kernels.items():
            committed, measured = s >= ex.threshold, s >= m["threshold"]
            differ += committed != measured
            rows.append(
                {
                    "exercise": name,
                    "kernel": label,
                    "speedup": round(s, 3),
                    "committed_threshold": ex.threshold,
                    "measured_threshold": m["threshold"],
                    "committed_verdict": committed,
                    "measured_verdict": measured,
                }
            )
            print(
                f"{name:<17} {label:<34} {s:6.3f}x  committed {ex.threshold:5.2f} -> "
                f"{'pass' if committed else 'FAIL'}   measured {m['threshold']:5.2f} -> "
                f"{'pass' if measured else 'FAIL'}{'   DIFFERENT' if committed != measured else ''}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"gpu": calibration.gpu_name(), "rows": rows}, indent=1))
    print(f"\n{differ} verdict(s) differ" if differ else "\nsame verdicts under both calibrations")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
