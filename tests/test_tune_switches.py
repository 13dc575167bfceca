"""benchmarks/: a -D switch that a kernel file no longer reads builds that file's default, which a sweep would
then time and tabulate as a variant."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _benchmarks():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_fusion
    import gpu_tune

    return gpu_tune, gpu_fusion


def _unread(file, flags):
    text = (ROOT / "kernels" / file).read_text()
    return [n for n in (f[2:].split("=")[0] for f in flags) if not re.search(rf"\b{n}\b", text)]


def test_the_fused_sweeps_pass_only_switches_07b_reads():
    tune, fusion = _benchmarks()
    for tile, epilogues in tune.FUSED_EPI.items():
        for name, flags in epilogues.items():
            flags = tune.gemm_flags(tune.FUSED_TILES[tile] + tuple(flags))
            assert not _unread("07b_gemm_relu_warptile.cu", flags), (tile, name, flags)
    for name, flags in fusion.VARIANTS.items():
        assert not _unread(fusion.FILE_07B, flags), (name, flags)


def test_a_sweep_skips_the_variants_whose_switches_are_gone(capsys):
    tune, _ = _benchmarks()
    variants = {"base": (), "old": ("-DSTAGED_EPILOGUE=0",), "group8": ("-DGROUP_M=8",)}
    kept = tune.live(variants, lambda name: "07b_gemm_relu_warptile.cu")
    assert list(kept) == ["base", "group8"]
    assert "skipped old" in capsys.readouterr().out
    # every sweep of the file: what is left after the filter is read by its kernel
    for sweep in (tune.GEMM_VARIANTS, tune.GEMM_VARIANTS_2, tune.GEMM_VARIANTS_4, tune.GEMM_VARIANTS_5):
        there = {n: f for n, f in sweep.items() if (ROOT / "kernels" / tune.variant_file(n)).exists()}
        for name, flags in tune.live(there, tune.variant_file).items():
            assert not _unread(tune.variant_file(name), flags), (name, flags)
