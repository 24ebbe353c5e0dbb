"""Tests for scaling_lib.training: spec 05/06 numbers (P5.x, P6.x refs), CANON §1.4/§4, bad input,
and the sharded-step proof on 8 simulated devices (equivalence + collectives in compiled HLO)."""
import math

import numpy as np
import pytest

from scaling_lib import devices, hardware, models, training as tr

devices.setup(8)     # before anything imports jax: the proof below needs 8 simulated devices

V5P = "v5p"
L70 = models.get("llama3-70b")
L13 = models.get("llama2-13b")
L405 = models.get("llama3-405b")
L8 = models.get("llama3-8b")


# ---- critical numbers (spec 05 "Critical numbers" table, CANON §1.4) -------------------------

@pytest.mark.parametrize("chip,n_axes,expected,ref", [
    ("v5p", 1, 2550, "05 P5.6 alpha"), ("v5p", 3, 850, "05 P5.6 three axes"),
    ("v4p", 1, 3056, "CANON alpha v4p"), ("v4p", 3, 1019, "CANON v4p 3 axes"),
    ("v5e", 1, 2189, "CANON alpha v5e"), ("v5e", 2, 1094, "CANON v5e 2 axes"),
    ("v6e", 1, 5111, "CANON alpha v6e"), ("v6e", 2, 2556, "CANON v6e 2 axes"),
])
def test_dp_min_tokens_per_chip(chip, n_axes, expected, ref, close):
    close(tr.dp_min_tokens_per_chip(chip, n_axes), expected, 1e-3, ref)


def test_full_pod_dp_batch(close):           # spec 05 Facts: 850 × 8960 ≈ 7.62M
    close(tr.dp_min_tokens_per_chip(V5P, 3) * 8960, 7.62e6, 2e-3, "05 pod DP batch")


@pytest.mark.parametrize("chip,expected", [("v5p", 11.2), ("v5e", 13.1), ("v4p", 9.4), ("v6e", 5.6)])
def test_tp_max_degree(chip, expected, close):      # CANON §1.4, F = 28,672
    close(tr.tp_max_degree(28672, chip), expected, 5e-3, f"TP max {chip}")


def test_tp_bound_dtype_independent(close):          # spec P5.10: int8 doubles C, halves bytes
    close(tr.tp_max_degree(28672, V5P, dtype="int8"), tr.tp_max_degree(28672, V5P), 1e-12, "P5.10")


@pytest.mark.parametrize("F,chip,mxmy,expected", [
    (32768, "v5p", 2, 397), (28672, "v5p", 2, 453.6), (30000, "v5p", 2, 433.5),
    (13824, "v5p", 2, 941), (53248, "v5p", 2, 244), (32768, "v4p", 2, 570),
    (32768, "v5e", 1, 585), (32768, "v6e", 1, 3189),
])
def test_mixed_bound(F, chip, mxmy, expected, close):   # CANON §1.4 mixed row; P5.12; P6.9
    close(tr.mixed_min_tokens_per_chip(F, chip, mxmy), expected, 3e-3, f"mixed {chip} F={F}")


@pytest.mark.parametrize("chip,expected", [("v5p", 73440), ("v5e", 63040), ("v6e", 73600)])
def test_dcn_bound(chip, expected, close):         # CANON §1.4 cross-pod DCN bound (05 P5.14d)
    close(tr.dcn_min_tokens_per_pod(chip), expected, 1e-4, f"DCN {chip}")


def test_mixed_ratio_is_sqrt_of_margin(close):     # eq: ratio = sqrt((B/N)/bound)
    B, N, F = 4 * 2**20, 8960, 28672
    close(tr.mixed_compute_comm_ratio(B, N, F, V5P),
          math.sqrt(B / N / tr.mixed_min_tokens_per_chip(F, V5P)), 1e-12, "ratio identity")


# ---- worked problems, chapter 5 -----------------------------------------------------------

def test_p51_llama2_13b_params(close):
    close(L13.params(), 13.0e9, 0.01, "P5.1")


def test_p52_memory_16m(close):
    m = tr.training_memory(13.0e9, 16e6, 5120, 40, 13824, saves=("F", "F", "D"))
    close(m["params"] + m["optimizer"], 130e9, 1e-9, "P5.2 params+opt")
    close(m["checkpoints"], 4.2e13, 0.01, "P5.2 activations")


def test_p53_fsdp_32k(close):
    P = L13.params()
    assert 10 * P > 96e9                                   # (a) pure DP does not fit
    m = tr.training_memory(P, 3e6, 5120, 40, 13824, saves=("F", "F", "D"))
    close(m["total"], 8.0e12, 0.01, "P5.3b total")
    close(m["total"] / 4096, 1.95e9, 0.01, "P5.3b per chip")
    assert 3e6 / 4096 < tr.dp_min_tokens_per_chip(V5P, 3)   # 732 < 850: comms-bound
    close(tr.dp_min_tokens_per_chip(V5P, 3) * 4096, 3.48e6, 3e-3, "P5.3b min batch")
    close(tr.fsdp_step_comm_time(13e9, V5P, 3), 0.145, 0.01, "P5.3b comms-bound step")
    close(tr.step_time(13.0e9, 3e6, 4096, V5P), 0.125, 0.01, "P5.3 roofline step")
    close(tr.optimal_fsdp(3e6, 4096, 13824), 1333, 2e-3, "P5.3c X_opt")
    t = tr.fsdp_tp_layer_times(3e6, 5120, 13824, 1024, 4, V5P, m_x=2, m_y=1)
    close(t["t_comms"] / t["t_math"], 4658 / 3971, 2e-3, "P5.3c summed model (~15% comms-bound)")


def test_p54_batches(close):
    close(1e6 / 4096, 244, 2e-3, "P5.4 1M tokens/chip")
    close(tr.step_time(13.0e9, 1e6, 1024, V5P), 0.166, 0.01, "P5.4 1024 chips step")
    m1 = tr.training_memory(13.0e9, 1e6, 5120, 40, 13824, saves=("F", "F", "D"))["total"]
    close(m1 / 1024, 2.7e9, 0.02, "P5.4 1024 chips memory")
    m10 = tr.training_memory(13.0e9, 10e6, 5120, 40, 13824, saves=("F", "F", "D"))["total"]
    close(m10, 26.3e12, 0.01, "P5.4 10M total")
    close(m10 / 4096, 6.4e9, 0.01, "P5.4 10M per chip")
    close(tr.step_time(13.0e9, 10e6, 4096, V5P), 0.415, 0.01, "P5.4 10M step")


def test_p55_largest_dp_model(close):
    close(tr.max_params_pure_dp(V5P), 9.6e9, 1e-9, "P5.5")


def test_p57_deepseek_v2(close):
    n = 40e6 / tr.dp_min_tokens_per_chip(V5P, 3)
    close(n, 47059, 1e-3, "P5.7 chips")
    close(n / 8960, 5.25, 5e-3, "P5.7 pods")


def test_p58_llama3_fsdp_16m(close):
    n = 16e6 / tr.dp_min_tokens_per_chip(V5P, 3)
    close(n, 18824, 1e-3, "P5.8 chips")
    t = tr.train_time(tr.total_train_flops(L70.params(), 15e12), V5P, n, mfu=0.5)
    close(t / 86400, 17.0, 0.01, "P5.8 days (CANON §4: 17.0 with 70.55e9)")


def test_p59_p511_p513_p515(close):
    close(20400 / tr.alpha(V5P), 8, 1e-9, "P5.9: 8-way needs F >= 20,400")
    close(tr.optimal_fsdp(48000, 64, 32768), 13.7, 5e-3, "P5.11")
    close(4096 * tr.mixed_min_tokens_per_chip(32768, V5P), 1.63e6, 5e-3, "P5.13")
    got = [tr.fsdp_tp_threshold(X, 4096 // X, tr.mesh_axes_spanned(X), tr.mesh_axes_spanned(4096 // X),
                                32768, V5P) for X in (4096, 2048, 1024, 512)]
    for g, e in zip(got, (3.48e6, 1.74e6, 870e3, 435e3)):
        close(g, e, 3e-3, "P5.15")
    assert tr.fsdp_tp_threshold(256, 16, 2, 1, 32768, V5P) == math.inf
    assert tr.fsdp_tp_threshold(1, 8, 1, 1, 32768, V5P) == 0.0


def test_p514_llama3_pods(close):
    close(2e6 / tr.dp_min_tokens_per_chip(V5P, 3), 2353, 1e-3, "P5.14a")
    close(4e6 / tr.mixed_min_tokens_per_chip(28672, V5P), 8.82e3, 2e-3, "P5.14b")
    close(tr.optimal_fsdp(3.5e6, 8192, 28672), 1414, 1e-3, "P5.14c X_opt")
    t = tr.fsdp_tp_layer_times(3.5e6, 8192, 28672, 1024, 8, V5P, m_x=2, m_y=1)
    close(t["t_comms"] / t["t_math"], 5210 / 4804, 1e-3, "P5.14c summed (CANON)")
    close(tr.fsdp_tp_threshold(1024, 8, 2, 1, 28672, V5P), 1.306e6, 1e-3, "P5.14c overlapped (1.31M)")
    close(tr.dcn_min_tokens_per_pod(V5P), 7.34e4, 1e-3, "P5.14d")
    t10 = tr.train_time(tr.total_train_flops(L70.params(), 15e12), V5P, 89600, mfu=1.0)
    close(t10 / 86400, 1.79, 0.01, "P5.14e (1.8 d at 100%)")


def test_p519_p520_ext(close):
    close(tr.ep_compute_comm_ratio(2048, 8, V5P), 0.40, 0.01, "P5.19 ratio")
    assert int(tr.ep_max_degree(2048, V5P)) == 3
    assert round(float(tr.ep_max_degree(2048, V5P, gated=True))) == 5
    close(tr.ep_max_degree(14336, V5P), 22.5, 0.01, "P5.19 F_e=14336")
    close(tr.bubble_fraction(8, 32), 7 / 39, 1e-12, "P5.20")
    close(tr.bubble_fraction(8, 8), 7 / 15, 1e-12, "P5.20 M=8")


def test_zero_figure(close):                 # spec 05 Facts, ZeRO appendix figure
    for stage, gb in zip(range(4), (120, 31.4, 16.6, 1.9)):
        close(tr.zero_memory(7.5e9, 64, stage) / 1e9, gb, 0.02, f"ZeRO stage {stage}")


def test_layer_costs_table():                # spec 05 per-layer summary table
    B, D, F = 1000.0, 64.0, 256.0
    dp = tr.layer_costs("dp", B, D, F, x=4)
    assert (dp.flops_fwd, dp.flops_bwd, dp.bytes_fwd, dp.bytes_bwd) == (4 * B * D * F / 4, 8 * B * D * F / 4, 0, 8 * D * F)
    fs = tr.layer_costs("fsdp", B, D, F, x=4)
    assert (fs.bytes_fwd, fs.bytes_bwd) == (4 * D * F, 8 * D * F)
    tp = tr.layer_costs("tp", B, D, F, y=4)
    assert (tp.bytes_fwd, tp.bytes_bwd) == (4 * B * D, 4 * B * D)
    mx = tr.layer_costs("fsdp_tp", B, D, F, x=4, y=2)
    assert mx.bytes_fwd == 4 * B * D / 4 + 4 * D * F / 2
    assert mx.bytes_bwd == 4 * B * D / 4 + 8 * D * F / 2
    # the DP ratio per byte on the backward pass equals B/X: compute-bound iff B/X > alpha
    assert dp.flops_bwd / dp.bytes_bwd == pytest.approx(B / 4)


def test_pipeline_schedules():
    for kind in ("gpipe", "1f1b"):
        g = tr.pipeline_schedule(kind, 4, 8)
        Z, M = 4, 8
        assert g.shape == (Z, 2 * (M + Z - 1))                 # same makespan for both
        for s in range(Z):                                      # every microbatch once each way
            assert sorted(g[s][g[s] > 0]) == list(range(1, M + 1))
            assert sorted(-g[s][g[s] < 0]) == list(range(1, M + 1))
        idle = (g == 0).mean()
        assert idle == pytest.approx(float(tr.bubble_fraction(Z, M)))
    # 1F1B keeps at most Z - s microbatches in flight on stage s; GPipe keeps all M
    g = tr.pipeline_schedule("1f1b", 4, 8)
    inflight = np.cumsum(np.sign(g[0]))
    assert inflight.max() == 4
    assert np.cumsum(np.sign(tr.pipeline_schedule("gpipe", 4, 8)[0])).max() == 8


# ---- chapter 6 numbers ----------------------------------------------------------------------

def test_ch6_llama3_70b(close):
    P = L70.params()
    close(P, 7.06e10, 0.002, "P6.1")
    close(6 * P, 4.23e11, 0.002, "P6.2 FLOPs/token")
    close(6 * P / 4.59e14 * 1e3, 0.92, 0.01, "P6.2 ms/token")
    F = tr.total_train_flops(P, 15e12)
    close(F, 6.35e24, 0.002, "P6.3")
    close(tr.train_time(F, V5P, 1, mfu=1.0) / (365 * 86400), 435, 0.01, "P6.3 years")
    close(tr.train_time(F, V5P, 8960, mfu=0.4) / 86400, 44.7, 0.01, "P6.4 days")
    m = tr.training_memory(P, 4e6, 8192, 80)
    close(m["total"], 21.7e12, 0.005, "P6.5 TB")
    assert tr.min_chips_for_memory(m["total"], V5P) == 226
    close(tr.train_time(F, V5P, 226, mfu=0.4) / 86400, 1772, 0.01, "P6.5 days on 226 chips")
    close(m["total"] / 8960, 2.42e9, 0.01, "P6.6")
    m12 = tr.training_memory(P, 4e6, 8192, 80, saves=("D",) * 12)
    close(m12["total"] / 8960, 7.1e9, 0.01, "P6.6 12 saves")
    assert tr.max_pure_dp(4 * 2**20, 4096) == 1024                   # P6.7
    close(4 * 2**20 / 8960, 468, 2e-3, "P6.8")
    close(tr.optimal_fsdp(4 * 2**20, 8960, 28672), 1619, 1e-3, "P6.9 X_opt")
    cost = tr.train_cost(tr.train_time(F, V5P, 8960, mfu=0.4), 8960, V5P)
    close(cost, 40.4e6, 0.01, "P6.14 70B dollars")


def test_ch6_pods_and_405b(close):
    e = tr.estimate_train_days(L70, 15e12, 4 * 2**20, V5P, 35840, n_pods=4)
    close(e["tokens_per_chip"], 117, 0.01, "P6.10 tokens/chip")
    close(e["ratio"], 0.508, 0.01, "P6.10 ratio")
    assert e["verdict"] == "ici"
    close(e["days_ici"], 8.8, 0.02, "P6.10 ICI-bound days")
    close(e["days_comms_bound"], 11.2, 0.02, "P6.10 naive 40% MFU days")
    P405 = L405.params()
    close(P405, 4.06e11, 0.005, "P6.11")
    close(tr.total_train_flops(P405, 15e12), 3.65e25, 0.01, "P6.11 FLOPs")
    close(tr.train_time(tr.total_train_flops(P405, 15e12), V5P, 71680, 0.4) / 86400, 32.1, 0.01, "P6.12")
    close(tr.mixed_min_tokens_per_chip(53248, V5P), 244, 3e-3, "P6.12 bound")
    close(tr.mixed_compute_comm_ratio(4 * 2**20, 71680, 53248, V5P), 0.49, 0.02, "P6.12 4M ratio")
    close(tr.mixed_compute_comm_ratio(16 * 2**20, 71680, 53248, V5P), 0.98, 0.02, "P6.12 16M ratio")
    P8 = L8.params()
    t8 = tr.train_time(tr.total_train_flops(P8, 15e12), V5P, 8960, 0.4)
    close(t8 / 86400, 5.1, 0.02, "P6.13")
    close(tr.train_cost(t8, 8960, V5P), 4.6e6, 0.03, "P6.14 8B")


# ---- bad input ----------------------------------------------------------------------------

def test_strategy_str_and_validation():
    assert str(tr.Strategy(dp=8, tp=4, pp=2, microbatches=4)) == "DP8·TP4·PP2·mb4"
    assert str(tr.Strategy()) == "1chip"
    with pytest.raises(ValueError, match="remat"):
        tr.Strategy(remat="sometimes")
    with pytest.raises(TypeError):
        tr.Strategy(dp=2.0)
    with pytest.raises(ValueError):
        tr.Strategy(tp=0)


def test_evaluate_bad_degrees():
    cl = tr.Cluster(V5P, 64)
    with pytest.raises(ValueError, match="multiply to 32"):
        tr.evaluate(tr.Strategy(dp=32), L70, cl, 2**20, 4096)
    with pytest.raises(ValueError, match="does not divide"):
        tr.evaluate(tr.Strategy(dp=64), L70, cl, 32 * 4096, 4096)   # 32 sequences, 64 replicas
    with pytest.raises(ValueError, match="pipeline stages"):
        tr.evaluate(tr.Strategy(pp=64), models.get("llama3-8b"), cl, 2**20, 4096)  # 64 > 32 layers
    with pytest.raises(ValueError, match="tp=64 must divide"):
        tr.evaluate(tr.Strategy(tp=64), L13, cl, 2**20, 4096)       # 40 heads
    with pytest.raises(tr.Infeasible) as e:
        tr.evaluate(tr.Strategy(dp=64), L70, cl, 2**22, 4096)       # 70B replicated: 700+ GB
    assert e.value.needed > e.value.available == 96e9
    with pytest.raises(TypeError):
        tr.evaluate("FSDP8", L70, cl, 2**20, 4096)
    with pytest.raises(KeyError):
        tr.alpha("v9z")
    with pytest.raises(ValueError):
        tr.layer_costs("zero", 1, 1, 1)
    with pytest.raises(ValueError):
        tr.Cluster(V5P, 9000, pod_chips=8960)


# ---- the proof on 8 devices (slow: ~30 s on a loaded 2-core machine) -------------------------

def test_sharded_step_matches_unsharded_and_hlo():
    import jax
    assert len(jax.devices("cpu")) >= 8
    res = {r["kind"]: r for r in tr.sharded_step_check()}
    assert set(res) == set(tr.STRATEGY_KINDS)
    for k, r in res.items():
        assert abs(r["loss"] - r["ref_loss"]) <= 1e-5 * abs(r["ref_loss"]), k
        assert r["max_grad_err"] <= 1e-5 * r["grad_scale"], k
        assert r["hlo_ok"], (k, r["collectives"], r["expected"])
    assert res["dp"]["collectives"] == {"all-reduce": 1}            # JAX-COMPAT train-step row
    assert res["fsdp"]["collectives"].get("all-gather", 0) >= 9     # one gather per weight matrix
    assert "all-gather" not in res["tp"]["collectives"]
    assert res["tp"]["collectives"]["all-reduce"] >= 2              # attention + MLP blocks


def test_count_collectives_tuple_allreduce():
    line = ("  %all-reduce.13 = (f32[], f32[64,32]{1,0}, /*index=5*/f32[32,64]{1,0}) "
            "all-reduce(%a, %b, %c), replica_groups={{0,1}}, to_apply=%add")
    assert tr.count_collectives(line) == {"all-reduce": 1}
    assert tr.count_collectives("%x = f32[8] all-gather-start(%y)\n%z = f32[8] all-gather-done(%x)") == {"all-gather": 1}


# ---- issue 13, review ch10-12 H1/H2: an axis count the chip does not have is an error ----------

@pytest.mark.parametrize("call", [
    lambda: tr.dp_min_tokens_per_chip("v5e", 3),
    lambda: tr.tp_max_degree(28672, "v6e", 3),
    lambda: tr.mixed_min_tokens_per_chip(32768, "v5e", 2),
    lambda: tr.mixed_compute_comm_ratio(4e6, 4096, 32768, "v5e", 2),
    lambda: tr.fsdp_tp_layer_times(1e6, 8192, 32768, 64, 4, "v5e", 3, 1),
    lambda: tr.fsdp_tp_threshold(64, 4, 1, 3, 32768, "v5e"),
    lambda: tr.fsdp_step_comm_time(13e9, "v5e", 3),
    lambda: tr.dp_min_tokens_per_chip("v5p", 4),
    lambda: tr.mixed_min_tokens_per_chip(32768, "v5p", 3),
    lambda: tr.dp_min_tokens_per_chip("H100", 2),
])
def test_impossible_axis_count_names_chip_and_axes(call):
    with pytest.raises(ValueError, match=r"impossible on (TPU v5e|TPU v6e|TPU v5p|H100).*at most"):
        call()


def test_cheat_sheet_v5e_values():
    """CANON §1.4: v5e DP/FSDP on its 2 axes 2189/2 ≈ 1094; FSDP+TP with M_X·M_Y = 1: 585."""
    assert tr.dp_min_tokens_per_chip("v5e", 2) == pytest.approx(1094.4, rel=1e-3)
    assert tr.mixed_min_tokens_per_chip(32768, "v5e") == pytest.approx(584.9, rel=1e-3)
    assert tr.mixed_min_tokens_per_chip(32768, "v5p") == pytest.approx(396.9, rel=1e-3)
    assert hardware.max_mx_my("v5e") == 1 and hardware.max_mx_my("v5p") == 2
    assert hardware.network_axes("v5e") == 2 and hardware.network_axes("H100") == 1
