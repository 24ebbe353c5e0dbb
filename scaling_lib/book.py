"""Helpers for the book's notebooks that must work on the website build *and* in Colab.

``glue`` stores a value for the text of the page (myst-nb's glue). Colab does not have myst-nb;
there the call does nothing visible (the numbers are printed by the cells anyway), instead of
failing with an ImportError.
"""
from __future__ import annotations

__all__ = ["glue"]


def glue(name: str, value, display: bool = False):
    """myst-nb ``glue`` when available; a no-op (or a plain display) otherwise."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"glue key must be a non-empty string, got {name!r}")
    try:
        from myst_nb import glue as _glue
    except ImportError:  # Colab, plain Jupyter
        if display:
            from IPython.display import display as _display
            _display(value)
        return None
    return _glue(name, value, display=display)
