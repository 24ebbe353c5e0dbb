"""Chapter 10 registry: every expected value equals the spec's (corrected) answer (spec 10)."""
from scaling_lib import devices

devices.setup(8)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from scaling_lib.exercises import for_chapter, get  # noqa: E402
from scaling_lib.grading import evaluate  # noqa: E402

SPEC = [
    ("10.1", [2, 1024, 1024, 8192, 2, 8192], 0.0),          # P10.1 local In, W, out shapes
    ("10.1b", "A", None),                                     # P10.1 one AllReduce over Y
    ("10.2", "B", None),                                      # P10.2 float32[8@X,2@Y]
    ("10.3", [448, 449, 450, 451], 0.0),                      # P10.3 with arange(1024)
    ("10.4b", 6111, 0.001),                                   # formulas: C/W_uni on v4p
    ("10.8b", 1528, 0.001),                                   # (b/2) C/W_bi, int8 on v4p
]


@pytest.mark.parametrize("ex_id,expected,rtol", SPEC, ids=[s[0] for s in SPEC])
def test_spec_answers(ex_id, expected, rtol):
    got = get(ex_id).reference()
    if isinstance(expected, str):
        assert got == expected
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol)


def test_p104_times_match_formula():
    naive, coll = get("10.4c").reference()
    C, W_uni, W_bi = 1.97e14, 4.5e10, 9e10
    B, D, F, X, n = 2048, 4096, 32768, 2, 4
    t_c = 2 * (B / X) * (D / n) * (F / n) / C
    t_p = 2 * (B / X) * (D / n) / W_uni
    # exact ring AllGather ((n-1)/n, both directions), as on the collective side (review M1)
    assert naive == pytest.approx((n - 1) / n * 2 * (B / X) * D / W_bi + n * t_c, rel=1e-9)
    assert coll == pytest.approx(t_c + (n - 1) * max(t_c, t_p), rel=1e-9)
    assert coll < naive       # above the threshold (F/n = 8192 > 4378) the collective matmul wins


def test_every_exercise_accepts_its_reference_and_rejects_a_wrong_answer():
    exs = for_chapter(10)
    assert {e.id for e in exs} >= {"10.4", "10.5", "10.5b", "10.6", "10.6c", "10.6d", "10.7",
                                   "10.7b", "10.7c", "10.8"}
    for ex in exs:
        ans = ex.expected if ex.kind == "function" else ex.reference()
        assert evaluate(ex, ans).correct, ex.id
        if ex.kind == "function":
            wrong = lambda **kw: 1.1 * np.asarray(ex.expected(**kw))  # noqa: E731
        elif ex.kind == "choice":
            wrong = "D"
        else:
            wrong = (np.asarray(ans, float) * 1.5 + 1).tolist() if ex.kind == "numbers" else ans * 1.5
        assert not evaluate(ex, wrong).correct, ex.id
