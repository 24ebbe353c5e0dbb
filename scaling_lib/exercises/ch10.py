"""Chapter 10 exercises (spec 10, P10.1-P10.8) and the reference JAX programs they check.

Function exercises run the reader's JAX code on the 8 simulated devices and compare its output
numerically with the reference programs below (small random inputs, so each check takes a
second or two). The collective matmuls (10.4, 10.7, 10.7b, 10.7c, 10.8) take the reader's
per-device ``shard_map`` body and also check the collectives of its compiled HLO
(``hlo_check.Program``: ``PROGRAM_AG`` ... below, with the plausible wrong programs each must
reject); their slips are wrong per-device bodies, each the JAX form of a numpy model of the
mistake (tests/test_jax_chapter.py checks that the two agree). The reference programs are also what the chapter and
tests/test_jax_chapter.py verify: collective matmuls (AllGather side, ReduceScatter side,
AllReduce side, bidirectional), the FFN block built from them, the per-shard reductions and the
toy MoE. jax is imported inside the functions (``import scaling_lib`` stays jax-free).
Spec answers are pinned in tests/test_exercises.py (PINS).
"""
from __future__ import annotations

import functools

import numpy as np

from .. import hardware, profiling
from . import Exercise, Slip
from .hlo_check import Program

__all__ = ["EXERCISES", "ag_collective_matmul", "rs_collective_matmul", "ar_tiled_matmul",
           "bidirectional_ag_matmul", "ffn_block", "per_shard_mean", "roll_in_shard",
           "moe_reference", "moe_dense_buffer", "moe_allgather", "moe_topk", "slice_and_average",
           "MESH_XY", "MESH_X8"]

MESH_XY = ((2, 4), ("X", "Y"))    # collective matmuls: X = 2 (data), Y = 4 (the ring)
MESH_42 = ((4, 2), ("X", "Y"))    # P10.1 and P10.5: X = 4, Y = 2
MESH_X8 = ((8,), ("X",))          # MoE: 8-way expert sharding


@functools.lru_cache(maxsize=None)
def _mesh(shape, names):
    from .. import devices
    return devices.mesh(shape, names, prefer="cpu")


def _put(x, mesh, *spec):
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P
    return jax.device_put(np.asarray(x, np.float32), NamedSharding(mesh, P(*spec)))


# ---- collective matmuls (P10.4, P10.7, P10.8) -------------------------------------------------

def _ag_body(a, w):
    """Per device: a [B/X, D/n] travels around Y; w [D, F/n] stays. Book: sec-10-collective-matmul."""
    import jax
    n = jax.lax.axis_size("Y")
    j = jax.lax.axis_index("Y")
    dc = a.shape[1]
    shift = [(s, (s - 1) % n) for s in range(n)]          # device j receives from j + 1
    acc = a @ jax.lax.dynamic_slice_in_dim(w, j * dc, dc, axis=0)
    for k in range(1, n):
        a = jax.lax.ppermute(a, "Y", shift)
        acc = acc + a @ jax.lax.dynamic_slice_in_dim(w, ((j + k) % n) * dc, dc, axis=0)
    return acc


def _rs_body(t, w2):
    """Per device: t [B/X, F/n], w2 [F/n, D]; a running sum [B/X, D/n] travels to j + 1."""
    import jax
    n = jax.lax.axis_size("Y")
    j = jax.lax.axis_index("Y")
    dc = w2.shape[1] // n
    shift = [(s, (s + 1) % n) for s in range(n)]
    acc = t @ jax.lax.dynamic_slice_in_dim(w2, ((j - 1) % n) * dc, dc, axis=1)
    for s in range(1, n):
        acc = jax.lax.ppermute(acc, "Y", shift)
        acc = acc + t @ jax.lax.dynamic_slice_in_dim(w2, ((j - 1 - s) % n) * dc, dc, axis=1)
    return acc


def _bidir_body(a, w):
    """AllGather-side collective matmul with the moving block split by rows into two halves that
    travel in opposite directions: each link carries half the bytes per step."""
    import jax
    import jax.numpy as jnp
    n = jax.lax.axis_size("Y")
    j = jax.lax.axis_index("Y")
    dc = a.shape[1]
    h = a.shape[0] // 2
    top, bot = a[:h], a[h:]
    fwd = [(s, (s - 1) % n) for s in range(n)]            # top: receive from j + 1
    bwd = [(s, (s + 1) % n) for s in range(n)]            # bottom: receive from j - 1
    chunk = lambda c: jax.lax.dynamic_slice_in_dim(w, (c % n) * dc, dc, axis=0)
    acc_t = top @ chunk(j)
    acc_b = bot @ chunk(j)
    for k in range(1, n):
        top = jax.lax.ppermute(top, "Y", fwd)
        bot = jax.lax.ppermute(bot, "Y", bwd)
        acc_t = acc_t + top @ chunk(j + k)
        acc_b = acc_b + bot @ chunk(j - k)
    return jnp.concatenate([acc_t, acc_b], axis=0)


def _ar_body(a, w, n_tiles=4):
    """Per device: a [B/X, D/n], w [D/n, F]; F in ``n_tiles`` tiles, one psum over Y per tile."""
    import jax
    import jax.numpy as jnp
    tiles = np.array_split(np.arange(w.shape[1]), n_tiles)
    return jnp.concatenate([jax.lax.psum(a @ w[:, t[0]:t[-1] + 1], "Y") for t in tiles], axis=1)


def _ffn_body(x, w_in, w_out):
    """Per device: AllGather-side collective matmul, gelu, ReduceScatter-side collective matmul."""
    import jax
    return _rs_body(jax.nn.gelu(_ag_body(x, w_in)), w_out)


@functools.lru_cache(maxsize=None)
def _compiled(kind: str, n_tiles: int = 4):
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P
    mesh = _mesh(*MESH_XY)
    sm = functools.partial(jax.shard_map, mesh=mesh)
    if kind == "ag":
        f = sm(_ag_body, in_specs=(P("X", "Y"), P(None, "Y")), out_specs=P("X", "Y"))
    elif kind == "bidir":
        f = sm(_bidir_body, in_specs=(P("X", "Y"), P(None, "Y")), out_specs=P("X", "Y"))
    elif kind == "rs":
        f = sm(_rs_body, in_specs=(P("X", "Y"), P("Y", None)), out_specs=P("X", "Y"))
    elif kind == "ar":
        f = sm(functools.partial(_ar_body, n_tiles=n_tiles), in_specs=(P("X", "Y"), P("Y", None)),
               out_specs=P("X", None))
    elif kind == "ffn":
        f = sm(_ffn_body, in_specs=(P("X", "Y"), P(None, "Y"), P("Y", None)), out_specs=P("X", "Y"))
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return jax.jit(f), mesh


def _check_2d(name, x, rows_div, cols_div):
    x = np.asarray(x, np.float32)
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {x.shape}")
    if x.shape[0] % rows_div or x.shape[1] % cols_div:
        raise ValueError(f"{name} shape {x.shape} must be divisible by ({rows_div}, {cols_div}) "
                         "to shard it on the 2x4 mesh")
    return x


def ag_collective_matmul(a, w):
    """A[B_X, D_Y] · W[D, F_Y] -> Out[B_X, F_Y] on a 2x4 mesh, with ppermute around Y."""
    a = _check_2d("a", a, 2, 4)
    w = _check_2d("w", w, 4, 4)
    f, mesh = _compiled("ag")
    return np.asarray(f(_put(a, mesh, "X", "Y"), _put(w, mesh, None, "Y")))


def bidirectional_ag_matmul(a, w):
    """The AllGather-side collective matmul with a bidirectional ring (P10.8)."""
    a = _check_2d("a", a, 4, 4)
    w = _check_2d("w", w, 4, 4)
    f, mesh = _compiled("bidir")
    return np.asarray(f(_put(a, mesh, "X", "Y"), _put(w, mesh, None, "Y")))


def rs_collective_matmul(t, w2):
    """T[B_X, F_Y] · W2[F_Y, D] -> Out[B_X, D_Y] with the partial sums travelling (P10.7b)."""
    t = _check_2d("t", t, 2, 4)
    w2 = _check_2d("w2", w2, 4, 4)
    f, mesh = _compiled("rs")
    return np.asarray(f(_put(t, mesh, "X", "Y"), _put(w2, mesh, "Y", None)))


def ar_tiled_matmul(a, w):
    """A[B_X, D_Y] · W[D_Y, F] -> Out[B_X, F], F tiled, one psum per tile (P10.7a)."""
    a = _check_2d("a", a, 2, 4)
    w = _check_2d("w", w, 4, 4)
    f, mesh = _compiled("ar")
    return np.asarray(f(_put(a, mesh, "X", "Y"), _put(w, mesh, "Y", None)))


def ffn_block(x, w_in, w_out):
    """In[B_X, D_Y] -> AG collective matmul -> gelu -> RS collective matmul -> Out[B_X, D_Y]."""
    x = _check_2d("x", x, 2, 4)
    w_in = _check_2d("w_in", w_in, 4, 4)
    w_out = _check_2d("w_out", w_out, 4, 4)
    f, mesh = _compiled("ffn")
    return np.asarray(f(_put(x, mesh, "X", "Y"), _put(w_in, mesh, None, "Y"),
                        _put(w_out, mesh, "Y", None)))


# ---- shard_map warm-ups (P10.3, P10.5) -------------------------------------------------------

def slice_and_average(n: int = 512):
    """arange(n) over all 8 devices; the mean over devices of each shard's first 4 elements."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P
    mesh = _mesh((2, 4), ("x", "y"))
    v = _put(np.arange(n), mesh, ("x", "y"))
    f = jax.shard_map(lambda b: jax.lax.pmean(b[:4], ("x", "y")), mesh=mesh,
                      in_specs=P(("x", "y")), out_specs=P())
    return np.asarray(jax.jit(f)(v))


def per_shard_mean(a):
    """A[S_X, D_Y] on a 4x2 mesh -> [X, Y], entry (i, j) = mean of shard (i, j) (P10.5a)."""
    import jax
    from jax.sharding import PartitionSpec as P
    a = _check_2d("a", a, 4, 2)
    mesh = _mesh(*MESH_42)
    f = jax.shard_map(lambda b: b.mean(keepdims=True), mesh=mesh, in_specs=P("X", "Y"),
                      out_specs=P("X", "Y"))
    return np.asarray(jax.jit(f)(_put(a, mesh, "X", "Y")))


def roll_in_shard(x, shift):
    """roll(x, shift, axis=0) - x within each X shard of x[S_X, D_Y] (4x2 mesh) (P10.5b)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P
    x = _check_2d("x", x, 4, 2)
    mesh = _mesh(*MESH_42)
    f = jax.shard_map(lambda b: jnp.roll(b, int(shift), 0) - b, mesh=mesh,
                      in_specs=P("X", "Y"), out_specs=P("X", "Y"))
    return np.asarray(jax.jit(f)(_put(x, mesh, "X", "Y")))


# ---- toy MoE (P10.6) ----------------------------------------------------------------------

def moe_reference(a, w, route):
    """Out[i] = A[i] · W[route[i]] (numpy; small sizes only)."""
    a = np.asarray(a, np.float64)
    w = np.asarray(w, np.float64)
    r = np.asarray(route, np.int64)
    if a.ndim != 2 or w.ndim != 3 or r.shape != (a.shape[0],):
        raise ValueError(f"need a[S, D], w[E, D, F], route[S]; got {a.shape}, {w.shape}, {r.shape}")
    if r.min() < 0 or r.max() >= w.shape[0]:
        raise ValueError(f"route values must lie in [0, {w.shape[0]})")
    return np.einsum("sd,sdf->sf", a, w[r])


def moe_dense_buffer(a, w, route):
    """Local MoE through an [E, S, D] dispatch buffer (no [S, D, F] intermediate) in JAX."""
    import jax.numpy as jnp
    a = jnp.asarray(np.asarray(a, np.float32))
    w = jnp.asarray(np.asarray(w, np.float32))
    r = jnp.asarray(np.asarray(route, np.int32))
    E, S = w.shape[0], a.shape[0]
    onehot = (r[:, None] == jnp.arange(E)[None, :]).astype(jnp.int32)       # [S, E]
    slot = (jnp.cumsum(onehot, axis=0) - 1) * onehot                        # running count
    slot = slot.sum(axis=1)
    buf = jnp.zeros((E, S, a.shape[1]), a.dtype).at[r, slot].set(a)         # dispatch
    out = jnp.einsum("esd,edf->esf", buf, w)                                 # one matmul per expert
    return np.asarray(out[r, slot])                                          # combine


def moe_allgather(a, w, route):
    """W[E_X, D, F], A[S_X, D], route[S_X] on 8 devices: AllGather tokens, apply local experts,
    psum_scatter back to Out[S_X, F] (P10.6 c1)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P
    a = np.asarray(a, np.float32)
    w = np.asarray(w, np.float32)
    r = np.asarray(route, np.int32)
    if a.shape[0] % 8 or w.shape[0] % 8:
        raise ValueError("S and E must be multiples of 8 (one shard per device)")
    mesh = _mesh(*MESH_X8)

    def body(a_blk, w_blk, r_blk):
        e_loc = w_blk.shape[0]
        first = jax.lax.axis_index("X") * e_loc
        a_all = jax.lax.all_gather(a_blk, "X", tiled=True)                   # [S, D]
        r_all = jax.lax.all_gather(r_blk, "X", tiled=True)                   # [S]
        out = jnp.zeros((a_all.shape[0], w_blk.shape[2]), a_all.dtype)
        for e in range(e_loc):
            mask = (r_all == first + e)[:, None]
            out = out + jnp.where(mask, a_all @ w_blk[e], 0.0)
        return jax.lax.psum_scatter(out, "X", scatter_dimension=0, tiled=True)

    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("X"), P("X"), P("X")),
                              out_specs=P("X")))
    from jax.sharding import NamedSharding
    ra = jax.device_put(r, NamedSharding(mesh, P("X")))
    return np.asarray(f(_put(a, mesh, "X"), _put(w, mesh, "X"), ra))


def moe_topk(a, w, routes):
    """Top-k MoE: Out[i] = (1/k) Σ_j A[i] · W[routes[i, j]] (P10.6d)."""
    a = np.asarray(a, np.float64)
    r = np.asarray(routes, np.int64)
    if r.ndim != 2 or r.shape[0] != a.shape[0]:
        raise ValueError(f"routes must be [S, k]; got {r.shape} for S = {a.shape[0]}")
    return np.mean([moe_reference(a, w, r[:, j]) for j in range(r.shape[1])], axis=0)


# ---- samplers (small inputs: one compile, a few calls) --------------------------------------

def _normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32).round(3)


def _s_ag(rng):
    return {"a": _normal(rng, 8, 16), "w": _normal(rng, 16, 32)}


def _s_rs(rng):
    return {"t": _normal(rng, 8, 32), "w2": _normal(rng, 32, 16)}


def _s_ffn(rng):
    return {"x": _normal(rng, 8, 16), "w_in": _normal(rng, 16, 32) / 4, "w_out": _normal(rng, 32, 16) / 4}


def _s_mean(rng):
    return {"a": _normal(rng, 16, 8)}


def _s_roll(rng):
    return {"x": _normal(rng, 16, 8), "shift": int(rng.integers(1, 4))}


def _s_moe(rng):
    return {"a": _normal(rng, 16, 8), "w": _normal(rng, 8, 8, 4),
            "route": rng.integers(0, 8, 16).tolist()}


def _s_topk(rng):
    return {"a": _normal(rng, 16, 8), "w": _normal(rng, 8, 8, 4),
            "routes": rng.integers(0, 8, (16, 2)).tolist()}



# ---- declared slips of the function exercises (plain numpy: the grader runs them itself) -------

def _ring_ag(a, w, src, idx, n=4):
    """Global result of an AllGather-side ring on the 2x4 mesh where device j, at step k, holds
    the A block of device src(j, k) and multiplies it by the W chunk idx(j, k)."""
    a, w = np.asarray(a, np.float64), np.asarray(w, np.float64)
    dc, fc = a.shape[1] // n, w.shape[1] // n
    out = np.zeros((a.shape[0], w.shape[1]))
    for j in range(n):
        for k in range(n):
            s, i = src(j, k) % n, idx(j, k) % n
            out[:, j * fc:(j + 1) * fc] += a[:, s * dc:(s + 1) * dc] @ w[i * dc:(i + 1) * dc, j * fc:(j + 1) * fc]
    return out


def _ag_local_only(a, w):
    return _ring_ag_steps(a, w, 1)


def _ring_ag_steps(a, w, steps, n=4):
    a, w = np.asarray(a, np.float64), np.asarray(w, np.float64)
    dc, fc = a.shape[1] // n, w.shape[1] // n
    out = np.zeros((a.shape[0], w.shape[1]))
    for j in range(n):
        for k in range(steps):
            c = (j + k) % n
            out[:, j * fc:(j + 1) * fc] += a[:, c * dc:(c + 1) * dc] @ w[c * dc:(c + 1) * dc, j * fc:(j + 1) * fc]
    return out


def _ag_wrong_chunk(a, w):
    return _ring_ag(a, w, lambda j, k: j + k, lambda j, k: j - k)


def _bidir_same_chunk(a, w):
    """Both halves multiplied by chunk j + k although the bottom half came from j - k."""
    a, w = np.asarray(a, np.float64), np.asarray(w, np.float64)
    good = np.asarray(a, np.float64) @ w
    bad = _ring_ag(a, w, lambda j, k: j - k, lambda j, k: j + k)
    out = good.copy()
    rows = a.shape[0] // 2                          # per X shard: top half right, bottom half wrong
    for x in range(2):
        lo = x * rows + rows // 2
        out[lo:(x + 1) * rows] = bad[lo:(x + 1) * rows]
    return out


def _ar_no_psum(a, w, n=4):
    a, w = np.asarray(a, np.float64), np.asarray(w, np.float64)
    dc = a.shape[1] // n
    return a[:, :dc] @ w[:dc]


def _rs_local_only(t, w2, n=4):
    t, w2 = np.asarray(t, np.float64), np.asarray(w2, np.float64)
    fc, dc = t.shape[1] // n, w2.shape[1] // n
    out = np.zeros((t.shape[0], w2.shape[1]))
    for j in range(n):
        out[:, j * dc:(j + 1) * dc] = t[:, j * fc:(j + 1) * fc] @ w2[j * fc:(j + 1) * fc, j * dc:(j + 1) * dc]
    return out


def _rs_off_by_one(t, w2, n=4):
    """Started with column block j: device j ends with the full block j + 1."""
    full = np.asarray(t, np.float64) @ np.asarray(w2, np.float64)
    dc = full.shape[1] // n
    return np.concatenate([full[:, ((j + 1) % n) * dc:((j + 1) % n + 1) * dc] for j in range(n)], axis=1)


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def _ffn_no_gelu(x, w_in, w_out):
    return np.asarray(x, np.float64) @ np.asarray(w_in, np.float64) @ np.asarray(w_out, np.float64)


def _ffn_relu(x, w_in, w_out):
    h = np.asarray(x, np.float64) @ np.asarray(w_in, np.float64)
    return np.maximum(h, 0) @ np.asarray(w_out, np.float64)


def _blocks(a, fn, rows=4, cols=2):
    a = np.asarray(a, np.float64)
    r, c = a.shape[0] // rows, a.shape[1] // cols
    return np.array([[fn(a[i * r:(i + 1) * r, j * c:(j + 1) * c]) for j in range(cols)] for i in range(rows)])


def _mean_global(a):
    return np.full((4, 2), np.asarray(a, np.float64).mean())


def _roll_global(x, shift):
    x = np.asarray(x, np.float64)
    return np.roll(x, int(shift), 0) - x


def _roll_back(x, shift):
    return roll_in_shard(x, -int(shift))


def _moe_all_experts(a, w, route):
    return np.einsum("sd,edf->sf", np.asarray(a, np.float64), np.asarray(w, np.float64))


def _moe_mean_experts(a, w, route):
    return _moe_all_experts(a, w, route) / np.asarray(w).shape[0]


def _moe_own_shard_only(a, w, route):
    """Without the AllGather: each device only sees its own tokens, so a token is computed only
    when its expert lives on its own device."""
    a, r = np.asarray(a, np.float64), np.asarray(route, np.int64)
    s_loc, e_loc = a.shape[0] // 8, np.asarray(w).shape[0] // 8
    out = moe_reference(a, w, r)
    keep = (np.arange(a.shape[0]) // s_loc) == (r // e_loc)
    return out * keep[:, None]


def _topk_sum(a, w, routes):
    return moe_topk(a, w, routes) * np.asarray(routes).shape[1]


def _topk_first(a, w, routes):
    return moe_reference(a, w, np.asarray(routes)[:, 0])


def _eye(r, c):
    return np.eye(r, c, dtype=np.float32)


def _ar(r, c):
    return (np.arange(r * c, dtype=np.float32).reshape(r, c) % 7 - 3)

# ---- declared slips of the program exercises: wrong per-device bodies -----------------------
# Each is the body a reader would write with that mistake; tests/test_jax_chapter.py checks that
# its global result is the numpy model of the mistake above.

def _ag_slip_local(a, w):
    """Only the local block: no ring."""
    import jax
    j, dc = jax.lax.axis_index("Y"), a.shape[1]
    return a @ jax.lax.dynamic_slice_in_dim(w, j * dc, dc, axis=0)


def _ag_slip_chunk(a, w):
    """Receives from j + 1 but multiplies W's row block (j - k), not (j + k)."""
    import jax
    n, j = jax.lax.axis_size("Y"), jax.lax.axis_index("Y")
    dc = a.shape[1]
    shift = [(s, (s - 1) % n) for s in range(n)]
    acc = a @ jax.lax.dynamic_slice_in_dim(w, j * dc, dc, axis=0)
    for k in range(1, n):
        a = jax.lax.ppermute(a, "Y", shift)
        acc = acc + a @ jax.lax.dynamic_slice_in_dim(w, ((j - k) % n) * dc, dc, axis=0)
    return acc


def _bidir_slip_chunk(a, w):
    """The bottom half travels from j - 1 but is multiplied by chunk (j + k), like the top half."""
    import jax
    import jax.numpy as jnp
    n, j = jax.lax.axis_size("Y"), jax.lax.axis_index("Y")
    dc, h = a.shape[1], a.shape[0] // 2
    top, bot = a[:h], a[h:]
    chunk = lambda c: jax.lax.dynamic_slice_in_dim(w, (c % n) * dc, dc, axis=0)  # noqa: E731
    acc_t, acc_b = top @ chunk(j), bot @ chunk(j)
    for k in range(1, n):
        top = jax.lax.ppermute(top, "Y", [(s, (s - 1) % n) for s in range(n)])
        bot = jax.lax.ppermute(bot, "Y", [(s, (s + 1) % n) for s in range(n)])
        acc_t, acc_b = acc_t + top @ chunk(j + k), acc_b + bot @ chunk(j + k)
    return jnp.concatenate([acc_t, acc_b], axis=0)


def _ar_slip_no_psum(a, w):
    import jax.numpy as jnp
    f4 = w.shape[1] // 4
    return jnp.concatenate([a @ w[:, t * f4:(t + 1) * f4] for t in range(4)], axis=1)


def _ar_slip_pmean(a, w):
    import jax
    import jax.numpy as jnp
    f4 = w.shape[1] // 4
    return jnp.concatenate([jax.lax.pmean(a @ w[:, t * f4:(t + 1) * f4], "Y") for t in range(4)], axis=1)


def _rs_slip_local(t, w2):
    """Only this device's share of F, no ring."""
    import jax
    j, dc = jax.lax.axis_index("Y"), w2.shape[1] // jax.lax.axis_size("Y")
    return t @ jax.lax.dynamic_slice_in_dim(w2, j * dc, dc, axis=1)


def _rs_slip_start(t, w2):
    """Starts with column block j (not j - 1): the partial sums land one device early."""
    import jax
    n, j = jax.lax.axis_size("Y"), jax.lax.axis_index("Y")
    dc = w2.shape[1] // n
    shift = [(s, (s + 1) % n) for s in range(n)]
    col = lambda c: jax.lax.dynamic_slice_in_dim(w2, (c % n) * dc, dc, axis=1)  # noqa: E731
    acc = t @ col(j)
    for s in range(1, n):
        acc = jax.lax.ppermute(acc, "Y", shift) + t @ col(j - s)
    return acc


def _ffn_slip_no_gelu(x, w_in, w_out):
    return _rs_body(_ag_body(x, w_in), w_out)


def _ffn_slip_relu(x, w_in, w_out):
    import jax
    return _rs_body(jax.nn.relu(_ag_body(x, w_in)), w_out)


# Right numbers through the wrong collectives: what the program check exists to catch.

def _ag_wrong_gather(a, w):
    """The plain way: AllGather A along Y, then one local matmul."""
    import jax
    return jax.lax.all_gather(a, "Y", axis=1, tiled=True) @ w


def _ag_wrong_psum(a, w):
    """AllGather in disguise: each device writes its block into zeros, psum assembles A."""
    import jax
    import jax.numpy as jnp
    n, j = jax.lax.axis_size("Y"), jax.lax.axis_index("Y")
    full = jnp.zeros((a.shape[0], a.shape[1] * n), a.dtype)
    return jax.lax.psum(jax.lax.dynamic_update_slice_in_dim(full, a, j * a.shape[1], axis=1), "Y") @ w


def _rs_wrong_scatter(t, w2):
    import jax
    return jax.lax.psum_scatter(t @ w2, "Y", scatter_dimension=1, tiled=True)


def _rs_wrong_psum(t, w2):
    import jax
    n, j = jax.lax.axis_size("Y"), jax.lax.axis_index("Y")
    dc = w2.shape[1] // n
    return jax.lax.dynamic_slice_in_dim(jax.lax.psum(t @ w2, "Y"), j * dc, dc, axis=1)


def _ffn_wrong_plain(x, w_in, w_out):
    import jax
    return _rs_wrong_scatter(jax.nn.gelu(_ag_wrong_gather(x, w_in)), w_out)


def _ar_wrong_gather(a, w):
    import jax
    return jax.lax.all_gather(a, "Y", axis=1, tiled=True) @ jax.lax.all_gather(w, "Y", axis=0, tiled=True)


_NEED_PERMUTE = "这道题要用 jax.lax.ppermute 沿环 Y 把块传给邻居（HLO 里是 collective-permute）。"
_NO_AR = ("集合矩阵乘法只沿环传块：psum 会把整份结果归约一遍，正是要拆开、藏到计算后面的那次集合通信。")
_NO_A2A = "这里用不着 all_to_all：只需沿环把块传给邻居（ppermute）。"
_AG_SIDE = dict(mesh=MESH_XY, in_specs={"a": ("X", "Y"), "w": (None, "Y")}, out_spec=("X", "Y"),
                require={"collective-permute": _NEED_PERMUTE},
                forbid={"all-gather": "这道题的意思是不先把 A 收集完整：每一步用 ppermute 把手里的块传给邻居，"
                                      "同时乘 W 对应的行块，让通信藏在计算后面。all_gather（或让 jit 替你收集）"
                                      "就是要避免的那次 AllGather。",
                        "all-reduce": _NO_AR, "reduce-scatter": _NO_AR, "all-to-all": _NO_A2A})
PROGRAM_AG = Program(body=_ag_body, **_AG_SIDE,
                     wrong=((_ag_wrong_gather, "你的程序里有 all-gather"), (_ag_wrong_psum, "你的程序里有 all-reduce")))
PROGRAM_BIDIR = Program(body=_bidir_body, **_AG_SIDE,
                        both_ways="双向环要让上半块收自 j + 1、下半块收自 j − 1，两个方向的链路同时用上。",
                        wrong=((_ag_body, "只往一个方向传"), (_ag_wrong_gather, "你的程序里有 all-gather")))
PROGRAM_RS = Program(
    body=_rs_body, mesh=MESH_XY, in_specs={"t": ("X", "Y"), "w2": ("Y", None)}, out_spec=("X", "Y"),
    require={"collective-permute": "这道题要用 jax.lax.ppermute 沿环传部分和（HLO 里是 collective-permute）。"},
    forbid={"reduce-scatter": "这道题要的是不用 psum_scatter：把 ReduceScatter 拆成 n − 1 次 ppermute，"
                              "一边传部分和，一边算下一块。",
            "all-reduce": "这道题要的是不做 AllReduce（psum 后再切）：部分和沿环传 n − 1 步，每步只传 [B/X, D/n]。",
            "all-gather": "不要先收集 T 或 W₂：ReduceScatter 一侧传的是部分和，不是输入。",
            "all-to-all": _NO_A2A},
    wrong=((_rs_wrong_scatter, "你的程序里有 reduce-scatter"), (_rs_wrong_psum, "你的程序里有 all-reduce")))
PROGRAM_FFN = Program(
    body=_ffn_body, mesh=MESH_XY, in_specs={"x": ("X", "Y"), "w_in": (None, "Y"), "w_out": ("Y", None)},
    out_spec=("X", "Y"), require={"collective-permute": _NEED_PERMUTE},
    forbid={"all-gather": "上投影要用 AllGather 一侧的集合矩阵乘法（10.4），不要先收集输入。",
            "reduce-scatter": "下投影要用 ReduceScatter 一侧的集合矩阵乘法（10.7b），不要用 psum_scatter。",
            "all-reduce": "下投影的部分和要沿环传（10.7b），不要 psum。", "all-to-all": _NO_A2A},
    wrong=((_ffn_wrong_plain, "你的程序里有 all-gather"),))
PROGRAM_AR = Program(
    body=_ar_body, mesh=MESH_XY, in_specs={"a": ("X", "Y"), "w": ("Y", None)}, out_spec=("X", None),
    require={"all-reduce": "每块本地相乘之后要沿 Y 用 psum 把部分和加起来（HLO 里是 all-reduce）。"},
    forbid={"all-gather": "这道题不收集 A 或 W：收缩维度 D 留在各设备上，部分和用 psum 加起来。",
            "reduce-scatter": "输出要在 Y 上完整复制（P('X', None)），用 psum，不用 psum_scatter。"},
    wrong=((_ar_wrong_gather, "你的程序里有 all-gather"),))


# ---- numeric answers -----------------------------------------------------------------------

def _threshold(bidirectional=False, chip="v4p", dtype="bf16"):
    """F/n above which each ppermute hides behind its matmul: (b/2) C / W (b bytes per element).
    The exercises ask it on the v4p (the chapter works the v5e); in 10.8b for int8, which the v4p
    runs no faster than bf16."""
    c = hardware.get(chip)
    b = {"bf16": 2, "int8": 1}[dtype]
    return b / 2 * c.peak(dtype) / (c.ici_bw_bidi if bidirectional else c.ici_link_bw_1way)


CM104 = (2048, 4096, 32768, 2, 4)     # 10.4c: B, D, F, X, Y (the chapter uses the book's 1024, 2048, 8192)


def _p104_times(**kw):
    m = profiling.collective_matmul_time(*CM104, "v5e", **kw)
    return [m.naive, m.collective]


def _p104_slip_uni_naive():
    B, D, F, X, n = CM104
    t_c = 2 * (B / X) * (D / n) * (F / n) / 1.97e14
    t_p = 2 * (B / X) * (D / n) / 4.5e10
    return [(n - 1) / n * 2 * (B / X) * D / 4.5e10 + n * t_c, t_c + (n - 1) * max(t_c, t_p)]


_FN = dict(kind="function", rtol=1e-3, atol=1e-3, n_samples=3)

EXERCISES = [
    Exercise("10.1", "local_shapes", "numbers", lambda: [2, 1024, 1024, 8192, 2, 8192], rtol=0,
             unit="（元素）", labels=("In 行", "In 列", "W 行", "W 列", "输出行", "输出列"),
             slips=(Slip("In 的列没有切：分片 [B_X, D_Y] 的 D 沿 Y:2 切开，每个设备 1024 列。",
                         [2, 2048, 1024, 8192, 2, 8192]),
                    Slip("把 X 和 Y 的大小弄反了：网格是 X:4、Y:2，行除以 4、D 除以 2。",
                         [4, 512, 512, 8192, 4, 8192])),
             explain="In 在 X、Y 上各切一刀，W 只在 D 上被 Y 切开；输出沿 X 切、在 Y 上是部分和。"),
    Exercise("10.1b", "collective", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "X 切的是批次，每个设备的批次行互不相干，不需要沿 X 收集；要合并的是沿 Y 切开的收缩维度 D 上的部分和。",
                  "C": "AllToAll 用来把一个维度的分片换到另一个维度上；这里是同一个输出块的几份部分和要加起来。",
                  "D": "收缩维度 D 沿 Y 切开，每个设备只算出部分和，必须沿 Y 加起来才是结果。"},
             explain="收缩维度 D 在 Y 上切开，输出要求 P('X', None)：每个设备的部分和必须沿 Y 全归约。"),
    Exercise("10.2", "typeof_answer", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "jax.typeof 给的是全局形状，带上每一维的分片轴；[4,1] 是每个设备的局部形状。",
                  "C": "显式网格下类型里带着分片：逐元素运算保持输入的分片，要写成 8@X、2@Y。",
                  "D": "第二维也沿 Y 切开了；逐元素运算不会丢掉任何一维的分片。"},
             explain="逐元素运算保持分片，jax.typeof 在追踪时就给出 float32[8@X,2@Y]。"),
    Exercise("10.3", "first4_mean", "numbers", lambda: slice_and_average(1024).tolist(), rtol=0,
             atol=1e-6,
             slips=(Slip("每个分片按 64 个元素算了：arange(1024) 分到 8 个设备上，每个分片 128 个元素。",
                         [224.0, 225.0, 226.0, 227.0]),
                    Slip("只取了第一个分片的前 4 个元素：pmean 还要在 8 个设备之间求平均。", [0.0, 1.0, 2.0, 3.0])),
             explain="8 个分片第 i 个元素是 128k+i，平均 448+i。"),
    Exercise("10.4", "collective_matmul", sampler=_s_ag, expected=ag_collective_matmul, **_FN,
             edge_cases=({"a": _ar(8, 16), "w": _eye(16, 32)},),
             program=PROGRAM_AG,
             slips=(Slip("只乘了本地那一块：A 的块要沿环传 n - 1 次，每块都和 W 的对应行块乘一次再累加。", _ag_slip_local),
                    Slip("W 的行块选反了：第 k 步手里的 A 块来自 j + k，要乘 W 的第 (j + k) mod n 块，不是 (j - k)。",
                         _ag_slip_chunk)),
             explain="每一步乘手里的那块，同时把它传给邻居；4 步之后每块 A 都用过一次。"),
    Exercise("10.4b", "f_over_n_threshold", "number", _threshold, rtol=0.03, unit="（元素）",
             slips=(Slip("这是 v5e 的门槛（正文的例子）：这道题是 v4p，C = 2.75e14、单向链路 4.5e10 B/s。",
                         lambda: _threshold(chip="v5e")),
                    Slip("按双向带宽算了：单向环每步只用一个方向的链路。", lambda: _threshold(True))),
             explain="F/n 超过约 6100（v4p，bf16，单向环），ppermute 就能完全藏在计算后面。"),
    Exercise("10.4c", "cm_times", "numbers", _p104_times, rtol=0.03, unit="秒", labels=("朴素", "集合"),
             slips=(Slip("朴素写法的 AllGather 按单向带宽算了：它在环上两个方向都用，按 W_bi = 9e10 B/s。",
                         _p104_slip_uni_naive),
                    Slip("顺序弄反了：先朴素，后集合。", lambda: _p104_times()[::-1])),
             explain="这组尺寸下 F/n = 8192 超过门槛约 4378：每步的通信藏在计算后面，集合矩阵乘法比朴素写法快。"),
    Exercise("10.5", "shard_means", sampler=_s_mean, expected=per_shard_mean, **_FN,
             edge_cases=({"a": _ar(16, 8)},),
             slips=(Slip("求的是和，不是平均：每个分片 4×4 = 16 个元素，和要再除以 16。", lambda a: _blocks(a, np.sum)),
                    Slip("求的是整个数组的平均（用了 pmean 或全局 mean）：每个分片要有自己的平均值。", _mean_global)),
             explain="每个分片自己求平均，输出按 P('X','Y') 拼成 [X, Y]：不需要任何通信。"),
    Exercise("10.5b", "roll_minus_x", sampler=lambda rng: _s_roll(rng), expected=roll_in_shard, **_FN,
             edge_cases=({"x": _ar(16, 8), "shift": 0}, {"x": _ar(16, 8), "shift": 4}),
             slips=(Slip("滚动的是整个数组：只能在每个 X 分片（4 行）内部滚动，分片边界上的行不能跨到相邻分片。",
                         _roll_global),
                    Slip("滚动方向反了：roll(x, shift) 把第 i 行移到第 i + shift 行。", _roll_back)),
             explain="roll 只在分片内部进行，同样零通信。"),
    Exercise("10.6", "moe_local", sampler=_s_moe, expected=moe_reference, **_FN,
             edge_cases=({"a": _ar(16, 8), "w": _ar(64, 4).reshape(8, 8, 4), "route": [0] * 16},
                         {"a": _ar(16, 8), "w": _ar(64, 4).reshape(8, 8, 4), "route": list(range(8)) * 2}),
             slips=(Slip("把所有专家的结果加起来了：没有按路由做掩码，每个 token 只用它路由到的那一个专家。",
                         _moe_all_experts),
                    Slip("对所有专家取了平均：这是稠密混合，不是路由；每个 token 只用一个专家。", _moe_mean_experts)),
             explain="按专家分桶（或排序后用 ragged_dot），就不必物化 [S, D, F] 的中间结果。"),
    Exercise("10.6c", "moe_sharded", sampler=_s_moe, expected=moe_reference, **_FN,
             edge_cases=({"a": _ar(16, 8), "w": _ar(64, 4).reshape(8, 8, 4), "route": [0] * 16},
                         {"a": _ar(16, 8), "w": _ar(64, 4).reshape(8, 8, 4), "route": list(range(8)) * 2}),
             slips=(Slip("只算了路由到本设备专家的本地 token：先要沿 X 对 token 和路由做 all_gather，"
                         "别的设备上的 token 也可能路由到这里的专家。", _moe_own_shard_only),
                    Slip("每个设备把所有 token 都乘了自己的专家、没有掩码：psum_scatter 之后每个 token 得到了所有专家之和。",
                         _moe_all_experts)),
             explain="AllGather 之后每个分片只算自己的专家，psum_scatter 把结果按 token 分回去。"),
    Exercise("10.6d", "moe_top2", sampler=_s_topk, expected=moe_topk, **_FN,
             edge_cases=({"a": _ar(16, 8), "w": _ar(64, 4).reshape(8, 8, 4), "routes": [[3, 3]] * 16},),
             slips=(Slip("两个专家的结果加起来了，没有除以 k = 2：题目要的是平均。", _topk_sum),
                    Slip("只用了每个 token 的第一个专家：routes 的第二列也要分发。", _topk_first)),
             explain="每个 (token, 专家) 对单独分发，合并时取平均（或按路由权重加权）。"),
    Exercise("10.7", "ar_matmul", sampler=_s_ag, expected=ar_tiled_matmul, **_FN,
             edge_cases=({"a": _ar(8, 16), "w": _eye(16, 32)},),
             program=PROGRAM_AR,
             slips=(Slip("没有 psum：每个设备只有收缩维度 D 上自己那一段的部分和，要沿 Y 加起来。", _ar_slip_no_psum),
                    Slip("用了 pmean：部分和要相加（psum），求平均会小 n = 4 倍。", _ar_slip_pmean)),
             explain="按 F 分块，每块一次 psum：后一块的计算可以和前一块的 AllReduce 重叠。"),
    Exercise("10.7b", "rs_matmul", sampler=_s_rs, expected=rs_collective_matmul, **_FN,
             edge_cases=({"t": _ar(8, 32), "w2": _eye(32, 16)},),
             program=PROGRAM_RS,
             slips=(Slip("部分和没有沿环传递：设备 j 只算了自己那段 F 的贡献，n 步累加之后才是完整的第 j 块。",
                         _rs_slip_local),
                    Slip("起点错了一格：第一步算了第 j 块，这份部分和传 n - 1 步后落在设备 j - 1 上，设备 j 拿到的是第 j + 1 块；"
                         "第一步要算第 (j - 1) mod n 块，让它传 n - 1 步后正好落到 j。", _rs_slip_start)),
             explain="传的是部分和 [B/X, D/n]，n 次累加之后设备 j 手里正好是第 j 块。"),
    Exercise("10.7c", "ffn", sampler=_s_ffn, expected=ffn_block, **_FN,
             edge_cases=({"x": _ar(8, 16), "w_in": _eye(16, 32), "w_out": _eye(32, 16)},),
             program=PROGRAM_FFN,
             slips=(Slip("漏了 gelu：两次矩阵乘法之间要过非线性。", _ffn_slip_no_gelu),
                    Slip("用了 relu：题目说的是 jax.nn.gelu。", _ffn_slip_relu)),
             explain="上投影用 AllGather 一侧的集合矩阵乘法，下投影用 ReduceScatter 一侧的。"),
    Exercise("10.4d", "hide_v4p", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "“大”要和门槛比：v4p 上单向环的门槛 C/W_uni 约 6100，4096 不到。",
                  "C": "B/X 同时出现在每步的计算和传输里，在比值里约掉了：批次不改变谁长谁短。",
                  "D": "X 只把批次分开，和 B 一样在比值里约掉了。"},
             explain="4096 < 6100：每步传输比计算长；换成双向环（门槛约 3056）才藏得住。"),
    Exercise("10.5c", "shard_comm", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "要的是每个分片自己的平均，不是一整行的平均：不用跨分片求和。",
                  "C": "每个设备只用自己的分片就能算出自己的结果，不需要看到整个数组。",
                  "D": "输出是 [X, Y] 的分片数组，每个设备一项，不是一个全局标量。"},
             explain="片内计算、输出按 P('X','Y') 分片：零通信。"),
    Exercise("10.6f", "moe_after_gather", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "每个分片只有一个专家的权重：它算不了别的专家。",
                  "C": "自己原来那批 token 大多路由到别的分片的专家，这个分片没有它们的权重。",
                  "D": "那是用 AllToAll 的写法（思考题 10.6e）；10.6c 用的是 AllGather 加 psum_scatter。"},
             explain="各分片只算自己专家的 token，psum_scatter 合并并按 token 分回。"),
    Exercise("10.7d", "why_tiles", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "传的总字节不变：每块的部分和加起来还是整个输出。",
                  "C": "psum 对数组大小没有限制。",
                  "D": "W 的分片大小不因切块而变：切的是计算的顺序。"},
             explain="切块是为了重叠：第 k 块的 AllReduce 和第 k+1 块的乘法同时进行。"),
    Exercise("10.8", "bidir_matmul", sampler=_s_ag, expected=bidirectional_ag_matmul, **_FN,
             edge_cases=({"a": _ar(8, 16), "w": _eye(16, 32)},),
             program=PROGRAM_BIDIR,
             slips=(Slip("下半块乘错了 W 的行块：它收自 j - 1，第 k 步手里是 j - k 的块，要乘 W 的第 (j - k) mod n 块。",
                         _bidir_slip_chunk),
                    Slip("只乘了本地那一块：两半都要沿环传 n - 1 次。", _ag_slip_local)),
             explain="两半数据各走一个方向，每条链路每步只传一半字节。"),
    Exercise("10.8b", "f_over_n_bidir", "number", lambda: _threshold(True, dtype="int8"), rtol=0.03,
             unit="（元素）",
             slips=(Slip("只减了一半：双向环让带宽翻倍，int8 让每个元素的字节减半，而 v4p 的 int8 不比 bf16 快，"
                         "门槛要减两次半（按 bf16、按单向环、或按 int8 峰值翻倍算都会得到约 3056）。",
                         lambda: _threshold(True)),
                    Slip("这是 v5e 的双向门槛（正文的例子）：这道题是 v4p、int8。",
                         lambda: _threshold(True, chip="v5e"))),
             explain="v4p 上 int8 不比 bf16 快，字节却减半：双向环加 int8，门槛降到约 1528。"),
]
