"""The course's grader: build, run, check and time CUDA C++ kernel files.

In a notebook:
    import grader
    mod = grader.load(SOURCE, "tiled")    # compile (cached) and load; mod.gemm(A, B)
    grader.check("tiled", SOURCE)         # grade in a child process, show the verdict
    grader.resources(SOURCE, "tiled")     # registers, shared memory, spills (nvcc -Xptxas -v)
    grader.profile.run("tiled", SOURCE)   # memory accesses counted as Nsight Compute would (CPU backend)

On the command line: python -m grader list | doctor | check | profile | batch | bench.
"""

import importlib
import importlib.util

from grader.errors import CannotGrade, CompileError, GraderError, KernelError, LauncherError, SubmissionError

# Imported on first use (PEP 562), not here: they need numpy and torch, and `python -m grader doctor`,
# which says when those are missing, must run on the standard library alone.
_LAZY = {"load": "grader.run.binding", "resolve_backend": "grader.run.binding", "EXERCISES": "grader.spec.exercises"}
# the notebooks' flat names of modules that live in a layer's subpackage (`profile`, `from grader import lab`)
_MOVED: dict[str, str] = {
    "batch": "grader.classroom.batch",
    "bench": "grader.course.bench",
    "binding": "grader.run.binding",
    "bounded": "grader.compile.bounded",
    "bwrap": "grader.run.bwrap",
    "calibration": "grader.judge.calibration",
    "checks": "grader.spec.checks",
    "contract": "grader.spec.contract",
    "cpu": "grader.compile.cpu",
    "doctor": "grader.course.doctor",
    "exercises": "grader.spec.exercises",
    "forbidden": "grader.compile.forbidden",
    "forkserver": "grader.run.forkserver",
    "fusion": "grader.course.fusion",
    "grade": "grader.judge.grade",
    "gradebook": "grader.classroom.gradebook",
    "host": "grader.run.host",
    "hostcc": "grader.compile.hostcc",
    "kinds": "grader.spec.kinds",
    "lab": "grader.course.lab",
    "linkcheck": "grader.compile.linkcheck",
    "lms": "grader.classroom.lms",
    "machine": "grader.course.machine",
    "merge": "grader.classroom.merge",
    "mlp": "grader.spec.mlp",
    "notebooks": "grader.course.notebooks",
    "plots": "grader.course.plots",
    "procs": "grader.compile.procs",
    "profile": "grader.judge.profile",
    "protocol": "grader.run.protocol",
    "report": "grader.judge.report",
    "runner": "grader.run.runner",
    "sandbox": "grader.run.sandbox",
    "sass": "grader.course.sass",
    "seccomp": "grader.run.seccomp",
    "shapes": "grader.spec.shapes",
    "submissions": "grader.judge.submissions",
    "timing": "grader.run.timing",
    "toolchain": "grader.compile.toolchain",
    "training": "grader.course.training",
    "widgets": "grader.course.widgets",
    "worker": "grader.run.worker",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _MOVED:
        value = importlib.import_module(_MOVED[name])
    elif not name.startswith("_") and importlib.util.find_spec(f".{name}", __name__):
        value = importlib.import_module(f".{name}", __name__)  # a flat module (before the move into layers)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # the next lookup is a plain one
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_MOVED) | {"profile"})


def check(exercise: str, source_or_path, *, backend: str = "auto", display: bool = True, **kw):
    """Grade `source_or_path` for `exercise`; show the verdict in the notebook; return the Result."""
    from grader.judge import grade, report

    result = grade.grade(exercise, source_or_path, backend=backend, **kw)
    if display:
        try:
            from IPython import get_ipython
            from IPython.display import HTML, display as show

            if get_ipython() is not None:
                show(HTML(report.html_report(result)))
                return result
        except ImportError:
            pass
        print(report.text(result))
    return result


def resources(source_or_path, exercise: str | None = None, arch: str | None = None):
    """Print and return per-kernel registers, shared memory and spills (nvcc -Xptxas -v)."""
    from grader.run.binding import read_source
    from grader.compile.toolchain import resource_usage

    source, filename = read_source(source_or_path)
    usage = resource_usage(source, exercise=exercise, arch=arch, filename=filename)
    for k in usage:
        print(k)
    return usage


__all__ = [
    "load",
    "check",
    "resources",
    "profile",
    "resolve_backend",
    "EXERCISES",
    "GraderError",
    "CannotGrade",
    "CompileError",
    "KernelError",
    "LauncherError",
    "SubmissionError",
]
