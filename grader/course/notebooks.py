"""Make the exercise notebooks (notebooks/) from the solved ones (solutions/).

    python -m grader.course.notebooks            # rewrite notebooks/ from solutions/
    python -m grader.course.notebooks --check    # exit 1 when notebooks/ is out of date
    python -m grader.course.notebooks --execute DIR   # run each solution, save it with outputs in DIR

In every code cell, each block of lines from a `BEGIN SOLUTION` marker line to its
`END SOLUTION` line (`// ...` inside CUDA strings, `# ...` in Python) is removed. The
`FILL ME IN (roughly N lines)` line just above it stays; when there is none, one is
written with the block's length. Outputs and execution counts are cleared.

A cell whose first line is `# kernel: EXERCISE` holds the kernel file an exercise is
graded on (`SOURCE = r'''...'''`); tools can extract it with `kernel_cells()`.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent.parent
BEGIN = re.compile(r"^(\s*)(//|#)\s*BEGIN SOLUTION\s*$")
END = re.compile(r"^\s*(//|#)\s*END SOLUTION\s*$")
BUDGET = re.compile(r"FILL ME IN \(roughly \d+ lines?\)")


def strip_solutions(code: str) -> str:
    """Replace every BEGIN/END SOLUTION block of `code` with its FILL ME IN line."""
    out, block, indent, comment = [], None, "", ""
    for line in code.split("\n"):
        if block is None:
            m = BEGIN.match(line)
            if m:
                block, indent, comment = [], m.group(1), m.group(2)
            else:
                out.append(line)
        elif END.match(line):
            if not (out and BUDGET.search(out[-1])):
                n = sum(1 for b in block if b.strip())
                out.append(f"{indent}{comment} FILL ME IN (roughly {n} line{'s' if n != 1 else ''})")
            block = None
        else:
            block.append(line)
    if block is not None:
        raise ValueError("BEGIN SOLUTION without END SOLUTION")
    return "\n".join(out)


def exercise_version(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The learner's copy of a solved notebook: solutions stubbed, outputs cleared."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source)
            cell.outputs = []
            cell.execution_count = None
        cell.get("metadata", {}).pop("execution", None)
    nb.metadata.pop("widgets", None)  # the widgets' saved state: the solution's drawings
    return nb


def kernel_cells(nb: nbformat.NotebookNode) -> dict[str, str]:
    """{exercise: kernel source} of the notebook's kernel cells (the grader's own parser)."""
    from grader.judge.submissions import notebook_kernels

    return notebook_kernels(nb)


def render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def execute(src: Path, dst: Path, timeout: int = 900) -> None:
    """Run a solution notebook top to bottom (its own directory as cwd) and save it with outputs."""
    from nbclient import NotebookClient

    nb = nbformat.read(src, as_version=4)
    NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(src.parent)}}
    ).execute()
    dst.write_text(render(nb))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m grader.course.notebooks", description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="only report notebooks that are out of date")
    p.add_argument("--solutions", default=ROOT / "solutions", type=Path)
    p.add_argument("--out", default=ROOT / "notebooks", type=Path)
    p.add_argument(
        "--execute", metavar="DIR", type=Path, help="execute every solution notebook and write it, with outputs, to DIR"
    )
    p.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        default=["*"],
        help="with --execute: only the solutions whose file name matches one of these (e.g. 00_* 08_*)",
    )
    args = p.parse_args(argv)
    if args.execute:
        args.execute.mkdir(parents=True, exist_ok=True)
        chosen = {
            src
            for pattern in args.only
            for src in args.solutions.glob(pattern if pattern.endswith(".ipynb") else pattern + ".ipynb")
        }
        if not chosen:
            p.error(f"no solution notebook matches {' '.join(args.only)}")
        for src in sorted(chosen):
            print(f"executing {src.name}", flush=True)
            execute(src, args.execute / src.name)
        return 0
    stale = []
    for src in sorted(args.solutions.glob("*.ipynb")):
        text = render(exercise_version(nbformat.read(src, as_version=4)))
        dst = args.out / src.name
        if not dst.is_file() or dst.read_text() != text:
            stale.append(dst)
            if not args.check:
                args.out.mkdir(parents=True, exist_ok=True)
                dst.write_text(text)
    extra = sorted(set(args.out.glob("*.ipynb")) - {args.out / s.name for s in args.solutions.glob("*.ipynb")})
    for path in stale:
        print(
            f"{'out of date' if args.check else 'wrote'}: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}"
        )
    for path in extra:
        print(f"no solution for {path.name} (remove it from {args.out.name}/)")
    return 1 if (args.check and stale) or extra else 0


if __name__ == "__main__":
    sys.exit(main())
