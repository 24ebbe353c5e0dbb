"""The exercise registry: one ``Exercise`` per autograded question, one module per chapter.

Each chapter owns ``scaling_lib/exercises/chNN.py`` defining ``EXERCISES = [Exercise(...), ...]``.
Expected values are *computed* from scaling_lib (a zero-argument callable), never typed in, so
the book, the checks and the grader cannot drift apart. ``check()`` (scaling_lib.grading) and the
batch grader both read this registry; the grader recomputes expected values in its own process.

Exercise ids are "N.M" everywhere: the registry key, the ``ex-NN-M`` label, the heading
"练习 N.M" and ``check("N.M", answer)``.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Exercise", "KINDS", "registry", "get", "for_chapter"]

KINDS = ("number", "numbers", "choice", "function")
_ID = re.compile(r"^\d{1,2}\.\d{1,2}[a-z]?$")


@dataclass(frozen=True)
class Exercise:
    """One autograded question.

    id:        "1.4" (chapter.number, optional letter: "1.6c").
    var:       the variable (or function name) the reader assigns; the grader reads it by name.
    kind:      "number" (a float), "numbers" (a list of floats, fixed length), "choice"
               (a string such as "A"), "function" (a callable compared with ``expected`` on
               inputs drawn by ``sampler``).
    expected:  zero-arg callable returning the answer computed from scaling_lib (number, list of
               numbers or choice string); for "function", the reference function itself.
    rtol/atol: tolerance for numbers (relative / absolute).
    unit:      unit shown in feedback (Chinese), e.g. "秒", "token", "FLOPs/字节".
    accept:    other values accepted as correct (e.g. the book's older 243 beside 240).
    hints:     extra (ratio, message) pairs: if answer/expected ≈ ratio (within 5%), show message.
               The generic hints (×2, ×1000, ×8 bits/bytes, ×3, s vs ms) are always tried.
    sampler:   for "function": rng -> dict of keyword arguments (numpy Generator given).
    n_samples: how many sampled inputs a function is tested on.
    points:    weight in the score sheet.
    explain:   one sentence shown after ✅: what the answer means.
    """

    id: str
    var: str
    kind: str
    expected: Callable[..., Any]
    rtol: float = 0.03
    atol: float = 0.0
    unit: str = ""
    accept: tuple = ()
    hints: tuple = ()
    sampler: Callable[[Any], dict] | None = None
    n_samples: int = 20
    points: float = 1.0
    explain: str = ""
    choices: tuple = field(default=())

    def __post_init__(self):
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise ValueError(f"exercise id must look like '1.4' or '1.6c', got {self.id!r}")
        if self.kind not in KINDS:
            raise ValueError(f"exercise {self.id}: kind must be one of {KINDS}, got {self.kind!r}")
        if not callable(self.expected):
            raise ValueError(f"exercise {self.id}: expected must be callable (computed from the library)")
        if not (isinstance(self.var, str) and self.var.isidentifier()):
            raise ValueError(f"exercise {self.id}: var must be a Python identifier, got {self.var!r}")
        if self.kind == "function" and self.sampler is None:
            raise ValueError(f"exercise {self.id}: a function exercise needs a sampler")
        if self.rtol < 0 or self.atol < 0:
            raise ValueError(f"exercise {self.id}: tolerances must be >= 0")

    @property
    def chapter(self) -> int:
        return int(self.id.split(".")[0])

    def reference(self):
        """The expected answer (for "function": the reference function)."""
        return self.expected if self.kind == "function" else self.expected()


_REGISTRY: dict[str, Exercise] | None = None


def registry() -> dict[str, Exercise]:
    """All exercises of all chapters, by id (chapter modules are imported on first call)."""
    global _REGISTRY
    if _REGISTRY is None:
        reg: dict[str, Exercise] = {}
        for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
            if not re.match(r"^ch\d\d$", m.name):
                continue
            mod = importlib.import_module(f"{__name__}.{m.name}")
            for ex in getattr(mod, "EXERCISES", []):
                if ex.id in reg:
                    raise ValueError(f"duplicate exercise id {ex.id} in {m.name}")
                reg[ex.id] = ex
        _REGISTRY = reg
    return _REGISTRY


def get(ex_id: str) -> Exercise:
    """The exercise with this id; KeyError lists the chapter's ids if unknown."""
    reg = registry()
    if not isinstance(ex_id, str):
        raise KeyError(f"exercise id must be a string like '1.4', got {ex_id!r}")
    if ex_id not in reg:
        chap = ex_id.split(".")[0]
        same = sorted((k for k in reg if k.split(".")[0] == chap), key=_sort_key)
        raise KeyError(f"unknown exercise {ex_id!r}; chapter {chap} has: {', '.join(same) or 'none'}")
    return reg[ex_id]


def for_chapter(n: int) -> list[Exercise]:
    """The exercises of chapter ``n`` in order."""
    return sorted((e for e in registry().values() if e.chapter == n), key=lambda e: _sort_key(e.id))


def _sort_key(i: str):
    a, b = i.split(".")
    m = re.match(r"(\d+)([a-z]?)", b)
    return (int(a), int(m.group(1)), m.group(2))
