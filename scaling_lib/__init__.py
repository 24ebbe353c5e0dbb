"""scaling_lib: the small analytic models behind 如何扩展你的模型 (How to Scale Your Model).

Units: SI everywhere (seconds, bytes, FLOPs, FLOPs/s, bytes/s).

``import scaling_lib`` is cheap: it imports numpy and the pure-Python modules only. Modules that
run JAX (``devices``, ``measure``, ``jax_model``, ...) are imported on first attribute access, and
only they import jax.

Packages by audience, imports pointing down only (``tests/test_layers.py`` enforces it):

- the numpy core, top-level modules: catalogue (``hardware``), physics (``roofline``,
  ``topology``, ``collectives``, ``chip_internals``), model arithmetic (``transformer``,
  ``models``, ``memory``), strategies and their costs (``sharding``, ``strategy``,
  ``pipeline``, ``step``, ``training``, ``inference``, ``gpu_parallel``, ``layouts``), ``hlo``
  (reads HLO text), ``errors``, ``hooks``, ``units``;
- the JAX side, ``scaling_lib.xla``: ``devices``, ``jax_compat``, ``jax_model``,
  ``kv_decode``, ``measure``, ``profiling``, ``checks`` (the old top-level names are aliases);
- presentation: ``plots``, ``widgets``, ``interactive``, ``diagrams``, ``book`` (glue);
- grading: ``grading`` and the exercise registry.

The book's letters and the library's identifiers (one name per idea across the whole book):

=====  ==================  =========================================
book   identifier          meaning
=====  ==================  =========================================
B      ``batch``           batch in tokens (global unless subscripted)
T      ``seq_len``         sequence (query) length
S      ``kv_len``          key/value length (KV cache)
D      ``d_model``         residual-stream width
F      ``d_ff``            MLP hidden width
L      ``n_layers``        layers
N      ``n_heads``         query heads
K      ``n_kv_heads``      KV heads
H      ``d_head``          head dimension
V      ``vocab``           vocabulary size
E      ``n_experts``       experts (MoE); k = ``top_k``
P      ``params``          parameter count
C      ``peak_flops``      peak FLOPs/s of a chip (dtype-specific)
W_hbm  ``hbm_bw``          HBM bandwidth (bytes/s)
W_ici  ``ici_bw_bidi``     one ICI link, both directions (bytes/s)
=====  ==================  =========================================

Unit suffixes: ``_bytes``, ``_s``, ``_flops``, ``_per_s``.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

from . import units, hardware, roofline  # noqa: E402  (pure numpy)

_LAZY = {"plots", "widgets", "grading", "devices", "measure", "topology", "collectives",
         "sharding", "transformer", "models", "training", "inference", "profiling",
         "jax_model", "jax_compat", "exercises", "interactive", "book", "diagrams",
         "xla", "step", "strategy", "layouts", "memory", "pipeline", "errors", "hooks", "hlo",
         "gpu_parallel", "chip_internals", "kv_decode"}


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'scaling_lib' has no attribute {name!r}")


__all__ = ["units", "hardware", "roofline", *sorted(_LAZY), "__version__"]
