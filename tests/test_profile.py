"""The CPU backend's access profile (grader/profile.py, grader/cpu/profile.cpp): what it counts,
how it samples, and the verdicts it gives on each rung's idea."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import profile

ROOT = Path(__file__).resolve().parent.parent
K = ROOT / "kernels"
SMALL = (64, 64, 64)


def _p(ex, file, shape=SMALL, **kw):
    kw.setdefault("resources", False)
    return profile.run(ex, K / file, shape, **kw)


def test_coalesced_loads_touch_fewer_sectors():
    good, bad = _p("naive", "01_naive.cu", blocks="all"), _p("naive", "01a_naive_uncoalesced.cu", blocks="all")
    assert bad.derived["sectors_per_request_ld"] > 3 * good.derived["sectors_per_request_ld"]
    # every element of C is stored once: 64*64 floats = 512 sectors when coalesced
    assert good.metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == 64 * 64 * 4 / 32
    assert good.derived["global_loads_per_fma"] == 2.0  # one float of A and one of B per multiply-add


def test_bank_conflicts_counted_like_ncu():
    """03_bank_conflicts reads a column of a 32x32 tile: 32 words in one bank (ncu on the H200 at
    2048^3: 272 load wavefronts and 224 conflicts per warp per tile step; see kernels/README.md)."""
    bad, good = _p("conflict_free", "03_bank_conflicts.cu"), _p("conflict_free", "03_conflict_free.cu")
    steps = (64 // 32) ** 2 * 32 * (64 // 32)  # blocks * warps * tile steps
    assert bad.metrics["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 272 * steps
    assert bad.metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 224 * steps
    assert good.metrics["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 0
    assert good.metrics["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 48 * steps
    assert good.derived["wavefronts_per_shared_load"] == pytest.approx(1.2)


def test_sampling_scales_to_the_whole_grid():
    shape = (160, 128, 64)  # 02_tiled: 4 x 5 blocks, the last row of blocks half empty
    every = _p("tiled", "02_tiled.cu", shape, blocks="all")
    some = _p("tiled", "02_tiled.cu", shape, blocks="sample", budget=4, seed=3)
    assert every.sampled == "" and "of 20 blocks" in some.sampled and "edge" in some.sampled
    for name, value in every.metrics.items():
        assert some.metrics[name] == pytest.approx(value), name


def test_trace_groups_lanes_into_warp_instructions():
    p = _p("tiled", "02_tiled.cu", (32, 32, 32), blocks=[(0, 0, 0)], trace=True)
    loads_b = [a for a in p.trace if a.buffer == "B" and a.op == "ld"]
    assert len(loads_b) == 32  # one tile step: 32 warps, one load each
    a = loads_b[0]
    assert a.space == "global" and len(a.lanes) == 32 and a.line > 0 and a.kernel == "tiled_gemm_kernel"
    lane, tid, offset, size = a.lanes[5]
    assert lane == 5 and tid == (5, a.warp, 0) and size == 4 and offset == 4 * (32 * a.warp + 5)
    assert json.dumps(p.as_dict())  # JSON-able


def test_profile_command_json():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "grader", "profile", "naive", str(K / "01_naive.cu"), "--shape", "33",
                        "17", "9", "--json", "--no-resources"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["shape"] == [33, 17, 9] and d["metrics"]["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"] > 0
    bad = subprocess.run([sys.executable, "-m", "grader", "profile", "naive", str(K / "01_naive.cu"), "--shape", "3",
                          "--no-resources"], capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "shape" in bad.stderr
