"""scaling_lib.inference against the numbers of spec 07 / 08 (corrected per CANON §4).

Spec refs: 07 = ../shared/spec/07-inference.md, 08 = ../shared/spec/08-applied-inference.md.
"""
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scaling_lib import inference as inf
from scaling_lib import models

V5E = "v5e"
L70 = inf.served_model("llama3-70b", params=70e9)      # the book's rounded P (08)
L70X = inf.served_model("llama3-70b")                   # exact 70.55e9
L8 = inf.served_model("llama3-8b")
L405 = inf.served_model("llama3-405b", params=405e9)
L13 = inf.served_model("llama2-13b")
CH7 = inf.BOOK_CH7_MODEL
QUIZ = inf.POP_QUIZ_30B


def close(a, b, rtol):
    return abs(a - b) <= rtol * abs(b)


# ---- models ---------------------------------------------------------------------------------

def test_served_model_matches_transformer_config():
    cfg = models.get("llama3-70b")
    m = inf.served_model(cfg)
    assert m.params == cfg.params()
    assert m.kv_elems_per_token == 163_840                         # CANON §2
    d = inf.ServedModel.from_dims("x", 80, 8192, 28672, 64, 8, 128, 128256)
    assert abs(d.params - m.params) / m.params < 1e-4              # norms (2LD + D) only differ


@pytest.mark.parametrize("model,params,kv_tok,ref", [
    (CH7, 18.385e9, 262_144, "07 P7.14"),
    (L13, 13.016e9, 409_600, "07 P7.6"),
    (L8, 8.030e9, 65_536, "08 table"),
    (inf.served_model("llama3-405b"), 405.85e9, 258_048, "08 table"),
])
def test_params_and_kv(model, params, kv_tok, ref):
    assert close(model.params, params, 1e-3), ref
    assert model.kv_elems_per_token == kv_tok, ref


def test_moe_params_p7_18():
    moe = inf.ServedModel.from_dims("moe", 64, 4096, 16384, 32, 8, 256, 32128, tied=True,
                                    n_experts=16, top_k=2)
    assert close(moe.params, 211.66e9, 1e-3)
    assert close(moe.active_params, 31.27e9, 2e-3)


# ---- critical batch and intensities ---------------------------------------------------------

@pytest.mark.parametrize("w,c,ref", [("bf16", "bf16", 240), ("int8", "bf16", 120),
                                     ("int8", "int8", 240)])
def test_critical_batch_p7_1_p8_4(w, c, ref):
    assert close(inf.critical_batch(V5E, w, c), ref, 0.01)


def test_exact_critical_batch_p7_2():
    assert close(inf.exact_critical_batch(8192, 28672, V5E), 249.6, 0.005)


def test_attention_intensity_p7_3_p7_4():
    assert inf.attention_intensity(1000, 1000) == pytest.approx(500)           # prefill T/2
    assert inf.attention_intensity(8192, 1) == pytest.approx(8192 / 8193)      # decode ≈ 1
    assert inf.attention_intensity(8192, 1, 8) == pytest.approx(8 * 8192 / 8200)  # → G
    assert close(2 * inf.critical_batch(V5E), 480, 0.01)                       # prefill T > 480


def test_moe_critical_batch_p7_18():
    assert close(inf.moe_critical_batch(16, 2, V5E), 1920, 0.01)
    assert close(inf.moe_critical_batch(16, 2, V5E, "int8"), 960, 0.01)
    with pytest.raises(ValueError, match="top_k"):
        inf.moe_critical_batch(2, 4, V5E)


# ---- step times -----------------------------------------------------------------------------

def test_pop_quiz_p7_5():
    a = inf.decode_step_time(QUIZ, 4, 8192, 16, V5E, "int8", "int8")
    b = inf.decode_step_time(QUIZ, 256, 8192, 16, V5E, "int8", "int8", check_memory=False)
    assert close(a.total_s, 2.54e-3, 0.005)                 # CANON §4
    assert close(b.total_s, 20.9e-3, 0.005)
    assert close(b.kv_s, 15.98e-3, 0.005) and close(b.flops_s, 4.87e-3, 0.005)
    assert bool(b.compute_bound) and not bool(a.compute_bound)


@pytest.mark.parametrize("K,B,step_ms,tok_s", [(40, 32, 36.7, 873), (8, 64, 17.0, 3757),
                                               (40, 1, 4.98, 201), (8, 240, 53.0, 4529)])
def test_llama2_13b_table_p7_9(K, B, step_ms, tok_s):
    m = inf.ServedModel("13B", 13.0e9, 2 * 40 * K * 128)    # weights kept at 26 GB on purpose
    kv_seq = float(inf.kv_bytes_per_seq(m, 8192))
    t = inf.min_step_time(26e9, kv_seq, B, 8, V5E)
    assert close(t, step_ms * 1e-3, 0.02)
    assert close(B / t, tok_s, 0.02)


def test_llama2_13b_max_batch_p7_9():
    assert inf.max_batch_size(L13, 8192, 8, V5E) == 15                     # CANON: 15 (16e9/chip)
    m8 = inf.ServedModel("13B K=8", 13.0e9, 2 * 40 * 8 * 128)
    assert inf.max_batch_size(m8, 8192, 8, V5E) in (75, 76)                # CANON 76 (rounded)
    assert inf.max_batch_size(L13, 8192, 8, V5E, hbm_per_chip=16 * 2**30) == 16  # book's GiB


def test_kv_per_seq_p7_7_and_balance():
    assert close(float(inf.kv_bytes_per_seq(L13, 8192)), 6.7e9, 0.01)
    assert int(np.ceil(inf.kv_weight_balance_batch(L13, 8192))) == 4


def test_ch7_model_p7_15_p7_16_p7_17():
    assert inf.max_batch_size(CH7, 8192, 16, V5E, "int8", "int8") == 110
    k1 = inf.ServedModel("K=1", CH7.params, 2 * 64 * 1 * 256)
    assert inf.max_batch_size(k1, 8192, 16, V5E, "int8", "int8") == 885
    p = CH7.params
    assert close(inf.min_step_time(p, 0, 1, 16, V5E), 1.40e-3, 0.005)
    assert close(inf.min_step_time(2 * p, 0, 1, 16, V5E), 2.80e-3, 0.005)
    assert close(inf.min_step_time(p, 0, 1, 1, V5E), 22.4e-3, 0.005)
    st32 = inf.decode_step_time(CH7, 32, 8192, 16, V5E, "int8", "int8")
    assert close(st32.total_s, 6.64e-3, 0.005)
    assert close(float(inf.max_model_parallelism(16384, V5E)), 7.5, 0.01)
    assert close(float(inf.max_model_parallelism(16384, V5E, 2)), 15.0, 0.01)
    assert close(float(inf.max_model_parallelism_memory_bound(16384, 32, V5E)), 56, 0.01)


def test_p7_10_beta():
    assert inf.max_model_parallelism_memory_bound(16384, 32, beta=8) == 64
    assert close(float(inf.max_model_parallelism_memory_bound(16384, 32, V5E)), 56.2, 0.01)


def test_latency_bound_p7_11():
    assert inf.latency_bound_bytes(8, V5E) == pytest.approx(360e3)
    assert bool(inf.collective_is_latency_bound(16 * 8192, 8, V5E))
    assert not bool(inf.collective_is_latency_bound(1e6, 8, V5E))


def test_two_d_p7_20():
    assert inf.two_d_ws_crossover_chips(8192, 4 * 8192) == pytest.approx(72)
    o = inf.two_d_ws_optimum(8192, 4 * 8192, 128)
    assert o["X"] == pytest.approx(4) and o["YZ"] == pytest.approx(32)
    # at N = 72 the optimal 2-D time equals the 1-D time over 3 axes
    N = 72
    o = inf.two_d_ws_optimum(8192, 32768, N)
    t2 = inf.two_d_ws_comm_time(16, 8192, 32768, o["X"], o["YZ"], "v4p")
    t1 = inf.one_d_mp_comm_time(16, 8192, "v4p", 3)
    assert t2 == pytest.approx(t1, rel=1e-9)


def test_spec_decode_p7_21():
    assert close(float(inf.spec_decode_expected_tokens(0.8, 4)), 3.3616, 1e-4)
    assert close(float(inf.spec_decode_time_per_token(0.8, 4, 0.05, 1.0)), 0.357, 0.005)
    assert inf.spec_decode_expected_tokens(1.0, 4) == 5
    assert inf.spec_decode_expected_tokens(0.0, 4) == 1


def test_prefix_p7_13():
    assert inf.prefix_saving([[1, 2, 3], [1, 2, 4]]) == pytest.approx(2 / 6)
    # the second prompt alone: 2 of its 3 tokens are cached, so it needs 1/3 of the compute;
    # a repeated prompt is cached whole, a disjoint one not at all
    assert inf.prefix_saving([[1, 2, 3], [1, 2, 3]]) == pytest.approx(3 / 6)
    assert inf.prefix_saving([[1, 2, 3], [4, 5, 6]]) == 0
    assert inf.prefix_saving([[1, 2, 3], [1, 2, 4]], capacity_tokens=0) == 0


def test_moe_sharding_p7_19():
    moe = inf.ServedModel.from_dims("moe", 64, 4096, 16384, 32, 8, 256, 32128, tied=True,
                                    n_experts=16, top_k=2)
    per_chip = moe.params * 2 / 128
    assert close(inf.min_step_time(per_chip, 0, 1, 1, V5E), 4.03e-3, 0.005)
    assert close(inf.min_step_time(per_chip / 2, 0, 1, 1, V5E), 2.02e-3, 0.01)
    assert inf.smallest_slice(inf.min_chips(moe, "bf16")) == 32


# ---- chapter 8 ------------------------------------------------------------------------------

def test_p8_1():
    kv = inf.kv_bytes_per_token(L70, "int8")
    assert kv == 163_840
    seq = float(inf.kv_bytes_per_seq(L70, 32768, "int8"))
    assert close(seq, 5.37e9, 0.005)
    assert close(240 * seq, 1.29e12, 0.005)
    assert round(inf.min_chips(L70, "int8", "int8", 240, 32768)) == 85


def test_p8_2_p8_3():
    mem = inf.serving_memory(L70, 32, 8192, "int8", "int8")
    assert close(mem["kv_bytes"], 42.9e9, 0.005) and close(mem["total_bytes"], 112.9e9, 0.005)
    assert inf.smallest_slice(inf.min_chips(L70, "int8", "int8", 32, 8192)) == 8
    st = inf.decode_step_time(L70, 32, 8192, 8, V5E, "int8", "int8")
    assert close(st.total_s, 17.2e-3, 0.005)
    assert close(st.tokens_per_s, 1858, 0.005) and close(st.tokens_per_s_per_chip, 232, 0.005)
    assert close(st.flops_s, 2.84e-3, 0.01) and close(st.param_s, 10.7e-3, 0.005)
    st16 = inf.decode_step_time(L70, 32, 8192, 16, V5E, "int8", "int8")
    assert close(st16.total_s, 8.6e-3, 0.005)
    assert close(st16.tokens_per_s_per_chip, st.tokens_per_s_per_chip, 1e-9)
    assert close(inf.cost_per_million_tokens(st.tokens_per_s_per_chip, 1.2), 1.44, 0.01)
    assert close(float(inf.max_model_parallelism(28672, V5E, 2)), 26.2, 0.005)


@pytest.mark.parametrize("dtype,n,qps,n2,qps2", [("bf16", 16, 0.269, 32, 0.438),
                                                 ("int8", 8, 0.538, 16, 0.876),
                                                 ("int4", 4, 1.076, 8, 1.75)])
def test_min_slice_and_qps_p8_5_p8_7_p8_8(dtype, n, qps, n2, qps2):
    assert inf.smallest_slice(inf.min_chips(L70, dtype)) == n
    b = inf.max_batch_size(L70, 8192, n, V5E, dtype, dtype)
    assert b == 43
    st = inf.decode_step_time(L70, b, 8192, n, V5E, dtype, dtype)
    assert close(st.total_s, 19.5e-3, 0.005)                                 # P8.6: HBM full
    assert close(float(inf.qps_per_chip(b, st.total_s, 512, n)), qps, 0.01)
    b2 = inf.max_batch_size(L70, 8192, n2, V5E, dtype, dtype)
    assert b2 == 138                                   # book 140 (324 kB/token rounding)
    # the book's doubled-slice QPS uses the memory-only step (all HBM read once: ≈19.5 ms) ...
    mem = inf.serving_memory(L70, b2, 8192, dtype, dtype)
    t_mem = inf.min_step_time(mem["params_bytes"], mem["kv_bytes"] / b2, b2, n2, V5E)
    assert close(t_mem, 19.5e-3, 0.01)
    assert close(float(inf.qps_per_chip(b2, t_mem, 512, n2)), qps2, 0.015)
    # ... but B = 138 exceeds B_crit for int8/int4 weights with bf16 math (120 / 60), so the
    # general formula is slower there (our correction, shown in chapter 8)
    st2 = inf.decode_step_time(L70, b2, 8192, n2, V5E, dtype, dtype)
    assert bool(st2.compute_bound) == (dtype != "bf16")
    assert st2.total_s >= t_mem * (1 - 1e-9)


def test_p8_6_int4_2x2():
    assert close(inf.decode_step_time(L70, 1, 1, 4, V5E, "int4", "int4").param_s, 10.7e-3, 0.005)
    assert close(16e9 / 8.2e11 * 512, 10.0, 0.01)


def test_p8_9():
    t = inf.matmul_comm_times(64, 8192, 28672, 32, V5E)
    assert close(t["t_ici"], 11.7e-6, 0.01)
    assert close(t["t_hbm"], 17.9e-6, 0.01)
    assert close(t["t_math"], 4.8e-6, 0.01)
    assert close(float(inf.max_model_parallelism_memory_bound(28672, 64, V5E)), 49, 0.01)


def test_p8_10_to_p8_12():
    tp = inf.prefill_time(L70, 8192, 16, V5E, mfu=0.4)
    assert close(tp, 0.91, 0.005)
    assert close(32 / 4096, 0.0078, 0.01)
    assert inf.kv_evictions_per_step(32, 8192, 4096) == pytest.approx(96)
    assert close(float(inf.prefill_decode_ratio(0.91, 16e9 / 8.2e11, 32, 512)), 2.9, 0.01)
    assert close(float(inf.prefill_decode_ratio(0.91, 16e9 / 8.2e11, 43, 512)), 3.9, 0.01)


def test_p8_13_p8_15_405b():
    m = inf.served_model("llama3-405b")
    assert close(2 * m.params, 8.1e11, 0.005)
    assert close(float(inf.prefill_time(m, 1, 1, V5E)), 4.1e-3, 0.01)
    assert close(inf.min_step_time(2 * m.params, 0, 1, 1, V5E), 0.99, 0.005)
    # P8.15: 4x8 cannot reach 15 ms; 8x8 does at ~150 tok/s/chip
    assert inf.decode_step_time(L405, 1, 8192, 32, V5E, "int8", "int8").param_s > 15e-3
    best = inf.best_config_under_latency(L405, V5E, 8192, 15e-3)
    assert best["n_chips"] == 64
    assert close(best["tok_s_chip"], 149, 0.01)
    st = inf.decode_step_time(L405, 120, 8192, 64, V5E, "int8", "int8")
    assert close(st.total_s, 12.6e-3, 0.005)
    assert close(inf.min_step_time(L405.params, 0, 1, 256, V5E), 1.93e-3, 0.005)


def test_p8_14_8b():
    mem = inf.serving_memory(L8, 240, 8192, "int8", "int8")
    assert close(mem["params_bytes"], 8.0e9, 0.01) and close(mem["kv_bytes"], 129e9, 0.005)
    assert inf.smallest_slice(inf.min_chips(L8, "int8", "int8", 240, 8192)) == 16
    assert inf.smallest_slice(inf.min_chips(L8, "int8", "int8", 240, 2048)) == 4
    assert inf.smallest_slice(inf.min_chips(L8, "int8", "int8", 240, 4096)) == 8
    st = inf.decode_step_time(L8, 240, 8192, 16, V5E, "int8", "int8")
    assert close(st.kv_s, 9.8e-3, 0.01) and close(st.total_s, 11.0e-3, 0.01)


@pytest.mark.parametrize("S,B,ms,tpc", [(2048, 1, 5.36, 0.012), (2048, 32, 6.15, 0.33),
                                        (2048, 120, 8.40, 0.89), (2048, 511, 35.8, 0.89),
                                        (8192, 1, 5.44, 0.011), (8192, 32, 8.61, 0.23),
                                        (8192, 120, 17.6, 0.43), (8192, 137, 20.1, 0.43)])
def test_chart_table_08(S, B, ms, tpc):
    fr = inf.pareto_frontier(L70, S, 16, V5E)
    i = B - 1
    assert close(fr.latency_s[i] * 1e3, ms, 0.005)
    assert close(fr.tok_s_chip[i] / 1e3, tpc, 0.05)


@pytest.mark.parametrize("S,bmax", [(2048, 554), (4096, 277), (8192, 138), (16384, 69),
                                    (32768, 34), (65536, 17)])
def test_max_batch_chart_08(S, bmax):
    assert inf.max_batch_size(L70, S, 16, V5E, "int8", "int8") == bmax
    assert len(inf.pareto_frontier(L70, S, 16, V5E)) == bmax     # no stride-4 truncation


def test_cost_table_08():
    fr = inf.pareto_frontier(L70, 2048, 16, V5E)
    c1 = inf.cost_per_million_tokens(fr.tok_s_chip[0], 1.2)
    c120 = inf.cost_per_million_tokens(fr.tok_s_chip[119], 1.2)
    assert close(c1, 28.6, 0.01) and close(c120, 0.37, 0.02)
    assert 70 < c1 / c120 < 80                                  # ≈77x at 2k (08 errata 9)


def test_kv_vs_flops_crossover_08():
    # KV time per sequence exceeds FLOPs time per sequence once S > (2P/C)/(KV_tok/W) ≈ 3.56k
    s = (2 * 70e9 / 1.97e14) / (163840 / 8.2e11)
    assert close(s, 3557, 0.005)
    a = inf.decode_step_time(L70, 1, 3500, 16, V5E, "int8", "int8")
    b = inf.decode_step_time(L70, 1, 3600, 16, V5E, "int8", "int8")
    assert a.kv_s < a.flops_s and b.kv_s > b.flops_s


# ---- bad input ------------------------------------------------------------------------------

def test_does_not_fit_message():
    with pytest.raises(inf.Infeasible, match=r"needs .* has "):
        inf.decode_step_time(L70, 200, 8192, 16, V5E, "int8", "int8")
    with pytest.raises(ValueError, match="weights alone need"):
        inf.max_batch_size(L70X, 8192, 4, V5E, "bf16", "bf16")
    e = None
    try:
        inf.check_fits(L70, 200, 8192, 16, V5E, "int8", "int8")
    except inf.Infeasible as err:
        e = err
    assert e is not None and e.needed > e.available == 256e9


def test_unknown_dtype_lists_allowed():
    with pytest.raises(ValueError, match="allowed: f32, bf16, fp8, int8, int4"):
        inf.decode_step_time(L70, 1, 1024, 16, V5E, "int3", "int8")
    with pytest.raises(TypeError):
        inf.kv_bytes_per_token(L70, 8)


@pytest.mark.parametrize("call", [
    lambda: inf.decode_step_time(L70, 0, 1024, 16, V5E),
    lambda: inf.decode_step_time(L70, 1, -5, 16, V5E),
    lambda: inf.decode_step_time(L70, 1, 1024, 16, "v9z"),
    lambda: inf.prefill_time(L70, 100, 16, V5E, mfu=1.5),
    lambda: inf.spec_decode_expected_tokens(1.2, 3),
    lambda: inf.smallest_slice(1000),
    lambda: inf.kv_shard_layout(8, 16, 3),
    lambda: inf.simulate_batching(np.array([1, 0]), 2),
    lambda: inf.served_model(42),
    lambda: inf.pareto_mask([1, 2], [1]),
])
def test_bad_input_raises(call):
    with pytest.raises((ValueError, TypeError, KeyError)):
        call()


# ---- sharding, batching, grid ---------------------------------------------------------------

def test_kv_shard_layout():
    assert inf.kv_shard_layout(8, 16, 32) == {"heads_ways": 8, "batch_ways": 2,
                                              "heads_per_chip": 1, "seqs_per_chip": 16}
    assert inf.kv_shard_layout(8, 4, 5)["heads_ways"] == 4


def test_continuous_batching_beats_static():
    rng = np.random.default_rng(0)
    g = rng.integers(1, 200, 300)
    s = inf.simulate_batching(g, 16, "static")
    c = inf.simulate_batching(g, 16, "continuous")
    assert c["steps"] < s["steps"] and c["utilisation"] > s["utilisation"]
    assert s["active"].sum() == c["active"].sum() == g.sum()        # every token decoded once
    assert c["steps"] >= int(np.ceil(g.sum() / 16))


def test_grid_size_and_speed():
    # CPU seconds of this process: the cost of the code, not the queue for a shared machine's cores
    t0 = time.process_time()
    g = inf.serving_grid(L70, 8192, V5E)
    dt = time.process_time() - t0
    assert len(g) >= 10_000 and dt < 1.0
    f = g.front()
    assert np.all(np.diff(f["latency_s"]) > 0) and np.all(np.diff(f["tok_s_chip"]) > 0)
    # nothing off the front beats a front point on both axes
    lat, thr = g.latency_s, g.tok_s_chip
    for i in np.flatnonzero(g.pareto)[:20]:
        assert not np.any((lat < lat[i]) & (thr > thr[i]))


def test_quantization_table():
    rows = inf.quantization_table(L70, 8192, 16, V5E)
    bmax = [r["max_batch"] for r in rows]
    assert bmax[0] < bmax[1] < bmax[2]          # int8 weights, then int8 KV, raise the batch
    assert rows[1]["b_crit"] == pytest.approx(rows[0]["b_crit"] / 2)


def test_sampling_flops_orders():
    n = 64
    a = inf.sampling_flops(CH7, n, cached=True)
    b = inf.sampling_flops(CH7, n, cached=False)
    assert b / a > n / 4


# ---- properties (issue 7) -------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(S=st.integers(128, 32768), n=st.sampled_from([4, 8, 16, 32, 64]),
       w=st.sampled_from(["bf16", "int8", "int4"]), kv=st.sampled_from(["bf16", "int8"]))
def test_larger_batch_never_lowers_throughput(S, n, w, kv):
    try:
        bmax = inf.max_batch_size(L70, S, n, V5E, w, kv)
    except inf.Infeasible:
        return
    if bmax < 2:
        return
    b = np.arange(1, bmax + 1)
    st_ = inf.decode_step_time(L70, b, S, n, V5E, w, kv, check_memory=False)
    thr = np.asarray(st_.tokens_per_s)
    assert np.all(np.diff(thr) >= -1e-9 * thr[1:])


@settings(max_examples=60, deadline=None)
@given(B=st.integers(1, 512), n=st.sampled_from([1, 8, 16, 64]),
       ici=st.booleans())
def test_longer_context_never_shortens_step(B, n, ici):
    S = np.arange(128, 65536, 997)
    st_ = inf.decode_step_time(L70, B, S, n, V5E, "int8", "int8", ici=ici, check_memory=False)
    assert np.all(np.diff(np.asarray(st_.total_s)) > 0)


# ---- widgets (budget: < 100 ms per update; misfits become messages) -------------------------

def test_widget_draws_fast_and_report_misfits(capsys):
    from scaling_lib.widgets import time_update, inference as wi
    assert time_update(wi.draw_serving) < 0.1
    assert time_update(wi.draw_pareto) < 0.1
    assert time_update(wi.draw_serving, model="LLaMA 3-8B", chip="H100", n_chips=1, batch=8,
                       seq_len=2048, weights="bf16", kv="bf16") < 0.1
    out = capsys.readouterr().out
    assert "token/s" in out
    with pytest.raises(ValueError, match="needs .* has "):
        wi.draw_serving(batch=400)
    with pytest.raises(ValueError):
        wi.draw_serving(model="GPT-5")


def test_plotly_steps():
    from scaling_lib.widgets import inference as wi
    steps = wi.pareto_steps(L70, [2048, 8192])
    assert [s[0] for s in steps] == ["2048", "8192"]
    assert len(steps[0][1][0]["x"]) == 554 and len(steps[1][1][0]["x"]) == 138
    br = wi.latency_breakdown_steps(L70, [4096])
    assert [t["name"] for t in br[0][1]][:4] == ["权重读取", "KV 缓存读取", "FFN 计算", "总耗时"]


def test_disagg_widget(capsys):
    from scaling_lib.widgets import time_update, inference as wi
    assert time_update(wi.draw_disagg) < 0.1
    r = wi.draw_disagg(prompt_len=8192, decode_len=512, mfu=0.4, prefill_chips=16, batch=32,
                       decode_chips=8)
    t_pre = inf.prefill_time(L70, 8192, 16, V5E, mfu=0.4)
    st = inf.decode_step_time(L70, 32, 8192 + 512, 8, V5E, "int8", "int8")
    assert r == pytest.approx(32 * t_pre / (float(st.total_s) * 512))
    assert "544" in capsys.readouterr().out                   # 32 * (8192 + 512) / 512
    with pytest.raises(ValueError, match="needs"):
        wi.draw_disagg(batch=128, decode_chips=8)


def test_intensity_widget(capsys):
    from scaling_lib.widgets import time_update, inference as wi
    assert time_update(wi.draw_intensity) < 0.1
    wi.draw_intensity(S=8192, T=8192, G=1)
    assert "计算受限" in capsys.readouterr().out           # prefill T/2 = 4096 > 240
    wi.draw_intensity(S=8192, T=1, G=8)
    assert "内存带宽受限" in capsys.readouterr().out


# ---- issue 13, review ch07-09 M1: float ties on the Pareto front ------------------------------

def test_pareto_mask_float_tie_keeps_only_the_faster_point():
    # two points whose throughputs differ only by float noise: the slower one is dominated
    lat = np.array([8.95e-3, 11.74e-3, 5e-3])
    thr = np.array([425.99208433143644, 425.9920843314365, 300.0])
    assert inf.pareto_mask(lat, thr).tolist() == [True, False, True]
    # a real gain (above the tolerance) still counts
    assert inf.pareto_mask(lat, thr * np.array([1, 1 + 1e-6, 1])).tolist() == [True, True, True]
    # exact latency ties: only the higher throughput survives
    assert inf.pareto_mask([1.0, 1.0], [2.0, 1.0]).tolist() == [True, False]


def test_budget_choice_breaks_throughput_ties_by_latency():
    """Once the MLP is compute-bound, tokens/s/chip stops depending on B: within a budget the
    lowest-latency point of the tied group wins (ch. 8 budget table, 20 and 40 ms rows)."""
    grid = inf.serving_grid(L70, 8192, V5E)
    for budget in (20e-3, 40e-3):
        i = grid.best_under(budget)
        ok = grid.latency_s <= budget
        top = grid.tok_s_chip[ok].max()
        assert grid.tok_s_chip[i] >= top * (1 - inf.PARETO_RTOL)
        tied = ok & (grid.tok_s_chip >= top * (1 - inf.PARETO_RTOL))
        assert grid.latency_s[i] == grid.latency_s[tied].min()
        assert grid.pareto[i], "the chosen point must be on the Pareto front"
    best = inf.best_config_under_latency(L70, V5E, 8192, 20e-3)
    fr = inf.pareto_frontier(L70, 8192, best["n_chips"], V5E)
    same = np.abs(fr.tok_s_chip - best["tok_s_chip"]) <= best["tok_s_chip"] * inf.PARETO_RTOL
    assert best["step_s"] == pytest.approx(fr.latency_s[same & (fr.latency_s <= 20e-3)].min())
    with pytest.raises(inf.Infeasible, match="no point"):
        grid.best_under(1e-6)


def test_serving_axis_counts_checked_against_chip():
    with pytest.raises(ValueError, match="impossible on TPU v5e"):
        inf.one_d_mp_comm_time(32, 8192, V5E, 3)
    with pytest.raises(ValueError, match="impossible on TPU v5e"):
        inf.max_model_parallelism(28672, V5E, 3)
    assert inf.one_d_mp_comm_time(32, 8192, "v4p") == pytest.approx(
        inf.one_d_mp_comm_time(32, 8192, "v4p", 3))


# ---- the ICI term on the slice's real links (chapter owners' report: a v5e sub-pod without
# wraparound was priced as rings, ~2x optimistic) ----------------------------------------------

def test_ici_term_takes_wraparound_from_topology():
    from scaling_lib import models, topology
    L = models.get("LLaMA-3.1-405B")
    assert inf.slice_shape("v5e", 64) == (8, 8) and inf.slice_shape("v5p", 64) == (4, 4, 4)
    assert topology.wraparound("v5e", (8, 8)) == (False, False)
    real = inf.ici_time_1d(L, 1, 64, "v5e")              # 8x8: lines, 7 + 7 hops
    rings = inf.ici_time_1d(L, 1, 64, "v5e", wrap=True)   # the book's rings: 4 + 4 hops
    assert real / rings == pytest.approx(14 / 8)          # latency-bound at batch 1
    big = inf.ici_time_1d(L, 256, 64, "v5e") / inf.ici_time_1d(L, 256, 64, "v5e", wrap=True)
    assert 1.5 < big <= 2.0                               # bandwidth-bound: a line has half a ring's links
    # the full 16x16 pod wraps on both axes: the two agree
    assert inf.ici_time_1d(L, 1, 256, "v5e") == pytest.approx(inf.ici_time_1d(L, 1, 256, "v5e", wrap=True))
    with pytest.raises(ValueError, match="wrap must be"):
        inf.ici_time_1d(L, 1, 64, "v5e", wrap="yes")
    with pytest.raises(ValueError, match="power of two"):
        inf.slice_shape("v5e", 48)


def test_best_config_under_latency_counts_ici():
    from scaling_lib import models
    L = models.get("LLaMA-3.1-405B")
    free = inf.best_config_under_latency(L, "v5e", 8192, 15e-3)
    withici = inf.best_config_under_latency(L, "v5e", 8192, 15e-3, ici=True)
    g = inf.serving_grid(L, 8192, "v5e", weight_dtypes=("int8",), kv_dtypes=("int8",), ici=True)
    j = g.best_under(15e-3)
    assert (withici["n_chips"], withici["batch"]) == (int(g.n_chips[j]), int(g.batch[j]))
    assert withici["tok_s_chip"] == pytest.approx(g.tok_s_chip[j])
    assert withici["tok_s_chip"] < free["tok_s_chip"]     # counting ICI can only cost throughput
    st = inf.decode_step_time(L, withici["batch"], 8192, withici["n_chips"], "v5e", "int8", "int8",
                              ici=True)
    assert float(st.total_s) <= 15e-3
