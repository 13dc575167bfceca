"""Exercise kinds: what each family of exercises does, in one place.

A spec (grader/spec/exercises.py) names its kind; everything that differs between families dispatches
through it: the launchers a kernel file defines, the dimensions of a shape, the inputs drawn and their
float64 reference, the family's parts of the hints, what the timed comparison calls beside the kernel,
the access figures counted, and the widgets' hooks. A new rung of a family is one spec; a new family is
one kind more.

    GEMM            C = A . B, one `gemm` launcher (naive ... warptile)
    HOST_GEMM       the same GEMM as plain C++ on the CPU (cpu_blocked)
    RELU_PAIR       ReLU forward writing a 1-bit mask, backward reading it (relu_mask)
    FUSED_EPILOGUE  a GEMM with bias + ReLU + mask in its epilogue (gemm_relu)
    TRAINING_STEP   a training step's launchers, then one MLP step (mlp_step)

Importing this module needs the standard library only (grader.course.doctor runs without torch): the methods
that build tensors import torch and grader.spec.checks when called.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.spec import contract

_MASK_RULE = (
    "bit j % 32 of mask[i][j / 32] (counted from the least significant bit) is 1 exactly when {} > 0; "
    "W = ceil(N / 32) words per row; bits past column N are 0"
)


@dataclass(frozen=True)
class Kind:
    """A GEMM, C = A . B: the base every family starts from."""

    label: str
    launchers: tuple[contract.Launcher, ...]
    # launchers a file may define for the timed comparison only (the correctness check does not call them)
    timing_launchers: tuple[contract.Launcher, ...] = ()
    host: bool = False  # host code: CPU pointers, the CPU backend whatever GPU there is, timed on the CPU
    cublas: bool = True  # the timed comparison includes the library GEMM (cuBLAS, TF32 off)
    linear: bool = True  # C = A B: every timed round's column sums are checked against (1^T A) B
    epilogue: bool = False  # bias + ReLU + mask after the GEMM: cuBLAS's addmm + relu, the C_* access figures
    torch_pair: bool = False  # timed against PyTorch's relu + threshold_backward
    training_step: bool = False  # one MLP step through grader.spec.mlp after the launchers' cases
    mask_of: str | None = None  # the output whose elements the mask's bits describe (widgets.mask_bits)
    read_inputs: str = "A or B"  # the inputs a hint about reads outside them names

    # ---------------------------------------------------------------- shapes
    def dims(self, shape) -> dict[str, int]:
        """The contract's dimensions (M, N, K, and W = mask words per row) of a shape."""
        m, n, k = shape
        return {"M": m, "N": n, "K": k, "W": contract.mask_words(n)}

    def buffer_shapes(self, shape) -> dict[str, tuple[int, int]]:
        """(rows, cols) in elements of each buffer the launchers take (a vector is one row)."""
        dims = self.dims(shape)
        names = {n for l in self.launchers for _, n in contract.tensor_params(l)}
        rows_cols = {n: tuple(dims[d] for d in contract.SHAPES[n]) for n in sorted(names)}
        return {n: (1, s[0]) if len(s) == 1 else s for n, s in rows_cols.items()}

    # ---------------------------------------------------------------- inputs and references
    def random_inputs(self, shape, gen) -> dict:
        """Fresh zero-mean float32 inputs, on the generator's device; A and B differ, so nothing is symmetric."""
        m, n, k = shape
        return {"A": _randn(gen, m, k), "B": _randn(gen, k, n)}

    def special_inputs(self, shape, gen, variant: int) -> tuple[dict, str]:
        """random_inputs, then changed as drawn case number `variant` is: operands scaled by powers of two
        in turn (checks.GEMM_SCALES; bias by their product). Returns (inputs, what changed: "" for unit scale)."""
        from grader.spec import checks

        ins = self.random_inputs(shape, gen)
        ea, eb = checks.GEMM_SCALES[variant % len(checks.GEMM_SCALES)]
        if (ea, eb) == (0, 0):
            return ins, ""
        ins["A"] *= 2.0**ea
        ins["B"] *= 2.0**eb
        if "bias" in ins:
            ins["bias"] *= 2.0 ** (ea + eb)
        return ins, f"A x 2^{ea}, B x 2^{eb}"

    def make_case(self, shape, gen, variant: int | None = None):
        """Fresh random inputs and their float64 reference (a checks.Case). variant: the drawn case's number,
        which may scale the inputs or add special values (special_inputs); None: unit-scale randn."""
        inputs, scale = self.random_inputs(shape, gen), ""
        if variant is not None:
            inputs, scale = self.special_inputs(shape, gen, variant)
        inputs.update(self.extra_inputs(shape, gen))
        case = self.make_case_from(shape, inputs)
        case.scale = scale
        return case

    def extra_inputs(self, shape, gen) -> dict:
        """Inputs the grader makes beside the drawn ones (a mask for a backward)."""
        return {}

    def make_case_from(self, shape, inputs: dict, rows: list[int] | None = None):
        """The float64 reference for `inputs` (only `rows` of the outputs, if given)."""
        from grader.spec import checks

        a64, b64, c, tol, shown = _gemm(shape, inputs, rows)
        return checks.Case(shown, inputs, {"C": c}, {"C": tol})

    # ---------------------------------------------------------------- hints (grader.spec.checks.hint)
    def first_hint(self, mismatches, outputs: set[str]) -> str:
        """A diagnosis that comes before the general ones ("" when none)."""
        return ""

    def backward_hint(self, outputs: set[str]) -> str:
        """When only a backward's output is wrong ("" when the family has none)."""
        return ""

    def contract_hint(self, outputs: set[str]) -> str:
        """The last resort: the family's contract, to compare with."""
        return (
            "Compare your indexing with the spec: C[row][col] = sum_k A[row][k] * B[k][col], "
            "row-major, A is MxK and B is KxN. (Notebook: the exercise's hint 1.)"
        )


@dataclass(frozen=True)
class ReluPair(Kind):
    """relu_forward (Y and its mask) then relu_backward on a mask, over M x N."""

    cublas: bool = False
    linear: bool = False
    torch_pair: bool = True
    mask_of: str | None = "Y"
    read_inputs: str = "X or dY"

    def dims(self, shape) -> dict[str, int]:
        m, n = shape[:2]
        return {"M": m, "N": n, "W": contract.mask_words(n)}

    def random_inputs(self, shape, gen) -> dict:
        import torch

        m, n = shape
        x = _randn(gen, m, n)
        # exact zeros of both signs (about 3 % each): ReLU's mask is x > 0, so a kernel that tests
        # x >= 0 or the sign bit must fail
        r = torch.rand(m, n, generator=gen, device=gen.device)
        x.masked_fill_(r < 0.03, 0.0)  # (not x[r < 0.03] = ...: that synchronises with the host)
        x.masked_fill_((r >= 0.03) & (r < 0.06), -0.0)
        return {"X": x, "dY": _randn(gen, m, n)}

    def special_inputs(self, shape, gen, variant: int) -> tuple[dict, str]:
        """Every other case holds special values: +-inf, +-0, subnormals, values near +-FLT_MAX."""
        from grader.spec import checks

        ins = self.random_inputs(shape, gen)
        if variant % 2 == 0:
            return ins, ""
        for name in ("X", "dY"):
            checks._sprinkle(ins[name], gen, infinite=name == "X")  # a gradient stays finite
        return ins, "X with +-inf, +-0, subnormals and values near +-FLT_MAX"

    def extra_inputs(self, shape, gen) -> dict:
        """The mask relu_backward is given: one the grader made (random bits, 0 past column N), not the one
        relu_forward wrote, so a backward that ignores its mask (recomputing X > 0 from a pointer kept since
        forward) fails; the worker reads forward's outputs before backward runs."""
        from grader.spec import checks

        return {"mask": checks.random_mask(tuple(shape[:2]), gen)}

    def make_case_from(self, shape, inputs: dict, rows: list[int] | None = None):
        import torch

        from grader.spec import checks

        sel = slice(None) if rows is None else rows
        x, dy = inputs["X"][sel].double(), inputs["dY"][sel].double()
        y = x.clamp_min(0)
        # backward's mask: the grader's own (make_case), else the one forward writes (timed rounds)
        n = shape[1]
        keep = checks.unpack_mask(inputs["mask"][sel], n)[:, :n] if "mask" in inputs else y > 0
        expected = {"Y": y, "mask": checks.pack_mask(y > 0), "dX": torch.where(keep, dy, 0.0)}
        return checks.Case((x.shape[0], n), inputs, expected)

    def first_hint(self, mismatches, outputs: set[str]) -> str:
        forward = [m for _, m in mismatches if m.output in ("Y", "mask")]
        if forward and all(m.n_unwritten == m.n_total for m in forward) and "dX" in outputs:
            return (
                "relu_forward wrote nothing: its Y and mask are read as soon as it returns, before relu_backward "
                "runs, so forward must launch its own kernel and write both."
            )
        return ""

    def backward_hint(self, outputs: set[str]) -> str:
        return _backward_hint(outputs, "relu_forward", "X and Y")

    def contract_hint(self, outputs: set[str]) -> str:
        return (
            "Compare with the contract, all row-major: Y[i][j] = max(X[i][j], 0); "
            + _MASK_RULE.format("Y[i][j]")
            + "; relu_backward: dX[i][j] = that bit of the mask it is given ? dY[i][j] : 0."
        )


@dataclass(frozen=True)
class FusedEpilogue(Kind):
    """C = relu(A . B + bias) and its mask, from one kernel."""

    epilogue: bool = True
    linear: bool = False
    mask_of: str | None = "C"
    read_inputs: str = "A, B or bias"

    def random_inputs(self, shape, gen) -> dict:
        return super().random_inputs(shape, gen) | {"bias": _randn(gen, shape[1])}

    def make_case_from(self, shape, inputs: dict, rows: list[int] | None = None):
        from grader.spec import checks

        a64, b64, c, tol, shown = _gemm(shape, inputs, rows)
        bias = inputs["bias"].double()
        pre = c + bias
        tol = tol + 8 * checks.EPS32 * bias.abs()
        either = pre.abs() <= tol  # the sign of A.B + bias is within rounding: 0 or value both fine
        expected = {"C": pre.clamp_min(0), "mask": checks.pack_mask(pre > 0)}
        return checks.Case(shown, inputs, expected, {"C": tol}, {"C": either})

    def contract_hint(self, outputs: set[str]) -> str:
        if outputs == {"mask"}:
            return "C is right, the mask is not: " + _MASK_RULE.format("C[i][j]") + "."
        return (
            "Compare with the spec: C[row][col] = max(sum_k A[row][k] * B[k][col] + bias[col], 0), row-major, "
            "A is MxK, B is KxN, bias has N entries."
        )


@dataclass(frozen=True)
class TrainingStep(FusedEpilogue):
    """gemm_relu forward, relu_backward on its mask, a plain gemm: each launcher checked on its own,
    then one step of a small MLP on them (grader.spec.mlp). Correctness only: nothing times it."""

    epilogue: bool = False
    cublas: bool = False
    training_step: bool = True
    read_inputs: str = "A, B, bias or dY"

    def random_inputs(self, shape, gen) -> dict:
        m, n, _ = shape
        return super().random_inputs(shape, gen) | {"dY": _randn(gen, m, n)}  # relu_backward's, M x N like C

    def extra_inputs(self, shape, gen) -> dict:
        return RELU_PAIR.extra_inputs(shape, gen)

    def make_case_from(self, shape, inputs: dict, rows: list[int] | None = None):
        """Each launcher's own reference: gemm_relu's, relu_backward's, a GEMM's."""
        from grader.spec import checks

        fused = FUSED_EPILOGUE.make_case_from(shape, inputs, rows)
        plain = GEMM.make_case_from(shape, inputs, rows)
        backward = RELU_PAIR.make_case_from(
            shape[:2], {"X": inputs["dY"], "dY": inputs["dY"], "mask": inputs["mask"]}, rows
        )
        key = contract.result_keys(self.launchers)[-1][2]  # "gemm's C"
        return checks.Case(
            fused.shape,
            inputs,
            fused.expected | {"dX": backward.expected["dX"], key: plain.expected["C"]},
            fused.tolerance | {key: plain.tolerance["C"]},
            fused.either,
        )

    def backward_hint(self, outputs: set[str]) -> str:
        return _backward_hint(outputs, "gemm_relu", "gemm_relu's C")

    def contract_hint(self, outputs: set[str]) -> str:
        return super().contract_hint(outputs) if outputs == {"mask"} else Kind.contract_hint(self, outputs)


def _randn(gen, *shape):
    import torch

    return torch.randn(*shape, generator=gen, dtype=torch.float64, device=gen.device).float()


def _gemm(shape, inputs: dict, rows):
    """A . B in float64 (only `rows` of A, if given), each element's tolerance, the shape shown."""
    from grader.spec import checks

    m, n, k = shape
    a64 = inputs["A"][slice(None) if rows is None else rows].double()
    b64 = inputs["B"].double()
    return a64, b64, a64 @ b64, checks.gemm_element_tolerance(a64, b64, k), (a64.shape[0], n, k)


def _backward_hint(outputs: set[str], forward: str, kept: str) -> str:
    if outputs != {"dX"}:
        return ""
    return (
        f"{forward} is right, relu_backward is not: dX[i][j] = dY[i][j] where bit j % 32 of "
        "mask[i][j / 32] is 1, else 0, from the mask it is given. The grader gives backward a mask of its "
        f"own, with {kept} poisoned by then: a backward that recomputes the sign (of dY, or of a value "
        "through a pointer kept since forward) fails."
    )


GEMM = Kind("GEMM", (contract.GEMM,))
HOST_GEMM = Kind("host GEMM", (contract.GEMM_CPU,), host=True)
RELU_PAIR = ReluPair("ReLU pair", (contract.RELU_FORWARD, contract.RELU_BACKWARD))
# `gemm`: the same GEMM without the epilogue, so that the fused kernel is timed against that GEMM
# followed by a separate bias + ReLU + mask pass
FUSED_EPILOGUE = FusedEpilogue("fused epilogue", (contract.GEMM_RELU,), timing_launchers=(contract.GEMM,))
# a hidden layer's forward, its backward on the mask, and the GEMMs of the logits layer and of the
# backward (dX = dZ . W^T, dW = X^T . dZ)
TRAINING_STEP = TrainingStep("training step", (contract.GEMM_RELU, contract.RELU_BACKWARD, contract.GEMM))
KINDS = (GEMM, HOST_GEMM, RELU_PAIR, FUSED_EPILOGUE, TRAINING_STEP)
