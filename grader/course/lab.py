"""What the notebooks measure, or read back when there is no GPU to measure on; and the
notebooks' first cell.

    from grader.course.lab import setup; BACKEND = setup()   # prints the backend and GPU; returns "cuda" or "cpu"
    from grader import lab
    lab.measured_tflops({"01_naive.cu": "naive"})  # the committed H200 figures
    lab.h200_figures()                             # every H200 figure the notebooks quote
    lab.time_gemms({"mine": mod}, 2048)            # GPU only: timed now, against cuBLAS
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

BRANCH = "main"
DIST = "gemm-course-grader"


def repository() -> str:
    """The course's repository URL. Its one definition is pyproject.toml's [project.urls] Repository:
    read there in a checkout, else from the installed package's metadata (a wheel, e.g. on Colab)."""
    import re

    pyproject = Path(__file__).resolve().parent.parent.parent / "pyproject.toml"
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
    folder = notebooks_dir or Path(__file__).resolve().parent.parent.parent / "notebooks"
    badge = "https://colab.research.google.com/assets/colab-badge.svg"
    rows = [
        f"| {p.stem} | [![Open In Colab]({badge})]({colab_url(f'notebooks/{p.name}')}) |"
        for p in sorted(folder.glob("*.ipynb"))
    ]
    return "\n".join(
        [
            "<!-- colab: python -m grader.course.lab --write-readme -->",
            "| notebook | Colab |",
            "|---|---|",
            *rows,
            "<!-- /colab -->",
        ]
    )


def _write_readme(readme: Path) -> bool:
    import re

    text = readme.read_text()
    new = re.sub(r"<!-- colab: .*?<!-- /colab -->", lambda m: colab_links(), text, flags=re.S)
    if new != text:
        readme.write_text(new)
    return new != text


def setup_cell(repo: str | None = None, branch: str = BRANCH) -> str:
    """The bootstrap every notebook's first cell starts with (python -m grader.course.lab --write-setup writes it).

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
        '    if (pathlib.Path.cwd().parent / "grader").is_dir():  # a checkout without `pip install -e .`\n'
        "        sys.path.insert(0, str(pathlib.Path.cwd().parent))\n"
        "    else:\n"
        '        subprocess.run([sys.executable, "-m", "pip", "install", "-q", '
        f'"{install_url(repo, branch)}", "ninja"], check=True)  # ninja: load_inline (02); Colab lacks it\n'
        "    importlib.invalidate_caches()\n"
        "    import grader\n"
        "from grader.course.lab import setup\n"
        "BACKEND = setup()\n"
    )


def setup(verbose: bool = True) -> str:
    """Make this kernel ready for the course and say what it has: prints the backend and the GPU,
    returns "cuda" or "cpu" (grader.resolve_backend()).

    - puts this Python's bin/ first on PATH, so load_inline (notebook 02) finds the ninja pip installed
      beside it (a kernel started outside `course.sh lab` lacks it);
    - on a GPU, sets TORCH_CUDA_ARCH_LIST to the GPU's own architecture unless set, so load_inline
      builds real code for it rather than PTX a older driver may refuse (Colab's T4);
    - on the CPU backend, names a missing or unusable compiler at once (grader.compile.hostcc);
    - starts building the grader's native runner in the background (prebuild_runner), so that the
      first check does not wait for it.
    """
    import torch

    from grader.compile import hostcc
    from grader.run.binding import resolve_backend

    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    backend = resolve_backend()
    colab = "COLAB_RELEASE_TAG" in os.environ or "COLAB_GPU" in os.environ
    where = " on Colab" if colab else ""
    if backend == "cuda":
        major, minor = torch.cuda.get_device_capability()
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", f"{major}.{minor}")
        from grader.compile import toolchain

        line = (
            f"backend: cuda{where} ({torch.cuda.get_device_name()}, sm_{major}{minor}; torch {torch.__version__}, "
            f"nvcc {toolchain.nvcc_version() or 'not found'}): correctness and speed"
        )
    else:
        line = (
            f"backend: cpu{where} (no GPU visible to torch {torch.__version__}): correctness only, no timing; "
            "the figures quoted are the committed H200 runs"
        )
    prebuild_runner(backend)
    if verbose:
        print(line)
        problem = hostcc.problem()
        if problem:
            print(f"warning: {problem}" + (" (the GPU backend still works)" if backend == "cuda" else ""))
    return backend


def prebuild_runner(backend: str) -> threading.Thread:
    """Build the native runner for `backend` (grader.run.runner.build: nvcc on a GPU, g++ on the CPU
    backend; once per cache) in a daemon thread. A check that comes first waits for the same build (the
    builder's lock) instead of starting another; a failed build is reported by that check."""

    def build():
        from grader.run.runner.build import runner_binary

        try:
            runner_binary(backend)
        except Exception:  # noqa: BLE001 (the first check builds it again and says why it cannot)
            pass

    thread = threading.Thread(target=build, name="grader-runner-build", daemon=True)
    thread.start()
    return thread


def measured_tflops(names: dict[str, str], shape: str = "4096x4096x4096") -> dict[str, float]:
    """{label: TFLOP/s} from kernels/results/h200.json for {label: kernel name in the bench}, when measured."""
    from grader.course.plots import h200_results

    rows = {r["kernel"]: r["tflops"] for r in h200_results("gemm", shape)}
    return {label: rows[k] for label, k in names.items() if k in rows}


def h200_figures(shape: str = "4096x4096x4096") -> dict:
    """The H200 figures the notebooks quote, read from kernels/results/ (their one source, so that text,
    tables and charts agree; tests/test_notebooks.py checks each quoted figure against them):
    tflops and pct_cublas {bench kernel: at `shape`} (h200.json, `python -m grader bench`); copy_TBs and
    fp32_peak_TFLOPs (h200_machine.json, notebook 00's run); relu {row: ...} (h200_capstone.json);
    training (h200_training.json, notebook 08's step)."""
    import json

    from grader.course import machine
    from grader.course.plots import RESULTS_DIR, h200_results
    from grader.course.training import training_measured

    gemm = {r["kernel"]: r for r in h200_results("gemm", shape)}
    run = machine.h200()
    return {
        "tflops": {k: r["tflops"] for k, r in gemm.items()},
        "pct_cublas": {k: r["pct_of_baseline"] for k, r in gemm.items() if k != "cublas"},
        "copy_TBs": machine.copy_tbs(run),
        "fp32_peak_TFLOPs": machine.fp32_peak_tflops(run),
        "relu": json.loads((RESULTS_DIR / "h200_capstone.json").read_text())["relu"]["rows"],
        "training": training_measured(),
    }


def time_gemms(kernels: dict, n: int) -> dict[str, float]:
    """GPU only: TFLOP/s at n^3 of each loaded GEMM module and of cuBLAS (TF32 off), timed
    round-robin with grader.run.timing.time_gpu (events, L2 flush, medians)."""
    import torch
    from grader.run.timing import time_gpu, tflops

    torch.backends.cuda.matmul.allow_tf32 = False
    A, B = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    C = torch.empty(n, n, device="cuda")
    fns = {name: (lambda m=m: m.launch.gemm(A, B, C)) for name, m in kernels.items()}
    fns["cuBLAS"] = lambda: torch.matmul(A, B, out=C)
    return {k: tflops(n, n, n, t.median_ms) for k, t in time_gpu(fns, max_seconds=5.0).items()}


# ---------------------------------------------------------------------------- your kernels of earlier notebooks


def _first_line(error: Exception | str) -> str:
    return (str(error).strip() or type(error).__name__).splitlines()[0]


def _kernel_cell(notebook: str, exercise: str, folder=None) -> str | None:
    """The `exercise` kernel cell of `notebook` in `folder` (default: the working directory, the notebook's
    own), read by the grader's own parser; None when the notebook or the cell is missing or unreadable."""
    import json

    from grader.judge import submissions

    path = (Path(folder) if folder else Path.cwd()) / notebook
    try:
        return submissions.notebook_kernels(json.loads(path.read_text())).get(exercise)
    except (OSError, ValueError, KeyError, RecursionError):
        return None


def _yours_else_reference(
    cells: dict[str, str], reference: Path, join, problem, yours: str, folder=None
) -> tuple[str, str]:
    """(kernel file, where it came from): the kernel cells `cells` ({notebook: exercise}) of the notebooks
    in `folder` (_kernel_cell), joined into one file by `join({notebook: file})`, when `problem(file)`
    finds nothing wrong (None); else the course's `reference` file, and why."""
    found = {}
    for notebook, exercise in cells.items():
        found[notebook] = _kernel_cell(notebook, exercise, folder)
        if found[notebook] is None:
            where = (Path(folder) if folder else Path.cwd()) / notebook
            return reference.read_text(), f"kernels/{reference.name} (no {exercise} kernel cell in {where})"
    source = join(found)
    why = problem(source)
    return (reference.read_text(), f"kernels/{reference.name} ({why})") if why else (source, yours)


def register_blocked_source(folder=None) -> tuple[str, str]:
    """(kernel file, where it came from) that notebook 07 starts from: your notebook 05's register_blocked
    kernel cell when the grader finds it correct (no timing: a few seconds on the CPU backend; an unfinished
    scaffold builds, so building is not enough), else kernels/04_register_blocked.cu, and why."""
    from grader.spec import exercises, kinds
    from grader.judge import grade
    from grader.errors import GraderError

    ((notebook, gemm),) = exercises.of_kind(kinds.FUSED_EPILOGUE).builds_on  # notebook 05's GEMM cell

    def problem(source: str) -> str | None:
        try:
            result = grade.grade(gemm, source, time_it=False)
        except GraderError as e:  # CannotGrade: no compiler, no backend
            return f"your notebook 05 kernel cannot be checked here: {_first_line(e)}"
        return None if result.correct else f"your notebook 05 kernel fails the check: {_first_line(result.message)}"

    return _yours_else_reference(
        {notebook: gemm},
        exercises.EXERCISES[gemm].reference_path,
        lambda found: next(iter(found.values())),
        problem,
        f"your notebook 05 kernel (its {gemm} cell passes the correctness check)",
        folder,
    )


def gemm_relu_scaffold(gemm_file: str) -> str:
    """Notebook 07's kernel cell to start from: `gemm_file` (a GEMM file with its `gemm` launcher, kept:
    the grader times gemm_relu against it + a separate pass) verbatim, and after it what to add, with a
    commented gemm_relu launcher of the contract's signature. None of the epilogue is written."""
    from grader.spec.contract import GEMM_RELU

    todo = f"""
// ---- notebook 07: the fused epilogue, added to the GEMM above ----
// FILL ME IN (roughly 35 lines):
// 1. give the kernel the parameters `const float* bias, uint32_t* mask, bool epi`; `gemm` launches it
//    with epi = false and nullptr for both, so it keeps the plain store (the grader times gemm_relu
//    against your gemm + a separate pass). A run-time flag, not a template one: both launchers then run
//    one compiled main loop (two instantiations may be scheduled differently: on the H200 a template
//    flag made notebook 07's gemm 13 % slower than its fused kernel, and the grader refuses that);
// 2. when EPI, replace the store of C by the epilogue, on the values still in registers: add the bias,
//    apply ReLU, store C, and build and store the mask words (the exercise above and its hints);
// 3. the launcher, with exactly this signature:
// extern "C" {GEMM_RELU.signature} {{
//     // launch the kernel as `gemm` does, with epi = true, bias and mask
// }}
"""
    body = gemm_file.strip("\n") + "\n" + todo
    quote = next((q for q in ("'''", '"""') if q not in body), None)
    literal = f"r{quote}\n{body}{quote}" if quote else repr(body)  # repr: a file holding both quotes
    return f"# kernel: gemm_relu\nSOURCE = {literal}\n"


def offer_cell(text: str) -> bool:
    """Ask the front end for a new code cell holding `text` below the running one (IPython's
    set_next_input: JupyterLab, Notebook and Colab take it; nbclient ignores it). False outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    shell.set_next_input(text, replace=False)
    return True


def start_gemm_relu(folder=None) -> str:
    """Notebook 07's first step: your notebook 05 kernel (else kernels/04) as a gemm_relu kernel cell to
    finish, offered as a new cell below the running one. Prints where the GEMM came from; returns the cell."""
    gemm, where = register_blocked_source(folder)
    cell = gemm_relu_scaffold(gemm)
    print(f"starting from {where}")
    if _has_gemm_relu_kernel(folder):
        print(
            "Your saved 07_fused_epilogue.ipynb already has a gemm_relu kernel cell with a launcher: no second "
            "cell written (the grader grades the last one). To start again, delete that cell and run this one."
        )
        return cell
    if offer_cell(cell):
        print(
            "Written into a new cell below this one: do the exercise there (the grader grades a notebook's "
            "last `# kernel: gemm_relu` cell, which is that one)."
        )
    print(
        "No new cell? This front end ignores cells written from code: print the text this returns and "
        "paste it into a new code cell below this one."
    )
    return cell


def _has_gemm_relu_kernel(folder=None) -> bool:
    """Does the saved notebook 07 in `folder` already hold a gemm_relu kernel cell that defines a launcher
    (the learner's scaffold, or the solution), not only the exercise's placeholder?"""
    from grader.spec import exercises, kinds

    fused = exercises.of_kind(kinds.FUSED_EPILOGUE).name
    return 'extern "C"' in (_kernel_cell("07_fused_epilogue.ipynb", fused, folder) or "")


# ---------------------------------------------------------------------------- notebook 08: training


def mlp_step_source(folder=None) -> tuple[str, str]:
    """(kernel file, where it came from) for exercise mlp_step: your notebook 07's kernel cell (gemm_relu,
    gemm) and your notebook 06's (relu_backward), both in `folder` (default: the working directory, the
    notebook's own), when they build together; else kernels/08_mlp_step.cu, and why. Each file goes in a
    namespace of its own (their constants and helpers may share names) after the #include lines; their
    extern "C" launchers keep their C names."""
    import re

    from grader.run import binding
    from grader.spec import exercises, kinds
    from grader.errors import GraderError

    step = exercises.of_kind(kinds.TRAINING_STEP)
    include = re.compile(r"^[ \t]*#[ \t]*include\b.*$", re.M)

    def join(found: dict[str, str]) -> str:
        heads = dict.fromkeys(h.strip() for src in found.values() for h in include.findall(src))
        return (
            "\n".join(heads)
            + "\n"
            + "".join(
                f"\nnamespace notebook{name[:2]} {{  // {name}'s kernel cell\n{include.sub('', src).strip()}\n}}\n"
                for name, src in found.items()
            )
        )

    def problem(source: str) -> str | None:
        try:
            binding.load(source, step.name)
        except GraderError as e:
            return f"yours do not build together: {_first_line(e)}"
        return None

    return _yours_else_reference(
        dict(step.builds_on),
        step.reference_path,
        join,
        problem,
        "your notebooks 07 (gemm_relu, gemm) and 06 (relu_backward)",
        folder,
    )


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
        rest = lines[lines.index("BACKEND = setup()") + 1 :]
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

    ap = argparse.ArgumentParser(prog="python -m grader.course.lab")
    ap.add_argument("--write-setup", nargs="+", metavar="NOTEBOOK", help="rewrite these notebooks' setup cells")
    ap.add_argument("--write-readme", action="store_true", help="rewrite README.md's Open-in-Colab links")
    args = ap.parse_args()
    if args.write_readme:
        readme = Path(__file__).resolve().parent.parent.parent / "README.md"
        print(f"README.md {'rewritten' if _write_readme(readme) else 'unchanged'}")
    if args.write_setup:
        print(f"{_write_setup_cells(args.write_setup)} notebook(s) changed")
