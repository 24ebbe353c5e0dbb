"""check() feedback, answer decoding, student-copy stripping (DESIGN.md §5, STYLE-zh.md §6).

The feedback tests use a private set of exercises (built here), so they pin the wording rules
and not chapter 1's numbers; a few tests go through ``check()`` with the real registry.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scaling_lib import grading
from scaling_lib.exercises import Exercise, Param, get, registry
from scaling_lib.grading import CheckResult, check, evaluate, variant
from scaling_lib.grading import _batch, _judge, _strip

ROOT = Path(__file__).resolve().parents[1]

# ---- a private registry --------------------------------------------------------------------

NUM = Exercise("98.1", "x", "number", lambda: 240.0, rtol=0.03, unit="FLOPs/字节",
               explain="这是临界强度。")
SEC = Exercise("98.2", "t", "number", lambda: 7.3e-3, rtol=0.03, unit="秒")
ALT = Exercise("98.3", "b", "number", lambda: 240.0, accept=(243.0,), rtol=0.005, unit="token")
OWN = Exercise("98.4", "y", "number", lambda: 100.0, hints=((0.5, "链路是双向的：带宽要乘 2。"),))
LIST = Exercise("98.5", "ts", "numbers", lambda: [1.0e-3, 2.0e-3, 5.0e-3], unit="秒",
                explain="三个时间。")
CHOICE = Exercise("98.6", "ans", "choice", lambda: "B", choices=("A", "B", "C"),
                  hints=(("A", "A 只在批次很大时成立。"),))
ZERO = Exercise("98.7", "z", "number", lambda: 0.0, atol=1e-9)


def _ref_intensity(B, D, F):
    return 2 * B * D * F / (2 * B * D + 2 * D * F + 2 * B * F)


FUNC = Exercise("98.8", "intensity", "function", _ref_intensity, rtol=0.01, unit="FLOPs/字节",
                sampler=lambda rng: {"B": int(rng.integers(1, 4096)), "D": int(rng.integers(128, 8192)),
                                     "F": int(rng.integers(128, 8192))},
                n_samples=10, explain="强度约等于 B。")
ARR = Exercise("98.9", "curve", "function", lambda B: np.minimum(2.0 * np.asarray(B), 240.0),
               sampler=lambda rng: {"B": int(rng.integers(1, 500))}, n_samples=8)


def msg(ex, answer) -> str:
    r = evaluate(ex, answer)
    assert isinstance(r, CheckResult)
    return r.message


def ok(ex, answer) -> bool:
    r = evaluate(ex, answer)
    assert r.message.startswith("✅" if r.correct else "❌"), r.message
    return r.correct


# ---- numbers: right answers and tolerance --------------------------------------------------

@pytest.mark.parametrize("answer", [240.0, 240, 245.0, 233.0, np.float64(240.5), np.int64(240),
                                    np.array(240.0), np.float32(240.0)])
def test_number_within_tolerance_is_correct(answer):
    r = evaluate(NUM, answer)
    assert r.correct and bool(r)
    assert r.message == "✅ 对了。这是临界强度。"  # a ✅ adds the exercise's explain sentence


def test_number_jax_scalar_is_accepted():
    jnp = pytest.importorskip("jax.numpy")
    assert ok(NUM, jnp.float32(240.0))
    assert not ok(NUM, jnp.ones(3))


def test_tolerance_edges():
    assert ok(NUM, 240 * 1.0299)
    assert not ok(NUM, 240 * 1.031)
    assert ok(ZERO, 5e-10) and not ok(ZERO, 1e-6)


def test_accept_alternatives():
    assert ok(ALT, 240.5) and ok(ALT, 243.0) and ok(ALT, 243.9)
    assert not ok(ALT, 246.0)


# ---- numbers: hints for the usual slips (STYLE-zh §6 table) ----------------------------------

def test_factor_two_both_directions():
    big, small = msg(NUM, 480.0), msg(NUM, 120.0)
    assert big.startswith("❌ 差了正好 2 倍") and "偏大" in big and "相对误差 +100%" in big
    assert small.startswith("❌ 差了正好 2 倍") and "偏小" in small and "相对误差 -50%" in small
    assert "单向和双向" in big


def test_factor_thousand_and_million():
    m = msg(NUM, 240e3)
    assert m.startswith("❌ 差了大约三个数量级") and "ms 和 s" in m and "1000 倍" in m
    assert msg(NUM, 0.24).startswith("❌ 差了大约三个数量级（你的结果偏小）")
    assert msg(NUM, 240e6).startswith("❌ 差了大约六个数量级")
    assert msg(NUM, 240e-9).startswith("❌ 差了大约九个数量级")


def test_seconds_vs_milliseconds():
    m = msg(SEC, 7.3)  # answered in ms
    assert m.startswith("❌ 差了大约三个数量级") and "答案要用秒，你的结果像是毫秒" in m
    assert "像是微秒" in msg(SEC, 7.3e3)


def test_bits_vs_bytes():
    for wrong in (240 * 8, 240 / 8):
        m = msg(NUM, wrong)
        assert m.startswith("❌ 差了 8 倍") and "比特" in m and "字节" in m
    # a factor of 8 in a time or a count is not bits vs bytes (8 chips, 8 shards, E/k = 8)
    for ex in (SEC, Exercise("98.23", "n", "number", lambda: 872.0, unit="token/s")):
        e = ex.reference()
        m = msg(ex, e / 8)
        assert m.startswith("❌ 差了 8 倍") and "比特" not in m


def test_forward_vs_forward_backward():
    train = Exercise("98.21", "x", "number", lambda: 240.0, unit="FLOPs", context="training")
    lo, hi = msg(train, 80.0), msg(train, 720.0)
    assert lo.startswith("❌ 差了 3 倍左右（你的结果偏小）") and "前向和反向" in lo
    assert hi.startswith("❌ 差了 3 倍左右（你的结果偏大）") and "反向" in hi
    # no backward pass in an inference question, and no guess where the context is not known
    infer = Exercise("98.22", "x", "number", lambda: 240.0, unit="秒", context="inference")
    for ex in (infer, NUM):
        m = msg(ex, 80.0)
        assert m.startswith("❌ 差了 3 倍左右（你的结果偏小）") and "反向" not in m and "前向" not in m


def test_factor_four_and_sign():
    assert msg(NUM, 960.0).startswith("❌ 差了 4 倍")
    assert msg(NUM, -240.0) == "❌ 大小对了，符号反了。（你的结果是 -240 FLOPs/字节，相对误差 -200%）"


def test_close_but_outside_tolerance():
    m = msg(NUM, 250.0)
    assert m.startswith("❌ 很接近，但超出了 ±3% 的容差") and "相对误差 +4.2%" in m
    assert "四舍五入" in m


def test_far_off_without_pattern_gives_relative_error():
    m = msg(NUM, 600.0)
    assert m.startswith("❌ 还不对") and "相对误差 +150%" in m and "偏大" in m
    m = msg(NUM, 24000.0)
    assert "约是正确值的 100 倍" in m and "差了大约两个数量级" in m


def test_exercise_own_hint_wins_over_generic():
    m = msg(OWN, 50.0)
    assert m.startswith("❌ 链路是双向的：带宽要乘 2。")
    assert msg(OWN, 200.0).startswith("❌ 差了正好 2 倍")  # the other direction: generic hint


def test_feedback_never_gives_the_answer():
    for wrong in (480.0, 600.0, 250.0, 24.0, 8.0):
        assert "240 " not in msg(NUM, wrong).replace("约 240", "")


# ---- bad inputs: a ❌, never an exception ------------------------------------------------------

@pytest.mark.parametrize("answer, expect", [
    (..., "❌ 还没作答：把 `...` 换成你的结果再运行。"),
    ("7.3h", "❌ 这里要一个数（单位：FLOPs/字节），你填的是字符串 \"7.3h\"。"),
    ("240", "❌ 这里要一个数（单位：FLOPs/字节），你填的是字符串 \"240\"。去掉引号，直接写数。"),
    (None, "❌ 这里要一个数（单位：FLOPs/字节），你填的是 None。"),
    (True, "❌ 这里要一个数（单位：FLOPs/字节），你填的是布尔值 True。"),
    (np.array([1.0, 2.0]), "❌ 这里要一个数（单位：FLOPs/字节），你填的是一个形状为 (2,) 的数组。"),
    ([240.0], "❌ 这里要一个数（单位：FLOPs/字节），你填的是一个长度为 1 的列表。"
              "把里面那一个数取出来（例如 x[0] 或 x.item()）。"),
    (3 + 4j, "❌ 这里要一个数（单位：FLOPs/字节），你填的是复数 3+4j。"),
    ({"a": 1}, "❌ 这里要一个数（单位：FLOPs/字节），你填的是一个字典。"),
    (print, "❌ 这里要一个数（单位：FLOPs/字节），你填的是一个函数。"),
])
def test_bad_number_inputs(answer, expect):
    r = evaluate(NUM, answer)
    assert not r.correct and r.message == expect


def test_nan_and_inf():
    assert msg(NUM, float("nan")).startswith("❌ 你的结果是 NaN")
    assert msg(NUM, np.nan).startswith("❌ 你的结果是 NaN")
    assert msg(NUM, math.inf).startswith("❌ 你的结果是无穷大")
    assert msg(NUM, -np.inf).startswith("❌ 你的结果是无穷大")


def test_object_that_raises_on_conversion():
    class Weird:
        def __float__(self):
            raise RuntimeError("no")
    assert msg(NUM, Weird()) == "❌ 这里要一个数（单位：FLOPs/字节），你填的是一个 Weird 对象。"


# ---- numbers (lists) -----------------------------------------------------------------------

def test_numbers_kind():
    assert ok(LIST, [1e-3, 2e-3, 5e-3]) and ok(LIST, (1e-3, 2.02e-3, 5e-3))
    assert ok(LIST, np.array([1e-3, 2e-3, 5e-3]))
    assert msg(LIST, [1e-3, 2e-3]) == "❌ 这里要 3 个数（按题目给的顺序），你给了 2 个。"
    assert msg(LIST, [1e-3, 2e-3, 5e-3, 1.0]) == "❌ 这里要 3 个数（按题目给的顺序），你给了 4 个。"
    assert msg(LIST, [5e-3, 1e-3, 2e-3]).startswith("❌ 这几个数都算对了，但顺序不对")
    m = msg(LIST, [1e-3, 4e-3, 5e-3])
    assert m.startswith("❌ 第 2 个数不对。差了正好 2 倍") and "第 2 个数是 0.004 秒" in m
    m = msg(LIST, [1e-3, 2e-3, 5.0])
    assert m.startswith("❌ 第 3 个数不对。差了大约三个数量级") and "像是毫秒" in m
    assert msg(LIST, [1e-3, "2", 5e-3]) == "❌ 第 2 个不是一个数：你填的是字符串 \"2\"。"
    assert msg(LIST, [1e-3, ..., 5e-3]).startswith("❌ 第 2 个还没作答")
    assert msg(LIST, [1e-3, float("nan"), 5e-3]).startswith("❌ 第 2 个数是 NaN")
    assert msg(LIST, 1e-3) == "❌ 这里要一个含 3 个数的列表（秒），你填的是数 0.001。"
    assert msg(LIST, np.ones((3, 1))) == "❌ 这里要一个含 3 个数的列表（秒），你填的是一个形状为 (3, 1) 的数组。"
    assert msg(LIST, ...) == "❌ 还没作答：把 `...` 换成你的结果再运行。"


# ---- choice --------------------------------------------------------------------------------

@pytest.mark.parametrize("answer", ["B", "b", " b ", "(B)", "B.", "“B”"])
def test_choice_normalisation(answer):
    assert ok(CHOICE, answer)


def test_choice_wrong_and_bad():
    assert msg(CHOICE, "A") == "❌ 不是 A。A 只在批次很大时成立。"
    assert msg(CHOICE, "c").startswith("❌ 不是 C。")
    assert msg(CHOICE, "D") == "❌ 请从 \"A\"、\"B\"、\"C\" 里选一个字母，你填的是字符串 \"D\"。"
    assert msg(CHOICE, 2).startswith("❌ 这里要一个选项字母")
    assert msg(CHOICE, "").startswith("❌ 你填的是空字符串")
    assert msg(CHOICE, ...) == "❌ 还没作答：把 `...` 换成你的结果再运行。"


# ---- function exercises ----------------------------------------------------------------------

def test_function_correct_and_deterministic():
    r = evaluate(FUNC, lambda B, D, F: B * D * F / (B * D + D * F + B * F))
    assert r.correct and r.message == "✅ 对了。在 10 组随机输入上都和库函数一致。强度约等于 B。"
    assert evaluate(ARR, lambda B: np.minimum(2.0 * B, 240.0)).correct
    wrong = lambda B, D, F: B  # noqa: E731
    assert msg(FUNC, wrong) == msg(FUNC, wrong)  # fixed seed per exercise: stable notebook output


def test_function_reports_first_failing_input():
    inputs = grading.sample_inputs(FUNC, grading.default_seed(FUNC))

    def half_wrong(B, D, F):  # right on the first input only
        good = _ref_intensity(B, D, F)
        return good if (B, D, F) == tuple(inputs[0].values()) else 2 * good

    m = msg(FUNC, half_wrong)
    kw = inputs[1]
    assert m.startswith("❌ 差了正好 2 倍")
    assert f"输入 B={kw['B']}, D={kw['D']}, F={kw['F']} 时" in m


def test_function_bad_behaviour():
    def raises(B, D, F):
        raise ZeroDivisionError("division by zero")

    m = msg(FUNC, raises)
    assert m.startswith("❌ 你的函数在输入 B=") and "ZeroDivisionError: division by zero" in m
    m = msg(FUNC, lambda b, d, f: 1.0)
    assert "TypeError" in m and "intensity(B, D, F=...)" in m

    def stub(B, D, F):
        ...
    assert "返回了 None" in msg(FUNC, stub) and "`...`" in msg(FUNC, stub)
    assert "返回了字符串 \"x\"，这里要一个数" in msg(FUNC, lambda B, D, F: "x")
    assert "返回了一个形状为 (2,) 的数组，这里要一个数" in msg(FUNC, lambda B, D, F: np.ones(2))
    assert "NaN" in msg(FUNC, lambda B, D, F: float("nan"))
    assert msg(ARR, lambda B: np.ones(3)).startswith("❌ 你的函数在输入 B=")


def test_function_kind_wrong_types():
    assert msg(FUNC, ...) == "❌ 还没作答：把 `...` 换成你的结果再运行。"
    m = msg(FUNC, 12.0)
    assert m.startswith("❌ 这里要一个函数（用 def intensity(...) 定义），你填的是数 12.0。")
    assert "不要调用它" in m
    assert msg(FUNC, int).startswith("❌ 这里要一个函数")  # a class is not the reader's function


def test_judge_function_outcomes_from_the_grader():
    kw = {"B": 8, "D": 128, "F": 128}
    ref = _ref_intensity(**kw)
    assert grading.judge_function(FUNC, [(kw, ("ok", ref))]).correct
    assert "运行太久" in grading.judge_function(FUNC, [(kw, ("timeout", None))]).message
    assert "出错了：KeyError: 'B'" in grading.judge_function(FUNC, [(kw, ("error", "KeyError: 'B'"))]).message
    assert not grading.judge_function(FUNC, []).correct


# ---- check(): printing, ids, result object -----------------------------------------------------

def test_check_prints_once_and_returns_result(capsys):
    value = get("1.2").reference()
    r = check("1.2", value)
    out = capsys.readouterr().out
    assert out.startswith("✅ 对了。") and out.count("\n") == 1
    assert r and r.correct and r.message == out.strip()
    assert repr(r) == "CheckResult(id='1.2', correct=True)"
    r = check("1.2", 2 * value)
    out = capsys.readouterr().out
    assert out.startswith("❌ 差了正好 2 倍") and not r


def test_check_result_shows_nothing_more_in_ipython():
    from IPython.core.formatters import DisplayFormatter
    r = CheckResult("1.2", True, "✅ 对了。")
    assert DisplayFormatter().format(r) == ({}, {})


def test_check_unknown_id_lists_chapter(capsys):
    r = check("1.99", 3)
    out = capsys.readouterr().out.strip()
    ids = [e.id for e in registry().values() if e.chapter == 1]
    assert not r and out.startswith("❌ 没有编号为 \"1.99\" 的练习。第 1 章的练习有：")
    assert all(i in out for i in ids)
    assert check("97.1", 3).message.startswith("❌ 没有编号为 \"97.1\" 的练习，第 97 章还没有登记练习")
    assert check(1.2, 3).message.startswith("❌ 练习编号要写成字符串")
    assert check(None, 3).message.startswith("❌ 练习编号要写成字符串")


# Chapter 1 stands in for the real registry here; each chapter's tests/test_exercises_NN.py
# checks its own entries (some need JAX devices to compute their expected values).
CH1 = [e for e in registry().values() if e.chapter == 1]


def test_check_never_raises_on_real_exercises():
    bad = [None, "x", float("nan"), np.inf, np.ones(4), [1, 2], ..., lambda *a, **k: 1 / 0, object()]
    assert CH1
    for ex in CH1:
        for b in bad:
            r = evaluate(ex, b)
            assert not r.correct and r.message.startswith("❌"), (ex.id, b)


def test_every_real_exercise_accepts_its_reference():
    for ex in CH1:
        answer = ex.expected if ex.kind == "function" else ex.reference()
        assert evaluate(ex, answer).correct, ex.id


# ---- tiny, huge and non-finite answers: a ❌ with a message, never an exception --------------------

@pytest.mark.parametrize("answer, start", [
    (5e-324, "❌ 差了大约三百二十六个数量级"), (-5e-324, "❌ 符号不对"), (1e308, "❌ 差了大约三百零六个数量级"),
    (-1e308, "❌ 符号不对"), (2.2e-308, "❌ 差了大约"), (10**400, "❌ 你的结果是无穷大"),
    (-(10**400), "❌ 你的结果是无穷大"), (np.float64(1e-300), "❌ 差了大约"), (float("inf"), "❌ 你的结果是无穷大"),
    (np.float32("nan"), "❌ 你的结果是 NaN"), (0.0, "❌ 还不对"), (-0.0, "❌ 还不对"),
])
def test_extreme_numbers_are_a_cross_with_a_message(answer, start):
    for ex in (NUM, SEC, OWN, ALT):
        r = evaluate(ex, answer)
        assert not r.correct and r.message.startswith("❌"), (ex.id, r.message)
    m = evaluate(NUM, answer).message
    assert m.startswith(start.replace("三百二十六", "326").replace("三百零六", "306")) or m.startswith(start), m


def test_extreme_numbers_in_lists_and_functions():
    assert msg(LIST, [5e-324, 2e-3, 5e-3]).startswith("❌ 第 1 个数不对。差了大约")
    assert msg(LIST, [1e-3, 1e308, 5e-3]).startswith("❌ 第 2 个数不对。差了大约")
    assert msg(LIST, [1e-3, 2e-3, -(10**400)]).startswith("❌ 第 3 个数是无穷大")
    assert msg(FUNC, lambda B, D, F: 5e-324).startswith("❌ 差了大约")
    assert msg(FUNC, lambda B, D, F: 10**400).startswith("❌ 输入 B=")
    assert "无穷大" in msg(FUNC, lambda B, D, F: 10**400)


def test_check_never_raises_even_for_odd_objects(capsys):
    class Evil(float):
        def __eq__(self, other):
            raise RuntimeError("no comparing me")

        def __float__(self):
            raise RuntimeError("no converting me")
    for a in (Evil(3.0), 5e-324, 1e308, 10**400, [5e-324] * 2, lambda **kw: 1 / 0):
        r = check("1.2", a)
        assert not r.correct
    out = capsys.readouterr().out
    assert out.count("❌") == 6


def test_a_function_that_calls_exit_is_a_cross():
    import sys as _sys
    assert "SystemExit" in msg(FUNC, lambda B, D, F: _sys.exit(3))


# ---- per-student numbers: variant() and check() at home --------------------------------------

PX = Exercise("98.20", "t", "number", lambda B, W: B / W, rtol=0.01, unit="秒",
              params={"B": Param(512, (256, 1024, 2048)), "W": Param(4.5e10, (9e10,), text="4.5e10")},
              explain="B = {B} 时是这么多。")


def test_params_change_expected_value_and_explanation():
    assert evaluate(PX, 512 / 4.5e10).correct
    assert not evaluate(PX, 512 / 4.5e10, values={"B": 1024}).correct
    r = evaluate(PX, 1024 / 9e10, values={"B": 1024, "W": 9e10})
    assert r.correct and r.message == "✅ 对了。B = 1024 时是这么多。"
    assert evaluate(PX, 2048 / 4.5e10, values={"B": 2048, "other": 1}).correct  # a chapter's values


def test_param_declarations_are_checked():
    with pytest.raises(ValueError, match="non-empty tuple"):
        Param(1, ())
    with pytest.raises(ValueError, match="duplicates"):
        Param(1, (2, 2))
    with pytest.raises(TypeError):
        Param(1, (None,))
    with pytest.raises(ValueError, match="function exercise cannot declare params"):
        Exercise("98.21", "f", "function", lambda B: B, sampler=lambda rng: {"B": 1},
                 params={"B": Param(1, (2,))})
    assert Param(1e12, (2e12,)).text == "1e12" and Param(8192, (4096,)).text == "8192"
    assert Param(512, (512, 1024)).choices() == (1024,) and Param(512, (512,)).choices() == (512,)


def test_draw_is_deterministic_keyed_and_needs_a_real_secret():
    from scaling_lib.exercises import chapter_params, draw
    params = chapter_params(1)
    k1, k2 = b"k" * 32, b"j" * 32
    a = draw(params, k1, "s001", 1)
    assert a == draw(params, k1, " S001 ", 1)  # ids are compared case- and space-insensitively
    assert set(a) == set(params) and all(a[n] in params[n].values and a[n] != params[n].default for n in a)
    others = [draw(params, k1, f"s{i:03d}", 1) for i in range(2, 40)]
    assert sum(o == a for o in others) == 0  # 38 classmates: nobody shares all of s001's numbers
    assert draw(params, k2, "s001", 1) != a  # another course secret, other numbers
    with pytest.raises(ValueError, match="16 bytes"):
        draw(params, b"short", "s001", 1)
    with pytest.raises(ValueError, match="student id"):
        draw(params, k1, "  ", 1)


def test_variant_sets_the_numbers_check_uses(capsys):
    from scaling_lib.exercises import get as get_ex
    ex = get_ex("1.1")
    try:
        P = variant(1)
        assert P.flops == 5e14 and P["B5"] == 384 and P.student is None
        assert "书上的数" in repr(P) and "flops = 5e14" in repr(P)
        P = variant(1, "s001", {"flops": 3e13})
        assert P.flops == 3e13 and "学生 s001" in repr(P)
        assert check("1.1", ex.reference({"flops": 3e13})).correct
        assert not check("1.1", ex.reference()).correct  # the book's answer is not this student's
        with pytest.raises(AttributeError, match="只读"):
            P.flops = 1
        with pytest.raises(AttributeError, match="没有叫 'nope' 的参数"):
            P.nope
        with pytest.raises(ValueError, match="unknown parameter"):
            variant(1, "s001", {"nope": 1})
        with pytest.raises(TypeError, match="chapter must be an int"):
            variant("1")
        with pytest.raises(TypeError, match="number or a string"):
            variant(1, "s001", {"flops": [1]})
    finally:
        variant(1)
    capsys.readouterr()
    assert check("1.1", ex.reference()).correct


# ---- stripping -------------------------------------------------------------------------------

def _nb(cells):
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"accelerator": "TPU", "colab": {"gpuType": "V5E1", "provenance": []},
                   "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    for kind, src in cells:
        c = (nbformat.v4.new_code_cell(src) if kind == "code" else nbformat.v4.new_markdown_cell(src))
        if kind == "code":
            c.outputs = [nbformat.v4.new_output("stream", text="✅ 对了。\n")]
            c.execution_count = 3
        cells_id = f"c{len(nb.cells):03d}"
        c["id"] = cells_id
        nb.cells.append(c)
    return nb


def test_strip_notebook_replaces_solutions():
    nb = _nb([
        ("markdown", "intro"),
        ("code", "x = 1\n### BEGIN SOLUTION\ni_crit_ici = 9.2e14 / 9e10\n### END SOLUTION\ncheck(\"1.2\", i_crit_ici)"),
        ("markdown", ":::{exercise} 练习 1.3\n题面\n:::\n\n::::{solution} ex-01-3\n:class: dropdown\n"
                     "解答 $x$\n\n```python\ncode\n```\n::::\n\n:::{exercise} 练习 1.4\n下一题\n:::"),
        ("code", "### BEGIN SOLUTION\ndef dot_intensity(N):\n    return (2 * N - 1) / (4 * N + 2)\n"
                 "### END SOLUTION\ncheck(\"1.3\", dot_intensity)"),
        ("markdown", "```{solution} ex-01-4\n:class: dropdown\nonly a solution\n```"),
        ("code", "    ### BEGIN SOLUTION\n    two_chip_bound = 'B'\n    ### END SOLUTION\ncheck('1.5b', two_chip_bound)"),
    ])
    st = grading.strip_notebook(nb, "t.ipynb")
    src = [c.source for c in st.cells]
    assert src[1] == "x = 1\ni_crit_ici = ...  # 在这里填入你的答案\ncheck(\"1.2\", i_crit_ici)"
    assert src[2] == ":::{exercise} 练习 1.3\n题面\n:::\n\n:::{exercise} 练习 1.4\n下一题\n:::"
    assert src[3] == "def dot_intensity(N):\n    ...  # 在这里写出函数体\ncheck(\"1.3\", dot_intensity)"
    assert src[4] == "    two_chip_bound = ...  # 在这里填入你的答案\ncheck('1.5b', two_chip_bound)"
    assert len(st.cells) == 5  # the solution-only markdown cell is gone
    assert all(c.outputs == [] and c.execution_count is None for c in st.cells if c.cell_type == "code")
    assert st.metadata == nb.metadata and nb.cells[1].outputs  # metadata kept; input not modified
    assert [c["id"] for c in st.cells] == ["c000", "c001", "c002", "c003", "c005"]


def test_function_stub_uses_reference_signature():
    ex = Exercise("1.99", "f", "function", lambda B, D, F=4096, *, dtype="bf16": 0.0,
                  sampler=lambda rng: {"B": 1})
    assert _strip._signature_text(ex, "") == "B, D, F=4096, *, dtype='bf16'"
    assert _strip._stub_for(ex, "", "") == "def f(B, D, F=4096, *, dtype='bf16'):\n    ...  # 在这里写出函数体"
    assert _strip._signature_text(get("1.4"), "") == "B, D, F"


@pytest.mark.parametrize("source, err", [
    ("### BEGIN SOLUTION\nx = 1\n", "BEGIN SOLUTION"),
    ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n", "without check"),
    ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\ncheck('1.999', x)", "unknown exercise id"),
])
def test_strip_errors_name_the_cell(source, err):
    with pytest.raises(grading.StripError, match=err) as e:
        grading.strip_notebook(_nb([("code", source)]), "bad.ipynb")
    assert "bad.ipynb, cell 0" in str(e.value)


def test_strip_cli_check_mode(tmp_path):
    import nbformat
    src, out = tmp_path / "ex", tmp_path / "ex" / "student"
    src.mkdir()
    nbformat.write(_nb([("code", "### BEGIN SOLUTION\ni_crit = 240\n### END SOLUTION\ncheck('1.2', i_crit)")]),
                   src / "01_t.ipynb")
    run = [sys.executable, "-m", "scaling_lib.grading", "strip", "--src", str(src), "--out", str(out)]
    assert subprocess.run(run + ["--check"], capture_output=True).returncode == 1
    assert subprocess.run(run, capture_output=True).returncode == 0
    first = (out / "01_t.ipynb").read_bytes()
    r = subprocess.run(run + ["--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    assert subprocess.run(run, capture_output=True).returncode == 0
    assert (out / "01_t.ipynb").read_bytes() == first  # deterministic
    (out / "99_stray.ipynb").write_text("{}")
    r = subprocess.run(run + ["--check"], capture_output=True, text=True)
    assert r.returncode == 1 and "99_stray.ipynb" in r.stdout


# ---- cheap import --------------------------------------------------------------------------

def test_import_does_not_load_notebook_machinery():
    code = ("import sys, scaling_lib\n"
            "assert 'scaling_lib.grading' not in sys.modules\n"
            "from scaling_lib.grading import check\n"
            "heavy = [m for m in ('nbclient', 'nbformat', 'jupyter_client', 'zmq', 'IPython', 'jax')"
            " if m in sys.modules]\n"
            "print(heavy)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"
