"""The efficiency layer: each term against a hand computation, the parameter table, the fitter,
and chapter 1's roofline-with-overhead fit."""
import math

import numpy as np
import pytest

from scaling_lib import efficiency as eff, hardware, roofline


def test_family_of_each_chip():
    assert eff.family("H100") == "hopper" and eff.family("H800") == "hopper"
    assert eff.family("A100") == "ampere" and eff.family("v5e") == "tpu"
    assert eff.family(hardware.measured_cpu_chip(1e11, 2e10)) == "cpu"


def test_params_table_names_its_evidence_and_stays_in_range():
    p = eff.params()
    assert set(p) == set(eff.PRIORS)
    for name in p:
        info = p.info[name]
        assert info.lo <= p[name] <= info.hi, name
        assert info.what and info.evidence, name
    with pytest.raises(KeyError, match="unknown efficiency parameter"):
        p["hopper.nonsense"]
    with pytest.raises(ValueError, match="outside its range"):
        p.replace(hopper__mm_eff=1.5)


def test_tile_factor_counts_waves():
    # 132 SMs: a 4096 x 7168 output in 128 x 128 tiles is 1792 tiles = 13.6 waves; the best
    # BLOCK_N wastes under 5 %
    q = float(eff.tile_factor(4096, 7168, 132))
    assert 1.0 <= q < 1.05
    # one 64-row strip of 2112 columns cannot fill 132 SMs: the tiles are at least 64 x 64,
    # so the cost is that of 132 such tiles
    q_small = float(eff.tile_factor(64, 2112, 132))
    assert q_small == pytest.approx(132 * 64 * 64 / (64 * 2112))
    # never below 1, vectorised
    qs = eff.tile_factor(np.array([64, 128, 4096]), np.array([4096, 4096, 4096]), 132)
    assert qs.shape == (3,) and np.all(qs >= 1)


def test_mxu_padding():
    assert float(eff.mxu_factor(128, 128, 128, 128)) == 1.0
    assert float(eff.mxu_factor(129, 128, 128, 128)) == pytest.approx(256 / 129)


def test_gemm_forecast_is_above_the_bound_and_matches_a_hand_computation():
    p = eff.prior_params()
    r = eff.gemm_time(4096, 4096, 4096, "H100", par=p)
    fl = 2 * 4096 ** 3
    assert float(r.bound) == pytest.approx(fl / 9.89e14)
    q = float(eff.tile_factor(4096, 4096, 132))
    rd = 2 * 4096 * 4096 * 2 / (0.9 * 3.35e12)
    wr = 4096 * 4096 * 2 / (0.9 * 3.35e12)
    want = 3e-6 + max(fl * q / (0.70 * 9.89e14), rd) + wr
    assert float(r.forecast) == pytest.approx(want)
    assert float(r.forecast) > float(r.bound)
    # a GEMV-like shape is bandwidth bound in both
    g = eff.gemm_time(1, 8192, 8192, "H100", par=p)
    assert float(g.t_memory) > float(g.t_compute)


def test_overlap_between_max_and_sum():
    assert float(eff.overlap(3.0, 1.0, 1.0)) == 3.0
    assert float(eff.overlap(3.0, 1.0, 0.0)) == 4.0
    assert float(eff.overlap(3.0, 1.0, 0.5)) == 3.5
    with pytest.raises(ValueError, match="overlap fraction"):
        eff.overlap(1.0, 1.0, 1.5)


def test_collective_forecast_adds_latency_and_protocol_loss():
    p = eff.prior_params()
    tb = 100e-6
    ring = float(eff.collective_time("all_gather", tb, 8, "nvlink", par=p))
    assert ring == pytest.approx(tb / 0.82 + 7 * 2e-6)
    ar = float(eff.collective_time("all_reduce", tb, 8, "nvlink", "nvls", par=p))
    assert ar == pytest.approx(tb / 0.61 + 2 * 2e-6)
    with pytest.raises(ValueError, match="nvls"):
        eff.collective_time("all_gather", tb, 8, "nvlink", "nvls", par=p)
    with pytest.raises(ValueError, match="tier"):
        eff.collective_time("all_gather", tb, 8, "carrier pigeon", par=p)
    # small messages are latency bound: a 1 KiB ring all-gather is not ~0 s
    tiny = float(eff.collective_time("all_gather", 1024 * 7 / 8 / 4.5e11, 8, "nvlink", par=p))
    assert tiny > 10e-6


def test_lowlatency_alltoall():
    p = eff.prior_params()
    v = 7.3e6
    one_node = float(eff.alltoall_lowlatency_time(v, 8, 8, 5e10, par=p))
    assert one_node == pytest.approx(5e-5 + v / 1.5e11)
    many = float(eff.alltoall_lowlatency_time(v, 256, 8, 5e10, par=p))
    assert many == pytest.approx(5e-5 + v * (31 / 32) / (0.94 * 5e10) + v / 32 / 1.5e11)
    assert many > one_node


def test_attention_forecast():
    p = eff.prior_params()
    t = float(eff.attention_time(1e12, "H100", par=p, kernels=0))
    assert t == pytest.approx(1e12 / (0.67 * 9.89e14))


def test_fit_recovers_known_parameters():
    x = np.linspace(0, 1, 30)

    def resid(v):
        return v["a"] * np.exp(v["b"] * x) - 2.0 * np.exp(-1.5 * x)

    r = eff.fit(resid, {"a": 1.0, "b": 0.0}, {"a": (0.1, 10.0), "b": (-5.0, 5.0)})
    assert r.converged
    assert r["a"] == pytest.approx(2.0, rel=1e-4) and r["b"] == pytest.approx(-1.5, rel=1e-4)
    with pytest.raises(ValueError, match="lo must be < hi"):
        eff.fit(resid, {"a": 1.0}, {"a": (1.0, 1.0)})


def test_cpu_roofline_fit_recovers_a_synthetic_machine():
    peak, bw, t0 = 8e10, 2e10, 3e-5
    B = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512] * 3, dtype=float)
    D = np.repeat([128.0, 256.0, 512.0], 10)
    F = roofline.matmul_flops(B, D, D).astype(float)
    by = roofline.matmul_bytes(B, D, D, "f32", "f32", "f32").astype(float)
    rng = np.random.default_rng(0)
    T = (t0 + F / peak + by / bw) * np.exp(rng.normal(0, 0.03, F.size))   # f = 0: no overlap
    cal = np.arange(F.size) % 2 == 0
    fitted = eff.fit_cpu_roofline(F[cal], by[cal], T[cal])
    assert fitted.peak == pytest.approx(peak, rel=0.15)
    assert fitted.bandwidth == pytest.approx(bw, rel=0.15)
    assert fitted.overhead == pytest.approx(t0, rel=0.25)
    assert fitted.overlap < 0.2
    held = np.abs(T[~cal] / fitted.time(F[~cal], by[~cal]) - 1)
    assert np.median(held) < 0.05
    # the clean roofline with the same peak and bandwidth is a lower bound of the forecast
    assert np.all(fitted.bound(F, by) <= fitted.time(F, by))
    with pytest.raises(ValueError, match=">= 4 points"):
        eff.fit_cpu_roofline(F[:3], by[:3], T[:3])


def test_shipped_parameters_were_calibrated_on_the_calibration_half_only():
    from scaling_lib import data
    p = eff.params()
    used = {rid for name in p for rid in p.info[name].calibrated_on}
    assert used, "efficiency_params.json names the records it was fitted on"
    splits = {m.id: m.split for m in data.load()}
    assert all(splits[rid] == "calibrate" for rid in used)
    assert math.isclose(p["hopper.attn_eff"], p.info["hopper.attn_eff"].value)


def _fake_sweep(peak, bw, t0, f, noise, seed=0):
    """A stand-in for measure.matmul_sweep: a machine that follows the roofline with overhead,
    with multiplicative noise that only ever adds time (contention)."""
    rng = np.random.default_rng(seed)
    calls = []

    def sweep(Bs, D, F, dtype="f32", n_iter=5, stat="median"):
        calls.append((tuple(Bs), D, F, dtype, n_iter, stat))
        out = []
        for b in Bs:
            fl, by = 2.0 * b * D * F, 4.0 * (b * D + D * F + b * F)
            t = float(eff.overlap(fl / peak, by / bw, f)) + t0
            out.append({"t": t * (1 + abs(rng.normal(0, noise)))})
        return out
    return sweep, calls


def test_own_roofline_fits_one_half_and_scores_the_other():
    split = eff.own_roofline_split()
    cal = [(b, d, f) for b, d, f, c in split if c]
    held = [(b, d, f) for b, d, f, c in split if not c]
    assert len(cal) == len(held) == 15 and not set(cal) & set(held)
    # both halves span tiny (overhead-bound) and large (compute-bound) matmuls
    for half in (cal, held):
        fl = [2 * b * d * f for b, d, f in half]
        assert min(fl) < 1e7 and max(fl) > 2e8
    sweep, calls = _fake_sweep(5e10, 2e10, 1e-4, 0.5, noise=0.02)
    o = eff.own_roofline(sweep, repeats=2, n_iter=3)
    assert len(calls) == 10 and all(c[5] == "min" and c[4] == 3 for c in calls)
    assert o.fit.peak == pytest.approx(5e10, rel=0.1)
    assert o.fit.bandwidth == pytest.approx(2e10, rel=0.15)
    assert o.fit.overhead == pytest.approx(1e-4, rel=0.2)
    assert o.held_out_error < 0.03                  # the noise, not more
    # without the overhead term and the partial overlap the same peak and bandwidth miss by more
    assert o.held_out_bound_error > max(0.08, 3 * o.held_out_error)
    assert set(o.spread) == {"peak", "bandwidth", "overhead"} and o.spread["peak"] < 1.1
    assert 0.003 < o.repeat_noise < 0.03          # |N(0, 2%)| noise on both repeats
    assert o.ratio.shape == (30,) and np.all(o.predicted >= o.bound)


def test_own_roofline_errors():
    sweep, _ = _fake_sweep(5e10, 2e10, 2e-5, 0.5, noise=0.0)
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        eff.own_roofline(sweep, repeats=0)
    with pytest.raises(TypeError, match="sweep must be callable"):
        eff.own_roofline("matmul_sweep")
    with pytest.raises(ValueError, match="sweep returned 1 points for 6 batch sizes"):
        eff.own_roofline(lambda Bs, D, F, **kw: [{"t": 1.0}], repeats=1)
    with pytest.raises(ValueError, match="B must be > 0"):
        eff.own_roofline_split({(8, 8): (0, 1)})
