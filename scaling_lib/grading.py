"""Exercise checking and grading: ``check()`` in notebooks, student copies, batch grading.

Book: every exercise notebook (``exercises/NN_name.ipynb``); DESIGN.md §5.

Three uses, one comparison:

- ``check("1.2", i_crit)`` in a notebook prints one line of Chinese feedback that starts with
  ✅ or ❌ (relative error, a hint for the usual slips: a factor of 2, 3, 8, 1e3..., seconds vs
  milliseconds, bits vs bytes, plus the exercise's own hints). It never raises for a bad answer.
- ``python -m scaling_lib.grading strip`` turns the reference notebooks ``exercises/*.ipynb``
  into ``exercises/student/*.ipynb`` (solutions replaced by ``var = ...`` or a ``def`` stub,
  solution dropdowns and outputs removed).
- ``python -m scaling_lib.grading grade FILES... --out scores.csv`` runs each submitted notebook
  in its own process and fresh kernel (per-cell and per-notebook time limits, a memory limit, a
  scratch directory), reads the answers out of the kernel as plain JSON data and scores them in
  the grader's own process against expected values it computes from the registry itself.

``evaluate(exercise, answer)`` is the comparison all three share. Expected values come from
``scaling_lib.exercises`` (computed from the library, never typed in).

Trust model of ``grade``. The submission controls its kernel completely, so nothing it prints or
computes about itself is believed: the grader (1) takes the registry and computes every expected
value in its own process, before and independently of any submission; (2) draws the inputs of
function exercises itself, from a per-run seed the submission never sees; (3) runs its own
extraction code (``_grading_extract.py``, sent as source text, executed with builtins only, so
shadowed names or a patched ``scaling_lib`` in the kernel do not change it) that reads the
registered variables by name from the notebook's namespace and returns them as plain JSON data
(numbers, strings, lists; nothing is unpickled); (4) compares in its own process. A submission
that redefines ``check``, prints ✅, edits the registry or monkeypatches the library can therefore
only change the values it hands in, which is what it is graded on. Limits per submission: its own
process and kernel, a scratch copy as working directory, a per-cell timeout (the cell is
interrupted and the rest still run), a per-notebook wall-clock limit (the kernel is stopped and
what was read so far counts), and a memory limit (``RLIMIT_DATA`` in the kernel, see
``_grading_kernel``). This is process isolation, not an OS sandbox: a submission can still read
or write files the grading user can, so grade untrusted classes inside a container. Answers
obtained by calling the library (e.g. ``roofline.critical_batch``) count as answered: the reader
has the library, as the book intends.

Heavy dependencies (nbformat, nbclient, jupyter_client) are imported inside the functions that
need them, so ``from scaling_lib.grading import check`` stays cheap.
"""
from __future__ import annotations

import argparse
import csv
import inspect
import json
import math
import numbers
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["check", "evaluate", "CheckResult", "strip_notebook", "strip", "grade",
           "SubmissionResult", "main"]

# --------------------------------------------------------------------------------------------
# 1. Comparing one answer with the expected value
# --------------------------------------------------------------------------------------------

_NOT_ANSWERED = "❌ 还没作答：把 `...` 换成你的结果再运行。"
_RATIO_TOL = 1.05  # a hint fires when answer/expected is within 5% of its ratio


class _Missing:
    """The variable was not defined in the submission (grader only)."""

    def __repr__(self):
        return "<missing>"


MISSING = _Missing()


@dataclass(frozen=True)
class _Opaque:
    """A value the kernel could not send as plain data; only its type name travels."""

    type_name: str
    shape: tuple | None = None


@dataclass(frozen=True)
class CheckResult:
    """What ``check()`` and the grader found: truthy when correct.

    ``check()`` has already printed ``message``; the result shows nothing more in a notebook
    (``_ipython_display_`` is empty), so a cell ending in ``check(...)`` prints the feedback once.
    """

    id: str
    correct: bool
    message: str

    def __bool__(self) -> bool:
        return self.correct

    def __repr__(self) -> str:
        return f"CheckResult(id={self.id!r}, correct={self.correct})"

    def _ipython_display_(self) -> None:  # the message was printed already
        return None


def check(ex_id, answer) -> CheckResult:
    """Check ``answer`` for exercise ``ex_id`` ("1.2") and print Chinese feedback (✅/❌).

    Never raises for a bad answer: a string, None, NaN, an array, ``...`` or a function that
    fails all give a ❌ line saying what is wrong. An unknown id lists the chapter's ids.
    Returns a ``CheckResult`` (truthy when correct) that does not display itself again.
    """
    ex, msg = _lookup(ex_id)
    if ex is None:
        res = CheckResult(str(ex_id), False, msg)
    else:
        res = evaluate(ex, answer)
    print(res.message)
    return res


def _lookup(ex_id):
    from .exercises import registry, _sort_key
    if not isinstance(ex_id, str):
        return None, (f"❌ 练习编号要写成字符串，例如 check(\"1.2\", 你的答案)；"
                      f"你给的是{_describe(ex_id)}。")
    key = ex_id.strip()
    reg = registry()
    if key in reg:
        return reg[key], ""
    chap = key.split(".")[0]
    same = sorted((k for k in reg if k.split(".")[0] == chap), key=_sort_key)
    if same:
        return None, f"❌ 没有编号为 \"{key}\" 的练习。第 {chap} 章的练习有：{'、'.join(same)}。"
    return None, f"❌ 没有编号为 \"{key}\" 的练习，第 {chap} 章还没有登记练习。编号的格式是 \"1.2\"。"


def evaluate(exercise, answer, *, seed: int | None = None) -> CheckResult:
    """Compare ``answer`` with ``exercise``'s expected value, without printing.

    ``answer`` is what the reader assigned (or, in the grader, the plain data read back from the
    kernel). For "function" exercises the reader's function is called on ``n_samples`` inputs
    from ``sampler(np.random.default_rng(seed))``; ``seed`` defaults to a fixed value per
    exercise, so the feedback in a notebook is deterministic.
    """
    ex = exercise
    if ex.kind == "function":
        if answer is Ellipsis:
            return CheckResult(ex.id, False, _NOT_ANSWERED)
        if not callable(answer) or isinstance(answer, type):
            return _fail(ex, _type_message(ex, answer))
        inputs = sample_inputs(ex, default_seed(ex) if seed is None else seed)
        cases = []
        for kw in inputs:
            try:
                cases.append((kw, ("ok", answer(**kw))))
            except Exception as e:  # the reader's code: report, never raise
                cases.append((kw, ("error", f"{type(e).__name__}: {e}")))
                break
        return judge_function(ex, cases)
    if ex.kind == "number":
        return _judge_number(ex, answer)
    if ex.kind == "numbers":
        return _judge_numbers(ex, answer)
    return _judge_choice(ex, answer)


def default_seed(ex) -> int:
    """The seed ``check()`` uses for a function exercise (fixed: notebook output is stable)."""
    return zlib.crc32(ex.id.encode())


def sample_inputs(ex, seed: int) -> list[dict]:
    """``n_samples`` keyword-argument dicts for a function exercise, as plain Python data."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(ex.n_samples):
        kw = ex.sampler(rng)
        if not isinstance(kw, dict):
            raise TypeError(f"exercise {ex.id}: sampler must return a dict of keyword arguments, "
                            f"got {type(kw).__name__}")
        out.append({str(k): _plain(v) for k, v in kw.items()})
    return out


def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def _ok(ex, extra: str = "") -> CheckResult:
    msg = "✅ 对了。" + extra + (ex.explain or "")
    return CheckResult(ex.id, True, msg.strip())


def _fail(ex, msg: str) -> CheckResult:
    return CheckResult(ex.id, False, msg)


# ---- descriptions ----------------------------------------------------------------------------

def _fmt(x: float) -> str:
    from .units import fmt_num
    try:
        return fmt_num(x)
    except (TypeError, ValueError, OverflowError):
        return repr(x)


def _fmt_unit(ex) -> str:
    u = ex.unit.strip()
    return f" {u}" if u and not u.startswith(("[", "（", "(")) else ""


def _describe(v) -> str:
    """'字符串 "7.3h"', 'None', '一个长度为 3 的列表' ... (what the reader gave)."""
    if v is None:
        return " None"
    if v is MISSING:
        return "（没有找到这个变量）"
    if isinstance(v, bool):
        return f"布尔值 {v}"
    if isinstance(v, str):
        s = v if len(v) <= 30 else v[:27] + "..."
        return f"字符串 \"{s}\""
    if isinstance(v, _Opaque):
        if v.shape is not None:
            return f"一个形状为 {tuple(v.shape)} 的数组"
        if v.type_name == "callable":
            return "一个函数"
        return f"一个 {v.type_name} 对象"
    if isinstance(v, complex):
        return f"复数 {v}"
    if isinstance(v, np.ndarray) or (hasattr(v, "shape") and hasattr(v, "dtype")):
        return f"一个形状为 {tuple(np.shape(v))} 的数组"
    if isinstance(v, list):
        return f"一个长度为 {len(v)} 的列表"
    if isinstance(v, tuple):
        return f"一个长度为 {len(v)} 的元组"
    if isinstance(v, dict):
        return "一个字典"
    if callable(v):
        return "一个函数"
    if isinstance(v, numbers.Number):
        return f"数 {v}"
    return f"一个 {type(v).__name__} 对象"


def _noun(ex) -> str:
    if ex.kind == "number":
        u = ex.unit.strip()
        return f"一个数（单位：{u}）" if u else "一个数"
    if ex.kind == "numbers":
        try:
            n = len(ex.reference())
        except Exception:
            n = None
        u = ex.unit.strip()
        return (f"一个含 {n} 个数的列表" if n else "一个数的列表") + (f"（{u}）" if u else "")
    if ex.kind == "choice":
        opts = "、".join(f'"{c}"' for c in ex.choices) if ex.choices else '"A"、"B"'
        return f"一个选项字母（{opts}）"
    return f"一个函数（用 def {ex.var}(...) 定义）"


def _type_message(ex, v) -> str:
    if v is MISSING:
        return (f"❌ 没有找到变量 `{ex.var}`：答题那一格是不是没有运行成功，或者变量名写错了？")
    msg = f"❌ 这里要{_noun(ex)}，你填的是{_describe(v)}。"
    if isinstance(v, str) and ex.kind in ("number", "numbers") and _parses_as_float(v):
        msg += "去掉引号，直接写数。"
    elif ex.kind == "number" and _size_one(v):
        msg += "把里面那一个数取出来（例如 x[0] 或 x.item()）。"
    elif ex.kind == "function" and not callable(v):
        msg += f"要交的是函数本身：写 def {ex.var}(...)，不要调用它。"
    return msg


def _parses_as_float(s: str) -> bool:
    try:
        float(s.replace("_", "").strip())
        return True
    except ValueError:
        return False


def _size_one(v) -> bool:
    if isinstance(v, (list, tuple)):
        return len(v) == 1
    if isinstance(v, np.ndarray):
        return v.size == 1
    return False


def _as_float(v):
    """A float, or None if ``v`` is not a single real number (bool, str, array, ... are not)."""
    if isinstance(v, bool) or v is None or isinstance(v, (str, bytes, _Opaque, _Missing)):
        return None
    if isinstance(v, numbers.Real):
        try:
            return float(v)
        except (OverflowError, ValueError, TypeError):
            return None
    if hasattr(v, "shape") and hasattr(v, "dtype") and not callable(v):  # numpy / jax 0-d
        try:
            if tuple(v.shape) != ():
                return None
            arr = np.asarray(v)
            if arr.dtype.kind not in "iuf":
                return None
            return float(arr)
        except Exception:
            return None
    return None


# ---- numbers ---------------------------------------------------------------------------------

def _close(a: float, e: float, rtol: float, atol: float) -> bool:
    return abs(a - e) <= atol + rtol * abs(e)


def _rel(a: float, e: float) -> str:
    if e == 0:
        return f"绝对误差 {_fmt(a - e)}"
    q = a / e
    if q >= 10 or 0 < q <= 0.1:
        return f"约是正确值的 {_fmt(q)} 倍"
    r = (a - e) / abs(e)
    pct = r * 100
    s = f"{pct:+.2g}" if abs(pct) < 10 else f"{pct:+.0f}"
    return f"相对误差 {s}%"


def _near(r: float, target: float) -> bool:
    return r > 0 and abs(math.log(r / target)) <= math.log(_RATIO_TOL)


_CN_NUM = dict(enumerate("零一两三四五六七八九十", 0)) | {11: "十一", 12: "十二", 13: "十三", 14: "十四",
                                                       15: "十五", 16: "十六", 17: "十七", 18: "十八"}
_MAG = {k: _CN_NUM[k] for k in (3, 6, 9, 12, 15)}


def _is_time_unit(unit: str) -> bool:
    u = unit.strip().lower()
    return u in ("秒", "s", "sec", "seconds") or u.endswith("秒") and "毫" not in u and "微" not in u


def _ratio_hint(ex, a: float, e: float) -> str:
    """The hint for answer/expected = a/e, or ''. Exercise hints first, then the usual slips."""
    if e == 0 or a == 0 or not (math.isfinite(a) and math.isfinite(e)):
        return ""
    r = a / e
    for ratio, msg in ex.hints:
        if isinstance(ratio, numbers.Real) and not isinstance(ratio, bool) and ratio != 0 \
                and _near(r, float(ratio)):
            return "❌ " + msg
    if r < 0:
        if _near(-r, 1.0):
            return "❌ 大小对了，符号反了。"
        return "❌ 符号不对：结果应该是" + ("正数。" if e > 0 else "负数。")
    big = "偏大" if r > 1 else "偏小"
    rr = r if r > 1 else 1 / r
    if _near(rr, 2):
        return (f"❌ 差了正好 2 倍（你的结果{big}）。看看是不是多乘或漏乘了一个 2："
                "一次乘加是 2 个 FLOP，bf16 每个数占 2 字节，链路带宽有单向和双向之分。")
    if _near(rr, 3):
        if r < 1:
            return ("❌ 差了 3 倍左右（你的结果偏小）。训练要算前向和反向，合计约为前向的 3 倍，"
                    "只算前向就少了。")
        return "❌ 差了 3 倍左右（你的结果偏大）。这里是不是只该算前向，你把反向也算进去了？"
    if _near(rr, 4):
        return f"❌ 差了 4 倍（你的结果{big}）：是不是两个 2 倍叠在一起了（2 FLOPs/乘加、2 字节/bf16、单向/双向）？"
    if _near(rr, 8):
        return f"❌ 差了 8 倍（你的结果{big}）：比特（bit）和字节（byte）是不是弄混了？1 字节 = 8 比特。"
    for k, word in _MAG.items():
        if _near(rr, 10.0 ** k):
            if _is_time_unit(ex.unit) and r > 1 and k in (3, 6, 9):
                small = {3: "毫秒", 6: "微秒", 9: "纳秒"}[k]
                return f"❌ 差了大约{word}个数量级（你的结果偏大），多半是单位：答案要用秒，你的结果像是{small}。"
            return (f"❌ 差了大约{word}个数量级（你的结果{big}），多半是单位："
                    "ms 和 s、GB 和 B、TFLOPs 和 FLOPs 再对一遍。")
    lg = math.log10(rr)
    if lg >= 1.5:
        n = round(lg)
        word = _CN_NUM.get(n, str(n))
        return f"❌ 差了大约{word}个数量级（你的结果{big}）。把每一步的量级和单位再核对一遍。"
    return ""


def _number_feedback(ex, a: float, e: float, what: str = "你的结果") -> str:
    """The ❌ line for a number outside tolerance (a hint if one fits)."""
    rel = _rel(a, e)
    got = f"{what}是 {_fmt(a)}{_fmt_unit(ex)}，{rel}"
    hint = _ratio_hint(ex, a, e)
    if hint:
        return f"{hint}（{got}）"
    if e != 0 and a / e > 0 and abs(a / e - 1) <= max(5 * ex.rtol, 0.15):
        tol = f"±{ex.rtol * 100:.3g}%" if ex.rtol > 0 else f"±{_fmt(ex.atol)}"
        return f"❌ 很接近，但超出了 {tol} 的容差（{rel}）。中间结果是不是四舍五入得太早了？"
    side = "偏大" if a > e else "偏小"
    return f"❌ 还不对：{got}，{side}了。把公式里每一项的含义和单位再对一遍。"


def _bad_float(ex, a: float) -> str | None:
    if math.isnan(a):
        return "❌ 你的结果是 NaN（不是一个数）：多半是某一步出现了 0/0，或者用到了还没算出来的量。"
    if math.isinf(a):
        return "❌ 你的结果是无穷大：多半是除以了 0，或者中间结果溢出了。"
    return None


def _judge_number(ex, answer) -> CheckResult:
    if answer is Ellipsis:
        return CheckResult(ex.id, False, _NOT_ANSWERED)
    a = _as_float(answer)
    if a is None:
        return _fail(ex, _type_message(ex, answer))
    bad = _bad_float(ex, a)
    if bad:
        return _fail(ex, bad)
    e = float(ex.reference())
    if _close(a, e, ex.rtol, ex.atol):
        return _ok(ex)
    for alt in ex.accept:
        if _close(a, float(alt), ex.rtol, ex.atol):
            return _ok(ex)
    return _fail(ex, _number_feedback(ex, a, e))


def _judge_numbers(ex, answer) -> CheckResult:
    if answer is Ellipsis:
        return CheckResult(ex.id, False, _NOT_ANSWERED)
    expected = [float(x) for x in ex.reference()]
    n = len(expected)
    if isinstance(answer, np.ndarray) or (hasattr(answer, "shape") and hasattr(answer, "tolist")
                                          and not callable(answer)):
        try:
            arr = np.asarray(answer)
        except Exception:
            return _fail(ex, _type_message(ex, answer))
        if arr.ndim != 1:
            return _fail(ex, f"❌ 这里要{_noun(ex)}，你填的是一个形状为 {arr.shape} 的数组。")
        items = list(arr.tolist())
    elif isinstance(answer, (list, tuple)):
        items = list(answer)
    else:
        return _fail(ex, _type_message(ex, answer))
    if len(items) != n:
        return _fail(ex, f"❌ 这里要 {n} 个数（按题目给的顺序），你给了 {len(items)} 个。")
    values = []
    for i, x in enumerate(items, 1):
        if x is Ellipsis:
            return _fail(ex, f"❌ 第 {i} 个还没作答：把 `...` 换成你的结果再运行。")
        v = _as_float(x)
        if v is None:
            return _fail(ex, f"❌ 第 {i} 个不是一个数：你填的是{_describe(x)}。")
        bad = _bad_float(ex, v)
        if bad:
            return _fail(ex, bad.replace("你的结果", f"第 {i} 个数", 1))
        values.append(v)

    def all_close(ref):
        return all(_close(a, e, ex.rtol, ex.atol) for a, e in zip(values, ref))

    if all_close(expected):
        return _ok(ex)
    for alt in ex.accept:
        try:
            alt = [float(x) for x in alt]
        except TypeError:
            continue
        if len(alt) == n and all_close(alt):
            return _ok(ex)
    perm = _matching_permutation(values, expected, ex)
    if perm:
        return _fail(ex, "❌ 这几个数都算对了，但顺序不对：按题目要求的顺序排列。")
    for i, (a, e) in enumerate(zip(values, expected), 1):
        if not _close(a, e, ex.rtol, ex.atol):
            msg = _number_feedback(ex, a, e, what=f"第 {i} 个数")
            if not msg.startswith("❌ 还不对") and not msg.startswith("❌ 很接近"):
                msg = f"❌ 第 {i} 个数不对。" + msg[2:]
            elif msg.startswith("❌ 很接近"):
                msg = f"❌ 第 {i} 个数" + msg[2:]
            return _fail(ex, msg)
    return _fail(ex, "❌ 还不对。")  # unreachable: some element must be off


def _matching_permutation(values, expected, ex) -> bool:
    """True if ``values`` is a reordering of ``expected`` (each within tolerance)."""
    left = list(expected)
    for a in values:
        for j, e in enumerate(left):
            if _close(a, e, ex.rtol, ex.atol):
                del left[j]
                break
        else:
            return False
    return True


def _norm_choice(s: str) -> str:
    s = s.strip().strip("\"'“”‘’").strip()
    s = s.strip("()（）[]【】").strip().rstrip(".。、)）").strip()
    return s.upper()


def _judge_choice(ex, answer) -> CheckResult:
    if answer is Ellipsis:
        return CheckResult(ex.id, False, _NOT_ANSWERED)
    if not isinstance(answer, str):
        return _fail(ex, _type_message(ex, answer))
    got = _norm_choice(answer)
    want = _norm_choice(str(ex.reference()))
    if not got:
        return _fail(ex, f"❌ 你填的是空字符串：这里要{_noun(ex)}。")
    if ex.choices and got not in {_norm_choice(c) for c in ex.choices}:
        opts = "、".join(f'"{c}"' for c in ex.choices)
        return _fail(ex, f"❌ 请从 {opts} 里选一个字母，你填的是{_describe(answer)}。")
    if got == want or got in {_norm_choice(str(a)) for a in ex.accept}:
        return _ok(ex)
    for key, msg in ex.hints:
        if isinstance(key, str) and _norm_choice(key) == got:
            return _fail(ex, f"❌ 不是 {got}。{msg}")
    return _fail(ex, f"❌ 不是 {got}。回到题目里的数，比一比两个时间（或两个强度）哪个更大。")


# ---- functions -------------------------------------------------------------------------------

def _fmt_kwargs(kw: dict) -> str:
    return ", ".join(f"{k}={_fmt(v) if isinstance(v, float) else v!r}" for k, v in kw.items())


def _param_names(ex) -> str:
    try:
        return ", ".join(inspect.signature(ex.expected).parameters)
    except (TypeError, ValueError):
        return ""


def judge_function(ex, cases) -> CheckResult:
    """Judge a function exercise from ``cases``: [(kwargs, outcome), ...] where outcome is
    ("ok", value) | ("error", "TypeError: ...") | ("timeout", seconds). Expected outputs are
    computed here from ``ex.expected``; the first failing input is reported."""
    if not cases:
        return _fail(ex, "❌ 没能测试你的函数（没有拿到任何结果）。")
    for kw, (status, val) in cases:
        args = _fmt_kwargs(kw)
        if status == "error":
            msg = f"❌ 你的函数在输入 {args} 上出错了：{str(val)[:200]}。"
            if str(val).startswith("TypeError"):
                names = _param_names(ex)
                if names:
                    msg += f"检查参数名：会这样调用它：{ex.var}({names}=...)（按参数名传入）。"
            return _fail(ex, msg)
        if status == "timeout":
            return _fail(ex, f"❌ 你的函数在输入 {args} 上运行太久，被停下了：是不是写成了死循环？")
        ref = np.asarray(ex.expected(**kw), dtype=float)
        if val is None or val is Ellipsis:
            return _fail(ex, f"❌ 你的函数在输入 {args} 上返回了 None：函数体里是不是还只有 `...`，"
                             "或者忘了写 return？")
        got = _as_array(val)
        if got is None:
            return _fail(ex, f"❌ 你的函数在输入 {args} 上返回了{_describe(val)}，这里要一个数。")
        if got.shape != ref.shape:
            if ref.shape == ():
                return _fail(ex, f"❌ 你的函数在输入 {args} 上返回了一个形状为 {got.shape} 的数组，"
                                 "这里要一个数。")
            return _fail(ex, f"❌ 你的函数在输入 {args} 上返回的形状是 {got.shape}，应该是 {ref.shape}。")
        flat_g, flat_r = got.reshape(-1), ref.reshape(-1)
        for a, e in zip(flat_g.tolist(), flat_r.tolist()):
            bad = _bad_float(ex, a)
            if bad:
                return _fail(ex, f"❌ 输入 {args} 时，" + bad[2:].replace("你的结果", "你的函数返回", 1))
            if not _close(a, e, ex.rtol, ex.atol):
                what = f"输入 {args} 时，你的函数返回值"
                msg = _number_feedback(ex, a, e, what=what)
                if msg.startswith("❌ 很接近"):
                    msg = f"❌ 输入 {args} 时，你的函数返回值" + msg[2:]
                elif msg.startswith("❌ 还不对"):
                    msg = f"❌ 输入 {args} 时，你的函数返回 {_fmt(a)}{_fmt_unit(ex)}，{_rel(a, e)}。"
                return _fail(ex, msg)
    return _ok(ex, f"在 {len(cases)} 组随机输入上都和库函数一致。")


def _as_array(v):
    if isinstance(v, bool) or isinstance(v, (str, bytes, _Opaque, _Missing)) or v is None:
        return None
    f = _as_float(v)
    if f is not None:
        return np.asarray(f)
    try:
        arr = np.asarray(v)
    except Exception:
        return None
    if arr.dtype.kind not in "iuf" or arr.dtype == bool:
        return None
    return arr.astype(float)


# --------------------------------------------------------------------------------------------
# 2. Student copies: strip solutions from the reference notebooks
# --------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
_BEGIN = re.compile(r"^[ \t]*###\s*BEGIN SOLUTION\s*$", re.M)
_END = re.compile(r"^[ \t]*###\s*END SOLUTION\s*$", re.M)
_CHECK = re.compile(r"""\bcheck\(\s*["']([^"']+)["']""")
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|:{3,})\{(?P<name>solution|solution-start)\}.*$")
_SOLUTION_END = re.compile(r"^[ \t]*(`{3,}|:{3,})\{solution-end\}.*$")
STUDENT_PLACEHOLDER = "  # 在这里填入你的答案"
FUNCTION_PLACEHOLDER = "  # 在这里写出函数体"


class StripError(ValueError):
    """A reference notebook cannot be turned into a student copy (says which cell and why)."""


def _stub_for(ex, indent: str, solution: str) -> str:
    if ex.kind != "function":
        return f"{indent}{ex.var} = ...{STUDENT_PLACEHOLDER}"
    return f"{indent}def {ex.var}({_signature_text(ex, solution)}):\n{indent}    ...{FUNCTION_PLACEHOLDER}"


def _signature_text(ex, solution: str) -> str:
    """The reference function's parameters, written plainly (names and defaults, no annotations)."""
    try:
        sig = inspect.signature(ex.expected)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        parts, star_done = [], False
        params = list(sig.parameters.values())
        for i, p in enumerate(params):
            if p.kind is p.VAR_POSITIONAL:
                parts.append(f"*{p.name}")
                star_done = True
                continue
            if p.kind is p.VAR_KEYWORD:
                parts.append(f"**{p.name}")
                continue
            if p.kind is p.KEYWORD_ONLY and not star_done:
                parts.append("*")
                star_done = True
            s = p.name if p.default is p.empty else f"{p.name}={p.default!r}"
            parts.append(s)
            if p.kind is p.POSITIONAL_ONLY and (i + 1 == len(params)
                                                 or params[i + 1].kind is not p.POSITIONAL_ONLY):
                parts.append("/")
        return ", ".join(parts)
    m = re.search(rf"^\s*def\s+{re.escape(ex.var)}\s*\((.*?)\)\s*(->[^:]*)?:", solution, re.M | re.S)
    return m.group(1).strip() if m else ""


def _strip_code(source: str, where: str) -> str:
    from .exercises import registry
    begins = list(_BEGIN.finditer(source))
    ends = list(_END.finditer(source))
    if not begins and not ends:
        return source
    if len(begins) != len(ends):
        raise StripError(f"{where}: {len(begins)} '### BEGIN SOLUTION' but {len(ends)} '### END SOLUTION'")
    ids = _CHECK.findall(source)
    if not ids:
        raise StripError(f"{where}: a solution block without check(\"N.M\", ...) in the same cell; "
                         "the grader cannot tell which variable to leave for the reader")
    reg = registry()
    unknown = [i for i in ids if i not in reg]
    if unknown:
        raise StripError(f"{where}: check() uses unknown exercise id(s) {', '.join(unknown)}")
    exs = [reg[i] for i in dict.fromkeys(ids)]
    if len(begins) == len(exs):
        groups = [[e] for e in exs]
    elif len(begins) == 1:
        groups = [exs]
    else:
        raise StripError(f"{where}: {len(begins)} solution blocks but {len(exs)} checked exercises; "
                         "use one block per check() or one block for all")
    out, pos = [], 0
    for b, e, group in zip(begins, ends, groups):
        if e.start() < b.end():
            raise StripError(f"{where}: '### END SOLUTION' before '### BEGIN SOLUTION'")
        indent = re.match(r"[ \t]*", source[b.start():b.end()]).group(0)
        solution = source[b.end():e.start()]
        out.append(source[pos:b.start()])
        out.append("\n".join(_stub_for(x, indent, solution) for x in group))
        pos = e.end()
    out.append(source[pos:])
    return "".join(out)


def _strip_markdown(source: str) -> str:
    """Remove {solution} directive blocks (and {solution-start}...{solution-end} pairs)."""
    if "{solution" not in source:
        return source
    lines = source.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        if m.group("name") == "solution-start":
            j = i + 1
            while j < len(lines) and not _SOLUTION_END.match(lines[j]):
                j += 1
            i = j + 1
            continue
        fence = m.group("fence")
        ch, n = fence[0], len(fence)
        close = re.compile(rf"^[ \t]*{re.escape(ch)}{{{n},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        i = j + 1
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n")


def strip_notebook(nb, name: str = "notebook"):
    """The student copy of a reference exercise notebook (an nbformat NotebookNode; not modified)."""
    import copy
    import nbformat

    new = copy.deepcopy(nb)
    cells = []
    for i, c in enumerate(new.cells):
        where = f"{name}, cell {i}"
        c.metadata.pop("execution", None)
        if c.cell_type == "code":
            c.source = _strip_code(c.source, where)
            c.outputs = []
            c.execution_count = None
        elif c.cell_type == "markdown":
            c.source = _strip_markdown(c.source)
            if not c.source.strip():
                continue
        cells.append(c)
    new.cells = cells
    nbformat.validate(new)
    return new


def _write_text(nb) -> str:
    import nbformat
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def strip(src: str | Path = "exercises", out: str | Path = "exercises/student", *,
          check_only: bool = False) -> list[str]:
    """Write a student copy for every ``src/*.ipynb`` into ``out``.

    With ``check_only`` nothing is written; returns the stale or missing copies (and stray files
    in ``out`` without a reference notebook). Otherwise returns the files written.
    Relative paths are taken from the working directory, or from the repository root when the
    working directory has no such folder.
    """
    import nbformat

    src, out = Path(src), Path(out)
    if not src.is_absolute() and not src.is_dir() and (ROOT / src).is_dir():
        src, out = ROOT / src, (out if out.is_absolute() else ROOT / out)  # run from elsewhere
    if not src.is_dir():
        raise FileNotFoundError(f"no such folder of reference notebooks: {src}")
    refs = sorted(p for p in src.glob("*.ipynb"))
    result = []
    for p in refs:
        nb = nbformat.read(p, as_version=4)
        text = _write_text(strip_notebook(nb, name=p.name))
        target = out / p.name
        old = target.read_text(encoding="utf-8") if target.exists() else None
        if old == text:
            continue
        if check_only:
            result.append(f"{_rel_path(target)}: {'missing' if old is None else 'stale'} "
                          f"(run python -m scaling_lib.grading strip)")
        else:
            out.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            result.append(str(_rel_path(target)))
    if check_only and out.is_dir():
        names = {p.name for p in refs}
        for q in sorted(out.glob("*.ipynb")):
            if q.name not in names:
                result.append(f"{_rel_path(q)}: no reference notebook {q.name} in {_rel_path(src)}")
    return result


def _rel_path(p: Path):
    try:
        return p.relative_to(ROOT)
    except ValueError:
        return p


# --------------------------------------------------------------------------------------------
# 3. Batch grading
# --------------------------------------------------------------------------------------------

KERNEL_NAME = "scaling-lib-grader"
STATUS_OK = "完成"


@dataclass
class SubmissionResult:
    """One graded submission: points per exercise id, the reason when something failed."""

    file: str
    student: str
    chapters: list = field(default_factory=list)
    scores: dict = field(default_factory=dict)     # id -> points earned
    max_points: dict = field(default_factory=dict)  # id -> points available
    messages: dict = field(default_factory=dict)    # id -> feedback line
    sources: dict = field(default_factory=dict)     # id -> "final" | "after cell N" | "none"
    status: str = STATUS_OK
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total(self) -> float:
        return float(sum(self.scores.values()))

    @property
    def max(self) -> float:
        return float(sum(self.max_points.values()))

    def as_dict(self) -> dict:
        return {"file": self.file, "student": self.student, "chapters": self.chapters,
                "total": self.total, "max": self.max, "status": self.status,
                "notes": self.notes, "seconds": round(self.seconds, 2),
                "exercises": {i: {"points": self.scores.get(i, 0.0), "max": self.max_points[i],
                                  "correct": self.scores.get(i, 0.0) > 0,
                                  "message": self.messages.get(i, ""),
                                  "source": self.sources.get(i, "none")}
                              for i in self.max_points}}


def _student_name(path: Path, ref_stems: set[str]) -> str:
    """'alice' from alice.ipynb, alice_01_roofline.ipynb, 01_roofline-alice.ipynb, alice/01_roofline.ipynb."""
    stem = path.stem
    for ref in sorted(ref_stems, key=len, reverse=True):
        if ref and ref in stem:
            stem = stem.replace(ref, "")
            break
    stem = re.sub(r"^[\s._-]+|[\s._-]+$", "", stem)
    if not stem:
        stem = path.parent.name or path.stem
    return stem


def _read_submission(path: Path):
    """(notebook, None) or (None, reason in Chinese)."""
    import nbformat
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, "文件不存在"
    except IsADirectoryError:
        return None, "这是一个文件夹，不是 notebook"
    except OSError as e:
        return None, f"无法读取文件：{e.strerror or e}"
    if len(raw) > 50 << 20:
        return None, f"文件太大（{len(raw) >> 20} MB），不像是练习 notebook"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "不是 notebook 文件：内容不是 UTF-8 文本"
    head = text.lstrip("\ufeff \t\r\n")
    if not head.startswith("{"):
        start = head[:20].replace("\n", " ")
        return None, f"不是 notebook 文件：内容不是 JSON（开头是 \"{start}\"）" if start else "文件是空的"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        return None, f"不是有效的 notebook：JSON 解析失败（第 {e.lineno} 行：{e.msg}），文件可能被截断或损坏"
    if not isinstance(data, dict) or "cells" not in data or not isinstance(data.get("cells"), list):
        return None, "不是 notebook 文件：JSON 里没有 cells 列表"
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
        nbformat.validate(nb)
    except Exception as e:  # nbformat raises several types for malformed notebooks
        return None, f"不是有效的 notebook：{type(e).__name__}: {str(e).splitlines()[0][:150]}"
    return nb, None


def _chapters_of(nb, path: Path, reg) -> list[int]:
    """The chapters a submission answers: from check("N.M") calls, ex-NN-M labels, then the name."""
    known = {e.chapter for e in reg.values()}
    found = []
    for c in nb.cells:
        src = c.source if isinstance(c.source, str) else "".join(c.source)
        for i in _CHECK.findall(src):
            if i in reg:
                found.append(reg[i].chapter)
        for m in re.finditer(r"\bex-(\d{1,2})-\d", src):
            found.append(int(m.group(1)))
    chaps = sorted({c for c in found if c in known})
    return chaps or _chapters_from_name(path, reg)


def _chapters_from_name(path: Path, reg) -> list[int]:
    """[1] for names like 01_roofline.ipynb or alice-01_roofline.ipynb (a known chapter)."""
    known = {e.chapter for e in reg.values()}
    m = re.search(r"(?:^|[^0-9])(\d{2})_[A-Za-z]", path.name)
    if m and int(m.group(1)) in known:
        return [int(m.group(1))]
    return []


def _decode(v, depth=0):
    """Plain JSON data from the kernel -> the value evaluate() sees. Anything odd -> _Opaque."""
    if depth > 6:
        return _Opaque("嵌套太深的数据")
    if v is None or isinstance(v, (str, float)) or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    if isinstance(v, list):
        return [_decode(x, depth + 1) for x in v]
    if isinstance(v, dict):
        tag = v.get("$")
        if tag == "ellipsis":
            return Ellipsis
        if tag == "missing":
            return MISSING
        if tag == "bool":
            return bool(v.get("v"))
        if tag == "callable":
            return _Opaque("callable")
        if tag == "array":
            shape = v.get("shape")
            shape = tuple(int(s) for s in shape) if isinstance(shape, list) else None
            data = v.get("v")
            if data is None:
                return _Opaque("ndarray", shape=shape)
            try:
                arr = np.asarray(_decode(data, depth + 1))
                if arr.dtype.kind in "iufb" and (shape is None or arr.shape == shape):
                    return arr
            except Exception:
                pass
            return _Opaque("ndarray", shape=shape)
        if tag == "opaque":
            return _Opaque(str(v.get("type", "未知"))[:100])
    return _Opaque("无法识别的数据")


def _score_extracted(ex, item, inputs) -> CheckResult:
    """Score one exercise from the kernel's plain-data report (None: nothing was extracted)."""
    if item is None:
        return _fail(ex, _type_message(ex, MISSING))
    if ex.kind == "function" and isinstance(item.get("cases"), list):
        cases = []
        for kw, c in zip(inputs, item["cases"]):
            if not isinstance(c, dict):
                cases.append((kw, ("error", "无法识别的结果")))
            elif "ok" in c:
                cases.append((kw, ("ok", _decode(c["ok"]))))
            elif c.get("timeout"):
                cases.append((kw, ("timeout", None)))
            else:
                cases.append((kw, ("error", str(c.get("error", "未知错误"))[:300])))
            if cases[-1][1][0] != "ok":
                break
        if len(item["cases"]) < len(inputs) and all(s == "ok" for _, (s, _v) in cases):
            return _fail(ex, "❌ 没能在所有输入上测试你的函数。")
        return judge_function(ex, cases)
    value = _decode(item.get("value", {"$": "missing"}))
    if ex.kind == "function" and isinstance(value, _Opaque) and value.type_name == "callable":
        return _fail(ex, "❌ 没能测试你的函数（它不能按参数名调用）。")
    return evaluate(ex, value)


def _job_exercises(exs, seed: int) -> tuple[list[dict], dict]:
    specs, inputs = [], {}
    for ex in exs:
        ins = sample_inputs(ex, (seed + zlib.crc32(ex.id.encode())) % 2**32) if ex.kind == "function" else []
        json.dumps(ins)  # the sampler must give plain data
        inputs[ex.id] = ins
        specs.append({"id": ex.id, "var": ex.var, "kind": ex.kind, "inputs": ins})
    return specs, inputs


def grade(files, out: str | Path | None = "scores.csv", *, timeout_cell: float = 30,
          timeout_notebook: float = 300, memory_mb: int = 4096, jobs: int = 1,
          chapter: int | None = None, seed: int | None = None, quiet: bool = False) -> list[SubmissionResult]:
    """Grade submitted notebooks; write ``out`` (CSV) and the JSON beside it; return the results.

    Each submission is executed in its own process and kernel (see ``_run_job``); the answers
    come back as plain JSON data and are scored here against expected values computed here.
    A broken submission costs only its own points; the score sheet is always written.
    """
    from .exercises import registry

    if timeout_cell <= 0 or timeout_notebook <= 0:
        raise ValueError("timeouts must be > 0 seconds")
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive int, got {jobs!r}")
    reg = dict(registry())  # taken before any submission runs: nothing they do can change it
    if chapter is not None and chapter not in {e.chapter for e in reg.values()}:
        raise ValueError(f"no exercises registered for chapter {chapter}")
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little")
    ref_stems = {p.stem for p in (ROOT / "exercises").glob("*.ipynb")}
    paths = _expand(files)
    settings = dict(timeout_cell=timeout_cell, timeout_notebook=timeout_notebook,
                    memory_mb=memory_mb, seed=seed)

    def one(path: Path) -> SubmissionResult:
        t0 = time.monotonic()
        try:
            res = _grade_one(path, reg, ref_stems, chapter, settings)
        except Exception as e:  # a grader bug must not lose the other submissions
            res = SubmissionResult(str(path), _student_name(path, ref_stems))
            res.status = "评分程序出错"
            res.notes.append(f"{type(e).__name__}: {e}")
        res.seconds = time.monotonic() - t0
        if not quiet:
            print(f"已评分 {path}：{_num(res.total)}/{_num(res.max)}（{res.status}，{res.seconds:.1f} 秒）",
                  flush=True)
        return res

    if jobs == 1 or len(paths) <= 1:
        results = [one(p) for p in paths]
    else:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(one, paths))
    _fill_unknown_chapters(results, reg)
    if out is not None:
        write_scores(results, out, settings)
    if not quiet:
        print(summary_table(results))
        if out is not None:
            print(f"成绩表：{out}，{Path(out).with_suffix('.json')}")
    return results


_DEVICES_LOCK = threading.Lock()


def _devices_for_expected_values() -> None:
    """Some expected values run JAX on a mesh: ask for the book's simulated devices first."""
    with _DEVICES_LOCK:
        if "jax" in sys.modules:
            return  # too late to change the device count; the caller set it up (or needs none)
        try:
            from . import devices
            devices.setup()
        except Exception:  # no jax installed: expected values that need it will say so
            pass


def _expand(files) -> list[Path]:
    """Files as given; a folder stands for the notebooks inside it (checkpoints skipped)."""
    out = []
    for f in files:
        p = Path(f)
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*.ipynb") if ".ipynb_checkpoints" not in q.parts))
        else:
            out.append(p)
    return out


def _grade_one(path: Path, reg, ref_stems, chapter, settings) -> SubmissionResult:
    res = SubmissionResult(str(path), _student_name(path, ref_stems))
    nb, reason = _read_submission(path)
    if nb is None:
        res.status = "无效文件"
        res.notes.append(reason)
        chaps = [chapter] if chapter is not None else _chapters_from_name(path, reg)
        if chaps:
            res.chapters = chaps
            _zero(res, [e for e in reg.values() if e.chapter in chaps], f"❌ 这份提交无法评分：{reason}。")
        return res
    chaps = [chapter] if chapter is not None else _chapters_of(nb, path, reg)
    res.chapters = chaps
    if not chaps:
        res.status = "无法判断章节"
        res.notes.append("找不到任何 check(\"N.M\", ...) 调用、练习标签或章节号文件名；用 --chapter 指定")
        return res
    exs = [e for e in reg.values() if e.chapter in chaps]
    exs.sort(key=lambda e: _id_key(e.id))
    for e in exs:
        res.max_points[e.id] = float(e.points)
    _devices_for_expected_values()
    specs, inputs = _job_exercises(exs, settings["seed"])
    report = _run_submission(path, nb, specs, settings)
    res.status = report.get("status", STATUS_OK)
    res.notes.extend(report.get("notes", []))
    extracted = report.get("extracted", {})
    for e in exs:
        item = extracted.get(e.id)
        r = _score_extracted(e, item if isinstance(item, dict) else None, inputs[e.id])
        early = report.get("at_check", {}).get(e.id)
        if not r.correct and isinstance(early, dict) and (not isinstance(item, dict) or
                                                          _answer_part(early) != _answer_part(item)):
            if _score_extracted(e, early, inputs[e.id]).correct:
                r = CheckResult(e.id, False, r.message + f"（注意：运行到 check(\"{e.id}\") 那一格时 "
                                f"`{e.var}` 还是对的，后面的单元又改掉了它。）")
        res.scores[e.id] = float(e.points) if r.correct else 0.0
        res.messages[e.id] = r.message
        res.sources[e.id] = item.get("_source", "final") if isinstance(item, dict) else "none"
    return res


def _fill_unknown_chapters(results, reg) -> None:
    """Unreadable submissions get the run's chapter (if all the others agree) with 0 points."""
    chaps = {tuple(r.chapters) for r in results if r.chapters}
    if len(chaps) != 1:
        return
    (only,) = chaps
    for r in results:
        if not r.max_points:
            r.chapters = list(only)
            _zero(r, [e for e in reg.values() if e.chapter in only], "❌ 这份提交无法评分：" + r.status + "。")


def _answer_part(item: dict):
    return item.get("value", item.get("cases"))


def _zero(res, exs, msg):
    for e in sorted(exs, key=lambda e: _id_key(e.id)):
        res.max_points[e.id] = float(e.points)
        res.scores[e.id] = 0.0
        res.messages[e.id] = msg


def _id_key(i: str):
    from .exercises import _sort_key
    return _sort_key(i)


def _run_submission(path: Path, nb, specs, settings) -> dict:
    """Run the runner process on a scratch copy; return its report (always a dict)."""
    scratch = Path(tempfile.mkdtemp(prefix="scaling-grade-"))
    try:
        work = scratch / "work"
        work.mkdir()
        nb_path = work / "submission.ipynb"
        nb_path.write_text(json.dumps(nb), encoding="utf-8")
        job = {"notebook": str(nb_path), "scratch": str(scratch), "exercises": specs,
               "report": str(scratch / "report.json"), **settings}
        (scratch / "job.json").write_text(json.dumps(job), encoding="utf-8")
        env = _child_env()
        hard = settings["timeout_notebook"] + 60  # kernel start-up and shutdown on top
        cmd = [sys.executable, "-m", "scaling_lib.grading", "_run", str(scratch / "job.json")]
        log = scratch / "runner.log"
        with open(log, "wb") as log_f:
            proc = subprocess.Popen(cmd, cwd=str(work), env=env, stdin=subprocess.DEVNULL,
                                    stdout=log_f, stderr=subprocess.STDOUT, start_new_session=True)
            killed = False
            try:
                proc.wait(timeout=hard)
            except subprocess.TimeoutExpired:
                killed = True
                _kill_group(proc)
                proc.wait()
        err = _tail(log)
        report = _load_report(scratch / "report.json")
        if killed:
            report["status"] = "超时"
            report.setdefault("notes", []).append(
                f"超过整本 notebook 的时间上限（{settings['timeout_notebook']:g} 秒），评分进程被终止；"
                "只计入终止前读到的答案")
        elif proc.returncode != 0 and not report.get("finished"):
            tail = err.strip().splitlines()[-1:] or [""]
            report["status"] = "评分程序出错"
            report.setdefault("notes", []).append(f"运行子进程退出码 {proc.returncode}：{tail[0][:200]}")
        return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _tail(p: Path, n: int = 4096) -> str:
    try:
        with open(p, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _kill_group(proc) -> None:
    import signal
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _load_report(p: Path) -> dict:
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"
    env["MPLBACKEND"] = "Agg"
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    env.pop("XLA_FLAGS", None)  # the notebook's setup cell asks for its devices
    root = str(ROOT)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# ---- the runner: one process per submission --------------------------------------------------

def _run_job(job_path: str) -> int:
    """Execute one submission (runs in its own process; see ``_run_submission``)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    scratch = Path(job["scratch"])
    report_path = Path(job["report"])
    t_start = time.monotonic()
    cell_timeout = float(job["timeout_cell"])
    nb_deadline = t_start + float(job["timeout_notebook"])
    specs = job["exercises"]
    extract_src = (Path(__file__).with_name("_grading_extract.py")).read_text(encoding="utf-8")
    io_dir = scratch / "io"
    io_dir.mkdir(exist_ok=True)
    report = {"status": STATUS_OK, "notes": [], "extracted": {}, "at_check": {}, "finished": False}

    def save():
        tmp = report_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(report), encoding="utf-8")
        os.replace(tmp, report_path)

    save()
    _write_kernelspec(scratch / "jupyter", int(job["memory_mb"]))
    os.environ["JUPYTER_PATH"] = str(scratch / "jupyter") + os.pathsep + os.environ.get("JUPYTER_PATH", "")
    os.environ["IPYTHONDIR"] = str(scratch / "ipython")

    nb = nbformat.read(job["notebook"], as_version=4)
    n_cells = len(nb.cells)
    nb.cells.append(nbformat.v4.new_code_cell(""))  # the slot grader code runs in (not the reader's)
    timeouts, errors = [], []
    timeout_reply = {"ename": "CellTimeoutError", "evalue": "grader cell timeout", "traceback": []}

    def on_error(cell, cell_index, execute_reply):
        content = (execute_reply or {}).get("content", {})
        if content.get("ename") == "CellTimeoutError":
            timeouts.append(cell_index)
        elif cell_index < n_cells:
            errors.append((cell_index, content.get("ename", "Error")))

    client = NotebookClient(nb, timeout=int(cell_timeout), kernel_name=KERNEL_NAME, allow_errors=True,
                            interrupt_on_timeout=True, error_on_timeout=timeout_reply,
                            iopub_timeout=2, record_timing=False, startup_timeout=60,
                            resources={"metadata": {"path": str(Path(job["notebook"]).parent)}},
                            on_cell_error=on_error)
    nonce = os.urandom(6).hex()
    counter = [0]

    def run_code(code: str, timeout: float) -> bool:
        """Run grader code in the kernel; False if it timed out (the kernel may be stuck)."""
        cell = nbformat.v4.new_code_cell(code)
        client.timeout = max(1, int(math.ceil(timeout)))
        n_before = len(timeouts)
        client.execute_cell(cell, n_cells, store_history=False)
        return len(timeouts) == n_before

    def extract(spec_list, source: str, time_left: float, at_check=()) -> bool:
        """Read these exercises' variables out of the kernel; False if the kernel is stuck."""
        for spec in spec_list:
            if time_left - 0.5 <= 0:
                return False
            counter[0] += 1
            out = io_dir / f"{nonce}-{counter[0]}.json"
            budget = max(0.5, min(5.0, 0.5 * cell_timeout, time_left - 3.0))
            payload = json.dumps({"id": spec["id"], "var": spec["var"], "kind": spec["kind"],
                                  "inputs": spec["inputs"], "out": str(out), "budget_s": budget})
            code = ("import builtins as __grader_b\n"
                    "__grader_b.exec(__grader_b.compile(%r, '<grader>', 'exec'), "
                    "{'__builtins__': __grader_b, '__name__': '__grader__', '_SPEC': %r, "
                    "'_NS': __grader_b.globals()})\n"
                    "del __grader_b" % (extract_src, payload))
            t0 = time.monotonic()
            ok = run_code(code, budget + 3.0)
            time_left -= time.monotonic() - t0
            try:
                item = json.loads(out.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                item = None
            if isinstance(item, dict) and item.get("id") == spec["id"]:
                item["_source"] = source
                old = report["extracted"].get(spec["id"])
                if not (source == "final" and old and item.get("value") == {"$": "missing"}):
                    report["extracted"][spec["id"]] = item  # the latest value wins ...
                if at_check and spec["id"] in at_check:  # ... and the one at check("N.M") is kept
                    report["at_check"][spec["id"]] = item
                save()
            if not ok:
                return False
        return True

    def probe() -> bool:
        return run_code("pass", 5)

    stuck = False
    try:
        with client.setup_kernel():
            for i, cell in enumerate(nb.cells[:n_cells]):
                if cell.cell_type != "code" or not cell.source.strip():
                    continue
                left = nb_deadline - time.monotonic() - _extract_reserve(job)
                if left <= 1:
                    report["status"] = "超时"
                    report["notes"].append(f"超过整本 notebook 的时间上限（{job['timeout_notebook']:g} 秒）："
                                           f"从第 {i + 1} 个单元起没有运行")
                    break
                n_to = len(timeouts)
                client.timeout = max(1, int(min(cell_timeout, left)))
                client.execute_cell(cell, i)
                if len(timeouts) > n_to:
                    if client.timeout < cell_timeout:  # cut short by the notebook's deadline
                        timeouts.remove(i)
                        report["status"] = "超时"
                        report["notes"].append(f"第 {i + 1} 个单元运行到整本 notebook 的时间上限"
                                               f"（{job['timeout_notebook']:g} 秒）被中断")
                    if not probe():  # the interrupt did not stop it: the kernel is stuck
                        stuck = True
                        report["status"] = "超时"
                        report["notes"].append(f"第 {i + 1} 个单元超时且无法中断，后面的单元没有运行")
                        break
                checked = {s["id"] for s in specs if re.search(
                    r"""\bcheck\(\s*["']%s["']""" % re.escape(s["id"]), cell.source)}
                names = [s for s in specs if re.search(rf"\b{re.escape(s['var'])}\b", cell.source)
                         or s["id"] in checked]
                if names:
                    left = nb_deadline - time.monotonic()
                    if not extract(names, f"after cell {i + 1}", left, checked) and not probe():
                        stuck = True
                        report["status"] = "超时"
                        report["notes"].append(f"第 {i + 1} 个单元之后读取答案时内核无响应，后面的单元没有运行")
                        break
            if not stuck:
                left = nb_deadline - time.monotonic()
                if not extract(specs, "final", max(left, 1.0)):
                    report["notes"].append("读取答案时超时：只计入之前读到的答案")
    except DeadKernelError:
        report["status"] = "内核崩溃"
        report["notes"].append("内核意外退出（可能超出内存上限或进程被终止）：只计入之前读到的答案")
    except Exception as e:  # nbclient/kernel start-up problems
        report["status"] = "评分程序出错"
        report["notes"].append(f"{type(e).__name__}: {str(e)[:200]}")
    if timeouts:
        cells = "、".join(str(i + 1) for i in sorted(set(i for i in timeouts if i < n_cells)))
        if cells:
            report["notes"].insert(0, f"第 {cells} 个单元超时（单元上限 {cell_timeout:g} 秒）")
        if report["status"] == STATUS_OK:
            report["status"] = "部分超时"
    if errors:
        cells = "、".join(f"第 {i + 1} 个（{name}）" for i, name in errors[:10])
        report["notes"].append(f"出错的单元：{cells}" + ("等" if len(errors) > 10 else ""))
    report["finished"] = True
    save()
    return 0


def _extract_reserve(job) -> float:
    """Seconds kept back from the notebook deadline for the final extraction."""
    n = len(job["exercises"])
    return min(0.25 * float(job["timeout_notebook"]), 2.0 + 0.5 * n + 5.0 * sum(
        1 for s in job["exercises"] if s["kind"] == "function"))


def _write_kernelspec(jupyter_dir: Path, memory_mb: int) -> None:
    d = jupyter_dir / "kernels" / KERNEL_NAME
    d.mkdir(parents=True, exist_ok=True)
    spec = {"argv": [sys.executable, "-m", "scaling_lib._grading_kernel", "--memory-mb", str(memory_mb),
                     "-f", "{connection_file}", "--HistoryManager.enabled=False"],
            "display_name": "scaling_lib grader", "language": "python",
            "metadata": {"debugger": False}}
    (d / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")


# ---- score sheets ----------------------------------------------------------------------------

def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def write_scores(results: list[SubmissionResult], out: str | Path, settings: dict | None = None) -> None:
    """CSV (file, student, total, max, one column per exercise, status, notes) and JSON beside it."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    ids = sorted({i for r in results for i in r.max_points}, key=_id_key)
    with open(out, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file", "student", "total", "max", *ids, "status", "notes"])
        for r in results:
            w.writerow([r.file, r.student, _num(r.total), _num(r.max),
                        *[_num(r.scores[i]) if i in r.max_points else "" for i in ids],
                        r.status, "；".join(r.notes)])
    data = {"settings": settings or {}, "exercises": ids,
            "submissions": [r.as_dict() for r in results]}
    out.with_suffix(".json").write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n",
                                        encoding="utf-8")


def summary_table(results: list[SubmissionResult]) -> str:
    """A plain-text table in Chinese: student, score, status."""
    if not results:
        return "没有要评分的文件。"
    rows = [("学生", "得分", "状态", "说明")]
    for r in results:
        rows.append((r.student, f"{_num(r.total)}/{_num(r.max)}", r.status, "；".join(r.notes)[:60]))

    def width(s):
        return sum(2 if ord(ch) > 0x2E7F else 1 for ch in s)

    cols = [max(width(row[k]) for row in rows) for k in range(3)]
    lines = []
    for row in rows:
        cells = [row[k] + " " * (cols[k] - width(row[k])) for k in range(3)]
        lines.append("  ".join(cells + [row[3]]).rstrip())
    ok = sum(1 for r in results if r.status == STATUS_OK)
    lines.append(f"共 {len(results)} 份，{ok} 份顺利完成。")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# 4. Command line
# --------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    """``scaling-grade`` / ``python -m scaling_lib.grading``: strip | grade."""
    ap = argparse.ArgumentParser(prog="python -m scaling_lib.grading",
                                 description="Student copies and batch grading for 如何扩展你的模型.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("strip", help="exercises/*.ipynb -> exercises/student/*.ipynb")
    s.add_argument("--src", default="exercises")
    s.add_argument("--out", default="exercises/student")
    s.add_argument("--check", action="store_true", help="write nothing; exit 1 if a copy is stale")
    g = sub.add_parser("grade", help="grade submitted notebooks -> CSV + JSON")
    g.add_argument("files", nargs="+", help="submitted notebooks (a folder: the notebooks in it)")
    g.add_argument("--out", default="scores.csv", help="CSV score sheet; the JSON goes beside it")
    g.add_argument("--timeout-cell", type=float, default=30, help="seconds per cell (default 30)")
    g.add_argument("--timeout-notebook", type=float, default=300,
                   help="seconds per submission (default 300)")
    g.add_argument("--memory-mb", type=int, default=4096,
                   help="memory limit of each kernel, RLIMIT_DATA (default 4096; 0 = none)")
    g.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
    g.add_argument("--chapter", type=int, default=None,
                   help="grade against this chapter's exercises (default: from the notebook)")
    g.add_argument("--seed", type=int, default=None, help="seed for function-exercise inputs")
    r = sub.add_parser("_run")  # internal: the per-submission process
    r.add_argument("job")
    a = ap.parse_args(argv)
    if a.cmd == "_run":
        return _run_job(a.job)
    if a.cmd == "strip":
        try:
            res = strip(a.src, a.out, check_only=a.check)
        except (StripError, FileNotFoundError) as e:
            print(f"错误：{e}", file=sys.stderr)
            return 2
        if a.check:
            for line in res:
                print(line)
            if res:
                return 1
            print("学生版 notebook 都是最新的。")
            return 0
        for line in res:
            print(f"已生成 {line}")
        if not res:
            print("学生版 notebook 都是最新的。")
        return 0
    if a.jobs < 1 or a.timeout_cell <= 0 or a.timeout_notebook <= 0:
        ap.error("--jobs, --timeout-cell and --timeout-notebook must be positive")
    grade(a.files, a.out, timeout_cell=a.timeout_cell, timeout_notebook=a.timeout_notebook,
          memory_mb=a.memory_mb, jobs=a.jobs, chapter=a.chapter, seed=a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
