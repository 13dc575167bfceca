"""Compiler runs that a timeout really stops.

g++ and nvcc are drivers: the work happens in children they fork (cc1plus, cicc, ptxas).
Killing only the driver leaves those running, holding the output pipe open, so a
`--compile-timeout 20` once took 244 s. Each command here starts in a session of its own,
and a timeout kills the whole process group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

# what one compile (nvcc, g++) may take; the source scan before it gets the same (grader.compile.forbidden)
COMPILE_TIMEOUT_S = float(os.environ.get("GRADER_COMPILE_TIMEOUT", "120"))


def run_all(
    cmds: list[list[str]], cwd: Path | str | None = None, timeout: float | None = None
) -> list[tuple[int, str]] | None:
    """Run the commands in parallel; [(returncode, stdout + stderr)], or None when they did not
    all finish within `timeout` seconds together (every process group is then killed)."""
    procs = [
        subprocess.Popen(
            c, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        for c in cmds
    ]
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        outs = [
            p.communicate(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))[0] for p in procs
        ]
    except subprocess.TimeoutExpired:
        for p in procs:
            kill_group(p)
        for p in procs:
            try:
                p.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        return None
    return [(p.returncode, out) for p, out in zip(procs, outs)]


def kill_group(p: subprocess.Popen) -> None:
    """SIGKILL the process group `p` leads (the driver and every compiler stage it started)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
