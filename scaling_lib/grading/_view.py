"""What a notebook sees of its chapter's per-student numbers (``P = variant(1)``).

Pure Python with no imports from scaling_lib: the grader copies this file into each submission's
sandbox, where the real registry is absent, so the same ``Variant`` behaves the same there.
"""
from __future__ import annotations

__all__ = ["Variant", "format_value"]


def format_value(v) -> str:
    """8192, 1e12, 2.5e12, 0.5, 'TPU v5e' (the form a statement uses)."""
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    v = float(v)
    if v == int(v) and abs(v) < 1e5:
        return str(int(v))
    s = f"{v:.6g}"
    if "e" in s:
        mant, exp = s.split("e")
        s = f"{mant}e{int(exp)}"
    return s


class Variant:
    """The numbers of one chapter's exercises: ``P.B`` or ``P["B"]``.

    ``student`` is None for the book's own numbers. Printing it lists every number, so a reader
    can see at a glance which numbers their copy of the exercises uses.
    """

    __slots__ = ("chapter", "student", "_values")

    def __init__(self, chapter: int, student, values: dict):
        object.__setattr__(self, "chapter", chapter)
        object.__setattr__(self, "student", student)
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(self._unknown(name)) from None

    def __getitem__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(self._unknown(name)) from None

    def __setattr__(self, name, value):
        raise AttributeError("题目参数是只读的：要换一组数，请向老师要你自己的那份作业")

    def _unknown(self, name) -> str:
        names = "、".join(sorted(self._values)) or "（没有）"
        return f"第 {self.chapter} 章的练习没有叫 {name!r} 的参数；有：{names}"

    def __contains__(self, name) -> bool:
        return name in self._values

    def __iter__(self):
        return iter(sorted(self._values))

    def as_dict(self) -> dict:
        return dict(self._values)

    def __repr__(self) -> str:
        who = f"（学生 {self.student}）" if self.student else "（书上的数）"
        body = "，".join(f"{k} = {format_value(self._values[k])}" for k in sorted(self._values))
        return f"第 {self.chapter} 章练习的题目参数{who}：{body or '没有'}"
