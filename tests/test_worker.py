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
