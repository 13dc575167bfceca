"""Calibrate the grader's speed thresholds on this GPU (README: "Speed thresholds").

Grades, `--repeat` times each, every exercise's reference kernel in kernels/ and the solution in
each solutions/ notebook that has a kernel cell for that exercise (the kernel a learner who
follows the course ends up with), plus any `--extra EXERCISE=FILE.cu`. Prints the speed-ups
over each exercise's baseline (median, min-max) and a threshold of CALIBRATION (80 %) of the
slower of the reference and the notebook solutions, so that both pass. `--save FILE.json`
writes those thresholds in the format of `--thresholds` / $GRADER_THRESHOLDS.

    python benchmarks/calibrate.py [--repeat 3] [--exercises tiled relu_mask] [--extra relu_mask=my.cu]
                                   [--save my_gpu.json]
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.judge import calibration, grade, submissions
from grader.spec import exercises  # noqa: E402


def candidates(ex: exercises.Exercise, extra: list[str]) -> dict[str, str]:
    """label -> kernel source: the reference, the notebook solutions, the extras."""
    found = {ex.reference: ex.reference_path.read_text()}
    for nb in sorted((ROOT / "solutions").glob("*.ipynb")):
        src = submissions.notebook_kernel(nb.read_text(), ex.name)
        if src is not None:
            found[nb.name] = src
    for item in extra:
        name, _, path = item.partition("=")
        if name == ex.name:
            found[Path(path).name] = Path(path).read_text()
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--exercises", nargs="*", default=list(exercises.EXERCISES))
    p.add_argument("--extra", action="append", default=[], metavar="EXERCISE=FILE.cu")
    p.add_argument("--save", metavar="FILE.json")
    args = p.parse_args()

    thresholds = {}
    for name in args.exercises:
        ex = exercises.get(name)
        medians = {}
        for label, src in candidates(ex, args.extra).items():
            runs = []
            for _ in range(args.repeat):
                r = grade.grade(name, src, backend="cuda")
                if r.speedup is None or not r.correct:
                    print(f"{name:<17} {label:<28} not timed: {r.message.splitlines()[0] if r.message else '?'}")
                    break
                runs.append(r.speedup)
            if runs:
                medians[label] = statistics.median(runs)
                print(
                    f"{name:<17} {label:<28} {medians[label]:6.3f}x  ({min(runs):.3f}-{max(runs):.3f}, "
                    f"{len(runs)} grades; threshold now {ex.threshold:.2f}x)",
                    flush=True,
                )
        shipped = [v for k, v in medians.items() if k == ex.reference or k.endswith(".ipynb")]
        if shipped:
            thresholds[name] = calibration.threshold_from(name, min(shipped))
            how = (
                f"the fixed bar {exercises.FIXED_BARS[name]:.2f}x, or 95 % of the slower shipped solution below it"
                if name in exercises.FIXED_BARS
                else f"{exercises.CALIBRATION:.0%} of the slower shipped solution"
            )
            print(f"{name:<17} -> threshold {thresholds[name]:.2f}x ({how}, {min(shipped):.3f}x)", flush=True)
    if args.save:
        Path(args.save).write_text(json.dumps(thresholds, indent=1) + "\n")
        print(f"wrote {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
