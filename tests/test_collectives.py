"""scaling_lib.collectives: the formulas of spec 03 (TPU rings/tori) and spec 12 (NVLink nodes,
fat trees, SHARP, AllToAll) pinned to their worked answers, plus property tests."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scaling_lib import collectives as C, topology as T

MB = 1e6


# ---- spec 03 (TPU) -------------------------------------------------------------------------
def test_p3_5_latency_threshold():
    assert C.latency_threshold_bytes("v5e-4x4") == pytest.approx(45e3)
    assert C.latency_threshold_bytes("v5p-4x4x4") == pytest.approx(90e3)


def test_p3_6_v5e_axis_of_4_no_wrap():
    s = T.TpuSlice("v5e", (8, 4), ("X", "Y"))
    a = C.collective_time("all_gather", 2 * 2048 * 8192, s, ("Y",))
    assert a.total == pytest.approx(559e-6, rel=0.01)       # 3 x 8.39e6 / 4.5e10
    assert a.regime == C.REGIME_BW
    ring = C.ring_time("all_gather", 2 * 2048 * 8192, 4, 4.5e10, wrap=True)
    assert ring.total == pytest.approx(373e-6, rel=0.01)     # V / W_ici
    b = C.collective_time("all_gather", 2 * 256 * 256, s, ("Y",))
    assert b.total == pytest.approx(3e-6, rel=0.01) and b.regime == C.REGIME_LAT


def test_p3_8_v4p_cube():
    c = T.TpuSlice("v4p", (4, 4, 4))
    B, D = 1024, 4096
    assert C.collective_time("ag", 2 * B * D / 4, c, "X").total == pytest.approx(23.3e-6, rel=0.01)
    assert C.collective_time("ag", 2 * B * D, c, ("X", "Y")).total == pytest.approx(46.6e-6, rel=0.01)
    assert C.collective_time("ar", 2 * B * D / 16, c, "Z").total == pytest.approx(11.6e-6, rel=0.01)
    assert C.collective_time("ag", 2 * B * D / 4, c, ("X", "Z")).total == pytest.approx(11.6e-6, rel=0.01)
    assert C.collective_time("ag", 2 * B * D, c, ("X", "Y", "Z")).total == pytest.approx(31e-6, rel=0.01)


def test_p3_9_latency_bound():
    r = C.collective_time("ag", 256, "v4p-4x4x4", "X")
    assert r.total == pytest.approx(2e-6) and r.regime == C.REGIME_LAT


def test_p3_11_latency_floor_three_axes():
    r = C.collective_time("ag", 8, "v4p-4x4x4", ("X", "Y", "Z"))
    assert r.t_latency == pytest.approx(6e-6)


def test_p3_12_no_wrap_v5e_4x4():
    s = T.TpuSlice("v5e", (4, 4))
    I = K = J = 8192
    # (a) AR_Y of V = 2IK/4: ring IK/9e10, no wrap IK/6e10
    r = C.collective_time("ar", 2 * I * K / 4, s, "Y")
    assert r.total == pytest.approx(I * K / 6e10, rel=1e-9)
    assert C.ring_time("ar", 2 * I * K / 4, 4, 4.5e10).total == pytest.approx(I * K / 9e10, rel=1e-9)
    # (b) AG_X of V = 2JK/4: JK/1.2e11 without wrap
    assert C.collective_time("ag", 2 * J * K / 4, s, "X").total == pytest.approx(J * K / 1.2e11)


def test_p3_13_v5e_2x2_tp():
    r = C.collective_time("ag", 2 * 128 * 8192, "v5e-2x2", ("X", "Y"))
    assert r.total == pytest.approx(11.7e-6, rel=0.01)
    assert C.collective_time("rs", 2 * 128 * 8192, "v5e-2x2", ("X", "Y")).total == r.total


def test_alltoall_ring_quarter_and_torus():
    v = 64 * MB
    ag = C.ring_time("ag", v, 16, 4.5e10).total
    a2a = C.ring_time("a2a", v, 16, 4.5e10).total
    assert a2a == pytest.approx(ag / 4)                     # V / (4 W_ici)
    t = T.Torus((16, 8), (True, True), 4.5e10)
    r = C.collective_time("a2a", v, t, ("X", "Y"))
    assert r.t_bandwidth == pytest.approx(v * 16 / (4 * 128 * 9e10))   # V max(n)/(4 N W_bi)
    line = C.ring_time("a2a", v, 16, 4.5e10, wrap=False).total
    assert line == pytest.approx(2 * a2a)
    # exact ring worst-link (P3.16 ratios 2.67, 3.2 -> 4)
    for n, ratio in ((4, 2.67), (8, 3.2)):
        assert C.ring_time("ag", v, n, 1.0).t_bandwidth / C.alltoall_ring_exact(v, n, 1.0) == \
            pytest.approx(ratio, rel=0.01)


def test_permute():
    r = C.ring_time("permute", 1e6, 8, 4.5e10)
    assert r.t_bandwidth == pytest.approx(1e6 / 4.5e10)
    assert r.total == pytest.approx(1e6 / 4.5e10 + 1e-6)   # latency and bandwidth add
    line = C.ring_time("permute", 1e6, 8, 4.5e10, wrap=False)
    assert line.t_latency == pytest.approx(7e-6)            # the wrapped chunk walks back 7 hops
    with pytest.raises(ValueError, match="one axis"):
        C.collective_time("permute", 1e6, "v5e-4x4", ("X", "Y"))


def test_multislice_dcn():
    ms = T.get("v5e-2pods")
    v = 1e9
    r = C.collective_time("all_reduce", v, ms, ("X", "Y", "DCN"))
    ici = C.collective_time("all_reduce", v, "v5e-16x16", ("X", "Y")).t_bandwidth
    dcn = 2 * (v / 256) * 0.5 / 3.125e9
    assert r.t_bandwidth == pytest.approx(ici + dcn)
    assert r.bottleneck == "ICI"          # DCN only carries the 1/256 shard of each chip
    only = C.collective_time("all_gather", v, ms, "DCN")
    assert only.t_bandwidth == pytest.approx(v * 0.5 / 3.125e9)


# ---- spec 12 (GPU) -------------------------------------------------------------------------
def test_p2_3_node_allgather():
    r = C.collective_time("all_gather", 2 * 4096 * 65536, "h100-node")
    assert r.total == pytest.approx(1.04e-3, rel=0.01)


def test_p4_1_p4_2_node():
    r = C.collective_time("ag", 2 * 1024 * 16384, "h100-node")
    assert r.total == pytest.approx(65e-6, rel=0.02)
    V = 2 * 1024 * 8
    dense = C.collective_time("a2a", V, "h100-node").t_bandwidth
    assert dense == pytest.approx(V * 7 / (4.5e11 * 64))
    half = C.collective_time("a2a", V, "h100-node", top_k=4).t_bandwidth
    assert half == pytest.approx(dense / 2)


def test_p4_3_sharded_allgather_in_su():
    V = 2 * 8192 * 32768
    assert C.sharded_allgather_time(V, 1) == pytest.approx(1.30e-3, rel=0.01)
    assert C.sharded_allgather_time(V, 8) == pytest.approx(1.30e-3, rel=0.01)
    for y, t in ((16, 0.67e-3), (32, 0.34e-3), (64, 0.17e-3)):
        assert C.sharded_allgather_time(V, y) == pytest.approx(t, rel=0.05)


def test_p4_5_p4_10_sharp():
    plain = C.collective_time("ar", 1e9, "h100-node").total
    sharp = C.collective_time("ar", 1e9, "h100-node-sharp").total
    assert sharp == pytest.approx(1e9 / 4.5e11)
    assert plain / sharp == pytest.approx(1.75)
    assert C.sharp_speedup(8) == pytest.approx(1.75)


def test_p4_8_two_nodes():
    r = C.collective_time("ag", 1e9, "h100-superpod", n_gpus=16)
    assert r.total == pytest.approx(1.94e-3, rel=0.01)
    assert r.bottleneck == "节点"
    assert dict(r.levels)["叶（SU）"] == pytest.approx(1e9 / 8e11)


def test_p4_9_alltoall_two_nodes():
    one = C.collective_time("a2a", 1e9, "h100-superpod", n_gpus=8).total
    two = C.collective_time("a2a", 1e9, "h100-superpod", n_gpus=16).total
    assert one == pytest.approx(1e9 * 7 / (64 * 4.5e11))
    assert two == pytest.approx(1e9 / (4 * 4e11))            # B(M-1)/(M^2 W_node), M = 2
    # crossing the node boundary: the scale-out link, not NVLink, now carries half the bytes (≈2.6× slower)
    assert two / one == pytest.approx((1 / (4 * 4e11)) / (7 / (64 * 4.5e11)))
    assert 2 < two / one < 3


def test_p7_2_ragged_fraction():
    approx = C.ragged_fraction(8, np.array([8, 16, 64, 256]))
    exact = C.ragged_fraction(8, np.array([8, 16, 64, 256]), exact=True)
    np.testing.assert_allclose(approx, [0.875, 0.469, 0.123, 0.0311], rtol=5e-3)
    np.testing.assert_allclose(exact, [0.574, 0.378, 0.117, 0.0307], rtol=5e-3)


def test_bus_bandwidth():
    assert C.bus_bandwidth(1e9, 1e-2, 8, "all_reduce") == pytest.approx(1e11 * 1.75)
    assert C.bus_bandwidth(1e9, 1e-2, 8, "ag") == pytest.approx(1e11 * 7 / 8)
    with pytest.raises(ValueError):
        C.bus_bandwidth(1e9, 1e-2, 8, "a2a")


# ---- interface and errors -----------------------------------------------------------------
def test_result_interface():
    r = C.collective_time("ag", 1e6, "v5e-16x16", ("X", "Y"))
    d = r.as_dict()
    for key in ("t_bandwidth", "t_latency", "total", "regime", "effective_bandwidth"):
        assert key in d
    assert "AllGather" in str(r) and "<table>" in r._repr_html_()
    assert r.effective_bandwidth == pytest.approx(1e6 / r.total)


def test_bad_input():
    with pytest.raises(ValueError, match="allowed"):
        C.collective_time("broadcast", 1e6, "v5e-4x4")
    with pytest.raises(ValueError, match=">= 0"):
        C.collective_time("ag", -1, "v5e-4x4")
    with pytest.raises(ValueError, match="no axis"):
        C.collective_time("ag", 1e6, "v5e-4x4", ("Z",))
    with pytest.raises(KeyError):
        C.collective_time("ag", 1e6, "v9-4x4")
    with pytest.raises(ValueError, match="top_k"):
        C.collective_time("ag", 1e6, "h100-node", top_k=2)
    with pytest.raises(ValueError, match="multiple"):
        C.collective_time("ag", 1e6, "h100-superpod", n_gpus=12)
    with pytest.raises(TypeError):
        C.collective_time(3, 1e6, "h100-node")


def test_vectorised():
    sizes = np.logspace(3, 9, 13)
    r = C.collective_time("ar", sizes, "v5e-16x16", ("X",))
    assert r.total.shape == sizes.shape
    assert set(r.regime) == {C.REGIME_BW, C.REGIME_LAT}
    x = C.crossover_bytes("ar", "v5e-16x16", ("X",))
    assert C.collective_time("ar", x, "v5e-16x16", "X").t_latency == pytest.approx(
        C.collective_time("ar", x, "v5e-16x16", "X").t_bandwidth)


# ---- properties -----------------------------------------------------------------------------
TOPOS = ["v5e-4x4", "v5e-16x16", "v5p-4x4x4", "h100-node", "h100-node-sharp", "gb200-nvl72",
         "h100-superpod"]


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(["ag", "rs", "ar", "a2a"]), topo=st.sampled_from(TOPOS),
       a=st.floats(1e2, 1e10), f=st.floats(1.01, 100))
def test_time_grows_with_bytes(kind, topo, a, f):
    t1 = C.collective_time(kind, a, topo)
    t2 = C.collective_time(kind, a * f, topo)
    assert t2.total >= t1.total
    assert t2.t_bandwidth > t1.t_bandwidth


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(["ag", "rs", "ar", "a2a", "permute"]), n=st.integers(2, 32),
       w=st.floats(1e9, 1e12), f=st.floats(1.1, 10), wrap=st.booleans())
def test_time_falls_with_bandwidth(kind, n, w, f, wrap):
    slow = C.ring_time(kind, 1e8, n, w, wrap=wrap).t_bandwidth
    fast = C.ring_time(kind, 1e8, n, w * f, wrap=wrap).t_bandwidth
    assert fast == pytest.approx(slow / f)


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(["ag", "rs", "ar", "a2a"]), topo=st.sampled_from(TOPOS))
def test_latency_dominates_small_messages(kind, topo):
    small = C.collective_time(kind, 64, topo)
    big = C.collective_time(kind, 1e10, topo)
    assert small.regime == C.REGIME_LAT
    assert big.regime == C.REGIME_BW


@settings(max_examples=30, deadline=None)
@given(n=st.integers(3, 32))
def test_no_wrap_is_slower(n):
    assert C.ring_time("ag", 1e8, n, 1e10, wrap=False).total > C.ring_time("ag", 1e8, n, 1e10).total


# ---- widgets (chapter 2 / 12 explorers): < 100 ms per update --------------------------------
def test_widget_updates_are_fast():
    import io, contextlib
    import matplotlib
    matplotlib.use("Agg")
    from scaling_lib.widgets import time_update, collectives as wc, chips as wch
    for topo in ("v5e 4×4（无环绕），X 轴", "H100 SuperPOD 1024 GPU", "两个 v5e Pod（DCN）"):
        assert time_update(wc.draw_collective, kind="all_reduce", topology=topo, nbytes=1e6) < 0.25
    with contextlib.redirect_stdout(io.StringIO()):
        assert time_update(wch.draw_compare, a="TPU v5e", b="GB200") < 0.25
    r = wc.draw_collective("AllGather", "8×H100 NVLink 节点", 1e9)
    assert r.total == pytest.approx(1e9 * 7 / (8 * 4.5e11))
    with pytest.raises(ValueError, match="allowed"):
        wc.sweep("all_gather", "no such topology")
    fig = wc.collective_slider_figure("all_gather")
    assert len(fig.data) == 3 * len(wc.TOPOLOGIES)
    rows = wch.compare_rows("v5p", "H100")
    assert rows[0][3] == pytest.approx(9.89e14 / 4.59e14)


def test_slice_and_parallel_widgets():
    import matplotlib
    matplotlib.use("Agg")
    from scaling_lib import topology as T
    from scaling_lib.widgets import time_update, collectives as wc, gpu_parallel as wg
    s = T.TpuSlice("v5e", (8, 16))
    path = wc.route(s, (0, 0), (5, 12))
    assert len(path) - 1 == s.hops((0, 0), (5, 12)) == 9      # the short way round the 16-axis
    r = wc.draw_slice("v5e 4×4", 3, 3, 2 * 8 * 128 * 8192)
    assert r.total == pytest.approx(192e-6, rel=0.01)            # P2.11
    assert time_update(wc.draw_slice, slice_name="v5e 16×16", dst_x=7, dst_y=3) < 0.25
    res = wg.strategy_times("DGX H100", 8192, 28672, 2472.5, 8, 64, 8)
    tm, tc = res["数据并行（跨节点）"]
    assert tm == pytest.approx(tc)                               # at the DP threshold
    assert time_update(wg.draw_parallel, node="GB200 NVL72") < 0.25
    with pytest.raises(ValueError, match="efficiency"):
        wg.strategy_times(efficiency=0)


def test_sized_collective_explorer():
    import matplotlib
    matplotlib.use("Agg")
    from scaling_lib.widgets import time_update, collectives as wc
    topo, axes, n, _ = wc.family_topology("H100 集群（胖树）", 2)
    assert n == 16
    assert wc.draw_collective_sized("AllGather", "H100 集群（胖树）", 2, 1e9).total == pytest.approx(1.94e-3, rel=0.01)
    topo, axes, n, _ = wc.family_topology("TPU v5e：一根轴", 3)
    assert topo.shape == (8, 16) and topo.wraps == (False, True)
    with pytest.raises(ValueError, match="1..7"):
        wc.family_topology("TPU v5e：一根轴", 9)
    assert time_update(wc.draw_collective_sized, kind="all_to_all", family="GB200 NVL72 集群", size=3) < 0.25


def test_sized_explorer_inner_sharding():
    import matplotlib
    matplotlib.use("Agg")
    from scaling_lib.widgets import collectives as wc
    V = 2 * 8192 * 32768
    r = wc.draw_collective_sized("all_gather", "H100 集群（胖树）", 6, V, inner=16)   # 256 GPUs
    assert r.total == pytest.approx(C.sharded_allgather_time(V, 16))
    with pytest.raises(ValueError, match="GPU"):
        wc.draw_collective_sized("all_gather", "TPU v5e：一根轴", 3, V, inner=4)
