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

if "--cpu" in sys.argv:  # which SIMD paths numpy and XLA will take (for `make test-other-cpu`)
    import os

    from numpy._core._multiarray_umath import __cpu_features__ as feats

    targets = [k for k in ("X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR") if feats.get(k)]
    print("numpy dispatch targets in force:", " ".join(targets) or "baseline only (X86_V2)",
          "| NPY_DISABLE_CPU_FEATURES =", os.environ.get("NPY_DISABLE_CPU_FEATURES", "(unset)"),
          "| XLA_FLAGS =", os.environ.get("XLA_FLAGS", "(unset)"))
