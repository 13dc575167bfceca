"""The capstone's figures on the GPU (issue: a ReLU that beats PyTorch, a fusion that wins at every K).

    python3 benchmarks/gpu_capstone.py --save kernels/results/h200_capstone.json

1. relu_mask: kernels/06 and notebook 06's solution, forward, backward and the pair, against torch's
   relu + threshold_backward and a device copy, round-robin in one time_gpu call at 8192 x 8192.
2. gemm_relu: kernels/07 and notebook 07's solution, each against its own `gemm` and its own `gemm`
   followed by the separate pass (kernels/07a), at M = N = 4096 and K in grader.course.fusion.KS.
Every kernel is checked against float64 / the exact mask first (grader.course.bench).
"""

import argparse
import datetime
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from grader.course import bench, fusion
from grader.run import binding
from grader.judge import submissions  # noqa: E402
from grader.run.timing import time_gpu  # noqa: E402


def relu_rows(mods: dict, m: int = 8192, n: int = 8192, seconds: float = 8.0) -> dict:
    g = torch.Generator(device="cuda").manual_seed(3)
    X = torch.randn(m, n, device="cuda", generator=g)
    dY = torch.randn(m, n, device="cuda", generator=g)
    Y, dX, Yt, cp = (torch.empty_like(X) for _ in range(4))
    Yt.copy_(torch.relu(X))  # the saved activation threshold_backward reads
    mask = torch.empty((m, (n + 31) // 32), dtype=torch.int32, device="cuda")
    fns = {
        "torch forward": lambda: torch.relu(X),
        "torch backward": lambda: torch.ops.aten.threshold_backward(dY, Yt, 0.0),
        "torch pair": lambda: (torch.relu(X), torch.ops.aten.threshold_backward(dY, Yt, 0.0)),
        "copy": lambda: cp.copy_(X),
    }
    for name, mod in mods.items():
        fns[f"{name} forward"] = lambda mod=mod: mod.launch.relu_forward(X, Y, mask)
        fns[f"{name} backward"] = lambda mod=mod: mod.launch.relu_backward(mask, dY, dX)
        fns[f"{name} pair"] = lambda mod=mod: (
            mod.launch.relu_forward(X, Y, mask),
            mod.launch.relu_backward(mask, dY, dX),
        )
    t = time_gpu(fns, max_seconds=seconds)
    e = m * n
    copy_gbs = 8 * e / (t["copy"].median_ms * 1e-3) / 1e9
    bytes_per = {"forward": 8.125, "backward": 8.125, "pair": 16.25}
    torch_bytes = {"forward": 8, "backward": 12, "pair": 20}
    out = {"shape": [m, n], "copy_GBs": copy_gbs, "rows": {}}
    for name in fns:
        who, _, part = name.rpartition(" ")
        if name == "copy":
            who, part = "copy", "copy"
        nbytes = (torch_bytes if who == "torch" else bytes_per).get(part, 8) * e
        ms = t[name].median_ms
        row = {"ms": ms, "GBs": nbytes / (ms * 1e-3) / 1e9, "spread": t[name].spread}
        row["pct_of_copy_bw"] = 100 * row["GBs"] / copy_gbs
        if who not in ("torch", "copy"):
            row["x_torch"] = t[f"torch {part}"].median_ms / ms
        out["rows"][name] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--save", metavar="FILE.json")
    ap.add_argument("--only", choices=["relu", "fusion"])
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    res = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "date": datetime.date.today().isoformat(),
        "command": "python3 benchmarks/gpu_capstone.py",
    }
    if args.only in (None, "relu"):
        mods = {
            "k06": bench.load_kernel("06_relu_mask.cu", "relu_mask"),
            "nb06": binding.load(
                submissions.read(str(ROOT / "solutions/06_relu_mask.ipynb"), "relu_mask")[0],
                "relu_mask",
                backend="cuda",
            ),
        }
        for name, mod in mods.items():
            errs = [
                bench.check_relu(mod, m, n, 7 + i)
                for i, (m, n) in enumerate([(1, 1), (17, 33), (127, 253), (3, 4096), (1000, 1031), (8192, 8192)])
            ]
            assert all(e == 0.0 for e in errs), (name, errs)
        res["relu"] = relu_rows(mods)
        for name, row in res["relu"]["rows"].items():
            print(
                f"relu {name:<16} {row['ms']:.4f} ms {row['pct_of_copy_bw']:6.1f}% of copy"
                + (f"  {row['x_torch']:.3f}x torch" if "x_torch" in row else ""),
                flush=True,
            )
    if args.only in (None, "fusion"):
        res["fusion"] = {}
        for name, (src, ex) in {
            "k07": (ROOT / "kernels/07_gemm_relu.cu", "gemm_relu"),
            "k07b": (ROOT / "kernels/07b_gemm_relu_warptile.cu", "gemm_relu"),
            "nb07": (ROOT / "solutions/07_fused_epilogue.ipynb", "gemm_relu"),
        }.items():
            mod = binding.load(submissions.read(str(src), ex)[0], ex, backend="cuda")
            errs = [bench.check_gemm_relu(mod, *s, seed=i) for i, s in enumerate(bench.CHECK_SHAPES)]
            assert all(bench._ok(e) for e in errs), (name, errs)
            res["fusion"][name] = fusion.sweep(mod)
            print(f"fusion {name}\n{fusion.table(res['fusion'][name])}", flush=True)
    if args.save:
        Path(args.save).write_text(json.dumps(res, indent=1) + "\n")
        print(f"wrote {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
