"""batch --shard I/N and python -m grader merge: several local shards, then one gradebook (#13.9)."""

import csv
import json
import shlex
import shutil
from pathlib import Path

import pytest

from grader import cli
from grader.classroom import merge
from grader.errors import CannotGrade

ROOT = Path(__file__).resolve().parent.parent
SUBS = ROOT / "tests" / "submissions"


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """A class of 7 graded as 3 shards (CPU backend): 2 real kernels, 5 that need no compiler."""
    root = tmp_path_factory.mktemp("class")
    subs = root / "subs"
    subs.mkdir()
    shutil.copy(SUBS / "good_naive.cu", subs / "ann.cu")
    shutil.copy(SUBS / "wrong_index.cu", subs / "bob.cu")
    for name in ("cat", "dan", "eve", "fay", "gus"):
        (subs / f"{name}.cu").write_text("")  # "is empty": a row without compiling
    parts = []
    for i in range(3):
        out = root / "parts" / f"grades_{i}.csv"
        assert (
            cli.main(
                [
                    "batch",
                    "naive",
                    str(subs),
                    "--backend",
                    "cpu",
                    "--shard",
                    f"{i}/3",
                    "--out",
                    str(out),
                    "--quiet",
                    "--timeout",
                    "120",
                ]
            )
            == 0
        )
        parts.append(out)
    return root, parts


def _ids(path: Path) -> list[str]:
    with path.open(newline="") as f:
        return [r["student_id"] for r in csv.DictReader(f)]


def test_shard_spec():
    assert merge.parse("2/8") == (2, 8)
    for bad in ("8/8", "1", "-1/2", "a/b", "0/0"):
        with pytest.raises(CannotGrade):
            merge.parse(bad)
    assert cli.main(["batch", "naive", ".", "--shard", "3/3"]) == 2


def test_shares_are_deterministic_disjoint_and_cover_the_class():
    ids = [f"s{i:02d}" for i in range(23)]
    shares = [merge.select(ids, i, 4, key=str) for i in range(4)]
    assert sorted(sum(shares, [])) == sorted(ids) and len(set(sum(shares, []))) == 23
    assert shares == [merge.select(list(reversed(ids)), i, 4, key=str) for i in range(4)]
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_each_shard_grades_its_share_and_merge_gives_one_row_per_student(shards, tmp_path):
    root, parts = shards
    graded = [_ids(p) for p in parts]
    assert sorted(sum(graded, [])) == ["ann", "bob", "cat", "dan", "eve", "fay", "gus"]
    assert all(len(g) in (2, 3) for g in graded)
    out = tmp_path / "grades.csv"
    assert cli.main(["merge", str(out), *map(str, reversed(parts))]) == 0
    rows = {r["student_id"]: r for r in csv.DictReader(out.open(newline=""))}
    assert list(rows) == ["ann", "bob", "cat", "dan", "eve", "fay", "gus"]
    assert rows["ann"]["passed"] == "True" and rows["bob"]["passed"] == "False"
    assert rows["cat"]["outcome"] == "nothing to grade"
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["exercise"] == "naive" and meta["students"] == 7 and len(meta["merged_from"]) == 3


def test_merge_refuses_duplicates_missing_shards_and_missing_students(shards, tmp_path, capsys):
    root, parts = shards
    out = tmp_path / "grades.csv"
    assert cli.main(["merge", str(out), str(parts[0]), str(parts[0]), str(parts[1])]) == 2
    err = capsys.readouterr().err
    assert "given twice" in err and "missing shard(s) 2/3" in err and not out.exists()

    assert cli.main(["merge", str(out), str(parts[0]), str(parts[1])]) == 2
    err = capsys.readouterr().err
    assert "missing shard(s) 2/3" in err and "without a row" in err

    # a shard whose gradebook lost a student, and one that has another shard's student
    bad = tmp_path / "bad"
    bad.mkdir()
    copies = []
    for p in parts:
        for suffix in (".csv", ".json"):
            shutil.copy(p.with_suffix(suffix), bad / p.with_suffix(suffix).name)
        copies.append(bad / p.name)
    data0 = json.loads(copies[0].with_suffix(".json").read_text())
    data1 = json.loads(copies[1].with_suffix(".json").read_text())
    lost = data0["grades"].pop()
    data1["grades"].append(lost | {})  # now in shard 1, where it does not belong
    copies[0].with_suffix(".json").write_text(json.dumps(data0))
    copies[1].with_suffix(".json").write_text(json.dumps(data1))
    assert cli.main(["merge", str(out), *map(str, copies)]) == 2
    err = capsys.readouterr().err
    assert f"student {lost['student_id']!r} does not belong to shard 1/3" in err and "without a row" in err

    # a shard of another exercise
    data2 = json.loads(parts[2].with_suffix(".json").read_text())
    other = bad / "other.csv"
    shutil.copy(parts[2], other)
    other.with_suffix(".json").write_text(json.dumps(data2 | {"exercise": "tiled"}))
    assert cli.main(["merge", str(out), str(parts[0]), str(parts[1]), str(other)]) == 2
    assert "exercise 'tiled' differs" in capsys.readouterr().err


def test_slurm_example_runs_the_same_commands():
    text = (ROOT / "examples" / "slurm" / "grade.sbatch").read_text()
    assert "#SBATCH --array=0-7" in text and "#SBATCH --gres=gpu:1" in text
    assert '--shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT"' in text
    cmd = text.split("python -m grader ", 1)[1].split("${THRESHOLDS", 1)[0].replace("\\\n", " ")
    for var, value in (
        ("${SLURM_ARRAY_TASK_ID}", "0"),
        ("$SLURM_ARRAY_TASK_ID", "0"),
        ("$SLURM_ARRAY_TASK_COUNT", "8"),
        ("$SLURM_CPUS_PER_TASK", "8"),
        ("$EXERCISE", "naive"),
        ("$SUBS", "subs"),
    ):
        cmd = cmd.replace(var, value)
    args = shlex.split(cmd)
    parsed = cli.parser().parse_args(args)
    assert parsed.shard == "0/8" and parsed.out == "parts/grades_0.csv"
    submit = (ROOT / "examples" / "slurm" / "submit.sh").read_text()
    assert "--dependency=afterok" in submit and "python -m grader merge grades.csv parts/grades_*.csv" in submit


def test_the_slurm_task_succeeds_when_its_gradebook_is_complete(tmp_path):
    """batch exits 1 when some rows could not be graded: the array task failed and `afterok` never ran the
    merge. The task succeeds on 0 and 1 (a complete gradebook), fails on 2 (batch could not start)."""
    import os
    import subprocess

    script = ROOT / "examples" / "slurm" / "grade.sbatch"
    fake = tmp_path / "bin"
    fake.mkdir()
    for code in (0, 1, 2):
        (fake / "python").write_text(f"#!/bin/sh\nexit {code}\n")
        (fake / "python").chmod(0o755)
        env = os.environ | {
            "PATH": f"{fake}:{os.environ['PATH']}",
            "EXERCISE": "naive",
            "SUBS": str(tmp_path),
            "SLURM_ARRAY_TASK_ID": "0",
            "SLURM_ARRAY_TASK_COUNT": "2",
            "SLURM_CPUS_PER_TASK": "2",
        }
        r = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert (r.returncode == 0) == (code <= 1), (code, r.returncode, r.stderr)
