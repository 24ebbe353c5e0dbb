"""Chapter 8 exercise registry vs the spec's corrected answers (spec 08 P8.x, CANON §4)."""
import numpy as np
import pytest

from conftest import assert_reference

from scaling_lib import exercises
from scaling_lib.exercises import ch08

SPEC = {
    "8.1": ([163_840, 5.37e9, 1.29e12, 85], 0.005),         # P8.1
    "8.2": (112.9, 0.005),                                 # P8.2, CANON (42.9 GB KV)
    "8.2b": ("B", None),                                   # P8.2: 4x2
    "8.3": ([17.2, 1858, 232], 0.005),                     # P8.3, CANON §4
    "8.4": ([240, 120, 240], 0.01),                        # P8.4
    "8.5": ([16, 8, 4], 0.0),                              # P8.5
    "8.5b": (43, 0.0),                                     # P8.5
    "8.6": ([19.5, 10.0, 10.7], 0.005),                    # P8.6
    "8.7": ([0.269, 0.538, 1.076], 0.005),                 # P8.7, CANON §4
    "8.8": ([0.438, 0.876, 1.75], 0.015),                  # P8.8, CANON (B=140 vs exact 138)
    "8.9": ([11.7, 17.9, 4.8], 0.01),                      # P8.9
    "8.10": (0.91, 0.005),                                 # P8.10
    "8.11": ([0.0078, 96], 0.002),                         # P8.11
    "8.12": (2.9, 0.01),                                   # P8.12, CANON (B = 32)
    "8.13": ([8.12e11, 4.12e-3, 0.990, 0.495], 0.005),    # P8.13 (spec rounds to 8.1e11, 4.1 ms, 0.99 s, 0.49 s)
    "8.14": ([8.0e9, 129e9, 11.0], 0.005),                 # P8.14
    "8.14b": ("C", None),                                  # P8.14: 4x4
    "8.15": ([7.7, 1.93, 150], 0.005),                     # P8.15
}


def test_every_problem_is_registered():
    ids = {e.id for e in ch08.EXERCISES}
    for n in range(1, 16):                                 # P8.1 ... P8.15 (P8.16 is a project)
        assert f"8.{n}" in ids
    assert set(SPEC) <= ids


@pytest.mark.parametrize("ex_id", sorted(SPEC))
def test_expected_equals_spec(ex_id):
    want, rtol = SPEC[ex_id]
    assert_reference(ex_id, want, rtol)


def test_evictions_function():
    f = exercises.get("8.11b").reference()
    assert f(B=32, P=8192, G=4096) == pytest.approx(96)


def test_book_values_accepted():
    from scaling_lib.grading import evaluate
    assert evaluate(exercises.get("8.3"), [17.0, 1882, 235]).correct
    assert evaluate(exercises.get("8.8"), [0.44, 0.90, 1.80]).correct
    assert not evaluate(exercises.get("8.5"), [16, 8, 3]).correct
