"""`python -m grader bench`: time every reference kernel in kernels/ against its baseline.

    python -m grader bench                       # table: 1024^3, 2048^3, 4096^3, 2000x3000x1500
    python -m grader bench --json                # the same rows as a JSON list
    python -m grader bench --sizes 4096 --shapes 1000x3000x511 --plot ladder.png

Every kernel file is built and loaded with `grader.run.binding.load` (the project's nvcc build
and cache) and timed with `grader.run.timing.time_gpu` (CUDA events, L2 flush, median), round-robin
against its baseline in the same process:
  - GEMM rungs: cuBLAS FP32 (torch.matmul with TF32 off);
  - ReLU pair (06): torch.relu + aten.threshold_backward, and a device copy (bandwidth ceiling);
  - fused GEMM + bias + ReLU (07b, the epilogue on 05): 05 alone, and 05 + 06's forward
    (07, the teaching kernel, is timed against its own GEMM + a pass by grader.course.fusion).
Before timing, each kernel's output is poisoned with NaN, the kernel runs once on fresh
zero-mean random inputs, and the result is compared against float64 (normwise relative error
< 1e-4, no NaN); masks must match the kernel's own output bit for bit. Small odd shapes
(1x1x1, 17x33x65, 127x253x61, 1000x1000x1000) are checked too.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

from grader.course import plots
from grader.spec.checks import pack_mask
from grader.spec.contract import GEMM_RELU, mask_words
from grader.spec import exercises
from grader.spec.exercises import KERNELS_DIR

REL_TOL = 1e-4
CHECK_SHAPES = [(1, 1, 1), (17, 33, 65), (127, 253, 61), (1000, 1000, 1000)]

# (name in the table, file, exercise) — the GEMM ladder in teaching order; the other files timed,
# with the exercise whose launchers each defines (grader.spec.exercises)
GEMM_LADDER = list(exercises.BENCH_GEMM_LADDER)
RELU_FILE, RELU_EXERCISE = exercises.BENCH_RELU
FUSED_FILE, FUSED_EXERCISE = exercises.BENCH_FUSED  # the fused epilogue on 05 (07 is on 04: grader.course.fusion)
BEST_GEMM_FILE, BEST_GEMM_EXERCISE = exercises.BENCH_BEST_GEMM


# ---------------------------------------------------------------------------- helpers
def _torch():
    import torch

    return torch


def rel_err(out, ref) -> float:
    torch = _torch()
    if torch.isnan(out).any():
        return float("nan")
    ref = ref.double()
    denom = ref.norm().item() or 1.0
    return (out.double() - ref).norm().item() / denom


def _gemm_inputs(m, n, k, seed=0):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(m, k, device="cuda", generator=g)
    B = torch.randn(k, n, device="cuda", generator=g)
    return A, B


def check_gemm(mod, m, n, k, seed) -> float:
    """Poisoned output, fresh inputs, float64 reference; returns the relative error (nan = fail)."""
    torch = _torch()
    A, B = _gemm_inputs(m, n, k, seed)
    C = torch.full((m, n), float("nan"), device="cuda")
    mod.launch.gemm(A, B, C)
    mod.check_error("gemm", synchronize=True)
    return rel_err(C, A.double() @ B.double())


def check_gemm_relu(mod, m, n, k, seed) -> float:
    torch = _torch()
    A, B = _gemm_inputs(m, n, k, seed)
    bias = torch.randn(n, device="cuda")
    C = torch.full((m, n), float("nan"), device="cuda")
    mask = torch.full((m, mask_words(n)), -1, dtype=torch.int32, device="cuda")
    mod.launch.gemm_relu(A, B, bias, C, mask)
    mod.check_error(GEMM_RELU.name, synchronize=True)
    err = rel_err(C, torch.relu(A.double() @ B.double() + bias.double()))
    if not torch.equal(mask, pack_mask(C > 0)):
        return float("nan")
    return err


def check_relu(mod, m, n, seed) -> float:
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(seed)
    X = torch.randn(m, n, device="cuda", generator=g)
    dY = torch.randn(m, n, device="cuda", generator=g)
    Y = torch.full_like(X, float("nan"))
    dX = torch.full_like(X, float("nan"))
    mask = torch.full((m, mask_words(n)), -1, dtype=torch.int32, device="cuda")
    mod.launch.relu_forward(X, Y, mask)
    mod.launch.relu_backward(mask, dY, dX)
    mod.check_error("relu", synchronize=True)
    if not torch.equal(Y, torch.relu(X)) or not torch.equal(mask, pack_mask(X > 0)):
        return float("nan")
    if not torch.equal(dX, torch.where(X > 0, dY, torch.zeros_like(dY))):
        return float("nan")
    return 0.0


def _ok(err: float) -> bool:
    return err == err and err < REL_TOL


def _shape_str(s) -> str:
    return "x".join(str(d) for d in s)


def load_kernel(file: str, exercise: str, extra_flags=()):
    from grader.run import binding

    return binding.load(KERNELS_DIR / file, exercise, backend="cuda", extra_flags=tuple(extra_flags))


# ---------------------------------------------------------------------------- benches
def bench_gemm(shapes, ladder=GEMM_LADDER, extra_flags=(), seed=1, log=print, timing=None) -> list[dict]:
    torch = _torch()
    from grader.run.timing import time_gpu, tflops

    torch.backends.cuda.matmul.allow_tf32 = False
    mods = {name: load_kernel(file, ex, extra_flags) for name, file, ex in ladder}
    correct = {}
    for name, mod in mods.items():
        errs = [check_gemm(mod, *s, seed=seed + i) for i, s in enumerate(CHECK_SHAPES)]
        correct[name] = all(_ok(e) for e in errs)
        if not correct[name]:
            log(f"# {name}: WRONG at small shapes, errors {errs}")
    rows = []
    for m, n, k in shapes:
        A, B = _gemm_inputs(m, n, k, seed)
        ref = A.double() @ B.double()
        outs, fns, errs = {}, {}, {}
        for name, mod in mods.items():
            C = torch.full((m, n), float("nan"), device="cuda")
            mod.launch.gemm(A, B, C)
            mod.check_error(name, synchronize=True)
            errs[name] = rel_err(C, ref)
            outs[name] = C
            fns[name] = lambda mod=mod, C=C: mod.launch.gemm(A, B, C)
        Cb = torch.empty(m, n, device="cuda")
        fns["cublas"] = lambda: torch.matmul(A, B, out=Cb)
        errs["cublas"] = rel_err(torch.matmul(A, B), ref)
        del ref
        t = time_gpu(fns, max_seconds=8.0, **(timing or {}))
        base = t["cublas"].median_ms
        prev = None
        for name in ["cublas", *mods]:
            ms = t[name].median_ms
            rows.append(
                {
                    "kind": "gemm",
                    "kernel": name,
                    "file": next((f for n_, f, _ in ladder if n_ == name), None),
                    "shape": _shape_str((m, n, k)),
                    "ms": ms,
                    "tflops": tflops(m, n, k, ms),
                    "pct_of_baseline": 100.0 * base / ms,
                    "baseline": "cublas_fp32",
                    "speedup_prev": (prev / ms) if prev else None,
                    "rel_err": errs[name],
                    "spread": t[name].spread,
                    "correct": _ok(errs[name]) and correct.get(name, True),
                }
            )
            if name != "cublas":
                prev = ms
        del outs
    return rows


def bench_relu(elems_m=8192, elems_n=8192, seed=3, timing=None) -> list[dict]:
    torch = _torch()
    from grader.run.timing import time_gpu

    mod = load_kernel(RELU_FILE, RELU_EXERCISE)
    ok = all(
        check_relu(mod, m, n, seed + i) == 0.0
        for i, (m, n) in enumerate([(1, 1), (17, 33), (127, 253), (1000, 1000), (3, 4096)])
    )
    m, n = elems_m, elems_n
    ok = ok and check_relu(mod, m, n, seed) == 0.0
    g = torch.Generator(device="cuda").manual_seed(seed)
    X = torch.randn(m, n, device="cuda", generator=g)
    dY = torch.randn(m, n, device="cuda", generator=g)
    Y, dX, Yt = torch.empty_like(X), torch.empty_like(X), torch.empty_like(X)
    mask = torch.empty((m, (n + 31) // 32), dtype=torch.int32, device="cuda")
    copy_dst = torch.empty_like(X)
    fns = {
        "ours_forward": lambda: mod.launch.relu_forward(X, Y, mask),
        "ours_backward": lambda: mod.launch.relu_backward(mask, dY, dX),
        "ours_pair": lambda: (mod.launch.relu_forward(X, Y, mask), mod.launch.relu_backward(mask, dY, dX)),
        "torch_relu": lambda: torch.relu(X),
        "torch_threshold_backward": lambda: torch.ops.aten.threshold_backward(dY, Yt, 0.0),
        "torch_pair": lambda: (torch.relu(X), torch.ops.aten.threshold_backward(dY, Yt, 0.0)),
        "device_copy": lambda: copy_dst.copy_(X),
    }
    Yt.copy_(torch.relu(X))  # the saved activation threshold_backward reads
    t = time_gpu(fns, max_seconds=8.0, **(timing or {}))
    e = m * n
    bytes_ = {
        "ours_forward": 8.125 * e,
        "ours_backward": 8.125 * e,
        "ours_pair": 16.25 * e,
        "torch_relu": 8 * e,
        "torch_threshold_backward": 12 * e,
        "torch_pair": 20 * e,
        "device_copy": 8 * e,
    }
    copy_gbs = bytes_["device_copy"] / (t["device_copy"].median_ms * 1e-3) / 1e9
    rows = []
    for name in fns:
        ms = t[name].median_ms
        gbs = bytes_[name] / (ms * 1e-3) / 1e9
        base = {
            "ours_forward": "torch_relu",
            "ours_backward": "torch_threshold_backward",
            "ours_pair": "torch_pair",
        }.get(name)
        rows.append(
            {
                "kind": "relu",
                "kernel": name,
                "file": RELU_FILE if name.startswith("ours") else None,
                "shape": _shape_str((m, n)),
                "ms": ms,
                "gbs": gbs,
                "pct_of_copy_bw": 100.0 * gbs / copy_gbs,
                "speedup_vs_torch": (t[base].median_ms / ms) if base else None,
                "spread": t[name].spread,
                "correct": ok if name.startswith("ours") else True,
            }
        )
    return rows


def bench_fused(shapes, extra_flags=(), seed=5, timing=None) -> list[dict]:
    torch = _torch()
    from grader.run.timing import time_gpu, tflops

    fused = load_kernel(FUSED_FILE, FUSED_EXERCISE, extra_flags)
    plain = load_kernel(BEST_GEMM_FILE, BEST_GEMM_EXERCISE, extra_flags)
    relu = load_kernel(RELU_FILE, RELU_EXERCISE)
    ok_small = all(_ok(check_gemm_relu(fused, *s, seed=seed + i)) for i, s in enumerate(CHECK_SHAPES))
    rows = []
    for m, n, k in shapes:
        err = check_gemm_relu(fused, m, n, k, seed)
        A, B = _gemm_inputs(m, n, k, seed)
        bias = torch.randn(n, device="cuda")
        C, C2, Y = (torch.empty(m, n, device="cuda") for _ in range(3))
        mask = torch.empty((m, (n + 31) // 32), dtype=torch.int32, device="cuda")
        fns = {
            "fused_gemm_relu": lambda: fused.launch.gemm_relu(A, B, bias, C, mask),
            "gemm_only": lambda: plain.launch.gemm(A, B, C2),
            "gemm_then_relu": lambda: (plain.launch.gemm(A, B, C2), relu.launch.relu_forward(C2, Y, mask)),
        }
        t = time_gpu(fns, max_seconds=8.0, **(timing or {}))
        for name in fns:
            ms = t[name].median_ms
            rows.append(
                {
                    "kind": "fused",
                    "kernel": name,
                    "file": {"fused_gemm_relu": FUSED_FILE}.get(name),
                    "shape": _shape_str((m, n, k)),
                    "ms": ms,
                    "tflops": tflops(m, n, k, ms),
                    "ratio_to_gemm_only": ms / t["gemm_only"].median_ms,
                    "spread": t[name].spread,
                    "correct": (ok_small and _ok(err)) if name == "fused_gemm_relu" else True,
                }
            )
    return rows


# ---------------------------------------------------------------------------- output
def gpu_info() -> dict:
    torch = _torch()
    info = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": datetime.date.today().isoformat(),
    }
    try:
        q = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        info["nvidia_smi_clocks_sm_max_mem_power_temp"] = q
    except (OSError, subprocess.TimeoutExpired):
        pass
    return info


def format_table(rows: list[dict]) -> str:
    lines = []
    gemm = [r for r in rows if r["kind"] == "gemm"]
    if gemm:
        lines.append(
            f"{'GEMM kernel':<20} {'shape':<16} {'ms':>9} {'TFLOP/s':>8} {'%cuBLAS':>8} {'x prev':>7} {'relerr':>8} ok"
        )
        for r in gemm:
            sp = f"{r['speedup_prev']:.2f}" if r["speedup_prev"] else "-"
            lines.append(
                f"{r['kernel']:<20} {r['shape']:<16} {r['ms']:9.3f} {r['tflops']:8.2f} "
                f"{r['pct_of_baseline']:7.1f}% {sp:>7} {r['rel_err']:8.1e} {'yes' if r['correct'] else 'NO'}"
            )
    relu = [r for r in rows if r["kind"] == "relu"]
    if relu:
        lines.append(f"\n{'ReLU':<26} {'shape':<11} {'ms':>8} {'GB/s':>7} {'%copy':>6} {'x torch':>8} ok")
        for r in relu:
            sv = f"{r['speedup_vs_torch']:.3f}" if r["speedup_vs_torch"] else "-"
            lines.append(
                f"{r['kernel']:<26} {r['shape']:<11} {r['ms']:8.4f} {r['gbs']:7.0f} "
                f"{r['pct_of_copy_bw']:5.1f}% {sv:>8} {'yes' if r['correct'] else 'NO'}"
            )
    fused = [r for r in rows if r["kind"] == "fused"]
    if fused:
        lines.append(f"\n{'fused':<18} {'shape':<16} {'ms':>8} {'TFLOP/s':>8} {'/gemm':>7} ok")
        for r in fused:
            lines.append(
                f"{r['kernel']:<18} {r['shape']:<16} {r['ms']:8.3f} {r['tflops']:8.2f} "
                f"{r['ratio_to_gemm_only']:7.3f} {'yes' if r['correct'] else 'NO'}"
            )
    return "\n".join(lines)


def markdown(info: dict, rows: list[dict]) -> str:
    """The README's results tables (GEMM ladder by size, ReLU pair, fused), from bench rows."""
    gemm = [r for r in rows if r["kind"] == "gemm"]
    shapes = list(dict.fromkeys(r["shape"] for r in gemm))
    names = list(dict.fromkeys(r["kernel"] for r in gemm))
    at = {(r["kernel"], r["shape"]): r for r in gemm}
    big = max(shapes, key=lambda s: int(s.split("x")[0]) if len(set(s.split("x"))) == 1 else 0)
    out = [
        f"{info.get('gpu')}, torch {info.get('torch')}, CUDA {info.get('cuda')}, {info.get('date')}; "
        f"nvidia-smi at the end (SM clock, max, memory clock, power, temperature): "
        f"{info.get('nvidia_smi_clocks_sm_max_mem_power_temp', '?')}."
        + (
            f" L2 flush: {info['timing']['flush']}, extra warm-up {info['timing']['warmup_ms']:g} ms."
            if info.get("timing")
            else ""
        ),
        "",
        "| kernel | " + " | ".join(f"{s} TFLOP/s" for s in shapes) + f" | % cuBLAS ({big}) | x prev ({big}) |",
        "|---|" + "---:|" * (len(shapes) + 2),
    ]
    for k in names:
        cells = [f"{at[k, s]['tflops']:.2f}" if (k, s) in at else "" for s in shapes]
        r = at.get((k, big), {})
        prev = f"{r['speedup_prev']:.2f}" if r.get("speedup_prev") else ""
        out.append(f"| {k} | " + " | ".join(cells) + f" | {r.get('pct_of_baseline', 0):.1f} | {prev} |")
    relu = [r for r in rows if r["kind"] == "relu"]
    if relu:
        out += [
            "",
            f"ReLU, {relu[0]['shape']} floats:",
            "",
            "| kernel | ms | GB/s | % of copy | x PyTorch |",
            "|---|---:|---:|---:|---:|",
        ]
        out += [
            f"| {r['kernel']} | {r['ms']:.4f} | {r['gbs']:.0f} | {r['pct_of_copy_bw']:.1f} | "
            f"{r['speedup_vs_torch']:.3f} |"
            if r.get("speedup_vs_torch")
            else f"| {r['kernel']} | {r['ms']:.4f} | {r['gbs']:.0f} | {r['pct_of_copy_bw']:.1f} | |"
            for r in relu
        ]
    fused = [r for r in rows if r["kind"] == "fused"]
    if fused:
        out += [
            "",
            "Fused epilogue (the GEMM alone is 05; GEMM then ReLU is 05 + 06's forward):",
            "",
            "| kernel | shape | ms | TFLOP/s | / GEMM alone |",
            "|---|---|---:|---:|---:|",
        ]
        out += [
            f"| {r['kernel']} | {r['shape']} | {r['ms']:.3f} | {r['tflops']:.2f} | {r['ratio_to_gemm_only']:.3f} |"
            for r in fused
        ]
    return "\n".join(out)


def rewrite_readme(path: str, text: str, begin="<!-- results:begin -->", end="<!-- results:end -->") -> None:
    """Replace what stands between the two markers of `path` with `text`."""
    doc = Path(path).read_text()
    if begin not in doc or end not in doc:
        raise SystemExit(f"{path} has no {begin} ... {end} block to rewrite")
    head, rest = doc.split(begin, 1)
    Path(path).write_text(f"{head}{begin}\n{text}\n{end}{rest.split(end, 1)[1]}")


def _parse_shape(s: str) -> tuple[int, int, int]:
    parts = [int(x) for x in s.lower().split("x")]
    if len(parts) != 3 or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"shape {s!r}: use MxNxK")
    return tuple(parts)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m grader bench", description=__doc__.split("\n")[0])
    p.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    p.add_argument("--sizes", type=int, nargs="*", default=[1024, 2048, 4096], help="square GEMM sizes")
    p.add_argument(
        "--shapes",
        type=_parse_shape,
        nargs="*",
        default=[(2000, 3000, 1500)],
        help="extra MxNxK GEMM shapes (non-square, not tile multiples)",
    )
    p.add_argument("--relu-shape", type=int, nargs=2, default=[8192, 8192], metavar=("M", "N"))
    p.add_argument(
        "--fused-size",
        type=int,
        default=4096,
        help="fused GEMM shapes: SIZE^3 and SIZE x SIZE x 512 (a short K, where the epilogue weighs more)",
    )
    p.add_argument("--only", nargs="*", choices=["gemm", "relu", "fused"], default=["gemm", "relu", "fused"])
    p.add_argument(
        "--flush",
        choices=["clean", "write", "read"],
        default="clean",
        help="how the L2 is evicted before each timed call (grader.run.timing.flush_l2; clean: as the grader times)",
    )
    p.add_argument(
        "--warmup-ms",
        type=float,
        default=0.0,
        help="keep warming up this long before timing (lets an idle GPU raise its clocks)",
    )
    p.add_argument("--plot", metavar="FILE.png")
    p.add_argument("--save", metavar="FILE.json", help="also write {info, rows} to this file")
    p.add_argument(
        "--from",
        dest="from_json",
        metavar="FILE.json",
        help="no GPU work: read rows saved with --save (to print, plot or --readme them)",
    )
    p.add_argument(
        "--readme",
        metavar="README.md",
        help="rewrite the results tables between <!-- results:begin/end --> in this file",
    )
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        if args.readme:
            rewrite_readme(args.readme, markdown(saved["info"], saved["rows"]))
        if args.plot:
            plots.ladder_chart(saved["rows"], saved["info"].get("gpu", "")).savefig(args.plot, dpi=90)
        print(json.dumps(saved["rows"], indent=1) if args.json else format_table(saved["rows"]))
        return 0

    torch = _torch()
    if not torch.cuda.is_available():
        print("bench needs a CUDA GPU (torch sees none).", file=sys.stderr)
        return 2
    from grader.errors import CannotGrade

    opts = {"flush": args.flush, "warmup_ms": args.warmup_ms}
    try:
        shapes = [(s, s, s) for s in args.sizes] + list(args.shapes)
        rows: list[dict] = []
        if "gemm" in args.only:
            rows += bench_gemm(shapes, log=lambda m: print(m, file=sys.stderr), timing=opts)
        if "relu" in args.only:
            rows += bench_relu(*args.relu_shape, timing=opts)
        if "fused" in args.only:
            f = args.fused_size
            rows += bench_fused([(f, f, f), (f, f, 512)], timing=opts)
    except CannotGrade as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    info = gpu_info() | {"timing": opts}
    if args.save:
        Path(args.save).write_text(json.dumps({"info": info, "rows": rows}, indent=1))
    if args.readme:
        rewrite_readme(args.readme, markdown(info, rows))
    if args.plot and any(r["kind"] == "gemm" for r in rows):
        plots.ladder_chart(rows, info.get("gpu", "")).savefig(args.plot, dpi=90)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"# {info.get('gpu')}  torch {info.get('torch')}  CUDA {info.get('cuda')}  {info['date']}")
        print(format_table(rows))
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":  # python -m grader.course.bench [...] works too
    sys.exit(main(sys.argv[1:]))
