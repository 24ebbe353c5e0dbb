"""Issue 16: one composition from chip to cluster (System → collectives → sharding table → step),
the published layouts, the catalogue's network numbers, and the planner built on them."""
import math

import numpy as np
import pytest

from scaling_lib import (collectives as C, hardware, layouts, memory, models, pipeline, step,
                         strategy as S, topology as T, training as tr)

L70 = models.get("llama3-70b")
V = 1e9


# ---- the catalogue: network numbers for every chip, with sources; no silent fallbacks --------

@pytest.mark.parametrize("name", hardware.names())
def test_every_chip_has_scale_out_bandwidth_and_sources(name):
    c = hardware.get(name)
    assert c.dcn_bw_1way > 0, f"{name} lacks a DCN/NIC figure"
    assert c.network_source, f"{name} does not say where its network numbers come from"
    assert hardware.require(c, "dcn_bw_1way") == c.dcn_bw_1way


def test_missing_catalogue_number_names_chip_and_field():
    bare = hardware.replace("H100", dcn_bw_1way=0.0, name="H100 (no NIC)")
    sys2 = T.System(bare, 16)
    with pytest.raises(ValueError, match=r"no dcn_bw_1way for H100 \(no NIC\)"):
        sys2.w_scale_out
    with pytest.raises(ValueError, match=r"no dcn_bw_1way for H100 \(no NIC\)"):
        tr.evaluate(tr.Strategy(dp=2, tp=8), L70, sys2, 2**20, 4096)
    with pytest.raises(ValueError, match="no pod_shape .* for V100"):
        T.System("V100", 16)
    with pytest.raises(ValueError, match="has no 'fp8' peak"):
        tr.evaluate(tr.Strategy(dp=8, precision="fp8"), L70, T.system("DGX A100"), 2**20, 4096,
                    check_memory=False)


def test_node_types_are_views_of_the_catalogue():
    from scaling_lib import gpu_parallel as gp
    for name, nt in gp.NODE_TYPES.items():
        c = hardware.get(nt.chip)
        assert nt.w_gpu == c.nvlink_bw_1way and nt.w_node == c.dcn_bw_1way * nt.gpus_per_node, name
        assert nt.system.w_node == nt.w_node
    assert gp.NODE_TYPES["DGX A100"].w_node == 8 * 2.5e10       # 8x HDR 200 Gb/s (datasheet)


# ---- collectives on a System agree with collective_time on the same topology ------------------

def test_group_time_equals_collective_time_on_a_torus():
    t = T.System("v5p", 4096)
    got = C.group_time("all_gather", V, t, 4096, 1, convention="ring")
    want = C.collective_time("all_gather", V, t.domain(), axes=("X", "Y", "Z")).total
    assert got == pytest.approx(want, rel=1e-12)
    a2a = C.group_time("all_to_all", V, t, 64, 1, convention="ring")
    assert a2a == pytest.approx(C.collective_time("all_to_all", V, T.Torus((16, 4), True, 9e10),
                                                  axes=("X", "Y")).total, rel=1e-12)
    # book convention: V / (M·W_ici) with M = owned axes
    assert C.group_time("all_gather", V, t, 512, 8) == pytest.approx(V / (2 * 1.8e11))


def test_group_time_equals_collective_time_across_gpu_nodes():
    s = T.system("DGX H100", 512)
    for inner in (1, 2, 8):
        got = C.group_time("all_gather", V / inner, s, 512 // inner, inner, convention="ring")
        want = C.collective_time("all_gather", V, s.fat_tree(), n_gpus=512, inner=inner).total
        assert got == pytest.approx(want, rel=1e-12), inner
    g = T.system("DGX H100", 64)
    assert C.group_time("all_to_all", V, g, 64, 1, convention="ring") == pytest.approx(
        C.collective_time("all_to_all", V, g.fat_tree(), n_gpus=64).total, rel=1e-12)


def test_multislice_dcn_as_collectives():
    ms = T.System("v5p", 8192, pod_chips=4096)
    got = C.group_time("all_reduce", V, ms, 2, 4096, convention="ring")
    want = C.collective_time("all_reduce", V, T.MultiSlice(T.TpuSlice("v5p", (16, 16, 16)), 2),
                             axes=("DCN",)).total
    assert got == pytest.approx(want, rel=1e-12)


def test_fsdp_gather_across_gpu_nodes_shares_the_nics():
    """The 8 GPUs of a node split the cross-node transfer (review: the old planner charged
    each GPU the whole V on its own NIC, 9x the collectives module's time)."""
    s = T.system("DGX H100", 64)
    book = C.group_time("all_gather", V, s, 64, 1)
    assert book == pytest.approx(V / (8 * 5e10))
    old = V / 5e10
    ring = C.collective_time("all_gather", V, s.fat_tree(), n_gpus=64).total
    assert C.group_time("all_gather", V, s, 64, 1, convention="ring") == pytest.approx(ring)
    assert old / ring == pytest.approx(64 / 7, rel=1e-9)               # the 9x of issue 16
    r = tr.evaluate(tr.Strategy(fsdp=1024), L70, tr.Cluster("H100", 1024), 4 * 2**20, 4096)
    assert r.comms["fsdp"] == pytest.approx(1.0268, rel=1e-3)    # was 8.214 s


def test_expert_alltoall_on_a_switch_is_not_the_torus_ring():
    """EP over 64 GPUs (8 nodes): the switch formula V(n−1)/n² per NIC, not the ring's V/4."""
    s = T.system("H800", 2048)
    x = 1e8                                   # bytes each GPU dispatches
    got = C.group_time("all_to_all", 64 * x, s, 64, 1)
    assert got == pytest.approx(x * 7 / 8 / 5e10)
    ring_on_nic = 64 * x / 4 / 5e10           # the old planner's formula on GPUs
    assert ring_on_nic / got == pytest.approx(18.29, rel=1e-3)
    # node-limited routing: top-8 sent to at most 4 nodes halves the cross-node bytes
    lim = C.group_time("all_to_all", 64 * x, s, 64, 1, top_k=8, node_limit=4)
    assert lim == pytest.approx(got / 2)


# ---- the sharding table drives the layer's collectives -----------------------------------------

def test_layer_comms_are_the_books_algorithm():
    items = S.layer_comms(3, True)
    fwd = [(i.kind, i.axes, i.operand) for i in items if i.pass_ == "fwd"]
    # per layer: 4 weight AllGathers over the ZeRO axes, and around each block AG in + RS out
    assert fwd.count(("all_gather", ("fsdp", "expert"), "weight")) == 4
    assert fwd.count(("all_gather", ("tensor",), "act")) == 2
    assert fwd.count(("reduce_scatter", ("tensor",), "act")) == 2
    bwd = [(i.kind, i.axes, i.operand) for i in items if i.pass_ == "bwd"]
    assert bwd.count(("reduce_scatter", ("fsdp", "expert"), "grad")) == 4
    assert bwd.count(("all_reduce", ("data", "context"), "grad")) == 4
    # without sequence parallelism TP is one AllReduce per block (Megatron)
    nosp = S.layer_comms(3, False)
    assert sum(i.kind == "all_reduce" and i.axes == ("tensor",) for i in nosp) == 4
    assert not any(i.kind == "all_gather" and i.axes == ("tensor",) for i in nosp)
    # ZeRO-1/2: gradients ReduceScattered, updated parameters gathered once per step
    z1 = S.layer_comms(1, True)
    assert sum(i.operand == "update" for i in z1) == 4
    assert not any(i.operand == "weight" for i in z1)


@pytest.mark.parametrize("s,t,t_before_l8,bn,mem", [
    (tr.Strategy(fsdp=8192), 0.7605671253333333, 0.7605671253333333, "fsdp", 6210254848.0),
    (tr.Strategy(fsdp=2048, tp=4), 0.48312767743665364, 0.49016846092381705, "compute",
     3643340800.0),
    (tr.Strategy(fsdp=1024, tp=8), 0.48892521073554684, 0.4936190663936558, "tp", 3215521792.0),
    (tr.Strategy(dp=2, tp=8, pp=8, fsdp=64, microbatches=16), 0.7722340707879042,
     0.778981488296436, "tp", 2019786752.0),
    (tr.Strategy(dp=16, fsdp=64, pp=8, microbatches=16, zero=1, remat="full"),
     0.9259947150869194, 0.9394895501039826, "compute", 44298665984.0),
])
def test_composed_model_keeps_chapter_5_numbers(s, t, t_before_l8, bn, mem):
    """The composed step reproduces the former hand-written planner on chapter 5's strategies
    (values from the commit before the redesign, ``t_before_l8``), except that model FLOPs now
    count only the weights that multiply (review ch04-06 L8: the input-embedding lookup is a
    gather): a compute-bound step is shorter by exactly that share, the others by less."""
    r = tr.evaluate(s, L70, tr.Cluster("v5p", 8192), 4 * 2**20, 4096)
    assert r.step_time == pytest.approx(t, rel=1e-12)
    assert r.bottleneck == bn
    assert r.memory["total"] == pytest.approx(mem, rel=1e-12)
    share = r.model_flops / r.model_flops_as("all_params")
    if bn == "compute":
        assert r.step_time == pytest.approx(t_before_l8 * share, rel=1e-12)
    else:
        assert t_before_l8 * share <= r.step_time <= t_before_l8


def test_model_flops_count_matmul_weights_only():
    # chapter 4's count: 6 per weight that multiplies (transformer.matmul_params) + attention;
    # 'all_params' adds the embedding lookup, norms and biases (LLaMA 3's paper convention)
    B, T = 4 * 2**20, 4096
    r = tr.evaluate(tr.Strategy(fsdp=2048, tp=4), L70, tr.Cluster("v5p", 8192), B, T)
    attn = 6.0 * L70.n_layers * T * L70.n_heads * L70.d_head * B
    assert r.model_flops == pytest.approx(6.0 * L70.matmul_params() * B + attn, rel=1e-12)
    assert r.model_flops_as("all_params") == pytest.approx(
        6.0 * L70.active_params() * B + attn, rel=1e-12)
    # LLaMA 3 70B: the 128,256 × 8,192 input embedding is ~1.5 % of its parameters
    assert 0.013 < r.model_flops_as("all_params") / r.model_flops - 1 < 0.016
    with pytest.raises(ValueError, match="convention must be one of"):
        r.model_flops_as("hardware")


def test_strategy_table_round_trip_and_errors():
    s = S.Strategy(fsdp=64, tp=8, pp=4, microbatches=8)
    assert dict(s.mesh)["tensor"] == 8 and s.n_chips == 2048
    assert s.rules["d_ff"] == ("tensor",) and s.rules["d_model"] == ("fsdp", "expert")
    back = S.Strategy.from_rules(dict(s.mesh), dict(s.rules), microbatches=8)
    assert back == s
    bad = dict(s.rules)
    bad["d_ff"] = ("data",)
    with pytest.raises(ValueError, match=r"rule d_ff → \('data',\)"):
        S.Strategy.from_rules(dict(s.mesh), bad)
    with pytest.raises(ValueError, match="virtual_stages=2 needs schedule='interleaved'"):
        S.Strategy(pp=4, virtual_stages=2)
    assert str(S.Strategy(fsdp=2, ep=64, pp=16, zero=1, schedule="dualpipe", precision="fp8")) \
        == "ZeRO1-2·PP16·EP64·dualpipe·fp8"


def test_one_table_three_consumers_for_the_proof():
    """The JAX proof's PartitionSpecs and its expected HLO come from the same table."""
    params = {"embed": 0, "unembed": 0, "final_norm": 0,
              "layers": {k: 0 for k in ("attn_norm", "mlp_norm", "wq", "wk", "wv", "wo",
                                        "w_gate", "w_up", "w_down")}}
    names = tr.PROOF_AXIS_NAMES
    sp = S.partition_specs(tr.PROOF_STRATEGIES["fsdp_tp"], params, names)
    assert sp["layers"]["wq"] == (None, "X", "Y", None)
    assert sp["layers"]["wo"] == (None, "Y", None, "X")
    assert sp["layers"]["w_down"] == (None, "Y", "X")
    assert sp["embed"] == (None, "X") and sp["unembed"] == ("X", None)
    dp = S.partition_specs(tr.PROOF_STRATEGIES["dp"], params, names)
    assert all(v is None for v in dp["layers"]["wq"])
    assert tr.expected_collectives("dp") == {"all-gather": (0, 0), "all-reduce": (1, None),
                                             "all-to-all": (0, 0)}
    assert tr.expected_collectives("tp") == {"all-gather": (0, 0), "all-reduce": (1, None),
                                             "all-to-all": (0, 0)}
    assert tr.expected_collectives("fsdp", 7) == {"all-gather": (7, None), "all-reduce": (1, None),
                                                  "all-to-all": (0, 0)}


# ---- layouts real runs use ----------------------------------------------------------------------

def test_pipeline_schedules():
    p, m = 16, 32
    assert pipeline.bubble_fraction(p, m, "1f1b") == pytest.approx((p - 1) / (m + p - 1))
    assert pipeline.bubble_fraction(p, m, "gpipe") == pipeline.bubble_fraction(p, m, "1f1b")
    assert pipeline.bubble_fraction(p, m, "interleaved", 4) == pytest.approx((p - 1) / (4 * m + p - 1))
    assert pipeline.bubble_fraction(p, m, "zb") == pytest.approx((p - 1) / (3 * m + p - 1))
    assert pipeline.bubble_fraction(p, m, "dualpipe") == pytest.approx((p - 2) / (3 * m + p - 2))
    assert pipeline.activations_in_flight(p, m, "gpipe") == m
    assert pipeline.activations_in_flight(p, m, "1f1b") == p
    assert pipeline.activations_in_flight(p, m, "dualpipe") == p + 1
    assert pipeline.param_copies("dualpipe") == 2 and pipeline.param_copies("zb") == 1
    assert pipeline.even_stage_layers(61, 16) == (4,) * 13 + (3,) * 3
    with pytest.raises(ValueError, match="sum to 125"):
        pipeline.check_stage_layers((8,) * 15 + (5,), 126, 16)


def test_uneven_stages_and_schedules_in_evaluate():
    cl = tr.Cluster("v5p", 8192)
    with pytest.raises(ValueError, match="give stage_layers"):
        tr.evaluate(tr.Strategy(fsdp=256, tp=4, pp=8), models.get("LLaMA-3.1-405B"), cl,
                    16 * 2**20, 8192, check_memory=False)
    base = dict(fsdp=512, tp=8, pp=2, microbatches=8)
    r1 = tr.evaluate(tr.Strategy(**base), L70, cl, 4 * 2**20, 4096)
    r2 = tr.evaluate(tr.Strategy(**base, stage_layers=(41, 39)), L70, cl, 4 * 2**20, 4096)
    assert r2.t_math == pytest.approx(r1.t_math * 41 / 40)
    r3 = tr.evaluate(tr.Strategy(**base, schedule="interleaved", virtual_stages=2), L70, cl,
                     4 * 2**20, 4096)
    assert r3.bubble == pytest.approx(1 / (2 * 8 + 1)) and r1.bubble == pytest.approx(1 / 9)


def test_precision_context_and_zero_over_expert_ranks():
    h = T.system("DGX H100", 1024)
    s = tr.Strategy(fsdp=128, tp=8)
    bf = tr.evaluate(s, L70, h, 4 * 2**20, 4096)
    f8 = tr.evaluate(s.replace(precision="fp8"), L70, h, 4 * 2**20, 4096)
    assert f8.t_math == pytest.approx(bf.t_math * 9.89e14 / 1.979e15)
    # context parallelism: the sequence must divide; all-gather KV vs ring both cost something
    with pytest.raises(ValueError, match="cp=3 must divide seq_len=4096"):
        tr.evaluate(tr.Strategy(fsdp=4, tp=8, cp=3), L70, T.system("DGX H100", 96),
                    2**20, 4096)
    c_ag = tr.evaluate(tr.Strategy(fsdp=16, tp=8, cp=8, cp_kind="allgather"), L70, h,
                       4 * 2**20, 32768)
    c_ring = tr.evaluate(tr.Strategy(fsdp=16, tp=8, cp=8), L70, h, 4 * 2**20, 32768)
    assert c_ag.comms["cp"] > 0 and c_ring.comms["cp"] > 0
    # ZeRO-1 over the whole data group: dense optimizer state / (fsdp · ep), experts / fsdp
    mx = models.get("Mixtral-8x7B")
    m1 = tr.evaluate(tr.Strategy(fsdp=8, ep=8, tp=2, zero=1), mx, T.system("DGX H100", 128),
                     2**20, 4096, check_memory=False)
    sh = step.model_shapes(mx)
    dense = (sh.L * (sh.D * (sh.Q + sh.O) + sh.router_layer) + sh.vocab_params) / 2
    experts = sh.L * sh.expert_params_layer / (2 * 8)
    assert m1.memory["optimizer"] == pytest.approx(8 * (dense / 64 + experts / 8), rel=1e-9)


def test_memory_model_options():
    assert memory.remat_policy("dots") == "selective" and memory.remat_policy("block") == "full"
    w = memory.saved_width("none", 8192, 64, 8, 128, 28672)
    assert w == pytest.approx(3 * 8192 + (2 * 64 + 2 * 8) * 128 + 4 * 28672)
    assert memory.saved_width("dots", 8192, activation_model="ch4") == 7 * 8192
    st = memory.state_bytes(7.5e9, 2, 2, 12, stage=1, n=64)
    assert st["total"] == pytest.approx(7.5e9 * (2 + 2 + 12 / 64))
    assert L70.training_memory(1e6, remat="block").activations == pytest.approx(
        1e6 * 8192 * 80 * 2)


@pytest.mark.parametrize("key", layouts.names())
def test_published_layouts_evaluate_and_are_in_the_planners_space(key):
    lay = layouts.get(key)
    c = layouts.compare(key)
    assert 0 < c["memory_per_device"] <= lay.system.chip.hbm_bytes
    assert c["bottleneck"] in step.BOTTLENECKS
    assert 0 <= c["bubble"] < 0.5
    assert 0.2 < c["efficiency"] <= 1.0, "a bound must not be slower than the published run"
    assert 0 < c["published_mfu"] < c["mfu_bound"] <= 1.0 + 1e-9
    assert lay.source and lay.assumptions
    found = layouts.plan_contains(key)
    assert found["rank"] is not None, f"{key} is not in the planner's space"
    assert found["result"].step_time == pytest.approx(c["step_time"], rel=1e-12)


def test_published_step_times_from_the_papers():
    ms = lambda k: layouts.compare(k)["published_step_time"]  # noqa: E731
    assert ms("palm-540b") == pytest.approx(2048 * 2048 / 238.3e3)               # 17.6 s
    assert ms("deepseek-v3") == pytest.approx(15360 * 4096 / 1e12 * 180e3 * 3600 / 2048)
    assert ms("megatron-1t") == pytest.approx(102.6, rel=2e-3)
    assert layouts.compare("megatron-1t")["published_mfu"] == pytest.approx(0.39, abs=0.01)
    assert layouts.compare("palm-540b")["published_mfu"] == pytest.approx(0.462, abs=0.01)
    assert layouts.compare("deepseek-v3")["bottleneck"] == "ep"


def test_planner_speed_reported():
    res = tr.plan(L70, tr.Cluster("v5p", 8192), 4 * 2**20, 4096)
    assert res.n_candidates >= 20_000
    assert res.candidates_per_second > 2e4      # ≥ 1e5/s on a quiet 2-core machine (report)
