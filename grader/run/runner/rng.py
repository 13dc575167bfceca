"""The timed rounds' inputs, drawn in torch exactly as the native runner draws them (runner.cpp,
rng_value): the worker keeps its own copy of what the runner's buffers hold without sending them.

Each element i of a buffer is a function of (seed, i) only: one 32-bit integer hash (lowbias32, twice),
its two 16-bit halves summed (triangular: mean 0, variance 1 after the scale), and for ReLU inputs
exact zeros of both signs, 1/32 of the elements each. The arithmetic is exact integer work, one exact
float conversion, one exact scaling by 2^-16 and one rounded float32 multiply by sqrt(6), so both sides
agree bit for bit (tests/test_runner.py compares them). Every round redraws the graded inputs here
(4096^2 floats each on a GPU), so the formula is kept to about 30 elementwise passes.
"""

from __future__ import annotations

import torch

_M32 = 0xFFFFFFFF
_INDEX: dict[tuple[int, str], torch.Tensor] = {}  # the last arange used (a round redraws buffers of one size)


def _lowbias32(x: torch.Tensor) -> torch.Tensor:
    # int64 holding values in [0, 2^32): products wrap in two's complement, and the low 32 bits are right
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _M32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & _M32
    return x ^ (x >> 16)


def _index(n: int, device) -> torch.Tensor:
    key = (n, str(device))
    if key not in _INDEX:
        _INDEX.clear()
        _INDEX[key] = torch.arange(n, dtype=torch.int64, device=device)
    return _INDEX[key]


def values(n: int, seed: int, relu: bool = False, device="cpu") -> torch.Tensor:
    """n float32 values: runner.cpp's rng_value(seed, i, relu) for i < n (n < 2^32)."""
    seed &= (1 << 63) - 1
    lo, hi = seed & _M32, (seed >> 32) & _M32
    h = _lowbias32((_lowbias32(_index(n, device) ^ lo) + hi) & _M32)
    s = (h & 0xFFFF) + (h >> 16) - 65535
    x = (s.to(torch.float32) * 2.0**-16) * torch.tensor(2.449489742783178, dtype=torch.float32, device=device)
    if relu:
        z = _lowbias32(h) & 31
        x = torch.where(z == 0, torch.zeros_like(x), x)
        x = torch.where(z == 1, torch.full_like(x, -0.0), x)
    return x


def fill_(t: torch.Tensor, seed: int, relu: bool = False) -> torch.Tensor:
    """Fill float32 tensor `t` in place, as the runner fills a buffer of t.numel() elements."""
    t.view(-1).copy_(values(t.numel(), seed, relu, t.device))
    return t
