"""The timed rounds' inputs, drawn in torch exactly as the native runner draws them (runner.cpp,
rng_value): the worker keeps its own copy of what the runner's buffers hold without sending them.

Each element i of a buffer is a function of (seed, i) only: lowbias32 (a 32-bit integer hash) of
five counters, four 22-bit uniforms summed (Irwin-Hall: mean 0, variance 1 after the scale), and for
ReLU inputs exact zeros of both signs, 1/32 of the elements each. The arithmetic is exact integer
work, one exact float conversion, one exact scaling by 2^-22 and one rounded float32 multiply by
sqrt(3), so both sides agree bit for bit (tests/test_runner.py compares them).
"""

from __future__ import annotations

import torch

_M32 = 0xFFFFFFFF


def _lowbias32(x: torch.Tensor) -> torch.Tensor:
    # int64 holding values in [0, 2^32): products wrap in two's complement, and the low 32 bits are right
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _M32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & _M32
    return x ^ (x >> 16)


def _hash(seed: int, i: torch.Tensor, j: int) -> torch.Tensor:
    lo, hi = seed & _M32, (seed >> 32) & _M32
    return _lowbias32((_lowbias32(((i * 5 + j) & _M32) ^ lo) + hi) & _M32)


def values(n: int, seed: int, relu: bool = False, device="cpu") -> torch.Tensor:
    """n float32 values: runner.cpp's rng_value(seed, i, relu) for i < n."""
    seed &= (1 << 63) - 1
    i = torch.arange(n, dtype=torch.int64, device=device)
    s = torch.full((n,), -(1 << 23), dtype=torch.int64, device=device)
    for j in range(4):
        s += _hash(seed, i, j) >> 10
    x = (s.to(torch.float32) * 2.0**-22) * torch.tensor(1.7320508075688772, dtype=torch.float32, device=device)
    if relu:
        z = _hash(seed, i, 4) & 31
        x = torch.where(z == 0, torch.zeros_like(x), x)
        x = torch.where(z == 1, torch.full_like(x, -0.0), x)
    return x


def fill_(t: torch.Tensor, seed: int, relu: bool = False) -> torch.Tensor:
    """Fill float32 tensor `t` in place, as the runner fills a buffer of t.numel() elements."""
    t.view(-1).copy_(values(t.numel(), seed, relu, t.device))
    return t
