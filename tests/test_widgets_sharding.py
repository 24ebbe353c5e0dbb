"""Chapter 3's explorer prices the mesh axes by the chip's wraparound rule (review ch00-03 L8)."""
import pytest


def test_mesh_wrap_follows_the_chip_rule():
    from scaling_lib.widgets.sharding import mesh_wrap
    assert mesh_wrap("v5e", 4, 4) == {"X": False, "Y": False}       # a v5e 4x4 has no wraparound
    assert mesh_wrap("v5e", 16, 4) == {"X": True, "Y": False}       # only a whole pod axis wraps
    assert mesh_wrap("v5p", 4, 8) == {"X": True, "Y": True}         # whole-cube axes of a 3-D chip
    assert mesh_wrap("v5p", 2, 4) == {"X": False, "Y": True}
    assert mesh_wrap("v5e", 4, 4, "ring") == {"X": True, "Y": True}
    assert mesh_wrap("v5e", 16, 16, False) == {"X": False, "Y": False}
    with pytest.raises(ValueError, match="wrap must be 'auto', 'ring' or 'line'"):
        mesh_wrap("v5e", 4, 4, "torus")


def test_cost_figure_defaults_to_no_wraparound_on_v5e_4x4():
    from scaling_lib.widgets import sharding as w
    auto = w.strategy_costs(4096, 8192, 32768)
    ring = w.strategy_costs(4096, 8192, 32768, wrap="ring")
    line = w.strategy_costs(4096, 8192, 32768, wrap="line")
    for k in auto:
        assert auto[k] == line[k]
        # 4-chip lines are 1.5x slower than rings in the bandwidth-bound regime
        assert auto[k][1] > ring[k][1]
    fsdp = "FSDP：收集权重"
    assert auto[fsdp][1] == pytest.approx(1.5 * ring[fsdp][1], rel=0.02)
    assert "无环绕链路" in w.cost_figure(Is=(256,)).layout.title.text


def test_plan_for_wrap_choices():
    from scaling_lib.widgets import sharding as w
    auto = w.plan_for(a_i="X", b_j="X", b_k="Y", X=4, Y=4, chip="TPU v5e")
    ring = w.plan_for(a_i="X", b_j="X", b_k="Y", X=4, Y=4, chip="TPU v5e", wrap="ring")
    assert auto.t_comms == pytest.approx(1.5 * ring.t_comms, rel=0.02)
