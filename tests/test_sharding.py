"""Tests for scaling_lib.sharding: notation, the four matmul cases, the spec's worked numbers,
property tests, and agreement with the collectives XLA inserts (spec ../shared/spec/03-sharding.md).
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scaling_lib import hardware, sharding as sh

M42 = {"X": 4, "Y": 2}


# ---------------------------------------------------------------------------------------------
# notation
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["A[I_X, J]", "W[D_XY, F]", "In[B_X, D_Y]", "C[I, K]{U_X}",
                                  "A[I, J]", "Out[B, D_XY]{U_Z}", "W_in[D, F_Y]"])
def test_round_trip(text):
    assert str(sh.parse(text)) == text
    assert sh.parse(str(sh.parse(text))) == sh.parse(text)


def test_parse_fields_and_variants():
    a = sh.parse("A[I_{XY},J]{U_Z}")
    assert a.dims == ("I", "J") and a.axes == (("X", "Y"), ()) and a.unreduced == ("Z",)
    assert str(a) == "A[I_XY, J]{U_Z}"
    assert a.latex() == r"A[I_{XY},J]\{U_{Z}\}"
    assert sh.parse("A[I_X, J]").partition_spec() == ("X", None)
    assert sh.parse("A[I_XY, J]").partition_spec() == (("X", "Y"), None)
    assert sh.parse("B[J, K_Y]").partition_spec() == (None, "Y")


@pytest.mark.parametrize("text, match", [
    ("A[I_X, J_X]", r"'X' is used in 'I_X' and in 'J_X'"),
    ("A[I_XX, J]", r"'X' appears twice in 'I_XX'"),
    ("A[I_X, J]{U_X}", r"'X' is both sharding 'I_X' and unreduced"),
    ("A[I_x, J]", r"'I_x'"),
    ("A(I, J)", "cannot read sharding"),
    ("A[I, J]{V_X}", r"\{V_X\}"),
    ("A[]", "no dimensions"),
    ("A[I, I]", "'I' appears twice"),
])
def test_parse_errors_name_the_part(text, match):
    with pytest.raises(ValueError, match=match):
        sh.parse(text)


def test_type_errors():
    with pytest.raises(TypeError):
        sh.parse(3)
    with pytest.raises(TypeError):
        sh.as_mesh([4, 2])
    with pytest.raises(ValueError, match="positive int"):
        sh.as_mesh({"X": 0})


def test_unknown_axis_and_divisibility_name_the_part():
    with pytest.raises(ValueError, match=r"unknown mesh axis 'Z' in 'J_Z'"):
        sh.parse("A[I_X, J_Z]").validate(M42)
    with pytest.raises(ValueError, match=r"'I_X' .* size 6, which is not divisible by \|X\| = 4"):
        sh.parse("A[I_X, J]").local_shape((6, 8), M42)
    with pytest.raises(ValueError, match="2 dimensions but the shape"):
        sh.parse("A[I_X, J]").local_shape((8,), M42)


# ---------------------------------------------------------------------------------------------
# spec worked numbers (P3.1-P3.4, P3.7)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, mesh, shape, local", [
    ("A[I_X, J_Y]", {"X": 2, "Y": 2}, (4, 128), (2, 64)),        # P3.1
    ("A[I_XY, J]", {"X": 2, "Y": 2}, (4, 128), (1, 128)),        # P3.1
    ("A[I, J]", {"X": 2, "Y": 2}, (4, 128), (4, 128)),           # P3.1
    ("A[I_XY, J]", {"X": 8, "Y": 2}, (1024, 4096), (64, 4096)),  # P3.2
    ("A[I_XY, J]", {"X": 2, "Y": 8, "Z": 2}, (128, 2048), (8, 2048)),  # P3.3
    ("A[I_X, J_Y]", M42, (8, 2048), (2, 1024)),                  # P3.4
    ("B[J, K_Y]", M42, (2048, 8192), (2048, 4096)),              # P3.4
])
def test_local_shapes(spec, mesh, shape, local):
    assert sh.parse(spec).local_shape(shape, mesh) == local


def test_p3_2_h100_read_time():
    a = sh.parse("A[I_XY, J]")
    nb = a.bytes_per_device((1024, 4096), "f32", {"X": 8, "Y": 2})
    assert nb == 1_048_576
    assert nb / hardware.get("H100").hbm_bw == pytest.approx(0.313e-6, rel=0.01)  # CANON 03 P3.2


def test_p3_3_memory():
    a, m = sh.parse("A[I_XY, J]"), {"X": 2, "Y": 8, "Z": 2}
    assert a.bytes_per_device((128, 2048), "int8", m) == 16_384
    assert a.total_bytes((128, 2048), "int8", m) == 524_288
    assert a.replication_factor(m) == 2


def test_p3_7_replication():
    assert sh.parse("A[I_X, J, K]").replication_factor({"X": 4, "Y": 8, "Z": 2}) == 16


# ---------------------------------------------------------------------------------------------
# subscript edits
# ---------------------------------------------------------------------------------------------
def test_collective_edits():
    assert str(sh.all_gather("A[I_X, J]", "X")) == "A[I, J]"
    assert str(sh.all_gather("A[I_XY, J]", "Y")) == "A[I_X, J]"
    assert str(sh.reduce_scatter("A[I, J]{U_X}", "X", "J")) == "A[I, J_X]"
    assert str(sh.all_reduce("A[I_X, J]{U_Y}", "Y")) == "A[I_X, J]"
    assert str(sh.all_to_all("A[I_X, J]", "X", "J")) == "A[I, J_X]"
    with pytest.raises(ValueError, match="no dimension of A\\[I_X, J\\] is sharded over Y"):
        sh.all_gather("A[I_X, J]", "Y")
    with pytest.raises(ValueError, match="not unreduced over X"):
        sh.all_reduce("A[I, J]", "X")
    with pytest.raises(ValueError, match="already sharded over X"):
        sh.all_to_all("A[I_X, J]", "X", "I")


def test_reshard_steps():
    kinds = lambda s, t: [(x.kind, x.axes) for x in sh.reshard_steps(s, t, M42)]
    assert kinds("A[I_X, J]", "A[I, J]") == [("all_gather", ("X",))]
    assert kinds("A[I_X, J]", "A[I, J_X]") == [("all_to_all", ("X",))]
    assert kinds("A[I, J]{U_Y}", "A[I, J_Y]") == [("reduce_scatter", ("Y",))]
    assert kinds("A[I, J]{U_Y}", "A[I, J]") == [("all_reduce", ("Y",))]
    assert kinds("A[I, J]", "A[I_X, J_Y]") == [("slice", ("X",)), ("slice", ("Y",))]
    with pytest.raises(ValueError, match="only come out of a local contraction"):
        sh.reshard_steps("A[I, J]", "A[I, J]{U_X}", M42)


# ---------------------------------------------------------------------------------------------
# the four cases (spec §4 and demo 2)
# ---------------------------------------------------------------------------------------------
CASES = [
    # (a, b, out, kwargs, case, collectives, natural output)
    ("A[I_X, J]", "B[J, K_Y]", None, {}, 1, (), "Out[I_X, K_Y]"),
    ("A[I, J_Y]", "B[J, K]", None, {}, 2, (("all_gather", ("Y",)),), "Out[I, K]"),
    ("A[I_X, J_Y]", "B[J, K_Y]", None, {}, 2, (("all_gather", ("Y",)),), "Out[I_X, K_Y]"),
    ("A[I, J_Y]", "B[J_Y, K]", None, {}, 3, (("all_reduce", ("Y",)),), "Out[I, K]"),
    ("A[I, J_Y]", "B[J_Y, K]", "[I, K_Y]", {}, 3, (("reduce_scatter", ("Y",)),), "Out[I, K_Y]"),
    ("A[I_X, J]", "B[J, K_X]", "[I_X, K]", {}, 4, (("all_gather", ("X",)),), "Out[I_X, K]"),
    ("A[I_X, J]", "B[J, K_X]", "[I, K_X]", {}, 4, (("all_gather", ("X",)),), "Out[I, K_X]"),
    ("A[I_X, J]", "B[J_X, K_Y]", None, {}, 2, (("all_gather", ("X",)),), "Out[I_X, K_Y]"),
    ("A[I, J_X]", "B[J, K]", None, {"strategy": "reduce"}, 2, (("all_reduce", ("X",)),), "Out[I, K]"),
    ("A[I_X, J]", "B[J, K_Y]", "[I, K]", {}, 1, (("all_gather", ("X", "Y")),), "Out[I, K]"),
]


@pytest.mark.parametrize("a, b, out, kw, case, coll, result", CASES)
def test_cases(a, b, out, kw, case, coll, result):
    p = sh.matmul(a, b, M42, out=out, **kw)
    assert p.case == case
    assert p.collectives == coll
    assert str(p.out) == result


def test_case4_gathers_the_smaller_operand_by_default():
    p = sh.matmul("A[I_X, J]", "B[J, K_X]", M42, sizes={"I": 64, "J": 32, "K": 1024})
    assert p.b_local == sh.parse("B[J, K_X]") and str(p.a_local) == "A[I, J]"
    assert sh.matmul_case("A[I_X, J]", "B[J, K_X]") == 4


def test_matmul_errors():
    with pytest.raises(ValueError, match=r"mismatched contracting dimensions: 'J_X' in A\[I, J_X\] vs 'J_Y'"):
        sh.matmul("A[I, J_X]", "B[J_Y, K]", M42)
    with pytest.raises(ValueError, match="mismatched contracting dimensions: 'J' of .* size 8"):
        sh.matmul("A[I, J]", "B[L, K]", M42, contracting=("J", "L"), sizes={"I": 4, "J": 8, "L": 16, "K": 4})
    with pytest.raises(ValueError, match="cannot tell the contracting dimension"):
        sh.matmul("A[I, J]", "B[K, L]", M42)
    with pytest.raises(ValueError, match=r"unknown mesh axis 'Z' in 'K_Z'"):
        sh.matmul("A[I, J]", "B[J, K_Z]", M42)
    with pytest.raises(ValueError, match=r"'I_X' .* not divisible"):
        sh.matmul("A[I_X, J]", "B[J, K]", M42, sizes={"I": 6, "J": 8, "K": 8})
    with pytest.raises(ValueError, match="is unreduced"):
        sh.matmul("A[I, J]{U_X}", "B[J, K]", M42)
    with pytest.raises(ValueError, match="strategy"):
        sh.matmul("A[I, J_X]", "B[J, K]", M42, strategy="fast")
    with pytest.raises(ValueError, match="must have the dimensions I, K"):
        sh.matmul("A[I, J]", "B[J, K]", M42, out="[K, I]")


def test_contracting_pair_with_different_names():
    p = sh.matmul("A[I, J_X]", "B[L_X, K]", M42, contracting=("J", "L"))
    assert p.case == 3 and p.collectives == (("all_reduce", ("X",)),)


# ---------------------------------------------------------------------------------------------
# costs: the spec's worked problems P3.5, P3.6, P3.8, P3.9, P3.10, P3.12, P3.13
# ---------------------------------------------------------------------------------------------
def _t(src, dst, mesh, sizes, chip, wrap=True):
    steps = sh.reshard_cost(src, dst, mesh, sizes, chip=chip, wrap=wrap)
    assert len(steps) == 1
    return steps[0]


def test_p3_5_latency_threshold():
    assert hardware.get("v5e").ici_link_bw_1way * sh.T_HOP == pytest.approx(45e3)
    assert hardware.get("v5p").ici_link_bw_1way * sh.T_HOP == pytest.approx(90e3)


def test_p3_6_allgather_v5e():
    m = {"X": 8, "Y": 4}
    ring = _t("A[I_Y, F]", "A[I, F]", m, {"I": 2048, "F": 8192}, "v5e", wrap=True)
    assert ring.nbytes == pytest.approx(33.55e6, rel=1e-3)
    assert ring.time == pytest.approx(373e-6, rel=0.01)
    line = _t("A[I_Y, F]", "A[I, F]", m, {"I": 2048, "F": 8192}, "v5e", wrap=False)
    assert line.time == pytest.approx(559e-6, rel=0.01)
    small = _t("A[I_Y, F]", "A[I, F]", m, {"I": 256, "F": 256}, "v5e", wrap=False)
    assert small.time == pytest.approx(3e-6, rel=0.01)


@pytest.mark.parametrize("src, dst, mb, us", [
    ("A[B_X, D_Y]", "A[B, D_Y]", 2.10, 23.3),            # (a)
    ("A[B_X, D_Y]", "A[B, D]", 8.39, 46.6),              # (b)
    ("A[B_X, D_Y]{U_Z}", "A[B_X, D_Y]", 0.524, 11.6),    # (c) (M's 190 µs was wrong)
    ("A[B_XZ, D_Y]", "A[B, D_Y]", 2.10, 11.6),           # bonus (a)
    ("A[B_XZ, D_Y]", "A[B, D]", 8.39, 31.0),             # bonus (b)
])
def test_p3_8_v4p_cube(src, dst, mb, us):
    st_ = _t(src, dst, {"X": 4, "Y": 4, "Z": 4}, {"B": 1024, "D": 4096}, "v4p")
    assert st_.nbytes == pytest.approx(mb * 1e6, rel=0.01)
    assert st_.time == pytest.approx(us * 1e-6, rel=0.01)


def test_p3_9_latency_bound():
    st_ = _t("A[B_X]", "A[B]", {"X": 4, "Y": 4, "Z": 4}, {"B": 128}, "v4p")
    assert st_.nbytes == 256 and st_.time == pytest.approx(2e-6)


def test_p3_10_strategies():
    r = sh.strategy_times(1024, 8192, 32768, 4, "v5p")
    assert r["S1"][0] == pytest.approx(1.20e-3, rel=0.01)
    assert r["S1"][1] == pytest.approx(2.98e-3, rel=0.01)
    assert r["S2"][0] == pytest.approx(0.30e-3, rel=0.01)
    assert r["S2"][1] == pytest.approx(0.75e-3, rel=0.01)
    # the crossover rule: S2 wins iff D > max(2B, 2C/W)
    c = hardware.get("v5p")
    assert 2 * c.peak() / c.ici_bw_bidi == pytest.approx(5100, rel=0.001)
    D = np.array([4000.0, 6000.0])
    r = sh.strategy_times(4096, D, 8192, 4, "v5p")
    s1 = np.maximum(*r["S1"])
    s2 = np.maximum(*r["S2"])
    assert list(s2 < s1) == [False, True]


def test_p3_10_matches_planner():
    sizes = {"B": 1024, "D": 8192, "F": 32768}
    r = sh.strategy_times(1024, 8192, 32768, 4, "v5p")
    p1 = sh.matmul("X[B, D]", "Y[D_X, F]", {"X": 4}, sizes=sizes, chip="v5p")
    p2 = sh.matmul("X[B, D]", "Y[D_X, F]", {"X": 4}, sizes=sizes, chip="v5p", strategy="reduce")
    assert (p1.t_math, p1.t_comms) == pytest.approx(r["S1"], rel=1e-6)
    assert (p2.t_math, p2.t_comms) == pytest.approx(r["S2"], rel=1e-6)


def test_p3_12_v5e_4x4():
    m, I, J, K = {"X": 4, "Y": 4}, 4096, 8192, 16384
    sizes = {"I": I, "J": J, "K": K}
    a = sh.matmul("A[I_X, J_Y]", "B[J_Y, K]", m, out="[I_X, K]", sizes=sizes, chip="v5e")
    assert a.collectives == (("all_reduce", ("Y",)),)
    assert a.t_comms == pytest.approx(I * K / 9e10, rel=1e-6)
    a_line = sh.matmul("A[I_X, J_Y]", "B[J_Y, K]", m, out="[I_X, K]", sizes=sizes, chip="v5e", wrap=False)
    assert a_line.t_comms == pytest.approx(I * K / 6e10, rel=1e-6)
    assert a.t_math == pytest.approx(2 * I * J * K / (16 * 1.97e14))
    b = sh.matmul("A[I_X, J]", "B[J_X, K_Y]", m, sizes=sizes, chip="v5e")
    assert b.collectives == (("all_gather", ("X",)),)
    assert b.t_comms == pytest.approx(J * K / 1.8e11, rel=1e-6)
    b_line = sh.matmul("A[I_X, J]", "B[J_X, K_Y]", m, sizes=sizes, chip="v5e", wrap=False)
    assert b_line.t_comms == pytest.approx(J * K / 1.2e11, rel=1e-6)
    c = sh.matmul("A[I_X, J]", "B[J, K_Y]", m, sizes=sizes, chip="v5e")
    assert c.collectives == () and c.t_comms == 0


def test_p3_13_ffn_tp_v5e_2x2():
    m, B, D, F = {"X": 2, "Y": 2}, 128, 8192, 32768
    sizes = {"B": B, "D": D, "F": F}
    up = sh.matmul("In[B, D_XY]", "Win[D, F_XY]", m, sizes=sizes, chip="v5e")
    assert up.collectives == (("all_gather", ("X", "Y")),)
    assert up.t_comms == pytest.approx(11.7e-6, rel=0.01)
    down = sh.matmul("H[B, F_XY]", "Wout[F_XY, D]", m, out="[B, D_XY]", sizes=sizes, chip="v5e")
    assert down.collectives == (("reduce_scatter", ("X", "Y")),)
    assert down.t_comms == pytest.approx(11.7e-6, rel=0.01)
    assert up.t_math + down.t_math == pytest.approx(174e-6, rel=0.01)
    w = sh.parse("Win[D, F_XY]").bytes_per_device((D, F), "bf16", m)
    assert 2 * w == pytest.approx(268.4e6, rel=0.001)
    fsdp = sh.reshard_cost("Win[D_XY, F]", "Win[D, F]", m, {"D": D, "F": F}, chip="v5e")[0]
    assert fsdp.time == pytest.approx(3e-3, rel=0.02)


# ---------------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------------
AX = st.sampled_from(["", "X", "Y", "XY", "YX"])


@settings(max_examples=150, deadline=None)
@given(ai=AX, aj=AX, bj=AX, bk=AX, strat=st.sampled_from(["gather", "reduce"]))
def test_flops_add_up(ai, aj, bj, bk, strat):
    """Total FLOPs over devices = unsharded FLOPs × how many devices repeat the same work."""
    a = f"A[{'I_' + ai if ai else 'I'}, {'J_' + aj if aj else 'J'}]"
    b = f"B[{'J_' + bj if bj else 'J'}, {'K_' + bk if bk else 'K'}]"
    try:
        pa, pb = sh.parse(a), sh.parse(b)
        p = sh.matmul(pa, pb, M42, sizes={"I": 64, "J": 64, "K": 64}, strategy=strat)
    except ValueError:
        return
    used = set(p.a_local.used_axes) | set(p.b_local.used_axes)
    redundancy = math.prod(v for k, v in M42.items() if k not in used)
    assert p.flops_per_device * 8 == pytest.approx(p.flops_total * redundancy)
    if not (set(M42) - used):
        assert p.flops_per_device * 8 == pytest.approx(p.flops_total)
    assert p.out.unreduced == ()


@settings(max_examples=100, deadline=None)
@given(i=AX, j=AX, k=st.sampled_from(["", "Z"]))
def test_bytes_cover_the_array(i, j, k):
    m = {"X": 2, "Y": 4, "Z": 2}
    try:
        a = sh.parse(f"A[{'I_' + i if i else 'I'}, {'J_' + j if j else 'J'}, {'K_' + k if k else 'K'}]")
    except ValueError:
        return
    shape = (16, 32, 8)
    per = a.bytes_per_device(shape, "bf16", m)
    assert per * 16 >= 2 * 16 * 32 * 8
    assert per * 16 == a.total_bytes(shape, "bf16", m)
    assert a.total_bytes(shape, "bf16", m) == 2 * 16 * 32 * 8 * a.replication_factor(m)


# ---------------------------------------------------------------------------------------------
# the compiler agrees (8 simulated CPU devices)
# ---------------------------------------------------------------------------------------------
COMPILER_CASES = [(a, b, o, kw) for a, b, o, kw, *_ in CASES if kw.get("strategy") != "reduce"] + [
    ("A[I, J_Y]", "B[J_Y, K]", "[I_Y, K]", {}),
    ("A[I, J_X]", "B[J_X, K_Y]", "[I_X, K_Y]", {}),    # RS over the major axis: no permute
    ("A[I, J_XY]", "B[J_XY, K]", "[I_XY, K]", {}),     # RS over the whole mesh: no permute
    ("A[I, J_XY]", "B[J_XY, K]", None, {}),
    ("A[I_Y, J_X]", "B[J_X, K]", None, {}),
    ("A[I_X, J_Y]", "B[J_Y, K]", None, {}),
    ("A[I_XY, J]", "B[J, K]", None, {}),
    ("A[I_X, J]", "B[J, K_XY]", "[I_X, K_Y]", {}),
]


@pytest.fixture(scope="module")
def jmesh():
    from scaling_lib import devices
    import jax
    assert len(jax.devices("cpu")) >= 8, "tests/conftest.py sets up 8 simulated CPU devices before jax loads"
    return devices.mesh((4, 2), ("X", "Y"), prefer="cpu")


@pytest.mark.parametrize("a, b, out, kw", COMPILER_CASES)
def test_compiler_agrees(jmesh, a, b, out, kw):
    p = sh.matmul(a, b, M42, out=out, sizes={"I": 16, "J": 32, "K": 16}, **kw)
    assert sh.compiled_collectives(p, jmesh) == sh.expected_hlo(p, "cpu")


def test_compiler_gathers_before_instead_of_all_to_all(jmesh):
    """Moving the output's X from I to K: the rule AllToAlls Out; XLA gathers A before the
    matmul and slices B for free (the chapter's "unshard before or after")."""
    p = sh.matmul("A[I_X, J]", "B[J, K]", M42, out="[I, K_X]", sizes={"I": 16, "J": 32, "K": 16})
    assert sh.expected_hlo(p, "cpu") == {"all-to-all": {"X"}}
    assert sh.compiled_collectives(p, jmesh) == {"all-gather": {"X"}}


@pytest.mark.parametrize("a, b", [("A[I, J_X]", "B[J, K]"), ("A[I, J_X]", "B[J, K_Y]"),
                                  ("A[I_Y, J_X]", "B[J, K]"), ("A[I, J]", "B[J_X, K]"),
                                  ("A[I, J_XY]", "B[J, K]")])
@pytest.mark.parametrize("I, J, K", [(16, 32, 16), (16, 32, 32), (64, 16, 64), (64, 64, 16),
                                     (16, 64, 64)])
def test_compiler_picks_a_case2_strategy(jmesh, a, b, I, J, K):
    """Case 2 has two strategies (gather first, or multiply then AllReduce). XLA picks one of the
    two plans; observed rule (JAX 0.7.2/0.10.2 CPU): when every mesh axis is in use it AllReduces
    iff the partial result has fewer bytes per device than the gathered operand, else it gathers."""
    sizes = {"I": I, "J": J, "K": K}
    g = sh.matmul(a, b, M42, sizes=sizes, strategy="gather")
    got = sh.compiled_collectives(g, jmesh)
    try:
        r = sh.matmul(a, b, M42, sizes=sizes, strategy="reduce")
    except ValueError:      # the other operand cannot be sliced: gathering is the only plan
        assert got == sh.expected_hlo(g)
        return
    all_axes = set(g.a.used_axes) | set(g.b.used_axes) == set(M42)
    v_ag, v_ar = g.steps[0].nbytes, r.steps[-1].nbytes
    want = r if (all_axes and v_ar < v_ag) else g
    assert got == sh.expected_hlo(want)


def test_tpu_expectation_names_reduce_scatter():
    p = sh.matmul("A[I, J_Y]", "B[J_Y, K]", M42, out="[I, K_Y]")
    assert sh.expected_hlo(p, "tpu") == {"reduce-scatter": {"Y"}}
    assert sh.expected_hlo(p, "cpu") == {"all-reduce": {"Y"}, "collective-permute": set()}


def test_topology_slices_bring_their_wraparound():
    """P3.6 on a real v5e 8×4 slice (no axis of 16, so no wraparound) and P3.8 on a v4p cube."""
    from scaling_lib import topology
    v5e = topology.TpuSlice("v5e", (8, 4), ("X", "Y"))
    st_ = sh.reshard_cost("A[I_Y, F]", "A[I, F]", {"X": 8, "Y": 4}, {"I": 2048, "F": 8192}, topo=v5e)[0]
    assert st_.time == pytest.approx(559e-6, rel=0.01)
    cube = topology.TpuSlice("v4p", (4, 4, 4), ("X", "Y", "Z"))
    p = sh.matmul("A[B_X, D_Y]", "W[D_Y, F]", {"X": 4, "Y": 4, "Z": 4}, out="[B_X, F]",
                  sizes={"B": 1024, "D": 4096, "F": 1024}, topo=cube)
    assert p.chip == "TPU v4p" and p.collectives == (("all_reduce", ("Y",)),)
    assert p.t_comms == pytest.approx(2 * (2 * 1024 * 1024 / 4) / 9e10, rel=1e-6)
    with pytest.raises(ValueError, match="has size 8 but"):
        sh.matmul("A[I_X, J]", "B[J, K]", {"X": 8, "Y": 4, "Z": 4}, sizes={"I": 8, "J": 8, "K": 8}, topo=cube)


# ---------------------------------------------------------------------------------------------
# widgets (scaling_lib.widgets.sharding)
# ---------------------------------------------------------------------------------------------
def test_widget_plan_and_draw():
    import matplotlib
    matplotlib.use("Agg")
    from scaling_lib.widgets import sharding as w, time_update
    p = w.plan_for(a_i="", a_j="XY", b_j="XY", b_k="", out="I, K_XY", X=4, Y=2, chip="TPU v5e")
    assert p.case == 3 and p.collectives == (("reduce_scatter", ("X", "Y")),)
    assert w.draw_matmul(a_i="X", b_k="X", out="I_X, K").case == 4
    with pytest.raises(ValueError, match="'X' is used in 'I_X' and in 'K_X'"):
        w.plan_for(a_i="X", b_k="X", out="I_X, K_X")
    assert time_update(w.draw_matmul, repeats=3) < 0.5       # budget 0.1 s on an idle machine
    r = w.draw_race(B=1024, D=8192, F=32768, X=4, chip="TPU v5p")
    assert max(r["S2"]) < max(r["S1"])


def test_widget_card_never_covers_the_bars():
    """Website review L7: the plan's text card spilled over the top of the bar axes. It now has a
    row of its own: inside the figure and entirely above the bars, for a one- and a two-collective plan."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scaling_lib.widgets import sharding as w
    for kw in ({}, {"a_i": "", "a_j": "X", "b_j": "X"}, {"a_i": "", "a_j": "XY", "b_j": "XY", "b_k": ""}):
        w.draw_matmul(**kw)
        fig = plt.gcf()
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        card, bars = fig.axes[0], fig.axes[1]
        box, area = card.texts[0].get_window_extent(r), bars.get_window_extent(r)
        assert box.y0 >= area.y1, (kw, box, area)
        assert box.x0 >= 0 and box.x1 <= fig.bbox.x1 + 1 and box.y1 <= fig.bbox.y1 + 1, (kw, box, fig.bbox)
        plt.close(fig)


def test_twin_strategies_cross_over():
    from scaling_lib.widgets import sharding as w
    small = w.strategy_costs(256, 8192, 32768)
    big = w.strategy_costs(65536, 8192, 32768)
    # few tokens: gathering the weights (FSDP) is the most expensive and gathering the activations
    # (tensor parallelism) the cheapest; many tokens: the other way round
    assert max(small, key=lambda k: small[k][1]) == "FSDP：收集权重"
    assert min(small, key=lambda k: small[k][1]) == "张量并行：收集激活"
    assert min(big, key=lambda k: big[k][1]) == "FSDP：收集权重"
    assert big["FSDP：收集权重"][1] == pytest.approx(small["FSDP：收集权重"][1])
    fig = w.cost_figure(Is=(256, 4096))
    assert len(fig.data) == 2 * 2 and len(fig.layout.sliders[0].steps) == 2


def test_draw_shards_reads_real_shards(jmesh):
    import jax
    import matplotlib
    matplotlib.use("Agg")
    from scaling_lib.widgets.sharding import draw_shards
    x = jax.device_put(np.zeros((16, 16), np.float32), sh.parse("A[I_X, J]").named_sharding(jmesh))
    blocks = draw_shards(x)
    assert blocks == {(4 * i, 4 * i + 4, 0, 16): [2 * i, 2 * i + 1] for i in range(4)}


def test_strategy_crossover_is_where_the_curves_cross():
    """min(2B, 2C/W_ici) (chapter 3) against the first integer D where strategy 2 wins."""
    import numpy as np
    from scaling_lib import hardware, sharding as S
    v5p = hardware.get("v5p")
    alpha = v5p.peak("bf16") / v5p.ici_bw_bidi
    D = np.arange(256, 65537)
    for B in (512, 1024, 8192):                            # both branches: B < C/W and B > C/W
        r = S.strategy_times(B, D, 32768, 4, "v5p")
        first = int(D[np.argmax(np.maximum(*r["S2"]) < np.maximum(*r["S1"]))])
        want = S.strategy_crossover(B, "v5p")
        assert want == min(2 * B, 2 * alpha)
        assert abs(first - want) <= 1, (B, first, want)
    assert np.allclose(S.strategy_crossover(np.array([512, 8192]), "v5p"), [1024, 2 * alpha])
    with pytest.raises(ValueError, match="no ICI"):
        S.strategy_crossover(1024, "H100")
