"""The JAX side's checks: what runs JAX on behalf of the numpy core's names.

Units: bytes, seconds. Book: sec-03-compiler (which collectives XLA inserts), sec-05-proof (a
sharded training step on 8 simulated devices), sec-01-measure (which chip JAX runs on).

``shard_map_program`` wraps a reader's per-device function in ``shard_map`` + ``jit`` on the
book's mesh, runs it and reads the collectives of what it compiles to (exercise 10's collective
matmuls: sec-10-exercises); it runs inside the grader's sandbox too, which has this module but
not the exercise registry.

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

__all__ = ["detect", "hlo_text", "named_sharding", "compiled_collectives", "sharded_step_check",
           "shard_map_program"]


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
    import numpy as np
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
    # compare on the host with numpy: an eager jnp op on arrays of a new sharding compiles a
    # program of its own (that was a third of this function's time); inputs are placed from
    # host copies for the same reason
    ref_np = [np.asarray(b) for b in jax.tree.leaves(ref_grads)]
    scale = max(float(np.max(np.abs(b))) for b in ref_np)
    params_host = jax.tree.map(np.asarray, params)
    tokens_host = np.asarray(tokens)
    out = []
    for (kind, _, p_sh, t_sh, mesh_dict), comp in zip(jobs[1:], compiled[1:]):
        l, g = comp(jax.device_put(params_host, p_sh), jax.device_put(tokens_host, t_sh))
        err = max(float(np.max(np.abs(np.asarray(a) - b)))
                  for a, b in zip(jax.tree.leaves(g), ref_np))
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


_TRACER_ERRORS = ("TracerArrayConversionError", "ConcretizationTypeError",
                  "TracerIntegerConversionError", "TracerBoolConversionError")


def _spec_tuple(name, spec, axes):
    if not isinstance(spec, (tuple, list)) or not all(a is None or a in axes for a in spec):
        raise ValueError(f"{name} must be a tuple of mesh axis names or None (axes {axes}), got {spec!r}")
    return tuple(spec)


def shard_map_program(body, mesh, in_specs: dict, out_spec, *, name: str = ""):
    """Run a per-device function ``body`` as ``jax.jit(jax.shard_map(body, ...))`` on ``mesh``
    and report what the program compiles to.

    mesh:     ``((2, 4), ("X", "Y"))``: shape and axis names (``devices.mesh``; the simulated CPU
              devices unless an accelerator has enough of them).
    in_specs: ``{"a": ("X", "Y"), "w": (None, "Y")}``: the array arguments, in the order ``body``
              takes them positionally, and how each is sharded (a ``PartitionSpec``'s entries).
    out_spec: the entries of the output's ``PartitionSpec``.

    Returns ``run(**kw) -> (global result as a numpy array, facts)``. ``kw`` holds the arrays of
    ``in_specs`` (nested lists or arrays, made float32) and any other keyword arguments, which
    are passed to ``body`` as Python values (ints, floats). ``facts`` is plain data:
    ``{"collectives": {kind: count} (profiling.collective_counts of compile().as_text()),
    "permutes": [[[source, target], ...], ...]}`` (the distinct source-target pair lists of the
    collective-permutes, device ids in mesh order). One compile per input shape. A ``body`` that
    returns None (the student copy's stub) gives ``(None, None)``.
    ``shard_map`` runs with ``check_vma=False`` (the same on JAX 0.7.2 and 0.10). A ``body`` that
    cannot be traced per device (it calls ``np.asarray``, ``device_put`` or ``jit`` on its block)
    raises ``TypeError`` saying what ``body`` must be.
    """
    import numpy as np
    from . import devices, profiling

    if not callable(body) or isinstance(body, type):
        raise TypeError(f"body must be a function (the per-device program), got {type(body).__name__}")
    shape, axes = mesh
    shape, axes = tuple(int(s) for s in shape), tuple(str(a) for a in axes)
    if not isinstance(in_specs, dict) or not in_specs:
        raise ValueError(f"in_specs must be a non-empty dict name -> spec, got {in_specs!r}")
    specs = {str(k): _spec_tuple(f"in_specs[{k!r}]", v, axes) for k, v in in_specs.items()}
    out_spec = _spec_tuple("out_spec", out_spec, axes)
    label = name or getattr(body, "__name__", "body")
    cache: dict = {}
    state: dict = {}

    def _mesh():
        if "mesh" not in state:
            state["mesh"] = devices.mesh(shape, axes)
        return state["mesh"]

    def run(**kw):
        import jax
        from jax.sharding import NamedSharding, PartitionSpec as P
        missing = [k for k in specs if k not in kw]
        if missing:
            raise TypeError(f"{label}: missing argument(s) {', '.join(missing)}; "
                            f"expected {', '.join(specs)}")
        arrays = [np.asarray(kw[k], np.float32) for k in specs]
        static = {k: v for k, v in kw.items() if k not in specs}
        for k, v in static.items():
            if not isinstance(v, (int, float, str, bool)):
                raise TypeError(f"{label}: argument {k} must be a plain number, got {type(v).__name__}")
        m = _mesh()
        key = (tuple(a.shape for a in arrays), tuple(sorted(static.items())))
        shardings = [NamedSharding(m, P(*specs[k])) for k in specs]
        with jax.set_mesh(m):
            args = [jax.device_put(a, s) for a, s in zip(arrays, shardings)]
            if key not in cache:
                returned_none = []

                def per_device(*blocks):
                    out = body(*blocks, **static)
                    if out is None:             # the stub (`...`) or a missing return
                        returned_none.append(True)
                        return blocks[0]
                    return out
                prog = jax.jit(jax.shard_map(per_device, mesh=m, in_specs=tuple(P(*specs[k]) for k in specs),
                                             out_specs=P(*out_spec), check_vma=False))
                try:
                    compiled = prog.lower(*args).compile()
                except Exception as e:
                    kind = type(e).__name__
                    first = (str(e).strip().splitlines() or [""])[0][:160]
                    if kind in _TRACER_ERRORS:
                        raise TypeError(
                            f"{label} 要写成每个设备上执行的函数体：参数是本设备的块（jax 数组），返回本设备的"
                            f"输出块；函数体里不要调用 np.asarray、device_put 或 jit（{kind}）") from None
                    cls = TypeError if isinstance(e, TypeError) else ValueError
                    raise cls(f"{label} 没能在 shard_map 里编译（{kind}）：{first}") from None
                if returned_none:
                    cache[key] = (None, None)
                    return None, None
                text = compiled.as_text()
                perms = sorted({tuple(sorted(tuple(p) for p in g)) for k, g in hlo.collectives_in(text)
                                if k == "collective-permute"})
                cache[key] = (compiled, {"collectives": profiling.collective_counts(text),
                                         "permutes": [[list(p) for p in g] for g in perms]})
            compiled, facts = cache[key]
            if compiled is None:
                return None, None
            out = np.asarray(compiled(*args))
        return out, {"collectives": dict(facts["collectives"]),
                     "permutes": [[list(p) for p in g] for g in facts["permutes"]]}

    return run
