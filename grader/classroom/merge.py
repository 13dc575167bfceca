"""Grading a class too large for one machine: shards, then one gradebook.

    python -m grader batch tiled subs/ --shard 3/8 --out parts/grades_3.csv    # share 3 of 8 (0-based)
    python -m grader merge grades.csv parts/grades_*.csv                      # one gradebook, checked

A scheduler (Slurm job array: examples/slurm/) runs the N shards anywhere; each writes its own
gradebook (CSV + JSON), so tasks never share a file. The share is deterministic: the submissions,
sorted by student id, dealt round-robin (share I gets positions I, I+N, I+2N ...), so every shard
computes the same split from the same folder. Each shard's JSON records the whole roster and its
place in the split; `merge` refuses anything but exactly one row per student of that roster: a
missing shard, a student graded twice, a shard of another run (exercise, roster, N, grader) or a
student missing from its shard each stop it with exit 2 and say which.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from grader.errors import CannotGrade
from grader.classroom.gradebook import write_gradebook


def parse(spec: str) -> tuple[int, int]:
    """'3/8' -> (3, 8); shares are numbered from 0, as Slurm's array indices are."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", spec or "")
    if not m:
        raise CannotGrade(f"--shard {spec!r}: write I/N, e.g. 0/4 (shares 0 to N-1)")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 0 <= i < n:
        raise CannotGrade(f"--shard {spec}: I must be 0 to N-1 (got I={i}, N={n})")
    return i, n


def select(items: list, index: int, count: int, key=lambda s: s.student_id) -> list:
    """Share `index` of `count`: sorted by student id, positions index, index+count, ..."""
    return sorted(items, key=key)[index::count]


def shard_meta(all_ids: list[str], index: int, count: int) -> dict:
    return {"shard": {"index": index, "count": count, "roster": sorted(all_ids)}}


def _load(path: Path) -> dict:
    js = path.with_suffix(".json")
    try:
        data = json.loads(js.read_text())
    except (OSError, ValueError) as e:
        raise CannotGrade(
            f"{js}: cannot read this shard's gradebook ({e}); merge reads the JSON beside each CSV"
        ) from None
    if not isinstance(data, dict) or "shard" not in data or "grades" not in data:
        raise CannotGrade(f"{js}: not a shard's gradebook (no 'shard' entry): grade with batch --shard I/N")
    return data


def merge(out, parts) -> list[dict]:
    """Check the shards and write their union as one gradebook at `out` (CSV, JSON beside it)."""
    parts = [Path(p) for p in parts]
    if not parts:
        raise CannotGrade("merge: give the shards' gradebooks (CSV files written by batch --shard)")
    shards = [(p, _load(p)) for p in parts]  # a list: the same file given twice counts twice
    first = shards[0][1]
    count, roster = first["shard"]["count"], first["shard"]["roster"]
    same = ("exercise", "backend", "threshold", "grader_version")
    seen_index: dict[int, Path] = {}
    owner: dict[str, Path] = {}
    problems: list[str] = []
    for p, data in shards:
        s = data["shard"]
        for k in same:
            if data.get(k) != first.get(k):
                problems.append(f"{p}: {k} {data.get(k)!r} differs from {parts[0]}'s {first.get(k)!r}")
        if s["count"] != count or s["roster"] != roster:
            problems.append(
                f"{p}: shard of another split (N={s['count']}, {len(s['roster'])} students; "
                f"{parts[0]} has N={count}, {len(roster)})"
            )
            continue
        if s["index"] in seen_index:
            problems.append(f"{p}: shard {s['index']}/{count} given twice (also {seen_index[s['index']]})")
            continue
        seen_index[s["index"]] = p
        expected = set(select(roster, s["index"], count, key=str))
        for row in data["grades"]:
            sid = row.get("student_id")
            if sid in owner:
                problems.append(f"student {sid!r} graded twice: in {owner[sid]} and {p}")
            elif sid not in expected:
                problems.append(f"{p}: student {sid!r} does not belong to shard {s['index']}/{count}")
            else:
                owner[sid] = p
    missing_shards = sorted(set(range(count)) - set(seen_index))
    if missing_shards:
        problems.append(f"missing shard(s) {', '.join(f'{i}/{count}' for i in missing_shards)}")
    missing = [sid for sid in roster if sid not in owner]
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        problems.append(f"{len(missing)} student(s) without a row: {shown}")
    if problems:
        raise CannotGrade("merge refused:\n  " + "\n  ".join(problems))

    rows = {row["student_id"]: row for _, data in shards for row in data["grades"]}
    merged = [rows[sid] for sid in roster]
    meta = {k: first.get(k) for k in (*same, "calibration")} | {
        "merged_from": [str(p) for p, data in sorted(shards, key=lambda pd: pd[1]["shard"]["index"])],
        "students": len(merged),
    }
    write_gradebook(Path(out), merged, meta)
    return merged


def main(args) -> int:
    rows = merge(args.out, args.parts)
    ungraded = [r["student_id"] for r in rows if str(r.get("message", "")).startswith("could not grade")]
    print(
        f"merged {len(args.parts)} shard(s): {len(rows)} students -> {args.out} "
        f"(+ {Path(args.out).with_suffix('.json').name})"
        + (
            f"; {len(ungraded)} could not be graded ({', '.join(ungraded[:5])}{' ...' if len(ungraded) > 5 else ''}): "
            "rerun their shards' batch with the same --out (only those rows are graded again), then merge again"
            if ungraded
            else ""
        )
    )
    return 0
