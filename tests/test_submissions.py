"""Reading a notebook's kernel cell (grader.judge.submissions): the grader grades what the cell's
literal says, so a cell (or a later cell) that rewrites SOURCE after assigning it is refused, not
graded on the literal; line numbers in messages are the kernel cell's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.errors import SubmissionError
from grader.judge.submissions import notebook_kernel, notebook_source, read

GOOD = "#include <cuda_runtime.h>\n// the kernel\n"


def _nb(tmp_path: Path, *cells: str) -> Path:
    p = tmp_path / "lab.ipynb"
    p.write_text(
        json.dumps(
            {
                "cells": [
                    {"cell_type": "code", "source": c, "outputs": [], "metadata": {}, "execution_count": None}
                    for c in cells
                ],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    return p


@pytest.mark.parametrize(
    "rewrite",
    [
        "SOURCE = SOURCE.replace('kernel', 'cheat')",
        "SOURCE += '// more'",
        "SOURCE = 'something else'",
        "SOURCE: str = 'something else'",
        "if True:\n    SOURCE = SOURCE.upper()",
        "for SOURCE in ['x']:\n    pass",
        "(SOURCE := 'x')",
        "del SOURCE",
        "import os as SOURCE",
    ],
)
def test_a_kernel_cell_that_rewrites_source_is_refused(tmp_path, rewrite):
    nb = _nb(tmp_path, f"# kernel: tiled\nSOURCE = r'''\n{GOOD}'''\n{rewrite}\n")
    with pytest.raises(SubmissionError, match=r"rewrites SOURCE .*line \d+"):
        notebook_source(nb, "tiled")


def test_a_later_cell_that_rewrites_source_is_refused_until_the_next_kernel_cell(tmp_path):
    nb = _nb(
        tmp_path,
        f"# kernel: tiled\nSOURCE = r'''\n{GOOD}'''",
        "x = SOURCE.count('k')",
        "SOURCE = SOURCE.replace('kernel', 'cheat')\ngrader.check('tiled', SOURCE)",
    )
    with pytest.raises(SubmissionError, match=r"cell 3 .*rewrites SOURCE"):
        notebook_source(nb, "tiled")
    # a later kernel cell (another exercise) sets SOURCE afresh: that is not a rewrite of ours
    nb = _nb(
        tmp_path,
        f"# kernel: tiled\nSOURCE = r'''\n{GOOD}'''",
        "%%time\nx = SOURCE.count('k')",
        f"# kernel: naive\nSOURCE = r'''\n{GOOD}'''",
        "SOURCE = SOURCE + 'x'",
    )
    assert GOOD in notebook_source(nb, "tiled")
    with pytest.raises(SubmissionError, match="rewrites SOURCE"):
        notebook_source(nb, "naive")


def test_an_annotated_assignment_is_accepted_and_uses_are_fine(tmp_path):
    nb = _nb(
        tmp_path,
        f"# kernel: tiled\nSOURCE: str = r'''\n{GOOD}'''\nmod = grader.load(SOURCE, 'tiled')\n"
        "head, _, tail = SOURCE.rpartition('k')\nprint(SOURCE.replace('a', 'b'))",
    )
    assert GOOD in notebook_source(nb, "tiled")
    assert GOOD in notebook_kernel(nb.read_text(), "tiled")


def test_kernel_lines_are_the_cells_lines(tmp_path):
    """Line L of the kernel cell is line L of the source the compiler and the scan see."""
    cell = f"# kernel: tiled\n# my notes\nSOURCE = r'''\n{GOOD}'''"
    source, filename = read(str(_nb(tmp_path, "import grader", cell)), "tiled")
    cell_lines, src_lines = cell.splitlines(), source.splitlines()
    assert src_lines[3] == cell_lines[3] == "#include <cuda_runtime.h>"
    assert "lab.ipynb" in filename and "kernel cell" in filename
    writefile = "%%writefile t.cu\n// grader: tiled\n#include <cuda_runtime.h>\n"
    source, _ = read(str(_nb(tmp_path, writefile)), "tiled")
    assert source.splitlines()[2] == "#include <cuda_runtime.h>"


def test_messages_give_the_kernel_cells_line_numbers(tmp_path):
    """A forbidden construct and a compile error in a notebook's kernel cell are reported at the
    cell's lines, under the notebook's name."""
    from grader.judge import grade

    cell = "# kernel: naive\n# line 2\nSOURCE = r'''\n#include <cuda_runtime.h>\n#include <cublas_v2.h>\n'''\n"
    r = grade.grade("naive", str(_nb(tmp_path, "import grader", cell)), backend="cpu")
    assert not r.compiled and "lab.ipynb (kernel cell):5: #include <cublas_v2.h>" in r.message, r.message
    cell = "# kernel: naive\nSOURCE = r'''\n#include <cuda_runtime.h>\n\nint f() { return undefined_name; }\n'''\n"
    r = grade.grade("naive", str(_nb(tmp_path, cell)), backend="cpu")
    assert not r.compiled and "lab.ipynb (kernel cell):5" in r.message, r.message


def test_in_a_notebook_check_of_source_gives_the_kernel_cells_lines(monkeypatch):
    """grader.check("tiled", SOURCE) in a notebook: the cell that set SOURCE is found in IPython's
    input history, so the lines are the cell's; outside IPython the text's own lines."""
    import sys
    import types

    cell = f"# kernel: tiled\n# notes\nSOURCE = r'''\n{GOOD}'''"
    literal = "\n" + GOOD
    assert read(literal, "tiled") == (literal, "cell.cu")
    shell = types.SimpleNamespace(user_ns={"In": ["", "import grader", cell, "grader.check('tiled', SOURCE)"]})
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    source, name = read(literal, "tiled")
    assert name == "kernel cell" and source.splitlines()[3] == cell.splitlines()[3] == "#include <cuda_runtime.h>"
    assert read(literal + "// edited since\n", "tiled")[1] == "cell.cu"  # not the text of any kernel cell
