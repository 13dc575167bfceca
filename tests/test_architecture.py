"""The package's shape: rules a reader relies on that no behaviour test would notice breaking."""

import ast
from pathlib import Path

from grader import exercises

GRADER = Path(__file__).resolve().parent.parent / "grader"
# the specs name the exercises; the kinds say what each family does; nothing else names one
SPEC_MODULES = {GRADER / "exercises.py", GRADER / "kinds.py"}


def _string_constants(path: Path):
    """The module's string constants, less the C names of the contract's launchers (`gemm_relu` is a
    launcher of that name as well as an exercise)."""
    tree = ast.parse(path.read_text(), str(path))
    c_names = {
        id(node.args[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Launcher" and node.args
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in c_names:
            yield node


def test_no_exercise_names():
    """An exercise's behaviour comes from its spec and its kind (grader.kinds), never from a comparison
    with its name elsewhere: a new rung is one spec, plus one kind at most."""
    names = set(exercises.EXERCISES)
    found = [
        f"{path.relative_to(GRADER.parent)}:{node.lineno}: {node.value!r}"
        for path in sorted(GRADER.rglob("*.py"))
        if path not in SPEC_MODULES
        for node in _string_constants(path)
        if node.value in names
    ]
    assert not found, "exercise names outside grader/exercises.py and grader/kinds.py:\n" + "\n".join(found)
