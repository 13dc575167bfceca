"""grader/spec/mlp.py: the layers on a kernel file's launchers, notebook 08's check of a learner's Function,
and the grader's training step (its float64 reference and the parent's verdict on it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import grader
from grader.spec import checks, mlp
from grader.judge import grade
from grader.run import sandbox

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "kernels" / "08_mlp_step.cu"


@pytest.fixture(scope="module")
def k():
    return mlp.Launchers(grader.load(REFERENCE, "mlp_step"))


def _forward(ctx, X, W, b, k, keep):
    Y, mask = k.gemm_relu(X, W, b)
    ctx.save_for_backward(X, W, keep(Y, mask))
    ctx.k = k
    return Y


class SavesY(torch.autograd.Function):
    """Right gradients, but it keeps Y (4 bytes an element) where the mask (1 bit) would do."""

    @staticmethod
    def forward(ctx, X, W, b, k):
        return _forward(ctx, X, W, b, k, lambda Y, mask: Y)

    @staticmethod
    def backward(ctx, dY):
        X, W, Y = ctx.saved_tensors
        dZ = dY * (Y > 0)
        return ctx.k.matmul(dZ, W.t()), ctx.k.matmul(X.t(), dZ), dZ.sum(0), None


class KeepsYOnCtx(mlp.LinearReLU):
    """Saves the right tensors, and Y as well on ctx, where saved_tensors_hooks cannot see it."""

    @staticmethod
    def forward(ctx, X, W, b, k):
        Y = _forward(ctx, X, W, b, k, lambda Y, mask: mask)
        ctx.Y = Y
        return Y


class DWFromDY(mlp.LinearReLU):
    """dW from dY instead of dZ: the ReLU's gradient is skipped."""

    @staticmethod
    def backward(ctx, dY):
        X, W, mask = ctx.saved_tensors
        dZ = ctx.k.relu_backward(mask, dY)
        return ctx.k.matmul(dZ, W.t()), ctx.k.matmul(X.t(), dY), dZ.sum(0), None


def test_the_reference_layer_passes_its_check(k):
    r = mlp.check_function(mlp.LinearReLU, k, seed=1)
    assert r.passed, r.message


@pytest.mark.parametrize(
    "fn,says",
    [
        (SavesY, r"saved an? 37x70 float tensor"),
        (KeepsYOnCtx, r"stores tensors on ctx \(ctx\.Y\)"),
        (DWFromDY, r"dW differs from float64 autograd"),
    ],
)
def test_check_function_catches(k, fn, says):
    import re

    r = mlp.check_function(fn, k, seed=2)
    assert not r.passed and re.search(says, r.message), r.message


def test_a_layer_saves_x_w_and_the_mask_where_nn_relu_saves_y(k):
    """Per ReLU, the mask is 1/32 of what nn.ReLU keeps (N a multiple of 32)."""
    X = torch.randn(40, 24, device=k.device)
    W = torch.randn(24, 64, device=k.device, requires_grad=True)
    b = torch.randn(64, device=k.device, requires_grad=True)
    _, ours = mlp.saved_tensors(mlp.LinearReLU.apply, X, W, b, k)
    assert mlp.unique_bytes(ours) == X.numel() * 4 + W.numel() * 4 + 40 * 2 * 4
    _, relu = mlp.saved_tensors(torch.relu, X @ W + b)
    mask_bytes = 40 * 2 * 4
    assert mlp.unique_bytes(relu) == 32 * mask_bytes


def test_the_mlp_and_its_nn_twin_agree(k):
    model = mlp.MLP(k, (64, 40, 33, 10), seed=3)
    twin = mlp.torch_twin(model)
    X = torch.randn(29, 64, device=k.device)
    assert torch.allclose(model(X), twin(X), atol=1e-4)
    torch.nn.functional.cross_entropy(model(X), torch.arange(29, device=k.device) % 10).backward()
    torch.nn.functional.cross_entropy(twin(X), torch.arange(29, device=k.device) % 10).backward()
    assert torch.allclose(model.weights[0].grad, twin[0].weight.grad.t(), atol=1e-4)
    assert torch.allclose(model.biases[1].grad, twin[2].bias.grad, atol=1e-4)


def test_torch_gemm_option_gives_the_same_gradients(k):
    X = torch.randn(21, 64, device=k.device)
    grads = []
    for launchers in (k, mlp.Launchers(k.mod, torch_gemm=True)):
        model = mlp.MLP(launchers, (64, 35, 35, 10), seed=4)
        torch.nn.functional.cross_entropy(model(X), torch.arange(21, device=k.device) % 10).backward()
        grads.append([p.grad for p in model.parameters()])
    assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(*grads))


def test_the_step_on_the_reference_kernel_matches_float64(k):
    case = mlp.step_case(torch.Generator().manual_seed(5))
    got = mlp.step_outputs(k.mod, case.inputs)
    assert set(got) == set(mlp.STEP_OUTPUTS)
    assert all(checks.compare(case, name, got[name]) is None for name in mlp.STEP_OUTPUTS)
    # sizes are drawn from the seed, odd; the hidden layers are never a tile's multiple
    assert case.shape != mlp.step_case(torch.Generator().manual_seed(6)).shape
    assert all(d % 2 for d in case.shape[:3])


def _step_run(case, outs: dict) -> sandbox.ChildRun:
    meta = {"step": True, "inputs_sha256": case.digests}
    return sandbox.ChildRun(messages=[(meta, {k: v.numpy() for k, v in outs.items()})], returncode=0)


def test_the_step_verdict_fails_a_wrong_gradient_and_a_missing_step(k):
    case = mlp.step_case(torch.Generator().manual_seed(7))
    good = mlp.step_outputs(k.mod, case.inputs)
    res = grade.Result("mlp_step", "cpu", compiled=True, correct=True)
    grade._verdict_step(res, case, _step_run(case, good))
    assert res.correct, res.message
    bad = dict(good, dW2=good["dW2"] * 1.01)
    res = grade.Result("mlp_step", "cpu", compiled=True, correct=True)
    grade._verdict_step(res, case, _step_run(case, bad))
    assert not res.correct and "dW2:" in res.message and "float64 autograd" in res.message and res.hint
    res = grade.Result("mlp_step", "cpu", compiled=True, correct=True)
    grade._verdict_step(res, case, sandbox.ChildRun(returncode=-11))
    assert not res.correct and "crashed (SIGSEGV)" in res.message


def test_digits_come_with_the_wheel_and_train_to_90_percent(k):
    """Notebook 08's CPU run, smaller: a 64 -> 32 -> 32 -> 10 MLP on the kernel's launchers."""
    X, y, Xt, yt = mlp.digits(device=k.device)
    assert X.shape[1] == 64 and len(X) + len(Xt) == 1797 and set(y.tolist()) == set(range(10))
    model = mlp.MLP(k, (64, 32, 32, 10))
    losses = mlp.train(model, X, y, steps=120, batch=64)
    assert losses[-1] < losses[0] / 5
    assert mlp.accuracy(model, Xt, yt) > 0.9


def test_notebook_08_composes_its_kernel_from_notebooks_07_and_06(tmp_path):
    from grader.course import lab

    source, where = lab.mlp_step_source(ROOT / "solutions")
    assert where.startswith("your notebooks 07")
    assert "namespace notebook07" in source and "namespace notebook06" in source
    mod = grader.load(source, "mlp_step")
    dev = mod.device
    A, B, bias = torch.randn(37, 45, device=dev), torch.randn(45, 70, device=dev), torch.randn(70, device=dev)
    C, mask = mod.gemm_relu(A, B, bias)
    assert torch.allclose(C, torch.relu(A @ B + bias), atol=1e-4)
    assert torch.equal(mod.relu_backward(mask, C), C)
    fallback, why = lab.mlp_step_source(tmp_path)  # no notebooks there
    assert fallback == REFERENCE.read_text() and "no gemm_relu kernel cell" in why


def test_kernel_08_is_07_and_06s_relu_backward_verbatim():
    """kernels/08_mlp_step.cu copies its parts (a kernel file is one translation unit): they must stay
    the same as 07's and 06's, so that a change there is made here too."""
    k08 = REFERENCE.read_text()
    from07, from06 = k08.split("// ====")[1:3]
    body07 = "\n".join(from07.splitlines()[1:]).strip()  # after the section's title line
    assert body07 and body07 in (ROOT / "kernels" / "07_gemm_relu.cu").read_text()
    k06 = (ROOT / "kernels" / "06_relu_mask.cu").read_text()
    blocks = [b.strip() for b in "\n".join(from06.splitlines()[1:]).split("\n\n") if b.strip()]
    assert len(blocks) >= 5 and all(b in k06 for b in blocks)
    assert 'extern "C" void relu_forward' not in k08
