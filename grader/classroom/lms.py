"""The grader where instructors already grade: Gradescope, GitHub Classroom, nbgrader.

Gradescope (https://gradescope-autograders.readthedocs.io/en/latest/specs/): the autograder's
`run_autograder` writes /autograder/results/results.json. `batch --format gradescope --out
/autograder/results/results.json` writes it from the upload, graded as one student's folder: one test
per check (correct on the test shapes; fast enough), each with score, max_score, status and
output, and the total as score. examples/gradescope/ holds a run_autograder and setup.sh.

GitHub Classroom: its command grader awards a test's points when the command exits 0, and
`python -m grader check` exits 0 only for a pass (1 failed, 2 could not grade):
examples/github-classroom/classroom.yml is the workflow, one step per check.

nbgrader: an autograder test cell is worth its points when it raises nothing; nbgrader_cells()
gives the two cells (correct; fast enough) that grade a notebook's kernel cell with grader.check.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from grader.judge.profile import EVIDENCE_CPU

# Points of each check, out of a submission's max_score 1 (the gradebook's score: 1 passed, 0.5 correct)
CORRECT_POINTS = 0.5
SPEED_POINTS = 0.5


def _yes(v) -> bool:
    return str(v) in ("True", "true", "1")


def gradescope_tests(row: dict, prefix: str = "") -> list[dict]:
    """Gradescope tests for one gradebook row: correctness, then speed."""
    message = str(row.get("message") or "")
    hint = str(row.get("hint") or "")
    detail = message + (f"\nHint: {hint}" if hint else "")
    correct, passed = _yes(row.get("correct")), _yes(row.get("passed"))
    name = f"{prefix}{row.get('exercise')}"
    tests = [
        {
            "name": f"{name}: correct on every test shape (fresh random inputs, float64 reference)",
            "score": CORRECT_POINTS if correct else 0.0,
            "max_score": CORRECT_POINTS,
            "status": "passed" if correct else "failed",
            "output": detail if not correct else message,
            "visibility": "visible",
        }
    ]
    if row.get("backend") == "cuda" and row.get("threshold") not in (None, ""):
        speed = (
            f"{float(row['speedup']):.2f}x the baseline, threshold {float(row['threshold']):.2f}x"
            if row.get("speedup") not in (None, "")
            else "not timed (the kernel is not correct)"
        )
    elif row.get("evidence") == EVIDENCE_CPU:  # the CPU backend judged the access counts (batch sets it on a miss)
        speed = (
            "not timed: on the CPU backend these points go to a correct kernel whose memory access counts "
            "meet the exercise's bounds"
            + (": this one misses the access bound (CPU)" if correct and not passed else "")
        )
    else:
        speed = "not measured: graded on the CPU backend (correctness only), so a correct kernel gets these points"
    tests.append(
        {
            "name": f"{name}: fast enough",
            "score": SPEED_POINTS if passed else 0.0,
            "max_score": SPEED_POINTS,
            "status": "passed" if passed else "failed",
            "output": speed + (f"\n{detail}" if correct and not passed else ""),
            "visibility": "visible",
        }
    )
    return tests


def gradescope_results(rows: list[dict], meta: dict, seconds: float | None = None) -> dict:
    """results.json for Gradescope from a batch's rows (usually one: the student's submission)."""
    tests = []
    several = len(rows) > 1
    for row in rows:
        tests += gradescope_tests(row, prefix=f"{row['student_id']}: " if several else "")
    if not rows:
        tests = [
            {
                "name": f"{meta.get('exercise')}: a kernel file",
                "score": 0.0,
                "max_score": CORRECT_POINTS + SPEED_POINTS,
                "status": "failed",
                "visibility": "visible",
                "output": "No submission found: upload the .cu file (or the notebook) for this exercise.",
            }
        ]
    score = round(sum(t["score"] for t in tests), 4)
    out = {
        "score": score,
        "output": _summary(rows, meta),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    if seconds is not None:
        out["execution_time"] = round(seconds, 1)
    return out


def _summary(rows: list[dict], meta: dict) -> str:
    backend = meta.get("backend")
    how = (
        "graded on a GPU: correctness and speed"
        + (f" (thresholds: {meta['calibration']})" if meta.get("calibration") else "")
        if backend == "cuda"
        else "graded on the CPU backend: correctness only, no timing"
    )
    verdicts = "; ".join(f"{r['student_id']}: {r.get('outcome', '')}" for r in rows)
    return f"{meta.get('exercise')}, {how}. {verdicts}".strip()


def write_gradescope(path, rows: list[dict], meta: dict, seconds: float | None = None) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(gradescope_results(rows, meta, seconds), indent=1))
    os.replace(tmp, path)


def nbgrader_cells(exercise: str, points_correct: float = 1, points_speed: float = 1) -> list[dict]:
    """Two nbgrader autograder test cells (code, with nbgrader metadata) for a notebook whose kernel
    cell assigns SOURCE: all-or-nothing each, as nbgrader grades test cells."""
    grade = (
        f"# Autograder test (correct): grades the kernel cell above (SOURCE) in a child process.\n"
        f"import grader\n"
        f"_verdict = grader.check({exercise!r}, SOURCE, display=False)\n"
        f"print(_verdict.message)\n"
        f"assert _verdict.correct, _verdict.message"
    )
    speed = (
        "# Autograder test (fast enough): on the CPU backend a correct kernel passes (no timing there).\n"
        "print(_verdict.message)\n"
        "assert _verdict.passed, _verdict.message"
    )

    def cell(source, grade_id, points):
        return {
            "cell_type": "code",
            "id": grade_id.replace("_", "-"),
            "execution_count": None,
            "outputs": [],
            "source": source,
            "metadata": {
                "nbgrader": {
                    "grade": True,
                    "solution": False,
                    "locked": True,
                    "task": False,
                    "points": points,
                    "grade_id": grade_id,
                    "schema_version": 3,
                }
            },
        }

    return [cell(grade, f"{exercise}_correct", points_correct), cell(speed, f"{exercise}_fast", points_speed)]
