"""Finding submissions: a kernel file, a notebook's kernel cell, or a student folder.

One submission per entry of a folder (batch) or one file (check):
  alice.cu                    a kernel file; the student id is the file's stem (alice)
  bob.ipynb                   a notebook; the kernel is its kernel cell (below)
  carol/                      a student folder: the .cu file(s) or notebook(s) inside
                              (searched recursively); the student id is the folder's name

A notebook's kernel cell is a code cell whose first line is `# kernel: EXERCISE` and
which assigns the kernel file to SOURCE as a string literal, as the course notebooks do
(the cell is parsed, never run):

    # kernel: tiled
    SOURCE = r'''
    #include <cuda_runtime.h>
    ...
    '''

(`SOURCE: str = r'''...'''` too), or a cell of CUDA whose first line (after an optional
`%%writefile tiled.cu` line) is `// grader: EXERCISE`. The last such cell for the exercise wins.
Since the literal is what is graded, a kernel cell that binds SOURCE anywhere else, or a later
cell (before the next kernel cell) that does (SOURCE = SOURCE.replace(...), SOURCE += ...), is
refused with the line that does it. The graded text keeps the cell's line numbers (blank lines
in front), and messages call it "NAME.ipynb (kernel cell)". In a student folder
with several candidate files, one with a kernel cell / marker line for the exercise
wins, else one whose name contains the exercise, else the only one; of several, the one nearest the
folder's top (kernel.cu before old/kernel.cu), and several marked ones equally near are refused. A
link that leads outside the student's folder (or a top-level one outside DIR) is refused. Whatever cannot be
read becomes a Submission with a `problem` that says why, never an exception.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from grader.errors import SubmissionError
from grader.spec.files import not_regular_message, special_kind

MARKER = re.compile(r"^\s*//\s*grader:\s*(\w+)\s*$")
SOURCE_SUFFIXES = (".cu", ".ipynb")
# A notebook is parsed (json, then ast for its cells) in a limited child (grader.compile.bounded): a crafted cell
# of 1 MB took 430 MB and 1.5 s of ast in the grader's process. The course's notebooks are under 0.5 MB.
MAX_NOTEBOOK_BYTES = 20_000_000
NOTEBOOK_TIMEOUT_S = 10.0


@dataclass
class Submission:
    student_id: str
    path: Path | None  # the file the kernel came from
    source: str | bytes | None  # the kernel file's text (bytes: not UTF-8)
    problem: str = ""  # why there is no source (no kernel cell, no file...)

    def __post_init__(self):  # a name from a zip may not be UTF-8 (lone surrogates): keep it printable
        self.student_id = printable(self.student_id)
        self.problem = printable(self.problem)

    @property
    def sha256(self) -> str:
        data = self.source if isinstance(self.source, bytes) else (self.source or self.problem).encode()
        return hashlib.sha256(data).hexdigest()


def printable(text: str) -> str:
    """`text` with any undecodable bytes of a file name shown as \\xNN escapes."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# ---------------------------------------------------------------------------- finding submissions
PY_MARKER = re.compile(r"^#\s*kernel:\s*(\w+)\s*$")
# cell magics whose body is Python that runs (the rest, %%bash or %%writefile..., is not Python)
PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture", "%%prun", "%%debug")


@dataclass
class KernelCell:
    """A notebook's kernel cell: the kernel file, and the cell line its first line is on."""

    source: str
    first_line: int = 1

    @property
    def as_graded(self) -> str:
        """The kernel file with blank lines in front, so that line L of what the compiler and the
        scan see is line L of the cell (messages give the learner's cell lines)."""
        return "\n" * (self.first_line - 1) + self.source


def _source_bindings(tree) -> list[int]:
    """Lines where Python code binds (or deletes) the name SOURCE, in any form."""
    import ast

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "SOURCE" and isinstance(node.ctx, (ast.Store, ast.Del)):
            lines.append(node.lineno)
        elif isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == "SOURCE":
            lines.append(node.lineno)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == "SOURCE":
            lines.append(node.lineno)
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and "SOURCE" in node.names:
            lines.append(node.lineno)
        elif isinstance(node, ast.ExceptHandler) and node.name == "SOURCE":
            lines.append(node.lineno)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == "SOURCE":
            lines.append(node.lineno)
    return sorted(lines)


def _python_of_cell(src: str):
    """The cell's Python syntax tree (IPython magics and shell lines blanked, lines kept), or None
    when it is not Python (%%bash, %%writefile, a syntax error): then it runs no Python of ours to see."""
    import ast

    lines = src.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        if not lines[0].lstrip().startswith(PYTHON_CELL_MAGICS):
            return None
        lines[0] = ""
    lines = [re.sub(r"^(\s*)[%!].*", r"\1pass", line) for line in lines]
    try:
        return ast.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _literal_cell(exercise: str, src: str) -> KernelCell | SubmissionError:
    """The kernel file a `# kernel: EXERCISE` cell sets SOURCE to, or why it cannot be read.

    The cell is parsed, never run, so what is graded is the string literal; a cell that binds
    SOURCE anywhere else (SOURCE = SOURCE.replace(...), +=, another assignment) would run another
    kernel than the one graded, and is refused. `SOURCE: str = r'''...'''` counts as the assignment."""
    import ast

    try:
        tree = ast.parse(src)
    except (MemoryError, RecursionError):  # the parser's own nesting limits (`-` * 10**6 + `1`)
        return SubmissionError(f"its `# kernel: {exercise}` cell is nested too deeply for Python to parse")
    except (SyntaxError, ValueError) as e:
        return SubmissionError(
            f"its `# kernel: {exercise}` cell is not valid Python (line {e.lineno or 0}: {getattr(e, 'msg', e)}); "
            "the cell must set SOURCE = r'''...''' to the kernel file"
        )
    literal = None
    for node in tree.body:
        target = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign) and node.value is not None
            else []
        )
        if (
            len(target) == 1
            and isinstance(target[0], ast.Name)
            and target[0].id == "SOURCE"
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            literal = literal or node
    if literal is None:
        return SubmissionError(
            f"its `# kernel: {exercise}` cell does not set SOURCE to one string literal "
            "(SOURCE = r'''...'''; it is read, never run)"
        )
    others = [line for line in _source_bindings(tree) if line != literal.lineno]
    if others:
        return SubmissionError(
            f"its `# kernel: {exercise}` cell rewrites SOURCE after setting it (line {others[0]} of the cell): "
            "the grader grades the string literal only (the cell is read, never run), so it would grade another "
            "kernel than the one your notebook runs. Put the whole kernel file in the one SOURCE = r'''...''' "
            "literal, and change SOURCE nowhere else."
        )
    value = literal.value
    exact = value.end_lineno is not None and value.value.count("\n") == value.end_lineno - value.lineno
    return KernelCell(value.value, value.lineno if exact else 1)


def _kernel_cells(nb) -> dict[str, KernelCell | SubmissionError]:
    """{exercise: its last kernel cell, or why that cell cannot be graded}. Raises ValueError when
    `nb` is not a notebook's JSON (a dict with a list of cells)."""
    if not isinstance(nb, dict) or not isinstance(nb.get("cells", []), list):
        raise ValueError("not a Jupyter notebook (no list of cells)")
    found: dict[str, KernelCell | SubmissionError] = {}
    open_exercise = None  # the exercise whose SOURCE the cells that follow see
    for number, cell in enumerate(nb.get("cells", []), start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        src = "".join(map(str, src)) if isinstance(src, list) else str(src)
        lines = src.splitlines()
        if lines and (m := PY_MARKER.match(lines[0].strip())):
            open_exercise = m.group(1)
            found[open_exercise] = _literal_cell(open_exercise, src)
            continue
        if lines and lines[0].lstrip().startswith("%%"):
            if m := MARKER.match(lines[1] if len(lines) > 1 else ""):
                found[m.group(1)] = KernelCell("\n".join(lines[1:]) + "\n", 2)
                continue
        elif lines and (m := MARKER.match(lines[0])):
            found[m.group(1)] = KernelCell("\n".join(lines) + "\n")
            continue
        if open_exercise and isinstance(found.get(open_exercise), KernelCell):
            tree = _python_of_cell(src)
            rebinds = _source_bindings(tree) if tree is not None else []
            if rebinds:
                found[open_exercise] = SubmissionError(
                    f"cell {number} (counting every cell from 1) rewrites SOURCE (its line {rebinds[0]}) after the "
                    f"`# kernel: {open_exercise}` cell: the grader grades that cell's string literal only, so it "
                    "would grade another kernel than the one your notebook runs. Put the final kernel file in the "
                    "kernel cell's literal, and change SOURCE nowhere else."
                )
    return found


def notebook_kernels(nb) -> dict[str, str]:
    """{exercise: kernel file} of a notebook (its JSON as a dict): for each exercise, its last
    kernel cell, either `# kernel: EXERCISE` + `SOURCE = r"..."` (the course's notebooks; parsed,
    never run), or `// grader: EXERCISE` + CUDA source (after an optional `%%writefile` line)."""
    return {k: v.source for k, v in _kernel_cells(nb).items() if isinstance(v, KernelCell)}


def notebook_kernel(nb_text: str, exercise: str) -> str | None:
    """The kernel file for `exercise` in a notebook's JSON text (see notebook_kernels)."""
    return notebook_kernels(json.loads(nb_text)).get(exercise)


def notebook_source(path: Path, exercise: str) -> str:
    """The kernel file in notebook `path` for `exercise`; SubmissionError says why there is none."""
    cell = notebook_cells(path).get(exercise)
    if cell is None:
        raise SubmissionError(
            f"{path.name} has no kernel cell for {exercise}: a code cell whose first line is "
            f"`# kernel: {exercise}` and that sets SOURCE to the kernel file (or a CUDA cell "
            f"starting `// grader: {exercise}`)"
        )
    if isinstance(cell, SubmissionError):
        raise SubmissionError(f"{path.name}: {cell}")
    return cell.as_graded


def notebook_cells(path: Path) -> dict[str, KernelCell | SubmissionError]:
    """_kernel_cells of the notebook at `path`, read in a child with a time and memory limit (grader.compile.bounded);
    SubmissionError when it is too large, not a notebook, or its reading went past a limit."""
    from grader.compile import bounded

    try:
        size = path.stat().st_size
        if size > MAX_NOTEBOOK_BYTES:
            raise SubmissionError(
                f"{path.name} is {size / 1e6:.1f} MB; a notebook may be at most {MAX_NOTEBOOK_BYTES / 1e6:g} MB "
                "(clear its outputs: Edit > Clear Outputs of All Cells)"
            )
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise SubmissionError(f"{path.name} is not a readable notebook ({e})") from None
    except OSError as e:
        raise SubmissionError(f"{path.name} cannot be read ({e.strerror})") from None
    try:
        found = bounded.call("grader.judge.submissions", "_cells_json", text, timeout=NOTEBOOK_TIMEOUT_S)
    except bounded.LimitExceeded as e:
        raise SubmissionError(f"{path.name} is not a readable notebook (reading it stopped: {e})") from None
    if isinstance(found, str):
        raise SubmissionError(f"{path.name} is not a readable notebook ({found})")
    return {k: KernelCell(*v[1:]) if v[0] == "cell" else SubmissionError(v[1]) for k, v in found.items()}


def _cells_json(text: str) -> dict | str:
    """_kernel_cells of a notebook's text as JSON (grader.compile.bounded): {exercise: ["cell", source, first line]
    or ["error", message]}, or why the text is not a notebook."""
    try:
        cells = _kernel_cells(json.loads(text))
    except (ValueError, RecursionError) as e:
        return str(e)
    return {
        k: ["cell", v.source, v.first_line] if isinstance(v, KernelCell) else ["error", str(v)]
        for k, v in cells.items()
    }


def kernel_filename(path: Path) -> str:
    """The name messages give a submission's kernel: the .cu file's, or for a notebook "NAME.ipynb
    (kernel cell)", whose line numbers are the kernel cell's (notebook_source pads the kernel so)."""
    return path.name if path.suffix.lower() == ".cu" else f"{path.name} (kernel cell)"


def read(source_or_path, exercise: str) -> tuple[str, str]:
    """(kernel source, file name) of what `check` is given: kernel text, a .cu path, or a notebook
    (its kernel cell for `exercise`)."""
    from grader.run.binding import read_source  # torch: only when a kernel is really read

    text = str(source_or_path)
    if "\n" not in text and text.lower().endswith(".ipynb") and Path(text).is_file():
        return notebook_source(Path(text), exercise), kernel_filename(Path(text))
    source, filename = read_source(source_or_path)  # a missing notebook, too, is "no such file"
    cell = _running_kernel_cell(source, exercise) if "\n" in text else None
    return (cell.as_graded, "kernel cell") if cell else (source, filename)


def _running_kernel_cell(source: str, exercise: str) -> KernelCell | None:
    """In a notebook, grader.check(EXERCISE, SOURCE) is given the string only: find the kernel
    cell it came from in IPython's input history (the latest `# kernel: EXERCISE` cell whose
    literal is this text), so that messages give that cell's line numbers. None elsewhere."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    history = getattr(shell, "user_ns", {}).get("In", []) if shell is not None else []
    for src in reversed(history[-500:] if isinstance(history, list) else []):
        lines = str(src).splitlines()
        if lines and (m := PY_MARKER.match(lines[0].strip())) and m.group(1) == exercise:
            cell = _literal_cell(exercise, str(src))
            if isinstance(cell, KernelCell) and cell.source.lstrip("\ufeff") == source:
                return cell
    return None


def _read(path: Path, exercise: str) -> Submission:
    sid = path.stem
    if path.suffix.lower() == ".ipynb":
        try:
            return Submission(sid, path, notebook_source(path, exercise))
        except SubmissionError as e:
            return Submission(sid, path, None, str(e))
    from grader.compile import forbidden  # here: notebooks are read in a child that need not compile its patterns

    try:
        big = forbidden.too_large(path.stat().st_size)  # refused unread: a file of gigabytes is never loaded
        if big:
            return Submission(sid, path, None, forbidden.message([big], path.name))
        data = path.read_bytes()
    except OSError as e:
        return Submission(sid, path, None, f"{path.name} cannot be read ({e.strerror})")
    try:
        return Submission(sid, path, data.decode("utf-8"))
    except UnicodeDecodeError:
        return Submission(sid, path, data)


_MARKER_BYTES = 1 << 16  # the marker is on one of the first 20 lines


def _pick(files: list[Path], exercise: str, folder: Path) -> Path | SubmissionError | None:
    """The file of a student folder to grade: by the first rule that has hits (marked for the exercise;
    named after it; a .cu file), the one hit nearest the folder's top. SubmissionError when several marked
    files are equally near; None when no rule picks one."""

    def marked(p: Path) -> bool:
        if p.suffix.lower() == ".ipynb":
            try:
                return exercise in notebook_cells(p)
            except SubmissionError:
                return False
        try:
            with p.open("rb") as f:
                head = f.read(_MARKER_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return False
        return any((m := MARKER.match(line)) and m.group(1) == exercise for line in head.splitlines()[:20])

    def depth(p: Path) -> int:
        return len(p.relative_to(folder).parts)

    for rule in (marked, lambda p: exercise in p.stem, lambda p: p.suffix.lower() == ".cu"):
        hits = [p for p in files if rule(p)]
        nearest = [p for p in hits if depth(p) == min(map(depth, hits))]
        if len(nearest) == 1:  # kernel.cu before old/kernel.cu
            return nearest[0]
        if nearest and rule is marked:
            shown = ", ".join(str(p.relative_to(folder)) for p in nearest[:5])
            return SubmissionError(
                f"several files marked `// grader: {exercise}` (or with its kernel cell) at the same level "
                f"({shown}): keep the marker in the one to grade"
            )
    return files[0] if len(files) == 1 else None


def discover(root: Path, exercise: str, one: bool = False) -> list[Submission]:
    """Every submission under root, sorted by student id. one: root is one student's upload (Gradescope's
    submission folder), graded as a student folder."""
    if one:
        subs: list[Submission] = []
        try:
            _discover_entry(root, exercise, subs, root)
        except Exception as e:  # noqa: BLE001 — a row, never a traceback
            subs.append(Submission(root.name, None, None, f"{root.name}/ cannot be read ({type(e).__name__}: {e})"))
        return subs
    subs = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        try:
            _discover_entry(entry, exercise, subs, root)
        except Exception as e:  # noqa: BLE001 — one unreadable entry never stops the batch
            subs.append(Submission(entry.stem, None, None, f"{entry.name} cannot be read ({type(e).__name__}: {e})"))
    # alice.cu and alice.ipynb are two submissions: name them by file so neither row is lost
    stems = Counter(s.student_id for s in subs)
    for s in subs:
        if stems[s.student_id] > 1 and s.path is not None and s.path.parent == root:
            s.student_id = s.path.name
    return subs


def _leaves(path: Path, folder: Path) -> bool:
    """Whether `path` (through its links) is outside `folder`: a zip can carry a link to any file."""
    try:
        return not path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a loop of links
        return True


def _link_refused(sid: str, path: Path, folder: Path, shown: str) -> Submission:
    return Submission(
        sid,
        None,
        None,
        f"{shown} is a link to a file outside {folder.name}/: refused (submit the file itself, not a link)",
    )


def _discover_entry(entry: Path, exercise: str, subs: list[Submission], root: Path) -> None:
    """Append the submission in `entry` (a file, or a student folder) to subs, if it holds one. Nothing
    outside `root` (a top-level entry) or outside the student's folder is graded through a link."""
    if entry.suffix.lower() in SOURCE_SUFFIXES and (kind := special_kind(entry)) and kind != "a folder":
        subs.append(Submission(entry.stem, None, None, not_regular_message(entry.name, kind)))
    elif entry.is_file() and entry.suffix.lower() in SOURCE_SUFFIXES:
        if _leaves(entry, root):
            subs.append(_link_refused(entry.stem, entry, root, entry.name))
        else:
            subs.append(_read(entry, exercise))
    elif entry.is_dir():
        if entry != root and _leaves(entry, root):
            subs.append(_link_refused(entry.name, entry, root, entry.name + "/"))
            return
        named = [
            p
            for p in entry.rglob("*")
            if p.suffix.lower() in SOURCE_SUFFIXES
            and not any(part.startswith(".") for part in p.relative_to(entry).parts)
        ]
        files = sorted(p for p in named if p.is_file())
        special = sorted((p, kind) for p in named if (kind := special_kind(p)) and kind != "a folder")
        if special and not files:  # never opened: a FIFO's reader waits for a writer forever
            path, kind = special[0]
            shown = f"{entry.name}/{path.relative_to(entry)}"
            subs.append(Submission(entry.name, None, None, not_regular_message(shown, kind)))
            return
        linked = [p for p in files if _leaves(p, entry)]
        if linked:
            subs.append(_link_refused(entry.name, linked[0], entry, f"{entry.name}/{linked[0].relative_to(entry)}"))
            return
        chosen = _pick(files, exercise, entry) if files else None
        if isinstance(chosen, SubmissionError):
            subs.append(Submission(entry.name, None, None, f"{entry.name}/: {chosen}"))
        elif chosen is None:
            why = (
                "no .cu file or notebook"
                if not files
                else f"several candidate files ({', '.join(p.name for p in files[:5])}) and none marked "
                f"`// grader: {exercise}`"
            )
            subs.append(Submission(entry.name, None, None, f"{entry.name}/: {why}"))
        else:
            sub = _read(chosen, exercise)
            sub.student_id = entry.name
            subs.append(sub)
