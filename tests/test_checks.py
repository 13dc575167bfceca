import torch

from grader.spec import checks, exercises


def _case(exercise="naive", shape=(127, 253, 61), seed=0):
    return exercises.kind(exercise).make_case(shape, torch.Generator().manual_seed(seed))


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
        acc += a[:, k : k + 1] * b[k : k + 1, :]
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
    assert "read outside A or B" in checks.hint([(c.shape, mm)], [], exercises.kind("naive"))


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


# ---------------------------------------------------------------------------- ReLU and epilogue hints
def _relu_outputs(c):
    x = c.inputs["X"]
    keep = checks.unpack_mask(c.inputs["mask"], c.shape[1])[:, : c.shape[1]]
    return {"Y": x.clamp_min(0), "mask": checks.pack_mask(x > 0), "dX": torch.where(keep, c.inputs["dY"], 0.0)}


def _hint(c, outs, exercise):
    mms = [(c.shape, m) for n, o in outs.items() if (m := checks.compare(c, n, o))]
    return mms, checks.hint(mms, [], exercises.kind(exercise))


def test_relu_backward_is_checked_against_the_graders_own_mask():
    c = _case("relu_mask", (6, 70))
    outs = _relu_outputs(c)
    assert all(checks.compare(c, n, o) is None for n, o in outs.items())
    # a backward that uses X > 0 (forward's mask) instead of the mask it was given fails, and is told so
    outs["dX"] = torch.where(c.inputs["X"] > 0, c.inputs["dY"], 0.0)
    mms, h = _hint(c, outs, "relu_mask")
    assert [m.output for _, m in mms] == ["dX"] and "mask it is given" in h


def test_relu_forward_that_writes_nothing_is_named():
    c = _case("relu_mask", (6, 70))
    outs = _relu_outputs(c)
    outs["Y"] = checks.poison_float32((6, 70))
    outs["mask"] = torch.full_like(outs["mask"], checks.POISON_MASK)
    outs["dX"] = torch.zeros(6, 70)
    mms, h = _hint(c, outs, "relu_mask")
    assert "relu_forward wrote nothing" in h
    mask_mm = next(m for _, m in mms if m.output == "mask")
    assert "0xFFFFFFFF, not NaN" in mask_mm.describe(c.shape) and "words wrong" in mask_mm.describe(c.shape)


def test_mask_bit_order_reversed_is_named_in_forward_and_backward():
    c = _case("relu_mask", (5, 70))
    outs = _relu_outputs(c)
    rev = dict(outs, mask=checks._bit_reversed(outs["mask"]))
    assert "bit order is reversed" in _hint(c, rev, "relu_mask")[1]
    n = c.shape[1]
    rev_bits = checks.unpack_mask(checks._bit_reversed(c.inputs["mask"]), n)[:, :n]
    back = dict(outs, dX=torch.where(rev_bits, c.inputs["dY"], 0.0))
    assert "reverse order" in _hint(c, back, "relu_mask")[1]


def test_mask_of_y_ge_0_sets_every_bit_and_says_so():
    c = _case("relu_mask", (5, 64))
    outs = dict(_relu_outputs(c), mask=checks.pack_mask(torch.ones(5, 64, dtype=torch.bool)))
    assert "Y > 0" in _hint(c, outs, "relu_mask")[1] and "never written" in _hint(c, outs, "relu_mask")[1]


def test_missing_word_guard_zeroes_the_next_rows_first_word():
    c = _case("relu_mask", (5, 40))  # W = 2: a grid of 8 warps per row stores 6 words too many
    outs = _relu_outputs(c)
    outs["mask"] = outs["mask"].clone()
    outs["mask"][1:, 0] = 0  # what the warps past W of the row before stored
    assert bool((_relu_outputs(c)["mask"][1:, 0] != 0).any())  # so some words are wrong
    assert "word < W" in _hint(c, outs, "relu_mask")[1]
    assert "word < W" in checks.error_hint("wrote past the end of mask: 6 element(s) in the 1024 after it", (5, 40))


def test_gemm_relu_missing_bias_bias_by_row_and_missing_relu_are_named():
    c = _case("gemm_relu", (9, 40, 17))
    a, b, bias = (c.inputs[k] for k in ("A", "B", "bias"))
    good = (a @ b + bias).relu()
    assert checks.compare(c, "C", good) is None
    no_bias = (a @ b).relu()
    mms, h = _hint(c, {"C": no_bias, "mask": checks.pack_mask(no_bias > 0)}, "gemm_relu")
    assert "without the bias" in h and all(m.note for _, m in mms)
    by_row = (a @ b + bias[:9, None]).relu()
    assert "by row" in _hint(c, {"C": by_row}, "gemm_relu")[1]
    assert "without the ReLU" in _hint(c, {"C": a @ b + bias}, "gemm_relu")[1]


def test_fallback_hints_are_the_exercises_own():
    c = _case("relu_mask", (5, 40))
    outs = dict(_relu_outputs(c), Y=torch.randn(5, 40))
    assert "Y[i][j] = max(X[i][j], 0)" in _hint(c, outs, "relu_mask")[1]
    c = _case("gemm_relu", (9, 40, 17))
    assert "bias[col]" in _hint(c, {"C": torch.randn(9, 40)}, "gemm_relu")[1]


def test_separating_condition_names_the_dimension():
    passed = [(17, 33, 65), (131, 9, 97), (64, 64, 64), (5, 7, 96)]
    assert checks.separating_condition([(13, 8, 225), (7, 3, 256)], passed) == "K > 97"
    assert (
        checks.separating_condition([(41, 59, 32), (9, 9, 64)], [(17, 33, 65), (131, 9, 97), (3, 5, 7)])
        == "K is a multiple of 32"
    )
    assert checks.separating_condition([(41, 59, 32)], [(1, 1, 1)]) == ""  # too little to go on


def test_scaled_inputs_pass_a_float32_gemm_and_fail_one_that_drops_small_terms():
    """Drawn cases scale A and B by powers of two (exact): the tolerance, relative to |A| |B|, holds as it is."""
    g = torch.Generator().manual_seed(3)
    scales = set()
    for variant in range(len(checks.GEMM_SCALES)):
        c = exercises.kind("naive").make_case((33, 17, 70), g, variant=variant)
        a, b = c.inputs["A"], c.inputs["B"]
        assert checks.compare(c, "C", a @ b) is None, c.scale
        scales.add(c.scale)
        if c.scale.startswith("A x 2^-24"):
            dropped = torch.where(a.abs() < 1e-6, 0.0, a) @ b
            mm = checks.compare(c, "C", dropped)
            assert mm is not None and "A x 2^-24" in mm.describe(c.shape)
            assert "not unit-scale" in checks.hint([(c.shape, mm)], [(1, 1, 1), (17, 33, 65), (64, 64, 64)])
    assert "" in scales and len(scales) == len(checks.GEMM_SCALES)


def test_relu_special_values_have_an_exact_reference_and_arithmetic_relu_is_named():
    g = torch.Generator().manual_seed(4)
    c = exercises.kind("relu_mask").make_case((40, 70), g, variant=1)
    x = c.inputs["X"]
    assert torch.isinf(x).any() and (x.abs() > 1e38).any() and ((x != 0) & (x.abs() < 2.0**-126)).any()
    assert not torch.isnan(x).any()  # the contract leaves ReLU of NaN undefined
    assert checks.compare(c, "Y", torch.where(x > 0, x, 0.0)) is None  # inf where x is inf passes
    mm = checks.compare(c, "Y", 0.5 * (x + x.abs()))
    assert mm is not None and "FLT_MAX" in checks.hint(
        [(c.shape, mm)], [(1, 1), (3, 31), (17, 33)], exercises.kind("relu_mask")
    )


def test_the_uninitialised_local_pattern_gets_its_own_hint():
    c = _case(shape=(4, 5, 6))
    out = c.inputs["A"] @ c.inputs["B"] + checks.UNINIT_FLOAT
    mm = checks.compare(c, "C", out)
    assert "Initialise the accumulator" in checks.hint([(c.shape, mm)], [], exercises.kind("naive"))


def test_launch_errors_get_the_cause_not_a_barrier():
    same = (
        "gemm: shared-memory race on As[0][0]: thread (1,0,0) writes it at k.cu:9, but thread (0,0,0) wrote it at "
        "k.cu:9 with no __syncthreads() in between (a barrier is missing, e.g. after the tile loads)"
    )
    assert "Two threads store the same shared element" in checks.error_hint(same, (17, 33, 65))
    other = same.replace("wrote it at k.cu:9", "wrote it at k.cu:12")
    assert "Two threads" not in checks.error_hint(other, (17, 33, 65))
    mask = "relu_forward: global-memory race on mask[0][0]: thread (8,0,0) of block (0,0,0) reads it at r.cu:12"
    assert "atomicOr" in checks.error_hint(mask, (3, 31)) and "__ballot_sync" in checks.error_hint(mask, (3, 31))
    grid = "invalid launch configuration: grid (1,70001,1), block (32,1,1)"
    assert "at most 65535" in checks.error_hint(grid, (70001, 3, 3)) and checks.error_hint(grid, (17, 3, 3)) == ""
