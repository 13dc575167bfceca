"""grader.sass: nvdisasm's FFMAs, their banks, the reuse cache's hits and the conflicts left."""

from __future__ import annotations

import pytest

from grader import sass, toolchain
from grader.errors import CompileError
from grader.exercises import KERNELS_DIR

# nvdisasm -c -g (CUDA 13.5) of a 6-line kernel compiled by nvcc 13.0 for sm_90, cut after its EXIT
# (the kernel: three fmaf's of one loaded value v: v*s + v, v*-v + 1.5, -v*2 + s).
SMALL = """
//--------------------- .text._Z1kPff             --------------------------
	.section	.text._Z1kPff,"ax",@progbits
        .global         _Z1kPff
_Z1kPff:
.text._Z1kPff:
	//## File "/tmp/ff.cu", line 1
        /*0000*/                   LDC R1, c[0x0][0x28] ;
	//## File "/tmp/ff.cu", line 2
        /*0060*/                   LDG.E R0, desc[UR4][R2.64] ;
	//## File "/tmp/ff.cu", line 4
        /*0070*/                   FFMA R7, R0.reuse, R9, R0 ;
	//## File "/tmp/ff.cu", line 3
        /*0080*/                   FFMA R5, R0.reuse, -R0, 1.5 ;
	//## File "/tmp/ff.cu", line 5
        /*0090*/                   FFMA R9, -R0, 2, R9 ;
        /*00c0*/                   STG.E desc[UR4][R2.64+0x100], R9 ;
.L_x_1:
	//## File "/tmp/ff.cu", line 6
        /*00d0*/                   EXIT ;
"""

# Written for the tests: the reuse cache across blocks, its two entries per slot, and banks.
BLOCKS = """
.text._Z4loopv:
        /*0000*/                   FFMA R10, R2.reuse, R3, R10 ;
        /*0010*/               @P0 BRA `(.L_x_7) ;
        /*0020*/                   FFMA R12, R2, R5, R12 ;
.L_x_7:
        /*0030*/                   FFMA R11, R4.reuse, R7, R11 ;
        /*0040*/                   FFMA R13, R6.reuse, R7, R13 ;
        /*0050*/                   LDS.128 R20, [R30] ;
        /*0060*/                   FFMA R15, R4, R9, R15 ;
        /*0070*/                   FFMA R17, R6, R9, R17 ;
        /*0080*/                   FFMA R19, R6, R9, R19 ;
        /*0090*/                   FFMA R21, R8.reuse, R1, R21 ;
        /*00a0*/                   FFMA R23, R14.reuse, R3, R23 ;
        /*00b0*/                   FFMA R25, R16.reuse, R5, R25 ;
        /*00c0*/                   FFMA R27, R8, R7, R27 ;
        /*00d0*/                   EXIT ;
"""

NO_FFMA = """
.text._Z4copyPf:
        /*0000*/                   LDG.E R0, desc[UR4][R2.64] ;
        /*0010*/                   STG.E desc[UR4][R2.64+0x4], R0 ;
        /*0020*/                   EXIT ;
"""


def test_parse_reads_registers_flags_and_lines():
    (k,) = sass.parse(SMALL)
    assert k.name in ("k", "_Z1kPff")  # demangled where c++filt exists
    assert [[f.address for f in b] for b in k.blocks] == [[0x70, 0x80, 0x90]]
    first, second, third = k.ffmas
    assert [o.reg for o in first.sources] == [0, 9, 0] and [o.reuse for o in first.sources] == [True, False, False]
    assert [o.reg for o in second.sources] == [0, 0, None]  # -R0 is R0; 1.5 is an immediate
    assert [o.reg for o in third.sources] == [0, None, 9]
    assert [f.line for f in k.ffmas] == [4, 3, 5]


def test_the_reuse_cache_serves_the_same_slot_only():
    (k,) = sass.analyse(sass.parse(SMALL), sass.VOLTA)
    # R0 flagged in slot a twice: the 2nd and 3rd FFMAs read it there from the cache; b's -R0 is a register-file read
    assert [f.cached for f in k.ffmas] == [(False, False, False), (True, False, False), (True, False, False)]
    assert k.counts() == {
        "ffma": 3, "loop": 3, "flagged": 2, "reads": 7, "cached": 2,
        "conflicts": 0, "conflicts_without_reuse": 0, "reuse_flags": 2,
    }  # fmt: skip


def test_blocks_two_entries_per_slot_and_conflicts():
    (k,) = sass.analyse(sass.parse(BLOCKS), sass.VOLTA)
    assert [len(b) for b in k.blocks] == [1, 1, 9]  # split after the branch and at its label
    loop = k.loop
    assert loop is k.blocks[2]
    assert loop[0].address == 0x30
    # R2.reuse does not reach past the branch; R4 and R6 both stay in slot a's two entries across the LDS;
    # R6 is used up by the unflagged read at 0x70, so 0x80 reads it from the register file again
    assert "".join("*" if f.cached[0] else "." for f in k.blocks[1] + loop) == "...**....."
    # R8, R14, R16 flagged in a row: R8 is evicted (two entries), so 0xc0 reads R8 from the register file
    assert loop[-1].cached == (False, False, False)
    # two reads in bank 1 (R7, R11 at 0x30) are within a Volta bank's budget
    assert k.counts()["conflicts"] == 0


def test_three_reads_in_one_bank_conflict_unless_one_is_cached():
    text = """
.text._Z1cv:
        /*0000*/                   FFMA R10, R2, R4, R6 ;
        /*0010*/                   FFMA R12, R2.reuse, R4, R8 ;
        /*0020*/                   FFMA R14, R2, R4, R10 ;
        /*0030*/                   EXIT ;
"""
    (k,) = sass.analyse(sass.parse(text), sass.VOLTA)
    assert [f.conflict for f in k.ffmas] == [True, True, False]
    assert [f.conflict_without_reuse for f in k.ffmas] == [True, True, True]
    maxwell = """
.text._Z1mv:
        /*0000*/                   FFMA R11, R2, R5, R6 ;
        /*0010*/                   FFMA R12, R2.reuse, R5, R7 ;
        /*0020*/                   FFMA R14, R2, R5, R10 ;
"""
    (m,) = sass.analyse(sass.parse(maxwell), sass.MAXWELL)
    # 4 banks, one read each: R2 and R6 share bank 2; then banks 2 1 3; then R2 (cached) and R10 would share bank 2
    assert [f.conflict for f in m.ffmas] == [True, False, False]
    assert [f.conflict_without_reuse for f in m.ffmas] == [True, False, True]


def test_a_kernel_without_ffma_gives_zero():
    (k,) = sass.analyse(sass.parse(NO_FFMA), sass.VOLTA)
    assert k.blocks == [] and k.loop == [] and k.counts()["ffma"] == 0
    report = sass.SassReport("sm_90", [k])
    assert "(no FFMA)" in report.table()
    assert report.listing().startswith("no FFMA")


def test_bank_models():
    assert sass.bank_model("sm_52") is sass.MAXWELL
    assert sass.bank_model("sm_75") is sass.VOLTA
    assert sass.bank_model("sm_90a") is sass.ASSUMED and "assumed" in sass.ASSUMED.source
    with pytest.raises(ValueError, match="sm_90"):
        sass.bank_model("hopper")


def test_missing_nvdisasm_is_said_not_raised(monkeypatch, capsys):
    monkeypatch.setenv("NVDISASM", "/nonexistent/nvdisasm")
    report = sass.ffma_report(KERNELS_DIR / "04_register_blocked.cu", "register_blocked")
    assert report.missing and "not found" in report.missing
    assert report.kernels == []
    assert report.missing in capsys.readouterr().out
    assert report.listing() == report.missing


needs_tools = pytest.mark.skipif(
    not (toolchain.find_nvcc() and sass.find_nvdisasm()),
    reason="needs nvcc and nvdisasm (pip install nvidia-cuda-nvdisasm)",
)


@needs_tools
@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_register_blocked_reference(arch):
    path = KERNELS_DIR / "04_register_blocked.cu"
    fma_line = next(
        i for i, l in enumerate(path.read_text().splitlines(), 1) if "threadResults[resIdxM][resIdxN] +=" in l
    )
    report = sass.ffma_report(path, "register_blocked", arch=arch, show=False)
    assert sorted(k.name for k in report.kernels) == [
        "register_blocked_gemm_kernel<false>",
        "register_blocked_gemm_kernel<true>",
    ]
    for k in report.kernels:
        c = k.counts()
        assert c["ffma"] == c["loop"] == 8 * 8 * 8  # BK steps of an 8 x 8 outer product, unrolled in one block
        assert c["reads"] == 3 * c["ffma"]
        assert c["flagged"] > 0
        # each .reuse flag ptxas set is followed by exactly one read the model serves
        assert c["cached"] == c["reuse_flags"]
        assert c["conflicts"] <= c["conflicts_without_reuse"]
        assert {f.line for f in k.loop} == {fma_line}
    assert "04_register_blocked.cu" in report.listing("<true>")


@needs_tools
@pytest.mark.nvcc
def test_no_ffma_and_compile_errors():
    copy = "__global__ void copy(const float* x, float* y) {\n    y[threadIdx.x] = x[threadIdx.x];\n}\n"
    report = sass.ffma_report(copy, show=False)
    assert [k.name for k in report.kernels] == ["copy"] and report.kernels[0].counts()["ffma"] == 0
    with pytest.raises(CompileError, match="cell.cu"):
        sass.ffma_report("__global__ void k() { undefined_name; }\n// two lines\n", show=False)
