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
