"""scaling_lib.gpu_parallel: spec 12 F25-F33 (GPU LLM rooflines) against the worked answers."""
import numpy as np
import pytest

from scaling_lib import gpu_parallel as gp


def test_dp_thresholds_p5_1_p6_1_p7_1():
    assert gp.dp_critical_batch_per_gpu(cross_node=False) == pytest.approx(2198, rel=1e-3)
    assert gp.dp_critical_batch_per_gpu() == pytest.approx(2473, rel=1e-3)
    assert gp.dp_critical_batch_per_gpu("DGX B200") == pytest.approx(5625)
    assert gp.dp_critical_batch_per_gpu("DGX B200", cross_node=False) == pytest.approx(2500)
    assert gp.dp_critical_batch_per_gpu("GB200 NVL72") == pytest.approx(625)
    assert gp.dp_critical_batch_per_gpu("GB200 NVL72", include_node_level=True) == pytest.approx(2500)
    assert gp.dp_critical_batch_per_gpu("H800", include_node_level=True) == pytest.approx(4945, rel=1e-3)


def test_dp_moe_and_two_nodes_p5_3_p5_4():
    assert gp.dp_critical_batch_per_gpu(n_experts=128, top_k=4) == pytest.approx(79120, rel=1e-3)
    assert gp.dp_critical_batch_per_gpu(n_nodes=2) == pytest.approx(1237, rel=1e-3)
    with pytest.raises(ValueError, match="top_k"):
        gp.dp_critical_batch_per_gpu(n_experts=2, top_k=4)


def test_dp_times_cross_at_threshold():
    b = gp.dp_critical_batch_per_gpu()
    tm, tc = gp.dp_times(b, 8192, 28672)
    assert tm == pytest.approx(tc)


def test_tp_p5_5_p5_6():
    assert gp.tp_max_degree(28672) == pytest.approx(13.0, rel=0.005)
    assert gp.tp_max_degree(28672, across_nodes=True) == pytest.approx(19.6, rel=0.005)
    tm, tc = gp.tp_times(1e6, 8192, 28672, 8)
    assert tm > tc                                        # 8-way TP in a node is compute-bound
    tm, tc = gp.tp_times(1e6, 8192, 28672, 32)
    assert tm < tc


def test_ep_regimes_p5_7():
    a = gp.node_type("DGX H100").alpha_node
    assert gp.ep_min_d_ff(8, 16) == pytest.approx(a * 8 / 8)       # k > Z/8: α(Z−8)/k
    assert gp.ep_min_d_ff(8, 256) == pytest.approx(8 * a * 248 / 256)  # Z ≫ k: → 8α
    tm, tc = gp.ep_times(1e6, 7168, 2048, 8, 64)
    assert tc > tm                                       # narrow experts over 8 nodes: comms-bound
    with pytest.raises(ValueError, match="exceed"):
        gp.ep_times(1e6, 7168, 2048, 8, 8)


def test_pp_and_training_p6_2():
    assert gp.pp_comm_time(1e6, 8192, 16, 8, 4e11) == pytest.approx(2 * 1e6 * 8192 / (4e11 * 16) * 22)
    days = gp.train_time_seconds(70e9, 15e12, 4096, 9.89e14, 0.45) / 86400
    assert days == pytest.approx(40, rel=0.01)
    assert gp.min_gpus_for_state(70e9, 80e9) == 9
    assert gp.min_gpus_for_state(70e9, 80e9, 14) == 13
    assert gp.mp_spanned_threshold(128) == pytest.approx(154.5, rel=1e-3)
    with pytest.raises(ValueError, match="mfu"):
        gp.train_time_seconds(70e9, 15e12, 4096, 9.89e14, 1.5)


def test_unknown_node():
    with pytest.raises(KeyError, match="known"):
        gp.node_type("DGX H200")
