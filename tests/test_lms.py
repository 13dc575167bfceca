"""The platform adapters against the platforms' documented formats: Gradescope's results.json and
GitHub Classroom's command grader (nbgrader: tests/test_nbgrader.py, through nbgrader itself)."""

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from grader import cli
from grader.classroom import lms

ROOT = Path(__file__).resolve().parent.parent
SUBS = ROOT / "tests" / "submissions"

# Gradescope's documented results.json (gradescope-autograders.readthedocs.io, "Autograder Specifications")
GS_TOP = {
    "score",
    "execution_time",
    "output",
    "output_format",
    "test_output_format",
    "test_name_format",
    "visibility",
    "stdout_visibility",
    "extra_data",
    "tests",
    "leaderboard",
}
GS_TEST = {
    "score",
    "max_score",
    "status",
    "name",
    "name_format",
    "number",
    "output",
    "output_format",
    "tags",
    "visibility",
    "extra_data",
}
GS_VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


def assert_gradescope_results(data: dict) -> None:
    """What Gradescope's spec says a results.json may hold, with the documented types and values."""
    assert set(data) <= GS_TOP, set(data) - GS_TOP
    assert "score" in data or all("score" in t for t in data.get("tests", []))
    if "score" in data:
        assert isinstance(data["score"], (int, float))
    for key in ("visibility", "stdout_visibility"):
        if key in data:
            assert data[key] in GS_VISIBILITY
    for t in data.get("tests", []):
        assert set(t) <= GS_TEST, set(t) - GS_TEST
        assert isinstance(t.get("score", 0), (int, float)) and isinstance(t.get("max_score", 0), (int, float))
        assert t.get("status", "passed") in ("passed", "failed")
        assert isinstance(t.get("name", ""), str) and isinstance(t.get("output", ""), str)
        assert t.get("visibility", "visible") in GS_VISIBILITY
        assert 0 <= t["score"] <= t["max_score"]
    json.dumps(data)


def _row(**kw):
    row = {
        "student_id": "ann",
        "exercise": "tiled",
        "backend": "cuda",
        "compiled": True,
        "correct": False,
        "passed": False,
        "speedup": None,
        "threshold": 1.28,
        "message": "",
        "hint": "",
        "outcome": "",
    }
    return row | kw


def test_gradescope_scores_follow_the_gradebook():
    meta = {"exercise": "tiled", "backend": "cuda", "calibration": "H200 (committed)"}
    cases = [
        (_row(correct=True, passed=True, speedup=1.6, message="correct; passed"), 1.0),
        (_row(correct=True, speedup=1.1, message="correct; too slow", hint="tile it"), 0.5),
        (_row(message="wrong on 17x33x65", hint="check the tail"), 0.0),
        (_row(compiled=False, message="could not grade: no C++ compiler"), 0.0),
    ]
    for row, score in cases:
        data = lms.gradescope_results([row], meta, seconds=3.2)
        assert_gradescope_results(data)
        assert data["score"] == score and sum(t["score"] for t in data["tests"]) == score
        assert sum(t["max_score"] for t in data["tests"]) == 1.0
        assert row["message"] in json.dumps(data["tests"])
    slow = lms.gradescope_results([cases[1][0]], meta)
    speed = slow["tests"][1]["output"]
    assert "1.10x the baseline, threshold 1.28x" in speed and "tile it" in speed
    assert "H200 (committed)" in slow["output"]
    assert_gradescope_results(lms.gradescope_results([], meta))


def test_batch_format_gradescope_end_to_end(tmp_path):
    sub = tmp_path / "submission"  # Gradescope's /autograder/submission: the student's upload
    sub.mkdir()
    shutil.copy(SUBS / "good_naive.cu", sub / "naive.cu")
    results = tmp_path / "results" / "results.json"
    assert (
        cli.main(
            ["batch", "naive", str(sub), "--backend", "cpu", "--format", "gradescope", "--out", str(results), "--quiet"]
        )
        == 0
    )
    data = json.loads(results.read_text())
    assert_gradescope_results(data)
    assert data["score"] == 1.0 and [t["status"] for t in data["tests"]] == ["passed", "passed"]
    assert "CPU backend" in data["output"] and "execution_time" in data
    assert (tmp_path / "results" / "results-gradebook.csv").is_file()
    assert cli.main(["batch", "naive", str(sub), "--format", "gradescope", "--out", str(tmp_path / "r.csv")]) == 2


def test_gradescope_example_calls_the_grader_as_documented():
    script = (ROOT / "examples" / "gradescope" / "run_autograder").read_text()
    assert script.startswith("#!") and "/autograder/results/results.json" in script
    cmd = script.split("python3 -m grader ", 1)[1].split("\nstatus", 1)[0].replace("\\\n", " ")
    args = cli.parser().parse_args(shlex.split(cmd.replace("$EXERCISE", "tiled").replace('"', "")))
    assert args.format == "gradescope" and args.dir == "/autograder/submission"


def test_github_classroom_workflow_and_its_exit_codes(tmp_path):
    wf = yaml.safe_load((ROOT / "examples" / "github-classroom" / "classroom.yml").read_text())
    steps = wf["jobs"]["run-autograding-tests"]["steps"]
    graders = [s for s in steps if str(s.get("uses", "")).startswith("education/autograding-command-grader@")]
    reporter = next(s for s in steps if str(s.get("uses", "")).startswith("education/autograding-grading-reporter@"))
    assert wf["permissions"]["checks"] == "write" and graders
    # the command grader's documented inputs; the reporter reads <STEP ID>_RESULTS for each runner id
    for s in graders:
        assert set(s["with"]) <= {"test-name", "setup-command", "command", "timeout", "max-score"}
        assert {"test-name", "command"} <= set(s["with"]) and 0 < s["with"]["timeout"] <= 360
        assert reporter["env"][f"{s['id'].upper()}_RESULTS"] == f"${{{{steps.{s['id']}.outputs.result}}}}"
    assert reporter["with"]["runners"].split(",") == [s["id"] for s in graders]

    # exit 0 (the points) only for a passing kernel: run the step's own command on three student repos
    command = graders[0]["with"]["command"]
    assert command.startswith("python -m grader check ")
    args = shlex.split(command)
    student_file = args[5]  # python -m grader check EXERCISE FILE ...
    for kernel, expected in ((ROOT / "kernels" / "02_tiled.cu", 0), (SUBS / "missing_bounds.cu", 1), (None, 2)):
        repo = tmp_path / f"repo{expected}"
        repo.mkdir()
        if kernel:
            shutil.copy(kernel, repo / student_file)
        r = subprocess.run(
            [sys.executable, *args[1:]],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=600,
            env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
        )
        assert r.returncode == expected, (kernel, r.stdout[-2000:], r.stderr[-2000:])


def test_a_gradescope_upload_is_one_student(tmp_path):
    """tiled.cu + scratch.cu + README.md were graded as three students (1.5 points of 1): the upload is one
    student's folder, graded on the file named for the exercise."""
    sub = tmp_path / "submission"
    sub.mkdir()
    shutil.copy(SUBS / "good_naive.cu", sub / "naive.cu")
    shutil.copy(SUBS / "wrong_index.cu", sub / "scratch.cu")
    (sub / "README.md").write_text("my notes")
    results = tmp_path / "results" / "results.json"
    code = cli.main(
        ["batch", "naive", str(sub), "--backend", "cpu", "--format", "gradescope", "--out", str(results), "--quiet"]
    )
    data = json.loads(results.read_text())
    assert_gradescope_results(data)
    assert code == 0 and data["score"] == 1.0 and len(data["tests"]) == 2, data
