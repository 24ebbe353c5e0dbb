"""Moved to ``scaling_lib.xla.jax_compat`` (the JAX side); this name stays for notebooks and exercises."""
import importlib, sys
sys.modules[__name__] = importlib.import_module("scaling_lib.xla.jax_compat")
