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


@pytest.fixture(autouse=True)
def _close_figures():
    """Matplotlib figures drawn by a test are closed after it (they hold memory)."""
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


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
    assert "expected_op_time" in html and "scaling_lib/xla/profiling.py" in html   # moved to the JAX side (issue 16)
    assert repr(b) == "看代码：一个算子的 Roofline 时间（scaling_lib/xla/profiling.py）"
    assert show_source(profiling.expected_op_time, open=True)._repr_html_().startswith('<details class="sl-source" open')
    p = show_source(profiling.CompileReport.memory_bytes)
    assert p.code.startswith("@property\ndef memory_bytes")          # dedented method
    with pytest.raises(TypeError, match="functions"):
        show_source(len)
    with pytest.raises(ValueError, match="book's library"):
        show_source(np.linspace)
    with pytest.raises(ValueError, match="summary"):
        show_source(profiling.expected_op_time, "")


# ---- hierarchies, parallelism layouts, the block, serving -----------------------------------------

def test_hierarchy_levels_from_catalogue():
    from scaling_lib import hardware
    v5p = G.hierarchy_levels("tpu", "v5p")
    assert [lv[2] for lv in v5p] == [1, 4, 64, math.prod(hardware.get("v5p").pod_shape)]
    assert v5p[-1][2] == 8960 and v5p[0][1] == 2
    v5e = G.hierarchy_levels("tpu", "v5e")
    assert [lv[2] for lv in v5e] == [1, 8, 256]
    gpu = G.hierarchy_levels("gpu")
    assert [lv[2] for lv in gpu] == [1, 8, 256, 1024] and gpu[0][1] == hardware.get("H100").n_sm
    for lv in (v5p, v5e, gpu):                      # each level is n × the one below
        assert all(b[2] == a[2] * b[1] for a, b in zip(lv, lv[1:]))
    fig = G.hierarchy_figure("gpu")
    assert "共 1,024 颗GPU" in [t.get_text() for ax in fig.axes for t in ax.texts]
    with pytest.raises(ValueError, match="family"):
        G.hierarchy_levels("npu")


@pytest.mark.parametrize("kind", ["dp", "fsdp", "tp"])
def test_parallelism_figure_holds_and_sends(kind):
    from scaling_lib.units import fmt_bytes
    fig = G.parallelism_figure(kind, n=4, batch_tokens=4096, d_model=8192, d_ff=32768)
    cost = training.layer_costs(kind, 4096, 8192, 32768, x=4 if kind != "tp" else 1,
                                y=4 if kind == "tp" else 1)
    title = fig._suptitle.get_text()
    assert f"前向 {fmt_bytes(cost.bytes_fwd)}" in title and f"反向 {fmt_bytes(cost.bytes_bwd)}" in title
    n_rows = len(G.PARALLEL_LAYOUTS[kind])
    axes = np.array(fig.axes).reshape(n_rows, 5)
    for r, spec in enumerate(G.PARALLEL_LAYOUTS[kind].values()):
        nb = S.blocks_per_dim(spec, {"X": 4})
        for d in range(4):
            coloured = [p for p in axes[r, d + 1].patches if p.get_facecolor()[:3] != (1.0, 1.0, 1.0)]
            # a replicated array: the device holds the whole (one-block) array
            assert len(coloured) == 1 and len(axes[r, d + 1].patches) == int(np.prod(nb))


def test_parallelism_pp_and_errors():
    fig = G.parallelism_figure("pp", n=4, n_layers=8)
    for d, ax in enumerate(fig.axes[1:]):
        held = [i for i, p in enumerate(ax.patches) if p.get_facecolor()[:3] != (1.0, 1.0, 1.0)]
        assert held == [2 * d, 2 * d + 1]                       # stage d holds layers 2d, 2d+1
    with pytest.raises(ValueError, match="divisible"):
        G.parallelism_figure("pp", n=3, n_layers=8)
    with pytest.raises(ValueError, match="kind"):
        G.parallelism_figure("ep")


def test_transformer_block_flops():
    from scaling_lib import models
    from scaling_lib.units import fmt_num
    cfg = models.get("LLaMA-3-8B")
    fig = G.transformer_block_figure(cfg, batch=2, seq_len=4096)
    fl = cfg.flops_by_part(4096)
    per_layer = (fl["attn_qkvo"] + fl["attn_core"] + fl["mlp"]) * 2 * 4096 / cfg.n_layers
    assert f"合计 {fmt_num(per_layer)}" in fig.axes[0].get_title()
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert f"[{cfg.n_heads},{cfg.d_head}]" in texts.replace(".., ", "") and str(cfg.d_ff) in texts


def test_serving_timelines_use_the_model():
    from scaling_lib import inference, models
    from scaling_lib.units import fmt_time
    m = models.get("LLaMA-3-70B")
    t_pre = float(inference.prefill_time(m, 512, 16, "v5e", mfu=0.4))
    t_dec = float(inference.decode_step_time(m, 32, 512 + 16, 16, "v5e", weights="int8", kv="int8").total_s)
    inter = G.serving_timeline(mode="interleaved").axes[0].get_title()
    dis = G.serving_timeline(mode="disaggregated").axes[0].get_title()
    assert inter.endswith(f"最长间隔 {fmt_time(t_pre + t_dec)}")     # a token waits a prefill
    assert dis.endswith(f"最长间隔 {fmt_time(t_dec)}")               # never stops
    single = G.serving_timeline(mode="single", n_new=8)
    t1 = float(inference.decode_step_time(m, 1, 512 + 8, 16, "v5e", weights="int8", kv="int8").total_s)
    assert any(f"每步 {fmt_time(t1)}" in t.get_text() for t in single.axes[0].texts)
    with pytest.raises(ValueError, match="mode"):
        G.serving_timeline(mode="batch")


def test_paged_allocation():
    from scaling_lib.kv_decode import paged_allocation
    r = paged_allocation([5, 17, 9, 30], max_len=32, block_size=8)
    assert r["used"] == 61 and r["contiguous"] == 128 and r["paged"] == 80
    assert [len(t) for t in r["block_table"]] == [1, 3, 2, 4]
    pages = [p for t in r["block_table"] for p in t]
    assert sorted(pages) == list(range(r["n_pages"]))             # every page used once
    assert r["paged"] - r["used"] < 4 * 8                          # < one page per sequence
    with pytest.raises(ValueError, match="max_len"):
        paged_allocation([40], max_len=32)
    fig = G.kv_paging_figure([5, 17, 9, 30], max_len=32, block_size=8)
    assert f"空着 {r['contiguous_waste']:.0%}" in fig.axes[0].get_title()
    assert f"只空着 {r['paged_waste']:.0%}" in fig.axes[1].get_title()


def test_batching_figure_matches_simulation():
    from scaling_lib import inference
    g = np.array([3, 9, 4, 7, 2, 8, 5, 3, 6, 4, 9, 2])
    fig = G.batching_figure(g, slots=4)
    for ax, mode in zip(fig.axes, ("static", "continuous")):
        sim = inference.simulate_batching(g, 4, mode=mode)
        assert f"{sim['steps']} 步做完，槽位利用率 {sim['utilisation']:.0%}" in ax.get_title()
        bars = [(p.get_x(), p.get_width(), round(p.get_y())) for p in ax.patches]
        assert len(bars) == len(g)
        busy = np.zeros(sim["steps"], dtype=int)
        for x, w, row in bars:
            busy[int(x):int(x + w)] += 1
            others = [b for b in bars if b[2] == row and b != (x, w, row)]
            assert all(b[0] >= x + w or b[0] + b[1] <= x for b in others)   # no overlap in a slot
        assert list(busy) == list(sim["active"])


# ---- the animations play in a browser without a kernel ------------------------------------------

@pytest.mark.parametrize("which", ["collective", "streaming"])
def test_animation_plays_in_browser_without_kernel(tmp_path, which):
    """Render an animation the way the website does (scaling_lib._mystnb), load it in headless
    Chromium with the site's plotly.js, press ▶ 播放 and see the frame change."""
    import json
    import os
    import shutil
    import subprocess
    import time
    pw = pytest.importorskip("playwright.sync_api")
    if not os.path.exists("/usr/bin/chromium"):
        pytest.skip("no chromium")
    import plotly
    from scaling_lib._mystnb import PlotlyRenderer
    if which == "collective":
        fig, moved = G.collective_animation("reduce_scatter", T.Ring(4, W)), "第 "
    else:
        fig, moved = G.streaming_animation(6, 2, 1, 2, shared_hbm=True), "t = "

    class Data:
        mime_type = "application/vnd.plotly.v1+json"
        content = json.loads(fig.to_json())
        cell_index, output_index = 0, 0
    html = PlotlyRenderer.handle_mime(None, Data(), False)[0].astext()
    shutil.copy(os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js"), tmp_path)
    # the site's own book.js defines window.bookPlotly, which the rendered script calls
    shutil.copy(os.path.join(os.path.dirname(__file__), os.pardir, "_assets", "book.js"), tmp_path)
    (tmp_path / "index.html").write_text('<!doctype html><meta charset="utf-8">'
                                         '<script defer src="plotly.min.js"></script>'
                                         f'<script defer src="book.js"></script>{html}')
    import socket
    import sys
    import urllib.request
    with socket.socket() as sock:                 # a free port, so parallel runs do not clash
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/index.html"
    srv = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                            "-d", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            try:
                urllib.request.urlopen(url, timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        with pw.sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
            page = b.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            page.wait_for_function("document.querySelector('.plotly-graph-div').layout")
            gd = "document.querySelector('.plotly-graph-div')"
            assert page.evaluate(f"{gd}._transitionData._frames.length") == len(fig.frames)
            t0 = page.evaluate(f"{gd}.layout.title.text")
            page.get_by_text("播放").first.click()
            page.wait_for_function(f"{gd}.layout.title.text !== {json.dumps(t0)}", timeout=8000)
            assert moved in page.evaluate(f"{gd}.layout.title.text")
            b.close()
        assert errors == []
    finally:
        srv.terminate()
        srv.wait()


@pytest.mark.parametrize("Z,M,v", [(4, 8, 1), (4, 8, 2), (4, 8, 4), (2, 4, 2), (8, 16, 2), (3, 6, 3)])
def test_interleaved_schedule_bubble(Z, M, v):
    grid, chunk = training.interleaved_schedule(Z, M, v)
    assert (grid == 0).mean() == pytest.approx((Z - 1) / (v * M + Z - 1))     # v× smaller bubble
    for m in range(1, M + 1):                                                  # every op once
        assert (grid == m).sum() == v * Z and (grid == -m).sum() == v * Z
    assert ((chunk >= 0) == (grid != 0)).all()
    for d in range(Z):      # each device runs chunk c of microbatch m forward before backward
        for m in range(1, M + 1):
            for c in range(v):
                tf = np.nonzero((grid[d] == m) & (chunk[d] == c))[0]
                tb = np.nonzero((grid[d] == -m) & (chunk[d] == c))[0]
                assert len(tf) == len(tb) == 1 and tf[0] < tb[0]
    if v == 1:
        assert (grid == training.pipeline_schedule("1f1b", Z, M)).all()


def test_interleaved_figure_and_errors():
    ax = G.pipeline_figure("interleaved", 4, 8, virtual_stages=2)
    grid, _ = training.interleaved_schedule(4, 8, 2)
    assert f"空闲占 {(grid == 0).mean():.0%}" in ax.get_title() and "交错式" in ax.get_title()
    assert ax.get_xlim()[1] == pytest.approx(grid.shape[1] / 2)
    with pytest.raises(ValueError, match="multiple"):
        training.interleaved_schedule(4, 6, 2)


def test_batching_animation_frames():
    from scaling_lib import inference
    g = np.array([3, 9, 4, 7, 2, 8, 5, 3, 6, 4, 9, 2])
    fig = G.batching_animation(g, slots=4)
    sims = {m: inference.simulate_batching(g, 4, mode=m) for m in ("static", "continuous")}
    T = max(s["steps"] for s in sims.values())
    assert len(fig.frames) == T + 1
    for t in range(1, T + 1):
        fr = fig.frames[t]
        for k, mode in enumerate(("static", "continuous")):
            xs = [x for x in fr.data[k].x if x is not None]
            # cells drawn so far = tokens decoded so far = Σ active over the first t steps
            assert len(xs) == int(sims[mode]["active"][:t].sum())
        busy = int(sims["continuous"]["active"][t - 1]) if t <= sims["continuous"]["steps"] else 0
        assert f"连续：{busy}/4 槽位在忙" in fr.layout.title.text


# ---- a pointwise op streaming through the chip ------------------------------------------------------

def _check_stream(ev, n, nb, shared):
    """The stream's precedence rules, and the one-channel rule when reads and writes share HBM."""
    at = {(u, i): (s, e) for u, i, s, e in ev}
    assert len(at) == 3 * n
    for i in range(n):
        assert at["compute", i][0] >= at["load", i][1] - 1e-12           # compute after its load
        assert at["store", i][0] >= at["compute", i][1] - 1e-12          # store after compute
        if i >= nb:   # a buffer is reused only when its previous chunk left it
            assert at["load", i][0] >= at["compute", i - nb][1] - 1e-12
            assert at["compute", i][0] >= at["store", i - nb][1] - 1e-12
    for u in ("load", "compute", "store"):                               # one op per unit at a time
        iv = sorted(at[u, i] for i in range(n))
        assert all(a[1] <= b[0] + 1e-12 for a, b in zip(iv, iv[1:]))
    dma = sorted(v for (u, _), v in at.items() if u != "compute")
    overlap = any(a[1] > b[0] + 1e-12 for a, b in zip(dma, dma[1:]))
    if shared:
        assert not overlap                                  # one HBM channel: reads and writes alternate
    return max(e for _, e in at.values())


@pytest.mark.parametrize("n,tl,tc,ts,nb", [(8, 2, 1, 2, 2), (8, 1, 2, 1, 2), (5, 1, 3, 2, 1),
                                          (6, 3, 1, 1, 3), (4, 1, 1, 1, 2)])
def test_shared_hbm_stream(n, tl, tc, ts, nb):
    from scaling_lib import chip_internals as ci
    sep = ci.pipeline_schedule(n, tl, tc, ts, nb)
    assert ci.pipeline_schedule(n, tl, tc, ts, nb, shared_hbm=False) == sep      # default unchanged
    t_sep = _check_stream(sep, n, nb, shared=False)
    sh = ci.pipeline_schedule(n, tl, tc, ts, nb, shared_hbm=True)
    t_sh = _check_stream(sh, n, nb, shared=True)
    assert t_sh == ci.pipeline_time(n, tl, tc, ts, nb, shared_hbm=True)
    assert t_sh >= n * (tl + ts) and t_sh >= t_sep              # the channel's busy time bounds it


def test_shared_hbm_stream_numbers():
    from scaling_lib import chip_internals as ci
    # chapter 2's bandwidth-bound case: the channel never idles, 8 × (2 + 2)
    assert ci.pipeline_time(8, 2, 1, 2) == 19 and ci.pipeline_time(8, 2, 1, 2, shared_hbm=True) == 32
    # compute-bound: sharing the channel costs nothing, n × compute + one load + one store
    assert ci.pipeline_time(8, 1, 2, 1, shared_hbm=True) == ci.pipeline_time(8, 1, 2, 1) == 18
    with pytest.raises(TypeError, match="shared_hbm"):
        ci.pipeline_schedule(8, 2, 1, 2, shared_hbm="yes")


@pytest.mark.parametrize("shared", [False, True])
def test_streaming_animation_follows_schedule(shared):
    from scaling_lib import chip_internals as ci
    n, nb = 6, 2
    ev = ci.pipeline_schedule(n, 2, 1, 2, nb, shared_hbm=shared)
    total = ci.pipeline_time(n, 2, 1, 2, nb, shared_hbm=shared)
    times = sorted({0.0, *(e[2] for e in ev), *(e[3] for e in ev)})
    fig = G.streaming_animation(n, 2, 1, 2, nb, shared_hbm=shared)
    assert len(fig.frames) == len(times) + 1
    intervals = [(0.0, 0.0)] + list(zip(times[:-1], times[1:])) + [(total, total)]
    for fr, (a, b) in zip(fig.frames, intervals):
        run = {(u, i) for u, i, s, e in ev if s <= a and e >= b and b > a}
        txt = fr.layout.title.text
        for u, i in run:
            assert f"{dict(load='读', compute='算', store='写')[u]}块 {i}" in txt
        cells = fr.data[0]
        out = list(cells.text)[n + 2 * nb + 1:]                    # HBM output column
        stored = sum(e <= a for u, _, _, e in ev if u == "store")
        assert sum(t.strip().isdigit() for t in out) == stored
        assert sum(t.endswith("←") for t in out) == sum(u == "store" for u, _ in run)
        vpu = cells.text[n + nb].strip()
        busy = [i for u, i in run if u == "compute"]
        assert vpu == (str(busy[0]) if busy else "")
        # the DMA arrows: coloured exactly when a read / a write is in flight
        cols = list(fr.data[1].marker.color)
        assert (cols[0] != "rgba(0,0,0,0)") == any(u == "load" for u, _ in run)
        assert (cols[1] != "rgba(0,0,0,0)") == any(u == "store" for u, _ in run)
        if shared:
            assert not (any(u == "load" for u, _ in run) and any(u == "store" for u, _ in run))
        # the Gantt chart drawn so far: each unit's filled length up to b
        for k, u in enumerate(("load", "compute", "store")):
            xs = list(fr.data[2 + k].x)
            width = sum(xs[j + 1] - xs[j] for j in range(0, len(xs), 6))
            assert width == pytest.approx(sum(max(0.0, min(e, b) - s) for uu, _, s, e in ev if uu == u))
        assert all(len(fr.data[j].x) == len(fig.frames[0].data[j].x) for j in range(7))   # fixed sizes
    assert f"总时间 {total:.3g}" in fig.frames[-1].layout.title.text
    busy = sum(e - s for u, _, s, e in ev if u == "compute") / total
    assert f"VPU 忙 {busy:.0%}" in fig.frames[-1].layout.title.text
    with pytest.raises(ValueError, match="<= 16"):
        G.streaming_animation(40)


def test_streaming_figure():
    from scaling_lib import chip_internals as ci
    ax = G.streaming_figure(8, 2, 1, 2, shared_hbm=True)
    assert "总时间 32" in ax.get_title() and "VPU 忙 25%" in ax.get_title()
    assert len(ax.patches) == 24
    ax = G.streaming_figure(8, 1, 2, 1)
    assert f"总时间 {ci.pipeline_time(8, 1, 2, 1):.3g}" in ax.get_title()
    assert "HBM 通道：读" in [t.get_text() for t in G.streaming_figure(4, shared_hbm=True).get_yticklabels()]


# ---- inside a GPU and an NVLink node ---------------------------------------------------------------

def _texts(ax):
    return " ".join(t.get_text() for t in ax.texts) + " " + ax.get_title()


@pytest.mark.parametrize("chip", ["H100", "B200", "A100"])
def test_gpu_chip_figure_from_catalogue(chip):
    from scaling_lib import hardware
    g = hardware.get(chip)
    ax = G.gpu_chip_figure(chip)
    sms = [p for p in ax.patches if matplotlib.colors.to_hex(p.get_facecolor()) == "#cfe3f3"]
    assert len(sms) == g.n_sm
    txt = _texts(ax)
    assert f"{g.n_sm} 个 SM" in txt and f"共 {g.n_sm * g.subpartitions_per_sm} 个" in txt
    assert f"{g.l2_bytes / 2e6:.0f} MB" in txt and f"{g.hbm_bytes / 1e9:.0f} GB" in txt


def test_sm_figure_from_catalogue():
    from scaling_lib import hardware
    h = hardware.get("H100")
    ax = G.sm_figure("H100")
    txt = _texts(ax)
    assert txt.count("Tensor\nCore") == h.subpartitions_per_sm == 4
    assert txt.count("32 条 fp32 lane") == 4 and "128 个 CUDA 核心" in txt
    assert txt.count("寄存器 64 KiB\n16,384 个 32 位") == 4            # 256 KiB / 4 subpartitions
    assert f"SMEM / L1 共 {h.smem_bytes_per_sm / 1024:.0f} KiB" == "SMEM / L1 共 256 KiB" and "SMEM / L1 共 256 KiB" in txt
    assert "TMEM" not in txt
    assert "TMEM 256 KiB" in _texts(G.sm_figure("B200"))                # Blackwell adds TMEM
    assert "16 条 fp32 lane" in _texts(G.sm_figure("A100"))
    with pytest.raises(ValueError, match="not a GPU"):
        G.sm_figure("v5e")


def test_nvswitch_links_and_node_figure():
    from scaling_lib import hardware, topology
    assert G.nvswitch_links("H100") == (5, 4, 4, 5)
    assert G.nvswitch_links("B200") == (9, 9)
    assert G.nvswitch_links("A100") == (2,) * 6
    for chip in ("H100", "B200", "A100"):
        g = hardware.get(chip)
        per = G.nvswitch_links(chip)
        assert sum(per) == g.nvlink_links and len(per) == g.nvswitches_per_node
        assert max(per) - min(per) <= 1
        assert g.nvlink_links * g.nvlink_link_bw_1way == pytest.approx(g.nvlink_bw_1way)
    with pytest.raises(ValueError, match="NVSwitch"):
        G.nvswitch_links("V100")
    ax = G.nvlink_node_figure("H100")
    node = topology.NvlinkNode("H100")
    lines = ax.get_lines()
    assert len(lines) == node.n_gpus * node.n_switches                # every GPU to every switch
    assert sorted({round(ln.get_linewidth() / 0.4) for ln in lines}) == [4, 5]
    txt = _texts(ax)
    assert "用 40/64 口" in txt and "用 32/64 口" in txt
    assert "5+4+4+5" in txt and "3.6e12 B/s" in txt and node.total_bw == 3.6e12


# ---- SHARP -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset", ["h100-node-sharp", "b200-node"])
def test_sharp_steps_match_collective_time(preset):
    import dataclasses
    from scaling_lib import topology
    node = topology.get(preset)
    N = node.n_gpus
    steps = G.sharp_steps(node, V)
    assert [s[1] for s in steps] == ["上行", "下行", "上行", "下行"]
    assert [s[2] / V for s in steps] == pytest.approx([(N - 1) / N, 1 / N, 1 / N, (N - 1) / N])
    up = sum(s[2] for s in steps if s[1] == "上行")
    down = sum(s[2] for s in steps if s[1] == "下行")
    assert up == pytest.approx(V) and down == pytest.approx(V)           # V out and V in per GPU
    t_sharp = C.collective_time("all_reduce", V, dataclasses.replace(node, sharp=True))
    assert max(up, down) / node.gpu_bw == pytest.approx(float(t_sharp.t_bandwidth))
    t_ring = C.collective_time("all_reduce", V, dataclasses.replace(node, sharp=False))
    assert float(t_ring.t_bandwidth) * node.gpu_bw == pytest.approx(2 * V * (N - 1) / N)
    assert float(t_ring.t_bandwidth / t_sharp.t_bandwidth) == pytest.approx(float(C.sharp_speedup(N)))
    gpu, sw = steps[0][3]
    assert (sw == N - 1).all() and (np.diag(gpu) == 1).all() and gpu.sum() == N
    gpu, sw = steps[2][3]
    assert (np.diag(gpu) == N).all() and (sw == N).all()
    assert (steps[-1][3][0] == N).all()                                   # everyone has every sum


def test_sharp_figure_bars():
    fig = G.sharp_figure("h100-node", 1e9)
    bars = fig.axes[-1].patches
    assert [round(b.get_width(), 6) for b in bars] == [1.75, 1.75, 1.0, 1.0]
    titles = " ".join(ax.get_title() for ax in fig.axes)
    assert "每颗 GPU 上行 875 MB" in titles and "每颗 GPU 下行 125 MB" in titles
    with pytest.raises(ValueError, match="NVLink node"):
        G.sharp_steps("v5e-4x4")


# ---- pipelines in time --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["gpipe", "1f1b"])
@pytest.mark.parametrize("Z,M", [(2, 2), (4, 8), (3, 5), (4, 4)])
def test_pipeline_events_reproduce_the_grid(kind, Z, M):
    grid = training.pipeline_schedule(kind, Z, M)
    ev = G.pipeline_events(kind, Z, M, t_fwd=1, t_bwd=1)
    assert len(ev) == 2 * Z * M
    for s, k, m, a, b in ev:
        assert b - a == 1 and grid[s, int(a)] == (m + 1 if k == "F" else -(m + 1))
    assert G.pipeline_idle(ev, Z) == pytest.approx((grid == 0).mean())


@pytest.mark.parametrize("Z,M", [(2, 2), (4, 4), (4, 8)])
def test_pipeline_events_gpipe_closed_forms(Z, M):
    F, B, d, g = 1.0, 2.0, 0.5, 3.0
    ev = G.pipeline_events("gpipe", Z, M, F, B)
    end = max(e[4] for e in ev)
    assert end == pytest.approx((M + Z - 1) * (F + B))
    assert G.pipeline_idle(ev, Z) == pytest.approx(float(training.bubble_fraction(Z, M)))
    ev = G.pipeline_events("gpipe", Z, M, F, B, t_transfer=d)
    assert max(e[4] for e in ev) == pytest.approx((M + Z - 1) * (F + B) + 2 * (Z - 1) * d)
    xs = [e for e in ev if e[1] in ("XF", "XB")]
    assert len(xs) == 2 * (Z - 1) * M and all(e[4] - e[3] == d for e in xs)
    ev = G.pipeline_events("gpipe", Z, M, F, B, t_allreduce=g)
    last_b = {s: max(e[4] for e in ev if e[0] == s and e[1] == "B") for s in range(Z)}
    gs = [e for e in ev if e[1] == "G"]
    assert len(gs) == Z and all(e[3] == last_b[e[0]] and e[4] - e[3] == g for e in gs)
    assert max(e[4] for e in ev) == pytest.approx((M + Z - 1) * (F + B) + g)   # stage 0 ends last


def test_pipeline_timeline_figure():
    ax = G.pipeline_timeline_figure("gpipe", 2, 2, t_allreduce=3)
    ev = G.pipeline_events("gpipe", 2, 2, t_allreduce=3)
    assert "一步 12 个单位" in ax.get_title()
    assert f"计算空闲占 {G.pipeline_idle(ev, 2):.0%}" in ax.get_title()
    labels = sorted(t.get_text() for t in ax.texts)
    assert labels == ["B0", "B0", "B1", "B1", "F0", "F0", "F1", "F1", "G", "G"]
    ax = G.pipeline_timeline_figure("1f1b", 4, 4, t_transfer=0.5)
    reds = [p for p in ax.patches if matplotlib.colors.to_hex(p.get_facecolor()) == "#b2182b"]
    assert len(reds) == 2 * 3 * 4
    with pytest.raises(ValueError, match="t_fwd"):
        G.pipeline_events("gpipe", 2, 2, t_fwd=0)


def test_no_loopback_wording():
    """GLOSSARY: wraparound is 环绕链路, never 环回 (it reads as a network loopback)."""
    import inspect
    assert "环回" not in inspect.getsource(G)
    fig = G.collective_animation("all_gather", T.Torus((4, 4), (True, True), W))
    assert [tr.name for tr in fig.data if tr.name and "链路" in tr.name] == ["链路", "环绕链路"]
    assert "无环绕链路" in G.collective_animation("all_gather", T.Ring(4, W, wrap=False)).layout.title.text


# ---- zero-bubble pipeline (ZB-H1) ------------------------------------------------------------------

@pytest.mark.parametrize("Z,M", [(2, 2), (3, 5), (4, 4), (4, 8), (8, 16)])
@pytest.mark.parametrize("F,B,W", [(1.0, 1.0, 1.0), (1.0, 1.5, 0.5), (2.0, 1.0, 1.0)])
def test_zero_bubble_step_time_and_order(Z, M, F, B, W):
    ev = G.zero_bubble_events(Z, M, F, B, W)
    assert len(ev) == 3 * Z * M
    at = {(k, s, m): (a, b) for s, k, m, a, b in ev}
    for s in range(Z):
        for m in range(M):
            assert at["B", s, m][0] >= at["F", s, m][1] and at["W", s, m][0] >= at["B", s, m][1]
            if s > 0:
                assert at["F", s, m][0] >= at["F", s - 1, m][1]
            if s < Z - 1:
                assert at["B", s, m][0] >= at["B", s + 1, m][1]
        mine = sorted((a, b) for (k, ss, m), (a, b) in at.items() if ss == s)
        assert all(x[1] <= y[0] + 1e-12 for x, y in zip(mine, mine[1:]))       # one pass at a time
        # memory: at most Z - s microbatches between their F and their B, as in 1F1B
        live = peak = 0
        for s_, k, m, a, b in sorted((e for e in ev if e[0] == s), key=lambda e: e[3]):
            live += (k == "F") - (k == "B")
            peak = max(peak, live)
        assert peak <= Z - s
    step = max(e[4] for e in ev)
    assert step == pytest.approx(M * (F + B + W) + (Z - 1) * (F + B - W))     # ZB-H1's formula
    one = G.pipeline_events("1f1b", Z, M, F, B + W)
    assert max(e[4] for e in one) == pytest.approx((M + Z - 1) * (F + B + W))
    idle_zb = Z * step - Z * M * (F + B + W)
    idle_1f1b = Z * (M + Z - 1) * (F + B + W) - Z * M * (F + B + W)
    if F == B == W:
        assert idle_zb == pytest.approx(idle_1f1b / 3)                         # a third of the bubble
        from scaling_lib import pipeline
        assert G.pipeline_idle(ev, Z) == pytest.approx(float(pipeline.bubble_fraction(Z, M, "zb")))
        assert G.pipeline_idle(one, Z) == pytest.approx(float(pipeline.bubble_fraction(Z, M, "1f1b")))
    assert G.pipeline_idle(ev, Z) == pytest.approx(idle_zb / (Z * step))


def test_zero_bubble_order_and_figure():
    assert G.zero_bubble_order(4, 6, 0)[:4] == [("F", 0), ("F", 1), ("F", 2), ("F", 3)]
    o3 = G.zero_bubble_order(4, 6, 3)                  # last stage: F, B pairs first, Ws at the end
    assert o3[:6] == [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2), ("B", 2)]
    assert o3[-3:] == [("W", 3), ("W", 4), ("W", 5)]
    for s in range(4):
        o = G.zero_bubble_order(4, 6, s)
        assert sorted(o) == sorted((k, m) for k in "FBW" for m in range(6))
    fig = G.zero_bubble_figure(4, 8)
    t1, t2 = (ax.get_title() for ax in fig.axes[:2])
    assert "一步 33 个单位" in t1 and "一步 27 个单位" in t2
    idle = G.pipeline_idle(G.zero_bubble_events(4, 8), 4)
    assert f"计算空闲占 {idle:.0%}" in t2
    labels = [t.get_text() for t in fig.axes[1].texts]
    assert sum(x.startswith("W") for x in labels) == 32 and sum(x.startswith("B") for x in labels) == 32
    with pytest.raises(ValueError, match="stage"):
        G.zero_bubble_order(4, 6, 4)
    with pytest.raises(ValueError, match="t_wgrad"):
        G.zero_bubble_events(2, 2, 1, 1, 0)


# ---- chapter 7: GQA/MQA, cross-layer KV, prefix trie, speculative decoding, decode shapes ---------

def test_kv_head_of_matches_decode_block_grouping():
    import jax.numpy as jnp
    N, K, H = 8, 2, 1
    # the reshape in kv_decode.decode_block: query head n lands in KV group n // (N // K)
    q = jnp.arange(N, dtype=jnp.float32).reshape(1, N, H).reshape(1, K, N // K, H)
    groups = [int(k) for n in range(N) for k in range(K) if n in np.asarray(q[0, k, :, 0])]
    assert G.kv_head_of(N, K) == groups == [0, 0, 0, 0, 1, 1, 1, 1]
    assert G.kv_head_of(8, 8) == list(range(8)) and G.kv_head_of(8, 1) == [0] * 8
    with pytest.raises(ValueError, match="divide"):
        G.kv_head_of(8, 3)


def test_head_sharing_figure():
    from scaling_lib import inference
    fig = G.head_sharing_figure(8, (8, 2, 1), head_dim=128, context=8192)
    for ax, K in zip(fig.axes, (8, 2, 1)):
        lines = ax.get_lines()
        assert len(lines) == 8                                          # one per query head
        owner = G.kv_head_of(8, K)
        kv_x = {}
        for n, ln in enumerate(lines):
            (x0, x1), (y0, y1) = ln.get_xdata(), ln.get_ydata()
            assert y0 > y1
            kv_x.setdefault(owner[n], set()).add(round(x1, 9))
        assert len(kv_x) == K and all(len(v) == 1 for v in kv_x.values())  # a group meets at its KV head
        txt = _texts(ax)
        from scaling_lib.units import fmt_bytes
        assert f"2·K·H·b = {fmt_bytes(2 * K * 128 * 2)}" in txt
        assert f"≈ {float(inference.attention_intensity(8192, 1, 8 // K)):.1f} FLOPs/字节" in txt
    assert "MHA" in fig.axes[0].get_title() and "GQA" in fig.axes[1].get_title()
    assert "MQA" in fig.axes[2].get_title()


def test_cross_layer_kv_figure():
    from scaling_lib import inference
    from scaling_lib.units import fmt_bytes
    fig = G.cross_layer_kv_figure("LLaMA-3-8B", share=4, seq_len=8192)
    L = inference.served_model("LLaMA-3-8B").n_layers
    full = float(inference.kv_bytes_per_seq("LLaMA-3-8B", 8192))
    top, bot = fig.axes
    assert len(top.get_lines()) == len(bot.get_lines()) == L               # every layer reads a cache
    assert len({round(ln.get_xdata()[1], 9) for ln in bot.get_lines()}) == L // 4
    assert f"{L} 份，每序列 {fmt_bytes(full)}" in top.get_title()
    assert f"{L // 4} 份，每序列 {fmt_bytes(full / 4)}" in bot.get_title()
    assert top.get_title().endswith(f"读 HBM {fmt_bytes(full)}") and bot.get_title().endswith(f"读 HBM {fmt_bytes(full)}")
    with pytest.raises(ValueError, match="share"):
        G.cross_layer_kv_figure("LLaMA-3-8B", share=1)


PROMPTS = [["系统", "你", "好"], ["系统", "你", "是", "谁"], ["系统", "今天", "天气"],
           ["系统", "你", "是", "谁", "？", "我"], ["系统", "今天", "几号"]]


def test_prefix_trie_matches_prefix_saving():
    from scaling_lib import inference
    tr = G.prefix_trie(PROMPTS)
    assert tr["hits"] == [0, 2, 1, 4, 2]
    assert len(tr["nodes"]) == len({tuple(p[:i]) for p in PROMPTS for i in range(1, len(p) + 1)}) == 10
    assert tr["count"][("系统",)] == 5 and tr["count"][("系统", "你")] == 3
    total = sum(map(len, PROMPTS))
    assert sum(tr["hits"]) / total == pytest.approx(inference.prefix_saving(PROMPTS))
    rng = np.random.default_rng(0)
    ps = [list(rng.integers(0, 3, rng.integers(1, 7))) for _ in range(30)]
    assert sum(G.prefix_trie(ps)["hits"]) / sum(map(len, ps)) == pytest.approx(inference.prefix_saving(ps))
    ax = G.prefix_trie_figure(PROMPTS)
    assert len(ax.patches) == 10                                            # shared prefixes once
    assert "10 个节点存下 5 个请求（共 19 个 token）" in ax.get_title()
    assert f"省掉 {9 / 19:.0%}" in ax.get_title()
    txt = _texts(ax)
    assert "请求 4：命中 4/6" in txt and "请求 1：命中 0/3" in txt
    with pytest.raises(ValueError, match="names"):
        G.prefix_trie_figure(PROMPTS, names=["a"])


def test_speculative_rounds_and_figure():
    rounds = G.speculative_rounds([4, 2, 0], 4)
    assert [c for _, c in rounds] == [
        ["accept"] * 4 + ["target"],
        ["accept", "accept", "reject", "discard", "target"],
        ["reject", "discard", "discard", "discard", "target"]]
    assert sum(k + 1 for k, _ in rounds) == 9
    with pytest.raises(ValueError, match="n_new"):
        G.speculative_rounds([4, 2, 0], 4, n_new=20)
    with pytest.raises(ValueError, match="accepted"):
        G.speculative_rounds([5], 4)
    spec = {"accepted": np.array([4, 2, 0, 3, 4, 1]), "tokens": np.arange(19)}   # 20 emitted, 1 cut
    fig = G.speculative_figure(spec, 4, t_draft=0.05, t_verify=1.0)
    ax, ax2 = fig.axes[:2]
    cols = [matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches]
    acc = spec["accepted"]
    assert cols.count("#009e73") == acc.sum()                               # accepted drafts
    assert cols.count("#b2182b") == int(np.sum(acc < 4))                    # one rejection per short round
    assert cols.count("#cc79a7") == len(acc)                                # one target token per pass
    t_end = len(acc) * (4 * 0.05 + 1.0)
    x, y = ax2.get_lines()[0].get_data()
    assert x[-1] == pytest.approx(t_end) and y[-1] == 19
    assert f"每个 token 约 {t_end / 19:.2f} 个目标步" in fig._suptitle.get_text()
    assert f"平均 {19 / 6:.2f} 个/次" in fig._suptitle.get_text()
    plain = ax2.get_lines()[1].get_data()
    assert plain[0][-1] == pytest.approx(19.0) and plain[1][-1] == 19        # one token per step


def test_speculative_figure_from_a_real_run():
    import jax
    from scaling_lib import jax_model, kv_decode
    cfg = kv_decode.tiny_config(d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=64, vocab=50)
    params = jax_model.init_params(cfg, jax.random.PRNGKey(0))
    draft = kv_decode.perturbed_params(params, 0.3)
    spec = kv_decode.generate_speculative(params, draft, np.array([[1, 2, 3]]), cfg, 10, gamma=3)
    fig = G.speculative_figure(spec, 3)
    assert fig.axes[1].get_lines()[0].get_data()[1][-1] == 10
    assert f"{spec['passes']} 次目标前向产出 10 个 token" in fig._suptitle.get_text()
    cols = [matplotlib.colors.to_hex(p.get_facecolor()) for p in fig.axes[0].patches]
    assert cols.count("#009e73") == int(spec["accepted"].sum())


def test_transformer_block_at_decode():
    from scaling_lib import inference, models
    from scaling_lib.units import fmt_bytes, fmt_num
    cfg = models.get("LLaMA-3-8B")
    fig = G.transformer_block_figure(cfg, batch=2, seq_len=1, kv_len=2048)
    texts = [t.get_text() for t in fig.axes[0].texts]
    attn = float(cfg.attention_flops_per_token(2048, causal=False)) * 2 / cfg.n_layers
    kv_read = 2 * 2 * 2048 * cfg.n_kv_heads * cfg.d_head * 2
    assert f"{fmt_num(attn)} FLOPs" in texts
    G_ = cfg.n_heads // cfg.n_kv_heads
    line = next(t for t in texts if t.startswith(f"读 {fmt_bytes(kv_read)}"))
    assert float(line.split("，")[1].split()[0]) == pytest.approx(
        float(inference.attention_intensity(2048, 1, G_)), rel=2e-3)        # ≈ G: memory-bound
    w_line = [t for t in texts if t.startswith("读 ") and t != line]
    assert len(w_line) == 4 and all(float(t.split("，")[1].split()[0]) == pytest.approx(2, rel=1e-3)
                                    for t in w_line)                        # weights: B FLOPs per byte
    assert "[.., 1024" not in " ".join(texts) and "[.., 32,1,2048]" in " ".join(texts)
    assert "缓存 S=2048" in fig.axes[0].get_title()


# ---- DualPipe (DeepSeek-V3): the schedule pass by pass, its bubble against 1F1B and ZB-H1 ---------

def _dualpipe_passes(P, N):
    from scaling_lib import pipeline as pl
    return {r: [p for op in pl.dualpipe_order(P, N, r) for p in op] for r in range(P)}


@pytest.mark.parametrize("P,N", [(2, 4), (2, 6), (4, 8), (4, 12), (6, 12), (6, 16), (8, 16),
                                 (8, 20), (10, 24)])
def test_dualpipe_order_every_pass_once_in_order(P, N):
    from scaling_lib import pipeline as pl
    for r, passes in _dualpipe_passes(P, N).items():
        for d in (0, 1):
            f = [m for k, dd, m in passes if dd == d and k == "F"]
            b = [m for k, dd, m in passes if dd == d and k in ("B", "BW")]
            w = [m for k, dd, m in passes if dd == d and k == "W"]
            assert f == b == list(range(N // 2)), (r, d)            # each microbatch once, in order
            split = {m for k, dd, m in passes if dd == d and k == "B"}
            assert sorted(w) == sorted(split)                        # a W for every split B only
            pos = {(k if k != "BW" else "B", m): i for i, (k, dd, m) in enumerate(passes) if dd == d}
            for m in range(N // 2):                                  # F before B before W, per stage
                assert pos[("F", m)] < pos[("B", m)]
                if ("W", m) in pos:
                    assert pos[("B", m)] < pos[("W", m)]
        ops = pl.dualpipe_order(P, N, r)
        for op in ops:                                               # pairs: F of one direction,
            if len(op) == 2:                                         # whole B of the other
                (k0, d0, _), (k1, d1, _) = op
                assert k0 == "F" and k1 == "BW" and d0 != d1
        H, h = P // 2, min(r, P - 1 - r)
        assert sum(len(op) == 2 for op in ops) == 2 * (N // 2 - P + h + 1) + (H - h - 1) - (h == H - 1)


@pytest.mark.parametrize("P,N", [(2, 4), (4, 8), (4, 10), (6, 14), (8, 20), (8, 32), (10, 20),
                                 (12, 28)])
def test_dualpipe_events_dependencies_and_report_bubble(P, N):
    from scaling_lib import pipeline as pl
    ev = pl.dualpipe_events(P, N)
    end = {}
    for r, k, d, m, a, b, pair in ev:
        s = pl.dualpipe_stage(P, r, d)
        end[(k if k != "BW" else "B", d, s, m)] = (a, b)
    for (k, d, s, m), (a, b) in end.items():                       # dependency order across stages
        if k == "F" and s > 0:
            assert end[("F", d, s - 1, m)][1] <= a + 1e-12
        if k == "B":
            assert end[("F", d, s, m)][1] <= a + 1e-12
            if s < P - 1:
                assert end[("B", d, s + 1, m)][1] <= a + 1e-12
        if k == "W":
            assert end[("B", d, s, m)][1] <= a + 1e-12
    for r in range(P):                                              # one op at a time per device
        spans = sorted({(a, b) for rr, *_, a, b, _p in ev if rr == r})
        assert all(b0 <= a1 + 1e-12 for (_, b0), (a1, _) in zip(spans, spans[1:]))
    idle = pl.dualpipe_idle(ev, P)
    # DeepSeek-V3 Table 2 at F = B = W = 1, F&B = F + B(whole) = 3: (P/2 − 1)(3 + 2 − 3) = P − 2
    assert idle == pytest.approx([P - 2.0] * P)
    assert idle[0] == pytest.approx(float(pl.bubble_time("dualpipe", P)))
    step = max(e[5] for e in ev)
    assert step == pytest.approx(3 * N + P - 2)
    assert (P - 2) / step == pytest.approx(float(pl.bubble_fraction(P, N, "dualpipe")))
    # against 1F1B and ZB-H1 with the same devices and microbatches (their own simulators)
    one = G.pipeline_events("1f1b", P, N, 1.0, 2.0)
    zb = G.zero_bubble_events(P, N, 1.0, 1.0, 1.0)
    idle_1f1b = max(e[4] for e in one) - 3 * N
    idle_zb = max(e[4] for e in zb) - 3 * N
    assert idle_1f1b == pytest.approx(float(pl.bubble_time("1f1b", P)))      # (P−1)(F+B)
    assert idle_zb == pytest.approx(float(pl.bubble_time("zb", P)))          # (P−1)(F+B−2W)
    assert idle[0] < idle_zb < idle_1f1b
    assert max(pl.dualpipe_in_flight(P, N)) == P + 1 == pl.activations_in_flight(P, N, "dualpipe")
    assert pl.param_copies("dualpipe") == 2


@pytest.mark.parametrize("k", [0.5, 2.0, 3.7])
def test_dualpipe_bubble_scales_with_the_unit(k):
    from scaling_lib import pipeline as pl
    for P in (4, 8):
        ev = pl.dualpipe_events(P, 2 * P + 4, k, k, k)
        assert pl.dualpipe_idle(ev, P) == pytest.approx([(P - 2) * k] * P)
        assert pl.bubble_time("dualpipe", P, k, k, k) == pytest.approx((P / 2 - 1) * (3 * k + 2 * k - 3 * k))


def test_dualpipe_pairs_share_their_span_and_a_slower_pair_costs_time():
    from scaling_lib import pipeline as pl
    ev = pl.dualpipe_events(8, 20)
    pairs = [e for e in ev if e[6]]
    assert pairs and all(e[5] - e[4] == pytest.approx(3.0) for e in pairs)
    by_start = {}
    for e in pairs:
        by_start.setdefault((e[0], e[4]), []).append(e[1])
    assert all(sorted(v) == ["BW", "F"] for v in by_start.values())
    slow = pl.dualpipe_events(8, 20, t_fb=3.5)
    assert max(e[5] for e in slow) > max(e[5] for e in ev)


def test_dualpipe_bad_arguments():
    from scaling_lib import pipeline as pl
    with pytest.raises(ValueError, match="n_stages must be even"):
        pl.dualpipe_order(5, 20, 0)
    with pytest.raises(ValueError, match="n_micro must be even"):
        pl.dualpipe_order(4, 9, 0)
    with pytest.raises(ValueError, match=r"n_micro >= 2·n_stages = 16"):
        pl.dualpipe_events(8, 14)
    with pytest.raises(ValueError, match="rank must be < n_stages = 4"):
        pl.dualpipe_order(4, 8, 4)
    with pytest.raises(TypeError, match="n_stages must be an integer"):
        pl.dualpipe_events(4.0, 8)
    with pytest.raises(ValueError, match="t_fb must be > 0"):
        pl.dualpipe_events(4, 8, t_fb=0)
    with pytest.raises(ValueError, match="direction must be 0 or 1"):
        pl.dualpipe_stage(4, 0, 2)
    with pytest.raises(ValueError, match="even number of stages"):
        pl.bubble_time("dualpipe", 5)
    with pytest.raises(ValueError, match="bubble_time knows"):
        pl.bubble_time("interleaved", 4)
    with pytest.raises(TypeError, match="compare must be True or False"):
        G.dualpipe_figure(4, 8, compare="yes")


def test_dualpipe_figure_titles_and_cells():
    from scaling_lib import pipeline as pl
    fig = G.dualpipe_figure(8, 20)
    titles = [ax.get_title() for ax in fig.axes[:3]]
    assert "每设备空闲 21 个单位" in titles[0]          # 1F1B: (P−1)(F+B) = 7·3
    assert "每设备空闲 7 个单位" in titles[1]           # ZB-H1: (P−1)(F+B−2W) = 7
    assert "每设备空闲 6 个单位" in titles[2] and "一步 66 个单位" in titles[2]   # (P/2−1)·2
    ev = pl.dualpipe_events(8, 20)
    assert len(fig.axes[2].texts) == len(ev)            # one number per pass
    framed = [p for p in fig.axes[2].patches if p.get_edgecolor()[:3] == (0.0, 0.0, 0.0)
              and not p.get_fill()]
    assert len(framed) == sum(e[6] for e in ev) // 2    # one black frame per F&B pair
    single = G.dualpipe_figure(4, 8, compare=False)
    assert len([a for a in single.axes if a.get_title()]) == 1


# ---- networks: the fat tree and the torus, drawn from topology ------------------------------------

def test_fat_tree_levels_from_topology():
    sp = T.dgx_h100_superpod()
    lv = G.fat_tree_levels(sp)
    assert [d["units"] for d in lv] == [128, 4, 1]
    assert [d["switches"] for d in lv] == [lv_.switches for lv_ in sp.levels]
    assert sum(d["total_switches"] for d in lv) == 4 * 128 + 8 * 4 + 16 == 560
    assert [d["per_node_bw"] for d in lv] == pytest.approx(sp.per_node_bandwidth())
    assert [d["gpus"] for d in lv] == [8, 256, 1024]
    assert G.fat_tree_levels("h100-superpod") == lv
    sysl = G.fat_tree_levels(T.system("DGX H100", 64))       # a System: its fat_tree()
    assert [d["units"] for d in sysl] == [8, 1] and sysl[0]["uplink_bw"] == 4.5e11
    with pytest.raises(TypeError, match="topology.FatTree"):
        G.fat_tree_levels(3)


def test_fat_tree_figure_draws_every_switch():
    sp = T.dgx_h100_superpod()
    ax = G.fat_tree_figure(sp, max_nodes=3)
    assert "交换机共 560 台" in ax.get_title() and "无阻塞" in ax.get_title()
    squares = [p for p in ax.patches if type(p).__name__ == "Rectangle"]
    assert len(squares) == 8 * 4 + 16                        # leaf + spine switches, each drawn
    nodes = [p for p in ax.patches if type(p).__name__ == "FancyBboxPatch"]
    assert len(nodes) == 3 * 4
    texts = " ".join(t.get_text() for t in ax.texts)
    assert texts.count("+29") == 4 and "每节点 400 GB/s" in texts
    with pytest.raises(ValueError, match="max_nodes"):
        G.fat_tree_figure(sp, max_nodes=0)


def test_torus_vs_fat_tree_figure():
    from scaling_lib import hardware
    v5p = hardware.get("v5p")
    fig = G.torus_vs_fat_tree_figure("v5p", (4, 4))
    left, right = fig.axes[0].get_title(), fig.axes[1].get_title()
    tor = T.Torus((4, 4), (True, True), v5p.ici_link_bw_1way)
    assert f"红线 {tor.hops((0, 0), (2, 2))} 跳" in left and f"最远 {tor.max_hops()} 跳" in left
    assert f"{v5p.ici_links} 条 ICI 链路" in left
    assert f"出口 {G._gbs(v5p.ici_links * v5p.ici_link_bw_1way)}" in left
    h100 = hardware.get("H100")
    assert "经过 3 台交换机" in right                          # leaf, spine, leaf
    assert f"节点内每 GPU {G._gbs(h100.nvlink_bw_1way)}" in right
    assert f"出节点每 GPU {G._gbs(h100.dcn_bw_1way)}" in right
    assert G._gbs(h100.nvlink_bw_1way) == "450 GB/s" and G._gbs(h100.dcn_bw_1way) == "50 GB/s"
    route = G._torus_route(T.Torus((5, 3), (True, False), 1e9), (0, 0), (4, 2))
    assert route == [(0, 0), (4, 0), (4, 1), (4, 2)]          # the wraparound way on X
    with pytest.raises(ValueError, match="must be a TPU"):
        G.torus_vs_fat_tree_figure("H100")
    with pytest.raises(ValueError, match="2-D face"):
        G.torus_vs_fat_tree_figure("v5p", (4, 4, 4))
