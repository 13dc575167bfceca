"""An MLP whose layers run on a kernel file's launchers (exercise `mlp_step`, notebook 08).

    k = mlp.Launchers(grader.load("kernels/08_mlp_step.cu", "mlp_step"))
    model = mlp.MLP(k, (64, 256, 256, 10))       # hidden layers: LinearReLU; the logits layer: Linear
    loss = F.cross_entropy(model(X), y); loss.backward()

A hidden layer is one torch.autograd.Function, LinearReLU: its forward is the fused `gemm_relu`
(Y = relu(X . W + b) and the 1-bit mask) and it saves X, W and the mask, never Y or the
pre-activation; its backward turns dY into dZ with `relu_backward` on that mask, then dX = dZ . W^T,
dW = X^T . dZ (the file's `gemm`, or torch's with torch_gemm=True) and db = dZ summed over rows.
W is stored in x out (row-major, the kernel's B), not nn.Linear's out x in.

check_function(Fn, k) is notebook 08's local check of a learner's Function; step_case() and
step_outputs() are the grader's end-to-end check of one training step (grader.judge.grade, grader.run.worker).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from grader.spec import checks, contract

# ---------------------------------------------------------------------------- the layers


class Launchers:
    """What a layer calls: the kernel module's gemm_relu and relu_backward, and a matmul that is its
    `gemm` on contiguous operands (transposes are made contiguous with torch), or torch's `@` when
    torch_gemm is True (the fused forward and relu_backward stay the kernel's)."""

    def __init__(self, mod, torch_gemm: bool = False):
        self.mod, self.torch_gemm = mod, torch_gemm
        self.device = mod.device
        # while a dict (grader.course.training.measure_training, on a GPU): each launcher call's CUDA events, by launcher
        self.events: dict[str, list] | None = None

    def _call(self, name: str, *args):
        if self.events is None:
            return getattr(self.mod, name)(*args)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = getattr(self.mod, name)(*args)
        end.record()
        self.events.setdefault(name, []).append((start, end))
        return out

    def gemm_relu(self, X, W, b):
        return self._call(contract.GEMM_RELU.name, X.contiguous(), W.contiguous(), b.contiguous())

    def relu_backward(self, mask, dY):
        return self._call(contract.RELU_BACKWARD.name, mask, dY.contiguous())

    def matmul(self, A, B):
        return A @ B if self.torch_gemm else self._call("gemm", A.contiguous(), B.contiguous())

    def __repr__(self) -> str:
        return f"<Launchers of {self.mod!r}{', torch GEMMs' if self.torch_gemm else ''}>"


class LinearReLU(torch.autograd.Function):
    """Y = relu(X . W + b) with the kernel's fused gemm_relu; backward reads the 1-bit mask."""

    @staticmethod
    def forward(ctx, X, W, b, k: Launchers):
        Y, mask = k.gemm_relu(X, W, b)
        ctx.save_for_backward(X, W, mask)  # not Y: the mask is 1/32 of its bytes
        ctx.k = k
        return Y

    @staticmethod
    def backward(ctx, dY):
        X, W, mask = ctx.saved_tensors
        dZ = ctx.k.relu_backward(mask, dY)
        dX = ctx.k.matmul(dZ, W.t()) if ctx.needs_input_grad[0] else None
        dW = ctx.k.matmul(X.t(), dZ)
        return dX, dW, dZ.sum(0), None


class Linear(torch.autograd.Function):
    """The logits layer: Y = X . W + b (no ReLU), its GEMMs the kernel's `gemm` (or torch's)."""

    @staticmethod
    def forward(ctx, X, W, b, k: Launchers):
        ctx.save_for_backward(X, W)
        ctx.k = k
        return k.matmul(X, W) + b

    @staticmethod
    def backward(ctx, dY):
        X, W = ctx.saved_tensors
        dX = ctx.k.matmul(dY, W.t()) if ctx.needs_input_grad[0] else None
        return dX, ctx.k.matmul(X.t(), dY), dY.sum(0), None


class MLP(torch.nn.Module):
    """sizes = (in, hidden..., out): hidden layers `layer` (LinearReLU or a learner's Function of the
    same signature, apply(X, W, b, k)), then a Linear logits layer. nn.Linear's initialisation."""

    def __init__(self, k: Launchers, sizes=(64, 256, 256, 10), layer=LinearReLU, seed: int = 0):
        super().__init__()
        self.k, self.layer = k, layer
        gen = torch.Generator().manual_seed(seed)
        self.weights = torch.nn.ParameterList()
        self.biases = torch.nn.ParameterList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            bound = 1 / math.sqrt(fan_in)
            self.weights.append(
                torch.nn.Parameter(((torch.rand(fan_in, fan_out, generator=gen) * 2 - 1) * bound).to(k.device))
            )
            self.biases.append(torch.nn.Parameter(((torch.rand(fan_out, generator=gen) * 2 - 1) * bound).to(k.device)))

    def forward(self, X):
        h = X
        for i, (W, b) in enumerate(zip(self.weights, self.biases)):
            last = i == len(self.weights) - 1
            h = (Linear if last else self.layer).apply(h, W, b, self.k)
        return h


def torch_twin(model: MLP) -> torch.nn.Sequential:
    """The same MLP built from nn.Linear + nn.ReLU, with a copy of `model`'s weights (nn.Linear
    stores W as out x in: the transpose)."""
    layers = []
    for i, (W, b) in enumerate(zip(model.weights, model.biases)):
        lin = torch.nn.Linear(W.shape[0], W.shape[1], device=W.device)
        with torch.no_grad():
            lin.weight.copy_(W.t())
            lin.bias.copy_(b)
        layers += [lin] + ([torch.nn.ReLU()] if i < len(model.weights) - 1 else [])
    return torch.nn.Sequential(*layers)


# ---------------------------------------------------------------------------- what backward keeps


def saved_tensors(fn, *args) -> tuple[object, list[torch.Tensor]]:
    """Run fn(*args) and return (its result, every tensor autograd saved for backward while it ran),
    seen with torch.autograd.graph.saved_tensors_hooks."""
    saved = []

    def pack(t):
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*args)
    return out, saved


def unique_bytes(tensors) -> int:
    """Bytes of the distinct storages among `tensors` (nn.ReLU's Y is also the next nn.Linear's X)."""
    storages = {}
    for t in tensors:
        s = t.untyped_storage()
        storages[s.data_ptr()] = s.nbytes()
    return sum(storages.values())


def saved_bytes(model: "MLP", X, y) -> dict[str, dict[str, int]]:
    """What backward keeps, for `model` and its nn.Linear + nn.ReLU twin: {name: {"one ReLU": bytes the
    first hidden layer keeps for its ReLU's backward (LinearReLU's mask, nn.ReLU's Y), "activations":
    distinct bytes the whole forward and loss save, parameters left out}}. Runs on any backend."""
    twin = torch_twin(model)
    W, b = model.weights[0], model.biases[0]
    _, ours = saved_tensors(model.layer.apply, X, W, b, model.k)
    _, theirs = saved_tensors(twin[1], twin[0](X))
    out = {}
    mask = [t for t in ours if t.dtype == torch.int32]
    for name, m, relu in (("yours", model, mask), ("nn.Linear + nn.ReLU", twin, theirs)):
        params = {p.untyped_storage().data_ptr() for p in m.parameters()}
        _, saved = saved_tensors(lambda m=m: F.cross_entropy(m(X), y))
        acts = [t for t in saved if t.untyped_storage().data_ptr() not in params]
        out[name] = {"one ReLU": unique_bytes(relu), "activations": unique_bytes(acts)}
    return out


# ---------------------------------------------------------------------------- notebook 08's local check


@dataclass
class FunctionCheck:
    passed: bool
    message: str

    def __repr__(self) -> str:
        return f"{'PASSED' if self.passed else 'FAILED'}: {self.message}"


CHECK_SHAPES = ((37, 45, 70), (1, 1, 1), (130, 33, 97))  # (rows of X, in, out): odd, one tile and several
GRAD_RTOL = 1e-4  # of the largest |reference| of each gradient: float32 GEMMs at these sizes are ~1e-6 off


def _tensors_on(ctx) -> list[str]:
    """Attributes of a Function's ctx that hold tensors (kept alive outside save_for_backward)."""
    found = []
    for name, value in vars(ctx).items():
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, torch.Tensor) for v in values):
            found.append(name)
    return found


def check_function(fn, k: Launchers, seed: int | None = None) -> FunctionCheck:
    """Check a Function like LinearReLU (fn.apply(X, W, b, k) -> Y) on fresh random inputs of odd shapes:
    its Y against float64 relu(X . W + b), its gradients dX, dW, db against float64 autograd, and what
    it saved for backward: exactly X, W and the mask (the bytes of X + W + M x ceil(N/32) words),
    through save_for_backward. Prints and returns the verdict."""
    gen = torch.Generator().manual_seed(seed if seed is not None else int(torch.randint(1 << 62, (1,))))
    result = FunctionCheck(True, "")
    for m, kin, n in CHECK_SHAPES:
        problem = _check_one(fn, k, m, kin, n, gen)
        if problem:
            result = FunctionCheck(False, f"at X {m}x{kin}, W {kin}x{n}: {problem}")
            break
    else:
        result.message = (
            f"forward, dX, dW and db match float64 autograd at {len(CHECK_SHAPES)} shapes; "
            "backward keeps X, W and the mask only (no M x N tensor)"
        )
    print(result)
    return result


def _check_one(fn, k: Launchers, m: int, kin: int, n: int, gen) -> str:
    X64 = torch.randn(m, kin, generator=gen, dtype=torch.float64)
    W64 = torch.randn(kin, n, generator=gen, dtype=torch.float64) / math.sqrt(kin)
    b64 = torch.randn(n, generator=gen, dtype=torch.float64)
    dY64 = torch.randn(m, n, generator=gen, dtype=torch.float64)
    pre = X64 @ W64 + b64
    near = pre.abs() <= 64 * checks.EPS32 * math.sqrt(kin) * (X64.abs() @ W64.abs() + b64.abs())
    X, W, b = (t.float().to(k.device).requires_grad_() for t in (X64, W64, b64))
    try:
        Y, saved = saved_tensors(fn.apply, X, W, b, k)
        if not isinstance(Y, torch.Tensor) or Y.shape != (m, n):
            return f"forward returned {type(Y).__name__} {tuple(getattr(Y, 'shape', ()))}, not Y of {m}x{n}"
        Y.backward(dY64.float().to(k.device))
    except Exception as e:  # the learner's code: say what failed, in their terms
        return f"calling it failed: {type(e).__name__}: {e}"
    on_ctx = _tensors_on(Y.grad_fn) if Y.grad_fn is not None else []
    if on_ctx:
        return (
            f"forward stores tensors on ctx ({', '.join('ctx.' + a for a in on_ctx)}): save what backward needs "
            "with ctx.save_for_backward(X, W, mask), which autograd manages (and counts)"
        )
    want = X.numel() * 4 + W.numel() * 4 + m * ((n + 31) // 32) * 4
    got = unique_bytes(saved)
    own = {X.untyped_storage().data_ptr(), W.untyped_storage().data_ptr()}
    big = [
        t
        for t in saved
        if t.dtype.is_floating_point and t.numel() == m * n and t.untyped_storage().data_ptr() not in own
    ]
    if big:
        return (
            f"forward saved an {m}x{n} float tensor (Y or the pre-activation, {4 * m * n} bytes) for backward: "
            "save the mask instead and let relu_backward apply it"
        )
    if got != want:
        shapes = ", ".join(f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}" for t in saved) or "nothing"
        return (
            f"forward saved {got} bytes for backward ({shapes}); X, W and the mask are {want} bytes: "
            "ctx.save_for_backward(X, W, mask), nothing else"
        )
    ref_X, ref_W, ref_b = (t.clone().requires_grad_() for t in (X64, W64, b64))
    ref = torch.relu(ref_X @ ref_W + ref_b)
    ref.backward(dY64)
    keep = ~near  # elements whose sign float32 may get either way are left out (they are rare)
    y_err = (Y.detach().cpu().double() - ref.detach())[keep].abs().max().item() if keep.any() else 0.0
    if y_err > GRAD_RTOL * max(ref.abs().max().item(), 1e-30):
        return f"Y differs from relu(X . W + b) by up to {y_err:.3g}"
    if near.any():  # a gradient through an ambiguous element may differ: draw again instead of comparing
        return _check_one(fn, k, m, kin, n, gen)
    for name, got_g, ref_g in (("dX", X.grad, ref_X.grad), ("dW", W.grad, ref_W.grad), ("db", b.grad, ref_b.grad)):
        if got_g is None:
            return f"backward returned no {name}"
        err = (got_g.detach().cpu().double() - ref_g).abs().max().item()
        if not math.isfinite(err) or err > GRAD_RTOL * max(ref_g.abs().max().item(), 1e-30):
            return (
                f"{name} differs from float64 autograd by up to {err:.3g} (largest |{name}| "
                f"{ref_g.abs().max().item():.3g}); " + _GRAD_HINTS[name]
            )
    return ""


_GRAD_HINTS = {
    "dX": "dX = dZ . W^T, with dZ = relu_backward(mask, dY) (M x in)",
    "dW": "dW = X^T . dZ, with dZ = relu_backward(mask, dY) (in x N)",
    "db": "db = dZ summed over the rows (dim 0), with dZ = relu_backward(mask, dY), not dY",
}


# ---------------------------------------------------------------------------- the grader's training step


STEP_OUTPUTS = ("loss", "dW1", "db1", "dW2", "db2", "dW3", "db3")


def step_case(gen: torch.Generator) -> checks.Case:
    """One training step of a 2-hidden-layer MLP on fresh inputs from `gen` (sizes drawn too, odd), with
    its float64 autograd reference: the loss (cross-entropy, mean) and every weight and bias gradient.
    Inputs are drawn again while any pre-activation lies within 4x the GEMM tolerance of 0, where
    float32 and float64 may take different sides of the ReLU."""
    odd = lambda lo, hi: int(torch.randint(lo // 2, hi // 2, (1,), generator=gen)) * 2 + 1
    batch, d_in, hidden, classes = odd(17, 97), odd(17, 80), odd(17, 80), 10
    for _ in range(100):
        ins = {
            "X": torch.randn(batch, d_in, generator=gen, dtype=torch.float64).float(),
            "labels": torch.randint(classes, (batch,), generator=gen, dtype=torch.int32),
        }
        for i, (a, b) in enumerate(((d_in, hidden), (hidden, hidden), (hidden, classes)), start=1):
            ins[f"W{i}"] = (torch.randn(a, b, generator=gen, dtype=torch.float64) / math.sqrt(a)).float()
            ins[f"b{i}"] = (torch.randn(b, generator=gen, dtype=torch.float64) * 0.5).float()
        expected, ambiguous = _reference_step(ins)
        if not ambiguous:
            break
    shape = (batch, d_in, hidden, classes)
    tol = {k: torch.full_like(v, GRAD_RTOL * max(v.abs().max().item(), 1e-30)) for k, v in expected.items()}
    return checks.Case(shape, ins, expected, tol)


def _reference_step(ins: dict) -> tuple[dict[str, torch.Tensor], bool]:
    """float64 autograd of the step; also whether a pre-activation is too close to 0 to tell."""
    params = {k: v.double().requires_grad_() for k, v in ins.items() if k[0] in "Wb"}
    h, ambiguous = ins["X"].double(), False
    for i in (1, 2, 3):
        W, b = params[f"W{i}"], params[f"b{i}"]
        z = h @ W + b
        if i < 3:
            margin = 4 * checks.gemm_tolerance(h.detach().abs() @ W.detach().abs() + b.detach().abs(), W.shape[0])
            ambiguous |= bool((z.detach().abs() <= margin).any())
            z = torch.relu(z)
        h = z
    loss = F.cross_entropy(h, ins["labels"].long())
    loss.backward()
    out = {"loss": loss.detach().reshape(1)}
    out |= {f"d{k}": p.grad for k, p in params.items()}
    return {k: out[k] for k in STEP_OUTPUTS}, ambiguous


def step_outputs(mod, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The worker's side: one step through LinearReLU / Linear on `mod`'s launchers (gemm_relu,
    relu_backward, gemm), float32 on the module's device; the loss and the gradients, on the CPU."""
    k = Launchers(mod)
    dev = mod.device
    params = {n: inputs[n].to(dev).clone().requires_grad_() for n in ("W1", "b1", "W2", "b2", "W3", "b3")}
    h = inputs["X"].to(dev)
    for i in (1, 2):
        h = LinearReLU.apply(h, params[f"W{i}"], params[f"b{i}"], k)
    logits = Linear.apply(h, params["W3"], params["b3"], k)
    loss = F.cross_entropy(logits, inputs["labels"].to(dev).long())
    loss.backward()
    out = {"loss": loss.detach().reshape(1)} | {f"d{n}": p.grad for n, p in params.items()}
    return {n: out[n].detach().float().cpu() for n in STEP_OUTPUTS}


# ---------------------------------------------------------------------------- data and training


def digits(test_fraction: float = 0.2, seed: int = 0, device="cpu"):
    """scikit-learn's bundled handwritten digits (1797 images of 8x8 = 64 pixels, 10 classes; in the
    wheel, nothing downloaded), standardised with the training split's statistics.
    Returns X_train, y_train, X_test, y_test (float32 and int64 tensors)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ImportError("notebook 08 trains on scikit-learn's digits: pip install scikit-learn") from None
    data = load_digits()
    X = torch.tensor(data.data, dtype=torch.float32)
    y = torch.tensor(data.target, dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_test = int(len(y) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    mean, std = X[train].mean(0), X[train].std(0) + 1e-3  # some border pixels are always 0
    X = (X - mean) / std
    return tuple(t.to(device) for t in (X[train], y[train], X[test], y[test]))


def train(
    model: torch.nn.Module, X, y, steps: int, batch: int = 128, lr: float = 1e-2, seed: int = 0, on_step=None
) -> list[float]:
    """Adam on random batches; the loss of each step; on_step(step, losses) after each one."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    losses = []
    for step in range(steps):
        idx = torch.randint(len(y), (batch,), generator=gen).to(y.device)
        loss = F.cross_entropy(model(X[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if on_step:
            on_step(step, losses)
    return losses


@torch.no_grad()
def accuracy(model: torch.nn.Module, X, y) -> float:
    """Share of rows of X whose largest logit is the label."""
    return (model(X).argmax(1) == y).float().mean().item()


# notebook 08's runs on digits: a GPU trains the larger MLP; the CPU backend (each launch emulated on the
# host) a smaller one in about 8 s on a 2-core machine
DIGITS_GPU = {"hidden": 256, "steps": 600, "batch": 128}
DIGITS_CPU = {"hidden": 32, "steps": 150, "batch": 64}


def train_digits(
    k: Launchers, hidden: int, steps: int, batch: int, layer=LinearReLU, on_step=None, seed: int = 0
) -> dict:
    """Train a 64 -> hidden -> hidden -> 10 MLP on digits(); the model, its losses, test accuracy, seconds."""
    import time

    X, y, X_test, y_test = digits(device=k.device)
    model = MLP(k, (64, hidden, hidden, 10), layer=layer, seed=seed)
    t0 = time.perf_counter()
    losses = train(model, X, y, steps, batch=batch, seed=seed, on_step=on_step)
    return {
        "model": model,
        "losses": losses,
        "test_accuracy": accuracy(model, X_test, y_test),
        "seconds": time.perf_counter() - t0,
        "sizes": [64, hidden, hidden, 10],
        "steps": steps,
        "batch": batch,
    }
