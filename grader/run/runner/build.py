"""Build the native runner (runner.cpp) once per backend and toolchain, cached by content hash.

    path = runner_binary("cuda")   # nvcc, for this GPU's architecture; "cpu": g++

The grader builds it in its own process, like a kernel file, and sends it to the worker as bytes
(grader.run.sandbox), which starts it from memory: the sandbox needs no view of the cache.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from pathlib import Path

from grader.errors import CannotGrade
from grader.compile.procs import run_all

SOURCE = Path(__file__).resolve().parent / "runner.cpp"
BUILD_TIMEOUT_S = 300.0
_LOCK = threading.Lock()


def _command(backend: str, out: Path) -> list[str]:
    if backend == "cuda":
        from grader.compile import toolchain

        nvcc = shutil.which("nvcc")
        if not nvcc:
            raise CannotGrade("the grader's runner needs nvcc on a GPU machine, and nvcc is not on PATH")
        # -cudart static: the runner needs only the driver (libcuda) at run time, as the kernel libraries do
        return [
            nvcc,
            f"-arch={toolchain.gpu_arch()}",
            "-O2",
            "-std=c++17",
            "-cudart",
            "static",
            "-DRUNNER_CUDA",
            "-x",
            "cu",
            str(SOURCE),
            "-o",
            str(out),
            "-ldl",
        ]
    from grader.compile.hostcc import command

    return [command(), "-O2", "-std=c++17", "-x", "c++", str(SOURCE), "-o", str(out), "-ldl"]


def runner_binary(backend: str) -> Path:
    """The runner for `backend` ("cuda" or "cpu"), built on first use (about 2 s with nvcc, 1 s with g++)."""
    from grader.compile.toolchain import cache_dir

    probe = _command(backend, Path("OUT"))
    ident = hashlib.sha256(SOURCE.read_bytes() + "\0".join(probe).encode()).hexdigest()[:24]
    if backend == "cuda":
        from grader.compile import toolchain

        ident += "-" + hashlib.sha256(str(toolchain.nvcc_version()).encode()).hexdigest()[:8]
    folder = cache_dir() / "runner" / f"{backend}-{ident}"
    path = folder / "runner"
    with _LOCK:
        if path.is_file():
            return path
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"runner.{os.getpid()}.tmp"
        done = run_all([_command(backend, tmp)], timeout=BUILD_TIMEOUT_S)
        if done is None or done[0][0] != 0:
            log = "timed out" if done is None else done[0][1][-3000:]
            raise CannotGrade(f"could not build the grader's runner ({backend}):\n{log}")
        os.replace(tmp, path)  # atomic: another grader process sees a whole binary or none
    return path
