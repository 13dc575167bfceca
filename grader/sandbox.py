"""Run a built kernel in a child process, with a time limit and capped output.

The child (grader.worker) gets its request on stdin and answers on a pipe of its
own; its stdout/stderr (kernel printf, crash reports) go to a file whose tail we
read back, capped. Its environment is scrubbed of the grader's variables, so the
seed of the secret inputs is never visible to learner code. A crash, a CUDA
fault or a hang ends the child only; the caller gets what it sent before.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from . import protocol

RUN_TIMEOUT_S = float(os.environ.get("GRADER_RUN_TIMEOUT", "60"))
OUTPUT_CAP = 4000  # characters of the child's own output kept for the message


@dataclass
class ChildRun:
    messages: list[tuple[dict, dict[str, np.ndarray]]] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    output: str = ""          # tail of the child's stdout + stderr
    protocol_error: str = ""

    @property
    def crashed(self) -> bool:
        return not self.timed_out and self.returncode not in (0, None)

    def describe_exit(self) -> str:
        if self.timed_out:
            return "timed out"
        rc = self.returncode
        if rc is not None and rc < 0:
            try:
                return f"crashed ({signal.Signals(-rc).name})"
            except ValueError:
                return f"crashed (signal {-rc})"
        return f"exited with code {rc}"


def _child_env(gpu: int | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    if gpu is not None:  # batch: one worker per GPU
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = visible.split(",") if visible else None
        env["CUDA_VISIBLE_DEVICES"] = ids[gpu] if ids and gpu < len(ids) else str(gpu)
    env["PYTHONUNBUFFERED"] = "1"
    # the worker imports the grader package from where this one lives
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_worker(request: dict, cases: list[tuple[dict, dict[str, np.ndarray]]],
               timeout: float = RUN_TIMEOUT_S, gpu: int | None = None,
               extra_env: dict[str, str] | None = None) -> ChildRun:
    """Send the request and cases to a fresh worker; collect its messages until it exits.

    extra_env: added to the child's environment (the CPU backend's sanitizer preload)."""
    result = ChildRun()
    r_fd, w_fd = os.pipe()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, "-m", "grader.worker", str(w_fd)],
                                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                pass_fds=(w_fd,), env=_child_env(gpu) | (extra_env or {}),
                                start_new_session=True)
        os.close(w_fd)

        def feed():
            try:
                fd = proc.stdin.fileno()
                protocol.send(fd, request)
                for meta, arrays in cases:
                    protocol.send(fd, meta, arrays)
            except OSError:
                pass  # the child died early; its exit status tells why
            finally:
                try:
                    proc.stdin.close()
                except OSError:
                    pass

        def drain():
            try:
                while (m := protocol.recv(r_fd)) is not None:
                    result.messages.append(m)
            except (ValueError, OSError) as e:
                result.protocol_error = str(e)

        threads = [threading.Thread(target=feed, daemon=True), threading.Thread(target=drain, daemon=True)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + timeout
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            result.timed_out = True
            _kill(proc)
        threads[1].join(timeout=5)
        os.close(r_fd)
        result.returncode = proc.returncode
        log.seek(0, os.SEEK_END)
        size = log.tell()
        log.seek(max(0, size - OUTPUT_CAP))
        tail = log.read().decode(errors="replace")
        result.output = ("...\n" if size > OUTPUT_CAP else "") + tail
    return result


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole session: nvcc children, threads
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()
