"""scaling_lib.kv_decode: cached decoding equals recomputation (issue 7), speculative decoding
keeps the target's output (spec 07 demo 8), the prediction bridge to inference (demo 4)."""
import numpy as np
import pytest

from scaling_lib import devices

devices.setup(8)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from scaling_lib import hardware, inference, jax_model, kv_decode  # noqa: E402

CFG = kv_decode.tiny_config(d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=128, vocab=97)
N_NEW = 12
PREFILL9 = jax.jit(lambda p, t: jax_model.prefill(p, t, CFG, 9))
STEP = jax.jit(lambda p, t, c, pos: jax_model.decode_step(p, t, CFG, c, pos))


@pytest.fixture(scope="module")
def params():
    return jax_model.init_params(CFG, jax.random.PRNGKey(0))


@pytest.fixture(scope="module")
def prompt():
    return jnp.asarray(np.random.default_rng(1).integers(0, 97, (3, 5)), jnp.int32)


@pytest.fixture(scope="module")
def both(params, prompt):
    return (kv_decode.generate_naive(params, prompt, CFG, N_NEW),
            kv_decode.generate_cached(params, prompt, CFG, N_NEW))


def test_cached_equals_recompute(both):
    (t_a, l_a), (t_b, l_b) = both
    assert l_a.shape == l_b.shape == (3, N_NEW, 97)
    np.testing.assert_allclose(np.asarray(l_b), np.asarray(l_a), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(np.asarray(t_a), np.asarray(t_b))


def test_cache_detects_a_broken_cache(params, prompt, both):
    # a cache that forgets the prompt gives different logits: the equivalence test can fail
    (_, l_a), _ = both
    _, cache = PREFILL9(params, prompt)
    cache = {"k": jnp.zeros_like(cache["k"]), "v": jnp.zeros_like(cache["v"])}
    tok = np.argmax(l_a[:, 0], axis=-1).astype(np.int32)
    lg, _ = STEP(params, tok, cache, 5)
    assert float(np.max(np.abs(np.asarray(lg) - l_a[:, 1]))) > 1e-3


def test_speculative_matches_target(params, prompt, both):
    _, (t_b, _) = both
    p = prompt[:1]
    target = np.asarray(t_b[0])
    same = kv_decode.generate_speculative(params, params, p, CFG, N_NEW, gamma=3)
    np.testing.assert_array_equal(same["tokens"], target)
    assert same["accept_rate"] == 1.0 and same["passes"] == 3          # 4 tokens per pass
    noisy = kv_decode.generate_speculative(params, kv_decode.perturbed_params(params, 0.5), p,
                                           CFG, N_NEW, gamma=3)
    np.testing.assert_array_equal(noisy["tokens"], target)
    assert noisy["passes"] >= same["passes"]


def test_sweep_and_prediction(params):
    rows = kv_decode.decode_step_sweep(params, CFG, [1, 4], 16, n_iter=2)
    assert [r["batch"] for r in rows] == [1, 4] and all(r["t"] > 0 for r in rows)
    chip = hardware.measured_cpu_chip(1e11, 1e10)
    pred = kv_decode.predicted_step_times(CFG, [1, 4, 1024], 16, chip)
    m = kv_decode.served_from_config(CFG)
    assert m.params == CFG.matmul_params()
    # weight-bound at small batch: flat; compute-bound at large batch: grows ∝ B
    assert pred["total_s"][1] < 1.5 * pred["total_s"][0]
    assert pred["flops_s"][2] > pred["param_s"][2]
    st = inference.decode_step_time(m, 4, 16, 1, chip, "f32", "f32", check_memory=False)
    assert pred["total_s"][1] == pytest.approx(float(st.total_s))


def test_bad_input(params):
    with pytest.raises(ValueError, match="prompt"):
        kv_decode.generate_cached(params, jnp.zeros((3,), jnp.int32), CFG, 2)
    with pytest.raises(ValueError, match="token ids"):
        kv_decode.generate_naive(params, jnp.full((1, 2), 500, jnp.int32), CFG, 2)
    with pytest.raises(ValueError, match="n_new"):
        kv_decode.generate_cached(params, jnp.zeros((1, 2), jnp.int32), CFG, 0)
    with pytest.raises(ValueError, match="batch 1"):
        kv_decode.generate_speculative(params, params, jnp.zeros((2, 2), jnp.int32), CFG, 4, 2)
    with pytest.raises(ValueError, match="scale"):
        kv_decode.perturbed_params(params, -1)


def test_unstacked_step_is_the_same_model(params, prompt):
    _, cache = PREFILL9(params, prompt)
    tok = jnp.asarray([1, 2, 3], jnp.int32)
    ref, ref_cache = STEP(params, tok, cache, 5)
    p = kv_decode.unstack_params(params, CFG)
    ks = [cache["k"][i] for i in range(CFG.n_layers)]
    vs = [cache["v"][i] for i in range(CFG.n_layers)]
    lg, nk, _ = kv_decode.decode_step_fn(CFG)(p, ks, vs, tok, jnp.asarray(5))
    np.testing.assert_allclose(np.asarray(lg), np.asarray(ref), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(nk[1]), np.asarray(ref_cache["k"][1]), atol=1e-6)


def test_sharded_decode_block_matches_and_uses_two_all_to_alls():
    from scaling_lib import hlo
    mesh = devices.mesh((2, 4), ("batch", "model"), explicit=False)
    p = kv_decode.decode_block_params(B=8, S=32, D=128, F=256, N=16, K=4, H=16)
    ref = np.asarray(jax.jit(kv_decode.decode_block)(p))
    out, fn, args = kv_decode.sharded_decode_block(mesh, p)
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-4, atol=1e-4)
    with jax.set_mesh(mesh):
        counts = hlo.count_collectives(fn.lower(*args).compile().as_text())
    assert counts.get("all-to-all") == 2 and counts.get("all-reduce") == 2
    assert "all-gather" not in counts                     # the KV cache never moves
    with pytest.raises(ValueError, match="need K"):
        kv_decode.sharded_decode_block(mesh, kv_decode.decode_block_params(8, 4, 32, 64, 6, 3, 8))


def test_calibrated_step_times():
    from scaling_lib import efficiency, roofline
    cfg = kv_decode.tiny_config(d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=256, vocab=128)
    fl, by = kv_decode.step_kernels(cfg, 4, 15, "f32")
    # per layer: Q, K, V, O, gate, up, down, two attention contractions, two cache copies; + unembedding
    assert fl.size == by.size == 2 * 11 + 1
    assert fl[0] == roofline.matmul_flops(4, 64, 4 * 16) and fl[-1] == roofline.matmul_flops(4, 64, 128)
    cache = 4 * 16 * 2 * 16 * 4            # B · (S + 1) · K · H · 4 bytes
    assert by[9] == 2 * cache and fl[9] == 0
    fit = efficiency.CpuRoofline(1e11, 1e10, 2e-5, 1.0, 8, 0.0)
    pr = kv_decode.calibrated_step_times(cfg, [1, 4, 4096], 15, fit, dtype="f32")
    t = fit.overhead + np.maximum(fl / fit.peak, by / fit.bandwidth).sum()
    assert pr["total_s"][1] == pytest.approx(t)
    assert pr["total_s"][1] - pr["bound_s"][1] == pytest.approx(2e-5)   # one overhead per step
    assert pr["critical_batch"] == pytest.approx(1e11 * 4 / (2 * 1e10))
    # no overlap at all: each kernel pays both clocks
    none = kv_decode.calibrated_step_times(cfg, [4], 15, efficiency.CpuRoofline(1e11, 1e10, 0.0, 0.0, 8, 0.0))
    assert none["total_s"][0] == pytest.approx((fl / 1e11 + by / 1e10).sum())
    # far above B_crit the step grows with B, below it is nearly flat
    assert pr["total_s"][2] > 100 * pr["total_s"][1] and pr["total_s"][1] < 2 * pr["total_s"][0]
    with pytest.raises(TypeError, match="CpuRoofline"):
        kv_decode.calibrated_step_times(cfg, [1], 15, hardware.get("TPU v5e"))
    with pytest.raises(ValueError, match="batch"):
        kv_decode.calibrated_step_times(cfg, [0], 15, fit)
