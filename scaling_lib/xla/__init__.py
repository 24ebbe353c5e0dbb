"""The JAX side of scaling_lib: what runs JAX (devices, measurements, the JAX model, decoding,
profiling, the compiler checks), above the numpy core.

Units: SI. Book: every chapter that runs JAX (1, 3, 5, 7, 9, 10, 12). Importing this package
does not import jax (``devices.setup`` must run first, then jax); it registers ``checks``'s
functions as the core's hooks (``scaling_lib.hooks``), which is how ``hardware.detect``,
``hlo.hlo_text``, ``sharding.compiled_collectives``, ``ShardedArray.named_sharding`` and
``training.sharded_step_check`` reach JAX without the core importing it.
The old paths (``scaling_lib.devices``, ``.jax_compat``, ``.jax_model``, ``.kv_decode``,
``.measure``, ``.profiling``) are thin aliases of the modules here.
Ignores: nothing.
"""
from __future__ import annotations

from .. import hooks as _hooks
from . import checks

for _name in ("detect", "hlo_text", "named_sharding", "compiled_collectives",
              "sharded_step_check"):
    _hooks.provide(_name, getattr(checks, _name))

__all__ = ["checks", "devices", "jax_compat", "jax_model", "kv_decode", "measure", "profiling"]
