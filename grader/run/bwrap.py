"""The worker's sandbox, where bubblewrap is installed (`apt-get install bubblewrap`).

    args = bwrap.command(hide=[...])   # ['bwrap', ..., '--'] or None when no sandbox can be made

Inside it the worker (or grader.run.forkserver's template, whose children inherit it) has:
  - no network (its own, empty network namespace), and its own PID, IPC and UTS namespaces:
    the grader, other students' workers and every other process are invisible and unsignalable;
  - a read-only view of the file system, with empty read-only tmpfs over the places that hold
    secrets or other people's work: $HOME, /root, /home, /tmp, /var/tmp, /run, /mnt, /media, /srv,
    the grader's cache (every student's built library), the course repository (solutions,
    kernels; only its grader/ package is bound back), the current directory and whatever the
    caller adds (batch: the submissions folder and the gradebook's folder). The Python
    installation in use is bound back read-only wherever it lives.
  - a fresh /dev with only the basics (null, zero, random, ...) and the GPU's nodes
    (/dev/nvidia*, /dev/nvidia-uvm*, /dev/nvidiactl, /dev/nvidia-caps); /dev/shm read-only;
  - no capabilities; it dies with the process that started it; a uid other than 0 inside (SANDBOX_UID when
    the grader runs as root), so that the native runner can make a user namespace and a file-system view
    of its own (grader/run/runner/runner.cpp: libc, the CUDA driver, no Python, no torch, no cuBLAS).
Its only writable place is the private scratch directory grader.run.sandbox passes it as an open
descriptor (its working directory), and the library it grades arrives as bytes with its request
(loaded from memory), so nothing of another submission is on its file system.

GRADER_SANDBOX (read by the grader, never seen by the worker): auto (default: bubblewrap when it
works here), bwrap (required: grading stops with a clear message without it), none.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent  # the course repository
PACKAGE = Path(__file__).resolve().parent.parent  # grader/: the only part of it the worker sees
HIDDEN = ("/tmp", "/var/tmp", "/run", "/root", "/home", "/mnt", "/media", "/srv")
GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset", "/dev/nvidia-caps")
INSTALL = "apt-get install bubblewrap"
SANDBOX_UID = 1000  # the worker's uid inside the sandbox when the grader runs as root (any but 0: _as_user)


def mode() -> str:
    """GRADER_SANDBOX: auto, bwrap or none."""
    m = os.environ.get("GRADER_SANDBOX", "auto").strip().lower() or "auto"
    return m if m in ("auto", "bwrap", "none") else "auto"


def executable() -> str | None:
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=None)
def probe() -> str:
    """'' when bwrap can build our sandbox on this machine, else why not (not installed; user
    namespaces forbidden, as in some containers and on Ubuntu 24.04 without an AppArmor profile)."""
    exe = executable()
    if not exe:
        return f"bubblewrap is not installed ({INSTALL})"
    try:
        p = subprocess.run(command([]) + ["true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bwrap did not run: {e}"
    if p.returncode != 0:
        return f"bwrap cannot create namespaces here: {(p.stderr or p.stdout).strip()[:200]}"
    return ""


def active() -> bool:
    """Will the worker run inside bwrap? (GRADER_SANDBOX=bwrap without a working bwrap: see require())."""
    return mode() != "none" and not probe()


def require() -> None:
    """GRADER_SANDBOX=bwrap and no working bwrap: stop (CannotGrade) rather than grade unsandboxed."""
    if mode() == "bwrap" and probe():
        from grader.errors import CannotGrade

        raise CannotGrade(f"GRADER_SANDBOX=bwrap, but {probe()}")


def _real(p: str | os.PathLike) -> str | None:
    try:
        return os.path.realpath(p)
    except (OSError, ValueError):
        return None


def keep_paths() -> list[str]:
    """What the worker needs to read: the Python installation and its packages, and grader/.
    Only installation folders of sys.path (site-packages and the prefixes' own), never a
    script's or the notebook's folder."""
    prefixes = {r for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if (r := _real(p)) and r != "/"}
    keep = {str(PACKAGE), *prefixes, os.path.dirname(os.path.realpath(sys.executable))}
    for p in sys.path:
        r = _real(p) if p else None
        if not r or not os.path.exists(r) or r in HIDDEN:
            continue
        installed = any(r.startswith(x + os.sep) for x in prefixes) or "-packages" in r
        if installed and not str(ROOT).startswith(r + os.sep) and r != str(ROOT):
            keep.add(r)
    return sorted(k for k in keep if k not in ("/", "/usr", "/usr/bin") or k == str(PACKAGE))


def hide_paths(extra: list[str] | tuple = ()) -> list[str]:
    from grader.compile.toolchain import cache_dir

    hide = set(HIDDEN) | {str(ROOT)}
    for p in (os.environ.get("HOME"), str(cache_dir()), os.getcwd(), *extra):
        r = _real(p) if p else None
        if r and r != "/":
            hide.add(r)
    return sorted(h for h in hide if os.path.isdir(h))


def command(hide: list[str] | tuple = ()) -> list[str]:
    """bwrap's arguments up to and including '--' (the command to run follows)."""
    args = [
        executable() or "bwrap",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        *_as_user(),
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    for node in sorted(set(glob.glob("/dev/nvidia[0-9]*")) | {n for n in GPU_NODES if os.path.exists(n)}):
        args += ["--dev-bind", node, node]
    keep = keep_paths()
    hidden = [h for h in hide_paths(hide) if h not in keep]
    # shallow first, so that a path kept inside a hidden folder is bound on top of the tmpfs (and
    # a folder hidden inside a kept one, e.g. a cache inside the virtualenv, on top of that bind)
    mounts = sorted(
        [(h, "hide") for h in hidden] + [(k, "keep") for k in keep], key=lambda m: (m[0].rstrip("/").count("/"), m[0])
    )
    for path, kind in mounts:
        args += ["--tmpfs", path] if kind == "hide" else ["--ro-bind", path, path]
    args += ["--tmpfs", "/dev/shm"]
    for path in [*hidden, "/dev/shm"]:
        args += ["--remount-ro", path]
    return args + ["--chdir", "/", "--"]


def _as_user() -> list[str]:
    """Run as root, the grader's worker is root in its namespace too, and a process that is root there without
    capabilities may not map uid 0 into a user namespace of its own (Linux 5.12+ wants CAP_SETFCAP): the runner
    could not make its file-system view (grader/run/runner/runner.cpp). As SANDBOX_UID it can; outside, it is
    still this uid, so it reads and writes what it did."""
    if os.geteuid() != 0:
        return []
    return ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]


def describe() -> str:
    """One line for `python -m grader doctor`."""
    if mode() == "none":
        return "off (GRADER_SANDBOX=none)"
    why = probe()
    return (
        f"not active: {why}"
        if why
        else "bubblewrap: no network, read-only file system, own PID namespace, GPU nodes only"
    )
