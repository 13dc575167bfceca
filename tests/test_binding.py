"""Loading kernel files and calling their launchers as torch ops (CPU backend here)."""

import os

import pytest
import torch

import grader
from grader import LauncherError, SubmissionError

KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")

NAIVE = os.path.join(KERNELS, "01_naive.cu")


def test_gemm_op_matches_float64_on_a_non_square_shape():
    mod = grader.load(NAIVE, "naive", backend="cpu")
    a, b = torch.randn(17, 65), torch.randn(65, 33)
    c = mod.gemm(a, b)
    assert c.shape == (17, 33)
    assert torch.allclose(c.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-5)


def test_raw_launcher_writes_into_given_output():
    mod = grader.load(NAIVE, "naive", backend="cpu")
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    c = torch.full((5, 3), float("nan"))
    mod.launch.gemm(a, b, c)
    assert torch.allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_shape_and_dtype_errors_name_the_argument():
    mod = grader.load(NAIVE, "naive", backend="cpu")
    with pytest.raises(ValueError, match="K=7"):
        mod.gemm(torch.randn(5, 7), torch.randn(6, 3))
    with pytest.raises(TypeError, match="B must be a contiguous torch.float32"):
        mod.gemm(torch.randn(5, 7), torch.randn(7, 3, dtype=torch.float64))


def test_source_text_works_like_a_path():
    src = open(NAIVE).read()
    mod = grader.load(src, "naive", backend="cpu")
    assert mod.gemm(torch.ones(2, 3), torch.ones(3, 4)).sum().item() == 24


def test_misspelt_launcher_is_named_with_the_fix():
    src = open(NAIVE).read().replace('extern "C" void gemm(', 'extern "C" void Gemm(')
    with pytest.raises(LauncherError, match=r"launcher `gemm` not found"):
        grader.load(src, "naive", backend="cpu")


def test_empty_and_binary_files_are_refused_clearly(tmp_path):
    empty = tmp_path / "empty.cu"
    empty.write_text("  \n")
    with pytest.raises(SubmissionError, match="empty"):
        grader.load(empty, "naive", backend="cpu")
    binary = tmp_path / "bin.cu"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe")
    with pytest.raises(SubmissionError, match="not a UTF-8 text file"):
        grader.load(binary, "naive", backend="cpu")


def test_kernel_printf_reaches_python_stdout(capsys):
    src = (
        open(NAIVE)
        .read()
        .replace(
            "if (cRow < M && cCol < N) {",
            'if (cRow == 0 && cCol == 0) printf("hello from thread 0\\n");\n    if (cRow < M && cCol < N) {',
        )
    )
    src = "#include <cstdio>\n" + src
    mod = grader.load(src, "naive", backend="cpu")
    mod.gemm(torch.ones(2, 2), torch.ones(2, 2))
    assert "hello from thread 0" in capsys.readouterr().out


def test_a_launcher_that_ignores_its_stream_fails_on_the_cpu_backend():
    """The launchers get a stream of their own (not the default one): a launch elsewhere is reported."""
    from grader.errors import KernelError

    src = open(NAIVE).read()
    assert src.count(", 0, stream>>>") == 1
    mod = grader.load(src.replace(", 0, stream>>>", ">>>"), "naive", backend="cpu")
    with pytest.raises(
        KernelError,
        match=r"launches kernel \w+ on the default stream \(0\) at cell\.cu:\d+, but the "
        r"launcher's stream is stream 0x",
    ):
        mod.gemm(torch.ones(2, 3), torch.ones(3, 4))
    assert grader.load(src, "naive", backend="cpu").gemm(torch.ones(2, 3), torch.ones(3, 4)).sum().item() == 24
