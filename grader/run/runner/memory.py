"""Where a kernel's buffers live, seen one way by grader.run.worker's run_case and timed rounds.

    mem = Remote(runner, "sub", exercise, backend)   # the native runner (a graded submission)
    mem = Local(kernel_module)                        # this process (grader.judge.profile.run in a notebook)
    a = mem.alloc("A", (64, 32), torch.float32, word, content=tensor, before=GUARD, after=GUARD)
    err = mem.call("sub", "gemm", [a, b, c_out, 64, 64, 32, STREAM])
    b = mem.batch(); c = b.alloc(...); e = b.call(...); out = b.read(c); b.run(); out.value   # one round trip

A handle (Handle) names a buffer: its shape, dtype and guard zones. Reads come back as CPU tensors.
Local keeps torch tensors and calls the library's launchers through ctypes; Remote keeps the
buffers in the runner process, which alone holds the submission's library.
"""

from __future__ import annotations

import ctypes
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

from . import rng
from .client import STREAM, Buf, Runner, _arg

_WEIGHTS: dict[tuple[int, str], torch.Tensor] = {}


@dataclass
class Handle:
    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    before: int = 0
    after: int = 0
    words: dict = field(default_factory=dict)  # {"guard": the guard zones' word}

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


def checksum(t: torch.Tensor) -> tuple[int, int]:
    """An exact, order-free checksum of a 4-byte tensor's words (runner.cpp's "stats" computes the
    same): their sum, and their sum weighted by (index % 61 + 1), as unsigned 32-bit values in int64."""
    w = t.contiguous().view(-1).view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    key = (w.numel(), str(w.device))
    if key not in _WEIGHTS:
        _WEIGHTS.clear()
        _WEIGHTS[key] = torch.arange(w.numel(), dtype=torch.int64, device=w.device) % 61 + 1
    return int(w.sum()), int((w * _WEIGHTS[key]).sum())


def digest(t: torch.Tensor) -> str:
    """sha256 of a tensor's bytes: the parent compares it with its own copy of the input."""
    return hashlib.sha256(t.detach().cpu().contiguous().numpy().tobytes()).hexdigest()


def _bits(word: int) -> int:
    word &= 0xFFFFFFFF
    return word - (1 << 32) if word >= 1 << 31 else word


def _guards(bits: torch.Tensor, h: Handle) -> dict:
    """Changed words in a buffer's guard zones (`bits`: all its words): before, after, the first after."""
    word = _bits(h.words["guard"])
    hit_after = (bits[h.before + h.numel :] != word).nonzero().flatten()
    before = int((bits[: h.before] != word).sum())
    return {"before": before, "after": len(hit_after), "first_after": int(hit_after[0]) if len(hit_after) else -1}


class Slot:
    """A result a batch fills in when it runs (value None: the batch stopped before it)."""

    __slots__ = ("value",)

    def __init__(self, value=None):
        self.value = value


class _LocalBatch:
    """Local's batch: each request runs at once, none after a launcher's error (as the runner's batch)."""

    def __init__(self, mem: "Local"):
        self.mem, self.stopped = mem, False

    def _do(self, f) -> Slot:
        return Slot(None if self.stopped else f())

    def alloc(self, *args, **kw) -> Handle:
        return self.mem.alloc(*args, **kw)

    def fill(self, h: Handle, word: int) -> None:
        self._do(lambda: self.mem.fill(h, word))

    def read(self, h: Handle) -> Slot:
        return self._do(lambda: self.mem.read(h))

    def guards(self, h: Handle) -> Slot:
        return self._do(lambda: self.mem.guards(h))

    def call(self, lib: str, fn: str, args: list, outs=()) -> Slot:
        slot = self._do(lambda: self.mem.call(lib, fn, args, outs))
        self.stopped = self.stopped or bool(slot.value)
        return slot

    def run(self) -> None:
        pass


class Local:
    """Buffers as torch tensors of this process, on the module's device; launchers through ctypes."""

    def __init__(self, mod, others: dict | None = None):
        self.mod, self.exercise, self.backend, self.device = mod, mod.exercise, mod.backend, mod.device
        self.libs = {"sub": mod} | (others or {})
        self._bases: dict[str, torch.Tensor] = {}

    @classmethod
    def plain(cls, exercise: str, device="cpu") -> "Local":
        """Buffers only, no library (the grader's tests of its checks call Python stand-ins)."""
        from types import SimpleNamespace as NS

        return cls(NS(exercise=exercise, backend="cpu", device=torch.device(device), launch=NS()))

    def alloc(self, name, shape, dtype, word, content=None, before=0, after=0) -> Handle:
        h = Handle(name, tuple(shape), dtype, before, after, {"guard": word})
        base = torch.full((h.numel + before + after,), _bits(word), dtype=torch.int32, device=self.device)
        self._bases[name] = base
        if content is not None:
            self.tensor(h).copy_(content.view(shape))
        return h

    def batch(self) -> _LocalBatch:
        return _LocalBatch(self)

    def tensor(self, h: Handle) -> torch.Tensor:
        return self._bases[h.name][h.before : h.before + h.numel].view(h.dtype).view(h.shape)

    def fill(self, h: Handle, word: int) -> None:
        self.tensor(h).view(torch.int32).fill_(_bits(word))

    def read(self, h: Handle) -> torch.Tensor:
        return self.tensor(h).detach().cpu().clone()

    def rows(self, h: Handle, rows: list[int]) -> torch.Tensor:
        return self.tensor(h)[rows].cpu()

    def guards(self, h: Handle) -> dict:
        return _guards(self._bases[h.name].view(torch.int32), h)

    def random(self, h: Handle, seed: int, relu: bool = False) -> None:
        rng.fill_(self.tensor(h), seed, relu)

    def stats(self, h: Handle, colsum: bool = False) -> dict:
        t = self.tensor(h)
        s, w = checksum(t)
        out = {"sum": s, "weighted": w, "nonfinite": int((~torch.isfinite(t)).sum()) if t.is_floating_point() else 0}
        if colsum:
            out["colsum"] = t.double().sum(0).cpu()
        return out

    def _args(self, args):
        return [self.tensor(a) for a in args if isinstance(a, Handle)]

    def has(self, lib: str, fn: str) -> bool:
        return hasattr(self.libs[lib].launch, fn)

    def configure_cpu(self, schedule_seed: int = 0, flags: int = 1) -> None:
        self.mod.configure_cpu(schedule_seed, flags)

    def call(self, lib: str, fn: str, args: list, outs=()) -> str:
        mod = self.libs[lib]
        getattr(mod.launch, fn)(*self._args(args))
        try:
            mod.check_error(fn, synchronize=True)
        except Exception as e:  # noqa: BLE001 - the caller raises it as the kernel's error
            return str(e)
        return ""

    def timed(self, calls: list[tuple[str, str, list]], rounds=None, checked: bool = False):
        """A callable for grader.run.timing.time_gpu (this process's events time it; `rounds` applies its
        draws and checks itself, grader.run.worker.FreshRounds)."""
        steps = [(getattr(self.libs[lib].launch, fn), self._args(args)) for lib, fn, args in calls]
        return lambda: [f(*a) for f, a in steps]

    def check_error(self, what: str) -> None:
        self.mod.check_error(what, synchronize=True)


class Remote:
    """Buffers in the native runner (grader.run.runner.client), which holds the submission's library."""

    def __init__(self, runner: Runner, exercise: str, backend: str, device: bool = True, lib_path: str = ""):
        self.runner, self.exercise, self.backend = runner, exercise, backend
        self.device = torch.device("cpu")  # reads arrive in this process's memory
        self.device_memory = device  # the CPU runtime treats the buffers as device memory (not host code)
        self.build = SimpleNamespace(
            path=Path(lib_path), key=Path(lib_path).parent.name
        )  # grader.judge.profile's sites
        self._lib = _EmuLib(runner)  # the CPU runtime's own API, as grader.judge.profile calls it
        # buffers whose guard zones were found intact after the last call of the submission's code (a
        # batch may then refill only their inner region), each one's geometry, and the inputs stashed
        # in the runner ({id: (tensor, its version)}: a case's later schedules restore, not resend, them)
        self._clean: set[str] = set()
        self._geometry: dict[str, tuple] = {}
        self._stash: dict[str, tuple[torch.Tensor, int]] = {}

    def batch(self) -> "_RemoteBatch":
        return _RemoteBatch(self)

    def round(self, calls: list, spec: dict, flush: str = "", head_start_us: float = 0.0) -> dict:
        """One runner request: spec's draws and poison, the timed `calls` (already runner arguments;
        none: only the rest), the checks spec asks for (grader.run.runner.client.Runner.round)."""
        if calls:
            self._clean.clear()
        return self.runner.round(calls, flush, head_start_us, self.device_memory, **spec)

    def has(self, lib: str, fn: str) -> bool:
        return not self.runner.missing(lib, [fn])

    def configure_cpu(self, schedule_seed: int = 0, flags: int = 1) -> None:
        """CPU backend only: thread schedule (0 = in order) and diagnostics flags."""
        if self.backend == "cpu":
            self.runner.emu("cuda_emu_configure", [schedule_seed, flags])

    def alloc(self, name, shape, dtype, word, content=None, before=0, after=0) -> Handle:
        h = Handle(name, tuple(shape), dtype, before, after, {"guard": word})
        data = None if content is None else content.detach().cpu().contiguous().numpy()
        cols = shape[-1] if len(shape) == 2 else 0
        self.runner.alloc(
            name, h.numel, word, before=before, after=after, cols=cols, data=data, device=self.device_memory
        )
        self._clean.discard(name)
        self._geometry.pop(name, None)
        return h

    def _tensor(self, words: np.ndarray, h: Handle, shape) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(words)).view(h.dtype).view(shape)

    def fill(self, h: Handle, word: int) -> None:
        self.runner.fill(h.name, word)

    def write(self, h: Handle, t: torch.Tensor) -> None:
        self.runner.write(h.name, t.detach().cpu().contiguous().numpy())

    def read(self, h: Handle) -> torch.Tensor:
        return self._tensor(self.runner.read(h.name), h, h.shape)

    def rows(self, h: Handle, rows: list[int]) -> torch.Tensor:
        return self._tensor(self.runner.rows(h.name, rows, h.shape[-1]), h, (len(rows), h.shape[-1]))

    def guards(self, h: Handle) -> dict:
        reply = self.runner.request("guards", id=h.name, word=_bits(h.words["guard"]))
        return {k: int(reply[k]) for k in ("before", "after", "first_after")}

    def random(self, h: Handle, seed: int, relu: bool = False) -> None:
        self.runner.random(h.name, seed, relu)

    def free(self) -> None:
        self.runner.free()
        self._clean.clear()
        self._geometry.clear()

    def stats(self, h: Handle, colsum: bool = False) -> dict:
        reply = self.runner.request("stats", id=h.name, cols=h.shape[-1], colsum=colsum)
        out = {k: int(reply[k]) for k in ("sum", "weighted", "nonfinite")}
        if colsum:
            out["colsum"] = torch.from_numpy(reply["_arrays"]["colsum"])
        return out

    def _args(self, fn: str, args: list) -> list:
        """Handles become the runner's buffers, marked where the launcher's parameter is an output (the
        CPU runtime checks outputs for races and holds every other buffer read-only)."""
        params = _params(fn)
        return [
            Buf(a.name, not params[i][0].startswith("const "), params[i][1]) if isinstance(a, Handle) else a
            for i, a in enumerate(args)
        ]

    def call(self, lib: str, fn: str, args: list, outs=()) -> str:
        """Run one launcher; its error as grader.run.binding.KernelModule.check_error words it ('' if none)."""
        self._clean.clear()
        return self._error(fn, self.runner.call(lib, fn, self._args(fn, args), device=self.device_memory))

    def _error(self, fn: str, err: str) -> str:
        if not err:
            return ""
        return f"CUDA error in {fn}: {err}" if self.backend == "cuda" else f"{fn}: {err}"

    def timed(self, calls: list[tuple[str, str, list]], rounds=None, checked: bool = False):
        """An object grader.run.timing.time_gpu times through the runner's own events (timed_round).
        rounds (grader.run.worker.FreshRounds): its fresh inputs and poison travel with the round's first
        runner request, and its checks come back with this one's (all of them if `checked`: the
        submission's timed call; else the input checksums)."""
        if rounds is not None:
            rounds.bound = True
        return _RemoteCalls(self, [(lib, fn, self._args(fn, args)) for lib, fn, args in calls], rounds, checked)

    def check_error(self, what: str) -> None:
        pass  # every request reports its own error


def _params(fn: str) -> tuple[tuple[str, str], ...]:
    """A launcher's (C type, name) parameters, by name, from the contract (names are unique there)."""
    from grader.spec import contract

    for launcher in contract.ALL_LAUNCHERS:
        if launcher.name == fn:
            return launcher.params
    raise KeyError(f"no launcher {fn!r} in the contract")


class _EmuFn:
    """One cuda_emu_* function of the runner's library, called as grader.judge.profile calls it through
    ctypes: integers and ctypes arrays in; an int, or bytes when restype is c_char_p."""

    def __init__(self, runner: Runner, name: str):
        self.runner, self.name = runner, name
        self.argtypes, self.restype = None, ctypes.c_int

    def __call__(self, *args):
        wire = [np.ctypeslib.as_array(a).copy() if isinstance(a, ctypes.Array) else int(a) for a in args]
        if self.restype is ctypes.c_char_p:
            value = self.runner.emu(self.name, wire, ret="str")
            return None if value is None else value.encode()
        return self.runner.emu(self.name, wire, ret="int")


class _EmuLib:
    def __init__(self, runner: Runner):
        self._runner, self._fns = runner, {}

    def __getattr__(self, name: str) -> _EmuFn:
        if not name.startswith("cuda_emu_"):
            raise AttributeError(name)
        return self._fns.setdefault(name, _EmuFn(self._runner, name))


class _RemoteCalls:
    def __init__(self, mem: Remote, calls, rounds=None, checked: bool = False):
        self.mem, self.calls, self.rounds, self.checked = mem, calls, rounds, checked

    def __call__(self) -> None:  # an untimed call (warm-up)
        self.mem._clean.clear()
        for lib, fn, args in self.calls:
            err = self.mem.runner.call(lib, fn, args, device=self.mem.device_memory)
            if err:
                from grader.errors import KernelError

                raise KernelError(f"CUDA error in {fn}: {err}")

    def timed_round(self, flush: str, head_start_us: float) -> tuple[float, float]:
        """One request: the round's fresh inputs (if this is its first runner call), the timed calls and
        the round's checks, which go to self.rounds (grader.run.worker.FreshRounds.observe)."""
        spec = self.rounds.round_spec(self.checked) if self.rounds is not None else {}
        reply = self.mem.round(self.calls, spec, flush, head_start_us)
        if reply["error"]:
            from grader.errors import KernelError

            raise KernelError(f"CUDA error in the timed runs: {reply['error']}")
        if self.rounds is not None:
            self.rounds.observe(reply, spec)
        return float(reply["ms"]), float(reply["host_ms"])


class _RemoteBatch:
    """Requests queued, then sent as one (the runner's op "batch"); each method's result is a Slot.
    An allocation queued before the batch's first call reuses a buffer of the same geometry whose
    guards were found intact since the submission's code last ran (only its inner region is refilled),
    and an input already stashed in the runner is restored there instead of sent again."""

    def __init__(self, mem: Remote):
        self.mem, self.reqs, self.parse = mem, [], []
        self.called = False
        self.checked: list[tuple[str, Slot]] = []  # guards queued after the last call

    def _queue(self, op: str, meta: dict, arrays: dict | None = None, parse=None) -> Slot:
        slot = Slot()
        self.reqs.append((op, meta, arrays))
        self.parse.append((slot, parse))
        return slot

    def alloc(self, name, shape, dtype, word, content=None, before=0, after=0) -> Handle:
        mem = self.mem
        h = Handle(name, tuple(shape), dtype, before, after, {"guard": word})
        cols = shape[-1] if len(shape) == 2 else 0
        geometry = (h.numel, before, after, _bits(word), cols)
        if not self.called and name in mem._clean and mem._geometry.get(name) == geometry:
            self._queue("fill", {"id": name, "word": _bits(word)})  # its guard zones hold `word` already
        else:
            self._queue(
                "alloc",
                {
                    "id": name,
                    "n": h.numel,
                    "before": before,
                    "after": after,
                    "word": _bits(word),
                    "cols": cols,
                    "device": mem.device_memory,
                },
            )
            mem._geometry[name] = geometry
        mem._clean.discard(name)
        if content is not None:
            kept = mem._stash.get(name)
            if kept is None or kept[0] is not content or kept[1] != content._version:
                words = content.detach().cpu().contiguous().numpy().view(np.int32).reshape(-1)
                self._queue("stash", {"id": name}, {"data": words})
                mem._stash[name] = (content, content._version)
            self._queue("restore", {"id": name, "from": name})
        return h

    def fill(self, h: Handle, word: int) -> None:
        self._queue("fill", {"id": h.name, "word": _bits(word)})

    def read(self, h: Handle) -> Slot:
        return self._queue("read", {"id": h.name}, parse=lambda r: self.mem._tensor(r["_arrays"]["data"], h, h.shape))

    def guards(self, h: Handle) -> Slot:
        slot = self._queue(
            "guards",
            {"id": h.name, "word": _bits(h.words["guard"])},
            parse=lambda r: {k: int(r[k]) for k in ("before", "after", "first_after")},
        )
        self.checked.append((h.name, slot))
        return slot

    def call(self, lib: str, fn: str, args: list, outs=()) -> Slot:
        self.called = True
        self.checked.clear()
        meta = {"lib": lib, "fn": fn, "args": [_arg(a) for a in self.mem._args(fn, args)]}
        return self._queue(
            "call", meta | {"device": self.mem.device_memory}, parse=lambda r: self.mem._error(fn, r["error"])
        )

    def run(self) -> None:
        mem = self.mem
        if self.called:
            mem._clean.clear()
        replies = mem.runner.batch(self.reqs) if self.reqs else []
        for (slot, parse), reply in zip(self.parse, replies):
            slot.value = parse(reply) if parse else reply
        for name, slot in self.checked:
            if slot.value is not None and not (slot.value["before"] or slot.value["after"]):
                mem._clean.add(name)


__all__ = ["Local", "Remote", "Handle", "STREAM", "checksum", "digest"]
