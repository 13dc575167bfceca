"""A warm template for the worker: one fresh process per verdict, without paying for its start.

Starting `python -m grader.run.worker` costs Python, numpy and torch (1-7 s, most of a
`grader.check` after an edit). The template pays that once: it imports them and the worker
module, never touches CUDA and never loads a submission's library, and forks a fresh child
for every verdict. The child is then exactly the worker of the plain path, started from
the same code: it moves to a session of its own, gets its descriptors and environment from
the grader, dies with the template, and confines itself (grader.run.worker.limit_self: rlimits,
seccomp, no capabilities) before it loads the library. Nothing flows back from a child to
the template, so nothing leaks from one verdict to the next; the child's pid, exit status
and a kill on time-out go through the template (which may live in another PID namespace).

Where bubblewrap is used (grader.run.bwrap), the template itself runs inside the sandbox, so its
children inherit it: same read-only view, no network, the grader invisible. The trade-off:
the children of one template share its namespaces. They can see each other's pids (not
signal, trace or read them: seccomp, non-dumpable, no capabilities), and the sandbox's view
is fixed when the template starts (grader.run.sandbox restarts it when what must be hidden
changes). Each child still gets its own scratch directory, and its library as bytes after its
request (grader.run.sandbox.Worker.run), so nothing of another submission is on its file system, and the sandbox has no
other writable place. GRADER_FORKSERVER=0 turns the template off (one `python -m
grader.run.worker` per verdict, each in a sandbox of its own); any failure of the template falls
back to that path.

    python -m grader.run.forkserver CONTROL_FD     (started by grader.run.sandbox.ForkServer)

Control messages (JSON over a SOCK_SEQPACKET socket, descriptors as SCM_RIGHTS):
  grader -> template  {"op": "spawn", "id", "env"} + fds (stdin, log, result, scratch, extras...),
                      {"op": "kill", "id"}
  template -> grader  {"ready", "pid"}, {"id", "pid"}, {"id", "error"}, {"id", "exit"}
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback

MAX_FDS = 16
# where a child finds what it was sent (grader.run.sandbox builds the request with these numbers)
STDIN_FD, LOG_FD, RESULT_FD, SCRATCH_FD, FIRST_EXTRA_FD = 0, 1, 3, 4, 5


START_TIMEOUT_S = 180.0  # importing torch on a loaded machine


class TemplateError(Exception):
    """The template could not start, or stopped: the caller falls back to a plain worker."""


def _send(sock: socket.socket, msg: dict, fds: list[int] = ()) -> None:
    data = json.dumps(msg).encode()
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


class Child:
    """A worker forked by the template, as sandbox.run_worker sees it (like subprocess.Popen)."""

    def __init__(self, client: "Client", rid: int):
        self.client, self.id = client, rid
        self.pid: int | None = None
        self.returncode: int | None = None
        self.lost = False  # the template died before this child's exit was reported
        self.started = threading.Event()
        self.exited = threading.Event()
        self.error = ""

    def wait(self, timeout: float | None = None) -> int | None:
        if not self.exited.wait(timeout):
            raise subprocess.TimeoutExpired("grader.run.worker", timeout)
        return self.returncode

    def kill(self) -> None:
        self.client.kill(self)
        if not self.exited.wait(30):
            self.lost = True  # it did not answer: the template is stuck; stop it (its children die with it)
            self.client.close()


class Client:
    """The grader's end: starts the template (inside `prefix`, bwrap's arguments, if any) and
    asks it for children. Thread-safe: batch grades several submissions at once."""

    def __init__(self, prefix: list[str], env: dict[str, str]):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self.log = tempfile.TemporaryFile()
        # one BLAS thread: the template forks, and a fork copies no thread but the caller
        tenv = env | {"OPENBLAS_NUM_THREADS": "1"}
        try:
            self.proc = subprocess.Popen(
                prefix + [sys.executable, "-m", "grader.run.forkserver", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                env=tenv,
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as e:
            raise TemplateError(f"could not start the template: {e}") from None
        finally:
            theirs.close()
        self.lock = threading.Lock()
        self.children: dict[int, Child] = {}
        self.next_id = 0
        self.dead = False
        self.retiring = False  # retire(): no new children, stop when the last one exits
        self.sock.settimeout(START_TIMEOUT_S)
        try:
            data = self.sock.recv(1 << 16)
            hello = json.loads(data) if data else {}
        except (OSError, ValueError):
            hello = {}
        if not hello.get("ready"):
            self.close()
            raise TemplateError(f"the template did not start: {hello.get('error') or self._log_tail()}")
        self.sock.settimeout(None)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _log_tail(self) -> str:
        try:
            self.log.seek(0)
            return self.log.read().decode(errors="replace")[-500:].strip() or "no output"
        except (OSError, ValueError):
            return "no output"

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def spawn(self, env: dict[str, str], fds: list[int]) -> Child:
        with self.lock:
            if self.dead or self.retiring:
                raise TemplateError("the template has stopped")
            rid = self.next_id
            self.next_id += 1
            child = self.children[rid] = Child(self, rid)
            try:
                _send(self.sock, {"op": "spawn", "id": rid, "env": env}, fds)
            except OSError as e:
                self.children.pop(rid, None)
                raise TemplateError(f"the template is gone: {e}") from None
        if not child.started.wait(30) or child.error:
            with self.lock:
                self.children.pop(rid, None)
            raise TemplateError(child.error or "the template did not fork within 30 s")
        return child

    def kill(self, child: Child) -> None:
        with self.lock:
            try:
                _send(self.sock, {"op": "kill", "id": child.id})
            except OSError:
                pass

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                break
            msg = json.loads(data)
            with self.lock:
                child = self.children.get(msg.get("id"))
            if child is None:
                continue
            if "pid" in msg:
                child.pid = msg["pid"]
                child.started.set()
            elif "error" in msg:
                child.error = msg["error"]
                child.started.set()
            elif "exit" in msg:
                child.returncode = msg["exit"]
                with self.lock:
                    self.children.pop(child.id, None)
                    last = self.retiring and not self.children
                child.exited.set()
                if last:
                    self.close()
        with self.lock:  # the template is gone: so are its children (PR_SET_PDEATHSIG)
            self.dead = True
            for child in self.children.values():
                child.lost = True
                child.error = child.error or "the template stopped"
                child.started.set()
                child.exited.set()
            self.children.clear()

    def retire(self) -> None:
        """Take no new children; stop the template once the ones still running have exited (a change of
        sandbox policy mid-batch must not cost a verdict in flight)."""
        with self.lock:
            self.retiring = True
            idle = not self.children
        if idle:
            self.close()

    def close(self) -> None:
        """Stop the template and with it any child still running."""
        self.dead = True
        try:
            os.killpg(self.proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


def child_layout(n_extra: int) -> list[int]:
    """The numbers a child's descriptors get: result pipe, scratch directory, then the extras
    (the GPU lock) in the order they were sent."""
    return [RESULT_FD, SCRATCH_FD] + [FIRST_EXTRA_FD + i for i in range(n_extra)]


def _child(fds: list[int], env: dict, template_pid: int) -> int:
    """In the forked child: become the worker. Never returns to the template's loop."""
    os.setsid()  # its own session and group: a time-out kills its whole group, not the template
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: dies with the template
    if os.getppid() != template_pid:
        return 5
    import fcntl

    extras = fds[4:]  # the GPU lock, if any
    # move everything to its fixed place (copies above all targets first, so none is overwritten)
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64) for fd in fds]
    layout = [STDIN_FD, LOG_FD, RESULT_FD, SCRATCH_FD] + [FIRST_EXTRA_FD + i for i in range(len(extras))]
    for src, dst in zip(high, layout):
        os.dup2(src, dst, inheritable=False)
    os.dup2(LOG_FD, 2, inheritable=False)
    # the rest goes, the control socket above all: a kernel must never talk to the template
    os.closerange(FIRST_EXTRA_FD + len(extras), 1 << 16)
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(env)
    from grader.run import worker

    return worker.main(["worker", "0", str(SCRATCH_FD), str(RESULT_FD)])


def serve(sock: socket.socket) -> int:
    children: dict[int, int] = {}  # pid -> request id
    me = os.getpid()
    _send(sock, {"ready": True, "pid": me})
    while True:
        ready, _, _ = select.select([sock], [], [], 0.02)
        while children:  # reap: report every exit
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            rid = children.pop(pid, None)
            if rid is not None:
                _send(sock, {"id": rid, "exit": os.waitstatus_to_exitcode(status)})
        if not ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, MAX_FDS)
        except OSError:
            return 0
        if not data:
            return 0  # the grader is gone: so are we (and, by PDEATHSIG, our children)
        msg = json.loads(data)
        if msg.get("op") == "kill":
            pid = next((p for p, r in children.items() if r == msg["id"]), None)
            if pid is not None:
                # the child first, then its group: a child killed right after the fork may not have
                # called setsid() yet, and then there is no group of that id (killpg alone missed it,
                # and the grader waited 30 s and gave up the template with every verdict in it)
                for kill in (os.kill, os.killpg):
                    try:
                        kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
            continue
        if msg.get("op") != "spawn":
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError:
            pid = -1
        if pid == 0:
            code = 4
            try:
                code = _child(fds, msg["env"], me)
            except BaseException:  # noqa: BLE001 — whatever happens, never return into the loop
                traceback.print_exc()
            finally:
                os._exit(code if isinstance(code, int) else 4)
        for fd in fds:
            os.close(fd)
        if pid < 0:
            _send(sock, {"id": msg["id"], "error": "fork failed"})
            continue
        children[pid] = msg["id"]
        _send(sock, {"id": msg["id"], "pid": pid})


def main(argv: list[str]) -> int:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: dies with the grader
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: its children cannot open its memory
    sock = socket.socket(fileno=int(argv[1]))
    # everything a worker imports, imported once; nothing that starts CUDA
    import numpy  # noqa: F401
    import torch
    from grader.run import protocol, timing, worker  # noqa: F401

    if torch.cuda.is_initialized():
        _send(sock, {"ready": False, "error": "CUDA was initialised in the template"})
        return 1
    try:
        return serve(sock)
    except (BrokenPipeError, ConnectionResetError):
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
