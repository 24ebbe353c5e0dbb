"""Chapter 7 exercise registry vs the spec's corrected answers (spec 07 P7.x, CANON §4)."""
import numpy as np
import pytest

from conftest import assert_reference

from scaling_lib import exercises
from scaling_lib.exercises import ch07

# id -> (reference answer from spec 07 / CANON §4, relative tolerance of the pin)
SPEC = {
    "7.1": ([240, 120, 240], 0.01),                       # P7.1
    "7.2": (249.6, 0.005),                                # P7.2
    "7.3b": ([480, 1.0], 0.01),                           # P7.3
    "7.4b": (8.0, 0.01),                                  # P7.4 (→ G)
    "7.5": ([2.54, 20.9], 0.005),                         # P7.5, CANON §4 (8.2e11)
    "7.6": ([13.0e9, 26e9], 0.01),                        # P7.6
    "7.7": ([6.7e9, 4], 0.01),                            # P7.7
    "7.8": (84e6, 0.01),                                  # P7.8 (book "80 MB")
    "7.9b": ([15, 76], 0.02),                             # P7.9, CANON §4 (16e9/chip)
    "7.9c": ([36.7, 873], 0.01),                          # P7.9 table, B=32, K=40
    "7.10": (64, 0.0),                                    # P7.10 as posed (β = 8)
    "7.11": ([360e3, 131e3], 0.01),                       # P7.11
    "7.11b": ("A", None),                                 # P7.11: latency-bound
    "7.12": (327e-6, 0.005),                              # P7.12, CANON (book 365 µs)
    "7.13": (1 / 3, 1e-9),                                # P7.13
    "7.14": ([18.4e9, 262_144], 0.005),                   # P7.14
    "7.15": ([110, 885], 0.0),                            # P7.15
    "7.16": ([1.40, 2.80, 22.4], 0.005),                  # P7.16, CANON §4
    "7.17": (6.64, 0.005),                                # P7.17, CANON §4
    "7.18": ([2.12e11, 3.13e10, 1920, 262_144], 0.005),   # P7.18
    "7.19": ([4.03, 12.7, 32], 0.005),                    # P7.19, CANON §4
    "7.20b": (72, 1e-9),                                  # P7.20 (book 81 is a slip)
    "7.21": ([3.36, 0.36], 0.01),                         # P7.21
}


def test_every_problem_is_registered():
    ids = {e.id for e in ch07.EXERCISES}
    for n in range(1, 22):                                # P7.1 ... P7.21
        assert f"7.{n}" in ids
    assert set(SPEC) <= ids
    assert [e.id for e in exercises.for_chapter(7)] == [e.id for e in ch07.EXERCISES]


@pytest.mark.parametrize("ex_id", sorted(SPEC))
def test_expected_equals_spec(ex_id):
    want, rtol = SPEC[ex_id]
    assert_reference(ex_id, want, rtol)


@pytest.mark.parametrize("ex_id,args,want", [
    ("7.3", {"S": 1000, "T": 1000}, 500.0),
    ("7.4", {"S": 8192, "T": 1, "G": 8}, 8 * 8192 / 8200),
    ("7.9", {"B": 32, "kv_seq": 6.7e9, "param_bytes": 26e9, "n": 8, "W": 8.2e11}, 36.65e-3),
    ("7.18b", {"T": 1}, 2 * 31.27e9 + 4 * 64 * 32 * 256),
    ("7.20", {"B": 1, "D": 8192, "F": 32768, "X": 4, "YZ": 32, "W": 9e10},
     2 * 8192 / (4 * 9e10) + 4 * 32768 / (32 * 9e10)),
])
def test_function_references(ex_id, args, want):
    f = exercises.get(ex_id).reference()
    assert f(**args) == pytest.approx(want, rel=2e-3)


def test_check_feedback():
    from scaling_lib.grading import evaluate
    ex = exercises.get("7.5")
    assert evaluate(ex, [2.54, 20.9]).correct
    assert evaluate(ex, [2.57, 21.05]).correct          # the book's 8.1e11 values
    assert not evaluate(ex, [2.54e-3, 20.9e-3]).correct  # seconds instead of ms
