"""Notebook hints against what the grader prints: a hint that promises a message must be the one the grader gives
for that mistake (on the CPU backend, where every learner without a GPU sees it)."""

import json
import re
from pathlib import Path

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


def _cells(name, kind):
    nb = json.loads((SOLUTIONS / name).read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == kind]


def _details(name, summary):
    """The text of the <details> note whose summary contains `summary`."""
    for text in _cells(name, "markdown"):
        for m in re.finditer(r"<details><summary>(.*?)</summary>(.*?)</details>", text, re.S):
            if summary in m.group(1):
                return m.group(2)
    raise AssertionError(f"{name}: no <details> note on {summary!r}")


def _flat(s):
    return " ".join(s.split())


def test_06_says_why_the_ballot_names_every_lane_not_activemask():
    note = _flat(_details("06_relu_mask.ipynb", "__activemask()"))
    for claim in ("__ballot_sync(__activemask(), x[i] > 0)", "__ballot_sync(0xffffffffu, pred)", "voting 0", "Volta"):
        assert claim in note, claim


def test_09_edge_hint_quotes_what_the_grader_prints_for_TN_in_place_of_SUB():
    from grader.judge import grade

    hint = _flat(_details("09_beyond.ipynb", "Exercise 1, hint 2"))
    assert "access bound" not in hint  # the CPU backend prints no access bound for it: a race comes first
    quoted = re.search(r'"(thread [^"]+)"', hint)
    assert quoted, hint
    kernel = next(t for t in _cells("09_beyond.ipynb", "code") if t.startswith("# kernel: warptile"))
    source = kernel.split("SOURCE = r'''", 1)[1].split("'''", 1)[0]
    wrong = source.replace("laneCol * SUB;", "laneCol * TN;")
    assert wrong != source
    r = grade.grade("warptile", wrong, backend="cpu", seed=1)
    assert not r.passed
    message = _flat(r.message)
    for part in quoted.group(1).split("..."):
        assert _flat(part).strip(" ,") in message, (part, r.message)
