"""Exercises and grading: ``check()`` in notebooks, student copies, batch grading of a class.

Book: every exercise notebook (``exercises/NN_name.ipynb``); DESIGN.md §5; README 练习和批改.

- ``check("1.2", i_crit)`` / ``variant(1)``: feedback in a notebook (``_judge``).
- ``python -m scaling_lib.grading strip``: the student copies ``exercises/student/*.ipynb``;
  ``... variants``: one copy per student with that student's numbers (``_strip``).
- ``python -m scaling_lib.grading grade FOLDER``: a class, each submission in its own sandbox
  (``_batch``, ``_sandbox``, ``_runner``), the gradebook and feedback files (``_report``).

Only the judge is imported by ``from scaling_lib.grading import check``; the rest (nbformat,
nbclient, subprocesses) loads on first use.
"""
from __future__ import annotations

from ._judge import (CheckResult, Variant, check, default_seed, evaluate, expected_form,  # noqa: F401
                     judge_function, sample_inputs, variant)

__all__ = ["check", "variant", "evaluate", "CheckResult", "Variant", "strip_notebook", "strip",
           "variant_notebook", "make_variants", "StripError", "grade", "SubmissionResult", "main"]

_LAZY = {
    "strip_notebook": "_strip", "strip": "_strip", "StripError": "_strip",
    "variant_notebook": "_strip", "make_variants": "_strip",
    "grade": "_batch", "SubmissionResult": "_batch",
    "main": "_cli",
}


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'scaling_lib.grading' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)
