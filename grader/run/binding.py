"""Load a built kernel library and call its launchers on torch tensors.

    mod = grader.load("kernels/01_naive.cu", "naive")   # compiles once, then cached
    C = mod.gemm(A, B)                # a torch.library custom op, on the current stream
    mod.launch.gemm(A, B, C)          # the raw launcher on preallocated tensors (timing)

The same code serves both backends: on `cuda` the tensors live on the GPU and the
launcher gets torch's current stream; on `cpu` they are CPU tensors and the CPU
backend's emulated launcher runs the kernel on the host.
"""

from __future__ import annotations

import contextlib
import ctypes
import unicodedata
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import torch

from grader.spec import contract, exercises
from grader.spec.files import not_regular_message, special_kind
from grader.compile import forbidden, toolchain
from grader.errors import CannotGrade, Forbidden, KernelError, LauncherError, SubmissionError

_MODULES: dict[str, "KernelModule"] = {}  # build key -> loaded module (custom ops are global)


def resolve_backend(backend: str = "auto") -> str:
    """'auto' means cuda when torch sees a GPU, else cpu."""
    if backend == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if backend not in ("cuda", "cpu"):
        raise CannotGrade(f"unknown backend {backend!r}: choose auto, cuda or cpu")
    if backend == "cuda" and not torch.cuda.is_available():
        raise CannotGrade(
            "--backend cuda needs a GPU, and torch sees none "
            f"(torch {torch.__version__}, built for CUDA {torch.version.cuda}). "
            "Use --backend cpu to grade correctness without a GPU."
        )
    return backend


def read_source(source_or_path: str | os.PathLike) -> tuple[str, str]:
    """(source text, file name for diagnostics). Accepts a path (a PathLike, or a str of one line)
    or the source itself (a str of several lines: a kernel file has more than one)."""
    text = str(source_or_path)
    if not isinstance(source_or_path, os.PathLike) and "\n" in text and not (len(text) < 4096 and os.path.isfile(text)):
        return str(source_or_path).lstrip("\ufeff"), "cell.cu"
    path = Path(source_or_path)
    if path.is_dir():
        raise CannotGrade(f"{path} is a folder: give one kernel file (or use `batch` for a folder)")
    if kind := special_kind(path):  # a FIFO: reading it would wait for a writer forever
        raise CannotGrade(not_regular_message(str(path), kind))
    if not path.is_file():
        raise CannotGrade(f"{path}: no such file")
    big = forbidden.too_large(path.stat().st_size)  # refused unread (grader.compile.forbidden.MAX_BYTES)
    if big:
        raise Forbidden(forbidden.message([big], display_name(path.name)))
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise SubmissionError(
            f"{path.name}: not a UTF-8 text file (byte 0x{data[e.start]:02x} on line {line}): save "
            "it as UTF-8, or if it is a compiled binary, submit the .cu source instead."
        ) from None
    if "\0" in text:
        raise SubmissionError(f"{path.name}: contains NUL bytes; submit the .cu source, not a binary.")
    return text.lstrip("\ufeff"), display_name(path.name)


def display_name(name: str) -> str:
    """A file name fit for messages and for the `#line 1 "NAME"` the build puts before the source: bytes
    that are not UTF-8 become U+FFFD, and control characters, quotes and backslashes '_' (a name with a
    newline would otherwise add preprocessor lines of its own to the file)."""
    name = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return "".join("_" if c in '"\\' or unicodedata.category(c)[0] == "C" else c for c in name)


def load(
    source_or_path,
    exercise: str,
    *,
    backend: str = "auto",
    sanitize: bool = False,
    extra_flags: tuple[str, ...] = (),
    filename: str | None = None,
) -> "KernelModule":
    """Compile (cached) and load a kernel file for `exercise`; see the module docstring.
    filename: the name diagnostics give source text (default cell.cu)."""
    if exercise not in exercises.EXERCISES and exercise not in contract.BASELINE_LAUNCHERS:
        raise CannotGrade(f"unknown exercise {exercise!r}; exercises: {', '.join(exercises.EXERCISES)}")
    source, name = read_source(source_or_path)
    filename = filename or name
    if not source.strip():
        raise SubmissionError(f'{filename} is empty: write the kernel and its extern "C" launcher(s).')
    # host code dereferences its pointers on the CPU: never hand it GPU memory
    backend = "cpu" if exercises.is_host(exercise) else resolve_backend(backend)
    build = toolchain.build(
        source, backend=backend, exercise=exercise, filename=filename, sanitize=sanitize, extra_flags=extra_flags
    )
    if build.key not in _MODULES:
        _MODULES[build.key] = KernelModule(build, uses_printf="printf" in source)
    return _MODULES[build.key]


def missing_launcher_message(exercise: str, name: str) -> str:
    """What a kernel file lacking launcher `name` of `exercise` is told."""
    (launcher,) = [l for l in exercises.launchers(exercise) if l.name == name]
    return (
        f"launcher `{name}` not found. The {exercise!r} exercise needs\n"
        f'    extern "C" {launcher.signature}\n'
        'spelt exactly so, with extern "C" (C++ would otherwise mangle the name).'
    )


@contextlib.contextmanager
def captured_c_stdout(enabled: bool = True):
    """Copy what C code writes to fd 1 (kernel printf) into sys.stdout, which Jupyter shows."""
    if not enabled:
        yield
        return
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode(errors="replace")
            if text:
                sys.stdout.write(text)


class KernelModule:
    """A loaded kernel library: raw launchers under `.launch`, torch ops as attributes."""

    def __init__(self, build: toolchain.Build, uses_printf: bool = False):
        self.build, self.exercise, self.backend = build, build.exercise, build.backend
        self.device = torch.device("cuda" if self.backend == "cuda" else "cpu")
        self._uses_printf = uses_printf
        self._lib = ctypes.CDLL(str(build.path), mode=ctypes.RTLD_LOCAL)
        self._setup_error_api()
        self.launch = SimpleNamespace()
        for launcher in exercises.launchers(self.exercise):
            fn = self._symbol(launcher)
            setattr(self.launch, launcher.name, self._raw(launcher, fn))
            setattr(self, launcher.name, self._op(launcher))
        for launcher in exercises.timing_launchers(self.exercise):  # optional: only timing needs them
            if hasattr(self._lib, launcher.name):
                setattr(self.launch, launcher.name, self._raw(launcher, self._symbol(launcher)))
                setattr(self, launcher.name, self._op(launcher))

    # -- symbols and errors
    def _symbol(self, launcher: contract.Launcher):
        try:
            fn = getattr(self._lib, launcher.name)
        except AttributeError:
            raise LauncherError(missing_launcher_message(self.exercise, launcher.name)) from None
        fn.argtypes, fn.restype = launcher.argtypes, None
        return fn

    def _setup_error_api(self):
        if self.backend == "cuda":
            self._lib.grader_last_error.restype = ctypes.c_int
            self._lib.grader_synchronize.restype = ctypes.c_int
            self._lib.grader_error_string.restype = ctypes.c_char_p
            self._lib.grader_error_string.argtypes = [ctypes.c_int]
        else:
            self._lib.cuda_emu_take_error.restype = ctypes.c_char_p
            self._lib.cuda_emu_configure.argtypes = [ctypes.c_uint, ctypes.c_int]
            self._lib.cuda_emu_stream_create.restype = ctypes.c_void_p
            self._lib.cuda_emu_expect_stream.argtypes = [ctypes.c_void_p]
            # the launchers' stream: not the default one, so a launch that ignores its stream argument is caught
            self._stream = self._lib.cuda_emu_stream_create()

    def check_error(self, what: str, synchronize: bool = False) -> None:
        """Raise KernelError if the last launch failed (CUDA error or CPU-backend diagnostic)."""
        if self.backend == "cuda":
            err = self._lib.grader_synchronize() if synchronize else 0
            err = err or self._lib.grader_last_error()
            if err:
                name = self._lib.grader_error_string(err).decode()
                raise KernelError(f"CUDA error in {what}: {name} (error {err})")
        else:
            msg = self._lib.cuda_emu_take_error()
            if msg:
                raise KernelError(f"{what}: {msg.decode(errors='replace')}")

    def _set_buffers(self, bound: dict[str, torch.Tensor], outputs=()) -> None:
        """CPU backend: name the launch's global buffers (the access profile counts accesses to them),
        and the outputs among them, whose accesses the race detector checks between threads; the others
        are inputs, which no kernel may write. For a CUDA exercise they are device memory (flag 2):
        host code that touches them, or copies host memory into an output, is reported, as on a GPU
        it faults or computes nothing on the device; host code (a host kind: grader.spec.kinds) is not."""
        n = len(bound)
        names = (ctypes.c_char_p * n)(*[k.encode() for k in bound])
        ptrs = (ctypes.c_ulonglong * n)(*[t.data_ptr() for t in bound.values()])
        sizes = (ctypes.c_ulonglong * n)(*[t.numel() * t.element_size() for t in bound.values()])
        self._lib.cuda_emu_set_buffers(n, names, ptrs, sizes)
        cols = (ctypes.c_int * n)(*[t.shape[-1] if t.dim() == 2 else 0 for t in bound.values()])
        device = 0 if exercises.is_host(self.exercise) else 2
        outs = (ctypes.c_int * n)(*[int(k in outputs) | device for k in bound])
        self._lib.cuda_emu_set_outputs(n, names, ptrs, sizes, cols, outs)
        # the storage around each tensor (the worker's guard zones): a kernel's read there is out of bounds
        storages = [t.untyped_storage() for t in bound.values()]
        bases = (ctypes.c_ulonglong * n)(*[s.data_ptr() for s in storages])
        self._lib.cuda_emu_set_allocations(n, bases, (ctypes.c_ulonglong * n)(*[s.nbytes() for s in storages]))

    def configure_cpu(self, schedule_seed: int = 0, flags: int = 1) -> None:
        """CPU backend only: thread schedule (0 = in order) and diagnostics flags."""
        if self.backend == "cpu":
            self._lib.cuda_emu_configure(schedule_seed, flags)

    # -- calls
    def _dims(self, launcher, tensors: dict[str, torch.Tensor]) -> dict[str, int]:
        dims: dict[str, int] = {}
        for name, t in tensors.items():
            spec = contract.SHAPES[name]
            want = torch.int32 if contract.is_mask(name) else torch.float32
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{launcher.name}: {name} must be a torch.Tensor, got {type(t).__name__}")
            if t.dtype != want or t.device.type != self.device.type or not t.is_contiguous():
                raise TypeError(
                    f"{launcher.name}: {name} must be a contiguous {want} tensor on "
                    f"{self.device.type}; got {t.dtype} on {t.device}"
                    + ("" if t.is_contiguous() else ", not contiguous")
                )
            if t.dim() != len(spec):
                raise ValueError(f"{launcher.name}: {name} must have shape {'x'.join(spec)}, got {tuple(t.shape)}")
            for d, size in zip(spec, t.shape):
                if dims.setdefault(d, size) != size:
                    raise ValueError(f"{launcher.name}: {name} has {d}={size} but another argument says {d}={dims[d]}")
        if "N" in dims and dims.setdefault("W", contract.mask_words(dims["N"])) != contract.mask_words(dims["N"]):
            raise ValueError(f"{launcher.name}: mask must have ceil(N/32) = {contract.mask_words(dims['N'])} columns")
        return dims

    def _raw(self, launcher: contract.Launcher, fn):
        names = [n for _, n in contract.tensor_params(launcher)]

        def call(*tensors: torch.Tensor) -> None:
            if len(tensors) != len(names):
                raise TypeError(f"launch.{launcher.name} takes ({', '.join(names)})")
            bound = dict(zip(names, tensors))
            dims = self._dims(launcher, bound)
            stream = torch.cuda.current_stream().cuda_stream if self.backend == "cuda" else self._stream
            args = [
                bound[n].data_ptr() if n in bound else (stream if n == "stream" else dims[n])
                for _, n in launcher.params
            ]
            if self.backend == "cpu":
                self._set_buffers(bound, contract.outputs(launcher))
                self._lib.cuda_emu_expect_stream(stream)  # work on another stream is reported
                try:
                    fn(*args)
                finally:  # forgotten after the call: later host code may reuse that memory
                    self._lib.cuda_emu_expect_stream(None)
                    self._lib.cuda_emu_set_outputs(0, None, None, None, None, None)
                return
            fn(*args)

        call.__name__ = launcher.name
        call.__doc__ = f"Raw launcher: {launcher.signature}. Pass ({', '.join(names)})."
        return call

    def _op(self, launcher: contract.Launcher):
        ins, outs = contract.inputs(launcher), contract.outputs(launcher)
        raw = getattr(self.launch, launcher.name)

        def run(*args: torch.Tensor):
            dims = self._dims(launcher, dict(zip(ins, args)))
            dims.setdefault("W", contract.mask_words(dims["N"]))
            results = [
                torch.empty(
                    [dims[d] for d in contract.SHAPES[n]],
                    dtype=torch.int32 if contract.is_mask(n) else torch.float32,
                    device=self.device,
                )
                for n in outs
            ]
            with captured_c_stdout(self._uses_printf):
                raw(*args, *results)
                self.check_error(launcher.name, synchronize=self._uses_printf)
            return results[0] if len(results) == 1 else tuple(results)

        qualname = f"gemm_course::{launcher.name}_{self.build.key[:16]}"
        ret = "Tensor" if len(outs) == 1 else "(" + ", ".join(["Tensor"] * len(outs)) + ")"
        schema = "(" + ", ".join(f"Tensor {n}" for n in ins) + f") -> {ret}"
        op = torch.library.custom_op(qualname, run, mutates_args=(), schema=schema)
        op.__doc__ = f"{launcher.doc}. Inputs ({', '.join(ins)}) -> ({', '.join(outs)})."
        return op

    def __repr__(self) -> str:
        names = ", ".join(l.name for l in exercises.launchers(self.exercise))
        return f"<KernelModule {self.exercise} [{self.backend}] {names} from {self.build.path}>"
