"""The exercise registry: one ``Exercise`` per autograded question, one module per chapter.

Each chapter owns ``scaling_lib/exercises/chNN.py`` defining ``EXERCISES = [Exercise(...), ...]``.
Expected values are *computed* from scaling_lib (a zero-argument callable), never typed in, so
the book, the checks and the grader cannot drift apart. ``check()`` (scaling_lib.grading) and the
batch grader both read this registry; the grader recomputes expected values in its own process.

Exercise ids are "N.M" everywhere: the registry key, the ``ex-NN-M`` label, the heading
"练习 N.M" and ``check("N.M", answer)``.

Per-student variants. An exercise may declare ``params``: the numbers of its statement that can
differ from one student to the next (``Param(default, values, text)``). The book, the reference
notebook and ``check()`` without a variant use the defaults; a teacher's secret and a student id
pick one value per parameter (``draw``: an HMAC of secret, chapter, parameter name and student id,
so the same student always gets the same numbers and nobody without the secret can predict
them). ``expected`` then takes the parameters as keyword arguments. Parameters are per chapter:
two exercises that declare the same name share its value (they must declare it identically).
"""
from __future__ import annotations

import hashlib
import hmac
import importlib
import math
import pkgutil
import re
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Exercise", "Param", "Slip", "Alt", "KINDS", "registry", "get", "for_chapter", "chapter_params",
           "draw", "normalise_student", "number_text"]

KINDS = ("number", "numbers", "choice", "function")
_ID = re.compile(r"^\d{1,2}\.\d{1,2}[a-z]?$")


def number_text(v) -> str:
    """How a parameter value is written in a statement: 8192, 1e12, 2.5e12, 0.5, "TPU v5e"."""
    from ..grading._view import format_value
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise TypeError(f"a parameter value must be an int, float or str, got {type(v).__name__}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"a parameter value must be finite, got {v!r}")
    return format_value(v)


@dataclass(frozen=True)
class Param:
    """A number in an exercise statement that a student's copy may show differently.

    default: the book's number (website, reference notebook, ``check()`` without a variant).
    values:  the numbers a student's copy may show instead (one is drawn per student; the
             default is never drawn when there is another choice).
    text:    how the default is written in the exercise statement (``number_text(default)`` if
             empty); the student copy replaces it, as a whole token, inside the statements of
             the exercises that declare this parameter.
    """

    default: Any
    values: tuple
    text: str = ""

    def __post_init__(self):
        if not isinstance(self.values, tuple) or not self.values:
            raise ValueError(f"Param.values must be a non-empty tuple, got {self.values!r}")
        for v in (self.default, *self.values):
            number_text(v)  # int, float or str, finite
        if len(set(self.values)) != len(self.values):
            raise ValueError(f"Param.values has duplicates: {self.values!r}")
        if not self.text:
            object.__setattr__(self, "text", number_text(self.default))

    def choices(self) -> tuple:
        """What a student can be given: ``values`` without the default (if anything is left)."""
        rest = tuple(v for v in self.values if v != self.default)
        return rest or self.values


def normalise_student(student: str) -> str:
    """The form of a student id that variants are derived from ("  S001 " -> "s001")."""
    if not isinstance(student, str) or not student.strip():
        raise ValueError(f"a student id must be a non-empty string, got {student!r}")
    return " ".join(student.split()).casefold()


def draw(params: dict, secret: bytes, student: str, chapter: int) -> dict:
    """One value per parameter for this student: HMAC-SHA256(secret, chapter|name|student).

    Deterministic (same secret and id, same numbers), independent between parameters, and
    unpredictable without the secret. ``params`` is {name: Param}.
    """
    if not isinstance(secret, (bytes, bytearray)) or len(secret) < 16:
        raise ValueError("the teacher's secret must be at least 16 bytes")
    sid = normalise_student(student)
    out = {}
    for name in sorted(params):
        msg = f"scaling-book-variant|{int(chapter)}|{name}|{sid}".encode("utf-8")
        digest = hmac.new(bytes(secret), msg, hashlib.sha256).digest()
        choices = params[name].choices()
        out[name] = choices[int.from_bytes(digest[:8], "big") % len(choices)]
    return out


@dataclass(frozen=True)
class Slip:
    """A specific wrong method and the answer it gives, declared next to the expected value.

    says:   the feedback, in Chinese, naming the slip ("你把两个嵌入矩阵漏掉了：……").
    answer: what the slip produces: a callable taking the exercise's parameters as keyword
            arguments (none for an exercise without ``params``) and returning a number or a list
            of the expected form; for a "function" exercise, a wrong function with the reference
            function's signature. A plain number or list is accepted too.

    ``check()`` names the slip when the reader's answer is within the slip's window of this value
    (``Exercise.slip_rtol``); tests/test_exercises.py asserts, for every exercise, that every slip
    fails the check and is recognised.
    """

    says: str
    answer: Any

    def __post_init__(self):
        if not isinstance(self.says, str) or not self.says.strip():
            raise ValueError("Slip.says must be a non-empty Chinese sentence")

    def value(self, kw: dict):
        return self.answer(**kw) if callable(self.answer) else self.answer


@dataclass(frozen=True)
class Alt:
    """Another answer that is right (a convention the question leaves open, the book's older
    number, the power-of-two degree the chapter recommends), with the sentence shown after ✅."""

    answer: Any
    says: str = ""

    def value(self, kw: dict):
        return self.answer(**kw) if callable(self.answer) else self.answer


CONTEXTS = ("", "training", "inference")


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
    explain:   one sentence shown after ✅: what the answer means. With ``params`` it may name
               them as ``{B}`` (filled in with the student's numbers), or be a callable taking
               the parameters as keyword arguments and returning the sentence.
    params:    {name: Param}: numbers of the statement that differ per student (not for
               "function" exercises, whose inputs the grader draws anyway). ``expected`` then
               takes these names as keyword arguments, and so may callables in ``accept``.
    slips:     ``Slip``s: the likely wrong methods and the answers they give; ``check()`` names
               the one an answer matches. Every slip must fail the tolerance (a test asserts it).
    why:       for "choice": {wrong letter: feedback} (a string, or a callable taking the
               parameters); every wrong letter has its own (a test asserts it).
    edge_cases: for "function": inputs the question states (n_fsdp = 1, small N ...), always
               tried first, before the ``n_samples`` drawn ones.
    labels:    names of the entries of a list answer or of a function's list result, used in
               feedback ("第 2 个数（T_comms）").
    context:   "training", "inference" or "" (neutral): which generic hints can be true
               (no backward-pass hint on an inference question). Default: chapters 5-6
               training, 7-8 inference, others neutral.
    bytes_like: True if the quantities are bits/bytes (a factor of 8 may be bits vs bytes).
               Default: the unit names bytes or bits.
    slip_rtol: the window in which an answer is recognised as a slip (default max(rtol, 2%)).
    program:   for "function": a ``hlo_check.Program``: the reader writes the per-device body of
               a ``shard_map``; the checker wraps and runs it, and also checks which collectives
               its compiled HLO holds (slips are then wrong bodies too).
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
    explain: Any = ""
    choices: tuple = field(default=())
    params: dict = field(default_factory=dict)
    slips: tuple = ()
    why: dict = field(default_factory=dict)
    edge_cases: tuple = ()
    labels: tuple = ()
    context: str | None = None
    bytes_like: bool | None = None
    slip_rtol: float | None = None
    program: Any = None

    def __hash__(self):
        return hash(self.id)

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
        if not isinstance(self.params, dict) or not all(
                isinstance(k, str) and k.isidentifier() and isinstance(p, Param)
                for k, p in self.params.items()):
            raise ValueError(f"exercise {self.id}: params must be a dict of name -> Param")
        if self.params and self.kind == "function":
            raise ValueError(f"exercise {self.id}: a function exercise cannot declare params "
                             "(the grader draws its inputs)")
        if not isinstance(self.slips, tuple) or not all(isinstance(x, Slip) for x in self.slips):
            raise ValueError(f"exercise {self.id}: slips must be a tuple of Slip")
        if not isinstance(self.why, dict) or not all(
                isinstance(k, str) and (isinstance(v, str) or callable(v)) for k, v in self.why.items()):
            raise ValueError(f"exercise {self.id}: why must be a dict of letter -> feedback")
        if self.why and self.kind != "choice":
            raise ValueError(f"exercise {self.id}: why is for choice exercises")
        if self.choices and any(k not in self.choices for k in self.why):
            raise ValueError(f"exercise {self.id}: why has letters that are not choices: "
                             f"{sorted(set(self.why) - set(self.choices))}")
        if self.edge_cases and (self.kind != "function" or not all(isinstance(d, dict) for d in self.edge_cases)):
            raise ValueError(f"exercise {self.id}: edge_cases are keyword-argument dicts of a function exercise")
        if self.context is not None and self.context not in CONTEXTS:
            raise ValueError(f"exercise {self.id}: context must be one of {CONTEXTS}, got {self.context!r}")
        if self.slip_rtol is not None and self.slip_rtol < 0:
            raise ValueError(f"exercise {self.id}: slip_rtol must be >= 0")
        if self.program is not None and (self.kind != "function" or not hasattr(self.program, "judge")):
            raise ValueError(f"exercise {self.id}: program (a hlo_check.Program) is for function exercises")

    @property
    def chapter(self) -> int:
        return int(self.id.split(".")[0])

    def values(self, values: dict | None = None) -> dict:
        """This exercise's parameter values: ``values`` (a chapter's, may hold more names) over
        the defaults."""
        values = values or {}
        return {k: values.get(k, p.default) for k, p in self.params.items()}

    def reference(self, values: dict | None = None):
        """The expected answer for these parameter values (defaults when None; for "function":
        the reference function; with ``program``, the reference per-device body)."""
        if self.kind == "function":
            return self.program.body if self.program is not None else self.expected
        return self.expected(**self.values(values))

    def accepted(self, values: dict | None = None) -> list:
        """The other accepted answers (callables in ``accept`` get the parameter values)."""
        return [v for v, _ in self.alternatives(values)]

    def alternatives(self, values: dict | None = None) -> list:
        """[(answer, sentence shown after ✅)] for the other accepted answers."""
        kw = self.values(values)
        out = []
        for a in self.accept:
            if isinstance(a, Alt):
                out.append((a.value(kw), a.says))
            else:
                out.append((a(**kw) if callable(a) else a, ""))
        return out

    def slip_answers(self, values: dict | None = None) -> list:
        """[(Slip, the answer it gives for these parameter values)]."""
        kw = {} if self.kind == "function" else self.values(values)
        return [(s, s.answer if self.kind == "function" else s.value(kw)) for s in self.slips]

    def why_text(self, letter: str, values: dict | None = None) -> str | None:
        """The feedback for a wrong choice ``letter`` (None if the exercise has none)."""
        w = self.why.get(letter)
        if w is None:
            return None
        return w(**self.values(values)) if callable(w) else w

    @property
    def ctx(self) -> str:
        """The context that decides which generic hints can be true."""
        if self.context is not None:
            return self.context
        return {5: "training", 6: "training", 7: "inference", 8: "inference"}.get(self.chapter, "")

    @property
    def is_bytes(self) -> bool:
        if self.bytes_like is not None:
            return self.bytes_like
        u = self.unit
        return any(w in u for w in ("字节", "byte", "比特", "bit", "B/s", "GB", "MB", "kB", "KB", "TB",
                                    "GiB", "MiB"))

    @property
    def slip_window(self) -> float:
        return self.slip_rtol if self.slip_rtol is not None else max(self.rtol, 0.02)

    def explanation(self, values: dict | None = None) -> str:
        """``explain`` for these parameter values: a callable gets them as keyword arguments; a
        string has ``{name}`` filled in (as the statement writes the number)."""
        if callable(self.explain):
            return self.explain(**self.values(values))
        if not self.params or not self.explain:
            return self.explain
        return self.explain.format(**{k: number_text(v) for k, v in self.values(values).items()})


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
        _check_params(reg)
        _REGISTRY = reg
    return _REGISTRY


def _check_params(reg) -> None:
    seen: dict = {}
    for ex in reg.values():
        for name, p in ex.params.items():
            key = (ex.chapter, name)
            if key in seen and seen[key][1] != p:
                raise ValueError(f"parameter {name!r} of chapter {ex.chapter} is declared differently "
                                 f"in exercises {seen[key][0]} and {ex.id}")
            seen.setdefault(key, (ex.id, p))


def chapter_params(chapter: int) -> dict:
    """{name: Param} of all exercises of this chapter (names are shared within a chapter)."""
    out: dict = {}
    for ex in for_chapter(chapter):
        out.update(ex.params)
    return out


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
