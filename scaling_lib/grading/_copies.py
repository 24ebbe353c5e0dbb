"""How much a per-student variant protects: the chance that a classmate's answer passes.

Two students of a class draw their numbers independently (``exercises.draw``: each parameter
uniform over ``Param.choices()``). For one exercise, copying pays when the classmate's correct
answer also passes *my* ``check``: either we drew the same numbers, or the answer is insensitive to
them within the exercise's tolerance. ``copy_rates`` estimates both chances by sampling pairs of
draws with a fixed seed (deterministic); ``python -m scaling_lib.grading copies`` prints them per
chapter for a teacher, and tests/test_grading_gradebook.py holds the bounds README.md states.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["CopyRate", "copy_rates"]


@dataclass(frozen=True)
class CopyRate:
    exercise: str      # "5.14b"
    kind: str          # Exercise.kind
    params: tuple      # the parameter names this exercise's numbers depend on
    same: float        # chance that two students get the same expected answer
    passes: float      # chance that a classmate's expected answer passes my check


def _draw(ex, rng):
    return {name: rng.choice(p.choices()) for name, p in sorted(ex.params.items())}


def _key(ref):
    if isinstance(ref, str):
        return ref
    flat = ref if isinstance(ref, (list, tuple)) else [ref]
    return tuple(float(f"{float(x):.6g}") for x in flat)


def copy_rates(chapter: int, pairs: int = 300, seed: int = 0) -> list[CopyRate]:
    """For each exercise of ``chapter`` that declares ``params``, the two chances above, from
    ``pairs`` sampled pairs of students (seeded: the same numbers on every run)."""
    from ..exercises import for_chapter
    from ._judge import evaluate

    if isinstance(chapter, bool) or not isinstance(chapter, int):
        raise TypeError(f"chapter must be an int, got {chapter!r}")
    if isinstance(pairs, bool) or not isinstance(pairs, int) or pairs < 1:
        raise ValueError(f"pairs must be a positive int, got {pairs!r}")
    exercises = for_chapter(chapter)
    if not exercises:
        raise ValueError(f"chapter {chapter} has no exercises")
    out = []
    for ex in exercises:
        if not ex.params:
            continue
        rng = random.Random(f"{seed}|{ex.id}")
        same = passes = 0
        for _ in range(pairs):
            mine, theirs = _draw(ex, rng), _draw(ex, rng)
            ref_mine, ref_theirs = ex.reference(mine), ex.reference(theirs)
            same += _key(ref_mine) == _key(ref_theirs)
            passes += bool(evaluate(ex, ref_theirs, values=mine).correct)
        out.append(CopyRate(ex.id, ex.kind, tuple(sorted(ex.params)), same / pairs, passes / pairs))
    return out


def report(chapters=None, pairs: int = 300) -> str:
    """The table ``python -m scaling_lib.grading copies`` prints (Chinese, for a teacher)."""
    from ..exercises import chapter_params, registry

    every = sorted({e.chapter for e in registry().values()})
    chapters = every if not chapters else list(chapters)
    unknown = [c for c in chapters if c not in every]
    if unknown:
        raise ValueError(f"第 {unknown} 章没有练习；有练习的章是 {every}")
    lines = ["每道数字因人而异的题：两位同学抽到同一个答案的机会，以及抄同学的答案碰巧也判对的机会",
             f"（每题抽 {pairs} 对同学估计；选择题的字母常常人人相同，抄了照样对）", ""]
    from ..book import table

    for ch in chapters:
        if not chapter_params(ch):
            lines.append(f"第 {ch} 章：没有因人而异的题")
            continue
        rates = copy_rates(ch, pairs=pairs)
        lines += [f"第 {ch} 章（{len(rates)} 道）", repr(table(
            [[r.exercise, r.kind, f"{r.same:.0%}", f"{r.passes:.0%}", ", ".join(r.params)] for r in rates],
            header=["题号", "类型", "同一答案", "抄了也对", "随学号变的数"], align="llrrl")), ""]
    return "\n".join(lines).rstrip()
