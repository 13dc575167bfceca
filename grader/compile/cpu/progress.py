"""How far a kernel got on the CPU backend when it ran out of time.

The worker sets CUDA_EMU_PROGRESS=1 on the CPU backend; then the runtime writes a line to stderr every second while a
launch has run for a second or more (runtime.cpp, "Progress"):
    cuda_emu progress: launch 3, block 37 of 144, 12.0 s, 0.4 s CPU in this block, kernel tiled<16>
The CPU backend runs every GPU thread one after another, so a correct kernel that does much
work per thread can outlast the time limit here: that is not a hang, and the message says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STUCK_S = 3.0  # one block has used this much CPU time: more likely stuck than slow
_LINE = re.compile(
    r"^cuda_emu progress: launch (\d+), block (\d+) of (\d+), ([\d.]+) s, ([\d.]+) s CPU in this "
    r"block, kernel (.*)$",
    re.M,
)


@dataclass
class Progress:
    launch: int
    block: int  # the block running (1-based)
    blocks: int
    seconds: float
    block_cpu: float  # CPU seconds the running block has used
    kernel: str
    state: str  # "advancing" (blocks finish), "stuck" (one block used STUCK_S of CPU), "unknown"


def strip(output: str) -> str:
    """The child's output without the progress lines: exactly what the kernel itself printed. The runtime
    writes each line as "\\n" + line + "\\n" (a line of its own, even in the middle of one of the kernel's),
    so that is what comes out; the last may be cut short by the output cap."""
    return re.sub(r"\ncuda_emu progress: [^\n]*(?:\n|$)", "", output) if "cuda_emu progress" in output else output


def last(output: str) -> Progress | None:
    """The last launch's progress, or None when no launch ran for a second."""
    lines = [(int(m[1]), int(m[2]), int(m[3]), float(m[4]), float(m[5]), m[6].strip()) for m in _LINE.finditer(output)]
    if not lines:
        return None
    launch, block, blocks, seconds, block_cpu, kernel = lines[-1]
    state = "stuck" if block_cpu >= STUCK_S else "advancing" if block > 1 else "unknown"
    return Progress(launch, block, blocks, seconds, block_cpu, kernel, state)


def timeout_message(p: Progress, dims: str, runs_done: int) -> str:
    """The verdict's message for a CPU-backend time-out with progress lines."""
    head = (
        f"the kernel did not finish within the time limit on the CPU backend, at shape {dims} "
        f"({runs_done} test run{'s' if runs_done != 1 else ''} had finished): kernel {p.kernel} had started "
        f"block {p.block} of {p.blocks} of its launch after {p.seconds:.0f} s"
    )
    too_slow = (
        " The CPU backend runs every GPU thread one after another, so a correct kernel can be too slow for it: "
        "grade on a GPU, or allow more time (--timeout)."
    )
    if p.state == "advancing":
        return head + ", and was still advancing." + too_slow
    if p.state == "stuck":
        return (
            head + f", and that block had run for {p.block_cpu:.0f} s of CPU time: a loop that never ends, or a "
            "thread that waits for another block (blocks never run at the same time here)? Or one block is "
            "that slow on the CPU backend."
        )
    if runs_done:  # in its first block: too soon to tell, but the same kernel finished other runs
        return (
            head
            + ", its first: too soon to tell, but the earlier runs finished, so it is more likely slow than stuck."
            + too_slow
        )
    return head + "."
