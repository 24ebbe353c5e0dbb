"""Chapter 10 programs on 8 simulated devices: collective matmuls (numerics against the plain
matmul and the collectives in their compiled HLO), shard_map warm-ups and the toy MoE."""
from scaling_lib import devices

devices.setup(8)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

from scaling_lib import profiling as pr  # noqa: E402
from scaling_lib.exercises import ch10  # noqa: E402

RNG = np.random.default_rng(1)


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("B,D,F", [(8, 16, 32), (16, 32, 64), (4, 64, 16)])
def test_ag_collective_matmul_equals_matmul(B, D, F):
    a, w = _rand(B, D), _rand(D, F)
    np.testing.assert_allclose(ch10.ag_collective_matmul(a, w), a @ w, rtol=1e-4, atol=1e-4)


def test_chunk_index_depends_on_device():
    """spec P10.4 pitfall: using chunk k instead of (j + k) mod n gives a wrong answer."""
    from scaling_lib.exercises.ch10 import _mesh, _put, MESH_XY

    def buggy(a, w):
        n = jax.lax.axis_size("Y")
        dc = a.shape[1]
        acc = a @ w[:dc]
        for k in range(1, n):
            a = jax.lax.ppermute(a, "Y", [(s, (s - 1) % n) for s in range(n)])
            acc = acc + a @ w[k * dc:(k + 1) * dc]
        return acc
    mesh = _mesh(*MESH_XY)
    f = jax.jit(jax.shard_map(buggy, mesh=mesh, in_specs=(P("X", "Y"), P(None, "Y")),
                              out_specs=P("X", "Y")))
    a, w = _rand(8, 16), _rand(16, 32)
    got = np.asarray(f(_put(a, mesh, "X", "Y"), _put(w, mesh, None, "Y")))
    assert not np.allclose(got, a @ w, atol=1e-3)


def test_collective_matmul_hlo_has_permutes_not_allgather():
    f, mesh = ch10._compiled("ag")
    a = ch10._put(_rand(8, 16), mesh, "X", "Y")
    w = ch10._put(_rand(16, 32), mesh, None, "Y")
    cm = pr.collective_counts(f.lower(a, w).compile().as_text())
    assert cm["collective-permute"] == 3 and cm["all-gather"] == 0
    with jax.set_mesh(mesh):
        ref = jax.jit(lambda a, w: jnp.dot(a, w, out_sharding=P("X", "Y")))
        plain = pr.collective_counts(ref.lower(a, w).compile().as_text())
    assert plain["all-gather"] == 1 and plain["collective-permute"] == 0


def test_rs_ar_bidir_ffn_numerics():
    a, w = _rand(8, 16), _rand(16, 32)
    np.testing.assert_allclose(ch10.ar_tiled_matmul(a, w), a @ w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ch10.bidirectional_ag_matmul(a, w), a @ w, rtol=1e-4, atol=1e-4)
    t, w2 = _rand(8, 32), _rand(32, 16)
    np.testing.assert_allclose(ch10.rs_collective_matmul(t, w2), t @ w2, rtol=1e-4, atol=1e-4)
    w_in, w_out = _rand(16, 32) / 4, _rand(32, 16) / 4
    ref = np.asarray(jax.nn.gelu(a @ w_in)) @ w_out
    np.testing.assert_allclose(ch10.ffn_block(a, w_in, w_out), ref, rtol=1e-4, atol=1e-4)


def test_rs_and_bidir_hlo():
    f, mesh = ch10._compiled("rs")
    t = ch10._put(_rand(8, 32), mesh, "X", "Y")
    w2 = ch10._put(_rand(32, 16), mesh, "Y", None)
    c = pr.collective_counts(f.lower(t, w2).compile().as_text())
    assert c["collective-permute"] == 3 and c["all-reduce"] == 0 and c["reduce-scatter"] == 0
    f, mesh = ch10._compiled("bidir")
    a = ch10._put(_rand(8, 16), mesh, "X", "Y")
    w = ch10._put(_rand(16, 32), mesh, None, "Y")
    perms = [x for x in pr.collectives(f.lower(a, w).compile().as_text()) if x.kind == "collective-permute"]
    assert len(perms) == 6
    assert {x.bytes for x in perms} == {2 * 4 * 4}     # half of the [4, 4] f32 block each way


def test_slice_and_average_p103():
    assert ch10.slice_and_average().tolist() == [224.0, 225.0, 226.0, 227.0]


def test_per_shard_mean_and_roll_p105():
    a = _rand(16, 8)
    np.testing.assert_allclose(ch10.per_shard_mean(a), a.reshape(4, 4, 2, 4).mean(axis=(1, 3)),
                               rtol=1e-5, atol=1e-6)
    ref = (np.roll(a.reshape(4, 4, 8), 3, axis=1) - a.reshape(4, 4, 8)).reshape(16, 8)
    np.testing.assert_allclose(ch10.roll_in_shard(a, 3), ref, atol=1e-6)


def test_moe_versions_agree_p106():
    a, w = _rand(16, 8), _rand(8, 8, 4)
    r = RNG.integers(0, 8, 16)
    ref = ch10.moe_reference(a, w, r)
    np.testing.assert_allclose(ch10.moe_dense_buffer(a, w, r), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ch10.moe_allgather(a, w, r), ref, rtol=1e-4, atol=1e-4)
    r2 = RNG.integers(0, 8, (16, 2))
    np.testing.assert_allclose(ch10.moe_topk(a, w, r2),
                               (ch10.moe_reference(a, w, r2[:, 0]) + ch10.moe_reference(a, w, r2[:, 1])) / 2)


def test_bad_inputs():
    with pytest.raises(ValueError, match="divisible"):
        ch10.ag_collective_matmul(_rand(7, 16), _rand(16, 32))
    with pytest.raises(ValueError, match="route"):
        ch10.moe_reference(_rand(4, 2), _rand(2, 2, 2), [0, 1, 2, 0])
