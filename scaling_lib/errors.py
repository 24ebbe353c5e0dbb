"""The library's one "it does not fit" error.

Units: bytes. Book: every chapter that asks whether a model, a batch or a strategy fits in HBM
(第5–8章, 第12章). ``Infeasible`` is a ``ValueError`` that carries the bytes a configuration
``needed`` and the bytes that were ``available`` (NaN when not known), so callers can catch one
class whether the planner, the serving model or the catalogue raised it.
Ignores: nothing (an exception type).
"""
from __future__ import annotations

__all__ = ["Infeasible"]


class Infeasible(ValueError):
    """A configuration that cannot run: it needs more memory (or chips) than there are.

    ``needed`` and ``available`` are bytes (or chips) as floats; NaN when the caller did not
    know them.
    """

    def __init__(self, message: str, needed: float = float("nan"),
                 available: float = float("nan")):
        super().__init__(message)
        self.needed = float(needed)
        self.available = float(available)
