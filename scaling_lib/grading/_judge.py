"""Judging one answer: ``check()`` in a notebook and the grader's comparison (``evaluate``).

Book: every exercise notebook (``exercises/NN_name.ipynb``); DESIGN.md §5.

``check("1.2", i_crit)`` prints one line of Chinese feedback that starts with ✅ or ❌ (relative
error, a hint for the usual slips: a factor of 2, 3, 8, 1e3..., seconds vs milliseconds, bits vs
bytes, plus the exercise's own hints). It never raises: not for a bad answer (a string, None,
NaN, 5e-324, 1e308, an array, ``...``, a function that fails) and not for a bug in a comparison
either (that is a ❌ saying the answer could not be compared).

``variant(1)`` (or, in a student's own copy, ``variant(1, "s001", {...})``) returns the chapter's
exercise numbers and makes ``check()`` compare with the expected values for those numbers.

``evaluate(exercise, answer, values=...)`` is the comparison the batch grader uses too, in its
own process, with the parameter values it derives itself from the teacher's secret.
"""
from __future__ import annotations

import inspect
import math
import numbers
import os
import sys
import zlib
from contextlib import nullcontext as _nullcontext
from dataclasses import dataclass

import numpy as np

from ._view import Variant

__all__ = ["check", "evaluate", "variant", "CheckResult", "Variant", "judge_function",
           "sample_inputs", "default_seed", "expected_form"]

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

    Never raises: a string, None, NaN, 5e-324, an array, ``...`` or a function that fails all
    give a ❌ line saying what is wrong. An unknown id lists the chapter's ids. The expected value
    is the one for the numbers set by ``variant(chapter, ...)`` (the book's numbers otherwise).
    Returns a ``CheckResult`` (truthy when correct) that does not display itself again.
    """
    ex, msg = _lookup(ex_id)
    if ex is None:
        res = CheckResult(str(ex_id)[:40], False, msg)
    else:
        res = evaluate(ex, answer, values=_ACTIVE.get(ex.chapter))
    print(res.message)
    return res


_ACTIVE: dict = {}  # chapter -> parameter values set by variant() in this Python process


def variant(chapter, student=None, values=None) -> Variant:
    """The numbers of ``chapter``'s exercises, and the numbers ``check()`` uses from now on.

    ``variant(1)`` gives the book's numbers. A student's own copy of the exercises (made by
    ``python -m scaling_lib.grading variants``) calls ``variant(1, "s001", {"B": 1024, ...})``
    with that student's numbers. The batch grader never believes these values: it derives each
    student's numbers itself from the teacher's secret and the student's id.
    """
    from ..exercises import chapter_params
    if isinstance(chapter, bool) or not isinstance(chapter, int):
        raise TypeError(f"variant(chapter): chapter must be an int such as 1, got {chapter!r}")
    params = chapter_params(chapter)
    vals = {k: p.default for k, p in params.items()}
    if values is not None:
        if not isinstance(values, dict):
            raise TypeError(f"variant(..., values): values must be a dict, got {type(values).__name__}")
        unknown = sorted(set(values) - set(params))
        if unknown:
            raise ValueError(f"variant({chapter}, ...): unknown parameter(s) {', '.join(map(str, unknown))}; "
                             f"chapter {chapter} has: {', '.join(sorted(params)) or 'none'}")
        for k, v in values.items():
            if isinstance(v, bool) or not isinstance(v, (int, float, str)):
                raise TypeError(f"variant({chapter}, ...): parameter {k} must be a number or a string, "
                                f"got {type(v).__name__}")
        vals.update(values)
    if student is not None and not isinstance(student, str):
        raise TypeError(f"variant(..., student): student must be a string id, got {student!r}")
    _ACTIVE[chapter] = vals
    return Variant(chapter, student, vals)


def _lookup(ex_id):
    from ..exercises import registry, _sort_key
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


def evaluate(exercise, answer, *, seed: int | None = None, values: dict | None = None) -> CheckResult:
    """Compare ``answer`` with ``exercise``'s expected value, without printing. Never raises.

    ``answer`` is what the reader assigned (or, in the grader, the plain data read back from the
    kernel). ``values`` are the exercise's parameter values (the defaults when None). For
    "function" exercises the reader's function is called on ``n_samples`` inputs from
    ``sampler(np.random.default_rng(seed))``; ``seed`` defaults to a fixed value per exercise,
    so the feedback in a notebook is deterministic.
    """
    try:
        return _evaluate(exercise, answer, seed, values)
    except Exception as e:  # a comparison that cannot be made is a ❌, never an exception
        return CheckResult(exercise.id, False, f"❌ 这个答案没法和标准答案比较（{type(e).__name__}）："
                                               f"请换成题目要求的形式：{expected_form(exercise)}。")


def _evaluate(ex, answer, seed, values) -> CheckResult:
    if ex.kind == "function":
        if answer is Ellipsis:
            return CheckResult(ex.id, False, _NOT_ANSWERED)
        if not callable(answer) or isinstance(answer, type):
            return _fail(ex, _type_message(ex, answer))
        inputs = sample_inputs(ex, default_seed(ex) if seed is None else seed)
        cases, programs = [], []
        call = answer
        if ex.program is not None:  # the answer is a per-device body: run it as a compiled program
            call = _program_call(ex.program, answer)
        used: set = set()
        banned = _reference_calls(ex) if answer is not ex.expected else set()
        with _LibraryCalls(used) if banned else _nullcontext():
            for kw in inputs:
                try:
                    out = call(**kw)
                    if ex.program is not None:
                        out, facts = out
                        programs.append(facts)
                    cases.append((kw, ("ok", out)))
                except KeyboardInterrupt:
                    raise
                except BaseException as e:  # the reader's code (even sys.exit()): report, never raise
                    cases.append((kw, ("error", f"{type(e).__name__}: {e}")))
                    break
        copied = sorted(used & banned)
        if copied:
            return _fail(ex, library_call_message(copied))
        return judge_function(ex, cases, programs if ex.program is not None else None)
    if answer is Ellipsis:
        return CheckResult(ex.id, False, _NOT_ANSWERED)
    try:
        ex.reference(values)
    except Exception as e:  # the grader's side, not the answer
        return CheckResult(ex.id, False, _no_reference(e))
    if ex.kind == "number":
        return _judge_number(ex, answer, values)
    if ex.kind == "numbers":
        return _judge_numbers(ex, answer, values)
    return _judge_choice(ex, answer, values)


def _program_call(program, body):
    """``body`` wrapped by ``program`` (built on the first call, so an error is the first case's)."""
    state = {}

    def call(**kw):
        if "run" not in state:
            state["run"] = program.runner(body)
        return state["run"](**kw)
    return call


# ---- "did the reader just call the library?" (notes/19.md, trial 1-3 §3 item 5) ------------------

_LIB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # .../scaling_lib
_GRADING = os.path.join(_LIB, "grading") + os.sep


def _lib_function(code) -> str | None:
    """'collectives.ragged_fraction' for a function of scaling_lib that computes something
    (not the exercises, the grading, the chip catalogue or the unit helpers); None otherwise."""
    f = code.co_filename
    if not f.startswith(_LIB + os.sep):
        return None
    rel = os.path.relpath(f, _LIB)
    if rel.split(os.sep)[0] in ("exercises", "grading") or rel in ("hardware.py", "units.py", "devices.py",
                                                                   "jax_compat.py", "__init__.py"):
        return None
    if code.co_name.startswith("__") or code.co_name == "<lambda>":   # dataclass hooks, helpers
        return None
    return rel[:-3].replace(os.sep, ".") + "." + getattr(code, "co_qualname", code.co_name)


class _LibraryCalls:
    """Collects the scaling_lib functions called straight from code outside the library (the
    reader's function, numpy, functools ...) while active. A profile hook: it sees every Python
    call, however the function was reached (alias, getattr, partial)."""

    def __init__(self, out: set):
        self.out, self.prev = out, None

    def _hook(self, frame, event, arg):
        if event == "call" and frame.f_back is not None:
            name = _lib_function(frame.f_code)
            caller = frame.f_back.f_code.co_filename
            # called by the reader's code, or by the grader itself (a functools.partial handed in)
            if name and (not caller.startswith(_LIB + os.sep) or caller.startswith(_GRADING)):
                self.out.add(name)

    def __enter__(self):
        self.prev = sys.getprofile()
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self.prev)
        return False


def library_call_message(names) -> str:
    """The feedback for a function that just calls the library function(s) the reference uses."""
    names = "、".join(f"`{n}`" for n in sorted(names)[:3])
    return (f"❌ 你的函数直接调用了库里算这道题的函数 {names}：这道题要你用正文的式子自己写出来"
            "（库函数是用来对答案的）。")


def _reference_calls(ex) -> set:
    """The library functions the reference names in its own code (``C.ragged_fraction``,
    ``roofline.dot_intensity``, ``TransformerConfig.params``): what a reader's function must not
    simply call. Read from the code object, not run, so it costs nothing."""
    fn = ex.expected
    code, glob = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    if code is None:
        return set()
    codes, names = [code], set()
    while codes:
        c = codes.pop()
        names.update(c.co_names)
        codes.extend(k for k in c.co_consts if isinstance(k, type(code)))
    out = set()
    for n in names:
        obj = glob.get(n)
        holders = [obj] if isinstance(obj, type) or inspect.ismodule(obj) else []
        if inspect.isfunction(obj):
            f = _lib_function(obj.__code__)
            if f:
                out.add(f)
        for h in holders:
            for attr in names - {n}:
                f = inspect.getattr_static(h, attr, None) if isinstance(h, type) else getattr(h, attr, None)
                f = getattr(f, "__func__", f)
                if inspect.isfunction(f) and _lib_function(f.__code__):
                    out.add(_lib_function(f.__code__))
    return out


def _no_reference(e: BaseException) -> str:
    return (f"❌ 这里算不出这道题的标准答案（{type(e).__name__}）：这不是你的答案的问题，"
            "请告诉老师（或检查 scaling_lib 的安装）。")


def default_seed(ex) -> int:
    """The seed ``check()`` uses for a function exercise (fixed: notebook output is stable)."""
    return zlib.crc32(ex.id.encode())


def sample_inputs(ex, seed: int) -> list[dict]:
    """The exercise's ``edge_cases`` (the inputs its question states), then ``n_samples``
    keyword-argument dicts drawn by its sampler, as plain Python data."""
    rng = np.random.default_rng(seed)
    out = [{str(k): _plain(v) for k, v in kw.items()} for kw in ex.edge_cases]
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


def _ok(ex, extra: str = "", values: dict | None = None) -> CheckResult:
    msg = "✅ 对了。" + extra + (ex.explanation(values) or "")
    return CheckResult(ex.id, True, msg.strip())


def _ok_alt(ex, note: str, values: dict | None = None) -> CheckResult:
    """✅ for a declared valid alternative: its sentence first (why it is right too)."""
    note = note.strip()
    if note and not note.endswith(("。", "！", "？", ".")):
        note += "。"
    return _ok(ex, note, values)


def _fail(ex, msg: str) -> CheckResult:
    return CheckResult(ex.id, False, msg)


# ---- descriptions ----------------------------------------------------------------------------

def _fmt(x: float) -> str:
    from ..units import fmt_num
    try:
        return fmt_num(x)
    except Exception:
        try:
            return f"{float(x):.4g}"
        except Exception:
            return "?"


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
        return f"复数 {_fmt(v.real)}{'+' if v.imag >= 0 else '-'}{_fmt(abs(v.imag))}j"
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
        return f"数 {_fmt(v) if isinstance(v, numbers.Real) and abs(v) > 1e6 else v}"
    return f"一个 {type(v).__name__} 对象"


def expected_form(ex) -> str:
    """What the answer must look like, in Chinese ("一个含 3 个数的列表（秒）"); no values."""
    return _noun(ex)


def _noun(ex) -> str:
    if ex.kind == "number":
        u = ex.unit.strip()
        return f"一个数（单位：{u}）" if u else "一个数"
    if ex.kind == "numbers":
        try:
            n = len(ex.reference())  # the length does not depend on the parameters
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
        except OverflowError:
            return math.inf if v > 0 else -math.inf
        except (ValueError, TypeError):
            return None
        except Exception:
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
    d = abs(a - e)  # inf when a and e are huge with opposite signs: not close
    return d <= atol + rtol * abs(e)


def _log_ratio(a: float, e: float) -> float | None:
    """ln(a/e) for a, e of the same sign, without overflow or underflow (5e-324 / 240 is fine)."""
    if a == 0 or e == 0 or (a > 0) != (e > 0):
        return None
    return math.log(abs(a)) - math.log(abs(e))


def _rel(a: float, e: float) -> str:
    if e == 0:
        return f"绝对误差 {_fmt(a - e)}"
    lr = _log_ratio(a, e)
    if lr is not None and abs(lr) >= math.log(10):
        q = math.exp(lr) if abs(lr) < 700 else None
        if q is None or not (1e-6 <= q <= 1e6):
            n = round(abs(lr) / math.log(10))
            return f"差了约 {n} 个数量级（偏{'大' if lr > 0 else '小'}）"
        return f"约是正确值的 {_fmt(q)} 倍"
    try:
        r = (a - e) / abs(e)
    except (OverflowError, ZeroDivisionError):
        r = math.inf
    if not math.isfinite(r) or abs(r) >= 1e4:
        return "相对误差很大" + ("（符号相反）" if (a > 0) != (e > 0) else "")
    pct = r * 100
    s = f"{pct:+.2g}" if abs(pct) < 10 else f"{pct:+.0f}"
    return f"相对误差 {s}%"


def _near(lr: float, target: float) -> bool:
    """lr = ln(answer/expected) is within 5% of ln(target)."""
    return abs(lr - math.log(target)) <= math.log(_RATIO_TOL)


_CN_NUM = dict(enumerate("零一两三四五六七八九十", 0)) | {11: "十一", 12: "十二", 13: "十三", 14: "十四",
                                                       15: "十五", 16: "十六", 17: "十七", 18: "十八"}
_MAG = {k: _CN_NUM[k] for k in (3, 6, 9, 12, 15)}


def _is_time_unit(unit: str) -> bool:
    u = unit.strip().lower()
    return u in ("秒", "s", "sec", "seconds") or u.endswith("秒") and "毫" not in u and "微" not in u


def _dimensionless(ex) -> bool:
    u = ex.unit.strip()
    return u in ("", "倍") or any(w in u for w in ("比", "比例", "占比", "份额", "分数", "效率", "利用率", "MFU"))


def _ratio_hint(ex, a: float, e: float) -> str:
    """The hint for answer/expected = a/e, or ''. Exercise hints first, then generic ones that
    can only say true things: a factor named only where the exercise's quantities allow it
    (bits vs bytes only for byte/bit quantities, forward vs backward only in training)."""
    if e == 0 or a == 0 or not (math.isfinite(a) and math.isfinite(e)):
        return ""
    same_sign = (a > 0) == (e > 0)
    lr = math.log(abs(a)) - math.log(abs(e))  # ln|a/e|: no overflow, no underflow
    if same_sign:
        for ratio, msg in ex.hints:
            if isinstance(ratio, numbers.Real) and not isinstance(ratio, bool) and ratio > 0 \
                    and _near(lr, float(ratio)):
                return "❌ " + msg
    if not same_sign:
        if _near(lr, 1.0):
            return "❌ 大小对了，符号反了。"
        return "❌ 符号不对：结果应该是" + ("正数。" if e > 0 else "负数。")
    r_big = lr > 0
    big = "偏大" if r_big else "偏小"
    alr = abs(lr)  # ln of the factor, >= 0
    if _dimensionless(ex):
        le = math.log(abs(e))
        if abs(le) > math.log(1.25) and abs(lr + 2 * le) <= math.log(_RATIO_TOL):
            return "❌ 你的结果像是正确值的倒数：比值的分子和分母是不是颠倒了？"
        if 0 < e < 1 and abs(a - (1 - e)) <= 0.02 * max(e, 1 - e) and abs(e - 0.5) > 0.05:
            return "❌ 你的结果像是 1 减去正确值：省下的部分和剩下的部分（或两个互补的份额）是不是弄反了？"
        if 0 < e <= 1.5 and _near(lr, 100.0):
            return "❌ 你的结果像是百分数：这里要小数（例如 0.25，而不是 25）。"
    if _near(alr, 2):
        return (f"❌ 差了正好 2 倍（你的结果{big}）。看看是不是多乘或漏乘了一个 2："
                "一次乘加是 2 个 FLOP，bf16 每个数占 2 字节，链路带宽有单向和双向之分。")
    if _near(alr, 3):
        if ex.ctx == "training":
            if not r_big:
                return ("❌ 差了 3 倍左右（你的结果偏小）。训练要算前向和反向，合计约为前向的 3 倍，"
                        "只算前向就少了。")
            return "❌ 差了 3 倍左右（你的结果偏大）。这里是不是只该算前向，你把反向也算进去了？"
        return f"❌ 差了 3 倍左右（你的结果{big}）：哪一项多乘或漏乘了一个 3？"
    if _near(alr, 4):
        return f"❌ 差了 4 倍（你的结果{big}）：是不是两个 2 倍叠在一起了（2 FLOPs/乘加、2 字节/bf16、单向/双向）？"
    if _near(alr, 8):
        if ex.is_bytes:
            return f"❌ 差了 8 倍（你的结果{big}）：比特（bit）和字节（byte）是不是弄混了？1 字节 = 8 比特。"
        return f"❌ 差了 8 倍（你的结果{big}）：哪一项多乘或漏乘了一个 8？"
    for k, word in _MAG.items():
        if _near(alr, 10.0 ** k):
            if _is_time_unit(ex.unit) and r_big and k in (3, 6, 9):
                small = {3: "毫秒", 6: "微秒", 9: "纳秒"}[k]
                return f"❌ 差了大约{word}个数量级（你的结果偏大），多半是单位：答案要用秒，你的结果像是{small}。"
            return (f"❌ 差了大约{word}个数量级（你的结果{big}），多半是单位："
                    "ms 和 s、GB 和 B、TFLOPs 和 FLOPs 再对一遍。")
    lg = alr / math.log(10)
    if lg >= 1.5:
        n = round(lg)
        word = _CN_NUM.get(n, str(n))
        return f"❌ 差了大约{word}个数量级（你的结果{big}）。把每一步的量级和单位再核对一遍。"
    return ""


def _rounding_window(ex) -> float:
    """Up to this relative error an answer outside tolerance may be early rounding: a few per
    cent at most, and never when the tolerance itself is that wide."""
    return min(0.05, max(3 * ex.rtol, 0.02))


def _slip_says(ex, a: float, slips, e: float) -> str | None:
    """The declared slip whose answer ``a`` matches (the closest), or None. ``slips`` is
    [(says, value)]; a slip whose value is within tolerance of ``e`` cannot be told apart."""
    best = None
    for says, v in slips:
        try:
            v = float(v)
        except (TypeError, ValueError):
            continue
        if not math.isfinite(v) or _close(v, e, ex.rtol, ex.atol):
            continue
        if _close(a, v, ex.slip_window, ex.atol):
            d = abs(a - v) / max(abs(v), 1e-300)
            if best is None or d < best[0]:
                best = (d, says)
    return None if best is None else best[1]


def _tol_text(ex) -> str:
    return f"±{ex.rtol * 100:.3g}%" if ex.rtol > 0 else f"±{_fmt(ex.atol)}"


def _number_feedback(ex, a: float, e: float, what: str = "你的结果", slips=()) -> str:
    """The ❌ line for a number outside tolerance: the declared slip it matches, else a generic
    hint that is true for this exercise, else the relative error."""
    rel = _rel(a, e)
    got = f"{what}是 {_fmt(a)}{_fmt_unit(ex)}，{rel}"
    says = _slip_says(ex, a, slips, e)
    if says:
        return f"❌ {says}（{got}）"
    hint = _ratio_hint(ex, a, e)
    if hint:
        return f"{hint}（{got}）"
    lr = _log_ratio(a, e)
    if lr is not None and abs(math.expm1(abs(lr))) <= _rounding_window(ex):
        return f"❌ 很接近，但超出了 {_tol_text(ex)} 的容差（{rel}）。中间结果是不是四舍五入得太早了？"
    if lr is not None and abs(lr) <= math.log(1.6):
        return (f"❌ 还不对：{got}。差得比舍入误差大，多半是方法上有一处不同："
                "漏了一项、多算了一项，或者用了近似式而题目要精确值（反过来也一样）。")
    side = "偏大" if a > e else "偏小"
    if lr is None and e != 0 and a != 0:
        return f"❌ 还不对：{got}，符号和正确结果相反。"
    return f"❌ 还不对：{got}，{side}了。把公式里每一项的含义和单位再对一遍。"


def _bad_float(ex, a: float) -> str | None:
    if math.isnan(a):
        return "❌ 你的结果是 NaN（不是一个数）：多半是某一步出现了 0/0，或者用到了还没算出来的量。"
    if math.isinf(a):
        return "❌ 你的结果是无穷大：多半是除以了 0，或者中间结果溢出了。"
    return None


def _judge_number(ex, answer, values=None) -> CheckResult:
    a = _as_float(answer)
    if a is None:
        return _fail(ex, _type_message(ex, answer))
    bad = _bad_float(ex, a)
    if bad:
        return _fail(ex, bad)
    e = float(ex.reference(values))
    if _close(a, e, ex.rtol, ex.atol):
        return _ok(ex, values=values)
    for alt, note in ex.alternatives(values):
        try:
            alt = float(alt)
        except (TypeError, ValueError):
            continue
        if math.isfinite(alt) and _close(a, alt, ex.rtol, ex.atol):
            return _ok_alt(ex, note, values)
    slips = [(sl.says, v) for sl, v in ex.slip_answers(values)]
    return _fail(ex, _number_feedback(ex, a, e, slips=slips))


def _judge_numbers(ex, answer, pvals=None) -> CheckResult:
    expected = [float(x) for x in ex.reference(pvals)]
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
        return _ok(ex, values=pvals)
    for alt, note in ex.alternatives(pvals):
        try:
            alt = [float(x) for x in alt]
        except TypeError:
            continue
        if len(alt) == n and all_close(alt):
            return _ok_alt(ex, note, pvals)
    slip_lists = []
    for sl, v in ex.slip_answers(pvals):
        try:
            v = [float(x) for x in v]
        except TypeError:
            continue
        if len(v) == n:
            slip_lists.append((sl.says, v))
    for says, v in slip_lists:  # the whole answer is one declared slip (a swap, say)
        if not all(_close(a, b, ex.rtol, ex.atol) for a, b in zip(v, expected)) and \
                all(_close(a, b, ex.slip_window, ex.atol) for a, b in zip(values, v)):
            wrong = [_entry_name(ex, i) for i, (a, e) in enumerate(zip(values, expected))
                     if not _close(a, e, ex.rtol, ex.atol)]
            return _fail(ex, f"❌ {says}（{'、'.join(wrong)}不对）")
    perm = _matching_permutation(values, expected, ex)
    if perm:
        return _fail(ex, "❌ 这几个数都算对了，但顺序不对：按题目要求的顺序排列。")
    wrong = [i for i, (a, e) in enumerate(zip(values, expected)) if not _close(a, e, ex.rtol, ex.atol)]
    parts, seen = [], set()
    for i in wrong:
        a, e = values[i], expected[i]
        name = _entry_name(ex, i)
        entry_slips = [(says, v[i]) for says, v in slip_lists]
        says = _slip_says(ex, a, entry_slips, e)
        if says is not None and says in seen:
            parts.append(f"{name}也是同样的问题（{_fmt(a)}{_fmt_unit(ex)}，{_rel(a, e)}）。")
            continue
        if says is not None:
            seen.add(says)
        msg = _number_feedback(ex, a, e, what=name, slips=entry_slips)
        body = msg[2:]
        if parts:
            parts.append(f"{name}也不对：" + body)
        elif msg.startswith("❌ 很接近"):
            parts.append(f"❌ {name}" + body)
        elif msg.startswith("❌ 还不对"):
            parts.append(msg)
        else:
            parts.append(f"❌ {name}不对。" + body)
    return _fail(ex, " ".join(parts))


def _entry_name(ex, i: int, noun: str = "个数") -> str:
    """'第 2 个数' or '第 2 个数（T_comms）' for entry i (0-based)."""
    if i < len(ex.labels) and ex.labels[i]:
        return f"第 {i + 1} {noun}（{ex.labels[i]}）"
    return f"第 {i + 1} {noun}"


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


def _judge_choice(ex, answer, values=None) -> CheckResult:
    if not isinstance(answer, str):
        return _fail(ex, _type_message(ex, answer))
    got = _norm_choice(answer)
    want = _norm_choice(str(ex.reference(values)))
    if not got:
        return _fail(ex, f"❌ 你填的是空字符串：这里要{_noun(ex)}。")
    if ex.choices and got not in {_norm_choice(c) for c in ex.choices}:
        opts = "、".join(f'"{c}"' for c in ex.choices)
        return _fail(ex, f"❌ 请从 {opts} 里选一个字母，你填的是{_describe(answer)}。")
    if got == want:
        return _ok(ex, values=values)
    for alt, note in ex.alternatives(values):
        if got == _norm_choice(str(alt)):
            return _ok_alt(ex, note, values)
    for key in ex.why:
        if _norm_choice(key) == got:
            return _fail(ex, f"❌ 不是 {got}。{ex.why_text(key, values)}")
    for key, msg in ex.hints:
        if isinstance(key, str) and _norm_choice(key) == got:
            return _fail(ex, f"❌ 不是 {got}。{msg}")
    return _fail(ex, f"❌ 不是 {got}。回到题目，把每个选项的理由和题目里的数对一对。")


# ---- functions -------------------------------------------------------------------------------

def _fmt_kwargs(kw: dict) -> str:
    # a float is written as a number (V=1e9), anything else as Python would (mesh={'X': 2})
    return ", ".join(f"{k}={_fmt(v) if isinstance(v, float) else repr(v)}" for k, v in kw.items())


def _param_names(ex) -> str:
    try:
        return ", ".join(inspect.signature(ex.expected).parameters)
    except (TypeError, ValueError):
        return ""


def judge_function(ex, cases, programs=None) -> CheckResult:
    """Judge a function exercise from ``cases``: [(kwargs, outcome), ...] where outcome is
    ("ok", value) | ("error", "TypeError: ...") | ("timeout", seconds). Expected outputs are
    computed here from ``ex.expected``; the first failing input is reported. Never raises.

    ``programs``: for an exercise with ``program``, the facts of the compiled program (one per
    "ok" case, from ``xla.checks.shard_map_program``); judged after the values, by
    ``ex.program.judge``."""
    try:
        return _judge_function(ex, cases, programs)
    except Exception as e:
        return _fail(ex, f"❌ 没法比较你的函数的返回值（{type(e).__name__}）：它应该返回一个数。")


def _program_verdict(ex, programs) -> tuple[bool, str]:
    """(ok, sentence) for the compiled programs of the "ok" cases (the first that fails)."""
    if not programs:
        return ex.program.judge(None)
    first = None
    for facts in programs:
        ok, msg = ex.program.judge(facts)
        if not ok:
            return ok, msg
        first = first or msg
    return True, first


def _judge_function(ex, cases, programs=None) -> CheckResult:
    res = _judge_values(ex, cases)
    if ex.program is None or not any(s == "ok" for _, (s, _v) in cases) \
            or any(s == "ok" and (v is None or v is Ellipsis) for _, (s, v) in cases):
        return res   # nothing ran (an error, a stub that returns None): the values say it
    ok, msg = _program_verdict(ex, programs)
    if ok and res.correct:
        explain = ex.explanation() or ""
        head = res.message[:len(res.message) - len(explain)].rstrip() if explain and \
            res.message.endswith(explain) else res.message
        return CheckResult(ex.id, True, f"{head}{msg}{explain}")
    if not ok and res.correct:
        return _fail(ex, f"❌ 数值都对，但{msg}")
    if not ok:
        return _fail(ex, f"{res.message} 另外，{msg}")
    return res


def _judge_values(ex, cases) -> CheckResult:
    if not cases:
        return _fail(ex, "❌ 没能测试你的函数（没有拿到任何结果）。")
    for kw, (status, val) in cases:
        args = _fmt_kwargs(kw)
        if status == "error":
            msg = f"❌ 你的函数在输入 {args} 上出错了：{str(val)[:200]}。"
            if str(val).startswith("TypeError") and ex.program is not None:
                if "函数体" not in str(val):  # a per-device body is called with its blocks, in order
                    msg += (f"检查参数：每个设备上会这样调用它：{ex.var}({_param_names(ex)})，"
                            "按位置传入本设备的块。")
            elif str(val).startswith("TypeError"):
                names = _param_names(ex)
                if names:
                    msg += f"检查参数名：会这样调用它：{ex.var}({names}=...)（按参数名传入）。"
            return _fail(ex, msg)
        if status == "timeout":
            return _fail(ex, f"❌ 你的函数在输入 {args} 上运行太久，被停下了：是不是写成了死循环？")
        try:
            ref = np.asarray(ex.expected(**kw), dtype=float)
        except Exception as e:  # the grader's side, not the answer
            return _fail(ex, _no_reference(e))
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
        for a in flat_g.tolist():
            bad = _bad_float(ex, a)
            if bad:
                return _fail(ex, f"❌ 输入 {args} 时，" + bad[2:].replace("你的结果", "你的函数返回", 1))
        wrong = [j for j, (a, e) in enumerate(zip(flat_g.tolist(), flat_r.tolist()))
                 if not _close(a, e, ex.rtol, ex.atol)]
        if not wrong:
            continue
        says = _function_slip(ex, cases)
        j = wrong[0]
        a, e = flat_g[j], flat_r[j]
        where = f"输入 {args} 时，你的函数返回" + (f"值的{_entry_name(ex, j, '个')}" if flat_r.size > 1 else "值")
        if says:
            return _fail(ex, f"❌ {says}（{where}是 {_fmt(a)}{_fmt_unit(ex)}，{_rel(a, e)}）")
        msg = _number_feedback(ex, a, e, what=where)
        if msg.startswith("❌ 很接近"):
            msg = f"❌ {where}" + msg[2:]
        elif msg.startswith("❌ 还不对"):
            msg = f"❌ {where} {_fmt(a)}{_fmt_unit(ex)}，{_rel(a, e)}，超出了 {_tol_text(ex)} 的容差。"
        if flat_r.size > 1 and len(wrong) > 1:
            others = "、".join(str(k + 1) for k in wrong[1:])
            msg += f"（第 {others} 个也不对。）"
        return _fail(ex, msg)
    n_edge = min(len(ex.edge_cases), len(cases))
    if n_edge:
        return _ok(ex, f"在题目说的 {n_edge} 个边界输入和 {len(cases) - n_edge} 组随机输入上都和参考函数一致"
                       f"（容差 {_tol_text(ex)}）。")
    return _ok(ex, f"在 {len(cases)} 组随机输入上都和库函数一致。")


def _function_slip(ex, cases) -> str | None:
    """The declared slip (a wrong function) that agrees with the reader's function on every input
    it returned a value for, and differs from the reference on at least one of them."""
    ok = []
    for kw, (status, val) in cases:
        if status != "ok":
            continue
        got = _as_array(val)
        if got is None:
            return None
        ok.append((kw, got.reshape(-1)))
    for sl in ex.slips:
        differs, agrees = False, True
        slip = sl.answer
        if ex.program is not None:   # a wrong per-device body: its global result
            slip = _slip_values(ex.program, sl.answer)
        for kw, got in ok:
            try:
                v = np.asarray(slip(**kw), dtype=float).reshape(-1)
                ref = np.asarray(ex.expected(**kw), dtype=float).reshape(-1)
            except Exception:
                agrees = False
                break
            if v.shape != got.shape or not all(_close(a, b, ex.slip_window, ex.atol)
                                               for a, b in zip(got.tolist(), v.tolist())):
                agrees = False
                break
            differs = differs or not np.allclose(v, ref, rtol=ex.rtol, atol=ex.atol)
        if agrees and differs:
            return sl.says
    return None


def _slip_values(program, body):
    def values(**kw):
        return program.runner(body)(**kw)[0]
    return values


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


