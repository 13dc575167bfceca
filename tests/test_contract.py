import ctypes

from grader.spec import contract, exercises


def test_every_exercise_has_launchers_with_a_stream_last():
    for exercise, launchers in ((n, e.launchers) for n, e in exercises.EXERCISES.items()):
        assert launchers, exercise
        for l in launchers:
            if exercises.is_host(exercise):  # plain C++ on the CPU: no stream, no GPU pointer
                assert all(t != "cudaStream_t" for t, _ in l.params)
            else:
                assert l.params[-1] == ("cudaStream_t", "stream")
            assert len(l.argtypes) == len(l.params)


def test_gemm_signature_is_the_documented_one():
    assert contract.GEMM.signature == (
        "void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream)"
    )
    assert contract.GEMM.argtypes[3] is ctypes.c_int


def test_declarations_are_extern_c_and_name_every_launcher():
    text = exercises.declarations("relu_mask")
    assert 'extern "C" void relu_forward(' in text and 'extern "C" void relu_backward(' in text


def test_mask_words_rounds_up():
    assert [contract.mask_words(n) for n in (1, 31, 32, 33, 64, 65)] == [1, 1, 1, 2, 2, 3]


def test_inputs_and_outputs_follow_constness():
    assert contract.inputs(contract.GEMM_RELU) == ("A", "B", "bias")
    assert contract.outputs(contract.GEMM_RELU) == ("C", "mask")
    assert contract.inputs(contract.RELU_BACKWARD) == ("mask", "dY")
