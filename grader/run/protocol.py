"""Messages between the grader and its worker process: JSON plus raw arrays.

No pickle: the worker runs a learner's native code, so what it sends back is
parsed as data only (JSON header, whitelisted dtypes, sizes checked).

A message on the wire: 8-byte little-endian header length, the JSON header
{"meta": {...}, "arrays": [[name, dtype, shape], ...]}, then each array's bytes.
"""

from __future__ import annotations

import json
import os
import struct

import numpy as np

DTYPES = {"float32", "float64", "int32", "uint8"}  # uint8: a library sent to the worker
MAX_HEADER = 1 << 20


def send(fd: int, meta: dict, arrays: dict[str, np.ndarray] | None = None) -> None:
    arrays = {k: np.ascontiguousarray(v) for k, v in (arrays or {}).items()}
    header = json.dumps(
        {"meta": meta, "arrays": [[k, str(v.dtype), list(v.shape)] for k, v in arrays.items()]}
    ).encode()
    _write_all(fd, struct.pack("<Q", len(header)) + header)
    for v in arrays.values():
        _write_all(fd, memoryview(v).cast("B"))


def recv(fd: int, max_bytes: int = 1 << 31) -> tuple[dict, dict[str, np.ndarray]] | None:
    """One message, or None at end of stream. Raises ValueError on malformed data."""
    raw = _read_exact(fd, 8)
    if raw is None:
        return None
    (n,) = struct.unpack("<Q", raw)
    if n > MAX_HEADER:
        raise ValueError("message header too large")
    body = _read_exact(fd, n)
    if body is None:
        raise ValueError("stream ended inside a message")
    header = json.loads(body)
    arrays, total = {}, 0
    for name, dtype, shape in header["arrays"]:
        if dtype not in DTYPES or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise ValueError(f"bad array {name!r}: {dtype} {shape}")
        count = int(np.prod(shape, dtype=np.int64))
        size = count * np.dtype(dtype).itemsize
        total += size
        if total > max_bytes:
            raise ValueError("message too large")
        data = _read_exact(fd, size) if size else b""
        if data is None:
            raise ValueError("stream ended inside an array")
        arrays[str(name)] = np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    return header["meta"], arrays


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 24))
        if not chunk:
            return None  # end of stream (mid-message if got > 0: the caller decides)
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
