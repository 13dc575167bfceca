"""Errors the grader tells a learner about. Each carries one clear message."""


class GraderError(Exception):
    """Base class: the message is meant for a person, with the fix in it."""


class CannotGrade(GraderError):
    """The grader could not grade (missing file, unknown exercise, no GPU...). Exit code 2."""


class SubmissionError(GraderError):
    """The submission is at fault (does not compile, missing launcher...). Exit code 1."""


class CompileError(SubmissionError):
    """The compiler rejected the kernel file. `message` holds its diagnostics, with the
    learner's own file name and line numbers; `log` holds the full compiler output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log or message


class Forbidden(SubmissionError):
    """The submission uses what a kernel file may not: found by the source scan (forbidden.py) or
    in the built object (linkcheck.py). The message starts with 'forbidden:'."""


class LauncherError(SubmissionError):
    """A launcher the contract requires is missing or misspelt."""


class KernelError(SubmissionError):
    """The kernel failed while running (CUDA error, or a CPU-backend diagnostic:
    divergent barrier, race, out-of-bounds access, unsupported construct)."""
