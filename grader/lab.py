"""What the notebooks measure, or read back when there is no GPU to measure on; and the
notebooks' first cell.

    from grader.lab import setup; BACKEND = setup()   # prints the backend and GPU; returns "cuda" or "cpu"
    from grader import lab
    lab.measured_tflops({"naive (01)": "naive"})   # the committed H200 figures
    lab.time_gemms({"mine": mod}, 2048)            # GPU only: timed now, against cuBLAS
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

BRANCH = "main"
DIST = "gemm-course-grader"


def repository() -> str:
    """The course's repository URL. Its one definition is pyproject.toml's [project.urls] Repository:
    read there in a checkout, else from the installed package's metadata (a wheel, e.g. on Colab)."""
    import re

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if pyproject.is_file():
        m = re.search(r'^Repository\s*=\s*"([^"]+)"', pyproject.read_text(), re.M)
        if m:
            return m.group(1)
    from importlib import metadata
    try:
        for entry in metadata.metadata(DIST).get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip() == "Repository":
                return url.strip()
    except metadata.PackageNotFoundError:
        pass
    raise RuntimeError("the course's repository URL is not known: pyproject.toml [project.urls] Repository")


def install_url(repo: str | None = None, branch: str = BRANCH) -> str:
    """What pip installs on Colab: the branch's source archive (no git, no clone, no restart)."""
    return f"{repo or repository()}/archive/refs/heads/{branch}.zip"


def colab_url(notebook: str, repo: str | None = None, branch: str = BRANCH) -> str:
    """The Open-in-Colab link of a notebook in the repository, e.g. colab_url("notebooks/02_first_kernel.ipynb")."""
    path = (repo or repository()).removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{path}/blob/{branch}/{notebook}"


def colab_links(notebooks_dir: Path | None = None) -> str:
    """The README's block of Open-in-Colab links, one per notebook in notebooks/."""
    folder = notebooks_dir or Path(__file__).resolve().parent.parent / "notebooks"
    badge = "https://colab.research.google.com/assets/colab-badge.svg"
    rows = [f"| {p.stem} | [![Open In Colab]({badge})]({colab_url(f'notebooks/{p.name}')}) |"
            for p in sorted(folder.glob("*.ipynb"))]
    return "\n".join(["<!-- colab: python -m grader.lab --write-readme -->", "| notebook | Colab |", "|---|---|",
                      *rows, "<!-- /colab -->"])


def _write_readme(readme: Path) -> bool:
    import re

    text = readme.read_text()
    new = re.sub(r"<!-- colab: .*?<!-- /colab -->", lambda m: colab_links(), text, flags=re.S)
    if new != text:
        readme.write_text(new)
    return new != text


def setup_cell(repo: str | None = None, branch: str = BRANCH) -> str:
    """The bootstrap every notebook's first cell starts with (python -m grader.lab --write-setup writes it).

    Inside the course's checkout it uses that checkout; anywhere else (Colab's /content) it pip-installs
    the repository's archive into the running kernel, which imports it at once: a plain install
    (not `-e`) needs no restart.
    """
    return (
        "# Setup: the course's grader (installed from the repository when missing, e.g. on Colab), then this machine.\n"
        "try:\n"
        "    import grader\n"
        "except ImportError:\n"
        "    import importlib, pathlib, subprocess, sys\n"
        "    if (pathlib.Path.cwd().parent / \"grader\").is_dir():  # a checkout without `pip install -e .`\n"
        "        sys.path.insert(0, str(pathlib.Path.cwd().parent))\n"
        "    else:\n"
        "        subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"-q\", "
        f"\"{install_url(repo, branch)}\"], check=True)\n"
        "    importlib.invalidate_caches()\n"
        "    import grader\n"
        "from grader.lab import setup\n"
        "BACKEND = setup()\n"
    )


def setup(verbose: bool = True) -> str:
    """Make this kernel ready for the course and say what it has: prints the backend and the GPU,
    returns "cuda" or "cpu" (grader.resolve_backend()).

    - puts this Python's bin/ first on PATH, so load_inline (notebook 02) finds the ninja pip installed
      beside it (a kernel started outside `course.sh lab` lacks it);
    - on a GPU, sets TORCH_CUDA_ARCH_LIST to the GPU's own architecture unless set, so load_inline
      builds real code for it rather than PTX a older driver may refuse (Colab's T4);
    - on the CPU backend, names a missing or unusable compiler at once (grader.hostcc).
    """
    import torch

    from . import hostcc
    from .binding import resolve_backend

    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    backend = resolve_backend()
    colab = "COLAB_RELEASE_TAG" in os.environ or "COLAB_GPU" in os.environ
    where = " on Colab" if colab else ""
    if backend == "cuda":
        major, minor = torch.cuda.get_device_capability()
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", f"{major}.{minor}")
        from . import toolchain
        line = (f"backend: cuda{where} ({torch.cuda.get_device_name()}, sm_{major}{minor}; torch {torch.__version__}, "
                f"nvcc {toolchain.nvcc_version() or 'not found'}): correctness and speed")
    else:
        line = (f"backend: cpu{where} (no GPU visible to torch {torch.__version__}): correctness only, no timing; "
                "the figures quoted are the committed H200 runs")
    if verbose:
        print(line)
        problem = hostcc.problem()
        if problem:
            print(f"warning: {problem}" + (" (the GPU backend still works)" if backend == "cuda" else ""))
    return backend


def measured_tflops(names: dict[str, str], shape: str = "4096x4096x4096") -> dict[str, float]:
    """{label: TFLOP/s} from kernels/results/h200.json for {label: kernel name in the bench}, when measured."""
    from .plots import h200_results
    rows = {r["kernel"]: r["tflops"] for r in h200_results("gemm", shape)}
    return {label: rows[k] for label, k in names.items() if k in rows}


def time_gemms(kernels: dict, n: int) -> dict[str, float]:
    """GPU only: TFLOP/s at n^3 of each loaded GEMM module and of cuBLAS (TF32 off), timed
    round-robin with grader.timing.time_gpu (events, L2 flush, medians)."""
    import torch
    from .timing import time_gpu, tflops
    torch.backends.cuda.matmul.allow_tf32 = False
    A, B = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    C = torch.empty(n, n, device="cuda")
    fns = {name: (lambda m=m: m.launch.gemm(A, B, C)) for name, m in kernels.items()}
    fns["cuBLAS"] = lambda: torch.matmul(A, B, out=C)
    return {k: tflops(n, n, n, t.median_ms) for k, t in time_gpu(fns, max_seconds=5.0).items()}


def _write_setup_cells(paths) -> int:
    """Replace the bootstrap at the top of each notebook's first code cell with setup_cell()."""
    import nbformat

    changed = 0
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        cell = next(c for c in nb.cells if c.cell_type == "code")
        new = replace_bootstrap(cell.source)
        if new != cell.source:
            cell.source = new
            nbformat.write(nb, p)
            changed += 1
    return changed


def replace_bootstrap(source: str) -> str:
    """A first cell with setup_cell() as its bootstrap. The cell's own lines (imports, constants)
    stay; the bootstrap it had (an earlier setup_cell(), or the older try/except import of grader,
    `BACKEND = grader.resolve_backend()` and its backend print) goes."""
    lines = source.split("\n")
    if "BACKEND = setup()" in lines:  # an earlier setup_cell(): keep what follows it
        rest = lines[lines.index("BACKEND = setup()") + 1:]
    else:
        rest, in_try = [], False
        for n, line in enumerate(lines):
            if n == 0 and line.startswith("# Setup"):
                continue
            if line == "try:" and not in_try:
                in_try = True
                continue
            if in_try:
                if line.startswith((" ", "except ImportError")) or not line:
                    continue
                in_try = False
            if line.startswith(("BACKEND = grader.resolve_backend()", 'print("backend:"')):
                continue
            rest.append(line)
    return (setup_cell() + "\n".join(rest).strip("\n")).rstrip("\n")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(prog="python -m grader.lab")
    ap.add_argument("--write-setup", nargs="+", metavar="NOTEBOOK", help="rewrite these notebooks' setup cells")
    ap.add_argument("--write-readme", action="store_true", help="rewrite README.md's Open-in-Colab links")
    args = ap.parse_args()
    if args.write_readme:
        readme = Path(__file__).resolve().parent.parent / "README.md"
        print(f"README.md {'rewritten' if _write_readme(readme) else 'unchanged'}")
    if args.write_setup:
        print(f"{_write_setup_cells(args.write_setup)} notebook(s) changed")
