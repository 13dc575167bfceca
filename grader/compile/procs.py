"""Compiler runs that a timeout really stops.

g++ and nvcc are drivers: the work happens in children they fork (cc1plus, cicc, ptxas).
Killing only the driver leaves those running, holding the output pipe open, so a
`--compile-timeout 20` once took 244 s. Each command here starts in a session of its own,
and a timeout kills the whole process group.

Memory is bounded too: 22 chained #defines that each use the one before twice took 4 GB in
cc1plus in 20 s, and a few more would take the machine's. Every command runs under an address-space
limit (RLIMIT_AS, inherited by the stages it forks), and a compiler that runs out of it is
reported as the file's fault (CompileError), not as a failed build of the grader.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from ..errors import CompileError

# what one compile (nvcc, g++) may take; the source scan before it gets the same (grader.compile.forbidden)
COMPILE_TIMEOUT_S = float(os.environ.get("GRADER_COMPILE_TIMEOUT", "120"))
# and the address space each compiler process may take: kernels/05 peaks at about 235 MiB (g++) and
# 191 MiB (nvcc -cubin); a file that needs ten times that is not a kernel file
COMPILE_MEMORY_MB = int(os.environ.get("GRADER_COMPILE_MEMORY_MB", "2048"))

# how each compiler says it ran out of memory (cc1plus, ld, cicc/ptxas, a C++ driver's std::bad_alloc, python)
_OUT_OF_MEMORY = re.compile(
    r"(?m)^.*(virtual memory exhausted|out of memory|cannot allocate memory|std::bad_alloc|MemoryError)", re.I
)
# the limit is set by a shell that then becomes the command (exec): no wrapper process stays behind
_LIMITED = 'ulimit -v "$0" 2>/dev/null; exec "$@"'


def run_all(
    cmds: list[list[str]],
    cwd: Path | str | None = None,
    timeout: float | None = None,
    memory_mb: int | None = None,
) -> list[tuple[int, str]] | None:
    """Run the commands in parallel; [(returncode, stdout + stderr)], or None when they did not
    all finish within `timeout` seconds together (every process group is then killed). Each may
    take `memory_mb` MiB of address space (default COMPILE_MEMORY_MB); one that fails for want of
    it raises CompileError."""
    limit_kb = str((memory_mb or COMPILE_MEMORY_MB) * 1024)
    procs = [
        subprocess.Popen(
            ["/bin/sh", "-c", _LIMITED, limit_kb, *c],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
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
    for c, p, out in zip(cmds, procs, outs):
        if p.returncode and _OUT_OF_MEMORY.search(out):
            raise CompileError(
                f"{Path(c[0]).name} ran out of memory: compiling this file takes more than "
                f"{memory_mb or COMPILE_MEMORY_MB} MiB (a kernel file needs a few hundred; look for macros that "
                "expand to huge text). GRADER_COMPILE_MEMORY_MB sets the limit.",
                out,
            )
    return [(p.returncode, out) for p, out in zip(procs, outs)]


def kill_group(p: subprocess.Popen) -> None:
    """SIGKILL the process group `p` leads (the driver and every compiler stage it started)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
