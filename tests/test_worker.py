"""The worker's guard zones: an out-of-bounds write is seen, an in-bounds one is not."""

import torch

from grader.run import worker
from grader.run.runner.memory import Local

DIMS = {"M": 4, "N": 4, "K": 3, "W": 1}


def test_guarded_output_is_poisoned_and_clean_guards_report_nothing():
    mem = Local.plain("tiled")
    h = worker._alloc(mem, "C", {"M": 3, "N": 5})
    t = mem.tensor(h)
    assert t.shape == (3, 5) and t.is_contiguous() and torch.isnan(t).all()
    t.fill_(1.0)  # every in-bounds element written
    assert worker._damage("C", mem, h) is None


def test_write_past_the_end_and_before_the_start_are_named():
    mem = Local.plain("relu_mask")
    h = worker._alloc(mem, "C", DIMS)
    mem._bases["C"][worker.GUARD + 16 + 2] = 0
    assert "wrote past the end of C" in worker._damage("C", mem, h)
    h2 = worker._alloc(mem, "mask", DIMS)
    mem._bases["mask"][worker.GUARD - 1] = 7
    assert "before the start of mask" in worker._damage("mask", mem, h2)


def test_input_guards_differ_from_output_poison():
    mem = Local.plain("tiled")
    a = torch.randn(4, 3)
    h = worker._alloc(mem, "A", DIMS, a)
    assert torch.equal(mem.tensor(h), a)
    # a NaN read from an input's guard and stored into an output's guard must not look untouched
    out = worker._alloc(mem, "C", {"M": 1, "N": 1})
    mem._bases["C"][worker.GUARD + 1] = mem._bases["A"][0]
    assert worker._damage("C", mem, out) is not None


def test_a_shape_past_the_launch_limits_runs_once_in_order(monkeypatch):
    """The shapes past gridDim.y's limit, a 2^18-float array and 1024 threads (grader.spec.shapes.past_limits) test
    the launch and the indexing: they run in order only, with the race detector on. A shuffled second run of the
    tall one (M ~ 70000: two million CUDA threads) cost 0.75 s of a 3.9 s CPU grade of kernels/02_tiled.cu, and
    finds what the in-order run and the small shapes' shuffled runs find."""
    runs = []
    monkeypatch.setattr(worker, "run_case", lambda mem, shape, inputs, digests: runs.append(tuple(shape)) or {})

    class Mem:
        backend = "cpu"

        def configure_cpu(self, schedule_seed=0):
            pass

    shapes = [(64, 64, 64), (68855, 5, 3), (1229, 3, 251), (3, 3007, 5), (19, 15, 1079)]
    cases = [({"case": i, "shape": list(s)}, {}) for i, s in enumerate(shapes)]
    assert worker._serve_cases({"schedules": [0, 12345]}, cases, Mem(), None, lambda meta, arrays=None: None) == 0
    assert runs == [shapes[0], shapes[0], shapes[1], shapes[2], shapes[3], shapes[4], shapes[4]], runs


def test_every_case_of_a_counted_grade_records_its_first_run_alike(monkeypatch):
    """No case can be told from the counted ones by what its run costs: in a grade that counts cases 1 and 3, the
    first run of every case records the same sample (seed, budget) and ends it; only cases 1 and 3 send what they
    counted (before, only they recorded, and a launcher that timed a probe kernel saw the difference:
    tests/submissions/profile_detect_by_timing.cu). A case's later, shuffled schedules record nothing."""
    from grader.compile.cpu import counters

    calls = []
    monkeypatch.setattr(
        counters, "configure", lambda mod, blocks, seed, budget: calls.append(("rec", blocks, seed, budget))
    )
    monkeypatch.setattr(counters, "take", lambda mod: calls.append(("take",)) or {"launches": [], "sites": []})
    monkeypatch.setattr(worker, "run_case", lambda mem, shape, inputs, digests: {})

    class Mem:
        backend = "cpu"

        def configure_cpu(self, schedule_seed=0):
            calls.append(("schedule", schedule_seed))

    req = {"schedules": [0, 12345], "profile": {"cases": [1, 3], "seed": 99, "budget": 8, "blocks": "sample"}}
    cases = [({"case": i, "shape": [1, 1, 1]}, {}) for i in range(5)]
    sent = []
    assert worker._serve_cases(req, cases, Mem(), None, lambda meta, arrays=None: sent.append(meta)) == 0
    first = [("schedule", 0), ("rec", "sample", 99, 8), ("take",)]
    unprofiled = first + [("schedule", 12345)]
    assert calls == unprofiled + first + unprofiled + first + unprofiled, calls
    assert [(m["case"], m["schedule"]) for m in sent if "profile" in m] == [(1, 0), (3, 0)]
    assert len(sent) == 8
