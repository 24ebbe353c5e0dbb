"""scaling_lib.topology: wraparound rules, hops, ports, point-to-point (spec 02 G13-G16, P2.6,
P2.11; CANON D18), NVLink nodes and fat trees (spec 12 F9-F13, P2.1, P2.2, P3.1, P3.3, P3.4)."""
import math

import pytest

from scaling_lib import topology as T


@pytest.mark.parametrize("chip,shape,wraps", [
    ("v5e", (4, 4), (False, False)),        # 02 Topology rules: 4x4 none
    ("v5e", (8, 16), (False, True)),        # 8x16 wraps only on the 16-axis
    ("v5e", (16, 16), (True, True)),
    ("v6e", (16, 8), (True, False)),
    ("v5p", (2, 2, 1), (False, False, False)),
    ("v5p", (2, 2, 4), (False, False, False)),   # CANON D18: an axis of 4 but no whole cube
    ("v5p", (4, 4, 4), (True, True, True)),
    ("v5p", (4, 4, 8), (True, True, True)),
    ("v4p", (4, 4, 4), (True, True, True)),
])
def test_wraparound_rule(chip, shape, wraps):
    assert T.wraparound(chip, shape) == wraps
    assert T.TpuSlice(chip, shape).wraps == wraps


def test_wraparound_bad_input():
    with pytest.raises(ValueError, match="2D"):
        T.wraparound("v5e", (4, 4, 4))
    with pytest.raises(ValueError, match="3D"):
        T.wraparound("v5p", (4, 4))
    with pytest.raises(ValueError, match="exceeds"):
        T.wraparound("v5e", (32, 4))
    with pytest.raises(ValueError, match="GPU|gpu"):
        T.wraparound("h100", (8,))
    with pytest.raises(KeyError, match="v5e"):
        T.TpuSlice("v5x", (4, 4))
    with pytest.raises(ValueError, match="shape"):
        T.TpuSlice("v5e", "4by4")
    with pytest.raises(ValueError):
        T.TpuSlice("v5e", (0, 4))


def test_max_hops_p2_6():
    # P2.6: ring of 16: 15 hops without wrap, 8 with
    assert T.max_hops(16, wrap=False) == 15
    assert T.max_hops(16, wrap=True) == 8
    with pytest.raises(TypeError):
        T.max_hops(16, wrap="yes")


def test_hops_and_ports():
    s = T.TpuSlice("v5e", (4, 4))
    assert s.hops((0, 0), (3, 3)) == 6
    assert s.max_hops() == 6
    assert s.ports((0, 0)) == 2 and s.ports((1, 1)) == 4 and s.ports((0, 1)) == 3
    p = T.TpuSlice("v5e", (16, 16))
    assert p.hops((0, 0), (15, 15)) == 2           # wraparound: one hop per axis
    assert p.max_hops() == 16
    with pytest.raises(ValueError, match="outside"):
        s.hops((0, 0), (4, 0))
    with pytest.raises(ValueError, match="entries"):
        s.hops((0, 0), (1,))


def test_p2p_p2_11():
    # P2.11: bf16[8,128,8192] from (0,0) to (3,3) on a v5e 4x4: 2 ports, 6 hops
    r = T.p2p_time(2 * 8 * 128 * 8192, "v5e-4x4", (0, 0), (3, 3))
    assert r.hops == 6 and r.ports == 2
    assert r.t_bandwidth == pytest.approx(186e-6, rel=0.01)
    assert r.t_first == pytest.approx(6e-6)
    assert r.total == pytest.approx(192e-6, rel=0.01)
    with pytest.raises(ValueError):
        T.p2p_time(-1, "v5e-4x4", (0, 0), (1, 1))


def test_slice_counts():
    s = T.TpuSlice("v5e", (16, 16))
    assert s.num_chips == 256 and s.num_hosts == 32
    assert s.link_bw_bidi == 9e10
    links = s.links()
    assert len(links) == 2 * 256                   # full 2D torus: 2 links per chip
    assert sum(w for _, w in links) == 32
    assert len(T.TpuSlice("v5e", (4, 4)).links()) == 24


def test_axis_errors():
    s = T.TpuSlice("v5e", (4, 4), ("data", "model"))
    assert s.axis_size("model") == 4
    with pytest.raises(ValueError, match="no axis"):
        s.axis_size("Z")
    with pytest.raises(ValueError, match="distinct"):
        T.TpuSlice("v5e", (4, 4), ("X", "X"))


def test_nvlink_node_p2_1_p2_2():
    n = T.get("h100-node")
    assert n.gpu_bw == 4.5e11
    assert n.switch_capacity == pytest.approx(6.4e12)     # 4 x 64 x 25 GB/s
    assert n.total_bw == pytest.approx(3.6e12)            # GPU-limited
    assert n.bisection_bw == pytest.approx(3.6e12)        # P2.2 (both directions)
    assert n.node_egress == pytest.approx(4e11)
    nvl = T.get("gb200-nvl72")
    assert nvl.node_egress == pytest.approx(3.6e12)       # P3.3: 72 x 400 Gb/s / 8
    assert nvl.node_egress / n.node_egress == pytest.approx(9)
    with pytest.raises(ValueError, match="GPU"):
        T.NvlinkNode("v5e")


def test_superpod_p3_1_p3_4():
    sp = T.dgx_h100_superpod()
    assert sp.num_chips == 1024
    bws = sp.level_allgather_bandwidth()
    assert bws[0] == pytest.approx(514.3e9, rel=1e-3)
    assert bws[1] == pytest.approx(412.9e9, rel=1e-3)
    assert bws[2] == pytest.approx(17.07e12, rel=1e-3)
    assert min(bws) == bws[1]
    assert sp.levels[1].cable_bw == pytest.approx(12.8e12)   # SU uplinks
    assert sp.levels[2].cable_bw == pytest.approx(51.2e12)   # spine
    assert sp.levels[1].switch_bw == pytest.approx(8 * 3.2e12)
    assert sp.levels[2].switch_bw == pytest.approx(51.2e12)
    assert sp.bisection_bandwidth(both_directions=False) == pytest.approx(25.6e12)
    assert sp.bisection_bandwidth() == pytest.approx(51.2e12)
    assert sp.per_node_bandwidth()[1:] == [pytest.approx(4e11), pytest.approx(4e11)]
    assert sp.is_nonblocking()


def test_oversubscribed_tree_is_blocking():
    lv = [T.TreeLevel("node", 8, 4.5e11), T.TreeLevel("leaf", 32, 4e11),
          T.TreeLevel("spine", 4, 6.4e12)]
    assert not T.FatTree(lv).is_nonblocking()


def test_get_presets_and_errors():
    for name in T.names():
        t = T.get(name)
        assert t.num_chips >= 2
    assert T.get("v5p-4x8x8").shape == (4, 8, 8)
    with pytest.raises(KeyError, match="did you mean"):
        T.get("v5e-4x4x")
    with pytest.raises(TypeError):
        T.get(3)
    ms = T.get("v5e-2pods")
    assert ms.num_chips == 512 and ms.dcn_bw_1way == 3.125e9
    with pytest.raises(ValueError, match="clashes"):
        T.MultiSlice(T.TpuSlice("v5e", (16, 16), ("X", "DCN")), 2)


def test_draw_runs():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import scaling_lib.plots  # noqa: F401  (the drawings live in presentation; importing fills the hook)
    ax = T.TpuSlice("v5e", (8, 16)).draw(path=[(0, 0), (1, 0), (1, 1)])
    chips = [c for c in ax.collections if len(c.get_offsets()) > 1]
    assert len(chips) == 1 and len(chips[0].get_offsets()) == 8 * 16   # one dot per chip
    assert "8×16" in ax.get_title() and "环绕" in ax.get_title()          # Y=16 wraps around
    T.dgx_h100_superpod().draw()
    with pytest.raises(ValueError, match="2D"):
        T.TpuSlice("v5p", (4, 4, 4)).draw()
    plt.close("all")
