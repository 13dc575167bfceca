"""Correctness: inputs, float64 references, and comparisons with hints.

Everything here runs in the grading (parent) process on CPU tensors; the kernel
runs elsewhere (grader.run.worker) and only its outputs come back.

Tolerance for a GEMM element: |got - ref| <= 16 * eps32 * sqrt(K) * sqrt((A^2 @ B^2)[i, j]) (plus
K of float32's smallest denormal). The rounding errors of a float32 sum of K products are a random
walk whose steps scale with the partial sums: on these zero-mean inputs even the sequential order stays
under 0.09 of the bound at K = 61 ... 4096, while TF32 operands (10-bit mantissas, 2^-11 of each product)
exceed it 10x at K = 4096 and 75x at K = 61 (bf16 more). The older bound, 8 eps32 sqrt(K) (|A| @ |B|),
grows like K sqrt(K) and let TF32 through from K ~ 2000 on: a kernel that used it only at the timed size
passed (tests/test_tolerance.py). Sums of rows (the timed rounds' column sums) keep that bound
(gemm_tolerance): it adds up over rows.

Some drawn cases (make_case's `variant`) scale A and B by powers of two (exact, so the bound, relative
to A^2 B^2, holds as it is), and some ReLU cases hold the values a ReLU may meet beyond randn: +-inf,
+-0, subnormals and values near +-FLT_MAX (Y = x where x > 0, inf included; else 0). X never holds
NaN: what ReLU makes of it is left undefined (fmaxf(NaN, 0) is 0, x < 0 ? 0 : x is NaN).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

import numpy as np
import torch

from grader.spec import contract, shapes

EPS32 = float(np.finfo(np.float32).eps)
FLT_TRUE_MIN = float(np.finfo(np.float32).smallest_subnormal)
POISON_MASK = -1  # all bits set: an unwritten mask word shows (bits past N must be 0)
POISON_BITS = 0x7FCADBAD  # a quiet NaN with a payload of ours: "never written", not a computed NaN
# What the worker puts around each input (grader.run.worker guard zones): a kernel that reads past an
# input computes with this NaN; on a CPU the payload survives the arithmetic and shows in the output.
INPUT_GUARD_BITS = {torch.float32: 0x7FC0FFEE, torch.int32: 0x5A5A5A5A}
# What the CPU backend leaves in an uninitialised local (grader/compile/cpu/build.py: -ftrivial-auto-var-init=pattern)
UNINIT_FLOAT = struct.unpack("<f", struct.pack("<I", 0xFEFEFEFE))[0]  # -1.69e38
# (A's, B's) power-of-two scale per drawn case, in turn: tiny A (a kernel that skips |a| < 1e-6 gives 0),
# tiny B, both tiny and both large (products 2^-80 and 2^80: still normal floats, no overflow over any K)
GEMM_SCALES = ((0, 0), (-24, 24), (24, -24), (-40, -40), (40, 40))
FLT_MAX = float(np.finfo(np.float32).max)


def poison_float32(shape, device="cpu") -> torch.Tensor:
    """A float32 tensor of POISON_BITS NaNs (outputs are filled so before each call)."""
    return torch.full(shape, POISON_BITS, dtype=torch.int32, device=device).view(torch.float32)


@dataclass
class Case:
    """One call of the kernel: its inputs, and what the outputs must be."""

    shape: tuple[int, ...]
    inputs: dict[str, torch.Tensor]  # float32 / int32 CPU tensors handed to the kernel
    expected: dict[str, torch.Tensor]  # float64 (values) or int32 (masks)
    tolerance: dict[str, torch.Tensor] = field(default_factory=dict)  # per-element bound
    either: dict[str, torch.Tensor] = field(default_factory=dict)  # ambiguous ReLU elements
    scale: str = ""  # how the inputs differ from unit-scale randn ("" when they do not), for messages

    @property
    def digests(self) -> dict[str, str]:
        """sha256 of each input's bytes as the parent holds them (the worker sends its own after the call)."""
        if "_digests" not in self.__dict__:
            import hashlib

            self.__dict__["_digests"] = {
                k: hashlib.sha256(v.contiguous().numpy().tobytes()).hexdigest() for k, v in self.inputs.items()
            }
        return self.__dict__["_digests"]


@dataclass
class Mismatch:
    output: str
    n_wrong: int
    n_total: int
    n_unwritten: int
    examples: list[tuple[tuple[int, ...], float, float]]  # (index, got, expected)
    rows_wrong: list[int]
    cols_wrong: list[int]
    n_oob_read: int = 0  # elements computed from a value read outside the inputs (CPU backend)
    note: str = ""  # a mask-specific diagnosis, used as the hint
    scale: str = ""  # the case's inputs, when not unit-scale (Case.scale)

    def describe(self, shape) -> str:
        dims = "x".join(map(str, shape))
        what, poison = (
            ("words", f"the poison 0x{POISON_MASK & 0xFFFFFFFF:08X}, not NaN: a mask holds integers")
            if contract.is_mask(self.output)
            else ("elements", "the NaN poison")
        )
        lines = [
            f"{self.output}: {self.n_wrong} of {self.n_total} {what} wrong at shape {dims}"
            + (f" ({self.n_unwritten} never written: still {poison})" if self.n_unwritten else "")
            + (f" ({self.n_oob_read} computed from values read outside the inputs)" if self.n_oob_read else "")
            + (f" (inputs: {self.scale})" if self.scale else "")
        ]
        for idx, got, exp in self.examples:
            lines.append(f"  {self.output}{list(idx)}: got {_fmt(got)}, expected {_fmt(exp)}")
        return "\n".join(lines)


def _fmt(x: float) -> str:
    return f"0x{int(x) & 0xFFFFFFFF:08x}" if isinstance(x, (int, np.integer)) else f"{x:.6g}"


# ---------------------------------------------------------------------------- inputs
# (an exercise's inputs and float64 reference come from its kind: grader.spec.kinds.Kind.make_case)
def _sprinkle(x: torch.Tensor, gen: torch.Generator, infinite: bool) -> None:
    """Put special values into about a fifth of x (in place): near +-FLT_MAX, subnormals, and +-inf."""
    r = torch.rand(x.shape, generator=gen, device=x.device)
    big = FLT_MAX * (0.5 + 0.5 * torch.rand(x.shape, generator=gen, device=x.device))
    tiny = torch.rand(x.shape, generator=gen, device=x.device) * 2.0**-127  # below the smallest normal
    for lo, values in ((0.80, big), (0.84, -big), (0.88, tiny), (0.92, -tiny)):
        x.copy_(torch.where((r >= lo) & (r < lo + 0.04), values.float(), x))
    if infinite:
        x.masked_fill_(r >= 0.96, float("inf"))
        x.masked_fill_((r >= 0.98), float("-inf"))


def gemm_tolerance(abs_product: torch.Tensor, k: int) -> torch.Tensor:
    """How far a float32 GEMM result may be from float64, in any summation order: 8 eps32 sqrt(K)
    times |A| |B| (abs_product; for a sum of C's rows, the same sum of |A| |B|'s rows)."""
    return 8 * EPS32 * max(k, 1) ** 0.5 * abs_product


def gemm_element_tolerance(a64: torch.Tensor, b64: torch.Tensor, k: int) -> torch.Tensor:
    """How far each element of a float32 GEMM of A (rows) and B may be from float64 (the module's doc)."""
    return 16 * EPS32 * max(k, 1) ** 0.5 * ((a64 * a64) @ (b64 * b64)).sqrt() + max(k, 1) * FLT_TRUE_MIN


def random_mask(shape: tuple[int, int], gen: torch.Generator) -> torch.Tensor:
    """A valid mask of random bits for an M x N matrix (about half set; bits past N are 0)."""
    m, n = shape
    return pack_mask(torch.rand(m, n, generator=gen, device=gen.device) < 0.5)


def pack_mask(bits: torch.Tensor) -> torch.Tensor:
    """[M, N] bool -> [M, ceil(N/32)] int32 words, bit j%32 of word j/32 (the contract).
    Runs on the device `bits` lives on."""
    m, n = bits.shape
    w = contract.mask_words(n)
    padded = torch.zeros(m, w * 32, dtype=torch.int64, device=bits.device)
    padded[:, :n] = bits.to(torch.int64)
    weights = 1 << torch.arange(32, dtype=torch.int64, device=bits.device)
    words = (padded.view(m, w, 32) * weights).sum(-1)
    return torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)  # same bits, signed


def unpack_mask(words: torch.Tensor, n: int) -> torch.Tensor:
    """[M, W] int32 words -> [M, W*32] bool."""
    w64 = words.to(torch.int64) & 0xFFFFFFFF
    bits = (w64.unsqueeze(-1) >> torch.arange(32, dtype=torch.int64, device=words.device)) & 1
    return bits.view(words.shape[0], -1).bool()


# ---------------------------------------------------------------------------- compare
def compare(case: Case, name: str, got: torch.Tensor) -> Mismatch | None:
    """None when `got` matches; else what is wrong. NaN never passes, nor inf where the reference is finite."""
    exp = case.expected[name]
    if tuple(got.shape) != tuple(exp.shape):
        return Mismatch(name, exp.numel(), exp.numel(), 0, [], [], [])
    if contract.is_mask(name):
        n = case.shape[1]
        got_bits, exp_bits = unpack_mask(got, n), unpack_mask(exp, n)
        wrong = got_bits != exp_bits
        if "C" in case.either:  # ambiguous ReLU elements may go either way
            amb = torch.zeros_like(wrong)
            amb[:, :n] = case.either["C"]
            wrong &= ~amb
        if not wrong.any():
            return None
        wrong_words = wrong.view(got.shape[0], -1, 32).any(-1)
        unwritten = int((wrong_words & (got == POISON_MASK)).sum())
        mm = _mismatch(name, wrong_words, got, exp, unwritten)
        mm.note = _mask_note(case, got, wrong, wrong_words)
        return mm
    poison = oob_read = 0
    if got.dtype == torch.float32:  # our poison, or a plain float('nan') fill; not a computed NaN
        bits = got.contiguous().view(torch.int32)
        poison = int(((bits == POISON_BITS) | (bits == 0x7FC00000)).sum())
        oob_read = int((bits == INPUT_GUARD_BITS[torch.float32]).sum())
    got64 = got.double()
    finite = torch.isfinite(got64)
    if name in case.tolerance:
        err = (got64 - exp).abs()
        ok = (finite & (err <= case.tolerance[name])) | (got64 == exp)
    else:
        ok = got64 == exp  # inf where the reference is inf (ReLU of inf)
    if name in case.either:
        ok |= finite & case.either[name] & ((got64 == 0) | ((got64 - exp).abs() <= case.tolerance[name] * 2))
    if bool(ok.all()):
        return None
    mm = _mismatch(name, ~ok, got64, exp, poison, oob_read)
    mm.scale = case.scale
    if not poison:
        mm.note = _value_note(case, name, got64, finite, ~ok)
    return mm


# ---------------------------------------------------------------------------- diagnoses (the ReLU epilogue)
def _bit_reversed(words: torch.Tensor) -> torch.Tensor:
    """Each 32-bit word with its bit order reversed (bit 0 <-> bit 31)."""
    w = words.to(torch.int64) & 0xFFFFFFFF
    out = torch.zeros_like(w)
    for b in range(32):
        out |= ((w >> b) & 1) << (31 - b)
    return torch.where(out >= 2**31, out - 2**32, out).to(torch.int32)


def _pre_activation(case: Case, bias: str = "col") -> torch.Tensor | None:
    """gemm_relu's A.B (+ bias added per column, per row, or not at all), float64; None elsewhere."""
    if not {"A", "B", "bias"} <= set(case.inputs):
        return None
    pre = case.inputs["A"].double() @ case.inputs["B"].double()
    b = case.inputs["bias"].double()
    if bias == "col":
        pre = pre + b
    elif bias == "row":
        if pre.shape[0] > b.shape[0]:
            return None
        pre = pre + b[: pre.shape[0], None]
    return pre


def _mask_note(case: Case, got: torch.Tensor, wrong: torch.Tensor, wrong_words: torch.Tensor) -> str:
    """Why a mask is wrong, when the pattern says so (else "")."""
    n = case.shape[1]
    exp = case.expected["mask"]
    poison = f"0x{POISON_MASK & 0xFFFFFFFF:08X}"
    written = got != POISON_MASK
    if not wrong[:, :n].any():  # every word was written; only bits past column N are set
        return f"Bits past column N must be 0: the last word of each row covers columns up to {n - 1} only."
    got_bits = unpack_mask(got, n)[:, :n]
    if bool(got_bits.all()) and not bool(unpack_mask(exp, n)[:, :n].all()):
        return (
            f"Every mask bit is set: either the words were never written (the mask's poison is {poison}, all "
            "ones, not NaN: a mask holds integers), or the test is Y >= 0; the bit is Y > 0, and after the "
            "ReLU every value is >= 0, so >= sets them all. (Notebook: the exercise's hint 2.)"
        )
    if bool(written.any()) and torch.equal(_bit_reversed(got)[written], exp[written]) and n > 1:
        return (
            "The mask's bit order is reversed: column j is bit j % 32 of word j / 32, counted from the least "
            "significant bit (bit 0 = the first column of the word = lane 0 of __ballot_sync), not bit 31 - j % 32. (Notebook: the exercise's hint 1.)"
        )
    x = case.inputs.get("X")
    if x is not None and x.shape[0] == wrong.shape[0] and bool((x[wrong[:, :n]] == 0).all()):
        return (
            "The mask is wrong only where X is 0.0 or -0.0: ReLU's mask bit is x > 0, "
            "so 0 and -0 give 0 (not x >= 0, not the sign bit). (Notebook 06: the exercise's hint 2.)"
        )
    no_bias = _pre_activation(case, bias="none")
    if no_bias is not None and bool(written.all()):
        if torch.equal(got, pack_mask(no_bias > 0)):
            return (
                "The mask is that of A.B without the bias: the bit is (A.B + bias)[i][j] > 0, with bias[j] "
                "added before the test."
            )
    rows = wrong_words.any(dim=1).nonzero().flatten()
    if len(rows) and int(rows[0]) > 0 and bool((got[wrong_words] == 0).all()) and bool(written.all()):
        return (
            "Whole mask words were overwritten with 0, never in the first row: a warp whose word index is W "
            "or more (W = ceil(N / 32) words per row) stored into the next row's first words. Store only "
            "when word < W. (Notebook: the exercise's hint 2, the edges.)"
        )
    return ""


def _value_note(case: Case, name: str, got64: torch.Tensor, finite: torch.Tensor, wrong: torch.Tensor) -> str:
    """Why Y, dX or gemm_relu's C is wrong, when the pattern says so (else "")."""
    x = case.inputs.get("X")
    if name == "Y" and x is not None and x.shape == wrong.shape:
        extreme = ~torch.isfinite(x) | (x.abs() > FLT_MAX / 4)
        if bool(extreme[wrong].all()):
            return (
                "Y is wrong only where X is +-inf or near +-FLT_MAX: arithmetic such as 0.5f * (x + fabsf(x)) "
                "overflows there (x + x is inf) or gives -inf + inf = NaN. Compute max(x, 0) by a comparison: "
                "x > 0.0f ? x : 0.0f (or fmaxf(x, 0.0f))."
            )

    def close(ref: torch.Tensor) -> bool:
        tol = case.tolerance.get(name)
        return bool(finite.all()) and bool(((got64 - ref).abs() <= (tol * 2 if tol is not None else 0)).all())

    if name == "C" and "bias" in case.inputs:
        pre = _pre_activation(case)
        if close(_pre_activation(case, "none").clamp_min(0)):
            return "C is relu(A.B) without the bias: add bias[col] to every row before the ReLU."
        row = _pre_activation(case, "row")
        if row is not None and close(row.clamp_min(0)):
            return "The bias is added by row: bias has N entries, one per column; add bias[col], not bias[row]."
        if close(pre):
            return "C is A.B + bias without the ReLU: store max(value, 0)."
    if name == "Y" and "X" in case.inputs and close(case.inputs["X"].double()):
        return "Y equals X: the ReLU is missing (Y = max(X, 0))."
    if name == "dX" and "mask" in case.inputs:
        dy, n = case.inputs["dY"].double(), case.shape[1]
        reversed_order = torch.where(unpack_mask(_bit_reversed(case.inputs["mask"]), n)[:, :n], dy, 0.0)
        if close(reversed_order) and not close(torch.zeros_like(dy)):  # not merely all zero
            return (
                "relu_backward reads the mask's bits in reverse order: column j is bit j % 32 of word j / 32, "
                "counted from the least significant bit."
            )
    return ""


def _mismatch(name, wrong: torch.Tensor, got, exp, unwritten: int, oob_read: int = 0) -> Mismatch:
    idx = wrong.nonzero()
    examples = [(tuple(int(i) for i in ix), got[tuple(ix)].item(), exp[tuple(ix)].item()) for ix in idx[:3]]
    rows = wrong.any(dim=1).nonzero().flatten().tolist() if wrong.dim() == 2 else []
    cols = wrong.any(dim=0).nonzero().flatten().tolist() if wrong.dim() == 2 else []
    return Mismatch(name, int(wrong.sum()), wrong.numel(), unwritten, examples, rows, cols, oob_read)


def separating_condition(failed: list[tuple[int, ...]], passed: list[tuple[int, ...]]) -> str:
    """A simple condition on one dimension that holds at every failed shape and at no passed one
    ("K > 97", "N is a multiple of 32", "M is not a multiple of 8"), or ""."""
    failed, passed = sorted(set(map(tuple, failed))), sorted(set(map(tuple, passed)))
    if len(passed) < 3 or not failed:  # too few shapes right for a pattern to mean anything
        return ""
    for i, name in enumerate(shapes.dim_names(failed[0])):
        for m in reversed(shapes.MODULI):  # the largest modulus that tells them apart says the most
            if all(s[i] % m == 0 for s in failed) and all(s[i] % m for s in passed):
                return f"{name} is a multiple of {m}"
        for m in shapes.MODULI:
            if all(s[i] % m for s in failed) and all(s[i] % m == 0 for s in passed):
                return f"{name} is not a multiple of {m}"
        if min(s[i] for s in failed) > max(s[i] for s in passed):
            return f"{name} > {max(s[i] for s in passed)}"
    return ""


def _launch_limit_hint(error: str, shape) -> str:
    """A hint for a launch past a GPU's limits: rows on gridDim.y, a block size taken from the matrix."""
    if re.search(r"invalid (launch )?configuration", error) and len(shape) >= 2 and shape[0] > 65535:
        return (
            f"The launch failed at M = {shape[0]}: gridDim.y and gridDim.z are at most 65535 (gridDim.x up to "
            "2^31 - 1), so one block row per row of the matrix cannot launch past 65535 rows. Cover rows with "
            "blockDim.y as well, put the long dimension on gridDim.x, or cap gridDim.y and loop over rows "
            "(row += gridDim.y * blockDim.y)."
        )
    if re.search(r"invalid (launch )?configuration.*at most 1024 threads", error):
        return (
            "A block has at most 1024 threads, so a block size taken from the matrix (one thread per column, "
            f"blockDim.x = N) cannot launch at {'x'.join(map(str, shape))}. Fix the block size (16 x 16, 32 x 32) "
            "and cover the matrix with the grid: col = blockIdx.x * blockDim.x + threadIdx.x, "
            "gridDim.x = ceil(N / blockDim.x)."
        )
    return ""


def error_hint(error: str, shape) -> str:
    """A hint for a launch that failed outright: a write outside an output, a misaligned vector access."""
    where = shapes.alignment(shape)
    at = (
        f" At {'x'.join(map(str, shape))}, {where}: a path chosen for aligned sizes must check the others."
        if where
        else ""
    )
    limit = _launch_limit_hint(error, shape)
    if limit:
        return limit
    same = re.search(
        r"shared-memory race on .*?: thread .*? writes it at (\S+), but thread .*? wrote it at (\S+) ", error
    )
    if same and same.group(1) == same.group(2):
        return (
            f"Two threads store the same shared element at one line ({same.group(1)}): a barrier cannot order "
            "that, the index maps two threads to one element (and leaves another unwritten). Check that the "
            "store's index is different for every thread of the block, e.g. As[threadIdx.y][threadIdx.x]."
        )
    if re.search(r"global-memory race on mask\[", error):
        return (
            "Several threads update one mask word: each lane owns one bit of it, so a plain |= loses bits and "
            "atomicAdd would add, not set them. Build the word once per warp with __ballot_sync(0xffffffff, "
            "y > 0) and let one lane store it, or set each bit with atomicOr (on a word zeroed before the launch)."
        )
    if m := re.search(r"wrote (?:past the end|before the start) of (\w+)", error):
        buf = m.group(1)
        if contract.is_mask(buf):
            return (
                "A store outside the mask: each row has W = ceil(N / 32) words, so a warp whose word index is W "
                "or more (all its columns past N) must not store (word < W), nor any row >= M." + at
            )
        if buf in ("Y", "dX"):
            return (
                "An out-of-bounds write: every store of Y and dX needs row < M and col < N (or, flattened, "
                "i < M * N), in every path, including one for aligned sizes whose last block runs past the end." + at
            )
        return (
            "An out-of-bounds write: the bounds test must keep every thread whose row or column lies "
            "outside the matrix from storing (row < M, col < N)." + at
        )
    if m := re.search(r"out-of-bounds read of (\w+)", error):
        if m.group(1) in ("X", "dY", "mask"):
            return (
                "An out-of-bounds read: every load of X and dY (and of the mask's words) needs row < M and col < N "
                "(or, flattened, i < M * N), in every path, including one for aligned sizes whose last block runs "
                "past the end, and even where the value is not used." + at
            )
        return (
            "An out-of-bounds read: check that each index uses the right dimension (A is M x K: A[row * K + k]; "
            "B is K x N: B[k * N + col]) and that a bounds test comes before every load, even one whose value is "
            "thrown away (a tile load needs row < M and col < N beside k < K; read bias[col] only for col < N)." + at
        )
    if "wrote to its input" in error:
        return (
            "Only the output(s) may be written, even if the kernel puts the input back afterwards. Look for a "
            "store through a const_cast pointer, or an index that runs past the output into another buffer."
        )
    if "the launcher's host code" in error or "copied host memory into" in error:
        return (
            "Host code cannot compute the outputs: the launch's buffers are device memory, which the launcher "
            "may only hand to kernels (and cudaMemcpy/cudaMemset). Launch a kernel that computes them."
        )
    if "misaligned address" in error:
        return (
            "A vector access (float2/float4, or an 8- or 16-byte __pipeline_memcpy_async) needs an address "
            "aligned to its size: a row of a row-major "
            "matrix starts 16-byte aligned only when its length is a multiple of 4 (rows of A: K % 4 == 0; "
            "of B, C, X: N % 4 == 0). Test the dimension that sets the row length." + at
        )
    return ""


def hint(mismatches: list[tuple[tuple[int, ...], Mismatch]], passed_shapes: list[tuple[int, ...]], kind=None) -> str:
    """One hint for a learner, from the pattern of what went wrong across shapes (every wrong
    output of every wrong input in `mismatches`), in the terms of the exercise's kind (a
    grader.spec.kinds.Kind, which supplies its family's parts; None: only the general ones)."""
    if not mismatches:
        return ""
    outputs = {m.output for _, m in mismatches}
    if kind is not None and (first := kind.first_hint(mismatches, outputs)):
        return first
    notes = [m.note for _, m in mismatches if m.note]
    if notes:  # the diagnosis most inputs agree on (one odd shape must not decide)
        return max(notes, key=notes.count)
    if kind is not None and (backward := kind.backward_hint(outputs)):
        return backward
    read_inputs = kind.read_inputs if kind is not None else "the inputs"
    found = _values_hint(mismatches, passed_shapes) or _shapes_hint(mismatches, passed_shapes, read_inputs)
    found = found or _elements_hint(mismatches)
    return found or (kind.contract_hint(outputs) if kind is not None else "")


def _values_hint(mismatches, passed_shapes) -> str:
    """What the wrong values themselves say: a wrong shape, an uninitialised local, inputs' scale."""
    mm = mismatches[0][1]
    if mm.examples == [] and mm.n_wrong == mm.n_total:
        return "The output has the wrong shape."
    uninit = [g for _, m in mismatches for _, g, _ in m.examples if isinstance(g, float)]
    if uninit and all(abs(g - UNINIT_FLOAT) <= 1e-3 * abs(UNINIT_FLOAT) for g in uninit):
        return (
            f"The wrong values are about {UNINIT_FLOAT:.3g}: the CPU backend fills a local variable that is read "
            "before it is written with that pattern (on a GPU it holds whatever was there). Initialise the "
            "accumulator (float sum = 0.0f) and every local before its first use."
        )
    if passed_shapes and all(m.scale for _, m in mismatches):
        return (
            f"Wrong only on the inputs that are not unit-scale randn ({mismatches[0][1].scale}), right on the "
            "others: a correct result scales with its inputs exactly. Look for a test on values (skipping "
            "products with |a| < some epsilon, a clamp, a constant that assumes values near 1) or arithmetic "
            "that overflows."
        )
    return ""


def _shapes_hint(mismatches, passed_shapes, read_inputs: str) -> str:
    """What the shapes that failed, and the elements never written or read outside, say."""
    shape = mismatches[0][0]
    square_ok = passed_shapes and all(len(set(s)) == 1 for s in passed_shapes)
    if len(shape) == 3 and square_ok and all(len(set(s)) > 1 for s, _ in mismatches):
        return (
            "Right on square shapes, wrong on non-square ones: an index uses the wrong "
            "dimension (M, N or K; e.g. A[row * K + k], B[k * N + col]). (Notebook: the exercise's hint 1.)"
        )
    split = separating_condition([s for s, _ in mismatches], passed_shapes)
    if split:
        return (
            f"Wrong exactly at the shapes where {split}, right at all the others: look at what your code "
            "does differently there (a special path for aligned sizes, a fixed-size array, a loop bound)."
        )
    if any(m.n_oob_read for _, m in mismatches):
        return (
            f"Some results were computed from values read outside {read_inputs} (the grader surrounds each "
            "input with marker values): a load reads past the matrix. Check the bounds test on every "
            "load, and load 0 for elements outside. (Notebook: the exercise's hint 2, the edges.)"
        )
    partial = next(((s, m) for s, m in mismatches if 0 < m.n_unwritten < m.n_total), None)
    if partial:
        what = (
            (f"mask words were never written (still 0x{POISON_MASK & 0xFFFFFFFF:08X}, the mask's poison; not NaN)")
            if contract.is_mask(partial[1].output)
            else "elements were never written (still NaN)"
        )
        return (
            f"Some {what}: round the grid up (ceil-divide the sizes by the "
            "block size) and check that the bounds test does not skip valid elements. (Notebook: the exercise's hint 2.)"
        )
    if all(m.n_unwritten == m.n_total for _, m in mismatches):
        return (
            "Nothing was written: does the launcher launch the kernel (on the given stream), "
            "and does the grid cover the matrix?"
        )
    return ""


def _elements_hint(mismatches) -> str:
    """What the wrong elements of one input say: K = 1, values close to right, only the last rows."""
    shape, mm = mismatches[0]
    if mm.n_unwritten == mm.n_total:
        shape, mm = next((s, m) for s, m in mismatches if m.n_unwritten < m.n_total)
    rows_total, cols_total = shape[0], shape[1] if len(shape) > 1 else 1
    if len(shape) == 3 and shape[2] == 1 and all(g == 0 for _, g, _ in mm.examples):
        return (
            "Wrong even with K = 1 (a single product), where the result is 0: does the loop over k "
            "run over all K terms (for k = 0; k < K)?"
        )
    rel = [abs(g - e) / max(abs(e), 1e-30) for _, g, e in mm.examples if isinstance(g, float)]
    if rel and max(rel) < 3e-2 and mm.n_unwritten == 0 and not contract.is_mask(mm.output):
        return (
            "The results are close but not close enough for float32 (relative error about "
            f"{max(rel):.0e}): is something rounded to half, bfloat16 or TF32, or accumulated in reduced "
            "precision? Accumulate in float32."
        )
    tail_rows = mm.rows_wrong and min(mm.rows_wrong) > 0 and max(mm.rows_wrong) == rows_total - 1
    tail_cols = mm.cols_wrong and min(mm.cols_wrong) > 0 and max(mm.cols_wrong) == cols_total - 1
    if (tail_rows and len(mm.rows_wrong) < rows_total) or (tail_cols and len(mm.cols_wrong) < cols_total):
        return (
            "Only the last rows/columns are wrong: look at the bounds checks and at partial tiles "
            "(load zeros for elements outside the matrix). (Notebook: the exercise's hint 2, the edges.)"
        )
    return ""
