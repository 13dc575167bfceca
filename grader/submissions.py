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

or a cell of CUDA whose first line (after an optional `%%writefile tiled.cu` line) is
`// grader: EXERCISE`. The last such cell for the exercise wins. In a student folder
with several candidate files, one with a kernel cell / marker line for the exercise
wins, else one whose name contains the exercise, else the only one. Whatever cannot be
read becomes a Submission with a `problem` that says why, never an exception.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .errors import SubmissionError

MARKER = re.compile(r"^\s*//\s*grader:\s*(\w+)\s*$")
SOURCE_SUFFIXES = (".cu", ".ipynb")


@dataclass
class Submission:
    student_id: str
    path: Path | None          # the file the kernel came from
    source: str | bytes | None  # the kernel file's text (bytes: not UTF-8)
    problem: str = ""          # why there is no source (no kernel cell, no file...)

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


def _kernel_cells(nb) -> dict[str, str | SubmissionError]:
    """{exercise: kernel file, or why its last kernel cell cannot be read}. Raises ValueError when
    `nb` is not a notebook's JSON (a dict with a list of cells)."""
    import ast

    if not isinstance(nb, dict) or not isinstance(nb.get("cells", []), list):
        raise ValueError("not a Jupyter notebook (no list of cells)")
    found: dict[str, str | SubmissionError] = {}
    for cell in nb.get("cells", []):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        src = "".join(map(str, src)) if isinstance(src, list) else str(src)
        lines = src.splitlines()
        if lines and (m := PY_MARKER.match(lines[0].strip())):
            try:
                body = ast.parse("\n".join(lines[1:])).body
            except SyntaxError as e:
                found[m.group(1)] = SubmissionError(
                    f"its `# kernel: {m.group(1)}` cell is not valid Python (line {(e.lineno or 0) + 1}: {e.msg}); "
                    "the cell must set SOURCE = r\'\'\'...\'\'\' to the kernel file")
                continue
            found[m.group(1)] = SubmissionError(
                f"its `# kernel: {m.group(1)}` cell does not set SOURCE to one string literal "
                "(SOURCE = r\'\'\'...\'\'\'; it is read, never run)")
            for node in body:
                if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SOURCE" for t in node.targets)
                        and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                    found[m.group(1)] = node.value.value
            continue
        if lines and lines[0].lstrip().startswith("%%"):
            lines = lines[1:]
        if lines and (m := MARKER.match(lines[0])):
            found[m.group(1)] = "\n".join(lines) + "\n"
    return found


def notebook_kernels(nb) -> dict[str, str]:
    """{exercise: kernel file} of a notebook (its JSON as a dict): for each exercise, its last
    kernel cell, either `# kernel: EXERCISE` + `SOURCE = r"..."` (the course's notebooks; parsed,
    never run), or `// grader: EXERCISE` + CUDA source (after an optional `%%writefile` line)."""
    return {k: v for k, v in _kernel_cells(nb).items() if isinstance(v, str)}


def notebook_kernel(nb_text: str, exercise: str) -> str | None:
    """The kernel file for `exercise` in a notebook's JSON text (see notebook_kernels)."""
    return notebook_kernels(json.loads(nb_text)).get(exercise)


def notebook_source(path: Path, exercise: str) -> str:
    """The kernel file in notebook `path` for `exercise`; SubmissionError says why there is none."""
    try:
        cell = _kernel_cells(json.loads(path.read_text(encoding="utf-8"))).get(exercise)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise SubmissionError(f"{path.name} is not a readable notebook ({e})") from None
    if cell is None:
        raise SubmissionError(f"{path.name} has no kernel cell for {exercise}: a code cell whose first line is "
                              f"`# kernel: {exercise}` and that sets SOURCE to the kernel file (or a CUDA cell "
                              f"starting `// grader: {exercise}`)")
    if isinstance(cell, SubmissionError):
        raise SubmissionError(f"{path.name}: {cell}")
    return cell


def kernel_filename(path: Path) -> str:
    """The name compiler messages give a submission's kernel: the .cu file's, or the notebook's as .cu."""
    return path.name if path.suffix.lower() == ".cu" else f"{path.stem}.cu"


def read(source_or_path, exercise: str) -> tuple[str, str]:
    """(kernel source, file name) of what `check` is given: kernel text, a .cu path, or a notebook
    (its kernel cell for `exercise`)."""
    from .binding import read_source  # torch: only when a kernel is really read
    text = str(source_or_path)
    if "\n" not in text and text.lower().endswith(".ipynb") and Path(text).is_file():
        return notebook_source(Path(text), exercise), kernel_filename(Path(text))
    return read_source(source_or_path)  # a missing notebook, too, is "no such file"


def _read(path: Path, exercise: str) -> Submission:
    sid = path.stem
    if path.suffix.lower() == ".ipynb":
        try:
            return Submission(sid, path, notebook_source(path, exercise))
        except SubmissionError as e:
            return Submission(sid, path, None, str(e))
    try:
        data = path.read_bytes()
    except OSError as e:
        return Submission(sid, path, None, f"{path.name} cannot be read ({e.strerror})")
    try:
        return Submission(sid, path, data.decode("utf-8"))
    except UnicodeDecodeError:
        return Submission(sid, path, data)


def _pick(files: list[Path], exercise: str) -> Path | None:
    def marked(p: Path) -> bool:
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        if p.suffix.lower() == ".ipynb":
            try:
                return exercise in _kernel_cells(json.loads(text))
            except (ValueError, RecursionError):
                return False
        return any((m := MARKER.match(line)) and m.group(1) == exercise for line in text.splitlines()[:20])
    for rule in (marked, lambda p: exercise in p.stem, lambda p: p.suffix.lower() == ".cu"):
        hits = [p for p in files if rule(p)]
        if len(hits) == 1 or (hits and rule is marked):
            return sorted(hits)[-1]
    return files[0] if len(files) == 1 else None


def discover(root: Path, exercise: str) -> list[Submission]:
    """Every submission under root, sorted by student id."""
    subs = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        try:
            _discover_entry(entry, exercise, subs)
        except Exception as e:  # noqa: BLE001 — one unreadable entry never stops the batch
            subs.append(Submission(entry.stem, None, None, f"{entry.name} cannot be read ({type(e).__name__}: {e})"))
    # alice.cu and alice.ipynb are two submissions: name them by file so neither row is lost
    stems = Counter(s.student_id for s in subs)
    for s in subs:
        if stems[s.student_id] > 1 and s.path is not None and s.path.parent == root:
            s.student_id = s.path.name
    return subs


def _discover_entry(entry: Path, exercise: str, subs: list[Submission]) -> None:
    """Append the submission in `entry` (a file, or a student folder) to subs, if it holds one."""
    if entry.is_file() and entry.suffix.lower() in SOURCE_SUFFIXES:
        subs.append(_read(entry, exercise))
    elif entry.is_dir():
        files = sorted(p for p in entry.rglob("*") if p.is_file() and p.suffix.lower() in SOURCE_SUFFIXES
                       and not any(part.startswith(".") for part in p.relative_to(entry).parts))
        chosen = _pick(files, exercise) if files else None
        if chosen is None:
            why = "no .cu file or notebook" if not files else \
                f"several candidate files ({', '.join(p.name for p in files[:5])}) and none marked " \
                f"`// grader: {exercise}`"
            subs.append(Submission(entry.name, None, None, f"{entry.name}/: {why}"))
        else:
            sub = _read(chosen, exercise)
            sub.student_id = entry.name
            subs.append(sub)
