"""Chapter 6 exercise registry: each expected value equals spec 06's corrected answer (CANON §4)."""
import numpy as np
import pytest

from scaling_lib.exercises import for_chapter, get

NUMERIC = [
    ("6.1", 7.06e10, 0.002, "P6.1 7.06e10"),
    ("6.2", [4.2e11, 0.92e-3], 0.01, "P6.2 4.2e11 FLOPs, 0.92 ms"),
    ("6.3", [6.3e24, 435], 0.01, "P6.3 6.3e24 / 435 years (CANON 6.35e24 with 70.55e9)"),
    ("6.4", 44, 0.02, "P6.4 ≈ 44 days (CANON 44.7)"),
    ("6.5", [21.7e12, 226, 1750], 0.015, "P6.5 21.7 TB, 226 chips, ≈1,750 days"),
    ("6.6", 2.4e9, 0.01, "P6.6 2.4 GB/chip"),
    ("6.6b", 7.1e9, 0.01, "P6.6 12 ckpts ≈ 7.1 GB"),
    ("6.7b", 1024, 0, "P6.7 1024 sequences"),
    ("6.8", [468, 850], 0.002, "P6.8"),
    ("6.9", [453.6, 1618], 0.002, "P6.9"),
    ("6.10", [117, 0.51], 0.01, "P6.10"),
    ("6.10c", 10.0, 0.2, "P6.10 ≈ 9–11 days (accept 8–12)"),
    ("6.11", [4.06e11, 2.44e12, 3.65e25], 0.005, "P6.11"),
    ("6.12", 32, 0.01, "P6.12 ≈ 32 days"),
    ("6.12b", 244, 0.002, "P6.12 244 tokens/chip"),
    ("6.13", [8.03e9, 7.2e23, 5.1], 0.01, "P6.13"),
    ("6.14", [40e6, 4.6e6, 230e6], 0.015, "P6.14"),
]


@pytest.mark.parametrize("ex_id,answer,rtol,ref", NUMERIC)
def test_numeric_answers(ex_id, answer, rtol, ref):
    np.testing.assert_allclose(get(ex_id).reference(), answer, rtol=rtol, err_msg=ref)


@pytest.mark.parametrize("ex_id,answer", [("6.7", "B"), ("6.8b", "B"), ("6.10b", "B")])
def test_choices(ex_id, answer):
    assert get(ex_id).reference() == answer


def test_param_count_function():
    f = get("6.1b").expected
    assert f(L=80, D=8192, F=28672, N=64, K=8, H=128, V=128256) == 70_553_706_496
    assert f(L=126, D=16384, F=53248, N=128, K=8, H=128, V=128256) == 405_853_388_800


def test_registry_complete():
    ids = {e.id for e in for_chapter(6)}
    for n in range(1, 15):
        assert f"6.{n}" in ids, n
