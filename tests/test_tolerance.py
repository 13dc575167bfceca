"""The GEMM tolerance separates float32 arithmetic, in any order, from TF32 operands at every K,
the timed size included (a kernel that used TF32 only when K >= 2048 used to pass)."""

import pytest
import torch

from grader.spec import checks, exercises


def _tf32(x: torch.Tensor) -> torch.Tensor:
    """x with its mantissa rounded to TF32's 10 bits (as the tensor cores read float32 operands)."""
    return ((x.view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)


def _sequential(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """C = A B in float32, one product added at a time in k order (the worst usual order)."""
    acc = torch.zeros(a.shape[0], b.shape[1])
    for k in range(a.shape[1]):
        acc = acc + a[:, k : k + 1] * b[k : k + 1, :]
    return acc


@pytest.mark.parametrize("k", [61, 1000, 4096])
def test_float32_passes_and_tf32_fails_at_every_k(k):
    gen = torch.Generator().manual_seed(k)
    shape = (4, 384, k)
    ins = exercises.kind("tiled").random_inputs(shape, gen)
    case = exercises.kind("tiled").make_case_from(shape, ins)
    a, b = ins["A"], ins["B"]
    assert checks.compare(case, "C", _sequential(a, b)) is None
    assert checks.compare(case, "C", a @ b) is None  # a blocked library order
    assert checks.compare(case, "C", _sequential(a.flip(1), b.flip(0))) is None  # reversed K
    mm = checks.compare(case, "C", (_tf32(a).double() @ _tf32(b).double()).float())
    assert mm is not None, f"TF32 operands passed at K = {k}"
