"""Declared slips, valid alternatives, per-option feedback, edge cases and generic hints that
only say true things (issue #19 items 2-4). Private exercises pin the rules; the registry's own
exercises are checked against them in tests/test_exercises.py."""
from __future__ import annotations

import numpy as np
import pytest

from scaling_lib import grading
from scaling_lib.exercises import Alt, Exercise, Param, Slip
from scaling_lib.grading import evaluate

P = {"n": Param(10, (20, 30))}

NUM = Exercise("97.1", "params", "number", lambda n: 1.3e9 * n / 10, rtol=0.01, unit="个参数", params=P,
               slips=(Slip("你把两个嵌入矩阵漏掉了。", lambda n: 1.2e9 * n / 10),
                      Slip("GiB 和 GB 弄混了。", lambda n: 1.3e9 * n / 10 / 1.073741824)),
               accept=(Alt(lambda n: 1.25e9 * n / 10, "共享嵌入也说得通。"),))
LIST = Exercise("97.2", "ts", "numbers", lambda: [1.0, 2.0, 3.0], rtol=0.01, unit="秒",
                labels=("T_math", "T_comms", "下界"),
                slips=(Slip("你忘了延迟。", lambda: [1.0, 1.5, 3.0]),
                       Slip("只用了一个轴。", lambda: [1.0, 6.0, 9.0])))
CH = Exercise("97.3", "c", "choice", lambda n: "A" if n < 15 else "B", choices=("A", "B", "C"), params=P,
              why={"B": lambda n: f"n = {n} 时 B 的理由不成立。", "C": "C 把延迟当成了带宽。"})


def ref(N):
    return (2 * N - 1) / (4 * N + 2)


FN = Exercise("97.4", "dot", "function", ref, rtol=0.01,
              sampler=lambda rng: {"N": int(rng.integers(10**6, 10**7))}, n_samples=5,
              edge_cases=({"N": 1}, {"N": 2}),
              slips=(Slip("你没算写回标量的 2 字节。", lambda N: (2 * N - 1) / (4 * N)),
                     Slip("加法按 N 次算了（应为 N-1 次）。", lambda N: 2 * N / (4 * N + 2))))
FN2 = Exercise("97.5", "times", "function", lambda x: [x, 2 * x], rtol=0.01, labels=("T1", "T2"),
               sampler=lambda rng: {"x": float(rng.uniform(1, 2))}, n_samples=3)


def msg(ex, a, values=None):
    return evaluate(ex, a, values=values).message


def test_number_slip_is_named():
    m = msg(NUM, 1.2e9)
    assert m.startswith("❌ 你把两个嵌入矩阵漏掉了。") and "相对误差" in m
    assert msg(NUM, 1.3e9 / 1.073741824).startswith("❌ GiB 和 GB 弄混了。")
    # the parameters reach the slip: a student with n = 20
    assert msg(NUM, 2.4e9, values={"n": 20}).startswith("❌ 你把两个嵌入矩阵漏掉了。")
    assert not evaluate(NUM, 1.2e9, values={"n": 20}).correct


def test_alternative_is_accepted_with_its_sentence():
    r = evaluate(NUM, 1.25e9)
    assert r.correct and r.message.startswith("✅ 对了。共享嵌入也说得通。")
    assert evaluate(NUM, 2.5e9, values={"n": 20}).correct
    assert NUM.accepted() == [1.25e9]


def test_list_names_each_wrong_entry_and_its_slip():
    assert msg(LIST, [1.0, 1.5, 3.0]) == "❌ 你忘了延迟。（第 2 个数（T_comms）不对）"
    # one slip in two entries: said once, both entries named
    assert msg(LIST, [1.0, 6.0, 9.0]) == "❌ 只用了一个轴。（第 2 个数（T_comms）、第 3 个数（下界）不对）"
    # a slip in one entry while another entry is wrong for another reason: each entry on its own
    m = msg(LIST, [1.0, 1.5, 7.0])
    assert m.startswith("❌ 第 2 个数（T_comms）不对。你忘了延迟。") and "第 3 个数（下界）也不对" in m
    m = msg(LIST, [1.0, 6.0, 3.0])
    assert m.startswith("❌ 第 2 个数（T_comms）不对。只用了一个轴。")
    m = msg(LIST, [1.0, 2.5, 7.0])  # two entries wrong, no slip: both named
    assert "第 2 个数（T_comms）" in m and "第 3 个数（下界）也不对" in m


def test_choice_has_feedback_per_wrong_letter():
    assert msg(CH, "C") == "❌ 不是 C。C 把延迟当成了带宽。"
    assert msg(CH, "B") == "❌ 不是 B。n = 10 时 B 的理由不成立。"
    assert evaluate(CH, "B", values={"n": 20}).correct
    assert "n = 20" not in msg(CH, "B")


def test_function_edge_cases_are_tried_first_and_slips_named():
    inputs = grading.sample_inputs(FN, 1)
    assert inputs[:2] == [{"N": 1}, {"N": 2}] and len(inputs) == 7
    r = evaluate(FN, ref)
    assert r.correct and "2 个边界输入" in r.message and "±1%" in r.message
    m = msg(FN, lambda N: (2 * N - 1) / (4 * N))
    assert m.startswith("❌ 你没算写回标量的 2 字节。") and "输入 N=1 时" in m
    m = msg(FN, lambda N: 2 * N / (4 * N + 2))
    assert m.startswith("❌ 加法按 N 次算了（应为 N-1 次）。")
    # without the edge cases both slips would pass on large N: that is why they are there
    big = Exercise("97.6", "dot", "function", ref, rtol=0.01, n_samples=5,
                   sampler=lambda rng: {"N": int(rng.integers(10**6, 10**7))})
    assert evaluate(big, lambda N: 2 * N / (4 * N + 2)).correct


def test_function_list_result_names_the_entry():
    m = msg(FN2, lambda x: [x, 3 * x])
    assert "返回值的第 2 个（T2）" in m and "超出了 ±1% 的容差" in m or "差了" in m
    m = msg(FN2, lambda x: [2 * x, 3 * x])
    assert "返回值的第 1 个（T1）" in m and "第 2 个也不对" in m


def test_rounding_hint_only_within_a_few_percent():
    ex = Exercise("97.7", "x", "number", lambda: 100.0, rtol=0.02, unit="token")
    assert "四舍五入" in msg(ex, 104.0)
    for far in (108.0, 120.0, 133.0):
        m = msg(ex, far)
        assert "四舍五入" not in m and "很接近" not in m and "方法上" in m
    assert "四舍五入" not in msg(ex, 267.0)  # +167 %: never "close"
    wide = Exercise("97.8", "x", "number", lambda: 100.0, rtol=0.1)
    assert "四舍五入" not in msg(wide, 112.0)


def test_reciprocal_complement_and_percent_for_ratios():
    r = Exercise("97.9", "x", "number", lambda: 2.0, rtol=0.02)
    assert "倒数" in msg(r, 0.5) and "两个 2 倍" not in msg(r, 0.5)
    f = Exercise("97.10", "x", "number", lambda: 1 / 3, rtol=0.02)
    assert "1 减去" in msg(f, 2 / 3)
    assert "百分数" in msg(f, 100 / 3)
    # a time that happens to be the reciprocal is not called a reciprocal
    t = Exercise("97.11", "x", "number", lambda: 2.0, rtol=0.02, unit="秒")
    assert "倒数" not in msg(t, 0.5)


def test_slip_inside_tolerance_cannot_be_declared_silently():
    """A slip within tolerance of the answer passes as correct: tests/test_exercises.py forbids
    such declarations; the judge simply never names it."""
    ex = Exercise("97.12", "x", "number", lambda: 100.0, rtol=0.05,
                  slips=(Slip("太松的容差。", lambda: 103.0),))
    assert evaluate(ex, 103.0).correct


def test_bad_declarations_rejected():
    with pytest.raises(ValueError, match="why"):
        Exercise("97.13", "x", "number", lambda: 1.0, why={"A": "x"})
    with pytest.raises(ValueError, match="not choices"):
        Exercise("97.14", "x", "choice", lambda: "A", choices=("A", "B"), why={"C": "x"})
    with pytest.raises(ValueError, match="edge_cases"):
        Exercise("97.15", "x", "number", lambda: 1.0, edge_cases=({"N": 1},))
    with pytest.raises(ValueError, match="Slip"):
        Exercise("97.16", "x", "number", lambda: 1.0, slips=(("x", 1.0),))
    with pytest.raises(ValueError):
        Slip("", 1.0)
    with pytest.raises(ValueError, match="context"):
        Exercise("97.17", "x", "number", lambda: 1.0, context="serving")


def test_grader_path_sees_edge_cases_and_slips():
    """The batch grader judges function cases with judge_function on sample_inputs: the same
    edge cases and slips as check()."""
    cases = [(kw, ("ok", (2 * kw["N"] - 1) / (4 * kw["N"]))) for kw in grading.sample_inputs(FN, 7)]
    r = grading.judge_function(FN, cases)
    assert not r.correct and r.message.startswith("❌ 你没算写回标量的 2 字节。")
    good = [(kw, ("ok", ref(**kw))) for kw in grading.sample_inputs(FN, 7)]
    assert grading.judge_function(FN, good).correct
    assert np.isfinite(ref(1))
