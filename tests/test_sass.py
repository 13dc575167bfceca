"""grader.course.sass: nvdisasm's FFMAs, their banks, the reuse cache's hits and the conflicts left."""

from __future__ import annotations

import pytest

from grader.course import sass
from grader.compile import toolchain
from grader.errors import CompileError
from grader.spec.exercises import KERNELS_DIR

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

# nvdisasm -c -g (CUDA 13.5) of kernels/04_register_blocked.cu (register_blocked_gemm_kernel<true>) compiled by
# nvcc 13.0 for sm_90 with the grader's flags: the first 34 FFMAs of its main loop, after its four LDS.128
LOOP_SM90 = """
.text._Z28register_blocked_gemm_kernelILb1EEvPKfS1_Pfiii:
	//## File "kernels/04_register_blocked.cu", line 87
        /*0890*/                   LDS.128 R76, [R11+UR5] ;
	//## File "kernels/04_register_blocked.cu", line 90
        /*08a0*/                   LDS.128 R80, [R10+UR6] ;
	//## File "kernels/04_register_blocked.cu", line 87
        /*08b0*/                   LDS.128 R84, [R11+UR5+0x10] ;
	//## File "kernels/04_register_blocked.cu", line 90
        /*08c0*/                   LDS.128 R88, [R10+UR6+0x10] ;
	//## File "kernels/04_register_blocked.cu", line 95
        /*08d0*/                   FFMA R92, R76, R80.reuse, R28 ;
        /*08e0*/                   FFMA R93, R77, R80.reuse, R36 ;
        /*08f0*/                   FFMA R94, R78, R80.reuse, R44 ;
        /*0900*/                   FFMA R52, R79, R80.reuse, R52 ;
        /*0910*/                   FFMA R60, R84, R80.reuse, R60 ;
        /*0920*/                   FFMA R68, R85, R80.reuse, R68 ;
        /*0930*/                   FFMA R24, R86, R80.reuse, R24 ;
        /*0940*/                   FFMA R16, R87, R80, R16 ;
        /*0950*/                   FFMA R80, R76, R81.reuse, R29 ;
        /*0960*/                   FFMA R95, R77, R81.reuse, R37 ;
        /*0970*/                   FFMA R98, R78, R81.reuse, R45 ;
        /*0980*/                   FFMA R53, R79, R81.reuse, R53 ;
        /*0990*/                   FFMA R61, R84, R81.reuse, R61 ;
        /*09a0*/                   FFMA R69, R85, R81.reuse, R69 ;
        /*09b0*/                   FFMA R25, R86, R81.reuse, R25 ;
        /*09c0*/                   FFMA R17, R87, R81, R17 ;
        /*09d0*/                   FFMA R54, R79, R82.reuse, R54 ;
        /*09e0*/                   FFMA R62, R84.reuse, R82.reuse, R62 ;
        /*09f0*/                   FFMA R70, R85, R82, R70 ;
        /*0a00*/                   FFMA R55, R79, R83.reuse, R55 ;
        /*0a10*/                   FFMA R63, R84.reuse, R83.reuse, R63 ;
        /*0a20*/                   FFMA R71, R85, R83, R71 ;
        /*0a30*/                   FFMA R56, R79.reuse, R88, R56 ;
        /*0a40*/                   FFMA R57, R79.reuse, R89, R57 ;
        /*0a50*/                   FFMA R58, R79.reuse, R90, R58 ;
        /*0a60*/                   FFMA R59, R79, R91, R59 ;
        /*0a70*/                   FFMA R64, R84.reuse, R88, R64 ;
        /*0a80*/                   FFMA R65, R84.reuse, R89, R65 ;
        /*0a90*/                   FFMA R66, R84.reuse, R90, R66 ;
        /*0aa0*/                   FFMA R67, R84, R91, R67 ;
        /*0ab0*/                   FFMA R72, R85.reuse, R88, R72 ;
        /*0ac0*/                   FFMA R73, R85.reuse, R89, R73 ;
        /*0ad0*/                   FFMA R74, R85.reuse, R90, R74 ;
        /*0ae0*/                   FFMA R75, R85, R91, R75 ;
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
    (other,) = sass.parse(SMALL, source="kernel.cu")  # lines of another file (an inlined header) are not ours
    assert [f.line for f in other.ffmas] == [None, None, None]


def test_the_reuse_cache_serves_the_same_slot_only():
    (k,) = sass.analyse(sass.parse(SMALL), sass.VOLTA)
    # R0 flagged in slot a twice: the 2nd and 3rd FFMAs read it there from the cache; b's -R0 is a register-file read
    assert [f.cached for f in k.ffmas] == [(False, False, False), (True, False, False), (True, False, False)]
    assert k.counts() == {
        "ffma": 3, "loop": 3, "flagged": 2, "reads": 7, "cached": 2,
        "conflicts": 0, "conflicts_without_reuse": 0, "reuse_flags": 2,
    }  # fmt: skip


def test_ptxas_flags_fit_the_model():
    (k,) = sass.analyse(sass.parse(LOOP_SM90), sass.ASSUMED)
    assert k.name in ("register_blocked_gemm_kernel<true>", "_Z28register_blocked_gemm_kernelILb1EEvPKfS1_Pfiii")
    c = k.counts()
    assert c["ffma"] == 34 and c["reads"] == 102 and {f.line for f in k.ffmas} == {95}
    assert c["cached"] == c["reuse_flags"] == 29  # every flag ptxas set serves exactly one later read
    by_address = {f.address: f for f in k.ffmas}
    # R84 flagged at 0x0a10 is read at 0x0a70 after four slot-a reads of R79: two entries, kept by unflagged reads
    assert by_address[0x0A70].cached == (True, False, False)
    # the first FFMA reads R76 R80 R28, nothing cached yet: three reads in bank 0
    assert by_address[0x08D0].conflict
    assert (c["conflicts"], c["conflicts_without_reuse"]) == (2, 17)


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


def test_the_picture_draws_every_read_and_hatches_the_cached():
    from grader.course import plots

    (k,) = sass.analyse(sass.parse(LOOP_SM90), sass.ASSUMED)
    ax = plots.register_banks(k.ffmas).axes[0]
    assert len(ax.patches) == 102  # one cell per register read
    assert sum(bool(p.get_hatch()) for p in ax.patches) == 29  # the reads the reuse cache serves
    conflicts = [line for line in ax.lines if line.get_marker() == "x"]
    assert len(conflicts) == 2
    empty = plots.register_banks([]).axes[0]
    assert any("no FFMA" in t.get_text() for t in empty.texts)
