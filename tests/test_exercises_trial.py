"""The student trials' wrong answers, tried again (issue #19, "Done when").

The trials (shared/review/student-trial-ch01-03.md, student-trial-ch05-07.md) fed wrong answers to
``check()`` and recorded feedback that named the wrong cause or none. The exercises now ask other
instances than the chapter, so each probe here is the trial's *method* applied to the exercise's
current numbers; the feedback must name the real cause (the substring given), and must never be
the old "rounded too early" guess for a conceptual mistake.

``python tests/test_exercises_trial.py`` prints every probe with the feedback it gets.
"""
from __future__ import annotations

import pytest

from scaling_lib.exercises import get
from scaling_lib.grading import evaluate

C5E, W5E, C6E, L6E = 1.97e14, 8.2e11, 9.2e14, 9e10


def _ref(ex_id):
    return get(ex_id).reference()


def _with(ex_id, i, factor):
    r = list(_ref(ex_id))
    r[i] *= factor
    return r


def _fn(f):
    return f


# (id, what the trial did, the answer by that method for today's numbers, what the feedback must say)
PROBES = [
    # ---- chapter 1 -------------------------------------------------------------------------------
    ("1.1", "answer in ms", lambda: [x * 1e3 for x in _ref("1.1")], "毫秒"),
    ("1.1", "order reversed", lambda: _ref("1.1")[::-1], "顺序不对"),
    ("1.2", "the HBM bandwidth instead of the link", lambda: C6E / 1.6e12, "分母用了 HBM 带宽"),
    ("1.2", "both directions of the link", lambda: C6E / (2 * L6E), "两个方向"),
    ("1.3", "N additions instead of N-1", lambda: _fn(lambda N: 2 * N / (8 * N + 4)), "加法按 N 次算了"),
    ("1.3", "scalar write forgotten", lambda: _fn(lambda N: (2 * N - 1) / (8 * N)), "写回内存的 4 字节"),
    ("1.4", "f32 output bytes", lambda: _fn(lambda B, D, F: 2 * B * D * F / (B * D + D * F + 4 * B * F)),
     "输出按 f32"),
    ("1.6b", "output bytes forgotten",
     lambda: (lambda B, D, F: [2 * B * D * F / 3.94e14, (B * D + D * F) / W5E,
                               max(2 * B * D * F / 3.94e14, (B * D + D * F) / W5E),
                               2 * B * D * F / 3.94e14 + (B * D + D * F) / W5E])(384, 6144, 24576),
     "输出 BF 字节没有算进去"),
    ("1.6b", "bf16 peak",
     lambda: (lambda B, D, F: [2 * B * D * F / C5E, (B * D + D * F + B * F) / W5E,
                               max(2 * B * D * F / C5E, (B * D + D * F + B * F) / W5E),
                               2 * B * D * F / C5E + (B * D + D * F + B * F) / W5E])(384, 6144, 24576),
     "bf16 的峰值"),
    ("1.6c", "the B << D, F approximation", lambda: 3.94e14 / (2 * W5E), "渐近值"),
    ("1.8", "only the weight bytes DF",
     lambda: _fn(lambda B, D, F: 2 * B * D * F / max(2 * B * D * F / C5E, D * F / W5E)), "字节只算了权重"),
    ("1.8b", "the approximation C/(2W) for both", lambda: [C5E / (2 * W5E)] * 2, "渐近值"),
    ("1.9b", "wrong letter A", lambda: "A", "约掉了"),
    ("1.10", "the sparse peak", lambda: 4.5e15 / (2 * 8e12), "稀疏"),
    # ---- chapter 3 -------------------------------------------------------------------------------
    ("3.2", "seconds given in µs", lambda: _with("3.2", 1, 1e6), "单位"),
    ("3.2", "bf16 bytes", lambda: [x / 2 for x in _ref("3.2")], "bf16"),
    ("3.3", "total without the Z replica", lambda: _with("3.3", 1, 0.5), "Z 轴"),
    ("3.5", "bidirectional link", lambda: [2 * x for x in _ref("3.5")], "双向带宽"),
    ("3.6", "the ring formula V/W_ici (was accepted)", lambda: 2 * 4096 * 8192 / 9e10, "环绕链路"),
    ("3.6", "a measured-like value, +22%", lambda: _ref("3.6") * 1.22, "方法上有一处不同"),
    ("3.6c", "bandwidth only, latency ignored", lambda: 7 * (2 * 256 * 256 / 8) / 4.5e10, "只算了带宽"),
    ("3.6c", "a measured-like value, +167%", lambda: _ref("3.6c") * 2.67, "大了"),
    ("3.8", "(c) with V = the full array", lambda: _with("3.8", 2, 16), "(c) 大了约 16 倍"),
    ("3.8", "(a) with V = the shard before the gather", lambda: _with("3.8", 0, 0.25), "收集之前的分片"),
    ("3.9", "N-1 hops one way on each axis", lambda: 30e-6, "不是 15 跳"),
    ("3.10", "AllReduce counted once",
     lambda: _fn(lambda B, D, F, X: [max(2 * B * D * F / 4.59e14, 2 * D * F / 1.8e11),
                                     max(2 * B * D * F / (X * 4.59e14), 2 * B * F / 1.8e11)]), "只算了一次"),
    ("3.10", "exact ring factor (X-1)/X",
     lambda: _fn(lambda B, D, F, X: [max(2 * B * D * F / 4.59e14, (X - 1) / X * 2 * D * F / 1.8e11),
                                     max(2 * B * D * F / (X * 4.59e14), (X - 1) / X * 4 * B * F / 1.8e11)]),
     "(N−1)/N"),
    ("3.11", "wrong letter C (replicate)", lambda: "C", "不通信"),
    ("3.11b", "latency floor 64/2 hops",
     lambda: _fn(lambda I, J, K: [2 * I * J * K / (64 * 2.75e14), max(32e-6, 2 * I * K / (3 * 9e10))]),
     "不是 64/2"),
    ("3.12b", "wrong letter C", lambda: "C", "ReduceScatter 会让输出沿 Y 切开"),
    ("3.16c", "reciprocal (was a letter-free 0.5)", lambda: "B", "只省一半"),
    ("3.16e", "split ties (the chapter's other routing)", lambda: [4.0, 4.0, 4.0], "两个方向各分了一半"),
    # ---- chapter 5 (TPU v4p, the 7B GQA model) ------------------------------------------------------
    ("5.1", "both embedding matrices dropped", lambda: 3 * 32 * 4096 * 14336 + 2 * 32 * 4096 * 128 * 40,
     "两个嵌入矩阵都漏掉了"),
    ("5.1", "tied embeddings (one matrix)", lambda: 3 * 32 * 4096 * 14336 + 2 * 32 * 4096 * 128 * 40 + 32000 * 4096,
     "只算了一个嵌入矩阵"),
    ("5.4", "one axis instead of three in (1)", lambda: _with("5.4", 0, 3), "三个轴一起收集"),
    ("5.8", "50 % MFU forgotten", lambda: _ref("5.8") / 2, "MFU 是 50%"),
    ("5.14c", "the per cent form", lambda: _ref("5.14c") * 100, "百分"),
    ("5.14c", "the inverse ratio", lambda: 1 / _ref("5.14c"), "倒过来"),
    ("5.14d", "per host instead of per chip", lambda: 2.75e14 / 2.5e10, "每台主机有 4 颗芯片"),
    ("5.14e", "50 % MFU where 100 % is asked", lambda: _ref("5.14e") * 2, "100% MFU"),
    ("5.15", "no special case for n_fsdp = 1",
     lambda: _fn(lambda n_fsdp, n_tp, m_x, m_y, d_ff, chip: n_fsdp * 2.75e14 / 9e10 / m_x if chip == "v4p"
                 else n_fsdp * 1.0), "n_fsdp = 1"),
    ("5.17", "degree-1 sides communicate anyway",
     lambda: _fn(lambda kind, B, D, F, x, y: {"dp": [0.0, 8.0 * D * F], "fsdp": [4.0 * D * F, 8.0 * D * F],
                                              "tp": [4.0 * B * D, 4.0 * B * D],
                                              "fsdp_tp": [4.0 * B * D / x + 4.0 * D * F / y,
                                                          4.0 * B * D / x + 8.0 * D * F / y]}[kind]),
     "并行度为 1 的那一方不通信"),
    # ---- chapter 7 (TPU v6e, the 7B GQA model) --------------------------------------------------------
    ("7.1", "(c) halved like (b)", lambda: _with("7.1", 2, 0.5), "(c) 用 int8 运算时峰值也翻倍"),
    ("7.2", "the approximation C/W", lambda: 9.2e14 / 1.6e12, "近似式"),
    ("7.7", "the count rounded down", lambda: _with("7.7", 1, 13 / 14), "向上取整"),
    ("7.9b", "the weights left out of the HBM budget", lambda: [178, 44], "权重也占内存"),
    ("7.9c", "per-chip throughput", lambda: _with("7.9c", 1, 0.25), "整个 4 颗芯片"),
    ("7.11", "the per-shard threshold", lambda: _with("7.11", 0, 1 / 16), "每个分片的门槛"),
    ("7.13", "the saving instead of the remainder", lambda: 5 / 8, "省下的比例"),
    ("7.15", "the weights left out (passed at ±10 %)", lambda: [59, 476], "权重也占内存"),
    ("7.17", "bf16 weights", lambda: _ref("7.17") * (1 + 18.4 / (18.4 + 32 * 2.147)), "bf16"),
    ("7.18", "E/k forgotten in (c)", lambda: _with("7.18", 2, 1 / 8), "E/k"),
    ("7.18b", "causal halving", lambda: _fn(lambda T: 2 * 3.1274303488e10 * T + 2 * 64 * 32 * 256 * T ** 2),
     "因果掩码"),
    ("7.20b", "the F = 4D value", lambda: 72.0, "F = 4D"),
    ("7.21", "the speed-up instead of the cost", lambda: _with("7.21", 1, 1 / _ref("7.21")[1] ** 2), "加速比"),
]

# right answers the trials saw rejected: each must pass now, with its sentence
ALT_PROBES = [
    ("5.3e", "the power of two the chapter picks", lambda: 1024.0, "2 的幂"),
    ("5.9", "the power of two below F/alpha", lambda: 8.0, "2 的幂"),
    ("5.11", "the nearest power of two", lambda: 32.0, "2 的幂"),
    ("5.14b", "X = 1024 for the pod", lambda: 1024.0, "2 的幂"),
]


def _run(ex_id, make):
    return evaluate(get(ex_id), make())


@pytest.mark.parametrize("ex_id, what, make, says", PROBES, ids=[f"{p[0]}-{p[1]}" for p in PROBES])
def test_trial_probe_names_its_cause(ex_id, what, make, says):
    r = _run(ex_id, make)
    assert not r.correct, f"{ex_id} ({what}): passes"
    assert says in r.message, f"{ex_id} ({what}): feedback was {r.message}"
    assert "四舍五入" not in r.message, f"{ex_id} ({what}): blamed on rounding: {r.message}"


@pytest.mark.parametrize("ex_id, what, make, says", ALT_PROBES, ids=[f"{p[0]}-{p[1]}" for p in ALT_PROBES])
def test_trial_alternative_passes(ex_id, what, make, says):
    r = _run(ex_id, make)
    assert r.correct and says in r.message, f"{ex_id} ({what}): {r.message}"


if __name__ == "__main__":  # pragma: no cover - the record for the issue
    for ex_id, what, make, _ in PROBES + ALT_PROBES:
        print(f"{ex_id:6s} {what}: {_run(ex_id, make).message}")
