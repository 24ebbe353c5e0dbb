"""Chapter 4 exercise registry: each expected value equals spec 04's corrected answer."""
import math

import numpy as np
import pytest

from scaling_lib.exercises import for_chapter, get

# (id, spec answer, rel tol, spec ref)
NUMERIC = [
    ("4.1", 17.44e9, 1e-3, "P4.1(a) exact 17.44e9 (book ≈16B is rounding)"),
    ("4.1b", 0.25, 1e-9, "P4.1(b) 1/4"),
    ("4.1c", 524_288, 0, "P4.1(c) 512 KiB"),
    ("4.4b", 270.3, 1e-3, "P4.4(b) G=8 on v5e: 240·9/8 (CANON 8.2e11)"),
    ("4.5", 8192, 0, "P4.5 T = 2D, D = 4096"),
    ("4.6", 4 / 108, 1e-9, "P4.6 4T/(96D+12T) at T = D: 3.7%"),
    ("4.7", 0.216, 3e-3, "P4.7 21.6% (book 21.7%)"),
    ("4.7b", 0.165, 3e-3, "P4.7 caveat / CANON D27: SXM 1.979e15 → 16.5%"),
    ("4.9", [8.4e13, 4.2e12], 5e-3, "P4.9 84 TB / 4.2 TB"),
    ("4.8", [65_536, 36_864], 0, "P4.8 T = 8D"),
    ("4.10", 8 / 6, 1e-12, "P4.10 8/6"),
    ("4.11", 8_589_934_592, 0, "P4.11 8 GiB"),
    ("4.11b", 2**30, 0, "P4.11 [ext] GQA K=N/8 → 1 GiB"),
]


@pytest.mark.parametrize("ex_id,answer,rtol,ref", NUMERIC)
def test_numeric_answers(ex_id, answer, rtol, ref):
    got = get(ex_id).reference()
    np.testing.assert_allclose(got, answer, rtol=rtol, err_msg=ref)


def test_choice_decode_memory_bound():            # P4.4(c): decode is bandwidth-bound
    assert get("4.4c").reference() == "B"


def test_function_exercises():
    assert get("4.2").expected(B=1024, D=8192, F=4096, mesh={"X": 4, "Y": 8, "Z": 4}) == \
        [8 * 1024 * 8192 * 4096, 1024 * 8192 * 4096 / 16]                 # P4.2
    sizes = dict(i=2, j=3, k=4, l=5, m=6, n=7, o=8)
    assert get("4.3").expected("ijkl,ijmno->klmno", sizes) == 2 * math.prod(sizes.values())  # P4.3
    assert get("4.4").expected(t=1, s=10**9, g=8) == pytest.approx(8, rel=1e-6)        # P4.4(a)
    assert get("4.12").expected(N=2, P=3, M=5) == [60.0, 120.0, 180.0]                 # P4.12


def test_samplers_give_plain_inputs():
    rng = np.random.default_rng(0)
    for ex in for_chapter(4):
        if ex.kind == "function":
            kw = ex.sampler(rng)
            ex.expected(**kw)       # runs on every sampled input
            assert all(not isinstance(v, np.generic) for v in kw.values())


def test_every_spec_problem_has_an_exercise():
    ids = {e.id.rstrip("abc") for e in for_chapter(4)}
    assert ids == {f"4.{i}" for i in range(1, 13)}


def test_hints_point_at_real_mistakes():
    ex = get("4.7")
    ratio = dict(ex.hints)
    assert any(abs(r - 1 / 3) < 1e-9 for r in ratio)   # the 2·P·tokens slip (7.2%)
