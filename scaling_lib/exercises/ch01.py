"""Chapter 1 exercises (spec 01, P1.1-P1.10; P1.11 is a free-text 思考题 and not graded).

Expected values are computed from scaling_lib; the spec's corrected answers (the book's numbers,
the parameters' defaults) are pinned in tests/test_exercises_01.py.

Per-student numbers (``params``, see scaling_lib.exercises): the size of the task in 1.1, the
shapes of the two-chip example (1.5, 1.5b), of the int8 instance (1.6b, 1.6c) and of the two
crossover curves (1.8b). Chip numbers stay the book's: they are facts the chapter teaches.
"""
from __future__ import annotations

import math

from .. import hardware, roofline
from . import Exercise, Param

V5E = "TPU v5e"


def _grid(mantissas, exponents):
    return tuple(float(f"{m}e{e}") for e in exponents for m in mantissas)


# 1.1: the task's FLOPs; 1.5: the two-chip matmul; 1.6b/1.6c: the int8 matmul; 1.8b: D = F sizes
FLOPS = {"flops": Param(1e12, _grid((1, 1.5, 2, 2.5, 3, 4, 5, 6, 8), (11, 12, 13)))}
TWO_CHIP = {"B5": Param(512, (128, 256, 384, 640, 768, 1024, 1536, 2048)),
            "D5": Param(8192, (4096, 6144, 7168, 10240, 12288, 16384)),
            "F5": Param(32768, (8192, 16384, 24576, 49152, 65536))}
INT8 = {"B6": Param(512, (64, 128, 256, 384, 768, 1024, 2048)),
        "D6": Param(4096, (1024, 2048, 3072, 6144, 8192)),
        "F6": Param(16384, (8192, 12288, 24576, 32768, 49152))}
CURVES = {"N_big": Param(4096, (3072, 6144, 8192, 12288, 16384)),
          "N_small": Param(1024, (768, 1280, 1536, 2048))}


def _p11(flops):
    return [flops / hardware.peak_flops("H100"), flops / hardware.peak_flops("v6e")]


def _p15(B5, D5, F5):
    r = roofline.sharded_contraction_time(B5, D5, F5, V5E)
    chip = hardware.get(V5E)
    d_thr = 2 * chip.peak() / chip.ici_link_bw_1way
    return [d_thr, r.t_math, r.t_comms]


def _p15_choice(B5, D5, F5):
    r = roofline.sharded_contraction_time(B5, D5, F5, V5E)
    return "A" if r.bound == "compute" else "B"


def _p16_instance(B6, D6, F6):
    r = roofline.matmul_time(B6, D6, F6, V5E, x="int8", w="int8", out="int8", compute="int8")
    return [r.t_math, r.t_comms, r.t_lower, r.t_upper]


def _p16c(D6, F6):
    return roofline.critical_batch(V5E, w="int8", compute="int8", x="int8", out="int8", D=D6, F=F6)


def _book_value(value, **at):
    """An older answer of the book, accepted only for the book's own numbers."""
    return lambda **kw: value if all(kw.get(k) == v for k, v in at.items()) else math.nan


def _p18b(N_big, N_small):
    return [float(b) for b in roofline.critical_batch(V5E, w="int8", D=[N_big, N_small], F=[N_big, N_small])]


def _explain_15(B5, D5, F5):
    bound = "计算受限" if _p15_choice(B5, D5, F5) == "A" else "通信受限"
    return f"门槛只和芯片有关（约 {_p15(B5, D5, F5)[0]:.0f}），与 B、F 无关；这里 D = {D5}，所以{bound}。"


def _explain_16b(B6, D6, F6):
    t = _p16_instance(B6, D6, F6)
    return "计算受限：下界就是 T_math。" if t[0] >= t[1] else "带宽受限：下界就是 T_comms。"


def _p18_ref(B, D, F):
    return roofline.attainable_flops_vs_batch(B, D, F, V5E, x="bf16", w="int8", out="bf16")


def _p19_choice():
    i = roofline.batched_weight_matmul_intensity(512, 4096, 16384, "int8")
    return "B" if i < hardware.critical_intensity(V5E, "int8") else "A"


def _ints(rng, lo, hi):
    return int(rng.integers(lo, hi))


EXERCISES = [
    Exercise("1.1", "times", "numbers", _p11, rtol=0.03, unit="秒", params=FLOPS,
             hints=((1e3, "单位看起来是毫秒：这里要秒。"),),
             explain="两颗芯片的峰值相差不到 10%，做完 {flops} 次运算的用时也只差这么多。"),
    Exercise("1.2", "i_crit", "number", lambda: hardware.critical_intensity(V5E), rtol=0.03,
             unit="FLOPs/字节", accept=(243.2,),
             explain="每从 HBM 读一个字节，至少要做约 240 次运算，MXU 才不会闲着。"),
    Exercise("1.3", "dot_intensity", "function", lambda N: roofline.dot_intensity(N, "bf16"),
             rtol=0.01, sampler=lambda rng: {"N": _ints(rng, 1, 10**7)}, unit="FLOPs/字节",
             explain="点积的算术强度是常数，再长也只有约 0.5 FLOPs/字节。"),
    Exercise("1.3b", "dot_limit", "number", lambda: 0.5, rtol=0.01, unit="FLOPs/字节",
             explain="N 趋于无穷时 (2N-1)/(4N+2) → 1/2。"),
    Exercise("1.4", "matmul_intensity", "function",
             lambda B, D, F: roofline.matmul_intensity(B, D, F), rtol=0.01,
             sampler=lambda rng: {"B": _ints(rng, 1, 4096), "D": _ints(rng, 128, 16384),
                                  "F": _ints(rng, 128, 65536)}, unit="FLOPs/字节",
             explain="B 远小于 D、F 时，分母里 DF 占大头，强度约等于 B。"),
    Exercise("1.4b", "b_crit", "number", lambda: roofline.critical_batch(V5E), rtol=0.03,
             unit="token", accept=(243.2,),
             explain="每芯片批次大小超过约 240 个 token，bf16 矩阵乘法才计算受限。"),
    Exercise("1.5", "two_chip", "numbers", _p15, rtol=0.03, unit="[D 门槛, T_math 秒, T_comms 秒]",
             params=TWO_CHIP, explain=_explain_15),
    Exercise("1.5b", "two_chip_bound", "choice", _p15_choice, choices=("A", "B"), params=TWO_CHIP,
             explain="比一比 T_math 和 T_comms：大的那个说了算。"),
    Exercise("1.6", "b_crit_int8", "number", lambda: roofline.critical_batch(V5E, w="int8", compute="int8"),
             rtol=0.03, unit="token", accept=(243.2,),
             explain="int8 权重加 int8 运算：字节和时间都减半，门槛几乎不变。"),
    Exercise("1.6b", "int8_times", "numbers", _p16_instance, rtol=0.03,
             unit="[T_math, T_comms, 下界, 上界]（秒）", params=INT8, explain=_explain_16b),
    Exercise("1.6c", "b_star_int8", "number", _p16c,
             rtol=0.03, unit="token", params={k: INT8[k] for k in ("D6", "F6")},
             accept=(_book_value(263.0, D6=4096, F6=16384),),
             explain="有限尺寸下的精确交点比渐近规则 240 大一些：输入和输出的字节也不是零。"),
    Exercise("1.7", "b_crit_w8", "number", lambda: roofline.critical_batch(V5E, w="int8", compute="bf16"),
             rtol=0.05, unit="token", accept=(121.6,),
             explain="只量化权重，HBM 字节减半而算力不变：门槛降到约 120。"),
    Exercise("1.8", "attainable", "function", _p18_ref, rtol=0.01,
             sampler=lambda rng: {"B": _ints(rng, 1, 512), "D": int(rng.choice([1024, 2048, 4096, 8192])),
                                  "F": int(rng.choice([1024, 4096, 16384]))}, unit="FLOPs/s",
             explain="先线性上升，碰到 1.97e14 的屋顶后变平。"),
    Exercise("1.8b", "crossovers", "numbers", _p18b, params=CURVES,
             rtol=0.05, unit="token（先大矩阵，后小矩阵）",
             explain="矩阵越小，输入输出占的字节越多，要更大的批次才能碰到屋顶。"),
    Exercise("1.9", "per_example_intensity", "number",
             lambda: roofline.batched_weight_matmul_intensity(512, 4096, 16384, "int8"),
             rtol=0.05, unit="OPs/字节",
             explain="每行都有自己的权重，没有任何复用：强度恒为约 2。"),
    Exercise("1.9b", "per_example_bound", "choice", _p19_choice, choices=("A", "B"),
             explain="强度与 B 无关，永远低于临界值：无论批次多大都是带宽受限。"),
    Exercise("1.10", "b_crit_h100", "number", lambda: roofline.critical_batch("H100"), rtol=0.05,
             unit="token", accept=(298.0,),
             explain="和 TPU 是同一个量级：约 300 个 token。"),
]
