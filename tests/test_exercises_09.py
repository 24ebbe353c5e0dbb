"""Chapter 9 registry: expected values equal the spec's answers (spec 09, worked problems)."""
import numpy as np
import pytest

from scaling_lib.exercises import for_chapter, get
from scaling_lib.grading import evaluate

SPEC = [  # (id, spec answer, rel tol, spec ref)
    ("9.1", 95.6e-3, 0.01, "P9.1 95.6 ms"),
    ("9.1b", 95.6 / 96, 0.01, "P9.1 ≈100% of roofline"),
    ("9.2", 1.1e-3, 0.03, "P9.2 ≈1.1 ms"),
    ("9.3", [23.9e-3, 95.6e-3, 3.0e-3], 0.02, "P9.3"),
    ("9.4", [1.6, 1.0, 1.0, 3.41], 0.002, "P9.4 a-d"),
    ("9.4c", [8, 256], 0.0, "P9.4d padded shape"),
    ("9.5b", [32, 32, 4096], 0.0, "P9.5 output shape"),
    ("9.5c", 2, 0.0, "P9.5 2-way split"),
    ("9.6", 3.2e11, 0.02, "P9.6 ≈3.2e11 B/s"),
    ("9.6b", 8, 0.0, "P9.6 8-way MP"),
    ("9.7", [0.65, 0.33, 0.02], 0.03, "P9.7d shares"),
    ("9.7b", 73e-3, 0.01, "P9.7 ≈73 ms/layer"),
]


@pytest.mark.parametrize("ex_id,expected,rtol,ref", SPEC, ids=[s[0] for s in SPEC])
def test_spec_answers(ex_id, expected, rtol, ref):
    np.testing.assert_allclose(get(ex_id).reference(), expected, rtol=rtol, err_msg=ref)


def test_p95_choice_and_p94b_order():
    assert get("9.5").reference() == "B"  # S(1) = VMEM
    f = get("9.4b").expected
    first_tile = [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3)]
    assert [f(r, c) for r, c in first_tile] == list(range(8))
    assert f(0, 4) == 8 and f(2, 0) == 16


def test_every_exercise_accepts_its_reference_and_rejects_wrong():
    for ex in for_chapter(9):
        ans = ex.expected if ex.kind == "function" else ex.reference()
        assert evaluate(ex, ans).correct, ex.id
        if ex.kind == "function":
            wrong = lambda **kw: ex.expected(**kw) + 1  # noqa: E731
        elif ex.kind == "choice":
            wrong = "A"
        elif ex.kind == "numbers":
            wrong = [v * 1.5 + 1 for v in ans]
        else:
            wrong = ans * 1.5 + 1
        assert not evaluate(ex, wrong).correct, ex.id
