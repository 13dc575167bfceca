"""The worker's guard zones: an out-of-bounds write is seen, an in-bounds one is not."""

import torch

from grader import worker


def test_guarded_output_is_poisoned_and_clean_guards_report_nothing():
    t, base = worker._guarded([3, 5], torch.float32, "cpu")
    assert t.shape == (3, 5) and t.is_contiguous() and torch.isnan(t).all()
    t.fill_(1.0)  # every in-bounds element written
    assert worker._damage("C", base, t.numel(), is_input=False) is None


def test_write_past_the_end_and_before_the_start_are_named():
    t, base = worker._guarded([4, 4], torch.float32, "cpu")
    base[worker.GUARD + 16 + 2] = 0.0
    assert "wrote past the end of C" in worker._damage("C", base, 16, is_input=False)
    t2, base2 = worker._guarded([4], torch.int32, "cpu")
    base2[worker.GUARD - 1] = 7
    assert "before the start of mask" in worker._damage("mask", base2, 4, is_input=False)


def test_input_guards_differ_from_output_poison():
    a = torch.randn(2, 3)
    t, base = worker._guarded([2, 3], torch.float32, "cpu", a)
    assert torch.equal(t, a)
    # a NaN read from an input's guard and stored into an output's guard must not look untouched
    _, out_base = worker._guarded([1], torch.float32, "cpu")
    out_base[worker.GUARD + 1] = base[0]
    assert worker._damage("C", out_base, 1, is_input=False) is not None
