"""scaling_lib.chip_internals: spec 02 G1-G8, G17 (MXU, VPU, padding, systolic array, pipelining)
and spec 12 F1-F4, F7 (CUDA cores, vector FLOPs, Tensor-Core FLOPs/cycle, occupancy)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scaling_lib import chip_internals as ci


def test_mxu_and_peaks_g1_g3():
    assert ci.mxu_flops_per_cycle(128) == 32768
    assert ci.mxu_flops_per_cycle(256) == 4 * 32768                      # G4
    assert ci.chip_peak_flops(1, 4, 128, 1.5e9) == pytest.approx(1.97e14, rel=0.002)
    assert ci.chip_peak_flops(2, 4, 128, 1.75e9) == pytest.approx(4.59e14, rel=0.001)
    assert ci.vpu_peak_flops(1, 4, 1.75e9) == pytest.approx(7.2e12, rel=0.01)   # G6
    with pytest.raises(TypeError):
        ci.mxu_flops_per_cycle(128.0)
    with pytest.raises(ValueError):
        ci.chip_peak_flops(0, 4, 128, 1e9)


def test_padding_g5():
    assert ci.mxu_efficiency(129) == pytest.approx(129 / 256)
    assert ci.mxu_efficiency(256) == 1.0
    assert ci.pad_to(129) == 256
    np.testing.assert_allclose(ci.mxu_efficiency(np.array([128, 192]), 256), [0.5, 0.75])


def test_pcie_intensity_g11():
    assert ci.pcie_matmul_intensity(1e12, 8192) == pytest.approx(0.8 * 8192, rel=1e-3)


def test_decode_floor_p2_7():
    assert ci.decode_latency_floor(200e9, 2, 32, "v4p") == pytest.approx(1.04e-2, rel=0.01)


def test_gpu_f1_f4():
    assert ci.cuda_cores("H100") == 16896 and ci.cuda_cores("B200") == 18944
    assert ci.cuda_cores("V100") == 5120 and ci.cuda_cores("A100") == 6912
    assert ci.vector_flops("H100", 1.59e9) == pytest.approx(26.9e12, rel=0.002)
    assert ci.vector_flops("H100") == pytest.approx(33.5e12, rel=0.002)
    assert ci.vector_flops("H100", fma=True) == pytest.approx(66.9e12, rel=0.002)
    assert ci.tc_flops_per_cycle("H100", 1.76e9) == pytest.approx(1064, rel=0.001)
    assert ci.resident_warps(256) == 8 and ci.resident_warps(32) == 64
    with pytest.raises(ValueError, match="256"):
        ci.resident_warps(300)
    with pytest.raises(ValueError, match="not a GPU"):
        ci.cuda_cores("v5e")
    with pytest.raises(ValueError, match="clock"):
        ci.vector_flops("B200")


def test_elementwise_f7():
    assert ci.elementwise_time(2**30, "H100") == pytest.approx(3.84e-3, rel=0.005)
    assert ci.elementwise_time(65536, "H100") == pytest.approx(0.23e-6, rel=0.03)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 6), s=st.integers(1, 5), n=st.integers(1, 5))
def test_systolic_matches_matmul(m, s, n):
    rng = np.random.default_rng(m * 100 + s * 10 + n)
    X, W = rng.normal(size=(m, s)), rng.normal(size=(s, n))
    tr = ci.systolic_matmul(X, W)
    np.testing.assert_allclose(tr.out, X @ W, atol=1e-12)
    assert tr.n_cycles == m + s + n - 2
    assert tr.active.sum() == m * s * n            # every MAC done exactly once


def test_systolic_bad_shapes():
    with pytest.raises(ValueError, match="matching"):
        ci.systolic_matmul(np.ones((2, 3)), np.ones((4, 2)))


def test_pipeline_bounds_g17():
    for tl, tc, ts in ((1, 2, 1), (2, 1, 2), (1, 1, 1)):
        t = ci.pipeline_time(8, tl, tc, ts)
        assert max(8 * tl, 8 * tc, 8 * ts) <= t <= 8 * (tl + tc + ts)
    assert ci.pipeline_time(8, 1, 2, 1) == 18           # 1 + 8·2 + 1
    ev = ci.pipeline_schedule(4, 1, 1, 1, n_buffers=1)
    assert len(ev) == 12
