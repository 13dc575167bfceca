"""The kernel-file contract: which `extern "C"` launchers each exercise defines.

A kernel file is one `.cu` file of plain CUDA C++ (no torch headers). It defines
`__global__` kernels and the launcher(s) below; a launcher launches on the stream
it is given and returns void. Matrices are row-major, contiguous float32.

The mask of the ReLU pair and the fused epilogue: M rows of W = ceil(N/32) uint32 words;
bit (j % 32) of word [i][j/32] is 1 exactly when Y[i][j] > 0; bits past column N
are 0.

This module is the one place the signatures live (which launchers each exercise defines: its
kind, grader.spec.kinds): the toolchain prepends
`declarations()` to a submission so that a launcher with the wrong signature is a
compile error at the learner's own line, and `grader.run.binding` builds its ctypes
calls from `Launcher.params`.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

# C type -> ctypes type. Pointers are passed as raw addresses (c_void_p).
_CTYPES = {
    "const float*": ctypes.c_void_p,
    "float*": ctypes.c_void_p,
    "const uint32_t*": ctypes.c_void_p,
    "uint32_t*": ctypes.c_void_p,
    "int": ctypes.c_int,
    "cudaStream_t": ctypes.c_void_p,
}


@dataclass(frozen=True)
class Launcher:
    name: str
    params: tuple[tuple[str, str], ...]  # (C type, parameter name)
    doc: str

    @property
    def signature(self) -> str:
        args = ", ".join(f"{t} {n}" for t, n in self.params)
        return f"void {self.name}({args})"

    @property
    def argtypes(self) -> list:
        return [_CTYPES[t] for t, _ in self.params]


GEMM = Launcher(
    "gemm",
    (
        ("const float*", "A"),
        ("const float*", "B"),
        ("float*", "C"),
        ("int", "M"),
        ("int", "N"),
        ("int", "K"),
        ("cudaStream_t", "stream"),
    ),
    "C[M x N] = A[M x K] . B[K x N]",
)
RELU_FORWARD = Launcher(
    "relu_forward",
    (
        ("const float*", "X"),
        ("float*", "Y"),
        ("uint32_t*", "mask"),
        ("int", "M"),
        ("int", "N"),
        ("cudaStream_t", "stream"),
    ),
    "Y = max(X, 0); mask bit set where Y > 0",
)
RELU_BACKWARD = Launcher(
    "relu_backward",
    (
        ("const uint32_t*", "mask"),
        ("const float*", "dY"),
        ("float*", "dX"),
        ("int", "M"),
        ("int", "N"),
        ("cudaStream_t", "stream"),
    ),
    "dX = mask bit ? dY : 0",
)
GEMM_RELU = Launcher(
    "gemm_relu",
    (
        ("const float*", "A"),
        ("const float*", "B"),
        ("const float*", "bias"),
        ("float*", "C"),
        ("uint32_t*", "mask"),
        ("int", "M"),
        ("int", "N"),
        ("int", "K"),
        ("cudaStream_t", "stream"),
    ),
    "C = relu(A . B + bias), bias[N] added to every row; mask bit set where C > 0",
)
GEMM_CPU = Launcher(
    "gemm_cpu",
    (("const float*", "A"), ("const float*", "B"), ("float*", "C"), ("int", "M"), ("int", "N"), ("int", "K")),
    "C[M x N] = A[M x K] . B[K x N], on the CPU: plain C++, no kernel, no stream",
)

BIAS_RELU_MASK = Launcher(
    "bias_relu_mask",
    (
        ("const float*", "C"),
        ("const float*", "bias"),
        ("float*", "Y"),
        ("uint32_t*", "mask"),
        ("int", "M"),
        ("int", "N"),
        ("cudaStream_t", "stream"),
    ),
    "Y = relu(C + bias) and its mask: gemm_relu's epilogue as a separate pass over C",
)

# Every launcher of the contract (an exercise's are named by its kind: grader.spec.kinds)
ALL_LAUNCHERS = (GEMM, RELU_FORWARD, RELU_BACKWARD, GEMM_RELU, GEMM_CPU, BIAS_RELU_MASK)

# Kernel files in kernels/ that the grader times against but that are no exercise.
BASELINE_LAUNCHERS: dict[str, tuple[Launcher, ...]] = {
    "bias_relu_pass": (BIAS_RELU_MASK,),
}


def result_keys(launchers: tuple[Launcher, ...]) -> list[tuple[Launcher, str, str]]:
    """(launcher, output, key) of every output of an exercise's launchers, in call order. The key
    names the output in a case's results and references: the output's own name, or, when an earlier
    launcher already has an output of that name (mlp_step's gemm after gemm_relu: both write C),
    "LAUNCHER's NAME"."""
    keys, seen = [], set()
    for launcher in launchers:
        for name in outputs(launcher):
            keys.append((launcher, name, name if name not in seen else f"{launcher.name}'s {name}"))
            seen.add(name)
    return keys


def mask_words(n: int) -> int:
    """uint32 words per mask row: ceil(N / 32)."""
    return (n + 31) // 32


def declarations(launchers: tuple[Launcher, ...]) -> str:
    """C declarations of an exercise's launchers (grader.spec.exercises.declarations), prepended before compiling.

    A learner's definition whose parameter types differ then fails to compile with
    "conflicting declaration" at the learner's own line.
    """
    lines = ["#include <cstdint>"]
    lines += [f'extern "C" {l.signature};' for l in launchers]
    return "\n".join(lines) + "\n"


# Shape of each pointer parameter, by name, in terms of the dimensions M, N, K and
# W = mask_words(N). The binding infers M, N, K from these and checks them; the
# grader allocates outputs from them.
SHAPES: dict[str, tuple[str, ...]] = {
    "A": ("M", "K"),
    "B": ("K", "N"),
    "C": ("M", "N"),
    "bias": ("N",),
    "X": ("M", "N"),
    "Y": ("M", "N"),
    "dY": ("M", "N"),
    "dX": ("M", "N"),
    "mask": ("M", "W"),
}


def tensor_params(launcher: Launcher) -> tuple[tuple[str, str], ...]:
    """(C type, name) of the pointer parameters, in order."""
    return tuple((t, n) for t, n in launcher.params if t.endswith("*"))


def inputs(launcher: Launcher) -> tuple[str, ...]:
    return tuple(n for t, n in tensor_params(launcher) if t.startswith("const "))


def outputs(launcher: Launcher) -> tuple[str, ...]:
    return tuple(n for t, n in tensor_params(launcher) if not t.startswith("const "))


def is_mask(name: str) -> bool:
    return name == "mask"
