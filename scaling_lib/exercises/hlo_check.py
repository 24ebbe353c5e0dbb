"""Exercises that check what the reader's program compiles to, not only the numbers it returns.

Book: sec-10-exercises (练习 10.4, 10.7, 10.7b, 10.7c, 10.8: collective matmuls). Issue #13
item 5; review ch10-12 M3.

A function exercise with ``program=Program(...)`` asks the reader for the *per-device body* of a
``shard_map`` (``def collective_matmul(a, w): ...`` working on one device's blocks). The checker
wraps it itself, ``jax.jit(jax.shard_map(body, mesh, in_specs, out_specs))`` on the 8 devices
(``scaling_lib.xla.checks.shard_map_program``, which the grader's sandbox has too), runs it on
the exercise's inputs and compares the global result with ``Exercise.expected`` (a numpy
function of the global arrays) as for any function exercise; then it reads the collectives of
``jit(...).lower(...).compile().as_text()`` with the library's one counter
(``profiling.collective_counts``) and holds them against ``require`` and ``forbid``. The
feedback names what it found ("你的程序里有 all-gather：……").

In a notebook ``check()`` does all of this in the reader's process. The batch grader sends
``harness_args()`` into the sandbox; the kernel runs the same ``shard_map_program`` there and
sends back, per input, the result and the collective counts (the submission's claim, like its
numbers); the grader judges both here with ``judge``. A program exercise's slips are per-device
bodies too (a wrong ``ppermute`` program), run through the same wrapper in the grader's process.
Ignores: timing (the simulated devices overlap nothing) and how XLA schedules the permutes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..hlo import KINDS

__all__ = ["Program", "found_text"]

_RUNNERS: dict = {}   # (program, body) -> run: one compile per body and input shape


def found_text(counts: dict) -> str:
    """'编译出的 HLO 里有 1 个 all-gather、3 个 collective-permute' (kinds in the book's order)."""
    parts = [f"{int(counts[k])} 个 {k}" for k in KINDS if int(counts.get(k, 0) or 0) > 0]
    return "编译出的 HLO 里有 " + "、".join(parts) if parts else "编译出的 HLO 里没有任何集合通信"


@dataclass(frozen=True, eq=False)
class Program:
    """How to run a reader's per-device body, and which collectives its HLO must (not) have.

    body:      the reference per-device function (what ``Exercise.reference()`` gives).
    mesh:      ``((2, 4), ("X", "Y"))``.
    in_specs:  ``{"a": ("X", "Y"), "w": (None, "Y")}``: the body's array arguments in order.
    out_spec:  ``("X", "Y")``.
    require:   ``{"collective-permute": "why it must be there"}``: at least one of each.
    forbid:    ``{"all-gather": "why not"}``: none of these.
    both_ways: ``"why"`` if the permutes must go both ways round the ring ``ring`` (10.8).
    ring:      the mesh axis the permutes travel along.
    wrong:     ``((body, "all-gather"), ...)``: bodies a reader is likely to write that give the
               right numbers through the wrong collectives, each with the words its feedback
               must contain (tests/test_exercises.py asserts they fail on the HLO, named).
    """

    body: Callable
    mesh: tuple
    in_specs: dict
    out_spec: tuple
    require: dict = field(default_factory=dict)
    forbid: dict = field(default_factory=dict)
    both_ways: str = ""
    ring: str = "Y"
    wrong: tuple = ()

    def __post_init__(self):
        if not callable(self.body):
            raise ValueError("Program.body must be the reference per-device function")
        for k in (*self.require, *self.forbid):
            if k not in KINDS:
                raise ValueError(f"Program: unknown collective {k!r}; allowed: {', '.join(KINDS)}")
        if set(self.require) & set(self.forbid):
            raise ValueError("Program: a collective cannot be both required and forbidden")
        if self.ring not in self.mesh[1]:
            raise ValueError(f"Program.ring {self.ring!r} is not a mesh axis {self.mesh[1]}")

    def harness_args(self) -> dict:
        """Plain-JSON keyword arguments of ``xla.checks.shard_map_program`` (sent to the sandbox)."""
        return {"mesh": [list(self.mesh[0]), list(self.mesh[1])],
                "in_specs": {k: list(v) for k, v in self.in_specs.items()},
                "out_spec": list(self.out_spec)}

    def runner(self, body) -> Callable:
        """``run(**kw) -> (global result, facts)`` for ``body`` (cached per body)."""
        from ..xla.checks import shard_map_program
        key = (id(self), body)
        try:
            return _RUNNERS[key]
        except (KeyError, TypeError):
            pass
        run = shard_map_program(body, self.mesh, self.in_specs, self.out_spec)
        try:
            _RUNNERS[key] = run
        except TypeError:   # an unhashable callable: no cache
            pass
        return run

    def _directions(self, permutes) -> set:
        """The shifts (target - source, mod the ring's length) the permutes make along ``ring``."""
        import math
        shape, names = self.mesh
        i = list(names).index(self.ring)
        stride = math.prod(shape[i + 1:])
        n = shape[i]
        out = set()
        for pairs in permutes:
            for s, t in pairs:
                d = ((int(t) // stride) % n - (int(s) // stride) % n) % n
                if d:
                    out.add(d)
        return out

    def judge(self, facts) -> tuple[bool, str]:
        """(ok, sentence) from the facts of one compiled program (``shard_map_program``).

        Not ok: a forbidden collective is there, a required one is missing, the permutes go one
        way only where ``both_ways`` asks for both, or the facts are missing or malformed.
        The sentence never starts with ✅/❌; ok: what the HLO holds, for the ✅ line.
        """
        counts = facts.get("collectives") if isinstance(facts, dict) else None
        if not isinstance(counts, dict):
            return False, "没能读到你的程序编译出的 HLO（评分时没有拿到集合通信的统计）。"
        try:
            counts = {k: int(counts.get(k, 0) or 0) for k in KINDS}
        except (TypeError, ValueError):
            return False, "没能读懂你的程序编译出的 HLO 的统计。"
        seen = found_text(counts)
        for kind, why in self.forbid.items():
            if counts[kind]:
                return False, f"你的程序里有 {kind}：{seen}。{why}"
        for kind, why in self.require.items():
            if not counts[kind]:
                return False, f"你的程序里没有 {kind}：{seen}。{why}"
        if self.both_ways:
            perms = facts.get("permutes") if isinstance(facts.get("permutes"), list) else []
            try:
                dirs = self._directions(perms)
            except (TypeError, ValueError):
                dirs = set()
            n = self.mesh[0][list(self.mesh[1]).index(self.ring)]
            if not ({1, n - 1} <= dirs):
                return False, f"你的程序里的 collective-permute 只往一个方向传：{seen}。{self.both_ways}"
        absent = "、".join(k for k in self.forbid)
        return True, f"{seen}，没有 {absent}。" if absent else f"{seen}。"
