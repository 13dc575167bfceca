"""The gradebook a batch writes (grader.classroom.batch) and a merge of shards writes again (grader.classroom.merge): its
columns, and CSV + JSON each written whole (a temporary file renamed: never half a gradebook)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from grader.judge.submissions import printable

# nbgrader's CSV export has assignment, student_id, timestamp, raw_score, score, max_score:
# ours uses the same names for the same things.
FIELDS = [
    "student_id",
    "assignment",
    "exercise",
    "backend",
    "compiled",
    "correct",
    "passed",
    "outcome",
    "speedup",
    "threshold",
    "pct_cublas",
    "raw_score",
    "score",
    "max_score",
    "message",
    "hint",
    "file",
    "source_sha256",
    "grader_version",
    "timestamp",
    "seconds",
    "evidence",
]


def write_gradebook(path: Path, rows: list[dict], meta: dict) -> None:
    """CSV and JSON, each written to a temporary file and renamed (never half a gradebook)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _cell(r.get(k)) for k in FIELDS})
    os.replace(tmp, path)
    js = path.with_suffix(".json")
    tmp = js.with_name(js.name + ".tmp")
    tmp.write_text(json.dumps(meta | {"grades": rows}, indent=1))  # ASCII: any odd file name is escaped
    os.replace(tmp, js)


def _cell(value) -> object:
    """A CSV cell: text a spreadsheet would run as a formula (=, +, -, @ first) is quoted with '."""
    if value is None:
        return ""
    if isinstance(value, str):
        value = printable(value)
        if value[:1] in ("=", "+", "-", "@"):
            return "'" + value
    return value
