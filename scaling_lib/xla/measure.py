"""JAX micro-benchmarks: measured points to set beside the model's lines on the reader's hardware.

Units: SI (seconds, bytes, FLOPs/s, bytes/s). Book: sec-01-your-roofline (第1章 “你自己的 Roofline”),
also chapters 2, 3, 7, 9, 12. Imports jax (call ``scaling_lib.devices.setup()`` first).
Timings are medians of several runs after warm-up, with ``block_until_ready``; they vary from run
to run and machine to machine, so notebook cells that print them are not compared by nbval.
Ignores: clock boost, thermal state, other processes (on a shared machine numbers are noisy).
"""
from __future__ import annotations

import time

import numpy as np

from ..units import check_positive

__all__ = ["time_fn", "matmul_sweep", "measure_peak_flops", "measure_bandwidth",
           "transfer_sweep", "collective_sweep", "fit_roofline"]


def _jax():
    import jax
    import jax.numpy as jnp
    return jax, jnp


def time_fn(f, *args, n_warmup: int = 2, n_iter: int = 10, min_time: float = 0.0,
            stat: str = "median") -> float:
    """Median (``stat='min'``: fastest) wall-clock seconds of ``f(*args)`` (outputs blocked on),
    after ``n_warmup`` calls. On a shared machine other jobs only ever add time, so the fastest
    call is the stable estimate of what the kernel itself takes."""
    jax, _ = _jax()
    if not callable(f):
        raise TypeError(f"f must be callable, got {type(f).__name__}")
    if stat not in ("median", "min"):
        raise ValueError(f"stat must be 'median' or 'min', got {stat!r}")
    if not (isinstance(n_iter, int) and n_iter >= 1 and isinstance(n_warmup, int) and n_warmup >= 0):
        raise ValueError(f"n_iter must be an int >= 1 and n_warmup an int >= 0, got {n_iter}, {n_warmup}")
    for _ in range(n_warmup):
        jax.block_until_ready(f(*args))
    ts = []
    t_start = time.perf_counter()
    while len(ts) < n_iter or (time.perf_counter() - t_start) < min_time:
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t0)
        if len(ts) >= 10 * n_iter:
            break
    return float(np.median(ts) if stat == "median" else np.min(ts))


_DT = {"bf16": "bfloat16", "f32": "float32", "f16": "float16", "int8": "int8"}


def _dtype(name: str):
    _, jnp = _jax()
    if name not in _DT:
        raise ValueError(f"unknown dtype {name!r}; allowed: {', '.join(_DT)}")
    return getattr(jnp, _DT[name])


def matmul_sweep(Bs, D: int, F: int, dtype: str = "bf16", device=None, n_iter: int = 5,
                 seed: int = 0, stat: str = "median") -> list[dict]:
    """Time X[B,D]·W[D,F] for each B in ``Bs``; one dict per B (B, D, F, t, flops_per_s,
    intensity); ``stat`` as in ``time_fn``. Book: sec-01-your-roofline."""
    jax, jnp = _jax()
    from ..roofline import matmul_flops, matmul_intensity

    Bs = [int(b) for b in Bs]
    for b in Bs:
        check_positive("B", b, allow_array=False)
    check_positive("D", D, allow_array=False)
    check_positive("F", F, allow_array=False)
    dt = _dtype(dtype)
    device = device or jax.devices()[0]
    # inputs drawn on the host: jax.random would compile one program per shape, which cost more
    # than the timings themselves (the values do not change the time of a matmul)
    w = jax.device_put(np.random.default_rng(seed).standard_normal((D, F), dtype=np.float32).astype(dt),
                       device)
    mm = jax.jit(lambda x, w: x @ w)
    out = []
    for b in Bs:
        x = jax.device_put(np.random.default_rng([seed, b]).standard_normal((b, D), dtype=np.float32)
                           .astype(dt), device)
        t = time_fn(mm, x, w, n_warmup=1, n_iter=n_iter, stat=stat)
        fl = float(matmul_flops(b, D, F))
        out.append({"B": b, "D": int(D), "F": int(F), "dtype": dtype, "t": t,
                    "flops_per_s": fl / t,
                    "intensity": float(matmul_intensity(b, D, F, dtype, dtype, dtype))})
    return out


def measure_peak_flops(dtype: str = "f32", n: int = 1024, device=None, n_iter: int = 5) -> float:
    """Achieved FLOPs/s of a large square matmul: an empirical 'peak' for the device."""
    jax, jnp = _jax()
    check_positive("n", n, allow_array=False)
    dt = _dtype(dtype)
    device = device or jax.devices()[0]
    a = jax.device_put(np.random.default_rng(1).standard_normal((n, n), dtype=np.float32).astype(dt), device)
    mm = jax.jit(lambda a: a @ a)
    t = time_fn(mm, a, n_warmup=1, n_iter=n_iter)
    return 2 * n ** 3 / t


def measure_bandwidth(nbytes: int = 2 ** 25, device=None, n_iter: int = 5) -> float:
    """Achieved read bandwidth (bytes/s): a dot product of two f32 vectors of ``nbytes`` in total.

    A dot product does 2 FLOPs per 8 bytes read, so it is bandwidth-bound on every device
    (book: sec-01-intensity); its time is the time to stream both vectors. (An elementwise
    ``x + 1`` would also pay for allocating and writing the output, which on CPUs is dominated
    by page faults rather than bandwidth.)"""
    jax, jnp = _jax()
    check_positive("nbytes", nbytes, allow_array=False)
    device = device or jax.devices()[0]
    n = max(int(nbytes) // 8, 1)
    x = jax.device_put(jnp.ones((n,), jnp.float32), device)
    y = jax.device_put(jnp.full((n,), 0.5, jnp.float32), device)
    f = jax.jit(jnp.vdot)
    t = time_fn(f, x, y, n_warmup=1, n_iter=n_iter)
    return 2 * n * 4 / t


def fit_roofline(points: list[dict]) -> tuple[float, float]:
    """(peak FLOPs/s, bandwidth B/s) of a measured sweep: the peak is the best achieved rate;
    the bandwidth is the best rate/intensity among the points left of the knee."""
    if not points:
        raise ValueError("fit_roofline needs at least one measured point")
    rates = np.array([p["flops_per_s"] for p in points])
    ints = np.array([p["intensity"] for p in points])
    peak = float(rates.max())
    bw = float((rates / ints).max())
    return peak, bw


def transfer_sweep(sizes_bytes, device=None, n_iter: int = 5) -> list[dict]:
    """Time host→device (``device_put``) and device→host (``np.asarray``) copies for each size."""
    jax, jnp = _jax()
    device = device or jax.devices()[0]
    out = []
    for nb in sizes_bytes:
        nb = int(check_positive("size", nb, allow_array=False))
        host = np.ones(max(nb // 4, 1), np.float32)
        t_h2d = time_fn(lambda h: jax.device_put(h, device), host, n_warmup=1, n_iter=n_iter)
        dev = jax.device_put(host, device)
        jax.block_until_ready(dev)

        def d2h(a):
            return np.asarray(a)
        ts = []
        for _ in range(n_iter):  # np.asarray caches the host copy: re-create the array each time
            a = dev + 0
            jax.block_until_ready(a)
            t0 = time.perf_counter()
            d2h(a)
            ts.append(time.perf_counter() - t0)
        out.append({"bytes": host.nbytes, "t_h2d": t_h2d, "t_d2h": float(np.median(ts)),
                    "bw_h2d": host.nbytes / t_h2d, "bw_d2h": host.nbytes / float(np.median(ts))})
    return out


_KINDS = ("all_gather", "all_reduce", "reduce_scatter", "all_to_all", "permute")


def collective_sweep(kind: str, sizes_bytes, mesh, axis: str, n_iter: int = 5) -> list[dict]:
    """Time one collective over mesh axis ``axis`` with ``jax.shard_map`` for each array size.

    ``sizes_bytes`` is the size of the whole f32 array (the gathered array for all_gather, the
    array reduced for all_reduce, the unreduced input of one device for reduce_scatter).
    """
    jax, jnp = _jax()
    from jax.sharding import NamedSharding, PartitionSpec as P

    if kind not in _KINDS:
        raise ValueError(f"unknown collective {kind!r}; allowed: {', '.join(_KINDS)}")
    if axis not in mesh.axis_names:
        raise ValueError(f"mesh has axes {mesh.axis_names}, not {axis!r}")
    n = mesh.shape[axis]
    others = tuple(a for a in mesh.axis_names if a != axis)

    def body(x):
        if kind == "all_gather":
            return jax.lax.all_gather(x, axis, tiled=True)
        if kind == "all_reduce":
            return jax.lax.psum(x, axis)
        if kind == "reduce_scatter":
            return jax.lax.psum_scatter(x, axis, tiled=True)
        if kind == "all_to_all":
            return jax.lax.all_to_all(x, axis, 0, 0, tiled=True)
        perm = [(i, (i + 1) % n) for i in range(n)]
        return jax.lax.ppermute(x, axis, perm)

    out = []
    for nb in sizes_bytes:
        nb = int(check_positive("size", nb, allow_array=False))
        elems = max(nb // 4 // (n * n), 1) * n * n
        if kind in ("all_gather",):
            spec_in, spec_out, shape = P(axis), P(), (elems,)
        elif kind == "reduce_scatter":
            spec_in, spec_out, shape = P(), P(axis), (elems,)
        else:
            spec_in, spec_out, shape = P(axis), P(axis), (elems,)
        if kind in ("all_reduce",):
            spec_in, spec_out, shape = P(), P(), (elems,)
        f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=spec_in, out_specs=spec_out,
                                  check_vma=False))
        x = jax.device_put(jnp.ones(shape, jnp.float32), NamedSharding(mesh, spec_in))
        t = time_fn(f, x, n_warmup=1, n_iter=n_iter)
        out.append({"kind": kind, "bytes": elems * 4, "n": n, "t": t, "others": others})
    return out
