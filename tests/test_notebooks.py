"""The notebooks' format: exercises are generated from solutions and kept clean.

The solutions themselves are executed by `pytest --nbval-lax solutions/` (course.sh test).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import nbformat
import pytest

from grader.course import notebooks
from grader.spec.exercises import EXERCISES

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
    assert exercise.is_file(), f"notebooks/{path.name} missing: run python -m grader.course.notebooks"
    want = notebooks.render(notebooks.exercise_version(read(path)))
    assert exercise.read_text() == want, (
        f"notebooks/{path.name} is out of date with solutions/: run python -m grader.course.notebooks"
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
    from grader.judge import grade

    solved = grade.grade(exercise, path)
    assert solved.passed, f"{path.name}: {solved.message}"
    blank = grade.grade(exercise, ROOT / "notebooks" / path.name, time_it=False)
    assert blank.compiled and not blank.passed, f"notebooks/{path.name}: {blank.message}"


def test_a_wrong_cpu_blocked_verdict_says_where_its_speed_is_timed():
    """Notebook 01's cpu_blocked is timed on this CPU once it is correct, on any machine: its verdict's
    footer must not send the learner to a GPU (a CUDA exercise's does)."""
    from grader.judge import grade, report

    cpu = report.html_report(grade.Result("cpu_blocked", "cpu", compiled=True, correct=False))
    assert "GPU" not in cpu and "timed on this CPU once it is correct" in cpu
    gpu_exercise = report.html_report(grade.Result("naive", "cpu", compiled=True, correct=False))
    assert "speed is graded on a GPU" in gpu_exercise


# What a notebook shows only as a cell's value: grader.course.plots' figures (closed when returned) and the
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


# Every H200 figure that a solution's text (or the README's ladder) quotes, as the results files give it
# (grader.course.lab.h200_figures): (notebook, markdown cell id, the quote with {figure} fields, from FIGURES).
# Notebooks 05 and 07 may add their rows. Whitespace is compared loosely: a quote may break across lines.
@functools.cache
def figures() -> dict[str, float]:
    from grader.course import lab

    f = lab.h200_figures()
    tf, pct, relu, train = f["tflops"], f["pct_cublas"], f["relu"], f["training"]
    step = train["step_ms"]
    return {
        **{f"tf_{k}": v for k, v in tf.items()},
        **{f"pct_{k}": v for k, v in pct.items()},
        "peak": f["fp32_peak_TFLOPs"],
        "copy": f["copy_TBs"],
        "tiled_x_naive": tf["tiled"] / tf["naive"],
        "naive_x_uncoalesced": tf["naive"] / tf["naive_uncoalesced"],
        "padded_x_conflicted": tf["conflict_free"] / tf["bank_conflicts"],
        **{
            f"{k.replace(' ', '_')}_x": relu[k]["x_torch"]
            for k in ("nb06 forward", "nb06 backward", "nb06 pair", "k06 pair")
        },
        "nb06_forward_pct": relu["nb06 forward"]["pct_of_copy_bw"],
        "step_yours": step["yours"],
        "step_torch_gemms": step["yours, torch's GEMMs"],
        "step_nn": step["nn.Linear + nn.ReLU"],
        "step_torch_gemms_x_nn": step["yours, torch's GEMMs"] / step["nn.Linear + nn.ReLU"],
        "parts_yours": sum(train["step_parts_ms"]["yours"].values()),  # the chart's first bar
        "peak_MB_yours": train["memory"]["yours"]["peak_MB"],
        "peak_MB_nn": train["memory"]["nn.Linear + nn.ReLU"]["peak_MB"],
        **{
            f"pct_warptile_{s.split('x')[0]}": lab.h200_figures(s)["pct_cublas"]["warptile_pipelined"]
            for s in ("2048x2048x2048", "2000x3000x1500")
        },
    }


QUOTED = [
    ("01_triple_loop", "01-10", "**{tf_cublas:.2f} TFLOP/s at 4096³**"),
    ("01_triple_loop", "01-10", "FP32 peak is {peak:.1f} TFLOP/s"),
    ("01_triple_loop", "01-12", "copy bandwidth is {copy:.2f} TB/s"),
    ("01_triple_loop", "01-16", "cuBLAS on an H200 ({tf_cublas:.2f} TFLOP/s, measured)"),
    ("02_first_kernel", "02-16", "runs {naive_x_uncoalesced:.1f} times faster"),
    ("02_first_kernel", "02-16", "{tf_naive:.2f} against {tf_naive_uncoalesced:.2f} TFLOP/s"),
    ("02_first_kernel", "02-16", "only {pct_naive:.0f}% of cuBLAS"),
    ("03_tiling", "03-02", "{copy:.2f} TB/s copy bandwidth"),
    ("03_tiling", "03-15", "({tf_tiled:.2f} against {tf_naive:.2f} TFLOP/s at 4096³"),
    ("03_tiling", "03-15", "tiled {tf_tiled:.2f} TFLOP/s, {tiled_x_naive:.2f} times naive, {pct_tiled:.1f}% of cuBLAS"),
    ("04_bank_conflicts", "04-11", "({tf_conflict_free:.2f} against {tf_tiled:.2f} TFLOP/s)"),
    (
        "04_bank_conflicts",
        "04-11",
        "{tf_bank_conflicts:.2f} TFLOP/s conflicted against {tf_conflict_free:.2f} padded ({padded_x_conflicted:.2f} times)",
    ),
    ("06_relu_mask", "06-11", "forward pass at {nb06_forward_x:.2f} times `torch.relu`"),
    ("06_relu_mask", "06-11", "({nb06_forward_pct:.0f} % of copy bandwidth)"),
    ("06_relu_mask", "06-11", "at {nb06_backward_x:.2f} times `threshold_backward`"),
    ("06_relu_mask", "06-11", "as a pair, {nb06_pair_x:.2f} times faster"),
    ("06_relu_mask", "06-11", "reached {k06_pair_x:.3f} times"),
    ("08_training", "157e7ddc", "a step took **{step_yours:.2f} ms**"),
    ("08_training", "157e7ddc", "**{step_torch_gemms:.2f} ms** with torch's GEMMs"),
    ("08_training", "157e7ddc", "**{step_nn:.2f} ms** as `nn.Linear` + `nn.ReLU`"),
    ("08_training", "157e7ddc", "({parts_yours:.2f} against {step_yours:.2f} ms for the first)"),
    ("08_training", "157e7ddc", "the step takes {step_torch_gemms_x_nn:.2f} times the PyTorch one"),
    ("08_training", "157e7ddc", "**{peak_MB_yours:.1f} MB** against **{peak_MB_nn:.1f} MB**"),
    ("08_training", "0a162218", "took {step_yours:.2f} ms on"),
    ("08_training", "0a162218", "{step_torch_gemms:.2f} ms with cuBLAS for the other GEMMs, and {step_nn:.2f} ms as"),
    ("08_training", "0a162218", "was {peak_MB_yours:.1f} MB against {peak_MB_nn:.1f} MB"),
    (
        "09_beyond",
        "09-00",
        "ran at {tf_register_blocked:.2f} TFLOP/s, {pct_register_blocked:.1f} % of cuBLAS ({tf_cublas:.2f} TFLOP/s in that run)",
    ),
    ("09_beyond", "09-00", "at {tf_warptile_pipelined:.2f} TFLOP/s, {pct_warptile_pipelined:.1f} % of cuBLAS"),
    (
        "09_beyond",
        "09-22",
        "cuBLAS wins at 2048³ (05: {pct_warptile_2048:.1f} %) and 2000×3000×1500 ({pct_warptile_2000:.1f} %)",
    ),
    (
        "README",
        "Syllabus",
        "naive {tf_naive:.1f} TFLOP/s ({pct_naive:.0f} % of cuBLAS), tiled {tf_tiled:.1f} ({pct_tiled:.0f} %), "
        "register-blocked {tf_register_blocked:.1f} ({pct_register_blocked:.0f} %), warp-tiled with a cp.async pipeline "
        "{tf_warptile_pipelined:.1f} ({pct_warptile_pipelined:.0f} %); cuBLAS {tf_cublas:.1f} in that run",
    ),
]


def _text_of(notebook: str, cell: str) -> str:
    if notebook == "README":
        text = (ROOT / "README.md").read_text()
        return text[text.index(f"## {cell}") :]
    (found,) = [c.source for c in read(ROOT / "solutions" / f"{notebook}.ipynb").cells if c.get("id") == cell]
    return found


@pytest.mark.parametrize("notebook,cell,quote", QUOTED, ids=[f"{n}-{c}-{i}" for i, (n, c, _) in enumerate(QUOTED)])
def test_quoted_h200_figures_are_the_results_files(notebook, cell, quote):
    """Figures quoted in prose cannot be computed by the notebook: each is checked here against
    kernels/results/, so that text and results cannot drift apart again (49.35 against 51.2 TFLOP/s)."""
    want = quote.format(**figures())
    assert " ".join(want.split()) in " ".join(_text_of(notebook, cell).split()), f"{notebook} {cell}: {want!r}"
