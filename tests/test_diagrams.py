"""scaling_lib.diagrams and the schedules it draws: the pictures must say what the models say.

Checks content — which device holds which block, one frame per schedule step, the bytes each
frame moves, the bubble of a pipeline — not merely that a figure comes back.
"""
import math

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from scaling_lib import collectives as C  # noqa: E402
from scaling_lib import diagrams as G  # noqa: E402
from scaling_lib import sharding as S  # noqa: E402
from scaling_lib import topology as T  # noqa: E402
from scaling_lib import training  # noqa: E402

W = 4.5e10   # one-way link bandwidth used throughout (bytes/s)
V = 1e9      # the collective's V (bytes)


# ---- schedules agree with collective_time -----------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 16])
@pytest.mark.parametrize("wrap", [True, False])
@pytest.mark.parametrize("kind", ["all_gather", "reduce_scatter", "all_reduce"])
def test_ring_schedule_matches_time_formula(n, wrap, kind):
    ring = T.Ring(n, W, wrap=wrap)
    sched = C.collective_schedule(kind, ring)
    res = C.collective_time(kind, V, ring)
    assert sched.n_steps == round(float(res.t_latency) / ring.latency)          # hops = steps
    assert float(sched.t_bandwidth(V, W)) == pytest.approx(float(res.t_bandwidth), rel=1e-12)


@pytest.mark.parametrize("n", [3, 4, 6, 8])
def test_ring_alltoall_is_the_exact_formula(n):
    ring = T.Ring(n, W)
    sched = C.collective_schedule("all_to_all", ring)
    assert sched.n_steps == n // 2
    exact = float(C.alltoall_ring_exact(V, n, W)) if n % 2 == 0 else None
    if exact is not None:
        assert float(sched.t_bandwidth(V, W)) == pytest.approx(exact, rel=1e-12)
        # collective_time rounds V(n+2)/(8n) to V/8
        assert float(sched.t_bandwidth(V, W)) / float(C.collective_time("a2a", V, ring).t_bandwidth) \
            == pytest.approx((n + 2) / n)
    assert sched.busiest_link_fraction == pytest.approx(S.ring_link_load("all_to_all", n))


def test_line_alltoall_matches_formula_for_even_n():
    line = T.Ring(8, W, wrap=False)
    sched = C.collective_schedule("all_to_all", line)
    assert float(sched.t_bandwidth(V, W)) == pytest.approx(
        float(C.collective_time("a2a", V, line).t_bandwidth))
    assert sched.n_steps == 7


def test_one_way_ring_takes_n_minus_1_steps():
    ring = T.Ring(8, W)
    sched = C.collective_schedule("all_gather", ring, bidirectional=False)
    assert sched.n_steps == 7
    assert sched.busiest_link_fraction == pytest.approx(S.ring_link_load("all_gather", 8, bidirectional=False))
    with pytest.raises(ValueError, match="line"):
        C.collective_schedule("all_gather", T.Ring(4, W, wrap=False), bidirectional=False)


@pytest.mark.parametrize("wrap", [True, False])
@pytest.mark.parametrize("kind", ["all_gather", "reduce_scatter", "all_reduce"])
def test_torus_schedule_vs_formula(kind, wrap):
    n = 4
    tor = T.Torus((n, n), (wrap, wrap), W)
    sched = C.collective_schedule(kind, tor)
    res = C.collective_time(kind, V, tor, ("X", "Y"))
    assert sched.n_steps == round(float(res.t_latency) / tor.latency)
    # the formula V/Σ(axis bandwidth) leaves out the first phase: exactly 1 + 1/n on an n×n torus
    assert float(sched.t_bandwidth(V, W)) / float(res.t_bandwidth) == pytest.approx(1 + 1 / n)


@pytest.mark.parametrize("wrap", [True, False])
def test_torus_alltoall(wrap):
    tor = T.Torus((4, 4), (wrap, wrap), W)
    sched = C.collective_schedule("all_to_all", tor)
    res = C.collective_time("a2a", V, tor, ("X", "Y"))
    assert sched.n_steps == round(float(res.t_latency) / tor.latency)
    ratio = float(sched.t_bandwidth(V, W)) / float(res.t_bandwidth)
    assert ratio == pytest.approx(1.5 if wrap else 1.0)     # (n+2)/n on a ring axis, exact on a line


@pytest.mark.parametrize("kind", ["all_gather", "reduce_scatter", "all_reduce", "all_to_all"])
@pytest.mark.parametrize("topo", [T.Ring(6, W), T.Ring(5, W, wrap=False),
                                  T.Torus((4, 4), (True, True), W), T.Torus((2, 4), (False, False), W)])
def test_schedule_end_state_and_links(kind, topo):
    sched = C.collective_schedule(kind, topo)
    N = sched.n_devices
    end = sched.state[-1]
    owner = np.asarray(sched.chunk_owner)
    if kind == "all_gather":
        assert (end == 1).all()                                    # everyone holds everything
    elif kind == "reduce_scatter":
        assert (end[owner, np.arange(sched.n_chunks)] == N).all()  # each sum complete at its owner
        assert end.sum() == N * sched.n_chunks                     # and nowhere else
    elif kind == "all_reduce":
        assert (end == N).all()
    else:
        dst = np.arange(sched.n_chunks) % N
        assert (end[dst, np.arange(sched.n_chunks)] == 1).all() and end.sum() == sched.n_chunks
    # every message goes to a neighbour over a link that exists
    for st in sched.steps:
        for tr in st:
            assert topo.hops(sched.coords(tr.src), sched.coords(tr.dst)) == 1


def test_schedule_bad_input():
    with pytest.raises(ValueError, match="permute"):
        C.collective_schedule("permute", T.Ring(4, W))
    with pytest.raises(ValueError, match="rings and tori"):
        C.collective_schedule("all_gather", T.dgx_h100_superpod())
    with pytest.raises(ValueError, match="unknown collective"):
        C.collective_schedule("gather_all", T.Ring(4, W))


# ---- sharding block maps ----------------------------------------------------------------------

def test_device_blocks():
    m = {"X": 2, "Y": 4}
    b = S.device_blocks("A[I_X, J_Y]", m)
    assert b[(1, 3)] == (1, 3) and b[(0, 2)] == (0, 2)
    b = S.device_blocks("A[I_XY, J]", m)
    assert b[(1, 2)] == (1 * 4 + 2, 0)                       # major axis first
    b = S.device_blocks("A[I_YX, J]", m)
    assert b[(1, 2)] == (2 * 2 + 1, 0)
    b = S.device_blocks("A[I_X, J]", m)
    assert len({v for k, v in b.items() if k[0] == 1}) == 1   # replicated over Y
    assert S.blocks_per_dim("A[I_XY, J]", m) == (8, 1)
    assert S.partial_sum_index("C[I, K]{U_Y}", m, (1, 3)) == 3
    with pytest.raises(ValueError, match="unknown mesh axis"):
        S.device_blocks("A[I_Z, J]", m)


def test_sharding_figure_draws_each_devices_block():
    fig = G.sharding_figure("A[I_X, J_Y]", {"X": 2, "Y": 2}, shape=(8, 8))
    titles = [ax.get_title() for ax in fig.axes]
    for (x, y), idx in S.device_blocks("A[I_X, J_Y]", {"X": 2, "Y": 2}).items():
        assert any(f"X={x},Y={y}" in t and f"块 ({idx[0]},{idx[1]})" in t for t in titles)
    assert "每设备 4×4" in fig._suptitle.get_text()


@pytest.mark.parametrize("case", [1, 2, 3, 4])
def test_matmul_case_figures(case):
    a, b, out = G.MATMUL_CASES[case]
    fig = G.matmul_case_figure(a, b, out=out)
    text = fig._suptitle.get_text()
    plan = S.matmul(a, b, {"X": 2, "Y": 2}, out=out)
    assert f"情形 {plan.case}" in text and plan.case == case
    expect = {1: "无需通信", 2: "AllGather", 3: "AllReduce", 4: "AllGather"}[case]
    assert expect in text


# ---- animations -------------------------------------------------------------------------------

def _arrow_fracs(frame):
    arrows = frame.data[1]
    return [] if arrows.customdata is None else list(arrows.customdata)


@pytest.mark.parametrize("kind", ["all_gather", "reduce_scatter", "all_reduce", "all_to_all"])
@pytest.mark.parametrize("topo", [T.Ring(8, W), T.Torus((4, 4), (True, True), W),
                                  T.Torus((4, 4), (False, False), W)])
def test_collective_animation_frames_follow_schedule(kind, topo):
    fig = G.collective_animation(kind, topo)
    sched = C.collective_schedule(kind, topo)
    assert len(fig.frames) == sched.n_steps + 1
    assert [f.name for f in fig.frames] == [str(s) for s in range(sched.n_steps + 1)]
    assert len(fig.layout.sliders[0].steps) == sched.n_steps + 1
    assert fig.layout.updatemenus[0].buttons[0].method == "animate"
    assert _arrow_fracs(fig.frames[0]) == []
    for s in range(1, sched.n_steps + 1):
        fr = fig.frames[s]
        fracs = _arrow_fracs(fr)
        msgs = sched.steps[s - 1]
        # one arrow per message (a wraparound message on a grid is drawn once, at its stub)
        assert len(fracs) == len(msgs)
        assert sum(fracs) == pytest.approx(sum(t.fraction for t in msgs), rel=1e-5)
        assert f"第 {s}/{sched.n_steps} 步" in fr.layout.title.text
        assert f"{sched.step_fraction(s):.3g}" in fr.layout.title.text


def test_allgather_animation_cells_fill_up():
    fig = G.collective_animation("all_gather", T.Ring(4, W))
    white = lambda fr: sum(c == "#ffffff" for c in fr.data[0].marker.color)  # noqa: E731
    counts = [white(fr) for fr in fig.frames]
    assert counts[0] == 4 * 3 and counts[-1] == 0            # each device starts with 1 of 4
    assert all(a > b for a, b in zip(counts, counts[1:]))


def test_animation_is_stored_rounded():
    fig = G.collective_animation("all_to_all", T.Ring(6, W))
    for fr in fig.frames[1:]:
        for v in fr.data[1].customdata:
            assert v == float(f"{v:.6g}")


def test_systolic_animation():
    from scaling_lib.chip_internals import systolic_matmul
    fig = G.systolic_animation(M=3, S=4, N=2)
    tr = systolic_matmul(np.ones((3, 4)), np.ones((4, 2)))
    assert len(fig.frames) == tr.n_cycles
    for t, fr in enumerate(fig.frames):
        lit = sum(c != "#f2f2f2" for c in fr.data[0].marker.color)
        assert lit == int(tr.active[t].sum())
        assert f"{lit}/8 个单元" in fr.layout.title.text
    with pytest.raises(ValueError, match="<= 16"):
        G.systolic_animation(M=40)


# ---- pipelines --------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["gpipe", "1f1b"])
def test_pipeline_figure_bubble(kind):
    ax = G.pipeline_figure(kind, 4, 8)
    grid = training.pipeline_schedule(kind, 4, 8)
    idle = (grid == 0).mean()
    assert f"空闲占 {idle:.0%}" in ax.get_title()
    # the forward-backward grid's idle share is the book's bubble formula
    assert idle == pytest.approx(float(training.bubble_fraction(4, 8)))
    n_cells = sum(1 for p in ax.patches if p.get_width() == 1)
    assert n_cells == grid.size


def test_pipeline_figure_rejects_bad_grid():
    with pytest.raises(ValueError, match="2-D int"):
        G.pipeline_figure(np.zeros(5))


def test_palette():
    assert len(set(G.palette(16))) == 16
    with pytest.raises(ValueError):
        G.palette(0)


# ---- show_source ------------------------------------------------------------------------------

def test_show_source_reads_the_library():
    import inspect
    from scaling_lib import profiling
    from scaling_lib.book import show_source
    b = show_source(profiling.expected_op_time, "看代码：一个算子的 Roofline 时间")
    assert b.code.startswith("def expected_op_time(")
    assert b.code == inspect.getsource(profiling.expected_op_time).rstrip()
    html = b._repr_html_()
    assert html.startswith('<details class="sl-source"') and "<summary" in html and " open" not in html.split(">")[0]
    assert "expected_op_time" in html and "scaling_lib/profiling.py" in html
    assert repr(b) == "看代码：一个算子的 Roofline 时间（scaling_lib/profiling.py）"
    assert show_source(profiling.expected_op_time, open=True)._repr_html_().startswith('<details class="sl-source" open')
    p = show_source(profiling.CompileReport.memory_bytes)
    assert p.code.startswith("@property\ndef memory_bytes")          # dedented method
    with pytest.raises(TypeError, match="functions"):
        show_source(len)
    with pytest.raises(ValueError, match="book's library"):
        show_source(np.linspace)
    with pytest.raises(ValueError, match="summary"):
        show_source(profiling.expected_op_time, "")
