"""`python -m grader doctor`: is this machine ready for the course?

Each check prints one line; each problem comes with its fix in one line. Exits 0
on any working machine, GPU or not (the CPU backend needs only g++).
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass


@dataclass
class Finding:
    name: str
    value: str
    ok: bool = True          # False: a problem that stops the course from working
    fix: str = ""            # one line; shown for problems and warnings
    warn: bool = False       # works, but something is worth knowing


def _gxx_version() -> str | None:
    gxx = shutil.which("g++") or shutil.which("c++")
    if not gxx:
        return None
    try:
        return subprocess.run([gxx, "--version"], capture_output=True, text=True, timeout=10).stdout.splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return None


def findings() -> list[Finding]:
    from . import toolchain

    out = [Finding("python", f"{platform.python_version()} ({sys.executable})",
                   ok=sys.version_info >= (3, 10), fix="Use Python 3.10 or newer.")]
    try:
        import torch
    except ImportError:
        return out + [Finding("torch", "not installed", ok=False,
                              fix="pip install torch (CPU-only machine: pip install torch --index-url "
                                  "https://download.pytorch.org/whl/cpu)")]
    cuda_torch = torch.version.cuda
    out.append(Finding("torch", f"{torch.__version__}, built for CUDA {cuda_torch or '- (CPU build)'}"))
    gpu = torch.cuda.is_available()
    if gpu:
        props = torch.cuda.get_device_properties(0)
        cc = f"{props.major}.{props.minor}"
        out.append(Finding("GPU", f"{props.name}, compute capability {cc}, {props.multi_processor_count} SMs, "
                                  f"{props.total_memory / 2**30:.0f} GiB", ok=(props.major, props.minor) >= (7, 5),
                           fix="The course needs compute capability 7.5 (T4) or newer."))
    else:
        out.append(Finding("GPU", "none visible to torch", warn=True,
                           fix="Fine: kernels run on the CPU backend (correctness, no timing). "
                               "On Colab: Runtime > Change runtime type > T4 GPU."))

    nvcc, nv = toolchain.find_nvcc(), toolchain.nvcc_version()
    if nvcc and nv:
        match = not cuda_torch or nv.split(".")[0] == cuda_torch.split(".")[0]
        out.append(Finding("nvcc", f"{nv} ({nvcc})", ok=match or not gpu, warn=not match,
                           fix=f"nvcc {nv} and torch's CUDA {cuda_torch} differ in major version: install "
                               f"the CUDA {cuda_torch.split('.')[0] if cuda_torch else ''} toolkit or the "
                               "matching torch wheel."))
    else:
        out.append(Finding("nvcc", "not found", ok=not gpu, warn=not gpu,
                           fix="Install the CUDA toolkit matching torch's CUDA version (conda: cuda-nvcc), "
                               "or set CUDA_HOME." if gpu else "Not needed without a GPU."))

    gxx = _gxx_version()
    out.append(Finding("g++", gxx or "not found", ok=bool(gxx),
                       fix="Install a C++ compiler: apt install g++ (macOS: xcode-select --install)."))
    ninja = shutil.which("ninja")
    out.append(Finding("ninja", ninja or "not found", warn=not ninja,
                       fix="Only notebook 02 (load_inline) needs it: pip install ninja."))
    colab = "COLAB_RELEASE_TAG" in os.environ or "COLAB_GPU" in os.environ
    out.append(Finding("colab", "yes" if colab else "no",
                       fix="On Colab keep the preinstalled torch; do not reinstall it." if colab else ""))
    backend = "cuda" if gpu and nvcc else "cpu"
    out.append(Finding("backend", f"{backend} ({'GPU: correctness and speed' if backend == 'cuda' else 'CPU: correctness only'})"))
    cache = toolchain.cache_dir()
    out.append(Finding("cache", str(cache)))
    return out


def main(argv: list[str] | None = None) -> int:
    problems = 0
    for f in findings():
        mark = "ok  " if f.ok and not f.warn else ("warn" if f.ok else "FAIL")
        print(f"[{mark}] {f.name:8} {f.value}")
        if (f.warn or not f.ok) and f.fix:
            print(f"       fix: {f.fix}")
        problems += not f.ok
    print("\nready." if not problems else f"\n{problems} problem(s): see the fixes above.")
    return 0 if not problems else 1
