"""Run a built kernel in a child process, with a time limit and capped output.

The child (grader.worker) gets its request on stdin and answers on a pipe of its
own; its stdout/stderr (kernel printf, crash reports) go to a file whose tail we
read back, capped. Its environment is scrubbed of the grader's variables, so the
seed of the secret inputs is never visible to learner code. A crash, a CUDA
fault or a hang ends the child only; the caller gets what it sent before.

gpu_lock (batch --per-gpu K > 1): several children share one GPU, but each takes an
exclusive flock on the GPU's lock file before its first GPU operation and keeps it until
it exits, so their starts (python, torch, inputs) overlap while their kernels and timings
never do. The run time limit then counts from the moment the lock is held.
"""
from __future__ import annotations

import os
import secrets
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
    lock_wait_s: float | None = None  # seconds from start until the GPU lock was held

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
               extra_env: dict[str, str] | None = None, gpu_lock: str | None = None,
               lock_wait: float = 0.0) -> ChildRun:
    """Send the request and cases to a fresh worker; collect its messages until it exits.

    extra_env: added to the child's environment (the CPU backend's sanitizer preload).
    gpu_lock: a lock file shared by the children of one GPU (see above); lock_wait: how long
    the child may wait for it on top of `timeout` before it counts as hung."""
    result = ChildRun()
    token = secrets.token_hex(16)  # the worker tags its messages with it; the kernel's code cannot know it
    request = request | {"token": token} | ({"gpu_lock": gpu_lock} if gpu_lock else {})
    started = time.monotonic()
    lock_held = threading.Event()
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
                    if not isinstance(m[0], dict) or m[0].pop("token", None) != token:
                        result.protocol_error = ("a message on the result channel did not come from the grader's "
                                                 "worker (written by the submission?)")
                        break
                    if m[0].get("gpu_lock") == "held":
                        result.lock_wait_s = time.monotonic() - started
                        lock_held.set()
                    else:
                        result.messages.append(m)
            except Exception as e:  # noqa: BLE001 — malformed data of any kind: stop reading, say why
                result.protocol_error = f"{type(e).__name__}: {e}"
            finally:
                if result.protocol_error:
                    _kill(proc)  # nothing it sends after this can be trusted; do not let it block on the pipe

        threads = [threading.Thread(target=feed, daemon=True), threading.Thread(target=drain, daemon=True)]
        for t in threads:
            t.start()
        if not _wait(proc, timeout, lock_held if gpu_lock else None, lock_wait):
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


def _wait(proc: subprocess.Popen, timeout: float, lock_held: threading.Event | None, lock_wait: float) -> bool:
    """Wait for the child to exit; False when it ran out of time. Without a lock the limit is
    `timeout` from now; with one, `timeout` from when the lock was held (at most `lock_wait`
    extra seconds of waiting for it)."""
    deadline = time.monotonic() + timeout + (lock_wait if lock_held is not None else 0.0)
    while True:
        if lock_held is not None and lock_held.is_set():
            deadline, lock_held = time.monotonic() + timeout, None  # the run's own clock starts now
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            proc.wait(timeout=min(left, 0.1) if lock_held is not None else left)
            return True
        except subprocess.TimeoutExpired:
            continue


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole session: nvcc children, threads
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()
