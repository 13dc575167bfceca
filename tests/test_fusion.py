"""grader.course.fusion: the fused epilogue against the GEMM alone and the GEMM + a separate pass, over K."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from grader.course import fusion

ROOT = Path(__file__).resolve().parent.parent


def _fusion_cell(notebook: str) -> str:
    cells = json.loads((ROOT / notebook).read_text())["cells"]
    return next(
        "".join(c["source"]) for c in cells if c["cell_type"] == "code" and "fusion.chart(" in "".join(c["source"])
    )


def _run_cell(src: str, ns: dict):
    """Run a notebook cell; return the value of its last line, as Jupyter shows it."""
    tree = ast.parse(src)
    last = tree.body.pop()
    exec(compile(tree, "<cell>", "exec"), ns)
    return eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)


@pytest.mark.parametrize("notebook", ["solutions/07_fused_epilogue.ipynb", "notebooks/07_fused_epilogue.ipynb"])
def test_the_chart_without_a_gpu_says_it_shows_the_solution_not_yours(notebook):
    """Without a GPU notebook 07 charts the solution's H200 rows; its legend once said "your gemm_relu"."""
    fig = _run_cell(_fusion_cell(notebook), {"ON_GPU": False})
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()] + [fig.axes[0].get_ylabel()]
    assert not [x for x in labels if "your" in x], labels
    assert all("solution" in x for x in labels), labels


def test_the_chart_names_whose_kernel_it_shows():
    rows = fusion.measured("nb07")
    fig = fusion.chart(rows, kernel="your")
    assert "fused (your gemm_relu)" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_07b_rows_are_against_05_and_its_own_gemm_is_05():
    """The committed 07b sweep (benchmarks/gpu_fusion.py): 05 is the GEMM alone, and 07b's own `gemm`
    (05's code in 07b's file) was timed in the same rounds."""
    rows = fusion.measured("k07b")
    assert [r["K"] for r in rows] == list(fusion.KS)
    for r in rows:
        assert r["fused ms"] > 0 and abs(r["own gemm ms"] / r["gemm ms"] - 1) < 0.05, r


@pytest.mark.gpu
def test_sweep_against_another_files_gemm_times_the_files_own_gemm_and_variants_too():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from grader.course import bench

    k07b = bench.load_kernel("07b_gemm_relu_warptile.cu", "gemm_relu")
    k05 = bench.load_kernel("05_warptile_pipelined.cu", "register_blocked")
    (row,) = fusion.sweep(k07b, ks=(64,), m=256, n=256, seconds=0.2, base=k05, variants={"again": k07b})
    for key in ("fused ms", "gemm ms", "gemm + pass ms", "own gemm ms", "again ms", "again / gemm"):
        assert row[key] > 0, (key, row)
