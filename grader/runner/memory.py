"""Where a kernel's buffers live, seen one way by grader.worker's run_case and timed rounds.

    mem = Remote(runner, "sub", exercise, backend)   # the native runner (a graded submission)
    mem = Local(kernel_module)                        # this process (grader.profile.run in a notebook)
    a = mem.alloc("A", (64, 32), torch.float32, word, content=tensor, before=GUARD, after=GUARD)
    err = mem.call("sub", "gemm", [a, b, c_out, 64, 64, 32, STREAM])

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
from .client import STREAM, Buf, Runner

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

    def timed(self, calls: list[tuple[str, str, list]]):
        """A callable for grader.timing.time_gpu (this process's events time it)."""
        steps = [(getattr(self.libs[lib].launch, fn), self._args(args)) for lib, fn, args in calls]
        return lambda: [f(*a) for f, a in steps]

    def check_error(self, what: str) -> None:
        self.mod.check_error(what, synchronize=True)


class Remote:
    """Buffers in the native runner (grader.runner.client), which holds the submission's library."""

    def __init__(self, runner: Runner, exercise: str, backend: str, device: bool = True, lib_path: str = ""):
        self.runner, self.exercise, self.backend = runner, exercise, backend
        self.device = torch.device("cpu")  # reads arrive in this process's memory
        self.device_memory = device  # the CPU runtime treats the buffers as device memory (not contract.HOST)
        self.build = SimpleNamespace(path=Path(lib_path), key=Path(lib_path).parent.name)  # grader.profile's sites
        self._lib = _EmuLib(runner)  # the CPU runtime's own API, as grader.profile calls it

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
        """Run one launcher; its error as grader.binding.KernelModule.check_error words it ('' if none)."""
        err = self.runner.call(lib, fn, self._args(fn, args), device=self.device_memory)
        if not err:
            return ""
        return f"CUDA error in {fn}: {err}" if self.backend == "cuda" else f"{fn}: {err}"

    def timed(self, calls: list[tuple[str, str, list]]):
        """An object grader.timing.time_gpu times through the runner's own events (timed_round)."""
        return _RemoteCalls(self, [(lib, fn, self._args(fn, args)) for lib, fn, args in calls])

    def check_error(self, what: str) -> None:
        pass  # every request reports its own error


def _params(fn: str) -> tuple[tuple[str, str], ...]:
    """A launcher's (C type, name) parameters, by name, from the contract (names are unique there)."""
    from .. import contract

    for group in (contract.LAUNCHERS, contract.BASELINE_LAUNCHERS, contract.TIMING_LAUNCHERS):
        for launchers in group.values():
            for launcher in launchers:
                if launcher.name == fn:
                    return launcher.params
    raise KeyError(f"no launcher {fn!r} in the contract")


class _EmuFn:
    """One cuda_emu_* function of the runner's library, called as grader.profile calls it through
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
    def __init__(self, mem: Remote, calls):
        self.mem, self.calls = mem, calls

    def __call__(self) -> None:  # an untimed call (warm-up)
        for lib, fn, args in self.calls:
            err = self.mem.runner.call(lib, fn, args, device=self.mem.device_memory)
            if err:
                from ..errors import KernelError

                raise KernelError(f"CUDA error in {fn}: {err}")

    def timed_round(self, flush: str, head_start_us: float) -> tuple[float, float]:
        ms, host_ms, err = self.mem.runner.timed_round(self.calls, flush, head_start_us, self.mem.device_memory)
        if err:
            from ..errors import KernelError

            raise KernelError(f"CUDA error in the timed runs: {err}")
        return ms, host_ms


__all__ = ["Local", "Remote", "Handle", "STREAM", "checksum", "digest"]
