"""grader.course.widgets: from a kernel's access trace (grader.judge.profile, CPU backend) to the pictures
(grader.course.plots) and the widgets. The kernels are the references in kernels/, traced at small shapes."""

import os


from grader.course import plots, widgets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K = lambda name: os.path.join(ROOT, "kernels", name)  # noqa: E731


def layers(panel):
    return {label: sorted(cells) for label, cells in panel["layers"]}


def test_a_record_with_a_lane_twice_is_one_access_per_stretch_between_barriers():
    # grader.judge.profile counts occurrences from the last barrier: steps 0 and 1 of a tile loop share one record
    rec = dict(
        kernel="k",
        line=3,
        block=(0, 0, 0),
        warp=0,
        space="global",
        op="ld",
        buffer="A",
        occurrence=0,
        lanes=[(l, (l, 0, 0), 4 * l, 4) for l in range(32)] + [(l, (l, 0, 0), 128 + 4 * l, 4) for l in range(32)],
    )
    acc = widgets.accesses([rec])
    assert [(a.occurrence, len(a.lanes), a.lanes[0][2]) for a in acc] == [(0, 32, 0), (1, 32, 128)]


def test_naive_thread_touches_one_row_of_A_and_one_column_of_B():
    M, N, Kd = 40, 36, 24
    p = widgets.profile_of(K("01_naive.cu"), "naive", (M, N, Kd))
    panels = widgets.thread_data(p, (1, 2, 0), (3, 5, 0))  # thread (3, 5) of block (1, 2): C[37][19]
    got = {name.split()[0]: layers(panel) for name, panel in panels.items()}
    assert set(got) == {"A", "B", "C"}
    assert got["A"]["read"] == [(37, k) for k in range(Kd)]
    assert got["B"]["read"] == [(k, 19) for k in range(Kd)]
    assert got["C"]["written"] == [(37, 19)] and not got["C"]["read"]
    assert len(plots.cells(panels).axes) == 3


def test_warp_view_counts_the_bank_conflict_and_its_absence():
    for name, exercise, per_request in (
        ("03_bank_conflicts.cu", "conflict_free", 32),
        ("03_conflict_free.cu", "conflict_free", 1),
    ):
        p = widgets.profile_of(K(name), exercise, (32, 32, 32))
        key = next(k for k in widgets.instructions(p) if k[2:] == ("shared", "st", "BsT"))
        a = widgets.warp_accesses(p, key, (0, 0, 0), 0)[0]
        d = widgets.warp_data(p, a)
        assert d["kind"] == "bank" and d["per_request"] == per_request, (name, d["say"])
        assert d["n"] == per_request  # the picture: 32 lanes' words all in one bank, or one per bank
        assert widgets.worst_instruction(p)[4] == "BsT" or per_request == 1
        assert plots.warp_lanes(d["lane_units"], d["kind"], title=d["say"]).axes


def test_warp_view_of_the_naive_B_load_is_coalesced():
    p = widgets.profile_of(K("01_naive.cu"), "naive", (40, 36, 24))
    key = next(k for k in widgets.instructions(p) if k[2:] == ("global", "ld", "B"))
    d = widgets.warp_data(p, widgets.warp_accesses(p, key, (0, 0, 0), 0)[0])
    assert d["kind"] == "sector" and d["n"] == 2  # 16 consecutive floats from offset 0 (both rows of the warp)


def test_tile_walk_of_the_tiled_kernel_moves_one_tile_per_step():
    p = widgets.profile_of(K("02_tiled.cu"), "tiled", (40, 36, 70), blocks=[(0, 0, 0)])
    walk = widgets.steps(p, (0, 0, 0))
    assert walk["n"] == 3  # K = 70: tiles of 32, 32, 6
    for step in range(3):
        panels = widgets.tile_data(p, (0, 0, 0), step, thread=(3, 5, 0))
        a = layers(panels["A"])
        cols = sorted({c for _, c in a["this step"]})
        assert cols == list(range(32 * step, min(32 * step + 32, 70))), step
        assert sorted({c for _, c in a["earlier steps"]}) == list(range(32 * step))
        shared = {n.split()[0]: layers(panel) for n, panel in panels.items() if "shared" in n}
        # the thread reads a row of As and a column of Bs (32 banks wide: row = 128 bytes)
        assert shared["As"]["this thread"] == [(5, c) for c in range(32)]
        assert shared["Bs"]["this thread"] == [(r, 3) for r in range(32)]


def test_mask_bits_each_lane_sets_its_own_bit():
    p = widgets.profile_of(K("06_relu_mask.cu"), "relu_mask", (3, 200))
    stores = widgets.mask_stores(p)
    assert stores
    rows = widgets.mask_data(p, *stores[0])
    assert rows and all(r["writer"] == 0 for r in rows)  # lane 0 stores the ballot's word
    assert rows[0]["bits"] == {b: b for b in range(32)}  # bit b: lane b's element
    assert plots.mask_bits(rows).axes


def test_widget_redraws_when_a_slider_moves_and_carries_a_png():
    view = widgets.thread_map(K("01_naive.cu"), "naive", (40, 36, 24))
    before = view.png
    assert before.startswith(b"\x89PNG")
    bundle = view._repr_mimebundle_()
    assert "image/png" in bundle and "application/vnd.jupyter.widget-view+json" in bundle
    slider = next(c for c in view.children[0].children if c.description == "thread y")
    slider.value = 7
    assert view.png != before


def test_counts_beside_the_previous_rung_and_the_roofline():
    table = widgets.compare(
        K("01_naive.cu"), "naive", {"uncoalesced (01a)": K("01a_naive_uncoalesced.cu")}, (64, 64, 64), measured={}
    )
    ours, theirs = table["yours"], table["uncoalesced (01a)"]
    assert ours["sectors per global load"] < theirs["sectors per global load"]
    assert ours["global loads per FMA"] == theirs["global loads per FMA"] == 2
    view = widgets.roofline(K("02_tiled.cu"), "tiled", {"naive (01)": K("01_naive.cu")}, (64, 64, 64), measured={})
    boxes = view.children[0].children
    assert [b.description for b in boxes] == ["yours", "naive (01)"]
    before = view.png
    boxes[1].value = False
    assert view.png != before


def test_an_idle_edge_thread_is_drawn_touching_nothing():
    # naive at 40 x 36: block (2, 0) covers columns 32-47, so its thread (4, 0) is past column 35
    p = widgets.profile_of(K("01_naive.cu"), "naive", (40, 36, 24))
    panels = widgets.thread_data(p, (2, 0, 0), (4, 0, 0))
    assert {name.split()[0] for name in panels} == {"A", "B", "C"}  # the block's matrices, still drawn
    assert all(not cells for panel in panels.values() for cells in layers(panel).values())
    assert "touches nothing" in panels["C"]["note"] and panels["C"]["box"] == (0, 32, 16, 36)
    assert len(plots.cells(panels).axes) == 3
    view = widgets.thread_map(K("01_naive.cu"), "naive", (40, 36, 24), block=(2, 0, 0), thread=(4, 0, 0))
    assert view.png.startswith(b"\x89PNG")


def test_a_wrong_kernel_is_drawn_with_what_is_wrong(capsys):
    # C stored transposed: in bounds (40 x 36 = 36 x 40 elements), every value in the wrong place
    naive = open(K("01_naive.cu")).read()
    wrong = naive.replace("C[(size_t)cRow * N + cCol] = sum;", "C[(size_t)cCol * M + cRow] = sum;")
    assert wrong != naive
    p = widgets.profile_of(wrong, "naive", (40, 36, 24))
    assert "wrong" in p.wrong
    c = layers(widgets.thread_data(p, (1, 2, 0), (3, 5, 0))["C"])  # C[37][19] belongs at element 19 * 40 + 37
    assert c["written"] == [divmod(19 * 40 + 37, 36)]
    view = widgets.thread_map(wrong, "naive", (40, 36, 24))
    assert view.png.startswith(b"\x89PNG") and "is wrong" in view.caption.value
    assert widgets.compare(wrong, "naive", shape=(64, 64, 64), measured={})["yours"]
    assert "is wrong" in capsys.readouterr().out


def test_a_kernel_that_does_not_compile_gets_a_message_not_a_traceback(capsys):
    broken = open(K("01_naive.cu")).read().replace("C[(size_t)cRow * N + cCol] = sum;", "C[cRow] = undeclared;")
    assert widgets.thread_map(broken, "naive") is None
    assert "nothing to draw until the kernel compiles" in capsys.readouterr().out
