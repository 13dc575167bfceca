"""Build kernel sources with the CPU backend and call them through ctypes."""

from __future__ import annotations

import atexit
import ctypes
import os
import pathlib
import shutil
import tempfile

import numpy as np

from grader.compile.cpu import compile_library

_DIR = pathlib.Path(tempfile.mkdtemp(prefix="cpu_backend_tests_"))
atexit.register(shutil.rmtree, _DIR, True)


def build(source: str, name: str, *, sanitize: bool = False, prelude: str = "") -> pathlib.Path:
    out = _DIR / f"{name}.so"
    compile_library(source, out, filename=f"{name}.cu", prelude=prelude, sanitize=sanitize)
    return out


class Lib:
    def __init__(self, path: pathlib.Path):
        self.dll = ctypes.CDLL(str(path))
        self.dll.cuda_emu_take_error.restype = ctypes.c_char_p
        self.dll.cuda_emu_configure.argtypes = [ctypes.c_uint, ctypes.c_int]
        self.dll.cuda_emu_profile_configure.argtypes = [ctypes.c_int, ctypes.c_ulonglong, ctypes.c_int, ctypes.c_int]
        self.dll.cuda_emu_profile_blocks.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint)]
        self.dll.cuda_emu_profile_take.restype = ctypes.c_char_p

    def __call__(self, fn: str, *args):
        conv = [ctypes.c_void_p(a.ctypes.data) if isinstance(a, np.ndarray) else ctypes.c_int(a) for a in args]
        getattr(self.dll, fn)(*conv)
        return self.error()

    def error(self) -> str | None:
        e = self.dll.cuda_emu_take_error()
        return e.decode() if e else None

    def configure(self, seed: int, flags: int):
        self.dll.cuda_emu_configure(seed, flags)

    def buffers(self, outputs: dict | None = None, inputs: dict | None = None, device: bool = False):
        """Name the arrays of the next calls as grader.run.binding does (outputs: race-checked; inputs: no
        kernel may write them; device: they are device memory, which host code may not touch)."""
        arrs = {**(inputs or {}), **(outputs or {})}
        n = len(arrs)
        names = (ctypes.c_char_p * n)(*(k.encode() for k in arrs))
        ptrs = (ctypes.c_ulonglong * n)(*(a.ctypes.data for a in arrs.values()))
        sizes = (ctypes.c_ulonglong * n)(*(a.nbytes for a in arrs.values()))
        self.dll.cuda_emu_set_buffers(n, names, ptrs, sizes)
        self.dll.cuda_emu_set_outputs(
            n,
            names,
            ptrs,
            sizes,
            (ctypes.c_int * n)(*(a.shape[-1] if a.ndim == 2 else 0 for a in arrs.values())),
            (ctypes.c_int * n)(*(int(k in (outputs or {})) | (2 if device else 0) for k in arrs)),
        )


def line_of(source: str, marker: str) -> int:
    """1-based line of the first line containing marker."""
    for i, line in enumerate(source.splitlines(), 1):
        if marker in line:
            return i
    raise AssertionError(marker)


def capture_stdout(fn) -> str:
    """Run fn() and return what it wrote to fd 1 (kernel printf goes to the C stdout)."""
    r, w = os.pipe()
    saved = os.dup(1)
    os.dup2(w, 1)
    try:
        fn()
    finally:
        os.dup2(saved, 1)
        os.close(w)
        os.close(saved)
    with os.fdopen(r) as f:
        return f.read()


def record(lib: Lib, blocks) -> None:
    """The access profile records the next launches: "all" blocks, or the listed (bx, by)."""
    if blocks == "all":
        lib.dll.cuda_emu_profile_configure(2, 1, 8, 0)
        return
    flat = [v for b in blocks for v in (*b, 0)]
    lib.dll.cuda_emu_profile_blocks(len(blocks), (ctypes.c_uint * len(flat))(*flat))
    lib.dll.cuda_emu_profile_configure(3, 1, 8, 0)


def stop_recording(lib: Lib) -> str:
    """What the profile recorded (its text), and recording off."""
    text = lib.dll.cuda_emu_profile_take().decode()
    lib.dll.cuda_emu_profile_configure(0, 1, 8, 0)
    return text
