"""doctor and the machine problems it names: each simulated (PATH, CXX, monkeypatching) and each with its fix.

A missing or unusable compiler is the machine's problem: `check` exits 2 ("could not grade") with the
fix, `batch` writes a "could not grade" row, and nobody sees a traceback.
"""

import csv
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from grader.course import doctor
from grader.compile import hostcc, toolchain

ROOT = Path(__file__).resolve().parent.parent
REF = ROOT / "kernels" / "01_naive.cu"


def _fake_tool(folder: Path, name: str, version_text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / name
    tool.write_text(f"#!/bin/sh\ncat <<'EOF'\n{version_text}\nEOF\n")
    tool.chmod(0o755)
    return tool


def _grader(args, tmp_path, path: str, **env):
    """python -m grader ARGS in a child with the given PATH (and no $CXX unless given)."""
    e = {k: v for k, v in os.environ.items() if k != "CXX"}
    e.update({"PATH": path, "PYTHONPATH": str(ROOT), "GRADER_CACHE": str(tmp_path / "cache"), **env})
    return subprocess.run(
        [sys.executable, "-m", "grader", *args], capture_output=True, text=True, env=e, cwd=tmp_path, timeout=300
    )


@pytest.fixture(autouse=True)
def _fresh_probe():
    hostcc.probe.cache_clear()
    yield
    hostcc.probe.cache_clear()


def _by_name(found):
    return {f.name: f for f in found}


# ---------------------------------------------------------------------------- no g++, clang, old GCC
def test_check_without_a_compiler_is_could_not_grade_with_the_fix(tmp_path):
    r = _grader(["check", "naive", str(REF), "--backend", "cpu"], tmp_path, path=str(tmp_path / "empty-bin"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "no C++ compiler" in r.stderr and "apt install g++" in r.stderr
    assert "Traceback" not in r.stdout + r.stderr


def test_batch_without_a_compiler_writes_could_not_grade_rows(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.cu").write_text(REF.read_text())
    out = tmp_path / "grades.csv"
    r = _grader(
        ["batch", "naive", str(subs), "--backend", "cpu", "--out", str(out), "--quiet"],
        tmp_path,
        path=str(tmp_path / "empty-bin"),
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    row = next(csv.DictReader(out.open()))
    assert row["outcome"] == "could not grade" and "no C++ compiler" in row["message"]
    assert "internal error" not in row["message"]


def test_check_with_clang_says_it_needs_gcc_not_that_the_kernel_is_wrong(tmp_path):
    clang = _fake_tool(tmp_path / "bin", "clang++", "Ubuntu clang version 17.0.6\nTarget: x86_64-pc-linux-gnu")
    r = _grader(
        ["check", "naive", str(REF), "--backend", "cpu"],
        tmp_path,
        path=f"{clang.parent}:{os.environ['PATH']}",
        CXX="clang++",
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "clang" in r.stderr and "needs GCC" in r.stderr and "CXX=g++" in r.stderr
    assert "unknown argument" not in r.stdout + r.stderr and "does not compile" not in r.stdout


def test_doctor_names_clang_and_old_gcc_and_fails(tmp_path, monkeypatch):
    import grader.compile.cpu.build as build

    clang = _fake_tool(tmp_path / "c", "g++", "Apple clang version 15.0.0 (clang-1500.3.9.4)")
    monkeypatch.setattr(build, "GXX", str(clang))
    f = _by_name(doctor.findings(selftest=False))["g++"]
    assert not f.ok and "clang" in f.fix and "GCC 11" in f.fix

    old = _fake_tool(tmp_path / "o", "g++", "g++ (GCC) 9.4.0\nCopyright (C) 2019 Free Software Foundation, Inc.")
    monkeypatch.setattr(build, "GXX", str(old))
    hostcc.probe.cache_clear()
    found = _by_name(doctor.findings(selftest=False))
    assert not found["g++"].ok and "GCC 9" in found["g++"].fix and "GCC 11 or newer" in found["g++"].fix
    assert not found["backend"].ok  # no GPU here: nothing can build a kernel


def test_doctor_without_g_plus_plus_fails_and_skips_the_selftest(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no g++ anywhere
    monkeypatch.delenv("CXX", raising=False)
    assert doctor.main() == 1
    out = capsys.readouterr().out
    assert "[FAIL] g++" in out and "no C++ compiler" in out and "[FAIL] selftest" in out


def test_gcc_versions_are_read_from_distribution_and_conda_banners(tmp_path):
    for banner, major in (
        ("g++ (Debian 12.2.0-14+deb12u1) 12.2.0", 12),
        ("x86_64-conda-linux-gnu-c++ (conda-forge gcc 13.2.0-7) 13.2.0", 13),
        ("g++ (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0", 11),
    ):
        tool = _fake_tool(tmp_path / str(major), "g++", banner + "\nCopyright (C) Free Software Foundation, Inc.")
        c = hostcc.probe(str(tool))
        assert (c.kind, c.major) == ("gcc", major) and hostcc.problem(c) is None


# ---------------------------------------------------------------------------- macOS
def test_macos_says_what_works_and_what_does_not(monkeypatch):
    monkeypatch.setattr(doctor.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(doctor.platform, "mac_ver", lambda: ("14.5", ("", "", ""), "arm64"))
    f = doctor.check_system(doctor.Machine())
    assert f.warn and "macOS" in f.value
    assert "you can read every notebook" in f.fix and "cannot run kernels" in f.fix and "Colab" in f.fix
    assert "macOS" in hostcc.install_hint()


# ---------------------------------------------------------------------------- a GPU torch cannot use
def test_gpu_listed_but_torch_is_the_cpu_build(tmp_path, monkeypatch):
    smi = _fake_tool(
        tmp_path / "smi",
        "nvidia-smi",
        "GPU 0: Tesla T4 (UUID: GPU-1)\n| NVIDIA-SMI 550.54  Driver Version: 550.54  CUDA Version: 12.4 |",
    )
    monkeypatch.setenv("PATH", f"{smi.parent}:{os.environ['PATH']}")
    torch = types.SimpleNamespace(
        version=types.SimpleNamespace(cuda=None), cuda=types.SimpleNamespace(is_available=lambda: False)
    )
    f = doctor.check_gpu(doctor.Machine(torch=torch))
    assert not f.ok and "torch cannot use it" in f.value and "CUDA 12.4" in f.value
    assert "CPU build" in f.fix and "whl/cu124" in f.fix


def test_gpu_listed_but_the_driver_is_too_old_for_torch(tmp_path, monkeypatch):
    import warnings

    smi = _fake_tool(
        tmp_path / "smi",
        "nvidia-smi",
        "GPU 0: Tesla T4 (UUID: GPU-1)\n| NVIDIA-SMI 535  Driver Version: 535.1  CUDA Version: 12.2 |",
    )
    monkeypatch.setenv("PATH", f"{smi.parent}:{os.environ['PATH']}")

    def unavailable():
        warnings.warn(
            "CUDA initialization: The NVIDIA driver on your system is too old (found version 12020).", stacklevel=2
        )
        return False

    torch = types.SimpleNamespace(
        version=types.SimpleNamespace(cuda="13.0"), cuda=types.SimpleNamespace(is_available=unavailable)
    )
    f = doctor.check_gpu(doctor.Machine(torch=torch))
    assert not f.ok and "Update the NVIDIA driver" in f.fix and "CUDA 13.0" in f.fix and "too old" in f.fix


# ---------------------------------------------------------------------------- nvcc against torch
def test_nvcc_and_torch_cuda_majors_that_differ_fail_on_a_gpu(monkeypatch):
    monkeypatch.setattr(toolchain, "find_nvcc", lambda: "/opt/cuda-12.4/bin/nvcc")
    monkeypatch.setattr(toolchain, "nvcc_version", lambda: "12.4")
    torch = types.SimpleNamespace(version=types.SimpleNamespace(cuda="13.0"))
    f = doctor.check_nvcc(doctor.Machine(torch=torch, gpu=True))
    assert not f.ok and "differ in major version" in f.fix and "CUDA 13 toolkit" in f.fix
    f = doctor.check_nvcc(doctor.Machine(torch=torch, gpu=False))  # no GPU: harmless, said as a warning
    assert f.ok and f.warn


def test_nvcc_newer_than_the_driver_is_a_warning(monkeypatch):
    monkeypatch.setattr(toolchain, "find_nvcc", lambda: "/usr/local/cuda/bin/nvcc")
    monkeypatch.setattr(toolchain, "nvcc_version", lambda: "13.0")
    torch = types.SimpleNamespace(version=types.SimpleNamespace(cuda="13.0"))
    f = doctor.check_nvcc(doctor.Machine(torch=torch, gpu=True, driver_cuda="12.8"))
    assert f.ok and f.warn and "newer than the driver" in f.fix


def test_no_nvcc_without_a_gpu_is_a_warning_naming_what_the_cpu_backend_then_skips(monkeypatch):
    monkeypatch.setattr(toolchain, "find_nvcc", lambda: None)
    monkeypatch.setattr(toolchain, "nvcc_version", lambda: None)
    f = doctor.check_nvcc(doctor.Machine(torch=None, gpu=False))
    assert f.ok and f.warn and "device compile" in f.fix and "CUDA_HOME" in f.fix


def test_no_nvcc_with_a_gpu_fails(monkeypatch):
    monkeypatch.setattr(toolchain, "find_nvcc", lambda: None)
    monkeypatch.setattr(toolchain, "nvcc_version", lambda: None)
    torch = types.SimpleNamespace(version=types.SimpleNamespace(cuda="12.6"))
    f = doctor.check_nvcc(doctor.Machine(torch=torch, gpu=True))
    assert not f.ok and "CUDA 12 toolkit" in f.fix


# ---------------------------------------------------------------------------- ninja
def test_ninja_missing_and_ninja_off_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    monkeypatch.setattr(doctor.sys, "executable", str(venv_bin / "python"))
    f = doctor.check_ninja(doctor.Machine())
    assert f.warn and "pip install ninja" in f.fix
    (venv_bin / "ninja").write_text("")
    f = doctor.check_ninja(doctor.Machine())
    assert f.warn and "not on PATH" in f.value and f"export PATH={venv_bin}" in f.fix


# ---------------------------------------------------------------------------- what a notebook imports
def test_missing_scikit_learn_is_named_with_notebook_08_and_the_fix(monkeypatch):
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "site-packages" not in p])  # no installed packages
    monkeypatch.delitem(sys.modules, "sklearn", raising=False)
    f = _by_name(doctor.findings(selftest=False))["sklearn"]
    assert f.warn and "not installed" in f.value and "notebook 08" in f.fix and "pip install scikit-learn" in f.fix


# ---------------------------------------------------------------------------- the whole path
def test_doctor_builds_and_runs_a_reference_kernel_on_the_cpu_backend(capsys):
    assert doctor.main() == 0
    out = capsys.readouterr().out
    assert "selftest 01_naive.cu built and run on the CPU backend: correct" in out and "ready." in out


# ---------------------------------------------------------------------------- the standard library alone
def test_doctor_runs_without_numpy_or_torch_and_says_what_is_missing(tmp_path):
    """`import grader` must not need them: doctor is what tells a learner they are missing."""
    run = (
        "import runpy, sys\n"
        "sys.modules.update(torch=None, numpy=None)  # import torch / numpy raise ImportError\n"
        "sys.argv = ['grader', 'doctor']\n"
        "runpy.run_module('grader', run_name='__main__', alter_sys=True)\n"
    )
    e = dict(os.environ, PYTHONPATH=str(ROOT), GRADER_CACHE=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, env=e, cwd=tmp_path, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr  # a problem that stops the course
    assert "Traceback" not in r.stderr, r.stderr
    assert "[FAIL] torch    not installed" in r.stdout and "pip install torch" in r.stdout
    assert "[FAIL] selftest" in r.stdout and "[ok  ] g++" in r.stdout  # the other checks still ran


def test_the_package_keeps_its_notebook_names():
    import grader

    assert callable(grader.load) and callable(grader.check) and callable(grader.judge.profile.run)
    assert "naive" in grader.EXERCISES and issubclass(grader.CompileError, grader.GraderError)
    assert grader.spec.exercises.KERNELS_DIR.is_dir()  # the notebooks' `grader.spec.exercises.KERNELS_DIR`
    assert set(grader.__all__) <= set(dir(grader))
    with pytest.raises(AttributeError, match="no_such_name"):
        grader.no_such_name  # noqa: B018


# ---------------------------------------------------------------------------- a cache that cannot be written
@pytest.mark.parametrize("via", ["GRADER_CACHE", "HOME"])
def test_an_unwritable_cache_is_could_not_grade_naming_grader_cache(tmp_path, via):
    blocker = tmp_path / "a-file"  # a folder cannot be made inside a file, not even by root
    blocker.write_text("")
    env = (
        {"GRADER_CACHE": str(blocker / "cache")}
        if via == "GRADER_CACHE"
        else {"GRADER_CACHE": "", "HOME": str(blocker)}
    )
    r = _grader(["check", "naive", str(REF), "--backend", "cpu"], tmp_path, path=os.environ["PATH"], **env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "GRADER_CACHE" in r.stderr and str(blocker) in r.stderr, r.stderr
    d = _grader(["doctor"], tmp_path, path=os.environ["PATH"], **env)
    assert d.returncode == 1 and "[FAIL] cache" in d.stdout and "GRADER_CACHE" in d.stdout, d.stdout + d.stderr
    assert "Traceback" not in d.stderr, d.stderr
