"""The CPU backend's C++ compiler: which one it is, and whether it can build a kernel file.

The CPU backend (grader.compile.cpu) builds with GCC's own flags and ThreadSanitizer hooks
(-fdiagnostics-plain-output, --param=tsan-..., GCC 11 or newer). clang, which is also what
`g++` is on macOS, rejects them: without this check a learner reads "does not compile:
unknown argument ..." about a kernel that is fine. A missing or unusable compiler is the
machine's problem, so it is "could not grade" (exit 2), with the fix.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass

from grader.errors import CannotGrade

MIN_GCC = 11  # -fdiagnostics-plain-output


@dataclass(frozen=True)
class Compiler:
    command: str  # what the CPU backend runs: $CXX, else g++
    path: str | None  # where it was found on PATH (None: not found)
    version: str  # the first line of `--version`
    kind: str  # "gcc", "clang", "unknown" or "missing"
    major: int | None  # GCC's major version


def command() -> str:
    """The compiler the CPU backend runs (grader.compile.cpu.build reads $CXX the same way)."""
    from grader.compile.cpu import build

    return build.GXX


@functools.lru_cache(maxsize=None)
def probe(cmd: str | None = None, path_env: str | None = None) -> Compiler:
    """What `cmd` (default: the CPU backend's compiler) is; path_env only keys the cache on $PATH."""
    cmd = cmd or command()
    found = shutil.which(cmd)
    if not found:
        return Compiler(cmd, None, "", "missing", None)
    try:
        out = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=20)
        text = out.stdout + out.stderr
    except (OSError, subprocess.TimeoutExpired):
        return Compiler(cmd, found, "", "unknown", None)
    first = text.strip().splitlines()[0] if text.strip() else ""
    if "clang" in text.lower():
        return Compiler(cmd, found, first, "clang", None)
    if "free software foundation" in text.lower() or re.search(r"\b(g\+\+|gcc)\b", first, re.I):
        m = re.search(r"(\d+)\.\d+(\.\d+)?", first.split(")")[-1]) or re.search(r"(\d+)\.\d+", first)
        return Compiler(cmd, found, first, "gcc", int(m.group(1)) if m else None)
    return Compiler(cmd, found, first, "unknown", None)


def current() -> Compiler:
    return probe(command(), os.environ.get("PATH", ""))


def install_hint() -> str:
    if platform.system() == "Darwin":
        return (
            "on macOS the CPU backend is not available (its g++ is Apple clang, and GCC's ThreadSanitizer "
            "hooks it needs are Linux-only): use Colab, a Linux machine, or a Linux container (Docker)"
        )
    return (
        "install GCC: sudo apt install g++ (Debian/Ubuntu), sudo dnf install gcc-c++ (Fedora), "
        "or conda install -c conda-forge gxx"
    )


def problem(c: Compiler | None = None) -> str | None:
    """Why the CPU backend cannot build with this compiler, with the fix; None when it can."""
    c = c or current()
    named = "$CXX" if os.environ.get("CXX") else "g++"
    if c.kind == "missing":
        if os.environ.get("CXX"):
            return (
                f"$CXX is {c.command!r}, which is not on PATH: the CPU backend needs g++ (GCC {MIN_GCC}+). "
                f"Unset CXX or set CXX=g++; if there is no g++, {install_hint()}."
            )
        return f"no C++ compiler (g++ not found): the CPU backend needs g++ (GCC {MIN_GCC}+); {install_hint()}."
    if c.kind == "clang":
        return (
            f"{named} is clang ({c.version}): the CPU backend needs GCC {MIN_GCC}+ (it uses GCC-only flags "
            f"and GCC's ThreadSanitizer hooks, which clang does not accept). "
            + ("Set CXX=g++ (unset CXX) where g++ is GCC; otherwise " if os.environ.get("CXX") else "")
            + install_hint()
            + "."
        )
    if c.kind == "gcc" and c.major is not None and c.major < MIN_GCC:
        return (
            f"{named} is GCC {c.major} ({c.version}): the CPU backend needs GCC {MIN_GCC} or newer; "
            f"{install_hint()}, or set CXX to a newer g++ (e.g. CXX=g++-12)."
        )
    if c.kind == "unknown":
        return (
            f"{named} ({c.path}) does not say it is GCC ({c.version or 'no --version output'}): the CPU "
            f"backend needs GCC {MIN_GCC}+; set CXX=g++."
        )
    return None


def require() -> Compiler:
    """The CPU backend's compiler, or CannotGrade saying what is wrong and how to fix it."""
    c = current()
    why = problem(c)
    if why:
        raise CannotGrade(f"cannot build for the CPU backend: {why}")
    return c
