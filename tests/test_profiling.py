"""Tests of scaling_lib.profiling: spec-09 numbers, HLO shape/tiling helpers, HLO parsing on real
compiled programs (8 simulated CPU devices), the trace summary on a real captured trace, and the
chapter-10 collective-matmul time model."""
from scaling_lib import devices

devices.setup(8)

import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from scaling_lib import hardware, profiling as pr  # noqa: E402

V2 = pr.TPU_V2_CORE

# (spec ref, quantity, computed, expected, rel tol)
B, T, D, F = 32, 1024, 8192, 32768
SPEC = [
    ("09 P9.1", "FFW up-projection time (s)",
     lambda: pr.expected_op_time(2 * B * T * D * F, 0, 0, V2, n_devices=8).t, 95.6e-3, 0.03),
    ("09 P9.2", "ReduceScatter after down-projection (s)",
     lambda: pr.expected_op_time(0, 0, 2 * 8 * 1024 * 8192, V2).t, 1.1e-3, 0.10),
    ("09 P9.2", "ReduceScatter shard bytes", lambda: 2 * 8 * 1024 * 8192, 1.34e8, 0.01),
    ("09 P9.3", "one attention projection (s)",
     lambda: pr.expected_op_time(2 * B * T * D * D, 0, 0, V2, n_devices=8).t, 23.9e-3, 0.01),
    ("09 P9.3", "QK^T (s)",
     lambda: pr.expected_op_time(2 * B * T * T * D, 0, 0, V2, n_devices=8).t, 3.0e-3, 0.02),
    ("09 P9.6", "Q1 matvec achieved bandwidth (B/s)", lambda: 6.7e7 / 209e-6, 3.2e11, 0.02),
    ("09 P9.7d", "per-layer roofline, 8x1024 tokens (s)",
     lambda: pr.expected_op_time(8 * 1024 * (4 * D * F + 8 * D * D + 4 * T * D), 0, 0, V2,
                                 n_devices=8).t, 73e-3, 0.01),
    ("09 P9.7d", "MLP share", lambda: 4 * D * F / (4 * D * F + 8 * D * D + 4 * T * D), 0.65, 0.01),
    ("09 P9.7d", "attention projections share",
     lambda: 8 * D * D / (4 * D * F + 8 * D * D + 4 * T * D), 0.33, 0.02),  # "33%" rounded
    ("09 P9.4a", "f32[3,5] T(2,2) overhead", lambda: pr.layout_overhead("f32[3,5]{1,0:T(2,2)}"), 1.6, 1e-9),
    ("09 P9.4b", "bf16[4,8] T(2,4)(2,1) overhead",
     lambda: pr.layout_overhead("bf16[4,8]{1,0:T(2,4)(2,1)}"), 1.0, 1e-9),
    ("09 P9.4c", "bf16[32,32,8192] T(8,128)(2,1) overhead",
     lambda: pr.layout_overhead("bf16[32,32,8192]{2,1,0:T(8,128)(2,1)}"), 1.0, 1e-9),
    ("09 P9.4d", "f32[3,200] T(8,128) overhead",
     lambda: pr.layout_overhead("f32[3,200]{1,0:T(8,128)}"), 3.41, 0.002),
    ("10 formulas", "v5e hiding threshold F/n (bf16, one-way)",
     lambda: hardware.get("v5e").peak() / hardware.get("v5e").ici_link_bw_1way, 4378, 0.001),
    ("10 formulas", "v5p hiding threshold F/n", lambda: hardware.get("v5p").peak() /
     hardware.get("v5p").ici_link_bw_1way, 5100, 0.001),
]


@pytest.mark.parametrize("ref,what,fn,expected,rtol", SPEC, ids=[f"{s[0]}:{s[1]}" for s in SPEC])
def test_spec_numbers(ref, what, fn, expected, rtol):
    got = fn()
    assert got == pytest.approx(expected, rel=rtol), f"{ref} {what}: got {got:.4g}, spec {expected:.4g}"


def test_v2_core_constants():
    assert V2.peak("bf16") == 23e12
    assert V2.ici_bw_bidi == 1.2e11


# ---- shapes --------------------------------------------------------------------------------

SPEC_SHAPES = ["bf16[32,32,8192]{2,1,0:T(8,128)(2,1)S(1)}", "bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)}",
               "f32[3,5]{1,0:T(2,2)}", "bf16[4,8]{1,0:T(2,4)(2,1)}", "f32[3,200]{1,0:T(8,128)}",
               "bf16[32,32,8192]{2,1,0:T(8,128)(2,1)}", "bf16[8,1024,8192]", "bf16[8192,16384]",
               "bf16[8,1024,16384]", "bf16[4096]", "bf16[4096,8192]", "bf16[8192]", "bf16[2,8192]",
               "bf16[2,1024]", "bf16[8192,1024]", "f32[128,256]", "bf16[256,16]", "f32[4,6]{0,1}",
               "bf16[32,1024,8192]", "bf16[8192,32768]"]


@pytest.mark.parametrize("s", SPEC_SHAPES)
def test_parse_round_trip(s):
    assert str(pr.parse_hlo_shape(s)) == s


def test_shape_fields_p95():
    h = pr.parse_hlo_shape("bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)}")
    assert (h.dtype, h.dims, h.minor_to_major, h.tiles) == ("bf16", (32, 32, 4096), (2, 1, 0), ((8, 128), (2, 1)))
    assert h.memory == "VMEM" and h.bytes_per_element == 2
    assert pr.parse_hlo_shape("f32[4,6]{0,1}").physical_order == (1, 0)  # column-major


def test_padded_shapes_p94():
    assert pr.padded_shape("f32[3,5]{1,0:T(2,2)}") == (4, 6)
    assert pr.padded_shape("f32[3,200]{1,0:T(8,128)}") == (8, 256)
    assert pr.padded_shape("bf16[4,8]{1,0:T(2,4)(2,1)}") == (4, 8)
    # column-major: the tile's minor dim covers logical dim 0
    assert pr.padded_shape("f32[3,5]{0,1:T(2,4)}") == (4, 6)


def test_tiled_offsets_p94b():
    s = "bf16[4,8]{1,0:T(2,4)(2,1)}"
    first_tile = [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3)]
    assert [pr.tiled_offset(ix, s) for ix in first_tile] == list(range(8))
    assert pr.tiled_offset((0, 4), s) == 8      # the tile to the right comes next
    assert pr.tiled_offset((2, 0), s) == 16     # then the next tile row
    m = pr.memory_order("f32[3,5]{1,0:T(2,2)}")
    assert m[0].tolist() == [0, 1, 4, 5, 8] and m[2].tolist() == [12, 13, 16, 17, 20]


@settings(max_examples=40, deadline=None)
@given(r=st.integers(1, 9), c=st.integers(1, 17), t0=st.integers(1, 4), t1=st.integers(1, 8),
       col_major=st.booleans())
def test_tiled_offset_is_injective(r, c, t0, t1, col_major):
    s = f"f32[{r},{c}]{{{'0,1' if col_major else '1,0'}:T({t0},{t1})}}"
    m = pr.memory_order(s)
    slots = math.prod(pr.tiled_shape(s))
    assert len(set(m.ravel().tolist())) == r * c
    assert m.min() >= 0 and m.max() < slots
    assert pr.layout_overhead(s) == pytest.approx(slots / (r * c))


@pytest.mark.parametrize("bad,exc", [("bf16[4,8", ValueError), ("q7[3]", ValueError),
                                     ("f32[3,5]{1,1}", ValueError), ("f32[3,5]{1,0:X(2)}", ValueError),
                                     (42, TypeError)])
def test_parse_errors(bad, exc):
    with pytest.raises(exc):
        pr.parse_hlo_shape(bad)


def test_tiled_offset_errors():
    with pytest.raises(ValueError, match="outside"):
        pr.tiled_offset((4, 0), "bf16[4,8]{1,0}")
    with pytest.raises(ValueError, match="dims"):
        pr.tiled_offset((0,), "bf16[4,8]{1,0}")


def test_expected_op_time_errors():
    with pytest.raises(ValueError):
        pr.expected_op_time(-1, 0, 0, "v5e")
    with pytest.raises(ValueError):
        pr.expected_op_time(1, 0, 0, "v5e", n_devices=0)
    with pytest.raises(KeyError):
        pr.expected_op_time(1, 0, 0, "v99")
    with pytest.raises(ValueError, match="ICI"):
        pr.expected_op_time(1, 0, 1e6, "H100")


def test_op_time_bound_and_achieved():
    t = pr.expected_op_time(1e12, 1e9, 0, "v5e")
    assert t.bound == "compute" and t.t == pytest.approx(1e12 / 1.97e14)
    assert t.achieved(2 * t.t) == pytest.approx(0.5)
    assert pr.expected_op_time(1e9, 1e10, 0, "v5e").bound == "hbm"


# ---- real compiled programs --------------------------------------------------------------

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P  # noqa: E402


def ffn(x, w_in, w_out):
    with jax.named_scope("ffn_in"):
        h = jax.nn.gelu(x @ w_in)
    with jax.named_scope("ffn_out"):
        return h @ w_out


def _sds(*s, dtype=jnp.bfloat16, sharding=None):
    return jax.ShapeDtypeStruct(s, dtype, sharding=sharding)


def test_cost_analysis_vs_2bdf():
    r = pr.compile_report(ffn, _sds(256, 1024), _sds(1024, 4096), _sds(4096, 1024))
    assert r.flops == pytest.approx(2 * 2 * 256 * 1024 * 4096, rel=0.02)  # gelu adds ~1%
    assert r.n_devices == 1 and not r.collectives
    dots = [o for o in r.ops if "dot" in dict(o)["contains"] or dict(o)["op"] == "dot"]
    assert len(dots) == 2
    assert any("ffn_in" in dict(o)["source"] for o in dots)
    assert r.memory_bytes >= r.argument_bytes + r.output_bytes - r.alias_bytes
    assert r.argument_bytes == 2 * (256 * 1024 + 2 * 1024 * 4096)


def test_sharded_ffn_allreduce_and_groups():
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    sh = lambda *spec: NamedSharding(mesh, P(*spec))
    r = pr.compile_report(ffn, _sds(256, 1024, sharding=sh("data", None)),
                          _sds(1024, 4096, sharding=sh(None, "model")),
                          _sds(4096, 1024, sharding=sh("model", None)))
    assert r.n_devices == 8
    assert r.flops == pytest.approx(2 * 2 * 256 * 1024 * 4096 / 8, rel=0.03)  # per device
    kinds = [c.kind for c in r.collectives]
    assert kinds == ["all-reduce"]
    c = r.collectives[0]
    assert c.groups == ((0, 1, 2, 3), (4, 5, 6, 7))  # reduce over the 4-way model axis
    assert c.shape == (128, 1024) and c.group_size == 4
    assert r.ici_bytes == 2 * c.bytes


def test_q1_pattern_single_allreduce():
    """spec 09 demo 5: two chained matmuls with f sharded 8 ways -> one AllReduce of the output."""
    mesh = jax.make_mesh((8,), ("f",), axis_types=(AxisType.Auto,))
    sh = lambda *spec: NamedSharding(mesh, P(*spec))
    f = lambda x, w1, w2: jnp.einsum("wf,bf->bw", w2, jnp.einsum("fw,bw->bf", w1, x))
    r = pr.compile_report(f, _sds(8, 1024, sharding=sh()), _sds(4096, 1024, sharding=sh("f", None)),
                          _sds(1024, 4096, sharding=sh(None, "f")))
    assert [c.kind for c in r.collectives] == ["all-reduce"]
    assert r.collectives[0].groups == (tuple(range(8)),)


def test_explicit_mesh_forms_decoded():
    mesh = jax.make_mesh((4, 2), ("X", "Y"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        a = jax.device_put(np.ones((8, 2048), np.float32), P("X", "Y"))
        b = jax.device_put(np.ones((2048, 256), np.float32), P("Y", None))
        for spec in (P("X", None), P("X", "Y"), P(None, None)):
            hlo = jax.jit(lambda a, b: jnp.dot(a, b, out_sharding=spec)).lower(a, b).compile().as_text()
            cs = pr.collectives(hlo)
            ar = [c for c in cs if c.kind == "all-reduce"]
            assert ar, spec
            assert ar[-1].groups == ((0, 1), (2, 3), (4, 5), (6, 7)), (spec, ar[-1].replica_groups)
        hlo = jax.jit(lambda v: jax.sharding.reshard(v, P(None, "X"))).lower(a).compile().as_text()
        kinds = {c.kind for c in pr.collectives(hlo)}
        assert "all-to-all" in kinds
        a2a = [c for c in pr.collectives(hlo) if c.kind == "all-to-all"][0]
        assert a2a.bytes > 0 and a2a.group_size == 4


def test_many_outputs_entry_is_found():
    """long tuple signatures print '/*index=5*/' comments; the entry must still be parsed."""
    def many(x, w):
        y = x @ w
        return tuple(y * i for i in range(8))
    r = pr.compile_report(many, _sds(64, 64, dtype=jnp.float32), _sds(64, 64, dtype=jnp.float32))
    assert "/*index=5*/" in r.hlo
    assert any(dict(o)["contains"] == "dot" or dict(o)["op"] == "dot" for o in r.ops)
    assert r.sources()


def test_hlo_ops_rejects_garbage():
    with pytest.raises(ValueError):
        pr.hlo_ops("hello world")
    with pytest.raises(TypeError):
        pr.hlo_ops(None)


def test_stages_ladder_has_convert_and_transpose():
    f = lambda x, w: jnp.einsum("bf,fd->db", x, w)
    s = pr.stages(f, _sds(128, 256, dtype=jnp.float32), _sds(256, 16))
    assert set(s) == {"jaxpr", "stablehlo", "hlo_before", "hlo_after"}
    assert "convert" in s["hlo_before"] and "stablehlo" in s["stablehlo"]
    assert "f32[16,128]" in s["hlo_after"]


def test_compile_error_is_clear():
    with pytest.raises(pr.CompileError, match="could not trace"):
        pr.compile_report(lambda x: x @ x, _sds(3, 4))
    with pytest.raises(TypeError):
        pr.compile_report(3, _sds(3, 4))


# ---- traces ----------------------------------------------------------------------------------

def test_trace_capture_and_summary(tmp_path):
    f = jax.jit(lambda a: jnp.tanh(a @ a).sum())
    a = jnp.ones((256, 256), jnp.float32)
    t0 = time.perf_counter()
    pb = pr.capture_trace(f, a, logdir=tmp_path / "prof", steps=3)
    table = pr.op_table(pb)
    elapsed = time.perf_counter() - t0
    assert elapsed < 10, f"trace capture + summary took {elapsed:.1f} s (budget 10 s)"
    assert pb.endswith(".xplane.pb")
    assert table.rows and all(r.module.startswith("jit") for r in table.rows)
    assert sum(r.share for r in table.rows) == pytest.approx(1.0, abs=1e-9)
    assert len(pr.step_times(pb)) == 3
    assert "ui.perfetto.dev" in pr.viewer_help(tmp_path / "prof")
    assert pr.find_trace(tmp_path / "prof") == pb


def test_no_trace_errors(tmp_path):
    with pytest.raises(pr.NoTraceError, match="no \\*.xplane.pb"):
        pr.find_trace(tmp_path)
    with pytest.raises(pr.NoTraceError, match="does not exist"):
        pr.trace_events(tmp_path / "missing")
    with pytest.raises(pr.CompileError):
        pr.capture_trace(lambda x: x @ x, jnp.ones((3, 4)), logdir=tmp_path / "p")


# ---- collective matmul model (chapter 10) ---------------------------------------------------

def test_collective_matmul_threshold():
    v5e = hardware.get("v5e")
    n = 4
    thr = v5e.peak() / v5e.ici_link_bw_1way            # F/n at which t_c == t_p (bf16)
    at = pr.collective_matmul_time(1024, 2048, thr * n, 2, n, "v5e")
    assert at.t_compute_step == pytest.approx(at.t_permute_step)
    assert pr.collective_matmul_time(1024, 2048, 1.1 * thr * n, 2, n, "v5e").hidden
    assert not pr.collective_matmul_time(1024, 2048, 0.9 * thr * n, 2, n, "v5e").hidden
    bi = pr.collective_matmul_time(1024, 2048, 0.6 * thr * n, 2, n, "v5e", bidirectional=True)
    assert bi.hidden  # threshold halves to C/W_bi (≈2189 on v5e)
    hidden = pr.collective_matmul_time(1024, 2048, 4 * thr * n, 2, n, "v5e")
    assert hidden.collective == pytest.approx(hidden.no_comm)
    assert hidden.naive > hidden.collective


def test_collective_matmul_counts_both_sides_exactly():
    """Review ch10-12 M1: the naive AllGather carries the same (n-1)/n as the ring steps."""
    v5e = hardware.get("v5e")
    B, D, F, X, n = 1024, 2048, 8192, 2, 4
    V = 2 * (B / X) * D
    ring = pr.collective_matmul_time(B, D, F, X, n, "v5e")
    assert ring.naive - ring.no_comm == pytest.approx((n - 1) / n * V / v5e.ici_bw_bidi)
    # on a ring with wraparound the one-way collective matmul is NOT faster at F/n = 2048
    assert ring.collective > ring.naive
    assert pr.collective_matmul_time(B, D, F, X, n, "v5e", bidirectional=True).collective < ring.naive
    line = pr.collective_matmul_time(B, D, F, X, n, "v5e", wrap=False)
    assert line.naive - line.no_comm == pytest.approx((n - 1) / n * V / v5e.ici_link_bw_1way)
    assert line.collective < line.naive
    # bidirectional gains nothing on a line: the wrap message crosses every link
    assert pr.collective_matmul_time(B, D, F, X, n, "v5e", wrap=False,
                                     bidirectional=True).collective == pytest.approx(line.collective)
    # the book's int32 benchmark: the measured 224 us floor implies C_eff; comms are then hidden
    c_eff = 2 * (B / X) * D * (F / n) / 224e-6
    i32 = pr.collective_matmul_time(B, D, F, X, n, "v5e", bytes_per_elem=4, wrap=False,
                                    peak_flops=c_eff)
    assert i32.hidden and i32.no_comm == pytest.approx(224e-6)
    assert i32.collective == pytest.approx(224e-6)
    assert 280e-6 < i32.naive < 311e-6
    with pytest.raises(TypeError):
        pr.collective_matmul_time(B, D, F, X, n, "v5e", wrap="ring")
    with pytest.raises(ValueError):
        pr.collective_matmul_time(B, D, F, X, n, "v5e", peak_flops=-1.0)


def test_collective_matmul_timeline():
    bars = pr.collective_matmul_timeline(1024, 2048, 8192, 2, 4, "v5e")
    comp = [b for b in bars if b[0] == "compute" and b[1] == 0]
    perm = [b for b in bars if b[0] == "ppermute" and b[1] == 0]
    assert len(comp) == 4 and len(perm) == 3
    m = pr.collective_matmul_time(1024, 2048, 8192, 2, 4, "v5e")
    assert max(b[3] for b in bars) == pytest.approx(m.collective)
    naive = pr.collective_matmul_timeline(1024, 2048, 8192, 2, 4, "v5e", mode="naive")
    assert max(b[3] for b in naive) == pytest.approx(m.naive)
    with pytest.raises(ValueError):
        pr.collective_matmul_timeline(1024, 2048, 8192, 2, 0, "v5e")
    with pytest.raises(ValueError):
        pr.collective_matmul_timeline(1024, 2048, 8192, 2, 4, "v5e", mode="fast")


# ---- widgets (chapters 9 and 10) ---------------------------------------------------------

def test_widget_draws_are_fast_and_validate():
    import contextlib
    import io
    from scaling_lib import plots, widgets
    from scaling_lib.widgets import profiling as wp
    plots.set_style()
    progs = {"ffn": (4.3e9, 1.06e8, 0.0)}
    with contextlib.redirect_stdout(io.StringIO()):
        times = {
            "shape": widgets.time_update(wp.draw_shape, shape="bf16[4,8]{1,0:T(2,4)(2,1)}"),
            "cost": widgets.time_update(wp.draw_cost, program="ffn", chip="TPU v5e",
                                        measured_ms=1.0, programs=progs),
            "cm": widgets.time_update(wp.draw_collective_matmul, Y=16),
        }
    import os
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    for k, t in times.items():
        if t >= 0.1 and load > 1.5:
            pytest.skip(f"machine overloaded (load {load:.1f} per core): {k} took {t * 1e3:.0f} ms")
        assert t < 0.1, f"widget {k} redraw took {t * 1e3:.0f} ms (budget 100 ms)"
    with pytest.raises(ValueError):
        wp.plot_memory_order("bf16[2,2,2]")
    with pytest.raises(ValueError):
        wp.draw_cost(program="nope", chip="TPU v5e", measured_ms=0.0, programs=progs)


# ---- the three viewers: timeline, HLO graph, memory profile ---------------------------------

def _sharded_mlp():
    from jax.sharding import NamedSharding, PartitionSpec as P
    mesh = devices.mesh((4, 2), ("data", "model"), explicit=False)
    S = lambda *spec: NamedSharding(mesh, P(*spec))  # noqa: E731

    def layer(x, w1, w2):
        with jax.named_scope("mlp_in"):
            h = jax.nn.gelu(x @ w1)
        with jax.named_scope("mlp_out"):
            return h @ w2
    x = jax.device_put(jnp.ones((64, 32), jnp.float32), S("data", None))
    w1 = jax.device_put(jnp.ones((32, 128), jnp.float32) * 0.01, S(None, "model"))
    w2 = jax.device_put(jnp.ones((128, 32), jnp.float32) * 0.01, S("model", None))
    return jax.jit(layer), (x, w1, w2)


def test_timeline_bars_lanes_and_collectives(tmp_path):
    f, args = _sharded_mlp()
    rep = pr.compile_report(f, *args)
    pb = pr.capture_trace(f, *args, logdir=tmp_path / "p", steps=2)
    bars = pr.timeline_bars(pb, rep.sources(), step=1)
    op_lanes = {b.lane for b in bars if b.lane.endswith("XLA 算子")}
    assert op_lanes == {f"设备 {d} · XLA 算子" for d in range(8)}      # one op row per device
    for d in range(8):
        mine = [b for b in bars if b.lane == f"设备 {d} · XLA 算子"]
        assert sum(b.kind == "collective" for b in mine) == rep.collective_counts()["all-reduce"]
        assert sum(b.kind == "matmul" for b in mine) == 2               # the two dots
        assert any(b.lane == f"设备 {d} · XLA 模块" for b in bars)
    assert sum(b.kind == "step" for b in bars) == 1
    assert all(b.start_s >= 0 and b.duration_s > 0 for b in bars)
    step_len = next(b.duration_s for b in bars if b.kind == "step")
    assert all(b.start_s + b.duration_s <= step_len * (1 + 1e-9) for b in bars)
    assert {b.source for b in bars if b.kind == "matmul"} <= {s for s in rep.sources().values()}
    with pytest.raises(ValueError, match="no step 7"):
        pr.timeline_bars(pb, step=7)
    from scaling_lib import diagrams
    fig = diagrams.trace_timeline(bars)
    assert sum(len(t.y) for t in fig.data) == len(bars)
    coll = [t for t in fig.data if t.name == pr.BAR_KINDS["collective"]][0]
    assert len(coll.y) == 8 * rep.collective_counts()["all-reduce"]


def test_memory_profile_matches_xla_estimate():
    f, args = _sharded_mlp()
    rep = pr.compile_report(f, *args)
    mp = pr.memory_profile(rep.hlo)
    assert mp.argument_bytes == rep.argument_bytes
    assert mp.live.min() >= mp.argument_bytes                    # parameters live throughout
    assert mp.peak_bytes == pytest.approx(rep.memory_bytes, rel=0.25)
    names = [r[0] for r in mp.at_peak]
    assert sum(r[2] for r in mp.at_peak) == pytest.approx(mp.peak_bytes)
    assert all(a[2] >= b[2] for a, b in zip(mp.at_peak, mp.at_peak[1:]))   # largest first
    assert any(r[1] == "parameter" for r in mp.at_peak) and len(names) == len(set(names))
    from scaling_lib import diagrams
    fig = diagrams.memory_timeline(mp)
    assert max(fig.data[0].y) == pytest.approx(mp.peak_bytes / 1e3, rel=1e-5)


def test_memory_profile_toy_hlo():
    hlo = """HloModule m, is_scheduled=true
ENTRY %main (p: f32[1000]) -> f32[1000] {
  %p = f32[1000]{0} parameter(0)
  %a = f32[1000]{0} exponential(%p)
  %b = f32[2000]{0} concatenate(%a, %a), dimensions={0}
  %c = f32[1000]{0} slice(%b), slice={[0:1000]}
  ROOT %d = f32[1000]{0} negate(%c)
}"""
    mp = pr.memory_profile(hlo)
    # p lives throughout (4 kB); an operand is alive while its user runs, then freed:
    # a until b, b until c, c until d; d is the output
    assert list(mp.live) == [4000, 8000, 16000, 16000, 12000]
    assert mp.peak_index == 2 and {r[0] for r in mp.at_peak} == {"p", "a", "b"}


def test_fusion_graph_content():
    from scaling_lib import diagrams
    f, args = _sharded_mlp()
    rep = pr.compile_report(f, *args)
    fig = diagrams.fusion_graph(rep.hlo)
    entry = [o for o in pr.hlo_ops(rep.hlo) if o.in_entry]
    nodes = sum(len(t.x) for t in fig.data[1:])
    assert nodes == len(entry)
    coll = [t for t in fig.data if t.name == "集合通信"][0]
    assert [t.split()[0] for t in coll.text] == [c for c in rep.sources() if c.startswith("all-reduce")]
    sub = diagrams.fusion_graph(rep.hlo, scope="mlp_out")
    assert sum(len(t.x) for t in sub.data[1:]) < nodes
    with pytest.raises(ValueError, match="no instruction"):
        diagrams.fusion_graph(rep.hlo, scope="nothing-here")
    with pytest.raises(ValueError, match="no computation"):
        diagrams.fusion_graph(rep.hlo, computation="nope")
