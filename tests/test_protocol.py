import os
import struct

import numpy as np
import pytest

from grader.run import protocol


def test_round_trip_keeps_metadata_dtypes_and_values():
    r, w = os.pipe()
    arrays = {"C": np.random.rand(3, 5).astype(np.float32), "mask": np.arange(6, dtype=np.int32).reshape(2, 3)}
    protocol.send(w, {"case": 1, "shape": [3, 5, 7]}, arrays)
    os.close(w)
    meta, got = protocol.recv(r)
    assert meta == {"case": 1, "shape": [3, 5, 7]}
    assert got["C"].dtype == np.float32 and np.array_equal(got["C"], arrays["C"])
    assert np.array_equal(got["mask"], arrays["mask"])
    assert protocol.recv(r) is None


def test_rejects_dtypes_outside_the_whitelist():
    r, w = os.pipe()
    header = b'{"meta": {}, "arrays": [["x", "object", [1]]]}'
    os.write(w, struct.pack("<Q", len(header)) + header)
    os.close(w)
    with pytest.raises(ValueError):
        protocol.recv(r)


def test_truncated_message_is_an_error_not_a_hang():
    r, w = os.pipe()
    os.write(w, struct.pack("<Q", 100) + b"{")
    os.close(w)
    with pytest.raises(ValueError):
        protocol.recv(r)
