"""Extension points the upper layers fill: the JAX side and the presentation layer attach the
helpers that run JAX or draw, so the numpy core never imports them (arrows only point down).

Units: none. Book: none (plumbing). Importing ``scaling_lib.xla`` (``devices.setup`` does, in
every notebook's setup cell) provides 'detect', 'hlo_text', 'named_sharding',
'compiled_collectives' and 'sharded_step_check'; importing ``scaling_lib.plots`` (also in the
setup cell) provides 'draw_torus' and 'draw_fat_tree'. Calling one that no layer has provided
raises a RuntimeError that says which module to import.
Ignores: nothing.
"""
from __future__ import annotations

__all__ = ["PROVIDERS", "provide", "call", "provided"]

#: hook name -> the module that provides it
PROVIDERS = {"detect": "scaling_lib.xla", "hlo_text": "scaling_lib.xla",
             "named_sharding": "scaling_lib.xla", "compiled_collectives": "scaling_lib.xla",
             "sharded_step_check": "scaling_lib.xla", "draw_torus": "scaling_lib.plots",
             "draw_fat_tree": "scaling_lib.plots"}
_HOOKS: dict = {}


def provide(name: str, fn) -> None:
    """Register ``fn`` as the implementation of hook ``name`` (called by the upper layers)."""
    if name not in PROVIDERS:
        raise ValueError(f"unknown hook {name!r}; known: {', '.join(PROVIDERS)}")
    if not callable(fn):
        raise TypeError(f"hook {name!r} needs a callable, got {type(fn).__name__}")
    _HOOKS[name] = fn


def provided(name: str) -> bool:
    return name in _HOOKS


def call(name: str, *args, **kwargs):
    """Run hook ``name``; a RuntimeError naming the module to import if nothing provides it."""
    fn = _HOOKS.get(name)
    if fn is None:
        if name not in PROVIDERS:
            raise ValueError(f"unknown hook {name!r}; known: {', '.join(PROVIDERS)}")
        raise RuntimeError(f"{name} runs in {PROVIDERS[name]} (it needs JAX or matplotlib); "
                           f"import {PROVIDERS[name]} first — every notebook's setup cell does "
                           f"(`from scaling_lib import devices, plots`)")
    return fn(*args, **kwargs)
