"""The few JAX version switches the book needs (JAX 0.7.2 in Colab, 0.10.x in CI).

Units: none. Book: sec-03-code (第3章) and 第10章; see the shared JAX-COMPAT notes.
Everything else the book uses has one spelling that works in both versions. Imports jax lazily,
so ``import scaling_lib`` stays free of jax.
Ignores: versions older than 0.7.2.
"""
from __future__ import annotations

__all__ = ["reshard", "to_varying", "all_gather_invariant"]


def reshard(x, spec):
    """Move ``x`` to sharding ``spec`` (a PartitionSpec or NamedSharding; Explicit axes only).

    ``jax.reshard`` does not exist in 0.7.2; ``jax.sharding.reshard`` exists in both.
    """
    from jax.sharding import reshard as _reshard
    return _reshard(x, spec)


def _axes(axes):
    if isinstance(axes, str):
        return (axes,)
    if isinstance(axes, (tuple, list)) and all(isinstance(a, str) for a in axes):
        return tuple(axes)
    raise TypeError(f"axes must be a mesh-axis name or a tuple of names, got {axes!r}")


def to_varying(x, axes):
    """Mark ``x`` as varying over mesh ``axes`` inside ``shard_map`` (a fori_loop carry, say).

    0.7.2 spells it ``lax.pvary``; 0.10 replaced it with ``lax.pcast(..., to="varying")``.
    """
    import jax
    ax = _axes(axes)
    if hasattr(jax.lax, "pcast"):
        return jax.lax.pcast(x, ax, to="varying")
    return jax.lax.pvary(x, ax)


def all_gather_invariant(x, axis_name, **kwargs):
    """``all_gather`` whose result is the same on every device of ``axis_name``, so
    ``shard_map`` may return it with ``out_specs=P()``.

    0.7.2: ``lax.all_gather_invariant``; 0.10: ``lax.all_gather(..., to="invarying")``.
    """
    import jax
    if not isinstance(axis_name, (str, tuple, list)):
        raise TypeError(f"axis_name must be a mesh-axis name or tuple of names, got {axis_name!r}")
    if hasattr(jax.lax, "all_gather_invariant"):
        return jax.lax.all_gather_invariant(x, axis_name, **kwargs)
    return jax.lax.all_gather(x, axis_name, to="invarying", **kwargs)
