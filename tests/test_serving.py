"""Serving as GPUs and TPUs pay for it (scaling_lib.serving): each term the chapter-7 bound leaves
out is there with the size it should have, the bound is chapter 7's, the request-level
simulation adds up the same steps, and bad input is refused with a clear message."""
import numpy as np
import pytest

from scaling_lib import collectives, efficiency, hardware, inference, serving, topology

PAR = efficiency.params()
H100 = hardware.get("H100")


@pytest.fixture(scope="module")
def l70():
    return serving.Deployment("LLaMA-2-70B", "H100", tp=4)


def test_pure_decode_bound_is_chapter_7s(l70):
    for b, s in ((1, 128), (16, 1024), (256, 4096)):
        ours = serving.decode_step(l70, b, s).bound
        ch7 = inference.decode_step_time("LLaMA-2-70B", b, s, 4, "H100", check_memory=False)
        assert ours == pytest.approx(float(ch7.total_s), rel=1e-9)


def test_forecast_is_never_below_the_bound(l70):
    b = np.array([1, 4, 16, 64, 256, 1024])[:, None]
    s = np.array([128, 2048, 8192])[None, :]
    st = serving.decode_step(l70, b, s)
    assert st.forecast.shape == (6, 3)
    assert np.all(st.forecast >= st.bound)
    pf = serving.prefill(l70, np.array([1, 8, 64]), 2048)
    assert np.all(pf.forecast >= pf.bound)


def test_vectorised_equals_one_step_at_a_time(l70):
    bs = np.array([1, 3, 17, 128])
    v = serving.decode_step(l70, bs, 1000)
    for i, b in enumerate(bs):
        one = serving.decode_step(l70, int(b), 1000)
        assert isinstance(one.forecast, float)
        assert v.forecast[i] == pytest.approx(one.forecast, rel=1e-12)
        assert v.parts["allreduce"][i] == pytest.approx(one.parts["allreduce"], rel=1e-12)


def test_tensor_parallel_allreduce_has_latency_and_bytes(l70):
    # 2 AllReduces of the [M, d_model] BF16 activations per layer, each a fixed latency plus the
    # ring's 2(tp-1)/tp of the bytes over NVLink at the achieved ring fraction
    b = 64
    st = serving.decode_step(l70, b, 1024)
    D, L = 8192, 80
    v = 2 * 3 / 4 * b * D * 2.0
    hand = 2 * L * (PAR["serve.allreduce_latency_s"] + v / (PAR["nvlink.ring_eff"] *
                                                          H100.nvlink_bw_1way))
    assert st.parts["allreduce"] == pytest.approx(hand, rel=1e-12)
    # at batch 1 the latency is nearly all of it: 160 AllReduces cost >= 160 latencies
    one = serving.decode_step(l70, 1, 1024).parts["allreduce"]
    assert 160 * PAR["serve.allreduce_latency_s"] <= one < 1.01 * 160 * \
        PAR["serve.allreduce_latency_s"] + 1e-5
    # and one chip has none
    solo = serving.Deployment("LLaMA-2-7B", "H100", tp=1)
    assert serving.decode_step(solo, 8, 1024).parts["allreduce"] == 0.0


def test_per_step_and_per_kernel_overheads_make_a_floor(l70):
    st = serving.decode_step(l70, 1, 1)
    floor = PAR["serve.step_overhead_s"] + 80 * serving.ELEMENTWISE_KERNELS * PAR["hopper.launch_s"]
    assert st.parts["overhead"] == PAR["serve.step_overhead_s"]
    assert st.forecast > floor + st.parts["gemm"]
    # the bound at batch 1 is the weight read; the forecast pays the terms it leaves out
    assert st.forecast / st.bound > 1.5


def test_prefill_has_a_batch_and_a_weight_load_floor(l70):
    # short prompts: the weights must be read however few the tokens, so 8 prompts of 16
    # tokens cost little more than one
    one, eight = serving.prefill(l70, 1, 16).forecast, serving.prefill(l70, 8, 16).forecast
    w_read = 70e9 * 2 / 4 / (PAR["hopper.hbm_eff"] * H100.hbm_bw)
    assert one > 0.9 * w_read
    assert eight < 1.3 * one
    # long prompts are compute-bound: 8 of them take ~8x one (attention and GEMMs scale)
    l1, l8 = serving.prefill(l70, 1, 2048).forecast, serving.prefill(l70, 8, 2048).forecast
    assert 6.5 < l8 / l1 < 8.2


def test_weight_only_quantisation_reads_less_but_computes_slower():
    bf = serving.Deployment("LLaMA-2-70B", "H100", tp=4)
    q4 = serving.Deployment("LLaMA-2-70B", "H100", tp=4, weights="int4")
    # decode at batch 1 is a weight read: INT4 weights cut the GEMM time ~4x
    g_bf = serving.decode_step(bf, 1, 512).parts["gemm"]
    g_q4 = serving.decode_step(q4, 1, 512).parts["gemm"]
    assert 2.5 < g_bf / g_q4 < 4.2
    # a long prefill is compute-bound: dequantisation makes it ~1/wq_compute_eff slower (a
    # little less: the 16-row tiles of the INT4 kernel waste less than the 16-bit GEMM's waves)
    p_bf = serving.prefill(bf, 8, 4096).parts["gemm"]
    p_q4 = serving.prefill(q4, 8, 4096).parts["gemm"]
    assert 0.93 < p_q4 / p_bf * PAR["serve.wq_compute_eff"] <= 1.0
    # FP8 weights with FP8 arithmetic are not weight-only: no such penalty
    f8 = serving.Deployment("LLaMA-2-70B", "H100", tp=4, weights="fp8", compute="fp8")
    assert serving.prefill(f8, 8, 4096).parts["gemm"] < p_bf


def test_moe_decode_pays_dispatch_and_combine():
    dep = serving.Deployment("DeepSeek-V3", "H800", ep=64, weights="fp8", compute="fp8")
    M = 64 * 32                                # 32 sequences per attention replica
    st = serving.decode_step(dep, M, 4096)
    per = M / 64 * 8 * 7168                    # elements a GPU sends: tokens x top-8 x hidden
    one = efficiency.alltoall_lowlatency_time(per, 64, 8, hardware.get("H800").dcn_bw_1way) + \
        efficiency.alltoall_lowlatency_time(2 * per, 64, 8, hardware.get("H800").dcn_bw_1way)
    assert st.parts["alltoall"] == pytest.approx(float(one) * 58, rel=1e-9)
    assert st.parts["alltoall"] > 0.2 * st.forecast     # a large share of a decode step
    dense = serving.Deployment("LLaMA-2-70B", "H100", tp=4)
    assert serving.decode_step(dense, 8, 512).parts["alltoall"] == 0.0


def test_tpu_tensor_parallel_uses_ici():
    # v5e, TP 4 placed on a wrapped 16-chip axis (the book's placement, System's default): two
    # AllReduces of 2·V over one axis of W_ici = 2 links, at the achieved ICI fraction, plus
    # the torus's hop latency (4 chips around the ring, twice)
    dep = serving.Deployment("LLaMA-2-7B", "v5e", tp=4)
    st = serving.decode_step(dep, 8, 1024)
    c = hardware.get("v5e")
    v = 8 * 4096 * 2.0
    hand = 2 * 32 * (2 * v / (PAR["ici.eff"] * 2 * c.ici_link_bw_1way) + 2 * 2 * 1e-6)
    assert st.parts["allreduce"] == pytest.approx(hand, rel=1e-12)
    # on a real 2x2 sub-slice (no wraparound links) the same AllReduce runs over two lines
    sub = serving.Deployment("LLaMA-2-7B", "v5e", tp=4,
                             system=topology.System("v5e", 4, shape=(2, 2)))
    assert serving.decode_step(sub, 8, 1024).parts["allreduce"] != \
        pytest.approx(st.parts["allreduce"], rel=1e-3)


#: TP groups on which a private ring formula 2(tp−1)/tp·V/W and the topology disagree: NVLink
#: SHARP, a group across two DGX nodes, TPU slices with and without wraparound
_SYSTEMS = [("LLaMA-2-70B", "H100", 4, None),
            ("LLaMA-2-70B", "H100", 8, topology.system("DGX H100", nvls=True)),
            ("LLaMA-2-70B", "H100", 16, topology.system("DGX H100", 16)),
            ("LLaMA-2-7B", "v5e", 8, None),
            ("LLaMA-2-7B", "v5e", 8, topology.System("v5e", 8, shape=(2, 4))),
            ("LLaMA-2-7B", "v5p", 16, topology.System("v5p", 16, shape=(2, 2, 4)))]


@pytest.mark.parametrize("model,chip,tp,system", _SYSTEMS)
def test_serving_allreduce_is_collectives_group_time(model, chip, tp, system):
    # one idea, one place: the TP AllReduce of a serving step is collectives.group_time for the
    # TP group on the deployment's System (ring convention), each tier over its achieved
    # fraction, plus the serving latency; never a private ring formula
    dep = serving.Deployment(model, chip, tp=tp, system=system)
    sysm = dep.system
    b = np.array([1.0, 64.0, 4096.0])
    st = serving.step_time(dep, b, b * 1024)
    v = b * dep.shapes.D * 2.0
    up, out = collectives.group_time("all_reduce", v, sysm, tp, convention="ring", tiers=True)
    total = collectives.group_time("all_reduce", v, sysm, tp, convention="ring")
    if sysm.family == "gpu":
        np.testing.assert_allclose(np.maximum(up, out), total, rtol=1e-12)
        eff = PAR["nvlink.nvls_eff"] if sysm.nvls else PAR["nvlink.ring_eff"]
        lat = PAR["serve.allreduce_latency_s"] + (PAR["nic.latency_s"] if tp > 8 else 0.0)
        one = np.maximum(up / eff, out / PAR["nic.eff"]) + lat
    else:
        np.testing.assert_allclose(up + out, total, rtol=1e-12)
        lat = collectives.group_time("all_reduce", 1.0, sysm, tp, convention="ring",
                                     latency=True)[1]
        one = up / PAR["ici.eff"] + out / PAR["dcn.eff"] + lat
    np.testing.assert_allclose(st.parts["allreduce"], 2 * dep.shapes.L * one, rtol=1e-12)
    # with the achieved fractions at their ceilings (1; NVLink rings 0.98) and a 1 µs latency:
    # group_time plus that latency
    ideal = PAR.replace(nvlink__ring_eff=0.98, nvlink__nvls_eff=0.98, ici__eff=1.0,
                        nic__eff=1.0, dcn__eff=1.0, serve__allreduce_latency_s=1e-6)
    t = serving.step_time(dep, b, b * 1024, par=ideal).parts["allreduce"] / (2 * dep.shapes.L)
    if sysm.family == "gpu":
        np.testing.assert_allclose(t, np.maximum(up / 0.98, out) + 1e-6 +
                                   (ideal["nic.latency_s"] if tp > 8 else 0.0), rtol=1e-12)
    else:
        np.testing.assert_allclose(t, total + lat, rtol=1e-12)


def test_deployment_system_is_checked():
    with pytest.raises(TypeError, match="topology.System"):
        serving.Deployment("LLaMA-2-70B", "H100", tp=4, system="DGX H100")
    with pytest.raises(ValueError, match="at least tp·ep = 8 chips of H100"):
        serving.Deployment("LLaMA-2-70B", "H100", tp=8, system=topology.System("H100", 4))
    with pytest.raises(ValueError, match="chips of H100"):
        serving.Deployment("LLaMA-2-70B", "H100", tp=8, system=topology.system("DGX A100"))


def test_static_batch_is_prefill_plus_each_decode_step(l70):
    sb = serving.static_batch(l70, 16, 128, 32)
    pf = serving.prefill(l70, 16, 128).forecast
    dec = sum(serving.decode_step(l70, 16, c).forecast for c in range(129, 160))
    assert sb.forecast == pytest.approx(pf + dec, rel=1e-12)
    assert sb.tokens_per_s_per_chip == pytest.approx(16 * 32 / sb.forecast / 4)
    assert sb.bound_tokens_per_s_per_chip > sb.tokens_per_s_per_chip


def test_simulation_of_one_request_adds_up_the_steps(l70):
    # a 5000-token prompt in chunks of 2048: 3 prefill steps (2048, 2048, 904) then decodes
    req = serving.Requests([0.0], [5000], [4])
    res = serving.simulate(l70, req, max_batch=8, chunk_tokens=2048)
    t = 0.0
    done = 0
    for k in (2048, 2048, 904):
        t += serving.step_time(l70, 0, 0, n_prefill_tokens=k,
                               prefill_attn_flops=serving.causal_flops(l70, 1, k, done)).forecast
        done += k
    assert res.ttft[0] == pytest.approx(t, rel=1e-9)
    gaps = [serving.decode_step(l70, 1, 5000 + i).forecast for i in range(1, 4)]
    np.testing.assert_allclose(res.itl, gaps, rtol=1e-9)
    assert res.n_steps == 6 and res.output_tokens == 4


def test_simulation_load_shapes_latency_and_throughput(l70):
    mix = dict(prompt_len=[128, 512, 2048], output_len=[64, 256], seed=1)
    light = serving.simulate(l70, serving.Requests.poisson(60, 0.5, **mix))
    heavy = serving.simulate(l70, serving.Requests.poisson(300, 20.0, **mix))
    # lightly loaded: every token at about the cost of a small decode step
    assert light.percentiles()["itl"][50] < 1.3 * serving.decode_step(l70, 4, 1500).forecast
    # under load: more sequences per step, more tokens/s, and longer waits for the first token
    assert heavy.mean_batch > 5 * light.mean_batch
    assert heavy.throughput > 5 * light.throughput
    assert heavy.percentiles()["ttft"][90] > 2 * light.percentiles()["ttft"][90]
    assert heavy.itl.size == sum(int(o) - 1 for o in
                                 serving.Requests.poisson(300, 20.0, **mix).output_len)
    assert np.all(heavy.ttft > 0) and np.all(heavy.finish >= heavy.ttft)


def test_clear_errors():
    with pytest.raises(ValueError, match="tp=3 must divide n_heads=64"):
        serving.Deployment("LLaMA-2-70B", "H100", tp=3)
    with pytest.raises(ValueError, match="ep=2 must divide n_experts"):
        serving.Deployment("LLaMA-2-70B", "H100", ep=2)
    with pytest.raises(TypeError, match="TransformerConfig or a preset"):
        serving.Deployment(42, "H100")
    with pytest.raises(KeyError):
        serving.Deployment("LLaMA-2-70B", "H1000")
    dep = serving.Deployment("LLaMA-2-7B", "H100")
    with pytest.raises(ValueError, match="at least one decode sequence or prefill token"):
        serving.step_time(dep, 0, 0)
    with pytest.raises(ValueError, match="batch must be > 0"):
        serving.decode_step(dep, 0, 128)
    with pytest.raises(ValueError, match="chunk_tokens .* must exceed max_batch"):
        serving.simulate(dep, serving.Requests([0.0], [10], [10]), max_batch=256, chunk_tokens=256)
    with pytest.raises(ValueError, match="does not fit in the KV space"):
        serving.simulate(dep, serving.Requests([0.0], [10_000_000], [10]))
    with pytest.raises(ValueError, match="sorted"):
        serving.Requests([1.0, 0.0], [10, 10], [5, 5])
    with pytest.raises(ValueError, match=">= 1 token"):
        serving.Requests([0.0], [0], [5])
    with pytest.raises(TypeError, match="serving.Requests"):
        serving.simulate(dep, [(0.0, 10, 10)])
