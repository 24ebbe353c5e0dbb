"""roofline: pinned to the numbers of spec 01 (corrected values per CANON §4)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scaling_lib import hardware, roofline

V5E = "TPU v5e"

# (spec reference, quantity, computed, expected, rtol)
SPEC_NUMBERS = [
    ("01 P1.1 H100", lambda: roofline.t_math(1e12, hardware.peak_flops("H100")), 1.01e-3, 0.01),
    ("01 P1.1 v6e (9.2e14, CANON D4)", lambda: roofline.t_math(1e12, hardware.peak_flops("v6e")), 1.09e-3, 0.01),
    ("01 P1.2 v5e critical intensity", lambda: hardware.critical_intensity(V5E), 240, 0.005),
    ("01 table v5e int8", lambda: hardware.critical_intensity(V5E, "int8"), 480, 0.005),
    ("01 table v5p", lambda: hardware.critical_intensity("v5p"), 164, 0.005),
    ("01 table v6e", lambda: hardware.critical_intensity("v6e"), 575, 0.005),
    ("01 table v4p", lambda: hardware.critical_intensity("v4p"), 229, 0.005),
    ("01 table TPU7x", lambda: hardware.critical_intensity("TPU7x"), 311, 0.005),
    ("01 table H100", lambda: hardware.critical_intensity("H100"), 295, 0.005),
    ("01 table H200", lambda: hardware.critical_intensity("H200"), 206, 0.005),
    ("01 P1.3 dot limit", lambda: roofline.dot_intensity(10**9), 0.5, 1e-6),
    ("01 P1.4 B_crit", lambda: roofline.critical_batch(V5E), 240, 0.005),
    ("01 P1.5 D threshold", lambda: 2 * hardware.peak_flops(V5E) / hardware.get(V5E).ici_link_bw_1way, 8756, 0.001),
    ("01 P1.5 T_math", lambda: roofline.sharded_contraction_time(512, 8192, 32768, V5E).t_math, 6.98e-4, 0.005),
    ("01 P1.5 T_comms", lambda: roofline.sharded_contraction_time(512, 8192, 32768, V5E).t_comms, 7.46e-4, 0.005),
    ("01 P1.6 int8 rule", lambda: roofline.critical_batch(V5E, w="int8", compute="int8"), 240, 0.005),
    ("01 P1.6 T_math", lambda: roofline.matmul_time(512, 4096, 16384, V5E, "int8", "int8", "int8", "int8").t_math, 1.74e-4, 0.005),
    ("01 P1.6 T_comms", lambda: roofline.matmul_time(512, 4096, 16384, V5E, "int8", "int8", "int8", "int8").t_comms, 9.46e-5, 0.005),
    ("01 P1.6 upper", lambda: roofline.matmul_time(512, 4096, 16384, V5E, "int8", "int8", "int8", "int8").t_upper, 2.69e-4, 0.005),
    ("01 P1.6 B*", lambda: roofline.critical_batch(V5E, w="int8", compute="int8", x="int8", out="int8", D=4096, F=16384), 259, 0.005),
    ("01 P1.7 weight-only int8", lambda: roofline.critical_batch(V5E, w="int8"), 120, 0.005),
    ("01 P1.8 D=F=4096", lambda: roofline.critical_batch(V5E, w="int8", D=4096, F=4096), 136, 0.005),
    ("01 P1.8 D=F=1024", lambda: roofline.critical_batch(V5E, w="int8", D=1024, F=1024), 226, 0.005),
    ("01 P1.8 (512, 2048)", lambda: roofline.critical_batch(V5E, w="int8", D=512, F=2048), 291, 0.01),
    ("01 P1.8 (4096, 16384)", lambda: roofline.critical_batch(V5E, w="int8", D=4096, F=16384), 130, 0.01),
    ("01 P1.9 per-example", lambda: roofline.batched_weight_matmul_intensity(512, 4096, 16384), 1.9994, 1e-4),
    ("01 P1.10 H100", lambda: roofline.critical_batch("H100"), 295, 0.005),
    ("01 F22 square N/3", lambda: roofline.matmul_intensity(3000, 3000, 3000), 1000, 1e-9),
    ("01 VMEM critical ~11", lambda: hardware.critical_intensity(V5E, link="vmem"), 10.9, 0.01),
]


@pytest.mark.parametrize("ref, fn, expected, rtol", SPEC_NUMBERS, ids=[s[0] for s in SPEC_NUMBERS])
def test_spec_numbers(ref, fn, expected, rtol, close):
    close(fn(), expected, rtol, ref)


def test_never_compute_bound_small_matrix():
    # (256, 256) int8 weights: max intensity 128 < 240 -> never reaches the roof (spec 01 P1.8)
    assert math.isinf(roofline.critical_batch(V5E, w="int8", D=256, F=256))


def test_matmul_counts():
    assert roofline.matmul_flops(2, 3, 4) == 48
    assert roofline.matmul_flops(2, 3, 4, exact=True) == 2 * 4 * 5
    assert roofline.matmul_bytes(2, 3, 4) == 2 * (6 + 12 + 8)
    assert roofline.matmul_bytes(2, 3, 4, w="int8") == 2 * 6 + 12 + 2 * 8


def test_result_parts_and_bound():
    r = roofline.matmul_time(1024, 8192, 32768, V5E)
    assert r.bound == "compute" and r.bottleneck == "计算受限"
    assert r.t_lower == max(r.t_math, r.t_comms) and r.t_upper == r.t_math + r.t_comms
    d = r.as_dict()
    assert set(d) >= {"t_math_s", "t_comms_s", "t_lower_s", "t_upper_s", "bound"}
    assert "计算受限" in str(r) and "0x" not in r._repr_html_()


def test_vectorised_sweeps():
    B = np.arange(1, 1025)
    y = roofline.attainable_flops_vs_batch(B, 4096, 4096, V5E, w="int8")
    assert y.shape == B.shape and np.all(np.diff(y) >= -1e-6 * y[:-1])
    assert y[-1] == pytest.approx(hardware.peak_flops(V5E))


@pytest.mark.parametrize("call, exc", [
    (lambda: roofline.matmul_flops(0, 1, 1), ValueError),
    (lambda: roofline.matmul_flops(-3, 1, 1), ValueError),
    (lambda: roofline.matmul_flops("8", 1, 1), TypeError),
    (lambda: roofline.matmul_bytes(1, 1, 1, x="bf17"), ValueError),
    (lambda: roofline.matmul_time(1, 1, 1, "v5x"), KeyError),
    (lambda: roofline.t_comms(1, 0), ValueError),
    (lambda: roofline.critical_batch(V5E, D=128), ValueError),
    (lambda: roofline.realistic_time(1.0, efficiency=1.5), ValueError),
    (lambda: roofline.op_point("conv", B=1), ValueError),
    (lambda: roofline.op_point("matmul", B=1), ValueError),
    (lambda: roofline.roofline(1, 1, V5E, dtype="fp8"), ValueError),
])
def test_bad_input(call, exc):
    with pytest.raises(exc):
        call()


def test_unknown_chip_suggests_names():
    with pytest.raises(KeyError, match="TPU v5e"):
        hardware.get("v5x")


pos = st.floats(min_value=1.0, max_value=1e18, allow_nan=False, allow_infinity=False)


@given(flops=pos, nbytes=pos, k=st.floats(min_value=1.0, max_value=1e3))
def test_time_linear_in_flops_and_bytes(flops, nbytes, k):
    c, w = 1.97e14, 8.2e11
    assert math.isclose(roofline.t_math(k * flops, c), k * roofline.t_math(flops, c), rel_tol=1e-9)
    assert math.isclose(roofline.t_comms(k * nbytes, w), k * roofline.t_comms(nbytes, w), rel_tol=1e-9)


@given(B=st.integers(1, 10**5), D=st.integers(1, 10**5), F=st.integers(1, 10**5),
       f=st.floats(min_value=1.0, max_value=100.0))
@settings(max_examples=60)
def test_more_bandwidth_never_slower(B, D, F, f):
    chip = hardware.get(V5E)
    faster = hardware.replace(chip, hbm_bw=chip.hbm_bw * f)
    a, b = roofline.matmul_time(B, D, F, chip), roofline.matmul_time(B, D, F, faster)
    assert b.t_lower <= a.t_lower * (1 + 1e-12) and b.t_upper <= a.t_upper * (1 + 1e-12)
    assert a.t_lower <= a.t_upper <= 2 * a.t_lower * (1 + 1e-12)


@given(i=st.floats(min_value=1e-3, max_value=1e6))
def test_roofline_curve_bounds(i):
    y = roofline.attainable_flops(i, 1e14, 1e12)
    assert y <= 1e14 and y <= i * 1e12 * (1 + 1e-12)
