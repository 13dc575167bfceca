"""Tuning sweep on the GPU (run by benchmarks/gpu_h200.sh tune): variants of
kernels/05_warptile_pipelined.cu (and 07b_gemm_relu_warptile.cu, same switches) and of kernels/06_relu_mask.cu.

Each variant is the same file built with -D overrides (through grader.run.binding's extra_flags;
all builds run in parallel first), checked against float64 / the exact mask, and timed in ONE
round-robin `grader.run.timing.time_gpu` call per size with cuBLAS FP32 (TF32 off) or torch.relu,
so every row of a table comes from the same run. The baseline appears twice (`base`, `base#2`):
their difference is the run-to-run spread a win has to beat. Writes $OUT/tune.json.
"""

import json
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor

import torch

from grader.course import bench
from grader.run import binding
from grader.compile import toolchain
from grader.run.timing import time_gpu, tflops

BASE = ()
GEMM_VARIANTS = {  # name -> -D flags (defaults: 128x256x32, 4x8 lanes, 2x2 sub-tiles, 2 stages)
    "base": BASE,
    "base#2": BASE,
    "fragdb": ("-DFRAG_DB=1",),
    "group8": ("-DGROUP_M=8",),
    "stages3": ("-DBIG_STAGES=3",),
    "t16x8": ("-DBIG_SUB_M=4", "-DBIG_SUB_N=2"),
    "t16x8_fragdb": ("-DBIG_SUB_M=4", "-DBIG_SUB_N=2", "-DFRAG_DB=1"),
    "t16x8_group8": ("-DBIG_SUB_M=4", "-DBIG_SUB_N=2", "-DGROUP_M=8"),
    "t16x8_s3": ("-DBIG_SUB_M=4", "-DBIG_SUB_N=2", "-DBIG_STAGES=3"),
    "t16x8_bk16s3": ("-DBIG_SUB_M=4", "-DBIG_SUB_N=2", "-DBIG_BK=16", "-DBIG_STAGES=3"),
    "t16x8_256x128": ("-DBIG_BM=256", "-DBIG_BN=128", "-DBIG_SUB_M=4", "-DBIG_SUB_N=2"),
    "t16x8_128x128x2": ("-DBIG_BN=128", "-DBIG_SUB_M=4", "-DBIG_SUB_N=2", "-DBIG_MIN_BLOCKS=2"),
    "t8x16": ("-DBIG_SUB_M=2", "-DBIG_SUB_N=4"),
    "t8x16_fragdb": ("-DBIG_SUB_M=2", "-DBIG_SUB_N=4", "-DFRAG_DB=1"),
}
# Second sweep (2026-12 run 2): the 8 x 16 thread tile, the winner of the first, with the other knobs.
GEMM_VARIANTS_2 = {
    "base": BASE,
    "t8x16": ("-DBIG_SUB_N=4",),
    "t8x16#2": ("-DBIG_SUB_N=4",),
    "t8x16_fragdb": ("-DBIG_SUB_N=4", "-DFRAG_DB=1"),
    "t8x16_s3": ("-DBIG_SUB_N=4", "-DBIG_STAGES=3"),
    "t8x16_s3_fragdb": ("-DBIG_SUB_N=4", "-DBIG_STAGES=3", "-DFRAG_DB=1"),
    "t8x16_bk16s3": ("-DBIG_SUB_N=4", "-DBIG_BK=16", "-DBIG_STAGES=3"),
}
# Fourth sweep (session 8): the knobs untried with the 8 x 16 default, under the clean-flush timing.
GEMM_VARIANTS_4 = {
    "base": BASE,
    "base#2": BASE,
    "group4": ("-DGROUP_M=4",),
    "group8": ("-DGROUP_M=8",),
    "group16": ("-DGROUP_M=16",),
    "fragdb_group8": ("-DFRAG_DB=1", "-DGROUP_M=8"),
    "lanes8x4": ("-DBIG_LANE_ROWS=8",),
    "lanes2x16": ("-DBIG_LANE_ROWS=2",),
    "bk16s3": ("-DBIG_BK=16", "-DBIG_STAGES=3"),
    "bk16s4": ("-DBIG_BK=16", "-DBIG_STAGES=4"),
    "bk64": ("-DBIG_BK=64",),
}
# Fifth sweep (session 9, results/h200_tune_sweep5.json: seven runs). ncu (benchmarks/gpu_ncu_gemm.py):
# cuBLAS's kernel is 256 x 128 x 8, 3 stages, 8 warps, 254 registers, the same occupancy as 05; it
# issued in 89 % of cycles, 05 in 83 %, losing most at the start of each tile. The switches of the
# runs before the last (K_UNROLL, SPREAD_LOADS, FAST_INTERIOR, CROSS_TILE, MUL_ORDER, A_FILL_4X8)
# were removed from 05 after it; what won is now its code. This is the last run less its A_FILL_4X8
# rows (that switch is gone too). "head" variants
# build kernels/05z_head.cu, an older 05 to compare with, when it exists
# (`git show 266c43a:kernels/05_warptile_pipelined.cu > kernels/05z_head.cu`; not committed).
GEMM_VARIANT_FILE = {"head": "05z_head.cu"}
GEMM_VARIANTS_5 = {
    "head": BASE,
    "final": BASE,
    "final#2": BASE,
    "s4": ("-DBIG_STAGES=4",),
    "lanes4x8": ("-DBIG_LANE_ROWS=4",),
}
RELU_VARIANTS = {
    "base": (),
    "base#2": (),
    "c4": ("-DRELU_CHUNKS=4",),
    "c4_coal": ("-DRELU_CHUNKS=4", "-DRELU_MASK_COALESCED=1"),
    "c4_coal_cs": ("-DRELU_CHUNKS=4", "-DRELU_MASK_COALESCED=1", "-DRELU_STREAM=1"),
    "c8_coal": ("-DRELU_CHUNKS=8", "-DRELU_MASK_COALESCED=1"),
    "c8_coal_cs": ("-DRELU_CHUNKS=8", "-DRELU_MASK_COALESCED=1", "-DRELU_STREAM=1"),
    "c2_coal_cs": ("-DRELU_MASK_COALESCED=1", "-DRELU_STREAM=1"),
    "c4_coal_b4": ("-DRELU_CHUNKS=4", "-DRELU_MASK_COALESCED=1", "-DRELU_BWD_CHUNKS=4"),
    "c4_coal_cs2_b4": ("-DRELU_CHUNKS=4", "-DRELU_MASK_COALESCED=1", "-DRELU_STREAM=2", "-DRELU_BWD_CHUNKS=4"),
}
# Fused epilogue (`fused`): 07b as built, timed against 05 and 05 + 06's forward in one round-robin per shape.
# Session 2 swept 07's staged and register epilogues here (-DSTAGED_EPILOGUE, since removed: results in
# kernels/README.md); 07b's own epilogue switches are swept by benchmarks/gpu_fusion.py --variants, over K.
FUSED_TILES = {"t8x16": ()}
FUSED_EPI = {"t8x16": {"07b": ()}}
GEMM_SIZES = [(4096, 4096, 4096), (2000, 3000, 1500), (2048, 2048, 2048)]
SEC = float(os.environ.get("TUNE_SECONDS", "5"))


def variant_file(name):
    return GEMM_VARIANT_FILE.get(name.split("#")[0], "05_warptile_pipelined.cu")


def dead_switches(file, flags):
    """The -D switches of `flags` that kernels/`file` never names: such a build is the file's default, timed as if
    it were a variant (the earlier sweeps' tables keep switches removed from the kernels since)."""
    text = (bench.KERNELS_DIR / file).read_text()
    names = [f[2:].split("=")[0] for f in flags if f.startswith("-D")]
    return [n for n in names if not re.search(rf"\b{n}\b", text)]


def live(variants, file_of):
    """`variants` less those with a switch their file no longer reads (each named once, on stdout)."""
    kept = {}
    for name, f in variants.items():
        dead = dead_switches(file_of(name), f)
        if dead:
            print(f"skipped {name}: kernels/{file_of(name)} no longer reads {', '.join(dead)}", flush=True)
        else:
            kept[name] = f
    return kept


def gemm_flags(f):
    return tuple(f) + ("-DSMALL_TILE_THRESHOLD=0",)  # always the big configuration


def prebuild(jobs):
    """Compile every (file, exercise, flags) in parallel; loading later hits the cache."""

    def one(job):
        file, ex, flags = job
        src, name = binding.read_source(bench.KERNELS_DIR / file)
        try:
            toolchain.build(src, backend="cuda", exercise=ex, filename=name, extra_flags=tuple(flags))
            return None
        except Exception as e:
            return f"{file} {flags}: {str(e)[:300]}"

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 8) as pool:
        for err in pool.map(one, sorted(set(jobs))):
            if err:
                print("BUILD FAILED", err, flush=True)


def tune_gemm(res):
    torch.backends.cuda.matmul.allow_tf32 = False
    mods, mods7 = {}, {}
    for name, f in GEMM_VARIANTS.items():
        try:
            file = variant_file(name)
            mods[name] = bench.load_kernel(file, "register_blocked", gemm_flags(f))
        except Exception as e:
            print(f"{name}: load failed {str(e)[:200]}", flush=True)
            continue
        try:  # 07b's mask epilogue needs 8 lane columns: a lane-grid variant is timed as 05 only
            mods7[name] = bench.load_kernel("07b_gemm_relu_warptile.cu", "gemm_relu", gemm_flags(f))
        except Exception as e:
            print(f"{name}: 07b not built ({str(e)[:120]})", flush=True)
    shapes = bench.CHECK_SHAPES + [(513, 1031, 260), (129, 257, 67), (4096, 4096, 4096)]
    for name in list(mods):
        e5 = [bench.check_gemm(mods[name], *s, seed=i) for i, s in enumerate(shapes)]
        e7 = (
            [bench.check_gemm_relu(mods7[name], *s, seed=50 + i) for i, s in enumerate(shapes[:-1])]
            if name in mods7
            else []
        )
        res["gemm"][name] = {
            "flags": GEMM_VARIANTS[name],
            "ok05": all(map(bench._ok, e5)),
            "ok07": all(map(bench._ok, e7)) if name in mods7 else None,
            "max_err": max(e5 + e7),
        }
    for m, n, k in GEMM_SIZES:
        A, B = bench._gemm_inputs(m, n, k, 7)
        Cs = {name: torch.empty(m, n, device="cuda") for name in mods}
        Cb = torch.empty(m, n, device="cuda")
        fns = {name: (lambda mod=mods[name], C=Cs[name]: mod.launch.gemm(A, B, C)) for name in mods}
        fns["cublas"] = lambda: torch.matmul(A, B, out=Cb)
        t = time_gpu(fns, max_seconds=SEC, max_runs=400, rel_err=0.0)
        key = f"{m}x{n}x{k}"
        for name in mods:
            res["gemm"][name][key] = {
                "ms": t[name].median_ms,
                "tflops": tflops(m, n, k, t[name].median_ms),
                "pct": 100 * t["cublas"].median_ms / t[name].median_ms,
                "p10": t[name].p10_ms,
                "p90": t[name].p90_ms,
                "runs": t[name].runs,
            }
        res["gemm"]["cublas"][key] = {"ms": t["cublas"].median_ms, "tflops": tflops(m, n, k, t["cublas"].median_ms)}


def tune_relu(res, m=8192, n=8192):
    mods = {name: bench.load_kernel("06_relu_mask.cu", "relu_mask", f) for name, f in RELU_VARIANTS.items()}
    for name, mod in mods.items():
        ok = all(
            bench.check_relu(mod, a, b, 3 + i) == 0.0
            for i, (a, b) in enumerate(
                [(1, 1), (17, 33), (127, 253), (1000, 1000), (3, 4096), (5, 384), (7, 640), (m, n)]
            )
        )
        res["relu"][name] = {"flags": RELU_VARIANTS[name], "ok": ok}
    g = torch.Generator(device="cuda").manual_seed(3)
    X = torch.randn(m, n, device="cuda", generator=g)
    dY = torch.randn(m, n, device="cuda", generator=g)
    Y, dX, Yt, dst = (torch.empty_like(X) for _ in range(4))
    mask = torch.empty((m, (n + 31) // 32), dtype=torch.int32, device="cuda")
    Yt.copy_(torch.relu(X))
    fns = {}
    for name, mod in mods.items():
        fns[name + "/fwd"] = lambda mod=mod: mod.launch.relu_forward(X, Y, mask)
        fns[name + "/bwd"] = lambda mod=mod: mod.launch.relu_backward(mask, dY, dX)
        fns[name + "/pair"] = lambda mod=mod: (
            mod.launch.relu_forward(X, Y, mask),
            mod.launch.relu_backward(mask, dY, dX),
        )
    fns["torch_relu"] = lambda: torch.relu(X)
    fns["torch_pair"] = lambda: (torch.relu(X), torch.ops.aten.threshold_backward(dY, Yt, 0.0))
    fns["copy"] = lambda: dst.copy_(X)
    t = time_gpu(fns, max_seconds=SEC, max_runs=300, rel_err=0.0)
    copy_gbs = 8 * m * n / (t["copy"].median_ms * 1e-3) / 1e9
    res["relu"]["ref"] = {k: t[k].median_ms for k in ("torch_relu", "torch_pair", "copy")}
    res["relu"]["ref"]["copy_gbs"] = copy_gbs
    for name in mods:
        r = res["relu"][name]
        for part, b in (("fwd", 8.125), ("bwd", 8.125), ("pair", 16.25)):
            ms = t[f"{name}/{part}"].median_ms
            r[part] = {
                "ms": ms,
                "pct_copy": 100 * b * m * n / (ms * 1e-3) / 1e9 / copy_gbs,
                "spread": (t[f"{name}/{part}"].p90_ms - t[f"{name}/{part}"].p10_ms),
            }
        r["x_torch_pair"] = t["torch_pair"].median_ms / r["pair"]["ms"]
        r["x_torch_relu"] = t["torch_relu"].median_ms / r["fwd"]["ms"]


def tune_fused(res, shapes=((4096, 4096, 4096), (4096, 4096, 512))):
    torch.backends.cuda.matmul.allow_tf32 = False
    relu = bench.load_kernel("06_relu_mask.cu", "relu_mask")
    mods5 = {
        tile: bench.load_kernel("05_warptile_pipelined.cu", "register_blocked", gemm_flags(f))
        for tile, f in FUSED_TILES.items()
    }
    mods7 = {}
    for tile, f in FUSED_TILES.items():
        for epi, epi_flags in FUSED_EPI[tile].items():
            m7 = bench.load_kernel("07b_gemm_relu_warptile.cu", "gemm_relu", gemm_flags(f + epi_flags))
            errs = [
                bench.check_gemm_relu(m7, *s, seed=60 + i)
                for i, s in enumerate(bench.CHECK_SHAPES + [(513, 1031, 260), (4096, 4096, 512)])
            ]
            mods7[f"{tile}/{epi}"] = m7
            res["fused"][f"{tile}/{epi}"] = {"ok": all(map(bench._ok, errs))}
    for m, n, k in shapes:
        A, B = bench._gemm_inputs(m, n, k, 5)
        bias = torch.randn(n, device="cuda")
        mask = torch.empty((m, (n + 31) // 32), dtype=torch.int32, device="cuda")
        Y, C = torch.empty(m, n, device="cuda"), torch.empty(m, n, device="cuda")
        fns = {}
        for tile, m5 in mods5.items():
            fns[f"{tile}/gemm"] = lambda mod=m5: mod.launch.gemm(A, B, C)
            fns[f"{tile}/gemm+relu"] = lambda mod=m5: (mod.launch.gemm(A, B, C), relu.launch.relu_forward(C, Y, mask))
        for name, m7 in mods7.items():
            fns[name] = lambda mod=m7: mod.launch.gemm_relu(A, B, bias, C, mask)
        t = time_gpu(fns, max_seconds=2 * SEC, max_runs=400, rel_err=0.0)
        base = t["t8x16/gemm"].median_ms
        for name in fns:
            tile = name.split("/")[0]
            res["fused"].setdefault(name, {})[f"{m}x{n}x{k}"] = dict(
                ms=t[name].median_ms,
                spread=t[name].p90_ms - t[name].p10_ms,
                x_same_gemm=t[name].median_ms / t[f"{tile}/gemm"].median_ms,
                x_best_gemm=t[name].median_ms / base,
            )


def pick(res, default="t8x16", margin=1.01):
    """The variant to make the default: `default` unless another correct one is > 1 % faster at 4096^3."""
    key = "4096x4096x4096"
    ok = {n: r for n, r in res["gemm"].items() if n != "cublas" and r.get("ok05") and r.get("ok07") and key in r}
    best = max(ok, key=lambda n: ok[n][key]["tflops"])
    return best if ok[best][key]["tflops"] > margin * ok[default][key]["tflops"] else default


def main(what):
    global GEMM_VARIANTS, RELU_VARIANTS
    if "gemm2" in what or "gemm4" in what or "gemm5" in what:
        GEMM_VARIANTS = GEMM_VARIANTS_2 if "gemm2" in what else GEMM_VARIANTS_4 if "gemm4" in what else GEMM_VARIANTS_5
        what = list(what) + ["gemm"]
    res = {"gemm": {"cublas": {}}, "relu": {}, "fused": {}}
    jobs = []
    if "gemm" in what:
        missing = [n for n in GEMM_VARIANTS if not (bench.KERNELS_DIR / variant_file(n)).exists()]
        if missing:
            print(f"skipped (no kernels/{variant_file(missing[0])}): {', '.join(missing)}", flush=True)
        GEMM_VARIANTS = live({n: f for n, f in GEMM_VARIANTS.items() if n not in missing}, variant_file)
        for name, f in GEMM_VARIANTS.items():
            jobs += [
                (variant_file(name), "register_blocked", gemm_flags(f)),
                ("07b_gemm_relu_warptile.cu", "gemm_relu", gemm_flags(f)),
            ]
    if "relu" in what:
        RELU_VARIANTS = live(RELU_VARIANTS, lambda name: "06_relu_mask.cu")
        jobs += [("06_relu_mask.cu", "relu_mask", tuple(f)) for f in RELU_VARIANTS.values()]
    if "fused" in what:
        for tile, f in FUSED_TILES.items():
            jobs += [("05_warptile_pipelined.cu", "register_blocked", gemm_flags(f))]
            jobs += [("07b_gemm_relu_warptile.cu", "gemm_relu", gemm_flags(f + e)) for e in FUSED_EPI[tile].values()]
        jobs += [("06_relu_mask.cu", "relu_mask", ())]
    prebuild(jobs)
    print("built", len(set(jobs)), flush=True)
    if "relu" in what:
        tune_relu(res)
    if "gemm" in what:
        tune_gemm(res)
    if "fused" in what:
        tune_fused(res)
    out = os.environ.get("OUT")
    if out:
        json.dump(res, open(f"{out}/tune.json", "w"), indent=1, default=str)
    if "relu" in what:
        ref = res["relu"]["ref"]
        print(
            f"\nReLU 8192^2: torch_relu {ref['torch_relu']:.4f} ms, torch_pair {ref['torch_pair']:.4f}, "
            f"copy {ref['copy']:.4f} ({ref['copy_gbs']:.0f} GB/s)"
        )
        print(f"{'variant':<16}{'ok':>4}{'fwd ms':>9}{'%copy':>7}{'bwd ms':>9}{'pair ms':>9}{'x torch':>8}")
        for name, r in res["relu"].items():
            if name != "ref":
                print(
                    f"{name:<16}{str(r['ok']):>4}{r['fwd']['ms']:9.4f}{r['fwd']['pct_copy']:7.1f}"
                    f"{r['bwd']['ms']:9.4f}{r['pair']['ms']:9.4f}{r['x_torch_pair']:8.3f}"
                )
    if "gemm" in what:
        keys = [f"{m}x{n}x{k}" for m, n, k in GEMM_SIZES]
        print(
            f"\n{'variant':<18}{'ok05':>5}{'ok07':>5}"
            + "".join(f"{k:>22}" for k in keys)
            + "  (TF, % cuBLAS, p10-p90 ms)"
        )
        for name, r in res["gemm"].items():
            if name == "cublas":
                print(f"{name:<28}" + "".join(f"{r[k]['tflops']:12.2f}{'':10}" for k in keys))
            elif keys[0] in r:
                print(
                    f"{name:<18}{str(r['ok05'])[0]:>5}{str(r['ok07'])[0]:>5}"
                    + "".join(f"{r[k]['tflops']:8.2f}{r[k]['pct']:6.1f}%{r[k]['p90'] - r[k]['p10']:7.3f}" for k in keys)
                )
    if "fused" in what:
        for key in ("4096x4096x4096", "4096x4096x512"):
            print(f"\n{'fused ' + key:<22}{'ok':>6}{'ms':>9}{'/same gemm':>11}{'/t8x16 gemm':>12}{'p90-p10':>9}")
            for name, r in res["fused"].items():
                if key in r:
                    q = r[key]
                    print(
                        f"{name:<22}{str(r.get('ok', '')):>6}{q['ms']:9.4f}{q['x_same_gemm']:11.3f}{q['x_best_gemm']:12.3f}{q['spread']:9.4f}"
                    )
    if "gemm2" in what:
        choice = pick(res)
        print("PICK", choice, " ".join(GEMM_VARIANTS[choice]))
        if out:
            open(f"{out}/pick.txt", "w").write(" ".join(GEMM_VARIANTS[choice]) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or ["relu", "gemm"])
