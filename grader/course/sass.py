"""A kernel file's machine code (SASS): its FFMAs, the register bank of each source operand, the
operand reuse cache's hits and the bank conflicts left.

    report = grader.course.sass.ffma_report(SOURCE, "register_blocked", arch="sm_90")   # prints a table
    print(report.listing())                                                    # the main loop, annotated

No GPU is needed: `nvcc -cubin` compiles the device code alone (the grader's flags and contract
prelude, so the SASS is the one the grader runs), and `nvdisasm -g` prints it with the kernel file's
own line numbers (`cuobjdump -sass` shows the same instructions; it runs nvdisasm itself). nvdisasm
comes with the CUDA toolkit, or from PyPI as `nvidia-cuda-nvdisasm`.

The model (what ptxas's flags and published measurements support; NVIDIA documents neither):
- Register banks (bank_model): Maxwell has 4 banks, bank = register % 4, and two source registers in one
  bank conflict (maxas SGEMM wiki; Pascal assumed the same). Volta and Turing have two 64-bit banks, bank
  = register % 2, and an FFMA conflicts when all three of its register-file reads are in one bank (Jia et
  al. 2018, 2019; on a Turing RTX 2070, sjfeng1999/gpu-arch-microbenchmark measured FFMA CPI 3.52 with
  three source registers in one bank, 2.97 with two, 2.94 when one of the three came from the reuse
  cache). For Ampere and later nothing is published: the Volta/Turing model is assumed.
- The reuse cache: a `.reuse` flag on a source operand keeps that register for its operand slot
  (a, b or c); a later instruction that reads it in the same slot gets it from the cache instead of
  the register file. Each slot holds two registers (maxas: 8 bytes per slot); a read without the
  flag uses the entry up. In every kernel of kernels/ compiled for sm_75, sm_80 and sm_90, each flag
  ptxas set is followed by exactly one read this model serves (tests/test_sass.py checks it).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from grader.compile import toolchain
from grader.errors import CannotGrade, CompileError
from grader.compile.procs import run_all

REUSE_SLOTS = 2  # registers per operand slot in the reuse cache
SLOTS = "abc"  # FFMA d, a, b, c: d = a * b + c
NVDISASM_HINT = (
    "install the CUDA toolkit's nvdisasm (`pip install nvidia-cuda-nvdisasm`, 5 MB) or set NVDISASM to its path"
)


@dataclass(frozen=True)
class BankModel:
    banks: int
    reads_per_bank: int  # register-file reads one bank gives one instruction without a stall
    source: str  # where the numbers come from


MAXWELL = BankModel(4, 1, "Maxwell: 4 banks, register % 4 (maxas SGEMM wiki; Pascal assumed the same)")
VOLTA = BankModel(2, 2, "Volta/Turing: 2 banks, register % 2 (Jia et al. 2018, 2019)")
ASSUMED = BankModel(2, 2, "assumed: Volta/Turing's 2 banks, register % 2 (nothing published for sm_80+)")


def bank_model(arch: str) -> BankModel:
    """The bank model for 'sm_75', 'sm_90a', ..."""
    m = re.fullmatch(r"sm_(\d+)[af]?", arch)
    if not m:
        raise ValueError(f"not an architecture: {arch!r} (give e.g. 'sm_90')")
    sm = int(m.group(1))
    return MAXWELL if sm < 70 else VOLTA if sm < 80 else ASSUMED


# ---------------------------------------------------------------------------- parsing nvdisasm's text
@dataclass(frozen=True)
class Operand:
    text: str
    reg: int | None  # None: RZ, an immediate, a constant, a uniform register
    reuse: bool


@dataclass
class Ffma:
    address: int
    line: int | None  # the kernel file's line (nvdisasm -g), when known
    text: str  # as nvdisasm printed it
    sources: tuple[Operand, Operand, Operand]
    # set by analyse()
    banks: tuple[int | None, ...] = ()
    cached: tuple[bool, ...] = ()  # each slot's read served by the reuse cache
    conflict: bool = False  # register-file reads over a bank's budget, with the reuse cache
    conflict_without_reuse: bool = False  # the same if every read went to the register file


@dataclass
class Kernel:
    name: str  # demangled, without the parameter list
    blocks: list[list[Ffma]]  # the FFMAs of each basic block (the reuse cache is followed within one)
    model: BankModel | None = None

    @property
    def ffmas(self) -> list[Ffma]:
        return [f for b in self.blocks for f in b]

    @property
    def loop(self) -> list[Ffma]:
        """The block with the most FFMAs: in a GEMM, the unrolled main loop."""
        return max(self.blocks, key=len, default=[])

    def counts(self) -> dict[str, int]:
        fs = self.ffmas
        return {
            "ffma": len(fs),
            "loop": len(self.loop),
            "flagged": sum(any(o.reuse for o in f.sources) for f in fs),
            "reads": sum(o.reg is not None for f in fs for o in f.sources),
            "cached": sum(sum(f.cached) for f in fs),
            "conflicts": sum(f.conflict for f in fs),
            "conflicts_without_reuse": sum(f.conflict_without_reuse for f in fs),
            "reuse_flags": sum(o.reuse for f in fs for o in f.sources),
        }


_FUNCTION = re.compile(r"^\.text\.(\S+):\s*$")
_LABEL = re.compile(r"^\s*\.?[\w.$]+:\s*$")
_LINE = re.compile(r'//## File "(.*?)", line (\d+)')
_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(.*?)\s*;")
_ENDS_BLOCK = re.compile(r"^(?:@!?U?P\w+\s+)?(BRA|BRX|JMP|JMX|CALL|RET|EXIT|KILL)\b")
_FFMA = re.compile(r"^(?:@!?U?P\w+\s+)?FFMA(?:\.\w+)*\s+(.*)$")


def _operand(text: str) -> Operand:
    reuse = text.endswith(".reuse")
    bare = text.removesuffix(".reuse").strip("-|!")
    m = re.fullmatch(r"R(\d+)", bare)
    return Operand(text, int(m.group(1)) if m else None, reuse)


def parse(text: str, source: str | None = None) -> list[Kernel]:
    """The kernels of `nvdisasm -g` output, each with the FFMAs of its basic blocks.

    A block ends at a label (a branch target) and after a branch or exit. Given `source` (a file
    name), an FFMA's line is kept only when it is a line of that file (not of an inlined header)."""
    kernels: list[Kernel] = []
    block: list[Ffma] | None = None
    line = None
    for raw in text.splitlines():
        m = _FUNCTION.match(raw)
        if m:
            kernels.append(Kernel(_short_name(m.group(1)), []))
            block, line = None, None
            continue
        if not kernels:
            continue
        m = _LINE.search(raw)
        if m:
            ours = source is None or os.path.basename(m.group(1)) == os.path.basename(source)
            line = int(m.group(2)) if ours else None
            continue
        if _LABEL.match(raw):
            block = None
            continue
        m = _INSTR.match(raw)
        if not m:
            continue
        instr = m.group(2)
        f = _FFMA.match(instr)
        if f:
            ops = [o.strip() for o in f.group(1).split(",")]
            if len(ops) == 4:
                if block is None:
                    block = []
                    kernels[-1].blocks.append(block)
                block.append(Ffma(int(m.group(1), 16), line, instr, tuple(_operand(o) for o in ops[1:])))
        if _ENDS_BLOCK.match(instr):
            block = None
    return kernels


def _short_name(mangled: str) -> str:
    """'register_blocked_gemm_kernel<true>' from its mangled name."""
    name = toolchain._demangle(mangled)
    name = name.removeprefix("void ")
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):  # the parameter list is the first '(' outside template brackets
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "(" and depth == 0:
            cut = i
            break
    return name[:cut]


# ---------------------------------------------------------------------------- the model
def _over_budget(regs: set[int], model: BankModel) -> bool:
    per_bank = Counter(r % model.banks for r in regs)
    return any(n > model.reads_per_bank for n in per_bank.values())


def analyse(kernels: list[Kernel], model: BankModel) -> list[Kernel]:
    """Fill in each FFMA's banks, reuse-cache hits and conflicts (in place; returns `kernels`).

    A register read twice by one FFMA counts as one register-file read."""
    for k in kernels:
        k.model = model
        for block in k.blocks:
            cache: list[list[int]] = [[] for _ in SLOTS]  # per slot, oldest first
            for f in block:
                cached = []
                for slot, op in enumerate(f.sources):
                    entries = cache[slot]
                    hit = op.reg is not None and op.reg in entries
                    if hit:
                        entries.remove(op.reg)
                    if op.reuse and op.reg is not None:
                        entries.append(op.reg)
                        del entries[:-REUSE_SLOTS]
                    cached.append(hit)
                f.cached = tuple(cached)
                f.banks = tuple(None if o.reg is None else o.reg % model.banks for o in f.sources)
                regs = {o.reg for o in f.sources if o.reg is not None}
                from_file = {o.reg for o, c in zip(f.sources, cached) if o.reg is not None and not c}
                f.conflict = _over_budget(from_file, model)
                f.conflict_without_reuse = _over_budget(regs, model)
    return kernels


# ---------------------------------------------------------------------------- the report
@dataclass
class SassReport:
    arch: str
    kernels: list[Kernel] = field(default_factory=list)
    missing: str | None = None  # why there is no SASS (a tool not found)
    filename: str = "kernel.cu"

    def table(self) -> str:
        if self.missing:
            return self.missing
        model = bank_model(self.arch)
        rule = (
            "two source registers in one bank conflict"
            if model.reads_per_bank == 1
            else f"an FFMA conflicts when {model.reads_per_bank + 1} register-file reads share a bank"
        )
        w = max([len("kernel"), *(len(k.name) for k in self.kernels)])
        lines = [
            f"{self.arch}, {model.source}; {rule}",
            f"{'kernel':<{w}} {'FFMAs':>6} {'in loop':>8} {'reads':>6} {'from reuse cache':>17} "
            f"{'conflicts':>10} {'without reuse':>14}",
        ]
        for k in self.kernels:
            c = k.counts()
            if not c["ffma"]:
                lines.append(f"{k.name:<{w}} {0:>6}  (no FFMA)")
                continue
            share = f"{c['cached']} ({100 * c['cached'] / c['reads']:.0f} %)"
            lines.append(
                f"{k.name:<{w}} {c['ffma']:>6} {c['loop']:>8} {c['reads']:>6} {share:>17} "
                f"{c['conflicts']:>10} {c['conflicts_without_reuse']:>14}"
            )
        return "\n".join(lines)

    __str__ = table

    def kernel(self, name: str | None = None) -> Kernel | None:
        """The kernel whose name contains `name` (default: the one with the largest loop)."""
        found = [k for k in self.kernels if name is None or name in k.name]
        return max(found, key=lambda k: len(k.loop), default=None)

    def loop(self, kernel: str | None = None) -> list[Ffma]:
        """The main loop's FFMAs of `kernel` ([] when there is none, or no SASS)."""
        k = self.kernel(kernel)
        return k.loop if k else []

    def saved(self, kernel: str | None = None) -> str:
        """One line: what the reuse cache saves in `kernel`."""
        if self.missing:
            return self.missing
        k = self.kernel(kernel)
        c = k.counts() if k else {"reads": 0}
        if not c["reads"]:
            return f"{self.arch}: no FFMA in {'any kernel' if kernel is None else repr(kernel)}"
        return (
            f"{self.arch}, {k.name}: the reuse cache serves {c['cached']} of {c['reads']} operand reads "
            f"({100 * c['cached'] / c['reads']:.0f} %); {c['conflicts_without_reuse']} of {c['ffma']} FFMAs "
            f"would conflict without it, {c['conflicts']} do with it"
        )

    def listing(self, kernel: str | None = None, first: int = 16) -> str:
        """The first `first` FFMAs of a kernel's main loop: banks, reuse-cache hits (*), conflicts."""
        if self.missing:
            return self.missing
        k = self.kernel(kernel)
        if k is None or not k.loop:
            return f"no FFMA in {'any kernel' if kernel is None else repr(kernel)}"
        loop = k.loop
        where = (
            f", line {Counter(f.line for f in loop).most_common(1)[0][0]} of {self.filename}" if loop[0].line else ""
        )
        out = [
            f"{k.name}: its main loop ({len(loop)} FFMAs{where}), the first {min(first, len(loop))}",
            f"{'':<50}a  b  c   <- the bank of each source register; * from the reuse cache",
        ]
        for f in loop[:first]:
            banks = " ".join("-" if b is None else f"{b}{'*' if c else ' '}" for b, c in zip(f.banks, f.cached))
            note = "conflict" if f.conflict else ("conflict avoided by reuse" if f.conflict_without_reuse else "")
            out.append(f"  /*{f.address:04x}*/ {f.text:<38} {banks:<11} {note}")
        return "\n".join(out)


# ---------------------------------------------------------------------------- tools
def find_nvdisasm() -> str | None:
    """$NVDISASM, else nvdisasm beside nvcc, on $PATH, or from the nvidia-cuda-nvdisasm wheel."""
    chosen = os.environ.get("NVDISASM")
    if chosen:  # the user's choice, or nothing
        return chosen if Path(chosen).is_file() else None
    nvcc = toolchain.find_nvcc()
    beside = [Path(nvcc).parent, Path(nvcc).resolve().parent] if nvcc else []
    for folder in [*beside, Path("/usr/local/cuda/bin")]:
        if (folder / "nvdisasm").is_file():
            return str(folder / "nvdisasm")
    found = shutil.which("nvdisasm")
    if found:
        return found
    for entry in sys.path:  # the wheel: site-packages/nvidia/cu13/bin/nvdisasm
        for hit in sorted(glob.glob(os.path.join(entry or ".", "nvidia", "*", "bin", "nvdisasm"))):
            return hit
    return None


def disassemble(source: str, exercise: str | None, arch: str, filename: str = "kernel.cu") -> str:
    """nvdisasm -g of `source` compiled for `arch` as the grader compiles it. Raises CompileError;
    CannotGrade (with the fix) when nvcc or nvdisasm is missing."""
    nvcc, nvdisasm = toolchain.find_nvcc(), find_nvdisasm()
    if not nvcc:
        raise CannotGrade("nvcc not found: the SASS needs the CUDA toolkit (or set CUDA_HOME)")
    if not nvdisasm:
        chosen = os.environ.get("NVDISASM")
        where = f" (NVDISASM={chosen} is not a file)" if chosen else ""
        raise CannotGrade(f"nvdisasm not found{where}: {NVDISASM_HINT}")
    timeout = toolchain.COMPILE_TIMEOUT_S
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = Path(tmp, "kernel.cu"), Path(tmp, "kernel.cubin")
        src.write_text(toolchain._with_prelude(source, exercise, filename))
        steps = [
            [nvcc, f"-arch={arch}", "-cubin", *toolchain.NVCC_FLAGS, "-o", str(cubin), str(src)],
            [nvdisasm, "-c", "-g", str(cubin)],
        ]
        for cmd in steps:
            results = run_all([cmd], tmp, timeout)
            if results is None:
                raise CompileError(f"{Path(cmd[0]).name} did not finish within {timeout:.0f} s")
            returncode, out = results[0]
            if returncode != 0:
                raise CompileError(toolchain.diagnostics(out, filename, Path(tmp), exercise), out)
    return out


def ffma_report(source_or_path, exercise: str | None = None, arch: str = "sm_90", *, show: bool = True) -> SassReport:
    """Disassemble a kernel file for `arch` and analyse its FFMAs; print the table when `show`.

    Without nvcc or nvdisasm the report says so (report.missing) instead of raising."""
    from grader.run.binding import read_source

    source, filename = read_source(source_or_path)
    model = bank_model(arch)
    try:
        text = disassemble(source, exercise, arch, filename)
    except CannotGrade as e:
        report = SassReport(arch, missing=str(e), filename=filename)
    else:
        report = SassReport(arch, analyse(parse(text, filename), model), filename=filename)
    if show:
        print(report.table())
    return report
