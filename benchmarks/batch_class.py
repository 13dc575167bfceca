"""Time `python -m grader batch tiled` on a class of N submissions (the #5 target: 50 in <= 5 min
with 16 CPU cores on the H200).

The class: every known-good/bad submission of tests/submissions (compile errors, a hang, crashes,
forbidden calls, wrong results...) plus copies of the tiled-level reference kernels, each with a
student comment so that no two sources hash alike (every one is really compiled). Writes the
gradebook to $OUT (or /tmp/out) and prints the elapsed time and the verdict counts.

    python benchmarks/batch_class.py [N] [--jobs J] [--per-gpu K]
"""

import argparse
import collections
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOOD = ["02_tiled.cu", "03_conflict_free.cu", "01_naive.cu", "04a_register_1d.cu", "04_register_blocked.cu"]


def make_class(dest: Path, n: int) -> None:
    known = sorted((ROOT / "tests" / "submissions").glob("*.cu"))
    for i in range(n):
        if i < len(known):
            shutil.copy(known[i], dest / f"s{i:03d}_{known[i].stem}.cu")
        else:
            ref = GOOD[i % len(GOOD)]
            text = (ROOT / "kernels" / ref).read_text()
            (dest / f"s{i:03d}_{Path(ref).stem}.cu").write_text(f"// student {i}\n{text}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("n", type=int, nargs="?", default=50)
    p.add_argument("--jobs", type=int, default=0)
    p.add_argument("--exercise", default="tiled")
    p.add_argument("--per-gpu", type=int, default=2)
    args = p.parse_args()
    out = Path(os.environ.get("OUT", "/tmp/out"))
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        make_class(Path(d), args.n)
        t0 = time.perf_counter()
        rc = subprocess.call(
            [
                sys.executable,
                "-m",
                "grader",
                "batch",
                args.exercise,
                d,
                "--out",
                str(out / "grades.csv"),
                "--jobs",
                str(args.jobs),
                "--per-gpu",
                str(args.per_gpu),
            ]
        )
        elapsed = time.perf_counter() - t0
    rows = list(csv.DictReader(open(out / "grades.csv")))
    verdicts = collections.Counter(
        (r["compiled"], r["correct"], r["passed"] if "passed" in r else r["score"]) for r in rows
    )
    print(
        f"batch of {len(rows)} submissions ({args.exercise}, --per-gpu {args.per_gpu}): {elapsed:.0f} s, exit code {rc}"
    )
    print("(compiled, correct, passed/score): count", dict(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
