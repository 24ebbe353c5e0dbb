"""Tests for scaling_lib.transformer: spec 04 numbers (P4.x refs), CANON §2, properties, bad input."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scaling_lib import hardware, models, transformer as tr
from scaling_lib.transformer import TransformerConfig as TC

TOY = models.TOY_P41


def mha(D, L, F=None, V=32000, H=128, **kw):
    return TC(d_model=D, n_layers=L, n_heads=D // H, n_kv_heads=D // H, d_ff=F or 4 * D,
              vocab=V, **kw)


# ---- worked problems of spec 04 ----------------------------------------------------------

def test_p41a_total_params():            # spec P4.1(a): L(3DF+4DNH+D)+2DV = 17.44e9
    D, F, L, V = 4096, 16384, 64, 32000
    assert TOY.params() == L * (3 * D * F + 4 * D * D + D) + 2 * D * V == 17_442_275_328


def test_p41b_attention_share():         # spec P4.1(b): 1/4 (24.6% with embeddings)
    p = TOY.params_by_part()
    attn = sum(p[k] for k in ("attn_q", "attn_k", "attn_v", "attn_o"))
    assert attn / (attn + p["mlp"]) == pytest.approx(0.25, rel=1e-12)
    assert attn / TOY.params() == pytest.approx(0.246, abs=5e-4)


def test_p41c_kv_per_token_int8():       # spec P4.1(c): 2·L·N·H·1 B = 524,288 B = 512 KiB
    assert TOY.kv_bytes_per_token("int8") == 524_288 == 512 * 1024


def test_p42_sharded_matmul():           # spec P4.2: total 8BDF, per chip BDF/16
    B, D, F = 1024, 8192, 28672
    total, per_chip = tr.sharded_matmul_flops(B, D, F, {"X": 4, "Y": 8, "Z": 4})
    assert total == 8 * B * D * F
    assert per_chip == B * D * F / 16


def test_p43_general_contraction():      # spec P4.3: 2·IJKLMNO (product, not sum)
    s = dict(i=2, j=3, k=5, l=7, m=11, n=13, o=17)
    assert tr.contraction_flops("ijkl,ijmno->klmno", s) == 2 * math.prod(s.values())
    g = dict(g=2, h=3, i=4, j=5, k=6, l=7, m=8, n=9)
    assert tr.contraction_flops("ghijkl,ghmnkl->ghijmn", g) == 2 * math.prod(g.values())
    assert tr.contraction_flops("ij,ij->ij", {"i": 3, "j": 4}) == 12   # elementwise: no ×2
    assert tr.contraction_flops("np,pm->nm", {"n": 3, "p": 4, "m": 5}) == 120


@pytest.mark.parametrize("chip,g,expected,ref", [
    ("v5e", 1, 480.5, "P4.4(b) MHA on v5e"),
    ("v5e", 8, 270.3, "P4.4(b) G=8 on v5e, 240·9/8"),
    ("v5p", 1, 327.9, "CANON §4: v5p MHA T > 328"),
])
def test_p44b_prefill_threshold(chip, g, expected, ref):
    assert tr.prefill_compute_bound_seq_len(chip, g) == pytest.approx(expected, rel=2e-3), ref


def test_p44_intensity_limits():          # spec P4.4(a)-(c)
    T, G = 4096, 8
    assert tr.attention_arithmetic_intensity(T, T, G) == pytest.approx(T * G / (G + 1))
    assert tr.attention_arithmetic_intensity(1, 1e9, G) == pytest.approx(G, rel=1e-6)
    # decode is memory-bound on v5e for any realistic G
    assert tr.attention_arithmetic_intensity(1, 8192, 8) < hardware.critical_intensity("v5e")


def test_p45_qkvo_equals_attention():     # spec P4.5: T = 2D; D=4096 -> 8192
    assert tr.qkvo_equals_attention_seq_len(4096) == 8192
    c = mha(4096, 1)
    parts = c.flops_by_part(8192, causal=False)
    assert parts["attn_core"] == pytest.approx(parts["attn_qkvo"])


@pytest.mark.parametrize("T,expected", [(8192, 4 / 108), (4096, 4 * 4096 / (96 * 8192 + 12 * 4096))])
def test_p46_dots_remat_extra(T, expected):   # spec P4.6: 4T/(96D+12T); T=D -> 3.7%
    c = mha(8192, 4)
    assert tr.remat_extra_fraction(c, T) == pytest.approx(expected, rel=1e-12)
    assert tr.remat_flops_multiplier("dots", c, T) == pytest.approx(1 + expected)


# The original book's H800 FP8 peak: the PCIe card's dense figure (CANON D27). Kept only to check
# the book's quoted 21.6 %; the catalogue (and the chapter) use the SXM part, 16.5 %.
H800_FP8_DENSE_PCIE = 1.513e15


def test_p47_mfu_deepseek():              # spec P4.7: 21.6% (book 21.7%); SXM peak 16.5%
    used = tr.flops_6nd(37e9, 14.8e12)
    assert used == pytest.approx(3.29e24, rel=2e-3)
    assert tr.mfu(used, 2.79e6 * 3600, 1, H800_FP8_DENSE_PCIE) == pytest.approx(0.2166, abs=5e-4)
    assert tr.mfu(used, 2.79e6 * 3600, 1, hardware.peak_flops("H800", "fp8")) == \
        pytest.approx(0.165, abs=1e-3)


@pytest.mark.parametrize("D,T", [(8192, 65_536), (4608, 36_864)])
def test_p48_crossover(D, T):             # spec P4.8: T/(8D) with F=4D, NH=D
    c = mha(D, 2, H=128 if D % 128 == 0 else 64)
    assert tr.attention_to_matmul_ratio(T, c) == pytest.approx(1.0, rel=1e-12)
    assert tr.attention_crossover_seq_len(c) == pytest.approx(T)
    ts = np.array([1024.0, 8192.0, 1e6])
    np.testing.assert_allclose(tr.attention_to_matmul_ratio(ts, c), ts / (8 * D))


def test_p49_activation_memory():         # spec P4.9: 84 TB no remat, 4.2 TB block remat
    assert tr.activation_bytes(4e6, 8192, 64) == pytest.approx(8.4e13, rel=5e-3)
    assert tr.activation_bytes(4e6, 8192, 64, saved_per_layer=tr.saved_arrays_per_layer("block")) \
        == pytest.approx(4.2e12, rel=5e-3)


def test_p410_block_remat():              # spec P4.10: 8/6
    assert tr.remat_flops_multiplier("block") == pytest.approx(8 / 6)
    assert tr.remat_flops_multiplier("nothing_saveable") == pytest.approx(8 / 6)
    assert tr.remat_flops_multiplier("none") == 1.0


def test_p411_kv_cache():                 # spec P4.11: 8 GiB; GQA K=N/8 -> 1 GiB
    c = mha(8192, 64)
    assert tr.kv_cache_bytes(c, 8192, bytes_per_elem=1) == 8_589_934_592 == 8 * 2**30
    g = c.replace(n_kv_heads=c.n_heads // 8)
    assert g.kv_cache_bytes(1, 8192, "int8") == 2**30


def test_p412_matmul_train():             # spec P4.12: (2NPM, 4NPM, 6NPM)
    assert tr.matmul_train_flops(3, 5, 7) == (210.0, 420.0, 630.0)


# ---- CANON §2 derived numbers -----------------------------------------------------------

@pytest.mark.parametrize("name,entries", [("LLaMA-2-13B", 409_600), ("LLaMA-3-8B", 65_536),
                                          ("LLaMA-3-70B", 163_840), ("LLaMA-3.1-405B", 258_048)])
def test_kv_entries_canon(name, entries):
    assert models.get(name).kv_elems_per_token() == entries     # CANON §2: 2·L·K·H
    assert models.get(name).kv_bytes_per_token("int8") == entries
    assert models.get(name).kv_bytes_per_token("bf16") == 2 * entries


def test_kv_70b_int8():                   # CANON: 70B int8 KV = 163,840 B per token (K and V)
    c = models.LLAMA3_70B
    assert 2 * c.n_layers * c.n_kv_heads * c.d_head == 163_840
    assert c.kv_bytes_per_token("int8") == 163_840


@pytest.mark.parametrize("name,six_p", [("LLaMA-3-70B", 4.23e11), ("LLaMA-3.1-405B", 2.44e12),
                                        ("LLaMA-3-8B", 4.82e10)])
def test_6p_per_token_canon(name, six_p):
    c = models.get(name)
    assert tr.flops_6nd(c.params(), 1) == pytest.approx(six_p, rel=3e-3)


@pytest.mark.parametrize("name,mlp,attn,vocab", [("LLaMA-2-13B", 8.49e9, 4.19e9, 0.33e9),
                                                 ("LLaMA-3-70B", 56.37e9, 12.08e9, 2.10e9)])
def test_breakdown_canon(name, mlp, attn, vocab):
    b = tr.param_breakdown(name)
    assert b["mlp"] == pytest.approx(mlp, rel=2e-3)
    assert b["attn"] == pytest.approx(attn, rel=2e-3)
    assert b["embed"] + b["unembed"] == pytest.approx(vocab, rel=2e-2)
    assert sum(b.values()) == models.get(name).params()


# ---- FLOPs structure ----------------------------------------------------------------------

def test_train_is_three_forward_and_6p_rule():
    c = models.LLAMA3_8B
    T = 8192
    assert c.train_flops(1e6, T) == pytest.approx(3 * c.forward_flops(1e6, T))
    rule = 6 * c.matmul_params() * 1e6
    assert c.train_flops(1e6, T, causal=False) == pytest.approx(
        rule + 3e6 * c.attention_flops_per_token(T, causal=False))
    assert tr.train_flops(c, 1e6, T) == pytest.approx(c.train_flops(1e6, T, causal=False))
    assert tr.train_flops(c, 1e6, include_attention=False) == pytest.approx(rule)


def test_causal_halves_attention():
    c = models.LLAMA3_8B
    T = 4095
    assert c.attention_flops_per_token(T, causal=True) == pytest.approx(
        c.attention_flops_per_token(T, causal=False) * (T + 1) / (2 * T))


def test_layer_train_flops_table():       # spec table: 18BTDF, 24BTDNH, 12BT^2NH
    B, T = 2, 1024
    c = mha(4096, 3, F=11008)
    D, F, NH = 4096, 11008, 4096
    f = tr.layer_train_flops(c, B, T)
    assert f["mlp"] == pytest.approx(18 * B * T * D * F)
    assert f["qkvo"] == pytest.approx(24 * B * T * D * NH)
    assert f["attention"] == pytest.approx(12 * B * T * T * NH)
    ungated = c.replace(gated_mlp=False)
    assert tr.layer_train_flops(ungated, B, T)["mlp"] == pytest.approx(12 * B * T * D * F)


def test_gqa_params_formula():            # spec: 2DH(N+K) for QKVO under GQA
    c = models.LLAMA3_70B
    p = c.params_by_part()
    attn = sum(p[k] for k in ("attn_q", "attn_k", "attn_v", "attn_o"))
    assert attn == c.n_layers * 2 * c.d_model * c.d_head * (c.n_heads + c.n_kv_heads)


def test_moe_active_and_flops():          # Mixtral: 46.7B total, 12.9B active; 6·P_active
    c = models.get("mixtral")
    total, active = tr.moe_params(c)
    assert total == 46_702_792_704
    assert active == pytest.approx(12.88e9, rel=2e-3)
    assert tr.train_flops(c, 1e6, include_attention=False) == pytest.approx(
        6e6 * c.matmul_params(active=True))
    assert c.matmul_params(active=True) < c.matmul_params(active=False)


def test_deepseek_active():               # DeepSeek-V3: 37B activated (paper)
    c = models.get("DeepSeek-V3")
    assert c.active_params() == pytest.approx(37e9, rel=0.03)
    assert c.kv_elems_per_token() == 61 * (512 + 64)


def test_training_memory_parts():
    c = models.LLAMA3_8B
    m = c.training_memory(1e6, 4096, optimizer="adam", remat="block")
    P = c.params()
    assert m.params == 2 * P and m.grads == 2 * P and m.optimizer == 8 * P
    assert m.activations == pytest.approx(2 * 1e6 * 4096 * 32)
    assert m.total == pytest.approx(12 * P + m.activations)
    assert c.training_memory(1e6, remat="none").activations == pytest.approx(20 * m.activations)
    assert c.training_memory(1e6, remat="dots").activations == pytest.approx(7 * m.activations)
    inf = c.inference_memory(4, 8192, kv_dtype="int8")
    assert inf.kv_cache == 4 * 8192 * 65_536 and inf.params == 2 * P   # int8: 1 B per entry


def test_attention_and_mlp_time():
    c = models.LLAMA3_70B
    # decode attention is memory-bound: time = bytes / W
    t = tr.attention_time(c, 1, 1, 8192, "v5e")
    assert t == pytest.approx(tr.attention_bytes(c, 1, 1, 8192) / 8.2e11)
    # prefill at long T is compute-bound
    T = 32768
    assert tr.attention_time(c, 1, T, T, "v5e") == pytest.approx(4 * T * T * 64 * 128 / 1.97e14)
    assert tr.mlp_time(c, 1, "v5e") == pytest.approx(2 * (3 * 8192 * 28672 + 2 * 8192) / 8.2e11)


# ---- properties ---------------------------------------------------------------------------

dims = st.sampled_from([64, 128, 256, 512, 1024])


@settings(max_examples=60, deadline=None)
@given(D=dims, L=st.integers(1, 40), heads=st.sampled_from([1, 2, 4, 8]),
       kdiv=st.sampled_from([1, 2, 4, 8]), F=st.integers(1, 4096), V=st.integers(1, 50000))
def test_params_grow_with_layers_and_width(D, L, heads, kdiv, F, V):
    K = max(1, heads // kdiv)
    c = TC(d_model=D, n_layers=L, n_heads=heads, n_kv_heads=K, d_ff=F, vocab=V)
    assert c.replace(n_layers=L + 1).params() > c.params()
    assert c.replace(d_ff=F + 1).params() > c.params()
    assert c.replace(d_model=2 * D, d_head=c.d_head).params() > c.params()
    assert sum(c.params_by_part().values()) == c.params()
    assert c.active_params() == c.params()


@settings(max_examples=60, deadline=None)
@given(L=st.integers(1, 100), N=st.sampled_from([8, 16, 32, 64]), H=st.sampled_from([64, 128]),
       g=st.sampled_from([1, 2, 4, 8]))
def test_gqa_never_increases_kv(L, N, H, g):
    mh = TC(d_model=N * H, n_layers=L, n_heads=N, n_kv_heads=N, d_ff=128, vocab=10)
    gq = mh.replace(n_kv_heads=N // g)
    assert gq.kv_bytes_per_token() <= mh.kv_bytes_per_token()
    assert gq.kv_bytes_per_token() * g == mh.kv_bytes_per_token()


@settings(max_examples=40, deadline=None)
@given(E=st.integers(2, 64), k=st.integers(1, 8))
def test_moe_total_ge_active(E, k):
    k = min(k, E)
    c = TC(d_model=256, n_layers=4, n_heads=4, n_kv_heads=4, d_ff=512, vocab=100,
           n_experts=E, top_k=k)
    assert c.params() >= c.active_params()
    assert (c.params() == c.active_params()) == (k == E)


# ---- bad input ----------------------------------------------------------------------------

@pytest.mark.parametrize("kw,field", [
    (dict(n_heads=3), "n_heads"),               # does not divide d_model
    (dict(n_kv_heads=3), "n_kv_heads"),         # does not divide n_heads
    (dict(n_experts=4, top_k=5), "top_k"),
    (dict(n_layers=0), "n_layers"),
    (dict(d_model=-1), "d_model"),
    (dict(n_shared_experts=1), "n_shared_experts"),
    (dict(q_lora_rank=8), "kv_lora_rank"),
])
def test_bad_config(kw, field):
    base = dict(d_model=512, n_layers=2, n_heads=8, n_kv_heads=4, d_ff=1024, vocab=100)
    base.update(kw)
    with pytest.raises(ValueError, match=field):
        TC(**base)


def test_bad_types_and_values():
    with pytest.raises(TypeError, match="n_layers"):
        TC(d_model=512, n_layers=2.5, n_heads=8, n_kv_heads=8, d_ff=1, vocab=1)
    with pytest.raises(TypeError, match="gated_mlp"):
        TC(d_model=512, n_layers=2, n_heads=8, n_kv_heads=8, d_ff=1, vocab=1, gated_mlp="yes")
    c = models.LLAMA3_8B
    with pytest.raises(ValueError, match="seq_len"):
        c.flops_per_token(0)
    with pytest.raises(ValueError, match="dtype"):
        c.kv_bytes_per_token("bf17")
    with pytest.raises(ValueError, match="remat"):
        c.training_memory(1e6, remat="sometimes")
    with pytest.raises(ValueError, match="optimizer"):
        c.training_memory(1e6, optimizer="lion")
    with pytest.raises(ValueError, match="seq_len"):
        tr.train_flops(c, 1e6)
    with pytest.raises(ValueError, match="cfg="):
        tr.remat_flops_multiplier("dots")
    with pytest.raises(ValueError, match="einsum"):
        tr.contraction_flops("ij,jk", {"i": 1})
    with pytest.raises(KeyError, match="k"):
        tr.contraction_flops("ij,jk->ik", {"i": 1, "j": 2})
    with pytest.raises(ValueError, match="unknown TransformerConfig field"):
        c.replace(d_mdl=1)
    with pytest.raises(TypeError, match="cfg"):
        tr.param_breakdown(42)


# ---- widgets (scaling_lib.widgets.transformer) ------------------------------------------------

def test_widget_draws_every_preset_quickly():
    import matplotlib
    matplotlib.use("Agg")
    from scaling_lib import plots
    from scaling_lib.widgets import time_update
    from scaling_lib.widgets import transformer as wt
    plots.set_style()
    for name in models.names():
        c = models.get(name)
        cfg = wt.draw_accountant(name, c.d_model, c.d_ff, c.n_layers, c.n_heads, c.n_kv_heads,
                                 c.d_head, c.vocab, c.gated_mlp, c.tied_embeddings, c.n_experts,
                                 c.top_k, show=False)
        assert cfg.params() == c.params()          # sliders at the preset's values = the preset
        import matplotlib.pyplot as plt
        plt.close("all")
    # budget is 100 ms on an idle machine (measured 60-85 ms); 300 ms guards regressions on a loaded box
    assert time_update(wt.draw_accountant, show=False) < 0.3
    assert time_update(wt.draw_remat, show=False) < 0.3
    with pytest.raises(ValueError, match="n_kv_heads"):
        wt.build_config("LLaMA-3-8B", 4096, 14336, 32, 32, 7, 128, 128256, True, False, 1, 1)
    assert time_update(wt.draw_context, show=False) < 0.3
    t_att, t_mlp = wt.draw_context("TPU v5e", 8192, 8, "prefill", 65536, show=False)
    assert t_att / t_mlp == pytest.approx(4 * 65536 / (6 * 4 * 8192))   # both compute-bound
    with pytest.raises(ValueError, match="phase"):
        wt.draw_context(phase="train", show=False)
    steps = wt.context_steps(["LLaMA-3-8B"], [1024, 2048])
    assert steps[0][0] == "LLaMA-3-8B" and len(steps[0][1]) == 4   # router trace dropped (dense)
