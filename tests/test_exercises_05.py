"""Chapter 5 exercise registry: each expected value equals spec 05's corrected answer (CANON §4)."""
import math

import numpy as np
import pytest

from scaling_lib.exercises import for_chapter, get

# (id, spec answer, rel tol, spec ref)
NUMERIC = [
    ("5.1", 13.0e9, 0.005, "P5.1 ≈ 13.0e9"),
    ("5.2", [130e9, 4.2e13], 0.01, "P5.2 130 GB / 42 TB"),
    ("5.3b", 1.95e9, 0.01, "P5.3(b) ≈ 1.95 GB/chip"),
    ("5.3d", 0.125, 0.01, "P5.3(c) 0.125 s"),
    ("5.3e", 1333, 0.001, "P5.3(c) X_opt ≈ 1333"),
    ("5.4", [0.145, 0.166, 0.415], 0.01, "P5.4 FSDP comms step / 1024 chips / 10M"),
    ("5.5", 9.6e9, 1e-9, "P5.5 96e9/10"),
    ("5.6", [2550, 850], 1e-3, "P5.6 (CANON 2550)"),
    ("5.6b", 7.6e6, 0.005, "P5.6 whole pod ≈ 7.6M"),
    ("5.7", 47_000, 0.005, "P5.7 ≈ 47,000 chips"),
    ("5.8", 17.0, 0.01, "P5.8 ≈ 17 days (CANON: 17.0 with 70.55e9)"),
    ("5.9", 11.2, 0.005, "P5.9 corrected F = 28,672 (CANON)"),
    ("5.11", 13.7, 0.005, "P5.11 X_opt 13.7"),
    ("5.12b", 397, 0.002, "P5.12 ≈ 397"),
    ("5.13", 1.6e6, 0.02, "P5.13 ≈ 1.6e6 (book's 1.6e10 is a typo)"),
    ("5.14", 2350, 0.005, "P5.14(a) ≈ 2,350 chips"),
    ("5.14b", 1414, 0.001, "P5.14(c) X_opt 1414 (CANON)"),
    ("5.14c", 5210 / 4804, 0.002, "P5.14(c) summed 5210 vs 4804 (CANON)"),
    ("5.14d", 73_440, 1e-6, "P5.14(d) 7.34e4 (CANON)"),
    ("5.14e", 1.8, 0.02, "P5.14(e) ≈ 1.8 days at 100% MFU"),
    ("5.19", 0.40, 0.01, "P5.19 ≈ 0.40"),
    ("5.19b", 3.2, 0.01, "P5.19 largest E ≈ 3"),
    ("5.20", [7 / 39, 7 / 15], 1e-9, "P5.20 18% / 47%"),
]


@pytest.mark.parametrize("ex_id,answer,rtol,ref", NUMERIC)
def test_numeric_answers(ex_id, answer, rtol, ref):
    np.testing.assert_allclose(get(ex_id).reference(), answer, rtol=rtol, err_msg=ref)


@pytest.mark.parametrize("ex_id,answer", [("5.3", "B"), ("5.3c", "B"), ("5.9b", "B"), ("5.10", "B")])
def test_choices(ex_id, answer):       # P5.3(a) no, P5.3(b) comms-bound, P5.9 16-way not ok, P5.10 no
    assert get(ex_id).reference() == answer


def test_function_exercises():
    assert get("5.12").expected(d_ff=32768, chip="v5p", mx_my=2) == pytest.approx(396.88, rel=1e-4)
    got = [get("5.15").expected(X, 4096 // X, m, 1, 32768, "v5p")
           for X, m in ((4096, 3), (2048, 3), (1024, 3), (512, 3))]
    np.testing.assert_allclose(got, [3.48e6, 1.74e6, 870e3, 435e3], rtol=3e-3)   # P5.15
    assert get("5.17").expected("tp", 100, 8, 32, 1, 4) == [4 * 100 * 8, 4 * 100 * 8]
    assert get("5.17").expected("fsdp", 100, 8, 32, 4, 1) == [4 * 8 * 32, 8 * 8 * 32]


def test_registry_complete():
    ids = {e.id for e in for_chapter(5)}
    for n in list(range(1, 16)) + [17, 19, 20]:          # P5.16 and P5.18 are 思考题
        assert f"5.{n}" in ids, n
    for e in for_chapter(5):
        if e.kind == "function":
            rng = np.random.default_rng(0)
            for _ in range(5):
                v = e.expected(**e.sampler(rng))
                assert all(math.isfinite(x) for x in np.atleast_1d(v))
