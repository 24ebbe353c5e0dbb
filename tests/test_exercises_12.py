"""Chapter 12 exercise registry: every expected value equals spec 12's corrected answer
(canonical constants: H100 9.89e14 / 3.35e12, B200 2.25e15 / 8e12; CANON §4 for P5.2, P5.5, P5.6)."""
import numpy as np
import pytest

from scaling_lib.exercises import for_chapter, get
from scaling_lib.grading import evaluate

SPEC = {
    "12.1": ([16896, 18944, 8192], 0),                 # P1.1
    "12.2": ([26.9e12, 33.5e12, 29.6], 0.01),          # P1.2
    "12.3": ([1.979e15 / 4.8e12, 310], 0.002),          # P1.3 on H200 fp8, A100 int8 (another instance)
    "12.4": ([8.6e-6, 15.3e-6], 0.01),                 # P1.4
    "12.5": ([34.6e6, 69.2e6], 0.01),                  # P1.5: 132 x 256 KiB (book ~33 MB / ~66 MB took 256 KB as 256e3)
    "12.6": (2.1e9, 0.01),                             # P1.6
    "12.7": ([1 / 12, 3.84e-3], 0.01),                 # P1.7
    "12.8": ([1064, 2043], 0.01),                      # P1.8
    "12.9": (8, 0),                                    # P1.9
    "12.10": (3.6e12, 0), "12.11": (3.6e12, 0),        # P2.1, P2.2
    "12.12": ([1.04e-3, 1.19e-3], 0.01),               # P2.3
    "12.13": ([12.8e12, 51.2e12, 25.6e12], 0),         # P3.1
    "12.15": (3.6e12, 0),                              # P3.3
    "12.16": ([514e9, 413e9, 17.1e12], 0.005),         # P3.4
    "12.17": (65e-6, 0.01),                            # P4.1
    "12.20": ([2.22e-3, 2.42e-3], 0.01),               # P4.4 with B = 1 GB, M = 32
    "12.21": ([8e9, 8e9, 2.22e-3], 0.01),              # P4.5
    "12.23": (41.9e-6, 0.01),                          # P4.7 corrected (12.8 TB/s per SU)
    "12.24": (1.94e-3, 0.01),                          # P4.8
    "12.25": (4.5, 0.001),                             # P4.9
    "12.26": ([1.75, 481e9], 0.001),                   # P4.10
    "12.27": ([2198, 2473], 0.001),                    # P5.1 (CANON)
    "12.28": ([39.6e6, 10.1e6], 0.01),                 # P5.2 (CANON: H800 4,945 tok/GPU)
    "12.29": (79120, 0.001),                           # P5.3 (book 79,200 with 2475)
    "12.30": (1237, 0.001),                            # P5.4
    "12.31": ([13.0, 11.6], 0.01),                     # P5.5 (CANON, F = 28,672)
    "12.32": (19.6, 0.005),                            # P5.6 (CANON)
    "12.33": (19780, 0.001),                           # P5.7
    "12.35": ([30720, 2], 0),                          # P5.9
    "12.36": ([1024, 155], 0.005),                     # P5.10
    "12.37": ([2500, 5625], 0),                        # P6.1
    "12.38": ([7e11, 9], 0),                           # P6.2 (a)
    "12.38b": (3.45e6, 0.005),                         # P6.2 (b) ~40 days
    "12.38c": (309, 0.001),                            # P6.2 (c)
    "12.39": ([4096, 2048, 2048], 0),                  # P6.3
    "12.39b": ([2473, 1237, 309], 0.001),              # P6.3 thresholds
    "12.40": ([3.96, 625], 0.005),                     # P7.1
}


@pytest.mark.parametrize("ex_id", sorted(SPEC))
def test_expected_matches_spec(ex_id):
    value, rtol = SPEC[ex_id]
    ref = get(ex_id).reference()
    np.testing.assert_allclose(np.asarray(ref, float), np.asarray(value, float), rtol=rtol, atol=0)


REASONING = {"12.3b"}   # issue-19 reasoning items (choice, a feedback per wrong option)


def test_reasoning_items_answer_and_feedback():
    assert get("12.3b").reference() == "A"   # B = 250 lies between H200's 206 and H100's 295
    assert 9.89e14 / 4.8e12 < 250 < 9.89e14 / 3.35e12
    for wrong in "BCD":
        r = evaluate(get("12.3b"), wrong)
        assert not r.correct and get("12.3b").why[wrong] in r.message


def test_registry_complete():
    ids = {e.id for e in for_chapter(12)}
    assert ids == set(SPEC) | {"12.18", "12.19", "12.22", "12.41"} | REASONING
    # the free-text problems are 思考题 only
    assert not ids & {"12.14", "12.34", "12.42"}


def test_function_exercises():
    a2a = get("12.18").reference()
    assert a2a(1e9, 8, 4.5e11) == pytest.approx(1e9 * 7 / (64 * 4.5e11))
    sh = get("12.19").reference()
    assert sh(1) == pytest.approx(1.30e-3, rel=0.01)           # P4.3
    assert sh(16) == pytest.approx(0.67e-3, rel=0.05)
    assert sh(64) == pytest.approx(0.17e-3, rel=0.05)
    book = lambda Y: 2 * 8192 * 32768 * (31 / (32 * 400e9) if Y <= 8 else 1 / (Y * 50e9))
    assert evaluate(get("12.19"), book)
    rg = get("12.41").reference()
    assert [round(rg(8, z), 3) for z in (8, 16, 64)] == [0.574, 0.378, 0.117]   # P7.2
    assert evaluate(get("12.22"), lambda D, F, Y: 2 * D * F / (Y * 4.5e11))


def test_book_readings_accepted():
    assert evaluate(get("12.28"), [2475 * 16000, 3300 * 2048])   # book's 300 GB/s reading
    assert evaluate(get("12.23"), 2 * 8192 * 32768 / 6.4e12)     # book's doubtful 6.4 TB/s
    assert not evaluate(get("12.10"), 6.4e12)                    # switch capacity is not the answer
