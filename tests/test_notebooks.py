"""The notebooks' format: exercises are generated from solutions and kept clean.

The solutions themselves are executed by `pytest --nbval-lax solutions/` (course.sh test).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from grader import notebooks
from grader.exercises import EXERCISES

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
IDS = [p.stem for p in SOLUTIONS]


def read(path: Path):
    return nbformat.read(path, as_version=4)


def code(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


def test_there_are_solutions():
    assert SOLUTIONS, "solutions/ has no notebooks"


@pytest.mark.parametrize("path", SOLUTIONS, ids=IDS)
def test_exercise_is_generated_from_solution(path):
    exercise = ROOT / "notebooks" / path.name
    assert exercise.is_file(), f"notebooks/{path.name} missing: run python -m grader.notebooks"
    want = notebooks.render(notebooks.exercise_version(read(path)))
    assert exercise.read_text() == want, (
        f"notebooks/{path.name} is out of date with solutions/: run python -m grader.notebooks"
    )


def test_no_exercise_without_solution():
    names = {p.name for p in SOLUTIONS}
    extra = [p.name for p in (ROOT / "notebooks").glob("*.ipynb") if p.name not in names]
    assert not extra, f"notebooks without a solution: {extra}"


@pytest.mark.parametrize("path", SOLUTIONS, ids=IDS)
def test_exercise_has_no_outputs_and_no_solutions(path):
    nb = read(ROOT / "notebooks" / path.name)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, "exercise notebooks keep no outputs"
            assert "BEGIN SOLUTION" not in cell.source and "END SOLUTION" not in cell.source
    # nor the widgets' saved state (the solution's drawings: images of its kernel's access map)
    assert "widgets" not in nb.metadata, "exercise notebooks keep no widget state"


@pytest.mark.parametrize("path", SOLUTIONS, ids=IDS)
def test_solution_shape(path):
    nb = read(path)
    nbformat.validate(nb)
    assert re.match(r"\d\d_\w+\.ipynb$", path.name)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith(f"# {path.name[:2]} ")
    assert any(c.cell_type == "markdown" and re.search(r"^## Summary", c.source, re.M) for c in nb.cells), (
        "a solution notebook has a '## Summary' section"
    )
    if not path.name.startswith("00_"):  # 00 measures the machine: a numpy exercise, nothing to grade
        assert any("grader.check(" in s for s in code(nb)), "a solution notebook calls grader.check at least once"
    joined = "\n".join(code(nb))
    assert joined.count("BEGIN SOLUTION") == joined.count("END SOLUTION") >= 1
    for src in code(nb):  # every solution block has its line budget just above it
        lines = src.split("\n")
        for i, line in enumerate(lines):
            if "BEGIN SOLUTION" in line:
                assert i > 0 and notebooks.BUDGET.search(lines[i - 1]), f"no FILL ME IN budget above:\n{line}"


@pytest.mark.parametrize("path", SOLUTIONS, ids=IDS)
def test_kernel_cells(path):
    """`# kernel: EXERCISE` cells name a real exercise and define SOURCE, in both versions."""
    sol = notebooks.kernel_cells(read(path))
    ex = notebooks.kernel_cells(read(ROOT / "notebooks" / path.name))
    assert set(sol) == set(ex)
    for name, source in sol.items():
        assert name in EXERCISES, f"unknown exercise {name!r} in a '# kernel:' cell"
        assert 'extern "C"' in source
        assert "FILL ME IN" in ex[name] and "BEGIN SOLUTION" not in ex[name]


def test_strip_solutions():
    src = "a\n    // FILL ME IN (roughly 2 lines)\n    // BEGIN SOLUTION\n    x;\n\n    y;\n    // END SOLUTION\nb"
    assert notebooks.strip_solutions(src) == "a\n    // FILL ME IN (roughly 2 lines)\nb"
    assert (
        notebooks.strip_solutions("  # BEGIN SOLUTION\n  z = 1\n  # END SOLUTION") == "  # FILL ME IN (roughly 1 line)"
    )
    with pytest.raises(ValueError):
        notebooks.strip_solutions("// BEGIN SOLUTION\nx")


KERNEL_CELLS = [(p, name) for p in SOLUTIONS for name in notebooks.kernel_cells(read(p))]


@pytest.mark.parametrize("path,exercise", KERNEL_CELLS, ids=[f"{p.stem}-{e}" for p, e in KERNEL_CELLS])
def test_solution_kernel_passes_and_exercise_kernel_fails(path, exercise):
    """A learner who fills in the notebook as its solution does passes the grader (on a GPU: its
    speed threshold too); the untouched exercise copy fails. Graded straight from the notebooks."""
    from grader import grade

    solved = grade.grade(exercise, path)
    assert solved.passed, f"{path.name}: {solved.message}"
    blank = grade.grade(exercise, ROOT / "notebooks" / path.name, time_it=False)
    assert blank.compiled and not blank.passed, f"notebooks/{path.name}: {blank.message}"


def test_a_wrong_cpu_blocked_verdict_says_where_its_speed_is_timed():
    """Notebook 01's cpu_blocked is timed on this CPU once it is correct, on any machine: its verdict's
    footer must not send the learner to a GPU (a CUDA exercise's does)."""
    from grader import grade, report

    cpu = report.html_report(grade.Result("cpu_blocked", "cpu", compiled=True, correct=False))
    assert "GPU" not in cpu and "timed on this CPU once it is correct" in cpu
    gpu_exercise = report.html_report(grade.Result("naive", "cpu", compiled=True, correct=False))
    assert "speed is graded on a GPU" in gpu_exercise


# What a notebook shows only as a cell's value: grader.plots' figures (closed when returned) and the
# widgets' views. Anywhere else in a cell (an `if` block, a loop) they must be passed to display().
SHOWN_AS_VALUE = {"plots": {"LiveLoss", "h200_results"}, "widgets": {"compare"}}  # module: names that show themselves


def unshown_pictures(source: str) -> list[str]:
    import ast

    tree = ast.parse("\n".join(line for line in source.split("\n") if not line.lstrip().startswith(("%", "!"))))
    last = tree.body[-1].value if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    shown = {id(last)} | {
        id(arg)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "display"
        for arg in node.args
    }
    return [
        f"line {node.lineno}: {node.func.value.id}.{node.func.attr}(...)"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in SHOWN_AS_VALUE
        and node.func.attr not in SHOWN_AS_VALUE[node.func.value.id]
        and id(node) not in shown
    ]


def test_unshown_pictures_finds_a_chart_inside_an_if():
    assert unshown_pictures("if x:\n    plots.lines(xs, ys)\n") == ["line 2: plots.lines(...)"]
    assert unshown_pictures("if x:\n    display(plots.lines(xs, ys))\nplots.ladder(tf)\n") == []


@pytest.mark.parametrize("path", SOLUTIONS, ids=IDS)
def test_every_chart_and_widget_is_shown(path):
    """A figure that is not its cell's value is never drawn (notebook 00's four charts were not, for
    weeks, even in the committed outputs)."""
    problems = [
        f"cell {c.get('id')} {p}" for c in read(path).cells if c.cell_type == "code" for p in unshown_pictures(c.source)
    ]
    assert not problems, "not shown: wrap in display(...): " + "; ".join(problems)
