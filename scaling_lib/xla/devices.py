"""Pick devices for the book's JAX demos: a real TPU/GPU when present, else simulated CPUs.

Book: sec-00-env (第0章 运行环境). Call ``setup()`` before the first ``import jax`` in a process;
every notebook's hidden first cell does. Multi-device demos use ``mesh(shape, names)``, which
falls back to simulated CPU devices when the accelerator has fewer devices than the mesh needs
(a Colab TPU is one chip) and says which it used.
"""
from __future__ import annotations

import os
import sys

__all__ = ["setup", "describe", "mesh", "cpu_devices", "accelerator", "summary"]

N_SIM = 8
_state = {"n_cpu": N_SIM}


def setup(n_cpu_devices: int = N_SIM) -> None:
    """Ask XLA for ``n_cpu_devices`` CPU devices (beside any accelerator). Before importing jax."""
    if not isinstance(n_cpu_devices, int) or isinstance(n_cpu_devices, bool) or n_cpu_devices < 1:
        raise ValueError(f"n_cpu_devices must be a positive int, got {n_cpu_devices!r}")
    _state["n_cpu"] = n_cpu_devices
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    flag = f"--xla_force_host_platform_device_count={n_cpu_devices}"
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " " + flag).strip()
    if "jax" in sys.modules:
        import jax
        try:
            jax.config.update("jax_num_cpu_devices", n_cpu_devices)
        except Exception:  # backends already initialised: keep what we have
            pass
    else:
        import jax
        jax.config.update("jax_num_cpu_devices", n_cpu_devices)


def accelerator():
    """The list of TPU/GPU devices, empty on a CPU-only machine."""
    import jax
    try:
        devs = jax.devices()
    except RuntimeError:
        return []
    return [d for d in devs if d.platform != "cpu"]


def cpu_devices():
    """The (simulated) CPU devices."""
    import jax
    return jax.devices("cpu")


def describe() -> dict:
    """Backend, device kind and counts, JAX version: plain data for printing."""
    import jax
    acc = accelerator()
    return {"jax": jax.__version__, "backend": jax.default_backend(),
            "device_kind": acc[0].device_kind if acc else "cpu",
            "n_accelerators": len(acc), "n_cpu": len(cpu_devices())}


def summary() -> str:
    """One Chinese line saying where the notebook's JAX code runs."""
    d = describe()
    if d["n_accelerators"]:
        return (f"JAX {d['jax']}：{d['n_accelerators']} 个 {d['device_kind']}"
                f"（另有 {d['n_cpu']} 个模拟 CPU 设备用于多设备演示）")
    return f"JAX {d['jax']}：没有加速器，使用 {d['n_cpu']} 个模拟 CPU 设备"


def mesh(shape, names, *, prefer: str = "auto", explicit: bool = True):
    """A ``jax.sharding.Mesh`` of ``shape`` with axis ``names``.

    Uses the accelerator if it has exactly enough devices (``prefer='auto'``), else simulated
    CPU devices. Axis types are always set explicitly (Explicit by default) so the same code runs
    on JAX 0.7.2 (Colab) and newer releases.
    """
    import math
    import numpy as np
    import jax
    from jax.sharding import AxisType, Mesh

    shape = tuple(shape)
    names = tuple(names)
    if len(shape) != len(names):
        raise ValueError(f"mesh shape {shape} and names {names} must have the same length")
    if any((not isinstance(s, int)) or s < 1 for s in shape):
        raise ValueError(f"mesh sizes must be positive ints, got {shape}")
    if prefer not in ("auto", "cpu", "accelerator"):
        raise ValueError(f"prefer must be 'auto', 'cpu' or 'accelerator', got {prefer!r}")
    n = math.prod(shape)
    acc = accelerator()
    if prefer == "accelerator" or (prefer == "auto" and len(acc) >= n):
        pool = acc
    else:
        pool = cpu_devices()
    if len(pool) < n:
        raise ValueError(f"mesh {shape} needs {n} devices but only {len(pool)} are available; "
                         f"call scaling_lib.devices.setup({n}) before importing jax")
    devs = np.array(pool[:n]).reshape(shape)
    kind = AxisType.Explicit if explicit else AxisType.Auto
    return Mesh(devs, names, axis_types=(kind,) * len(shape))
