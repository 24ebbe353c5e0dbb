"""Print the versions that matter, first thing in `make test` (evidence for CI logs)."""
import importlib.metadata as md
import platform

parts = [f"python={platform.python_version()}"]
for p in ["jupyter-book", "sphinx", "myst-nb", "nbval", "jax", "jaxlib", "numpy", "matplotlib",
          "plotly", "ipywidgets", "pytest"]:
    try:
        parts.append(f"{p}={md.version(p)}")
    except md.PackageNotFoundError:
        parts.append(f"{p}=(missing)")
print("versions:", " ".join(parts))

import sys  # noqa: E402


def float_fingerprint():
    """Digests of a few float results whose last bits depend on the SIMD path (numpy's exp and sin
    dispatch per CPU feature; XLA's CPU code generation follows --xla_cpu_max_isa). `make test` and
    `make test-other-cpu` print them: different digests show that the second nbval run really
    computed on other paths, so its passing is evidence and not a repeat."""
    import hashlib

    import numpy as np

    x = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)
    out = {"numpy exp": np.exp(x), "numpy sin": np.sin(x)}
    try:
        import jax
        import jax.numpy as jnp

        m = x.reshape(256, 256)
        out["xla tanh·exp"] = np.asarray(jax.jit(lambda v: jnp.tanh(v) @ jnp.exp(v))(m))
    except ImportError:
        pass
    return " ".join(f"{k}={hashlib.sha1(v.tobytes()).hexdigest()[:10]}" for k, v in out.items())


print("float fingerprint:", float_fingerprint())

if "--cpu" in sys.argv:  # which SIMD paths numpy and XLA will take (for `make test-other-cpu`)
    import os

    from numpy._core._multiarray_umath import __cpu_features__ as feats

    targets = [k for k in ("X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR") if feats.get(k)]
    print("numpy dispatch targets in force:", " ".join(targets) or "baseline only (X86_V2)",
          "| NPY_DISABLE_CPU_FEATURES =", os.environ.get("NPY_DISABLE_CPU_FEATURES", "(unset)"),
          "| XLA_FLAGS =", os.environ.get("XLA_FLAGS", "(unset)"))
