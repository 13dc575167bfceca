"""grader.widgets: from a kernel's access trace to the pictures (grader.plots) and the widgets."""
from types import SimpleNamespace

import pytest

from grader import plots, widgets

# ---- a trace by hand, in grader.profile's record shape (CONTRACTS.md): kernels/01_naive.cu's
# accesses (16 x 16 blocks, thread (tx, ty) computes C[by*16+ty][bx*16+tx]) and a transposed tile


def naive_trace(M, N, K, blocks):
    out = []
    for bx, by in blocks:
        for warp in range(8):
            lanes = [(l, ((32 * warp + l) % 16, (32 * warp + l) // 16, 0)) for l in range(32)]
            lanes = [(l, t) for l, t in lanes if by * 16 + t[1] < M and bx * 16 + t[0] < N]
            if not lanes:
                continue
            row = lambda t: by * 16 + t[1]
            col = lambda t: bx * 16 + t[0]
            for k in range(K):
                out.append(dict(kernel="naive_gemm_kernel", line=25, block=(bx, by, 0), warp=warp, space="global",
                                op="ld", buffer="A", occurrence=k, lanes=[(l, t, 4 * (row(t) * K + k), 4) for l, t in lanes]))
                out.append(dict(kernel="naive_gemm_kernel", line=25, block=(bx, by, 0), warp=warp, space="global",
                                op="ld", buffer="B", occurrence=k, lanes=[(l, t, 4 * (k * N + col(t)), 4) for l, t in lanes]))
            out.append(dict(kernel="naive_gemm_kernel", line=27, block=(bx, by, 0), warp=warp, space="global", op="st",
                            buffer="C", occurrence=0, lanes=[(l, t, 4 * (row(t) * N + col(t)), 4) for l, t in lanes]))
    return out


def fake_profile(exercise, shape, trace, **kw):
    return SimpleNamespace(exercise=exercise, shape=shape, trace=trace, sampled="", derived=kw.get("derived", {}),
                           metrics={}, per_line=[], _widget_source="")


def shared_access(words, size=4, buffer="BsT"):
    return widgets.Access(dict(kernel="k", line=1, block=(0, 0, 0), warp=0, space="shared", op="ld", buffer=buffer,
                               occurrence=0, lanes=[(l, (l, 0, 0), 4 * w, size) for l, w in enumerate(words)]))


def test_passes_bank_conflicts_and_sectors():
    assert widgets.passes(shared_access([32 * l for l in range(32)])) == 32       # a column of a 32-wide tile
    assert widgets.passes(shared_access([33 * l for l in range(32)])) == 1        # padded: 32 banks
    assert widgets.passes(shared_access([5] * 32)) == 1                           # broadcast
    assert widgets.passes(shared_access([4 * l for l in range(32)], size=16)) == 4  # float4: 4 quarter-warp phases
    g = widgets.Access(dict(kernel="k", line=1, block=(0, 0, 0), warp=0, space="global", op="ld", buffer="B",
                            occurrence=0, lanes=[(l, (l, 0, 0), 4 * l, 4) for l in range(32)]))
    assert widgets.passes(g) == 4
    g.lanes = [(l, (l, 0, 0), 4 * 4096 * l, 4) for l in range(32)]
    assert widgets.passes(g) == 32


def test_naive_thread_touches_one_row_of_A_and_one_column_of_B():
    M, N, K = 40, 36, 24
    p = fake_profile("naive", (M, N, K), naive_trace(M, N, K, [(1, 2)]))
    panels = widgets.thread_data(p, (1, 2, 0), (3, 5, 0))
    layers = {name.split()[0]: dict(panel["layers"]) for name, panel in panels.items()}
    assert set(layers) == {"A", "B", "C"}
    assert sorted(layers["A"]["read"]) == [(2 * 16 + 5, k) for k in range(K)]
    assert sorted(layers["B"]["read"]) == [(k, 16 + 3) for k in range(K)]
    assert layers["C"]["written"] == [(37, 19)] and not layers["C"]["read"]
    fig = plots.cells(panels)
    assert len(fig.axes) == 3


def test_warp_view_of_naive_B_load_is_coalesced_and_the_worst_is_named():
    M, N, K = 40, 36, 24
    p = fake_profile("naive", (M, N, K), naive_trace(M, N, K, [(0, 0)]))
    key = ("naive_gemm_kernel", 25, "global", "ld", "B")
    a = widgets.warp_accesses(p, key, (0, 0, 0), 0)[0]
    d = widgets.warp_data(a)
    assert d["kind"] == "sector" and d["passes"] == 2       # 16 floats (both rows of the warp read them), 64 B from offset 0
    assert plots.warp_lanes(d["lane_units"], d["kind"], d["passes"]).axes


def test_tile_walk_steps_along_K():
    M, N, K = 40, 36, 24
    p = fake_profile("naive", (M, N, K), naive_trace(M, N, K, [(0, 0)]))
    assert widgets.steps(p, (0, 0, 0))["n"] == K
    panels = widgets.tile_data(p, (0, 0, 0), 5)
    a = dict(panels["A"]["layers"])
    assert sorted({c for _, c in a["this step"]}) == [5] and sorted({c for _, c in a["earlier steps"]}) == list(range(5))


def test_widget_redraws_when_a_slider_moves():
    M, N, K = 40, 36, 24
    p = fake_profile("naive", (M, N, K), naive_trace(M, N, K, [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]))
    view = widgets.thread_map(p, "naive")
    before = view.png
    assert before.startswith(b"\x89PNG")
    bundle = view._repr_mimebundle_()
    assert "image/png" in bundle and "application/vnd.jupyter.widget-view+json" in bundle
    slider = next(c for c in view.children[0].children if c.description == "thread y")
    slider.value = 7
    assert view.png != before
