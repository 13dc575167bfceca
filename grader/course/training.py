"""Notebook 08's measurements of a training step: time, memory and the share of each kernel.

    figures = training.measure_training(model, X, y)   # GPU only (model: a grader.spec.mlp.MLP)
    print(training.training_table(figures))
    training.training_measured()                      # the committed H200 figures (CPU path)

benchmarks/gpu_training.py records them on a GPU into kernels/results/h200_training.json.
"""

from __future__ import annotations

TRAINING_RESULTS = "h200_training.json"  # python benchmarks/gpu_training.py --save kernels/results/h200_training.json


def training_measured() -> dict | None:
    """The committed H200 figures of notebook 08's measurements, or None while they are not measured."""
    import json

    from grader.course.plots import RESULTS_DIR

    path = RESULTS_DIR / TRAINING_RESULTS
    return json.loads(path.read_text()) if path.is_file() else None


# which part of a step a torch op's own GPU time belongs to (torch.profiler's key, first match wins); the
# kernel file's launchers are timed with CUDA events of their own (grader.spec.mlp.Launchers.events): the
# profiler may not tie kernels launched from the file's own CUDA runtime to the op that launched them
STEP_PARTS = (
    ("aten::addmm", "cuBLAS GEMM"),
    ("aten::mm", "cuBLAS GEMM"),
    ("aten::relu", "ReLU (torch)"),
    ("aten::clamp", "ReLU (torch)"),
    ("aten::threshold_backward", "ReLU backward (torch)"),
    ("aten::sum", "bias gradients (sums)"),
    ("aten::copy_", "transposes (copies)"),
    ("aten::clone", "transposes (copies)"),
    ("softmax", "loss"),
    ("nll_loss", "loss"),
    ("aten::_foreach", "Adam"),
    ("adam", "Adam"),
)


def _part(key: str) -> str:
    return next((part for prefix, part in STEP_PARTS if key.startswith(prefix) or prefix in key), "other (torch)")


def measure_training(model, X, y, seconds: float = 5.0, profile_steps: int = 5) -> dict:
    """GPU only. One training step (forward, cross-entropy, backward, Adam) of `model` (a grader.spec.mlp.MLP),
    of the same MLP with torch's GEMMs in its Linear layers and backward, and of its nn.Linear + nn.ReLU
    twin: median step time (grader.run.timing.time_gpu: CUDA events, warm-up, round-robin), the memory the
    forward keeps and its peak (torch.cuda.max_memory_allocated, from before the forward), and the GPU
    time of a step by part (the file's launchers by CUDA events around each call; torch's ops by
    torch.profiler, each op's own kernels, STEP_PARTS)."""
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile

    from grader.spec import mlp
    from grader.run.timing import time_gpu

    torch.backends.cuda.matmul.allow_tf32 = False  # float32 GEMMs, as the course's kernels
    with_torch_gemm = mlp.MLP(
        mlp.Launchers(model.k.mod, torch_gemm=True),
        layer=model.layer,
        sizes=[model.weights[0].shape[0]] + [w.shape[1] for w in model.weights],
    )
    with_torch_gemm.load_state_dict(model.state_dict())
    models = {"yours": model, "yours, torch's GEMMs": with_torch_gemm, "nn.Linear + nn.ReLU": mlp.torch_twin(model)}
    steps = {}
    for name, m in models.items():
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)

        def step(m=m, opt=opt):
            loss = F.cross_entropy(m(X), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        steps[name] = step
    times = time_gpu(steps, max_seconds=seconds)
    memory, parts = {}, {}
    for name, m in models.items():
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        loss = F.cross_entropy(m(X), y)
        torch.cuda.synchronize()
        memory[name] = {
            "kept_MB": (torch.cuda.memory_allocated() - base) / 1e6,
            "peak_MB": (torch.cuda.max_memory_allocated() - base) / 1e6,
        }
        loss.backward()
        del loss
        launchers = getattr(m, "k", None)
        if launchers is not None:
            launchers.events = {}
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(profile_steps):
                steps[name]()
            torch.cuda.synchronize()
        share: dict[str, float] = {}
        if launchers is not None:
            for launcher, pairs in launchers.events.items():
                share[f"{launcher} (yours)"] = sum(s.elapsed_time(e) for s, e in pairs) / profile_steps
            launchers.events = None
        for e in prof.key_averages():
            if e.device_type.name == "CPU" and e.self_device_time_total and not e.key.startswith("gemm_course::"):
                share[_part(e.key)] = share.get(_part(e.key), 0.0) + e.self_device_time_total / 1e3 / profile_steps
        parts[name] = {part: round(ms, 4) for part, ms in sorted(share.items(), key=lambda kv: -kv[1])}
    saved = mlp.saved_bytes(model, X, y)
    return {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "sizes": [model.weights[0].shape[0]] + [w.shape[1] for w in model.weights],
        "batch": len(X),
        "step_ms": {k: t.median_ms for k, t in times.items()},
        "step_ms_p10_p90": {k: [t.p10_ms, t.p90_ms] for k, t in times.items()},
        "memory": memory,
        "saved_bytes": saved,
        "step_parts_ms": parts,
    }


def train_digits(k, hidden: int, steps: int, batch: int = 128) -> dict:
    """benchmarks/gpu_training.py's record of grader.spec.mlp.train_digits: its figures, no model."""
    from grader.spec import mlp

    r = mlp.train_digits(k, hidden, steps, batch)
    return {
        "sizes": r["sizes"],
        "steps": steps,
        "batch": batch,
        "test_accuracy": r["test_accuracy"],
        "final_loss": r["losses"][-1],
    }


def training_table(r: dict) -> str:
    """measure_training's (or the committed JSON's) figures as a few lines of text."""
    sizes = " -> ".join(map(str, r["sizes"]))
    when = f", {r['date']}" if "date" in r else ""
    lines = [
        f"{r['gpu']}, MLP {sizes}, batch {r['batch']} (torch {r['torch']}{when})",
        f"{'':<24}{'step ms':>9}{'kept MB':>10}{'peak MB':>10}",
    ]
    for name, ms in r["step_ms"].items():
        mem = r["memory"][name]
        lines.append(f"{name:<24}{ms:>9.3f}{mem['kept_MB']:>10.1f}{mem['peak_MB']:>10.1f}")
    s = r["saved_bytes"]
    ours, theirs = s["yours"], s["nn.Linear + nn.ReLU"]
    lines.append(
        f"saved for backward: one ReLU {ours['one ReLU'] / 1e6:.2f} MB (mask) vs "
        f"{theirs['one ReLU'] / 1e6:.2f} MB (Y), 1/{theirs['one ReLU'] / ours['one ReLU']:.0f}; "
        f"all activations {ours['activations'] / 1e6:.1f} vs {theirs['activations'] / 1e6:.1f} MB"
    )
    if "digits" in r:
        d = r["digits"]
        lines.append(
            f"digits, MLP {' -> '.join(map(str, d['sizes']))}, {d['steps']} steps of {d['batch']}: "
            f"test accuracy {100 * d['test_accuracy']:.1f} %"
        )
    return "\n".join(lines)
