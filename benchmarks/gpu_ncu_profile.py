"""Nsight Compute counts of every reference kernel, to validate the CPU backend's access profile.

On the GPU machine (repo root; writes $OUT/ncu_profile.csv, $OUT/ncu_manifest.json, $OUT/ncu_profile.log):

    python3 benchmarks/gpu_ncu_profile.py --out $OUT

It runs itself under `ncu --clock-control none --profile-from-start off --csv --metrics ...` as a
driver that launches each launcher of each file in kernels/ once per shape, between
cudaProfilerStart/Stop, so that only those launches are profiled (torch's own kernels, e.g. the
random inputs, are not). The manifest lists the launches in order; ncu's "ID" column counts the
profiled kernels in the same order (each launcher launches exactly one kernel; the driver checks
that the CSV has as many). `benchmarks/profile_vs_ncu.py` joins the CSV with the CPU profile
into kernels/results/profile_vs_ncu.md.
"""

from __future__ import annotations

from grader.spec import exercises
import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (file in kernels/, exercise whose launchers it defines)
KERNELS = [
    ("01a_naive_uncoalesced.cu", "naive"),
    ("01_naive.cu", "naive"),
    ("02_tiled.cu", "tiled"),
    ("03_bank_conflicts.cu", "conflict_free"),
    ("03_conflict_free.cu", "conflict_free"),
    ("04a_register_1d.cu", "register_blocked"),
    ("04_register_blocked.cu", "register_blocked"),
    ("05_warptile_pipelined.cu", "register_blocked"),
    ("06_relu_mask.cu", "relu_mask"),
    ("07_gemm_relu.cu", "gemm_relu"),
    ("07b_gemm_relu_warptile.cu", "gemm_relu"),
]
GEMM_SHAPES = [(256, 256, 256), (200, 129, 300)]
RELU_SHAPES = [(1024, 1024), (1000, 1031)]

# What the CPU profile counts, under Nsight Compute's names (grader/judge/profile.py uses the same names).
METRICS = [
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "smsp__inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_ldgsts.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__grid_size",
    "launch__block_size",
    "gpu__time_duration.sum",
]
# Without these the run is pointless; the others are dropped (and logged) if this ncu lacks them.
CORE = [m for m in METRICS if m.startswith("l1tex__")]


def shapes_for(exercise: str):
    return RELU_SHAPES if exercise == "relu_mask" else GEMM_SHAPES


def launches():
    """Every (file, exercise, launcher, shape) the driver profiles, in order."""

    for file, ex in KERNELS:
        for shape in shapes_for(ex):
            for launcher in exercises.launchers(ex):
                yield file, ex, launcher.name, tuple(shape)


def driver(manifest: Path, backend: str = "cuda") -> None:
    import torch

    from grader.run import binding, worker
    from grader.spec import contract

    torch.backends.cuda.matmul.allow_tf32 = False
    done = []
    for file, ex in KERNELS:
        mod = binding.load(ROOT / "kernels" / file, ex, backend=backend)
        for shape in shapes_for(ex):
            gen = torch.Generator(device=backend).manual_seed(1)
            values = dict(exercises.kind(ex).random_inputs(shape, gen))
            dims = worker._dims(ex, shape)
            for launcher in exercises.launchers(ex):
                outs = [t for t, _ in worker._alloc_outputs(launcher, dims, torch.device(backend))]
                for n, t in zip(contract.outputs(launcher), outs):
                    values.setdefault(n, t)
                args = [values[n] for n in contract.inputs(launcher)] + outs
                if backend == "cuda":
                    torch.cuda.synchronize()
                    torch.cuda.profiler.start()
                getattr(mod.launch, launcher.name)(*args)
                if backend == "cuda":
                    torch.cuda.synchronize()
                    torch.cuda.profiler.stop()
                mod.check_error(launcher.name, synchronize=True)
                done.append(
                    {"id": len(done), "file": file, "exercise": ex, "launcher": launcher.name, "shape": list(shape)}
                )
                print(f"{len(done) - 1}: {file} {launcher.name} {shape}", file=sys.stderr, flush=True)
    manifest.write_text(json.dumps(done, indent=1))


def available_metrics(ncu: str) -> list[str]:
    """METRICS that this ncu knows for this GPU (--query-metrics lists base names)."""
    try:
        out = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return CORE
    names = {line.split()[0] for line in out.splitlines() if line.strip() and not line.startswith(("-", "="))}
    if len(names) < 50:  # not a listing we understand: keep to the core set
        return CORE
    keep = [m for m in METRICS if m.rsplit(".", 1)[0] in names or m in names]
    return keep if all(m in keep for m in CORE) else CORE


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    ap.add_argument("--driver", action="store_true", help="(internal) run the launches; ncu runs this")
    ap.add_argument("--manifest")
    ap.add_argument("--backend", default="cuda", help="(internal) cpu: try the driver without a GPU")
    a = ap.parse_args()
    if a.driver:
        driver(Path(a.manifest), a.backend)
        return 0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    metrics = available_metrics(ncu)
    dropped = [m for m in METRICS if m not in metrics]
    manifest = out / "ncu_manifest.json"
    cmd = [
        ncu,
        "--clock-control",
        "none",
        "--profile-from-start",
        "off",
        "--csv",
        "--metrics",
        ",".join(metrics),
        sys.executable,
        str(Path(__file__).resolve()),
        "--driver",
        "--manifest",
        str(manifest),
    ]
    env = dict(os.environ, PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}", PYTHONUNBUFFERED="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    rows = [line for line in proc.stdout.splitlines() if line.startswith('"')]
    (out / "ncu_profile.csv").write_text("\n".join(rows) + "\n")
    (out / "ncu_profile.log").write_text(
        f"$ {' '.join(cmd)}\nrc={proc.returncode}\ndropped metrics: {dropped}\n"
        f"--- stdout (non-CSV) ---\n"
        + "\n".join(l for l in proc.stdout.splitlines() if not l.startswith('"'))
        + f"\n--- stderr ---\n{proc.stderr}"
    )
    ids = {r["ID"] for r in csv.DictReader(io.StringIO("\n".join(rows)))} if rows else set()
    expected = len(json.loads(manifest.read_text())) if manifest.exists() else -1
    print(
        f"ncu rc={proc.returncode}; {len(ids)} kernels profiled, {expected} launches in the manifest; "
        f"dropped metrics: {dropped or 'none'}; files in {out}"
    )
    return 0 if proc.returncode == 0 and len(ids) == expected else 1


if __name__ == "__main__":
    sys.exit(main())
