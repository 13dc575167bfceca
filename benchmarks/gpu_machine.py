"""Notebook 00's GPU figures: latencies, bandwidth, FMA rate per SM, measured on this GPU.

    python benchmarks/gpu_machine.py --save kernels/results/h200_machine.json --plot kernels/results/h200_machine.png

Runs grader.course.machine's probes (kernels/00_machine.cu, built by the course's toolchain) and writes
one JSON file that notebook 00 reads (grader.course.machine.h200()). About a minute on an H200.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.course import machine  # noqa: E402


def nvidia_smi() -> str:
    try:
        return subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--save", type=Path, default=machine.RESULTS)
    p.add_argument("--plot", type=Path, default=None, help="PNG of the latency and bandwidth sweeps")
    args = p.parse_args(argv)

    import torch

    gpu = machine.GpuProbes()
    out = {
        "status": "measured",
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": gpu.facts(),
        "nvidia_smi_before": nvidia_smi(),
    }
    print(json.dumps(out["gpu"], indent=1), flush=True)
    steps = [
        ("latency_cycles", gpu.latency_table),
        ("latency_sweep", gpu.latency_sweep),
        (
            "latency_sweep_max_shared",
            lambda: gpu.latency_sweep([fp for fp in machine.SWEEP_FOOTPRINTS if fp <= 1 * machine.MB], carveout=100),
        ),
        ("bandwidth_sweep", gpu.bandwidth_sweep),
        ("fma_rate", gpu.fma_rate),
    ]
    for name, fn in steps:  # each part on its own: one failure leaves the others in the file
        try:
            out[name] = fn()
        except Exception as e:  # noqa: BLE001 (report and go on)
            out[name] = None
            out.setdefault("errors", {})[name] = f"{type(e).__name__}: {e}"
        print(name, json.dumps(out[name], indent=None), flush=True)
    clocks = [r["clock_MHz"] for r in out.get("latency_sweep") or [] if r.get("clock_MHz")]
    out["sm_clock_MHz_from_chase"] = sorted(clocks)[len(clocks) // 2] if clocks else None
    out["nvidia_smi_after"] = nvidia_smi()
    out["cpu"] = machine.cpu_roofline()
    args.save.parent.mkdir(parents=True, exist_ok=True)
    args.save.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.save}")
    if args.plot:
        from grader.course import plots

        sweep = out.get("latency_sweep") or []
        fig = plots.lines(
            [r["footprint"] / 1024 for r in sweep],
            {"cycles per load": [r["cycles"] for r in sweep]},
            xlabel="chain footprint (KB)",
            ylabel="cycles per dependent load",
            title=f"pointer chase, {out['gpu']['name']}",
        )
        fig.savefig(args.plot, dpi=120, bbox_inches="tight")
        print(f"wrote {args.plot}")
    return 1 if out.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
