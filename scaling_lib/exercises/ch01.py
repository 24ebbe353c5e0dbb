"""Chapter 1 exercises (spec 01, P1.1-P1.10; P1.11 is a free-text 思考题 and not graded).

The chapter works its examples on the v5e and the H100; every exercise here asks another
instance (another chip, dtype or size), so that no expected value is a number the chapter prints
(tests/test_exercises.py checks it against the ledger and the chapter's outputs). Each exercise
declares its likely slips (``Slip``: the wrong method and the answer it gives) and the valid
alternatives it accepts (``Alt``); the choice items ask which resource binds and why.

Per-student numbers (``params``, see scaling_lib.exercises): the task size in 1.1, the two-chip
shapes (1.5, 1.5b), the int8 instance (1.6b, 1.6c), the crossover sizes (1.8b) and the adapter
shape (1.9). Chip numbers stay fixed: they are facts the chapter teaches.
"""
from __future__ import annotations

import math

from .. import hardware, roofline
from . import Alt, Exercise, Param, Slip

V5E, V5P, V6E = "TPU v5e", "TPU v5p", "TPU v6e"


def _grid(mantissas, exponents):
    return tuple(float(f"{m}e{e}") for e in exponents for m in mantissas)


FLOPS = {"flops": Param(5e14, _grid((1.5, 2.5, 3, 4, 6, 8), (13, 14, 15)))}
TWO_CHIP = {"B5": Param(384, (128, 256, 640, 768, 1536, 3072)),
            "D5": Param(16384, (8192, 12288, 24576, 32768, 49152)),
            "F5": Param(28672, (14336, 20480, 36864, 53248))}
INT8 = {"B6": Param(384, (320, 512, 640, 1280, 2560)),
        "D6": Param(6144, (1536, 2560, 3072, 5120)),
        "F6": Param(24576, (12288, 14336, 20480, 28672, 32768))}
CURVES = {"N_big": Param(6144, (3072, 5120, 7168, 12288)),
          "N_small": Param(1536, (768, 1280, 2560, 3584))}
DOT = {"N3": Param(1e8, (5e7, 1.5e8, 2e8, 3e8, 4e8, 6e8, 8e8))}
# (the intensity hardly depends on D: only the rank is drawn, so a copied answer is wrong)
LORA = {"r9": Param(16, (4, 8, 12, 24, 32, 48, 64))}

C5E, W5E, L5E = 1.97e14, 8.2e11, 4.5e10
C_H100, W_H100 = 9.89e14, 3.35e12


# ---- 1.1 ----------------------------------------------------------------------------------------

def _p11(flops):
    return [flops / hardware.peak_flops("H100"), flops / hardware.peak_flops(V6E)]


# ---- 1.2 ----------------------------------------------------------------------------------------

def _p12():
    return hardware.critical_intensity(V6E, link="ici_1way")


# ---- 1.3 ----------------------------------------------------------------------------------------

def _dot_ref(N):
    return roofline.dot_intensity(N, "f32")


# ---- 1.4 ----------------------------------------------------------------------------------------

def _p14_ref(B, D, F):
    return roofline.matmul_intensity(B, D, F, x="fp8", w="fp8", out="bf16")


def _mm_int(bx, bw, bo):
    return lambda B, D, F: 2 * B * D * F / (bx * B * D + bw * D * F + bo * B * F)


# ---- 1.5 ----------------------------------------------------------------------------------------

def _p15(B5, D5, F5, chip=V6E):
    c = hardware.get(chip)
    r = roofline.sharded_contraction_time(B5, D5, F5, c)
    return [2 * c.peak() / c.ici_link_bw_1way, r.t_math, r.t_comms]


def _p15_choice(B5, D5, F5):
    t = _p15(B5, D5, F5)
    return "A" if t[1] >= t[2] else "B"


def _explain_15(B5, D5, F5):
    t = _p15(B5, D5, F5)
    bound = "计算受限" if t[1] >= t[2] else "通信受限"
    return f"门槛只和芯片有关（v6e 约 {t[0]:.0f}），与 B、F 无关；这里 D = {D5}，所以{bound}。"


def _why15(letter):
    def f(B5, D5, F5):
        thr = _p15(B5, D5, F5)[0]
        side = "大于" if D5 > thr else "小于"
        if letter == "A":
            return (f"计算受限要 T_math ≥ T_comms，也就是 D 超过门槛 2C/W_link ≈ {thr:.0f}；"
                    f"这里 D = {D5}，{side}门槛。")
        if letter == "B":
            return (f"通信受限要 T_comms > T_math，也就是 D 低于门槛 2C/W_link ≈ {thr:.0f}；"
                    f"这里 D = {D5}，{side}门槛。")
        return ("B 在比值里约掉了：每颗芯片的运算和要发的部分和都正比于 B，批次再大也不改变谁受限，"
                "只有收缩长度 D 决定。")
    return f


# ---- 1.6 ----------------------------------------------------------------------------------------

def _p16_instance(B6, D6, F6):
    r = roofline.matmul_time(B6, D6, F6, V5E, x="int8", w="int8", out="int8", compute="int8")
    return [r.t_math, r.t_comms, r.t_lower, r.t_upper]


def _times(tm, tc):
    return [tm, tc, max(tm, tc), tm + tc]


def _p16c(D6, F6):
    return roofline.critical_batch(V5E, w="int8", compute="int8", x="int8", out="int8", D=D6, F=F6)


def _bstar(D, F, C, W, bx, bw, bo):
    den = 2 * D * F / C - (bx * D + bo * F) / W
    return bw * D * F / W / den if den > 0 else math.inf


# ---- 1.7, 1.8 -----------------------------------------------------------------------------------

def _p17():
    return roofline.critical_batch("H100", w="int8", compute="bf16")


def _p18_ref(B, D, F):
    return roofline.attainable_flops_vs_batch(B, D, F, V5E, x="bf16", w="int8", out="bf16")


def _attain(bytes_fn, cap=True):
    def f(B, D, F):
        t_m = 2 * B * D * F / C5E
        t_c = bytes_fn(B, D, F) / W5E
        return 2 * B * D * F / (max(t_m, t_c) if cap else t_c)
    return f


def _p18b(N_big, N_small):
    return [float(b) for b in roofline.critical_batch(V5E, w="int8", D=[N_big, N_small], F=[N_big, N_small])]


# ---- 1.9 ----------------------------------------------------------------------------------------

def _p19(r9, D9=4096):
    # per-example int8 LoRA adapters A[B, D, r]: x bf16 [B, D] -> bf16 [B, r]
    return 2 * D9 * r9 / (2 * D9 + D9 * r9 + 2 * r9)


def _p19_choice():
    i = _p19(16)
    return "B" if i < hardware.critical_intensity(V5E) else "A"


# ---- 1.10 ---------------------------------------------------------------------------------------

def _p110():
    return roofline.critical_batch("B200", w="fp8", compute="bf16")


def _ints(rng, lo, hi):
    return int(rng.integers(lo, hi))


EXERCISES = [
    Exercise("1.1", "times", "numbers", _p11, rtol=0.03, unit="秒", params=FLOPS, labels=("H100", "v6e"),
             slips=(Slip("运算数已经按 FLOPs 数好了（乘加算 2 次），不要再乘 2。",
                         lambda flops: [2 * flops / C_H100, 2 * flops / 9.2e14]),
                    Slip("你算的是峰值除以运算数（每秒能做几次这样的任务）；时间是运算数除以峰值。",
                         lambda flops: [C_H100 / flops, 9.2e14 / flops])),
             explain="两颗芯片的峰值相差不到 10%，做完 {flops} 次运算的用时也只差这么多。"),
    Exercise("1.2", "i_crit_ici", "number", _p12, rtol=0.03, unit="FLOPs/字节",
             slips=(Slip("分母用了 HBM 带宽：这里的数据经一条 ICI 链路从邻居流过来，瓶颈是那条链路。",
                         lambda: 9.2e14 / 1.6e12),
                    Slip("把链路两个方向的带宽加在一起了：数据只从邻居往这边流，只用得上一个方向。",
                         lambda: 9.2e14 / 1.8e11)),
             explain="链路比 HBM 慢十几倍，临界算术强度也就高十几倍：约一万 FLOPs/字节。"),
    Exercise("1.3", "dot_intensity", "function", _dot_ref, rtol=0.01, unit="FLOPs/字节",
             sampler=lambda rng: {"N": _ints(rng, 1, 10**7)},
             edge_cases=({"N": 1}, {"N": 2}, {"N": 3}, {"N": 8}),
             slips=(Slip("结果标量写回内存的 4 字节没有算进去（N 小时看得出来）。",
                         lambda N: (2 * N - 1) / (8 * N)),
                    Slip("加法按 N 次算了：N 个数相加只要 N-1 次（N 小时看得出来）。",
                         lambda N: 2 * N / (8 * N + 4)),
                    Slip("按 bf16 的 2 字节算了：题目的向量是 fp32，每个数 4 字节。",
                         lambda N: (2 * N - 1) / (4 * N + 2))),
             explain="点积的算术强度是常数：fp32 时再长也只有约 0.25 FLOPs/字节。"),
    Exercise("1.3b", "t_dot", "number", lambda N3: roofline.roofline(2 * N3 - 1, 8 * N3 + 4, V5E).t_lower,
             rtol=0.03, unit="秒", params=DOT,
             slips=(Slip("这是计算时间 T_math：点积的强度只有约 0.25，远低于临界强度，时间由搬运字节决定。",
                         lambda N3: (2 * N3 - 1) / C5E),
                    Slip("字节数少算了一半：两个向量都要读，而且每个 fp32 数占 4 字节。",
                         lambda N3: 4 * N3 / W5E)),
             explain="强度约 0.25，带宽受限：时间就是搬运两个向量的时间，算力几乎闲着。"),
    Exercise("1.4", "matmul_intensity", "function", _p14_ref, rtol=0.01, unit="FLOPs/字节",
             sampler=lambda rng: {"B": _ints(rng, 1, 4096), "D": _ints(rng, 128, 16384),
                                  "F": _ints(rng, 128, 65536)},
             edge_cases=({"B": 1, "D": 128, "F": 128}, {"B": 4096, "D": 128, "F": 128},
                         {"B": 8192, "D": 256, "F": 8192}),
             slips=(Slip("输出按 fp8 的 1 字节算了：题目说输出是 bf16，每个元素 2 字节。", _mm_int(1, 1, 1)),
                    Slip("三者都按 bf16 的 2 字节算了：输入和权重是 fp8，每个元素 1 字节。", _mm_int(2, 2, 2)),
                    Slip("写出的输出没有算进字节数。", lambda B, D, F: 2 * B * D * F / (B * D + D * F)),
                    Slip("输出按 f32 的 4 字节算了：累加在 f32 里做，写回 HBM 的是 bf16。", _mm_int(1, 1, 4))),
             explain="B 远小于 D、F 时，分母里读权重的 DF 字节占大头，强度约为 2B。"),
    Exercise("1.4b", "fp8_intensity_rule", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "强度约等于 B 是 bf16 权重（每个 2 字节）时的结论；fp8 权重每个只占 1 字节，"
                       "同样的 2BDF 次运算只读 DF 字节。",
                  "C": "B/2 要权重每个占 4 字节（f32）才会出现。",
                  "D": "DF/(D+F) 这类式子是 B 趋于无穷时强度的上限，不是 B 远小于 D、F 时的近似。"},
             explain="B ≪ D、F 时读权重的 DF 字节占大头，2BDF/DF = 2B。"),
    Exercise("1.5", "two_chip", "numbers", _p15, rtol=0.03, unit="[D 门槛, T_math 秒, T_comms 秒]",
             params=TWO_CHIP, labels=("D 门槛", "T_math", "T_comms"),
             slips=(Slip("用了第1章 v5e 的数：这道题是两颗 v6e（峰值 9.2e14，单向链路 9e10 B/s）。",
                         lambda B5, D5, F5: _p15(B5, D5, F5, V5E)),
                    Slip("把两个方向加起来当成了可用带宽：每颗芯片只往对方发，只用得上一个方向。",
                         lambda B5, D5, F5: [4 * 9.2e14 / 9e10, B5 * D5 * F5 / 9.2e14, B5 * F5 / 9e10]),
                    Slip("每颗芯片只算自己那一半 D：运算量是 2B(D/2)F = BDF，不是 2BDF。",
                         lambda B5, D5, F5: [9.2e14 / 9e10, 2 * B5 * D5 * F5 / 9.2e14, 2 * B5 * F5 / 9e10])),
             explain=_explain_15),
    Exercise("1.5b", "two_chip_bound", "choice", _p15_choice, choices=("A", "B", "C"), params=TWO_CHIP,
             why={"A": _why15("A"), "B": _why15("B"), "C": _why15("C")},
             explain="比一比 D 和门槛 2C/W_link：B 和 F 在比值里约掉了。"),
    Exercise("1.6", "int8_rule", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "只看了字节：权重字节确实减半，强度约为 2B；可 int8 的峰值也翻倍，"
                       "要超过的临界强度 C_int8/W 也翻倍，两边抵消。",
                  "C": "只看了算力：int8 峰值翻倍，但每个数也只占 1 字节，强度同样翻倍。",
                  "D": "B ≪ D、F 的近似里 D、F 约掉了；只有精确交点 B* 才和 D、F 有关（见 1.6c）。"},
             explain="B_crit = b_w·C/(2W)：字节减半、算力翻倍，门槛不变（v5p 约 164）。"),
    Exercise("1.6b", "int8_times", "numbers", _p16_instance, rtol=0.03,
             unit="[T_math, T_comms, 下界, 上界]（秒）", params=INT8,
             labels=("T_math", "T_comms", "下界", "上界"),
             slips=(Slip("用了 bf16 的峰值 1.97e14：这里是 int8 运算，峰值 3.94e14 OPs/s。",
                         lambda B6, D6, F6: _times(2 * B6 * D6 * F6 / C5E,
                                                   (B6 * D6 + D6 * F6 + B6 * F6) / W5E)),
                    Slip("字节按 bf16 的 2 字节算了：三个矩阵都是 int8，每个元素 1 字节。",
                         lambda B6, D6, F6: _times(2 * B6 * D6 * F6 / 3.94e14,
                                                   2 * (B6 * D6 + D6 * F6 + B6 * F6) / W5E)),
                    Slip("写出的输出 BF 字节没有算进去。",
                         lambda B6, D6, F6: _times(2 * B6 * D6 * F6 / 3.94e14, (B6 * D6 + D6 * F6) / W5E)),
                    Slip("下界和上界弄反了：完全重叠时是 max（下界），完全不重叠时是和（上界）。",
                         lambda B6, D6, F6: (lambda t: [t[0], t[1], t[3], t[2]])(_p16_instance(B6, D6, F6)))),
             explain=lambda B6, D6, F6: ("计算受限：下界就是 T_math。" if _p16_instance(B6, D6, F6)[0]
                                         >= _p16_instance(B6, D6, F6)[1] else "带宽受限：下界就是 T_comms。")),
    Exercise("1.6c", "b_star_int8", "number", _p16c, rtol=0.02, unit="token",
             params={k: INT8[k] for k in ("D6", "F6")},
             slips=(Slip("这是 B ≪ D、F 的渐近值 C/(2W)：题目要精确交点，输入和输出的字节也要算。",
                         lambda D6, F6: 3.94e14 / (2 * W5E)),
                    Slip("输出的 BF 字节没有算进去。",
                         lambda D6, F6: _bstar(D6, F6, 3.94e14, W5E, 1, 1, 0)),
                    Slip("字节按 bf16 的 2 字节算了：三个矩阵都是 int8。",
                         lambda D6, F6: _bstar(D6, F6, 3.94e14, W5E, 2, 2, 2))),
             explain="有限尺寸下的精确交点比渐近值大一些：输入和输出的字节也不是零。"),
    Exercise("1.7", "b_crit_w8_h100", "number", _p17, rtol=0.03, unit="token",
             slips=(Slip("这是 bf16 权重时的门槛 C/W：只把权重量化成 int8、运算仍用 bf16 时，"
                         "读权重的字节减半而峰值不变，门槛减半（也别用 int8 或带稀疏的峰值）。",
                         lambda: C_H100 / W_H100),
                    Slip("用了 TPU v5e 的数：这道题是 H100（稠密 bf16 9.89e14，HBM 3.35e12 B/s）。",
                         lambda: C5E / (2 * W5E))),
             explain="只量化权重让 H100 的门槛也减半：约 150 个 token。"),
    Exercise("1.8", "attainable", "function", _p18_ref, rtol=0.01, unit="FLOPs/s",
             sampler=lambda rng: {"B": _ints(rng, 1, 512), "D": int(rng.choice([1024, 2048, 4096, 8192])),
                                  "F": int(rng.choice([1024, 4096, 16384]))},
             edge_cases=({"B": 1, "D": 1024, "F": 1024}, {"B": 40, "D": 1024, "F": 16384},
                         {"B": 600, "D": 4096, "F": 4096}),
             slips=(Slip("字节只算了权重 DF：输入 2BD 和输出 2BF 也要读写（B 大时差得多）。",
                         _attain(lambda B, D, F: D * F)),
                    Slip("权重按 bf16 的 2 字节算了：这里权重是 int8。",
                         _attain(lambda B, D, F: 2 * B * D + 2 * D * F + 2 * B * F)),
                    Slip("没有封顶：可达算力不会超过峰值 1.97e14，要除以 max(T_math, T_comms)。",
                         _attain(lambda B, D, F: 2 * B * D + D * F + 2 * B * F, cap=False))),
             explain="先线性上升，碰到 1.97e14 的屋顶后变平。"),
    Exercise("1.8b", "crossovers", "numbers", _p18b, params=CURVES, rtol=0.02,
             unit="token（先大矩阵，后小矩阵）", labels=("大矩阵", "小矩阵"),
             slips=(Slip("这是 B ≪ D、F 的渐近值 C/(2W)：题目要曲线碰到屋顶的精确批次。",
                         lambda N_big, N_small: [C5E / (2 * W5E)] * 2),
                    Slip("权重按 bf16 的 2 字节算了：这里权重是 int8（1 字节）。",
                         lambda N_big, N_small: [_bstar(n, n, C5E, W5E, 2, 2, 2) for n in (N_big, N_small)]),
                    Slip("输入和输出按 1 字节算了：激活值和输出都是 bf16。",
                         lambda N_big, N_small: [_bstar(n, n, C5E, W5E, 1, 1, 1) for n in (N_big, N_small)])),
             explain="矩阵越小，输入输出占的字节越多，要更大的批次才能碰到屋顶。"),
    Exercise("1.8c", "small_matrix_bound", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "B 变大，强度也不会无限增长：分子分母都正比于 B 的那部分占满以后，"
                       "强度趋于上限 DF/(D+F) = 192，低于临界的 240。",
                  "C": "int8 权重让读权重的字节减半，但这里 D、F 小，输入输出的字节才是大头。",
                  "D": "D = F 时看的是 DF/(D+F) 和 240 比；哪一边大不取决于 F 比 D 大还是小。"},
             explain="强度的上限 DF/(D+F) = 192 < 240：B 再大也碰不到屋顶。"),
    Exercise("1.9", "adapter_intensity", "number", _p19, params=LORA, rtol=0.01, unit="FLOPs/字节",
             slips=(Slip("适配器按所有样本共用一份算了：题目里每个样本有自己的一份，权重字节是 B·D·r。",
                         lambda r9, D9=4096: 2 * 512 * D9 * r9 / (2 * 512 * D9 + D9 * r9 + 2 * 512 * r9)),
                    Slip("只算了读适配器的字节：输入 x 和输出也要读写。", lambda r9: 2.0),
                    Slip("输入和输出按 1 字节算了：它们是 bf16。",
                         lambda r9, D9=4096: 2 * D9 * r9 / (D9 + D9 * r9 + r9))),
             explain="每个样本读自己的适配器，没有分摊：强度不到 2，与批次无关。"),
    Exercise("1.9b", "adapter_bound", "choice", _p19_choice, choices=("A", "B", "C"),
             why={"A": "B 在强度里约掉了：每个样本都要读一遍自己的适配器，批次再大也摊不薄。",
                  "C": "r 越大强度越接近 2，但不会超过 2（int8 权重每个元素做 2 次运算、读 1 字节），"
                       "离 240 差两个数量级。"},
             explain="强度与 B 无关、最多约 2，永远带宽受限。"),
    Exercise("1.10", "b_crit_b200_w8", "number", _p110, rtol=0.03, unit="token",
             slips=(Slip("结果是正确值的 2 倍：要么用了带稀疏的 4.5e15（稠密峰值是它的一半），"
                         "要么没算 fp8 权重字节减半。", lambda: 2.25e15 / 8e12),
                    Slip("两个 2 倍叠在一起了：稠密峰值是标称值的一半，fp8 权重的字节也是 bf16 的一半。",
                         lambda: 4.5e15 / 8e12)),
             explain="B200 上只量化权重时，门槛约 140 个 token。"),
]
