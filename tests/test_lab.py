"""Notebook 07's start (grader.course.lab): your notebook 05 kernel, or kernels/04, as the gemm_relu kernel cell."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from grader.spec import contract
from grader.course import lab, notebooks
from grader.judge import submissions
from grader.spec.exercises import KERNELS_DIR

ROOT = Path(__file__).resolve().parent.parent
K04 = (KERNELS_DIR / "04_register_blocked.cu").read_text()
NB05 = "05_register_blocking.ipynb"


def kernel_of(path: Path, exercise: str) -> str:
    return notebooks.kernel_cells(nbformat.read(path, as_version=4))[exercise]


def test_your_notebook_05_kernel_when_it_passes(tmp_path):
    shutil.copy(ROOT / "solutions" / NB05, tmp_path / NB05)
    source, where = lab.register_blocked_source(tmp_path)
    assert source == kernel_of(ROOT / "solutions" / NB05, "register_blocked")
    assert where.startswith("your notebook 05 kernel")


def test_kernels_04_when_notebook_05_is_missing_or_malformed(tmp_path):
    source, why = lab.register_blocked_source(tmp_path)
    assert source == K04 and why.startswith("kernels/04_register_blocked.cu (no register_blocked kernel cell")
    (tmp_path / NB05).write_text("{not a notebook")
    assert lab.register_blocked_source(tmp_path) == (source, why)


def test_kernels_04_when_your_notebook_05_kernel_fails(tmp_path):
    shutil.copy(ROOT / "notebooks" / NB05, tmp_path / NB05)  # the untouched exercise: builds, is wrong
    source, why = lab.register_blocked_source(tmp_path)
    assert source == K04 and "your notebook 05 kernel fails the check" in why


@pytest.mark.parametrize("gemm", [K04, K04 + "\n// a comment with ''' in it\n"], ids=["kernels04", "quotes"])
def test_scaffold_is_a_kernel_cell_with_your_gemm_and_no_epilogue(gemm):
    cell = lab.gemm_relu_scaffold(gemm)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    source = submissions.notebook_kernels(nb)["gemm_relu"]
    assert gemm.strip() in source and contract.GEMM_RELU.signature in source
    assert notebooks.BUDGET.search(source)
    assert "__shfl_xor_sync" not in source and "bias[" not in source


def test_exercise_07_kernel_cell_holds_no_gemm(tmp_path):
    nb = nbformat.read(ROOT / "notebooks" / "07_fused_epilogue.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    kernel = notebooks.kernel_cells(nb)["gemm_relu"]
    assert "threadResults" not in kernel and "__syncthreads" not in kernel and "FILL ME IN" in kernel
    start = next(i for i, s in enumerate(code) if "lab.start_gemm_relu()" in s)
    assert code[start - 1].startswith("# kernel: gemm_relu")  # the new cell lands after both: the last, graded


def test_the_scaffold_is_offered_as_the_next_cell(monkeypatch, tmp_path, capsys):
    import IPython

    offered = []

    class Shell:
        def set_next_input(self, text, replace):
            offered.append((text, replace))

    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell())
    cell = lab.start_gemm_relu(tmp_path)  # no notebook 05 there: kernels/04
    assert offered == [(cell, False)] and K04.strip() in cell
    out = capsys.readouterr().out
    assert "kernels/04_register_blocked.cu" in out and "new cell below" in out and "paste" in out


def test_no_second_scaffold_once_the_notebook_holds_a_kernel(monkeypatch, tmp_path, capsys):
    """Re-running the start cell (or running the solution notebook) writes no new cell: the saved notebook 07
    already has a gemm_relu kernel cell with a launcher, which the grader would grade after a new scaffold."""
    import shutil

    import IPython

    offered = []

    class Shell:
        def set_next_input(self, text, replace):
            offered.append(text)

    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell())
    shutil.copy(ROOT / "notebooks" / "07_fused_epilogue.ipynb", tmp_path)  # the exercise: a placeholder only
    lab.start_gemm_relu(tmp_path)
    assert len(offered) == 1
    shutil.copy(ROOT / "solutions" / "07_fused_epilogue.ipynb", tmp_path)  # a kernel cell with launchers
    lab.start_gemm_relu(tmp_path)
    assert len(offered) == 1 and "no second cell" in capsys.readouterr().out


def test_the_h200_figures_the_notebooks_quote_are_the_results_files():
    import json

    f = lab.h200_figures()
    rows = json.loads((KERNELS_DIR / "results" / "h200.json").read_text())["rows"]
    cublas = next(r for r in rows if r["kernel"] == "cublas" and r["shape"] == "4096x4096x4096")
    assert f["tflops"]["cublas"] == cublas["tflops"] and round(f["tflops"]["cublas"], 1) == 51.2
    assert round(f["pct_cublas"]["tiled"], 1) == 17.1 and "cublas" not in f["pct_cublas"]
    assert round(f["copy_TBs"], 2) == 3.84 and round(f["fp32_peak_TFLOPs"], 1) == 66.9  # h200_machine.json
    assert f["training"]["kernel"] == "08_mlp_step.cu" and f["relu"]["nb06 pair"]["x_torch"] > 1
