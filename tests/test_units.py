import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from scaling_lib import units


@pytest.mark.parametrize("s, text", [
    (1.01e-3, "1.01 ms"), (2.5e-7, "250 ns"), (7.46e-4, "746 µs"), (3.5, "3.5 s"),
    (26144.0, "7.26 小时"), (17 * 86400, "17 天"), (0, "0 s"),
])
def test_fmt_time(s, text):
    assert units.fmt_time(s) == text


@pytest.mark.parametrize("x, text", [(1.97e14, "1.97e14"), (8.2e11, "8.2e11"), (240.24, "240"),
                                     (4.5e10, "4.5e10"), (0.5, "0.5"), (1e-5, "1e-5")])
def test_fmt_num_e_notation_without_plus(x, text):
    assert units.fmt_num(x) == text


def test_fmt_bytes_decimal_and_binary():
    assert units.fmt_bytes(16e9) == "16 GB"
    assert units.fmt_bytes(128 * units.MiB, binary=True) == "128 MiB"
    assert units.fmt_bytes(524288, binary=True) == "512 KiB"


def test_dtype_bytes_and_errors():
    assert units.dtype_bytes("bf16") == 2 and units.dtype_bytes("INT8") == 1
    assert units.dtype_bytes("int4") == 0.5
    with pytest.raises(ValueError, match="allowed"):
        units.dtype_bytes("bf17")
    with pytest.raises(TypeError):
        units.dtype_bytes(2)


@pytest.mark.parametrize("bad, exc", [("3", TypeError), (None, TypeError), (True, TypeError),
                                      (float("nan"), ValueError), (-1, ValueError), (0, ValueError)])
def test_check_positive_rejects(bad, exc):
    with pytest.raises(exc):
        units.check_positive("x", bad)


def test_check_positive_arrays():
    assert np.allclose(units.check_positive("x", [1, 2]), [1.0, 2.0])
    with pytest.raises(ValueError):
        units.check_positive("x", np.array([1, 0]))


@given(st.floats(min_value=1e-9, max_value=1e9, allow_nan=False))
def test_unit_constants_round_trip(x):
    # bytes -> GiB -> bytes, seconds -> ms -> seconds
    assert math.isclose(x * units.GiB / units.GiB, x)
    assert math.isclose((x / units.MS) * units.MS, x, rel_tol=1e-12)
    assert units.fmt_time(x).split()[0]  # formats every positive time
