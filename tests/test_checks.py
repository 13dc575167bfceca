import torch

from grader import checks


def _case(exercise="naive", shape=(127, 253, 61), seed=0):
    return checks.make_case(exercise, shape, torch.Generator().manual_seed(seed))


def test_inputs_are_zero_mean_and_not_symmetric():
    c = _case(shape=(64, 64, 64))
    a, b = c.inputs["A"], c.inputs["B"]
    assert abs(a.mean()) < 0.1 and not torch.equal(a, a.T) and not torch.equal(a, b)


def test_float32_results_in_any_order_pass():
    c = _case()
    a, b = c.inputs["A"], c.inputs["B"]
    assert checks.compare(c, "C", a @ b) is None
    # k-reversed accumulation in float32: a different rounding, still float32
    acc = torch.zeros(a.shape[0], b.shape[1])
    for k in reversed(range(a.shape[1])):
        acc += a[:, k:k + 1] * b[k:k + 1, :]
    assert checks.compare(c, "C", acc) is None


def test_bfloat16_operands_fail():
    c = _case()
    low = c.inputs["A"].bfloat16().float() @ c.inputs["B"].bfloat16().float()
    assert checks.compare(c, "C", low) is not None


def test_nan_and_inf_never_pass():
    c = _case(shape=(4, 5, 6))
    good = c.inputs["A"] @ c.inputs["B"]
    for bad in (float("nan"), float("inf")):
        out = good.clone()
        out[1, 2] = bad
        mm = checks.compare(c, "C", out)
        assert mm is not None and mm.n_wrong == 1 and mm.examples[0][0] == (1, 2)


def test_unwritten_tail_gets_the_bounds_hint():
    c = _case(shape=(40, 40, 8))
    out = c.inputs["A"] @ c.inputs["B"]
    out[32:, :] = float("nan")
    mm = checks.compare(c, "C", out)
    assert mm.n_unwritten == 8 * 40
    assert "never written" in checks.hint([(c.shape, mm)], [])


def test_wrong_dimension_on_non_square_only_gets_the_index_hint():
    sq, ns = _case(shape=(16, 16, 16)), _case(shape=(16, 24, 8))
    mm = checks.compare(ns, "C", torch.zeros(16, 24))
    assert "wrong dimension" in checks.hint([(ns.shape, mm)], [sq.shape])


def test_mask_pack_round_trip_and_padding_bits_are_zero():
    bits = torch.rand(7, 70) > 0.5
    words = checks.pack_mask(bits)
    assert words.shape == (7, 3) and words.dtype == torch.int32
    back = checks.unpack_mask(words, 70)
    assert torch.equal(back[:, :70], bits) and not back[:, 70:].any()


def test_relu_case_checks_mask_bits_exactly():
    c = _case("relu_mask", (5, 40))
    mask = c.expected["mask"].clone()
    assert checks.compare(c, "mask", mask) is None
    mask[0, 1] ^= 1 << 3  # bit 3 of word 1 is column 35: a padding bit past N? no, 35 < 40
    assert checks.compare(c, "mask", mask) is not None
    pad = c.expected["mask"].clone()
    pad[2, 1] |= 1 << 20  # column 52 >= N: padding bits must be 0
    assert checks.compare(c, "mask", pad) is not None


def test_gemm_relu_reference_is_relu_of_product_plus_bias():
    c = _case("gemm_relu", (9, 33, 17))
    a, b, bias = (c.inputs[k].double() for k in ("A", "B", "bias"))
    assert torch.allclose(c.expected["C"], (a @ b + bias).clamp_min(0))
    assert checks.compare(c, "C", (c.inputs["A"] @ c.inputs["B"] + c.inputs["bias"]).relu()) is None


def test_values_computed_from_reads_outside_the_inputs_are_counted_and_hinted():
    c = _case(shape=(4, 5, 6))
    out = c.inputs["A"] @ c.inputs["B"]
    marker = torch.tensor([checks.INPUT_GUARD_BITS[torch.float32]], dtype=torch.int32).view(torch.float32)
    out[:, -1] = marker  # what x86 arithmetic leaves after multiplying by the guard NaN
    mm = checks.compare(c, "C", out)
    assert mm.n_oob_read == 4 and "read outside the inputs" in mm.describe(c.shape)
    assert "read outside A or B" in checks.hint([(c.shape, mm)], [])


def test_relu_mask_of_x_ge_0_fails_and_says_why():
    """The inputs hold exact 0.0 and -0.0; a mask built with x >= 0 is wrong there, and the hint says so."""
    c = _case("relu_mask", shape=(64, 100))
    x = c.inputs["X"]
    assert bool((x == 0).any()) and bool(torch.signbit(x[x == 0]).any())  # both signs of zero drawn
    assert checks.compare(c, "mask", checks.pack_mask(x > 0)) is None
    mm = checks.compare(c, "mask", checks.pack_mask(x >= 0))
    assert mm is not None and "x > 0" in checks.hint([((64, 100), mm)], [])


def test_relu_mask_bits_past_n_are_named_not_called_unwritten():
    c = _case("relu_mask", shape=(3, 31))
    words = checks.pack_mask(c.inputs["X"] > 0) | torch.tensor(1 << 31, dtype=torch.int64).to(torch.int32)
    mm = checks.compare(c, "mask", words)
    assert mm is not None and mm.n_unwritten == 0 and "past column N" in checks.hint([((3, 31), mm)], [])
