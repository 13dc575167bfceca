"""07b's fused epilogue on the course's fastest GEMM (05), over K, on the GPU.

    python3 benchmarks/gpu_fusion.py --save kernels/results/h200_fusion_07b.json            # the final run
    python3 benchmarks/gpu_fusion.py --variants --save $OUT/fusion.json                      # + the switch sweep first

At M = N = 4096 and K in grader.course.fusion.KS, grader.course.fusion.sweep times, round-robin in one
grader.run.timing.time_gpu call per K (its defaults: clean L2 flush, head start, medians): 07b's
gemm_relu, 05's gemm alone, 05's gemm + the separate pass (kernels/07a), and 07b's own `gemm`
(05's code compiled in 07b's file). --variants first times 07b built with each of its epilogue
switches in the same rounds (VARIANTS). Every build is checked against float64 / the exact mask
first (grader.course.bench). Writes the JSON and, beside it, the printed tables as .txt.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from gpu_tune import prebuild  # noqa: E402  (benchmarks/gpu_tune.py: parallel builds into the cache)

from grader.course import bench, fusion  # noqa: E402

FILE_07B, FILE_05 = "07b_gemm_relu_warptile.cu", bench.BEST_GEMM_FILE
VARIANTS = {  # name -> 07b's -D switches (the defaults: BIAS_MODE 1, MASK_TRANSPOSE 1)
    "default#2": (),  # the default again: the run-to-run spread a variant has to beat
    "mask_shuffles": ("-DMASK_TRANSPOSE=0",),
    "bias_init": ("-DBIAS_MODE=2",),
    "bias_global": ("-DBIAS_MODE=0",),
}
SHAPES = bench.CHECK_SHAPES + [(130, 260, 40), (513, 1031, 260), (4096, 4096, 256)]


def checked(flags=()):
    """07b built with `flags`, after its gemm_relu and gemm pass every check (AssertionError if not)."""
    mod = bench.load_kernel(FILE_07B, "gemm_relu", flags)
    errs = [bench.check_gemm_relu(mod, *s, seed=i) for i, s in enumerate(SHAPES)]
    errs += [bench.check_gemm(mod, *s, seed=50 + i) for i, s in enumerate(SHAPES)]
    assert all(map(bench._ok, errs)), (flags, errs)
    return mod


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--save", metavar="FILE.json", required=True)
    ap.add_argument("--variants", action="store_true", help="time 07b's epilogue switches first (VARIANTS)")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    log = []

    def say(text):
        print(text, flush=True)
        log.append(text)

    jobs = [(FILE_05, "register_blocked", ()), (FILE_07B, "gemm_relu", ())]
    jobs += [(FILE_07B, "gemm_relu", f) for f in VARIANTS.values()] if args.variants else []
    prebuild(jobs)
    k05 = bench.load_kernel(FILE_05, "register_blocked")
    assert all(bench._ok(bench.check_gemm(k05, *s, seed=i)) for i, s in enumerate(SHAPES))
    k07b = checked()
    res = {"command": "python3 benchmarks/gpu_fusion.py" + (" --variants" if args.variants else "")}
    res |= bench.gpu_info()
    if args.variants:
        variants = {name: checked(flags) for name, flags in VARIANTS.items()}
        rows = fusion.sweep(k07b, base=k05, variants=variants)
        res["variants"] = {"flags": VARIANTS, "rows": rows}
        say(f"variants (gemm = 05; every name / 05's gemm, timed in the same rounds)\n{fusion.table(rows)}")
    rows = fusion.sweep(k07b, base=k05)
    res["fusion"] = {"k07b": rows}
    say(f"final: 07b fused, 05 alone, 05 + 07a's pass, 07b's own gemm\n{fusion.table(rows)}")
    res |= {"nvidia_smi_at_end": bench.gpu_info().get("nvidia_smi_clocks_sm_max_mem_power_temp")}
    say(
        f"{res['gpu']}, torch {res['torch']}, {res['date']}; nvidia-smi (SM, max, mem clock, power, temp) "
        f"before: {res.get('nvidia_smi_clocks_sm_max_mem_power_temp')}, after: {res['nvidia_smi_at_end']}"
    )
    Path(args.save).write_text(json.dumps(res, indent=1) + "\n")
    Path(args.save).with_suffix(".txt").write_text("\n\n".join(log) + "\n")
    print(f"wrote {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
