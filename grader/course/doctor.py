"""`python -m grader doctor`: is this machine ready for the course?

Each check prints one line; each problem comes with its fix. The last check builds a
reference kernel with the CPU backend and runs it, so "ready." means a kernel really
compiled and gave the right answer here. Exits 0 on any working machine, GPU or not
(the CPU backend needs only g++), 1 when something stops the course from working.

The checks are the functions in CHECKS, in order; each reads and adds to a shared
`Machine` and returns its Finding(s). A new check is one function and one entry.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from grader.errors import CannotGrade, GraderError


@dataclass
class Finding:
    name: str
    value: str
    ok: bool = True  # False: a problem that stops the course from working
    fix: str = ""  # shown for problems and warnings
    warn: bool = False  # works, but something is worth knowing


@dataclass
class Machine:
    """What the checks found so far (later checks read what earlier ones learned)."""

    torch: object = None
    gpu: bool = False  # torch can use a GPU
    driver_cuda: str | None = None  # the CUDA version nvidia-smi reports (the driver's)
    nvcc: str | None = None
    compiler_ok: bool = False
    backend: str = "cpu"
    cache_ok: bool = True  # built kernels can be written
    extra: dict = field(default_factory=dict)


def _nvidia_smi() -> tuple[bool, str | None]:
    """(an NVIDIA GPU is listed, the driver's CUDA version) from nvidia-smi; (False, None) without it."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False, None
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20).stdout
        table = subprocess.run([smi], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False, None
    m = re.search(r"CUDA Version:\s*(\d+\.\d+)", table)
    return bool(re.search(r"^GPU \d+", listed, re.M)), (m.group(1) if m else None)


def _major(version: str | None) -> str:
    return (version or "").split(".")[0]


# ---------------------------------------------------------------------------- the checks
def check_python(m: Machine):
    return Finding(
        "python",
        f"{platform.python_version()} ({sys.executable})",
        ok=sys.version_info >= (3, 10),
        fix="Use Python 3.10 or newer.",
    )


def check_torch(m: Machine):
    try:
        import torch
    except ImportError:
        return Finding(
            "torch",
            "not installed",
            ok=False,
            fix="./course.sh lab installs it; by hand: pip install torch (no GPU: pip install torch "
            "--index-url https://download.pytorch.org/whl/cpu, 190 MB instead of 4.5 GB)",
        )
    m.torch = torch
    return Finding("torch", f"{torch.__version__}, built for CUDA {torch.version.cuda or '- (CPU build)'}")


def check_gpu(m: Machine):
    torch = m.torch
    if torch is None:
        return None
    listed, m.driver_cuda = _nvidia_smi()
    with warnings.catch_warnings(record=True) as caught:  # torch explains a driver mismatch in a warning
        warnings.simplefilter("always")
        m.gpu = bool(torch.cuda.is_available())
    if m.gpu:
        props = torch.cuda.get_device_properties(0)
        cc = f"{props.major}.{props.minor}"
        return Finding(
            "GPU",
            f"{props.name}, compute capability {cc}, {props.multi_processor_count} SMs, "
            f"{props.total_memory / 2**30:.0f} GiB",
            ok=(props.major, props.minor) >= (7, 5),
            fix="The course needs compute capability 7.5 (T4) or newer; the CPU backend still works (--backend cpu).",
        )
    if listed:  # a GPU is there, but torch cannot use it
        said = " ".join(" ".join(str(w.message) for w in caught).split())[:300]
        driver = f"the driver supports CUDA {m.driver_cuda}" if m.driver_cuda else "nvidia-smi lists a GPU"
        if not torch.version.cuda:
            fix = (
                "torch is the CPU build. Install a CUDA build for your driver, e.g. pip install --force-reinstall "
                f"torch --index-url https://download.pytorch.org/whl/cu{(m.driver_cuda or '12.6').replace('.', '')}"
                " (pick the cuXXX at or below the driver's CUDA version)."
            )
        else:
            fix = (
                f"torch is built for CUDA {torch.version.cuda}; {driver}. Update the NVIDIA driver to one for "
                f"CUDA {torch.version.cuda}, or install a torch built for the driver's CUDA "
                "(https://download.pytorch.org/whl/cuXXX)." + (f" torch said: {said}" if said else "")
            )
        return Finding("GPU", f"present ({driver}) but torch cannot use it", ok=False, fix=fix)
    return Finding(
        "GPU",
        "none",
        warn=True,
        fix="Fine: kernels run on the CPU backend (correctness, no timing). "
        "On Colab: Runtime > Change runtime type > T4 GPU.",
    )


def check_nvcc(m: Machine):
    from grader.compile import toolchain

    torch_cuda = m.torch.version.cuda if m.torch is not None else None
    nvcc, nv = toolchain.find_nvcc(), toolchain.nvcc_version()
    m.nvcc = nv if nvcc else None
    if not (nvcc and nv):
        return Finding(
            "nvcc",
            "not found",
            ok=not m.gpu,
            warn=not m.gpu,
            fix=(
                f"Install the CUDA {_major(torch_cuda) or ''} toolkit matching torch's CUDA "
                "(conda: cuda-nvcc; apt: cuda-toolkit-XX-Y), or set CUDA_HOME."
            )
            if m.gpu
            else "Not needed without a GPU, but without it the CPU backend cannot run nvcc's device compile "
            "(sm_75), which refuses what g++ accepts (a host function or std::min called in a kernel, over 48 KB "
            "of static shared memory). To have it, install the CUDA toolkit (conda: cuda-nvcc; apt: cuda-toolkit-XX-Y) "
            "or set CUDA_HOME.",
        )
    if m.gpu and torch_cuda and _major(nv) != _major(torch_cuda):
        return Finding(
            "nvcc",
            f"{nv} ({nvcc})",
            ok=False,
            fix=f"nvcc {nv} and torch's CUDA {torch_cuda} differ in major version (notebook 02's "
            f"load_inline refuses that): install the CUDA {_major(torch_cuda)} toolkit and set "
            f"CUDA_HOME to it, or the torch wheel for CUDA {_major(nv)} "
            f"(https://download.pytorch.org/whl/cu{nv.replace('.', '')}).",
        )
    if m.gpu and m.driver_cuda and tuple(map(int, nv.split("."))) > tuple(map(int, m.driver_cuda.split("."))):
        return Finding(
            "nvcc",
            f"{nv} ({nvcc})",
            ok=True,
            warn=True,
            fix=f"nvcc {nv} is newer than the driver's CUDA {m.driver_cuda}: kernels are built for "
            "your GPU's own architecture (no PTX JIT), which usually works; if launches fail with "
            "'unsupported toolchain', update the driver or use a toolkit <= the driver's CUDA.",
        )
    return Finding(
        "nvcc",
        f"{nv} ({nvcc})",
        ok=True,
        warn=bool(torch_cuda and _major(nv) != _major(torch_cuda)),
        fix=f"nvcc {nv} and torch's CUDA {torch_cuda} differ in major version: harmless without a GPU.",
    )


def check_compiler(m: Machine):
    from grader.compile import hostcc

    c = hostcc.current()
    why = hostcc.problem(c)
    m.compiler_ok = why is None
    value = f"{c.version} ({c.path})" if c.path else f"{c.command}: not found"
    return Finding("g++", value, ok=m.compiler_ok, fix=why or "")


def check_ninja(m: Machine):
    ninja = shutil.which("ninja")
    if ninja:
        return Finding("ninja", ninja)
    beside = Path(sys.executable).parent / "ninja"
    if beside.exists():
        return Finding(
            "ninja",
            f"installed in {beside.parent} but not on PATH",
            warn=True,
            fix=f"load_inline (notebook 02) looks on PATH: start with ./course.sh lab (it puts "
            f"{beside.parent} on the kernel's PATH), call grader.course.lab.setup() first, or "
            f"export PATH={beside.parent}:$PATH.",
        )
    return Finding("ninja", "not found", warn=True, fix="Only notebook 02 (load_inline) needs it: pip install ninja.")


def check_scikit_learn(m: Machine):
    if importlib.util.find_spec("sklearn"):
        return Finding("sklearn", "installed (scikit-learn)")
    return Finding(
        "sklearn",
        "not installed (scikit-learn)",
        warn=True,
        fix="Only notebook 08 needs it (its handwritten digits): pip install scikit-learn "
        "(./course.sh lab installs it: the course extra).",
    )


def check_system(m: Machine):
    system = platform.system()
    if system == "Darwin":
        return Finding(
            "system",
            f"macOS {platform.mac_ver()[0]} ({platform.machine()})",
            warn=True,
            fix="On macOS you can read every notebook with its committed H200 outputs and charts and run "
            "notebook 01's Python; you cannot run kernels: there is no CUDA GPU, and the CPU backend "
            "needs GCC on Linux (Apple's g++ is clang). Use Colab (free T4: the notebooks' Open-in-"
            "Colab links), a Linux machine, or a Linux container (docker run -it python:3.11).",
        )
    if system == "Windows":
        return Finding(
            "system",
            f"Windows {platform.release()}",
            ok=False,
            fix="Use WSL2 (Ubuntu: then sudo apt install g++ python3-venv and ./course.sh lab) or Colab.",
        )
    wsl = "microsoft" in platform.release().lower()
    return Finding("system", f"{system} {platform.machine()}" + (" (WSL)" if wsl else ""))


def check_colab(m: Machine):
    colab = "COLAB_RELEASE_TAG" in os.environ or "COLAB_GPU" in os.environ
    return Finding(
        "colab",
        "yes" if colab else "no",
        fix="On Colab keep the preinstalled torch; do not reinstall it." if colab else "",
    )


def check_backend(m: Machine):
    m.backend = "cuda" if m.gpu and m.nvcc else "cpu"
    if m.backend == "cuda":
        return Finding(
            "backend",
            "cuda (GPU: correctness and speed)"
            + ("" if m.compiler_ok else "; the CPU backend is unavailable (see g++)"),
        )
    return Finding(
        "backend",
        "cpu (CPU: correctness only)",
        ok=m.compiler_ok,
        fix="" if m.compiler_ok else "No backend can build kernels: fix g++ above.",
    )


def check_cache(m: Machine):
    from grader.compile import toolchain

    try:
        return Finding("cache", str(toolchain.cache_dir()))
    except CannotGrade as e:
        m.cache_ok = False
        return Finding("cache", "cannot be written", ok=False, fix=str(e))


def check_sandbox(m: Machine):
    """Is the worker sandboxed (grader.run.bwrap), and can it refuse signals to the grader (grader.run.seccomp)?"""
    from grader.run import bwrap, seccomp

    why = seccomp.available()
    filt = "seccomp: no signals or traces to other processes" if not why else f"no seccomp filter ({why})"
    value = f"{bwrap.describe()}; {filt}"
    if bwrap.active():
        return Finding("sandbox", value, warn=bool(why), fix=why)
    fix = (
        f"For untrusted submissions: {bwrap.INSTALL} (then doctor says 'bubblewrap'), or grade in a container or VM"
        if "not installed" in (bwrap.probe() or "not installed")
        else "bubblewrap cannot create namespaces here: allow unprivileged user namespaces (sysctl "
        "kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap on Ubuntu 24.04), or grade in a VM"
    )
    return Finding("sandbox", value, warn=True, fix=fix if bwrap.mode() != "none" else "unset GRADER_SANDBOX")


def check_selftest(m: Machine):
    """Build a reference kernel with the CPU backend and check one product: the whole path works."""
    if m.torch is None or not m.compiler_ok or not m.cache_ok:
        return Finding(
            "selftest",
            "skipped (no torch, no usable g++ or no cache)",
            ok=False,
            fix="Fix the problems above, then run doctor again.",
        )
    from grader.run import binding
    from grader.spec import exercises, kinds

    ex = exercises.of_kind(kinds.GEMM)  # the course's first GEMM
    torch = m.torch
    t0 = time.perf_counter()
    try:
        mod = binding.load(ex.reference_path, ex.name, backend="cpu")
        g = torch.Generator().manual_seed(0)
        A, B = torch.randn(37, 19, generator=g), torch.randn(19, 23, generator=g)
        C = mod.gemm(A, B)
        good = bool(torch.allclose(C.double(), A.double() @ B.double(), atol=1e-4, rtol=1e-4))
    except (GraderError, OSError) as e:
        return Finding(
            "selftest",
            f"{ex.reference} on the CPU backend failed",
            ok=False,
            fix=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
            "(please report it with the output of doctor)",
        )
    took = time.perf_counter() - t0
    return Finding(
        "selftest",
        f"{ex.reference} built and run on the CPU backend: {'correct' if good else 'WRONG'} ({took:.1f} s)",
        ok=good,
        fix="" if good else "The reference kernel gave a wrong product: please report it.",
    )


CHECKS = [
    check_python,
    check_torch,
    check_gpu,
    check_nvcc,
    check_compiler,
    check_ninja,
    check_scikit_learn,
    check_system,
    check_colab,
    check_backend,
    check_cache,
    check_sandbox,
    check_selftest,
]


def findings(selftest: bool = True) -> list[Finding]:
    m, out = Machine(), []
    for check in CHECKS:
        if check is check_selftest and not selftest:
            continue
        try:
            got = check(m)
        except GraderError as e:  # a problem a check runs into (the cache, for the sandbox's paths): said, not raised
            got = Finding(check.__name__.removeprefix("check_"), "could not be checked", ok=False, fix=str(e))
        out.extend(got if isinstance(got, list) else [got] if got else [])
    return out


def main(argv: list[str] | None = None) -> int:
    problems = 0
    for f in findings():
        mark = "ok  " if f.ok and not f.warn else ("warn" if f.ok else "FAIL")
        print(f"[{mark}] {f.name:8} {f.value}", flush=True)
        if (f.warn or not f.ok) and f.fix:
            print(f"       fix: {f.fix}")
        problems += not f.ok
    print("\nready." if not problems else f"\n{problems} problem(s): see the fixes above.")
    return 0 if not problems else 1
