"""Thresholds on any GPU (grader.judge.calibration): which calibration a verdict uses; measuring, once per GPU model.

The GPU is simulated (its name and the measurement are monkeypatched); the measurement itself runs on a
GPU in test_measured_calibration_passes_the_shipped_solutions and in benchmarks/calibration_check.py.
"""

import functools
import json

import pytest

from grader.judge import calibration
from grader.spec import exercises


@pytest.fixture
def gpu(monkeypatch, tmp_path):
    """A fake GPU named by the test; measure() counted and answered with a fixed speed-up of 2.0x."""
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GRADER_THRESHOLDS", raising=False)
    monkeypatch.delenv("GRADER_CALIBRATION", raising=False)
    state = {"name": "Tesla T4", "measured": []}
    monkeypatch.setattr(calibration, "gpu_name", lambda: state["name"])

    def fake_measure(ex, repeat=None, grade_one=None):
        state["measured"].append((state["name"], ex.name))
        return {
            "threshold": round(0.8 * 2.0, 2),
            "speedups": {ex.reference: 2.0},
            "measured": "2026-12-01 11:00",
            "gpu": state["name"],
            "nvcc": "12.5",
        }

    monkeypatch.setattr(calibration, "measure", fake_measure)
    return state


def test_on_an_h200_the_committed_calibration_is_used(gpu):
    gpu["name"] = "NVIDIA H200"
    ex, how = calibration.resolve(exercises.get("tiled"))
    assert ex.threshold == exercises.EXERCISES["tiled"].threshold and how == calibration.COMMITTED
    assert gpu["measured"] == []


def test_another_gpu_is_measured_once_and_cached_per_model(gpu, tmp_path):
    ex, how = calibration.resolve(exercises.get("tiled"))
    assert ex.threshold == 1.6 and how.startswith("measured here on Tesla T4")
    ex, how = calibration.resolve(exercises.get("tiled"))  # cached: not measured again
    assert ex.threshold == 1.6 and how.startswith("measured on Tesla T4") and "cached" in how
    assert gpu["measured"] == [("Tesla T4", "tiled")]
    cached = json.loads(calibration.cache_path("Tesla T4").read_text())
    assert cached["tiled"]["threshold"] == 1.6 and cached["tiled"]["gpu"] == "Tesla T4"

    gpu["name"] = "NVIDIA L4"  # another model: its own measurement
    calibration.resolve(exercises.get("tiled"))
    assert gpu["measured"] == [("Tesla T4", "tiled"), ("NVIDIA L4", "tiled")]


def test_a_thresholds_file_wins_and_is_named(gpu, tmp_path):
    f = tmp_path / "mine.json"
    f.write_text(json.dumps({"tiled": 1.1}))
    ex, how = calibration.resolve(exercises.get("tiled", f), f)
    assert ex.threshold == 1.1 and how == "file mine.json" and gpu["measured"] == []


def test_forced_modes(gpu, monkeypatch):
    monkeypatch.setenv("GRADER_CALIBRATION", "committed")
    assert calibration.resolve(exercises.get("naive"))[1] == calibration.COMMITTED
    gpu["name"] = "NVIDIA H200"
    monkeypatch.setenv("GRADER_CALIBRATION", "measure")  # the H200 check against the committed numbers
    ex, how = calibration.resolve(exercises.get("naive"))
    assert how.startswith("measured here on NVIDIA H200") and gpu["measured"] == [("NVIDIA H200", "naive")]


def test_the_shipped_solutions_are_the_ones_the_h200_calibration_used():
    for name, ex in exercises.EXERCISES.items():
        if name not in exercises.SHIPPED_SPEEDUP_H200:  # timed on the CPU (cpu_blocked): no GPU calibration
            continue
        found = calibration.shipped_solutions(ex)
        assert set(found) == set(exercises.SHIPPED_SPEEDUP_H200[name]), name
        assert all('extern "C"' in src for src in found.values())


def test_the_verdict_names_its_calibration(monkeypatch):
    """grade() on a (simulated) GPU puts the calibration in the Result and in the speed message."""
    from grader.judge import grade

    res = grade.Result("tiled", "cuda", correct=True, calibration="measured here on Tesla T4")
    ex = exercises.get("tiled")
    run = type("Run", (), {"crashed": False, "timed_out": False})()
    meta = {"timing": {"kernel": {"median_ms": 1.0}, "baseline": {"median_ms": 2.0}, "cublas": {"median_ms": 0.5}}}
    run.messages = [(meta, {})]
    monkeypatch.setattr(grade, "plausibility", lambda *a, **k: "")
    grade._verdict_speed(res, ex, run)
    assert res.passed and "thresholds: measured here on Tesla T4" in res.message
    assert res.as_dict()["calibration"] == "measured here on Tesla T4"


@pytest.mark.gpu
def test_measured_calibration_passes_the_shipped_solutions(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    from grader.judge import grade

    entry = calibration.measure(exercises.get("tiled"), grade_one=functools.partial(grade.grade_at, backend="cuda"))
    assert entry["threshold"] <= 0.8 * min(entry["speedups"].values()) + 0.01
    assert set(entry["speedups"]) == set(exercises.SHIPPED_SPEEDUP_H200["tiled"])


def test_a_fixed_bar_holds_on_other_gpus_where_the_shipped_solutions_clear_it():
    # relu_mask's 1.00x means "beats PyTorch's pair" and gemm_relu's 1.03x "the fusion won": 80 % of a
    # shipped 1.19x (0.95x) would let a slower pair pass. Below the bar, 95 % of the slower solution.
    assert calibration.threshold_from("relu_mask", 1.19) == exercises.RELU_THRESHOLD == 1.0
    assert calibration.threshold_from("gemm_relu", 1.11) == exercises.FUSION_THRESHOLD
    assert calibration.threshold_from("relu_mask", 0.90) == 0.85  # a GPU where our pair loses
    assert calibration.threshold_from("tiled", 1.60) == 1.28  # the others: 80 %


def test_measure_uses_the_fixed_bar(monkeypatch):
    from grader.judge import grade

    monkeypatch.setattr(calibration, "shipped_solutions", lambda ex: {"a.cu": "x", "b.ipynb": "y"})
    speeds = {"x": 1.19, "y": 1.25}
    graded = []  # through the seam grade() passes: at the threshold given, never resolved again

    def grade_one(ex, src):
        graded.append((ex.name, ex.threshold))
        return grade.Result(ex.name, "cuda", correct=True, speedup=speeds[src])

    monkeypatch.setattr(calibration, "gpu_name", lambda: "Tesla T4")
    assert calibration.measure(exercises.get("relu_mask"), grade_one=grade_one)["threshold"] == 1.0
    assert calibration.measure(exercises.get("tiled"), grade_one=grade_one)["threshold"] == round(0.8 * 1.19, 2)
    assert ("tiled", exercises.EXERCISES["tiled"].threshold) in graded
