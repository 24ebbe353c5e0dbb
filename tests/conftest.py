"""Shared test helpers."""
import math

import pytest


def assert_close(got, expected, rtol, ref=""):
    """Relative comparison whose failure message shows both numbers and the spec reference."""
    assert got is not None, f"{ref}: got None"
    ok = math.isclose(float(got), float(expected), rel_tol=rtol)
    assert ok, f"{ref}: got {float(got):.6g}, expected {float(expected):.6g} (rtol {rtol})"


@pytest.fixture
def close():
    return assert_close
