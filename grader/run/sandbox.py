"""Run a built kernel in a child process, with a time limit and capped output.

The child (grader.run.worker) gets its request on stdin and answers on a pipe of its
own; its stdout/stderr (kernel printf, crash reports) go to a file whose tail we
read back, capped. Its environment is scrubbed of the grader's variables, so the
seed of the secret inputs is never visible to learner code. A crash, a CUDA
fault or a hang ends the child only; the caller gets what it sent before.

How the child starts: forked from a warm template (grader.run.forkserver) when one runs,
else `python -m grader.run.worker`; inside bubblewrap where it works (grader.run.bwrap).
Either way it confines itself before loading the library (grader.run.seccomp), gets the
libraries as bytes after its request (it loads them from memory), the GPU lock as an open
descriptor and a private scratch directory (deleted afterwards), so it needs no view of
the cache or of anyone's files. It can be started before its library exists
(start_worker, then Worker.run): grader.judge.grade starts it while nvcc runs.

gpu_lock (batch --per-gpu K > 1): several children share one GPU, but each takes an
exclusive flock on the GPU's lock file before its first GPU operation and keeps it until
it exits, so their starts (python, torch, inputs) overlap while their kernels and timings
never do. The run time limit then counts from the moment the lock is held.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from grader.run import bwrap, protocol

RUN_TIMEOUT_S = float(os.environ.get("GRADER_RUN_TIMEOUT", "60"))
OUTPUT_CAP = 4000  # characters of the child's own output kept for the message


@dataclass
class ChildRun:
    messages: list[tuple[dict, dict[str, np.ndarray]]] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    output: str = ""  # tail of the child's stdout + stderr
    protocol_error: str = ""
    lock_wait_s: float | None = None  # seconds from start until the GPU lock was held
    arrivals: list[float] = field(default_factory=list)  # seconds from start to each of `messages`
    ended: float | None = None  # seconds from start until the run was over (its exit or its last message)

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


# what the worker's environment may hold: what Python, torch, the CUDA runtime and the sanitizers
# read. Anything else (tokens, keys, the grader's own GRADER_* settings) stays with the grader: a
# kernel could print it into the verdict's output.
ENV_KEEP = (
    "PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "LANG",
    "LANGUAGE",
    "TZ",
    "HOME",
    "USER",
    "TERM",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "PYTHONNOUSERSITE",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
)
ENV_KEEP_PREFIXES = (
    "LC_",
    "CUDA_",
    "NVIDIA_",
    "TORCH_",
    "PYTORCH_",
    "OMP_",
    "MKL_",
    "OPENBLAS_",
    "KMP_",
    "GOMP_",
    "ASAN_",
    "UBSAN_",
    "LSAN_",
    "TRITON_",
)


def _child_env(gpu: int | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GRADER_") and (k in ENV_KEEP or k.startswith(ENV_KEEP_PREFIXES))
    }
    if "GRADER_RUNNER_VIEW" in os.environ:  # the one setting the worker reads: its runner's view (runner/client.py)
        env["GRADER_RUNNER_VIEW"] = os.environ["GRADER_RUNNER_VIEW"]
    if gpu is not None:  # batch: one worker per GPU
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = visible.split(",") if visible else None
        env["CUDA_VISIBLE_DEVICES"] = ids[gpu] if ids and gpu < len(ids) else str(gpu)
    env["PYTHONUNBUFFERED"] = "1"
    # the worker imports the grader package from where this one lives
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


# ---------------------------------------------------------------------------- starting the worker
_HIDE: list[str] = []  # more folders the sandbox hides (batch: the submissions, the gradebook's folder)
_TEMPLATE: dict = {}  # the running template: {"key": ..., "client": forkserver.Client}, or {"off": why}
_TEMPLATE_LOCK = threading.Lock()
# The template dies with its parent (PR_SET_PDEATHSIG, bwrap --die-with-parent), and to Linux the parent
# is the thread that started it: so it is started from this one thread, which lives as long as the
# process, never from the caller's (a notebook's warm-up thread, the profile's thread beside a GPU run).
_STARTER = ThreadPoolExecutor(1, thread_name_prefix="grader-template")


def hide(*paths) -> None:
    """Hide these folders from every worker from now on (the template restarts to apply it)."""
    for p in paths:
        r = os.path.realpath(p)
        if r not in _HIDE:
            _HIDE.append(r)


def _use_template() -> bool:
    return os.environ.get("GRADER_FORKSERVER", "1").strip().lower() not in ("0", "no", "off", "false")


def launcher_name() -> str:
    """How the next worker would start: 'template' or 'subprocess', '+ bwrap' when sandboxed."""
    how = "template" if _use_template() and "off" not in _TEMPLATE else "subprocess"
    if "why" in _TEMPLATE:
        how += f" (the template failed: {_TEMPLATE['why'][:80]})"
    return how + (" + bwrap" if bwrap.active() else "")


def _template(env: dict[str, str]):
    """The warm template for this sandbox policy, started on first use; None when unavailable."""
    from grader.run import forkserver

    prefix = bwrap.command(_HIDE) if bwrap.active() else []
    # the child gets its own environment; CUDA_VISIBLE_DEVICES (batch: one per GPU) is read only
    # when CUDA starts, in the child, so one template serves every GPU
    key = (sys.executable, tuple(prefix), tuple(sorted((k, v) for k, v in env.items() if k != "CUDA_VISIBLE_DEVICES")))
    with _TEMPLATE_LOCK:
        if _TEMPLATE.get("off") == key:  # it failed to start like this before: not again
            return None
        client = _TEMPLATE.get("client")
        if client is not None and _TEMPLATE.get("key") == key and client.alive():
            return client
        if client is not None:
            client.retire()  # another policy from now on; verdicts running in the old template finish there
        try:
            client = _STARTER.submit(forkserver.Client, prefix, env).result()
        except forkserver.TemplateError as e:
            _TEMPLATE.clear()
            _TEMPLATE.update(off=key, why=str(e))  # fall back to a subprocess per verdict
            return None
        _TEMPLATE.update(key=key, client=client)
        return client


def warm() -> None:
    """Start the template in the background now (a notebook's setup cell), so that even the first
    verdict skips the worker's start. Does nothing when the template is off."""
    if _use_template():
        threading.Thread(target=lambda: _template(_child_env()), daemon=True).start()


def shutdown() -> None:
    """Stop the template (it also dies with this process)."""
    with _TEMPLATE_LOCK:
        client = _TEMPLATE.pop("client", None)
        _TEMPLATE.pop("key", None)
        if client is not None:
            client.close()


class _Subprocess:
    """A worker started as `[bwrap ...] python -m grader.run.worker`: the fallback, and any run whose
    environment must apply from exec on (extra_env: the sanitizer's LD_PRELOAD)."""

    def __init__(self, env: dict[str, str], fds: list[int], sandboxed: bool):
        stdin_fd, log_fd, result_fd, scratch_fd, *extras = fds  # extras: the GPU lock, if any
        self.sandboxed = sandboxed
        prefix = bwrap.command(_HIDE) if sandboxed else []
        if prefix and "LD_PRELOAD" in env:  # the sanitizer's runtime is for the worker, not for bwrap
            env = dict(env)
            prefix[-1:] = ["--setenv", "LD_PRELOAD", env.pop("LD_PRELOAD"), "--"]
        # in bwrap's PID namespace the parent is its init, and --die-with-parent does the rest
        parent = "0" if sandboxed else str(os.getpid())
        self.proc = subprocess.Popen(
            prefix + [sys.executable, "-m", "grader.run.worker", parent, str(scratch_fd), str(result_fd)],
            stdin=stdin_fd,
            stdout=log_fd,
            stderr=subprocess.STDOUT,
            pass_fds=(result_fd, scratch_fd, *extras),
            env=env,
            start_new_session=True,
        )
        self.pid = self.proc.pid
        self.result_fd, self.scratch_fd = result_fd, scratch_fd

    def wait(self, timeout: float | None = None) -> int:
        return self.proc.wait(timeout=timeout)  # raises subprocess.TimeoutExpired

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the whole session: nvcc children, threads (or bwrap)
        except (ProcessLookupError, PermissionError):
            self.proc.kill()
        self.proc.wait()

    @property
    def returncode(self) -> int | None:
        rc = self.proc.returncode
        if self.sandboxed and rc is not None and rc > 128:
            return -(rc - 128)  # bwrap reports a child killed by signal S as 128 + S
        return rc

    lost = False


def _start(env: dict[str, str], fds: list[int], exec_env: bool):
    """Start a worker; returns (child, fd numbers as the child sees them: result, scratch, extras...)."""
    sandboxed = bwrap.active()
    if _use_template() and not exec_env:
        client = _template(env)
        if client is not None:
            from grader.run import forkserver

            try:
                child = client.spawn(env, fds)
                return child, forkserver.child_layout(len(fds) - 4)
            except forkserver.TemplateError:
                pass  # it died: this verdict starts the plain way, the next restarts the template
    child = _Subprocess(env, fds, sandboxed)
    return child, [fds[2], fds[3], *fds[4:]]


def protect_grader() -> None:
    """Make this grading process non-dumpable, outside a notebook: another process of the same
    user (a worker, where no PID namespace hides us) cannot then open its memory through /proc.
    A notebook's kernel is left as it is (its owner grades their own code and may want a debugger)."""
    if "ipykernel" in sys.modules:
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    except (OSError, AttributeError):
        pass


def run_worker(
    request: dict,
    cases: list[tuple[dict, dict[str, np.ndarray]]],
    timeout: float = RUN_TIMEOUT_S,
    gpu: int | None = None,
    extra_env: dict[str, str] | None = None,
    gpu_lock: str | None = None,
    lock_wait: float = 0.0,
) -> ChildRun:
    """Send the request and cases to a fresh worker; collect its messages until it exits.

    extra_env: added to the child's environment (the CPU backend's sanitizer preload).
    gpu_lock: a lock file shared by the children of one GPU (see above); lock_wait: how long
    the child may wait for it on top of `timeout` before it counts as hung."""
    return start_worker(gpu=gpu, extra_env=extra_env, gpu_lock=gpu_lock).run(request, cases, timeout, lock_wait)


def start_worker(
    gpu: int | None = None,
    extra_env: dict[str, str] | None = None,
    gpu_lock: str | None = None,
    warm: dict | None = None,
) -> "Worker":
    """A fresh worker, started now and fed later (Worker.run). grader.judge.grade starts it while the
    compiler runs: with `warm` ({"backend": "cuda", "timed": True}) it brings up its CUDA context,
    cuBLAS and the grader's own GPU kernels meanwhile (grader.run.worker.warm_up), before any
    submission's code is in it. Its libraries reach it with the request, as bytes it loads from
    memory, so it needs no view of the cache, other submissions or /tmp (grader.run.bwrap)."""
    bwrap.require()
    protect_grader()
    env = _child_env(gpu) | (extra_env or {})
    scratch = tempfile.mkdtemp(prefix="grader-worker-")
    opened: list[int] = []
    try:
        stdin_r, stdin_w = os.pipe()
        r_fd, w_fd = os.pipe()
        opened += [stdin_r, w_fd, stdin_w, r_fd]
        log = tempfile.TemporaryFile()
        opened.append(os.open(scratch, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        if gpu_lock:
            opened.append(os.open(gpu_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
        child, layout = _start(env, [stdin_r, log.fileno(), w_fd, *opened[4:]], bool(extra_env))
    except BaseException:
        for fd in opened:
            os.close(fd)
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    for fd in [stdin_r, w_fd, *opened[4:]]:
        os.close(fd)
    worker = Worker(child, stdin_w, r_fd, log, scratch, f"/proc/self/fd/{layout[2]}" if gpu_lock else None)
    if warm:
        try:
            protocol.send(stdin_w, *warm_message(warm))  # the worker reads it first thing
        except OSError:
            pass  # it died already: run() reports how
    return worker


def warm_message(warm: dict) -> tuple[dict, dict | None]:
    """The worker's first message: what to warm up, and the native runner's bytes if it is to start it at once
    (its CUDA context comes up while the compiler runs)."""
    if not warm.get("runner"):
        return {"warm": warm}, None
    return {"warm": warm | {"runner": True}}, {"runner": np.fromfile(warm["runner"], dtype=np.uint8)}


def with_files(request: dict) -> list[tuple[tuple[str, ...], str]]:
    """Name in `request` the native runner and every library the worker loads, which reach it as bytes after the
    request (it has no view of the files): edits request, returns [(where in the request, path)]."""
    if request.get("lib") and not request.get("runner"):  # the native program the submission runs in
        from grader.run.runner.build import runner_binary

        request["runner"] = str(runner_binary(request.get("backend", "cpu")))
    # every library the worker loads, as (where in the request, path): sent as bytes after the request
    files = [((k,), request[k]) for k in ("lib", "baseline_lib", "runner") if request.get(k)]
    files += [
        (("timing", k), request["timing"][k])
        for k in ("lib", "baseline_lib")
        if isinstance(request.get("timing"), dict) and request["timing"].get(k)
    ]
    for (*outer, key), path in files:
        if not outer and key.endswith("lib"):  # the build key (the library's folder)
            request[key.replace("lib", "key")] = os.path.basename(os.path.dirname(path))
    request["files"] = [list(where) for where, _ in files]
    return files


def file_blobs(files: list[tuple[tuple[str, ...], str]]) -> list[tuple[dict, dict]]:
    """The messages that carry with_files' files, in its order."""
    return [({"file": list(where)}, {"bytes": np.fromfile(path, dtype=np.uint8)}) for where, path in files]


class Worker:
    """A started worker that has not had its request yet (start_worker); run() once, or close()."""

    def __init__(self, child, stdin_w: int, r_fd: int, log, scratch: str, lock_path: str | None):
        self.child, self.stdin_w, self.r_fd, self.log, self.scratch = child, stdin_w, r_fd, log, scratch
        self.lock_path = lock_path
        self.used = False

    def run(
        self,
        request: dict,
        cases: list[tuple[dict, dict[str, np.ndarray]]],
        timeout: float = RUN_TIMEOUT_S,
        lock_wait: float = 0.0,
    ) -> ChildRun:
        """Send the request, the libraries it names and the cases; collect the messages until the
        worker exits. The time limit counts from now (or from when the GPU lock was held)."""
        assert not self.used, "a worker runs one request"
        self.used = True
        result = ChildRun()
        token = secrets.token_hex(16)  # the worker tags its messages with it; the kernel's code cannot know it
        request = request | {"token": token}
        if isinstance(request.get("timing"), dict):
            request["timing"] = dict(request["timing"])
        files = with_files(request)
        if self.lock_path:
            request["gpu_lock"] = self.lock_path
        lock_held = threading.Event() if self.lock_path else None
        try:
            blobs = file_blobs(files)
        except BaseException:  # a library that cannot be read: the worker must not wait for it forever
            self._end()
            raise
        try:
            _collect(
                self.child,
                result,
                request,
                blobs + list(cases),
                self.stdin_w,
                self.r_fd,
                self.log,
                token,
                timeout,
                lock_held,
                lock_wait,
                time.monotonic(),
            )
        finally:
            self.stdin_w = self.r_fd = -1  # _collect closed them
            shutil.rmtree(self.scratch, ignore_errors=True)
        if getattr(self.child, "lost", False):
            from grader.errors import CannotGrade

            raise CannotGrade(
                "the grader's worker template stopped during this run (not the kernel's doing: the "
                "template is out of its reach); grade again"
            )
        return result

    def close(self) -> None:
        """End it unused (the build failed): kill, close, delete its scratch directory."""
        if self.used:
            return
        self.used = True
        self._end()

    def _end(self) -> None:
        try:
            self.child.kill()
        except Exception:  # noqa: BLE001 - it may be gone already
            pass
        for fd in (self.stdin_w, self.r_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


def _collect(
    child,
    result: ChildRun,
    request: dict,
    cases,
    stdin_w: int,
    r_fd: int,
    log,
    token: str,
    timeout: float,
    lock_held: threading.Event | None,
    lock_wait: float,
    started: float,
) -> None:
    """Feed the child, read its messages, enforce the time limit, keep its output's tail."""

    def feed():
        try:
            protocol.send(stdin_w, request)
            for meta, arrays in cases:
                protocol.send(stdin_w, meta, arrays)
        except OSError:
            pass  # the child died early; its exit status tells why
        finally:
            try:
                os.close(stdin_w)
            except OSError:
                pass

    def drain():
        try:
            while (m := protocol.recv(r_fd)) is not None:
                if not isinstance(m[0], dict) or m[0].pop("token", None) != token:
                    result.protocol_error = (
                        "a message on the result channel did not come from the grader's "
                        "worker (written by the submission?)"
                    )
                    break
                if m[0].get("done"):
                    finished.set()
                    break
                if m[0].get("gpu_lock") == "held":
                    result.lock_wait_s = time.monotonic() - started
                    if lock_held is not None:
                        lock_held.set()
                else:
                    result.messages.append(m)
                    result.arrivals.append(time.monotonic() - started)
        except Exception as e:  # noqa: BLE001 — malformed data of any kind: stop reading, say why
            result.protocol_error = f"{type(e).__name__}: {e}"
        finally:
            if result.protocol_error:
                child.kill()  # nothing it sends after this can be trusted; do not let it block on the pipe

    finished = threading.Event()  # the worker's last message came: every result is in
    with log:
        threads = [threading.Thread(target=feed, daemon=True), threading.Thread(target=drain, daemon=True)]
        for t in threads:
            t.start()
        if not _wait(child, timeout, lock_held, lock_wait, finished):
            result.timed_out = True
            child.kill()
        threads[1].join(timeout=5)
        os.close(r_fd)
        result.ended = time.monotonic() - started
        result.returncode = child.returncode
        if result.returncode is None and finished.is_set():
            # it is still tearing down (the runner's and its own CUDA context: about 0.1 s on a GPU);
            # nothing it does now reaches the verdict, so it ends in the background
            result.returncode = 0
            threading.Thread(target=_reap, args=(child,), daemon=True).start()
        log.seek(0, os.SEEK_END)
        size = log.tell()
        log.seek(max(0, size - OUTPUT_CAP))
        tail = log.read().decode(errors="replace")
        result.output = ("...\n" if size > OUTPUT_CAP else "") + tail


def _wait(proc, timeout: float, lock_held: threading.Event | None, lock_wait: float, finished: threading.Event) -> bool:
    """Wait for the child to exit or to send its last message (`finished`); False when it ran out of
    time. Without a lock the limit is `timeout` from now; with one, `timeout` from when the lock was
    held (at most `lock_wait` extra seconds of waiting for it)."""
    deadline = time.monotonic() + timeout + (lock_wait if lock_held is not None else 0.0)
    while not finished.is_set():
        if lock_held is not None and lock_held.is_set():
            deadline, lock_held = time.monotonic() + timeout, None  # the run's own clock starts now
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            proc.wait(timeout=min(left, 0.01))
            return True
        except subprocess.TimeoutExpired:
            continue
    return True


def _reap(child, grace: float = 30.0) -> None:
    """Wait for a worker that sent its last message to exit; kill it if it does not within `grace`."""
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        child.kill()
