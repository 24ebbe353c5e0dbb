"""Chapter 0 warm-ups against spec 00 P0.1-P0.3 (ours, not from the book)."""
import numpy as np
import pytest

from scaling_lib.exercises import for_chapter, get


@pytest.mark.parametrize("ex_id, want, rtol", [
    ("0.1", 2.61e4, 0.005),                 # 6e21 / (1000 * 4.59e14 * 0.5) s ≈ 7.3 h
    ("0.2", [12.5, 0.78125], 0),            # speed-up, efficiency
    ("0.3", [16_384, 524_288], 0),          # int8[8, 2048] per device; ×32 devices (Z replicas)
])
def test_warmups_match_spec(ex_id, want, rtol):
    np.testing.assert_allclose(np.asarray(get(ex_id).reference(), float), np.asarray(want, float),
                               rtol=max(rtol, 1e-12))


def test_registry_ids():
    assert [e.id for e in for_chapter(0)] == ["0.1", "0.2", "0.3"]
