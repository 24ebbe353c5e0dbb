"""Chapter 3 exercise registry against the spec's corrected answers (spec 03 P3.1-P3.16; CANON
for P3.2's H100 bandwidth)."""
import numpy as np
import pytest

from scaling_lib.exercises import for_chapter, get

SPEC = [
    # id, spec answer, rtol, spec ref
    ("3.1", [2, 64, 1, 128], 0, "P3.1"),
    ("3.2", [1_048_576, 0.313e-6], 0.01, "P3.2 (CANON: H100 3.35e12 -> 0.313 µs)"),
    ("3.3", [16_384, 524_288], 0, "P3.3"),
    ("3.4", [2, 1024, 2048, 4096], 0, "P3.4"),
    ("3.5", [45e3, 90e3], 0.01, "P3.5"),
    ("3.6", 559e-6, 0.01, "P3.6(a) no-wrap"),
    ("3.6c", 3e-6, 0.05, "P3.6(b)"),
    ("3.7", 16, 0, "P3.7"),
    ("3.8", [23.3e-6, 46.6e-6, 11.6e-6], 0.01, "P3.8 (a)-(c)"),
    ("3.8b", [11.6e-6, 31e-6], 0.01, "P3.8 bonus"),
    ("3.9", 2e-6, 0.01, "P3.9"),
    ("3.13", [11.7e-6, 11.7e-6, 174e-6, 268.4e6], 0.01, "P3.13"),
    ("3.16c", 2, 0.001, "P3.16(3)"),
    ("3.16d", [2.67, 3.2, 4.0], 0.01, "P3.16(6)"),
]


@pytest.mark.parametrize("ex_id, want, rtol, ref", SPEC)
def test_numbers_match_spec(ex_id, want, rtol, ref):
    got = get(ex_id).reference()
    np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float), rtol=max(rtol, 1e-12))


def test_p3_6_accepts_the_ring_answer():
    assert get("3.6").accepted()[0] == pytest.approx(373e-6, rel=0.01)


@pytest.mark.parametrize("ex_id, want", [("3.6b", "A"), ("3.10b", "B"), ("3.11", "A"),
                                         ("3.12b", "B"), ("3.13b", "B")])
def test_choices(ex_id, want):
    assert get(ex_id).reference() == want


def test_p3_10_function_instance():
    f = get("3.10").reference()
    t1, t2 = f(B=1024, D=8192, F=32768, X=4)
    assert t1 == pytest.approx(2.98e-3, rel=0.01) and t2 == pytest.approx(0.75e-3, rel=0.01)


def test_p3_11_function():
    t_math, t_ag = get("3.11b").reference()(I=4096, J=8192, K=8192)
    assert t_math == pytest.approx(2 * 4096 * 8192 * 8192 / (64 * 2.75e14))
    assert t_ag == pytest.approx(2 * 4096 * 8192 / (3 * 9e10))
    _, t_small = get("3.11b").reference()(I=64, J=1024, K=64)
    assert t_small == pytest.approx(6e-6)               # (4+4+4)/2 hops of 1 µs


def test_p3_12_function():
    I, J, K = 4096, 8192, 16384
    got = get("3.12").reference()(I=I, J=J, K=K)
    want = [I * K / 9e10, I * K / 6e10, J * K / 1.8e11, J * K / 1.2e11, 2 * I * J * K / (16 * 1.97e14)]
    np.testing.assert_allclose(got, want, rtol=1e-9)


def test_p3_15_and_p3_16_functions():
    assert get("3.15").reference()(M=8192, K=1024) == pytest.approx(8.0)
    N, D = 1024, 8
    assert get("3.16").reference()(N=N, D=D) == pytest.approx(N * N * (1 - 1 / D))
    assert get("3.16b").reference()(N=N, D=D) == pytest.approx(N * N / 2 * (1 - 1 / D))


def test_registry_shape():
    ids = [e.id for e in for_chapter(3)]
    assert len(ids) == len(set(ids))
    for e in for_chapter(3):
        assert e.id.split(".")[1].rstrip("bcd") in {str(i) for i in range(1, 17)}
        if e.kind == "function":
            kw = e.sampler(np.random.default_rng(1))
            assert np.all(np.isfinite(np.asarray(e.reference()(**kw), float)))
