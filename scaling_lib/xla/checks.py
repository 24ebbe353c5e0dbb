"""The JAX side's checks: what runs JAX on behalf of the numpy core's names.

Units: bytes, seconds. Book: sec-03-compiler (which collectives XLA inserts), sec-05-proof (a
sharded training step on 8 simulated devices), sec-01-measure (which chip JAX runs on).

Importing ``scaling_lib.xla`` registers these functions as the core's hooks (``hooks``), so
``hardware.detect``, ``hlo.hlo_text``, ``ShardedArray.named_sharding``,
``sharding.compiled_collectives`` and ``training.sharded_step_check`` keep their names while the
core never imports JAX. The sharded step reads its ``PartitionSpec``s and its expected HLO from
the strategy's sharding table (``strategy.partition_specs``, ``strategy.expected_hlo``): the
same table the cost model prices. jax is imported inside the functions, after
``devices.setup``.
Ignores: multi-host meshes.
"""
from __future__ import annotations

import math

from .. import hardware, hlo, strategy as _strategy, training as tr
from ..sharding import MatmulPlan, ShardedArray
from ..units import check_int

__all__ = ["detect", "hlo_text", "named_sharding", "compiled_collectives", "sharded_step_check"]


def detect():
    """The catalogue chip JAX runs on, or None on a CPU (call it after ``devices.setup``)."""
    import jax
    dev = jax.devices()[0]
    if dev.platform == "cpu":
        return None
    return hardware.chip_from_device_kind(getattr(dev, "device_kind", ""))


def hlo_text(fn, *args, **kwargs) -> str:
    """Compiled HLO text of ``jax.jit(fn)(*args, **kwargs)``."""
    import jax
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    return jax.jit(fn).lower(*args, **kwargs).compile().as_text()


def named_sharding(array: ShardedArray, mesh):
    """A ``jax.sharding.NamedSharding`` for ``array``'s sharding on a jax ``Mesh``."""
    from jax.sharding import NamedSharding, PartitionSpec
    return NamedSharding(mesh, PartitionSpec(*array.partition_spec()))


def compiled_collectives(plan: MatmulPlan, mesh, dtype=None) -> dict:
    """Compile ``plan``'s matmul with ``jax.jit`` on a jax ``mesh`` and read its collectives.

    The operands are ``device_put`` with the plan's input shardings and multiplied with
    ``jnp.einsum(..., out_sharding=plan.out)`` (Explicit mesh axes), so XLA's SPMD partitioner
    chooses the collectives. Returns ``{hlo kind: set of mesh axes}`` like ``expected_hlo``
    (collective-permute pairs give the axes they cross). Needs ``plan.sizes``.
    """
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P

    if plan.sizes is None:
        raise ValueError("compiled_collectives needs a plan made with sizes={dim: size}")
    letters = {}
    for d in plan.a.dims + plan.b.dims:
        letters.setdefault(d, "abcdefghijklmnopqrstuvw"[len(letters)])
    ja, jb = plan.contracting
    letters[jb] = letters[ja]
    sub = ("".join(letters[d] for d in plan.a.dims) + "," + "".join(letters[d] for d in plan.b.dims)
           + "->" + "".join(letters[d] for d in plan.out.dims))
    dt = dtype or np.float32

    def arr(s: ShardedArray):
        shape = tuple(plan.sizes[d] for d in s.dims)
        x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape) % 7
        return jax.device_put(x.astype(dt), NamedSharding(mesh, P(*s.partition_spec())))

    a, b = arr(plan.a), arr(plan.b)
    spec = P(*plan.out.partition_spec())
    with jax.set_mesh(mesh):
        text = jax.jit(lambda x, y: jnp.einsum(sub, x, y, out_sharding=spec)).lower(a, b) \
            .compile().as_text()
    out: dict[str, set] = {}
    for kind, axes in hlo.collective_axes(text, mesh):
        out.setdefault(kind, set()).update(axes if kind != "collective-permute" else ())
    return out


def _param_specs(kind: str, params):
    """PartitionSpecs of the jax_model params for each strategy, from its sharding table."""
    from jax.sharding import PartitionSpec as P
    specs = _strategy.partition_specs(tr.PROOF_STRATEGIES[kind], params, tr.PROOF_AXIS_NAMES)

    def conv(v):
        return {k: conv(x) for k, x in v.items()} if isinstance(v, dict) else P(*v)
    return {k: conv(v) for k, v in specs.items()}
def _drop_axis(spec, axis):
    from jax.sharding import PartitionSpec as P
    return P(*[None if a == axis else a for a in spec])


def sharded_step_check(kinds=tr.STRATEGY_KINDS, cfg=None, batch: int = 16, seq_len: int = 8,
                       seed: int = 0, fast_compile: bool = True) -> list:
    """One training step (loss and gradients) of a small jax_model transformer under each
    strategy on an 8-device mesh, compared with the unsharded step.

    DP: weights replicated, batch split over X. FSDP: weights also split over X and gathered
    (a sharding constraint that drops X) just before use. TP: Megatron layout over Y (heads and
    d_ff split). FSDP+TP: both, on a 4×2 mesh. Returns one dict per strategy with the loss,
    the reference loss, the largest gradient difference, the collectives XLA inserted (from
    the compiled HLO), whether they satisfy ``expected_collectives``, and the input bytes each
    device holds (``compiled.memory_analysis()``) beside the unsharded parameter bytes.
    ``fast_compile`` turns off XLA's backend optimisations (the SPMD partitioner, which inserts
    the collectives, runs either way).
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P
    from . import devices, jax_model

    kinds = tuple(kinds)
    for k in kinds:
        if k not in tr.STRATEGY_KINDS:
            raise ValueError(f"unknown strategy kind {k!r}; allowed: {', '.join(tr.STRATEGY_KINDS)}")
    cfg = cfg or tr.toy_config()
    check_int("batch", batch)
    check_int("seq_len", seq_len, 2)
    if batch % 8:
        raise ValueError(f"batch ({batch}) must divide over 8 devices")
    opts = {"xla_backend_optimization_level": 0} if fast_compile else {}
    params = jax_model.init_params(cfg, jax.random.key(seed))
    tokens = jax.random.randint(jax.random.key(seed + 1), (batch, seq_len), 0, cfg.vocab)
    vg = jax.value_and_grad(lambda p, t: jax_model.loss_fn(p, t, cfg))
    n_weights = sum(1 for k in params["layers"] if not k.endswith("norm")) + 1 + ("unembed" in params)
    is_spec = lambda s: isinstance(s, P)  # noqa: E731
    # trace and lower everything first (cheap, main thread), then compile in parallel threads
    jobs = [("ref", jax.jit(vg).lower(params, tokens), None, None, None)]
    for kind in kinds:
        shape, names = tr.PROOF_MESHES[kind]
        mesh = devices.mesh(shape, names, prefer="cpu", explicit=False)
        specs = _param_specs(kind, params)
        p_sh = jax.tree.map(lambda s: NamedSharding(mesh, s), specs, is_leaf=is_spec)
        t_sh = NamedSharding(mesh, P("X") if "X" in names else P())
        gather = jax.tree.map(lambda s: NamedSharding(mesh, _drop_axis(s, "X")), specs, is_leaf=is_spec)

        def loss(p, t, _kind=kind, _gather=gather):
            if _kind in ("fsdp", "fsdp_tp"):   # FSDP: AllGather the weights just before use
                p = jax.lax.with_sharding_constraint(p, _gather)
            return jax_model.loss_fn(p, t, cfg)

        step = jax.jit(jax.value_and_grad(loss), in_shardings=(p_sh, t_sh),
                       out_shardings=(NamedSharding(mesh, P()), p_sh))
        jobs.append((kind, step.lower(params, tokens), p_sh, t_sh, dict(zip(names, shape))))
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=2) as pool:
        compiled = list(pool.map(lambda j: j[1].compile(compiler_options=opts), jobs))
    ref_loss, ref_grads = compiled[0](params, tokens)
    scale = max(float(jnp.max(jnp.abs(b))) for b in jax.tree.leaves(ref_grads))
    out = []
    for (kind, _, p_sh, t_sh, mesh_dict), comp in zip(jobs[1:], compiled[1:]):
        l, g = comp(jax.device_put(params, p_sh), jax.device_put(tokens, t_sh))
        err = max(float(jnp.max(jnp.abs(a - b)))
                  for a, b in zip(jax.tree.leaves(g), jax.tree.leaves(ref_grads)))
        found = hlo.count_collectives(comp.as_text())
        try:    # bytes of the inputs (params + tokens) that each device holds
            arg_bytes = int(comp.memory_analysis().argument_size_in_bytes)
        except Exception:  # memory_analysis is not available on every backend
            arg_bytes = None
        exp = tr.expected_collectives(kind, n_weights if kind in ("fsdp", "fsdp_tp") else None)
        ok = all((found.get(c, 0) >= lo) and (hi is None or found.get(c, 0) <= hi)
                 for c, (lo, hi) in exp.items())
        out.append({"kind": kind, "mesh": mesh_dict, "loss": float(l),
                    "ref_loss": float(ref_loss), "max_grad_err": err, "grad_scale": scale,
                    "collectives": found, "expected": exp, "hlo_ok": bool(ok),
                    "arg_bytes_per_device": arg_bytes,
                    "param_bytes": int(sum(x.size * x.dtype.itemsize
                                           for x in jax.tree.leaves(params)))})
    return out
