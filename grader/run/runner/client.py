"""The worker's side of the native runner: start it, and one method per request (runner.cpp).

    r = Runner(binary_path, backend="cuda")
    r.load("sub", lib_path)                      # the submission's library, sent as bytes
    r.alloc("A", a)                              # a guarded buffer holding a copy of `a`
    err = r.call("sub", "gemm", [Buf("A"), Buf("B"), Buf("C", out=True), 64, 64, 64, STREAM])
    c = r.read("C")                              # the inner region, as int32 words

The runner holds the learner's library and nothing else; every reply is data, parsed here
(grader.run.protocol), and what it says about outputs is checked by the worker and the parent.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
from dataclasses import dataclass

import numpy as np

from grader.run import protocol
from grader.errors import GraderError, KernelError


class RunnerDied(KernelError):
    """The runner process ended (the submission's code crashed it, or was killed)."""

    def __init__(self, message: str, returncode: int | None = None):
        super().__init__(message)
        self.returncode = returncode


class RunnerFailed(GraderError):
    """The runner could not do what it was asked (a missing symbol, memory, a malformed request)."""


@dataclass(frozen=True)
class Buf:
    """A launcher argument that is one of the runner's buffers (out: the launcher writes it; name: the
    parameter's name, which the CPU runtime's diagnostics use; default: the buffer's id)."""

    id: str
    out: bool = False
    name: str = ""


STREAM = object()  # a launcher argument: the runner's own stream (not the default stream)


def _arg(a) -> dict:
    if isinstance(a, Buf):
        return {"b": a.id, "out": a.out, "name": a.name or a.id}
    if a is STREAM:
        return {"s": 1}
    return {"i": int(a)}


class Runner:
    """One runner process, started now, ended by close() (or when this process dies)."""

    def __init__(self, binary: str, backend: str, env: dict[str, str] | None = None):
        self.backend = backend
        req_r, self._req_w = os.pipe()
        self._rep_r, rep_w = os.pipe()
        # the child's ends above 2: this process may have closed its stdin (the worker does), and
        # a pipe end that got fd 0 would become the child's /dev/null stdin
        req_r, rep_w = (_above_stdio(fd) for fd in (req_r, rep_w))
        fds = [req_r, rep_w]
        keep = [int(binary.rsplit("/", 1)[1])] if binary.startswith("/proc/self/fd/") else []
        try:
            self.proc = subprocess.Popen(
                [binary, str(req_r), str(rep_w), str(os.getpid()), "view" if view_wanted() else "noview"],
                pass_fds=fds + keep,
                stdin=subprocess.DEVNULL,
                # the kernel's printf and the CPU runtime's reports go where this process's stderr goes (the
                # verdict's log); its own 0-2 may be close-on-exec (a worker forked by grader.run.forkserver), and
                # a runner started without them would hand those numbers to the next files it opens
                stdout=2,
                stderr=2,
                env=env if env is not None else os.environ.copy(),
                close_fds=True,
            )
        finally:
            os.close(req_r)
            os.close(rep_w)
        first = self._recv()
        if "fatal" in first:
            self.close()
            raise RunnerFailed(first["fatal"])
        self.view = str(first.get("view", "?"))  # '' when it runs in its own file-system view, else why not

    # ------------------------------------------------------------------ wire
    def _recv(self) -> dict:
        try:
            got = protocol.recv(self._rep_r)
        except ValueError as e:
            got = None
            bad = str(e)
        else:
            bad = ""
        if got is None:
            raise RunnerDied(self._death(bad), self.proc.poll())
        meta, arrays = got
        meta["_arrays"] = arrays
        return meta

    def _death(self, bad: str) -> str:
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        if bad:
            return f"the kernel's process sent malformed data ({bad})"
        if rc < 0:
            try:
                return f"the kernel's process crashed ({signal.Signals(-rc).name})"
            except ValueError:
                return f"the kernel's process crashed (signal {-rc})"
        return f"the kernel's process exited with code {rc} in the middle of a call"

    def request(self, op: str, arrays: dict[str, np.ndarray] | None = None, **meta) -> dict:
        try:
            protocol.send(self._req_w, {"op": op, **meta}, arrays)
        except (BrokenPipeError, OSError):
            raise RunnerDied(self._death(""), self.proc.poll()) from None
        reply = self._recv()
        if "fail" in reply:
            raise RunnerFailed(reply["fail"])
        if "fatal" in reply:
            raise RunnerDied(reply["fatal"], None)
        return reply

    def close(self) -> None:
        try:
            protocol.send(self._req_w, {"op": "exit"})
        except OSError:
            pass
        for fd in (self._req_w, self._rep_r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    # ------------------------------------------------------------------ requests
    def confine(self, program: list[tuple[int, int, int, int]]) -> None:
        """Install a seccomp filter (grader.run.seccomp.program) in the runner, before any library loads."""
        raw = np.array(program, dtype=[("code", "<u2"), ("jt", "u1"), ("jf", "u1"), ("k", "<u4")])
        self.request("confine", {"program": raw.view(np.uint8)})

    def load(self, lib: str, path: str) -> None:
        self.request("load", {"bytes": np.fromfile(path, dtype=np.uint8)}, lib=lib)

    def missing(self, lib: str, names: list[str]) -> list[str]:
        return list(self.request("symbols", lib=lib, names=list(names))["missing"])

    def alloc(
        self,
        id: str,
        n: int,
        word: int,
        *,
        before: int = 0,
        after: int = 0,
        cols: int = 0,
        data: np.ndarray | None = None,
        device: bool = False,
    ) -> None:
        """device: a CUDA exercise's buffer; on the CPU backend it is the runtime's device memory, which the
        launcher's host code cannot touch (it faults, and the call fails), as on a GPU."""
        arrays = {"data": np.ascontiguousarray(data).view(np.int32).reshape(-1)} if data is not None else None
        meta = dict(id=id, n=int(n), before=before, after=after, word=_word(word), cols=int(cols), device=device)
        self.request("alloc", arrays, **meta)

    def fill(self, id: str, word: int) -> None:
        self.request("fill", id=id, word=_word(word))

    def write(self, id: str, data: np.ndarray) -> None:
        self.request("write", {"data": np.ascontiguousarray(data).view(np.int32).reshape(-1)}, id=id)

    def read(self, id: str, whole: bool = False) -> np.ndarray:
        """The buffer's inner region (whole: with its guard zones) as int32 words."""
        return self.request("read", id=id, whole=whole)["_arrays"]["data"]

    def rows(self, id: str, rows: list[int], cols: int) -> np.ndarray:
        return self.request("rows", id=id, rows=[int(r) for r in rows], cols=int(cols))["_arrays"]["data"]

    def random(self, id: str, seed: int, relu: bool = False) -> None:
        self.request("random", id=id, seed=int(seed) & ((1 << 63) - 1), relu=relu)

    def free(self) -> None:
        self.request("free")

    def call(self, lib: str, fn: str, args: list, device: bool = True) -> str:
        """Run one launcher and wait for it; the error it left ('' if none)."""
        return self.request("call", lib=lib, fn=fn, args=[_arg(a) for a in args], device=device)["error"]

    def timed_round(self, calls: list[tuple[str, str, list]], flush: str, head_start_us: float, device: bool = True):
        """One timed round of `calls` [(lib, fn, args)]: (event ms, host ms, error)."""
        reply = self.request(
            "time",
            calls=[{"lib": lib, "fn": fn, "args": [_arg(a) for a in args]} for lib, fn, args in calls],
            flush=flush or "",
            head_start_us=float(head_start_us),
            device=device,
        )
        return float(reply["ms"]), float(reply["host_ms"]), reply["error"]

    def batch(self, reqs: list[tuple[str, dict, dict | None]]) -> list[dict]:
        """Several requests [(op, meta, arrays)] in one round trip, run in order; the replies of those
        that ran (the runner stops after a launcher's error: fewer replies than requests)."""
        arrays = {f"{k}/{name}": a for k, (_, _, arr) in enumerate(reqs) for name, a in (arr or {}).items()}
        reply = self.request("batch", arrays or None, reqs=[{"op": op, **meta} for op, meta, _ in reqs])
        got = reply["_arrays"]
        out = []
        for k, meta in enumerate(reply["replies"]):
            prefix = f"{k}/"
            meta["_arrays"] = {n[len(prefix) :]: a for n, a in got.items() if n.startswith(prefix)}
            out.append(meta)
        return out

    def round(self, calls: list[tuple[str, str, list]], flush: str, head_start_us: float, device: bool, **spec) -> dict:
        """One timed round and everything around it (runner.cpp round_request): spec's draw
        [{id, seed, relu}] and poison [{id, word}] before it, stats [{id, cols, colsum}] and rows
        {m, n, of: [{id, cols}]} after it. The reply: ms, host_ms, error, stats, rows, and arrays
        colsumK (stats[K]'s column sums) and rowsK (the rows of of[K])."""
        return self.request(
            "round",
            calls=[{"lib": lib, "fn": fn, "args": [_arg(a) for a in args]} for lib, fn, args in calls],
            flush=flush or "",
            head_start_us=float(head_start_us),
            device=device,
            **spec,
        )

    def emu(self, fn: str, args: list = (), ret: str = "void", lib: str = "sub"):
        """Call one of the CPU runtime's own entry points (cuda_emu_*): integer arguments, or numpy
        arrays (passed as pointers to a copy in the runner)."""
        arrays, wire = {}, []
        for k, a in enumerate(args):
            if isinstance(a, np.ndarray):
                arrays[f"a{k}"] = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
                wire.append({"a": f"a{k}"})
            else:
                wire.append(int(a))
        return self.request("emu", arrays or None, lib=lib, fn=fn, args=wire, ret=ret).get("value")


def view_wanted() -> bool:
    """Does the runner leave the worker's file-system view for its own? By default yes, on both backends;
    GRADER_RUNNER_VIEW=0 (or off, no, false) says no. On a GPU the CUDA driver must keep working after the
    pivot_root (the context is up before it): on an H100 it did (2026-12-07: 8 reference verdicts, the
    runner's GPU tests, 7 checks); the switch is the way out where a driver does not."""
    return os.environ.get("GRADER_RUNNER_VIEW", "").strip().lower() not in ("0", "off", "no", "false")


def _above_stdio(fd: int) -> int:
    if fd > 2:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


def _word(w: int) -> int:
    """A 32-bit pattern as the signed int the runner parses."""
    w &= 0xFFFFFFFF
    return w - (1 << 32) if w >= 1 << 31 else w
