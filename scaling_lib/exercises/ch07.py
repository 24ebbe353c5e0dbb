"""Chapter 7 exercises (spec 07, P7.1-P7.21). The free-text part of P7.17 is a 思考题 (not graded).

The chapter works the spec's problems itself on TPU v5e (LLaMA-2-13B, the 30B pop quiz, the
chapter's model on a 4x4); every exercise here asks the same questions on **TPU v6e** (C = 9.2e14,
W_hbm = 1.6e12, 32 GB per chip, ICI 9e10 one way) and for a 7B model with grouped-query attention,
with other sizes where the chapter prints a number, so that no expected value is a number chapters
4 and 7 print (tests/test_exercises.py checks it). Each exercise declares its likely slips
(``Slip``); the choice items ask what binds and why, with feedback for every wrong reason.

Expected values are computed from scaling_lib.inference; hand-computed answers are pinned in
tests/test_exercises.py.

Per-student numbers (``params``, see scaling_lib.exercises): the FFN of 7.2, the query heads of
7.4b, the big batch of 7.5, the 7B model's F (7.6-7.9c: its size, hence the balance point and the
batches that fit), the prefill length of 7.8, the batch of 7.9c, 7.10, 7.11/7.11b and 7.17, the F
of 7.12 and 7.20b, the request of 7.13, the context of 7.15 and 7.17, the chip count of 7.16 and the
acceptance rates of 7.21 and 7.21b. Chips (v6e), links and the section's fixed models stay the
book's.
"""
from __future__ import annotations

import math

from .. import hardware, inference as inf
from . import Exercise, Param, Slip

V5E, V6E = "TPU v5e", "TPU v6e"
C6, C6_8, W6, HBM6, W1_6 = 9.2e14, 1.84e15, 1.6e12, 32e9, 9e10
CH7 = inf.BOOK_CH7_MODEL
M7 = inf.ServedModel.from_dims("7B GQA", L=32, D=4096, F=14336, N=32, K=8, H=128, V=32000)
M7_MHA = inf.ServedModel("7B, K = 32", M7.params, 2 * 32 * 32 * 128)


# grids: every value keeps the book's method valid (7.5 stays weight-bound up to B = 512, 7.11 stays
# latency-bound, 7.20b never hits the F = 4D slip or the book's 81, 7.7's count is never within 0.03
# of an integer, 7.13 never has s = n/2, 7.17's weights stay > 5% of the bytes so the bf16 slip is
# caught, 7.21's a >= 0.65 so the gamma-exponent slip is > 3% off); none is a worked number of
# chapter 7 (D = 5120 / 8192, F = 13824 / 28672), and no drawn answer is a number chapters 4 and 7
# print (tests/test_exercises.py; the values that did were taken out)
FFN2 = {"D2": Param(4096, (3072, 6144, 8192)), "F2": Param(14336, (8192, 11008, 12288, 20480, 24576))}
HEADS4 = {"N4": Param(128, (32, 48, 56, 64, 80, 96, 112, 160, 192))}
BIG5 = {"B5": Param(256, (64, 96, 128, 192, 320, 384, 448, 512))}
F7 = {"F7": Param(14336, (10240, 11008, 13312, 15360, 17408, 18432, 19456))}
# 7.9b's answer hardly moves with F (the weights are a small share of the HBM): its chip count varies
# too, so a classmate's answer passes only when both numbers match (grading copies)
N9B = {"n9b": Param(6, (7, 8, 10, 12, 16))}
T8 = {"T8": Param(8192, (1024, 1536, 2048, 3072, 4096, 6144, 12288, 16384))}
B9C = {"B9c": Param(32, (8, 12, 16, 24, 40, 48, 64))}
B10 = {"B10": Param(16, (4, 6, 10, 12, 20, 24, 40, 48))}
B11 = {"B11": Param(32, (8, 12, 24, 40, 48, 64, 80, 96))}
F12 = {"F12": Param(14336, (8192, 11008, 12288, 16384, 20480, 24576, 28672, 32768))}
REQ13 = {"n13": Param(8, (9, 11, 12, 16, 20, 24, 32)), "s13": Param(5, (2, 3, 7))}
S15 = {"S15": Param(8192, (2048, 3072, 4096, 6144, 12288, 16384, 24576, 32768))}
N16 = {"n16": Param(16, (2, 4, 8, 32, 64, 128, 256))}
RUN17 = {"B17": Param(32, (8, 12, 24, 48, 64)), "S17": Param(8192, (2048, 4096, 6144, 12288))}
F20 = {"F20": Param(14336, (8192, 9216, 10240, 11008, 12288, 22528, 26624, 28672))}
A21 = {"a21": Param(0.7, (0.65, 0.68, 0.75, 0.78, 0.8, 0.85, 0.9, 0.95))}
# 7.21b: the cost per token crosses 1 target step near a = 0.2; every value is > 12% from it
# (a <= 0.1: not worth it, B; a >= 0.35: still worth a little, A)
A21B = {"a21b": Param(0.3, (0.05, 0.1, 0.35, 0.4, 0.45, 0.5))}


def _m7(F7=14336):
    return inf.ServedModel.from_dims("7B GQA", L=32, D=4096, F=F7, N=32, K=8, H=128, V=32000)


def _m7_mha(F7=14336):
    return inf.ServedModel("7B, K = 32", _m7(F7).params, 2 * 32 * 32 * 128)


def _moe():
    return inf.ServedModel.from_dims("ch7 MoE", L=64, D=4096, F=16384, N=32, K=8, H=256,
                                     V=32128, tied=True, n_experts=16, top_k=2)


def _p71():
    return [inf.critical_batch(V6E, w, c) for w, c in (("bf16", "bf16"), ("int8", "bf16"), ("int8", "int8"))]


def _p73b():
    return [2 * inf.critical_batch(V6E), float(inf.attention_intensity(8192, 1))]


def _p75(B5=256, weights="int8"):
    q = inf.POP_QUIZ_30B
    a = inf.decode_step_time(q, 4, 8192, 16, V6E, weights, "int8", "int8", check_memory=False)
    b = inf.decode_step_time(q, B5, 8192, 16, V6E, weights, "int8", "int8", check_memory=False)
    return [float(a.total_s) * 1e3, float(b.total_s) * 1e3]


def _kv_seq(m=M7):
    return float(inf.kv_bytes_per_seq(m, 8192))


def _p77(F7=14336):
    return [_kv_seq(), math.ceil(float(inf.kv_weight_balance_batch(_m7(F7), 8192)))]


def _step_ref(B, kv_seq, param_bytes, n, W):
    return (B * kv_seq + param_bytes) / (n * W)


def _p79b(F7=14336, n9b=6):
    return [inf.max_batch_size(_m7(F7), 8192, n9b, V6E), inf.max_batch_size(_m7_mha(F7), 8192, n9b, V6E)]


def _p79c(F7=14336, B9c=32, n_out=4, kv=True):
    t = inf.min_step_time(2 * _m7(F7).params, _kv_seq() if kv else 0, B9c, 4, V6E)
    return [t * 1e3, B9c / t * n_out / 4]


def _p711(B11=32):
    return [float(inf.latency_bound_bytes(16, V6E)), B11 * 4096 * 1.0]


def _p711b(B11=32):
    return "A" if bool(inf.collective_is_latency_bound(B11 * 4096, 16, V6E)) else "B"


def _p712(F12=14336, ways=4):
    return inf.min_step_time(2 * (2 * 4096 * F12) / ways, 0, 1, 1, V6E)


def _p715(S15=8192):
    k1 = inf.ServedModel("K=1", CH7.params, 2 * 64 * 1 * 256)
    return [inf.max_batch_size(CH7, S15, 4, V6E, "int8", "int8"),
            inf.max_batch_size(k1, S15, 4, V6E, "int8", "int8")]


def _p716(n16=16):
    p = CH7.params
    return [inf.min_step_time(p, 0, 1, n16, V6E) * 1e3, inf.min_step_time(2 * p, 0, 1, n16, V6E) * 1e3,
            inf.min_step_time(p, 0, 1, 1, V6E) * 1e3]


def _p717(B17=32, S17=8192, weights="int8"):
    return float(inf.decode_step_time(CH7, B17, S17, 16, V6E, weights, "int8", check_memory=False).total_s) * 1e3


def _p718():
    m = _moe()
    return [m.params, m.active_params, inf.moe_critical_batch(16, 2, V6E), m.kv_elems_per_token]


def _moe_flops_ref(T):
    m = _moe()
    return 2 * m.active_params * T + 4 * 64 * 32 * 256 * T ** 2


def _p719():
    m = _moe()
    per_chip = m.params * 2 / 128
    need = inf.min_chips(m, "bf16")
    return [inf.min_step_time(per_chip, 0, 1, 1, V5E) * 1e3,
            (hardware.get(V5E).hbm_bytes - per_chip) / 1e9, inf.smallest_slice(need)]


def _t2d_ref(B, D, F, X, YZ, W):
    return 2 * B * D / (X * W) + 4 * B * F / (YZ * W)


def _p721(a21=0.7, g=5):
    return [float(inf.spec_decode_expected_tokens(a21, g)),
            float(inf.spec_decode_time_per_token(a21, g, 0.05, 1.0))]


def _t721b(a21b=0.3):
    return float(inf.spec_decode_time_per_token(a21b, 5, 0.05, 1.0))


def _p721b_choice(a21b=0.3):
    return "A" if _t721b(a21b) < 1 else "B"


def _why721b(letter):
    def f(a21b):
        t = _t721b(a21b)
        if letter == "A":
            return (f"接受率 {a21b} 时每次验证平均只产出约 {float(inf.spec_decode_expected_tokens(a21b, 5)):.2f} 个 "
                    f"token，每个 token 约 {t:.2f} 个目标步，比 1 多：5 个草稿的成本没赚回来，比不用还慢。")
        return (f"每次验证至少产出 1 个 token，草稿又很便宜：接受率 {a21b} 时每个 token 约 {t:.2f} 个目标步，"
                "仍比 1 少。")
    return f


def _rint(rng, lo, hi):
    return int(rng.integers(lo, hi))


def _swap(ref, i, v):
    out = list(ref)
    out[i] = v
    return out


EXERCISES = [
    Exercise("7.1", "b_crit", "numbers", _p71, rtol=0.03, unit="token", labels=("(a)", "(b)", "(c)"),
             slips=(Slip("(b) 只量化权重时每个字节只做一半的运算：权重字节减半、峰值不变，门槛减半。",
                         lambda: (lambda r: _swap(r, 1, r[0]))(_p71())),
                    Slip("(c) 用 int8 运算时峰值也翻倍：字节减半、算力翻倍，门槛回到 (a)。",
                         lambda: (lambda r: _swap(r, 2, r[1]))(_p71())),
                    Slip("用了 v5e 的数：这道题是 v6e（9.2e14 FLOPs/s，HBM 1.6e12 B/s）。",
                         lambda: [1.97e14 / 8.2e11, 1.97e14 / 8.2e11 / 2, 1.97e14 / 8.2e11])),
             explain="只量化权重时门槛减半；运算也用 int8 时峰值翻倍，又回到 C/W。"),
    Exercise("7.1b", "why_c", "choice", lambda: "A", choices=("A", "B", "C"),
             why={"B": "int8 运算确实更快，可这会让计算时间变短、更难计算受限；是字节也减半把门槛拉了回来。",
                  "C": "这道题只看 FFN 的权重矩阵乘法，KV 缓存不在里面。"},
             explain="门槛是 C·b_w/(2W)：C 翻倍、b_w 减半，两者抵消。"),
    Exercise("7.2", "b_exact", "number", lambda D2, F2: float(inf.exact_critical_batch(D2, F2, V6E)), rtol=0.02,
             unit="token", params=FFN2,
             slips=(Slip("这是 B ≪ D、F 的近似式 C/W：题目要精确值，激活的读写也占带宽。", lambda D2, F2: C6 / W6),),
             explain="精确的门槛比近似的 575 大不少：v6e 的 C/W 大，D、F 又不够大，激活的读写不能忽略。"),
    Exercise("7.3", "attn_intensity", "function", lambda S, T: S * T / (S + T), rtol=0.01,
             sampler=lambda rng: {"S": _rint(rng, 1, 100_000), "T": _rint(rng, 1, 100_000)},
             edge_cases=({"S": 4096, "T": 4096}, {"S": 8192, "T": 1}, {"S": 1, "T": 512}),
             slips=(Slip("T/2 只在 S = T 时成立：一般是 ST/(S + T)。", lambda S, T: T / 2),
                    Slip("分母只算了 K、V 的字节：Q 和输出（正比于 T）也要读写。", lambda S, T: float(T))),
             unit="FLOPs/字节", explain="S = T 时是 T/2；T = 1 时约为 1。"),
    Exercise("7.3b", "attn_numbers", "numbers", _p73b, rtol=0.03, unit="[token, FLOPs/字节]",
             labels=("预填充门槛", "解码强度"),
             slips=(Slip("预填充注意力的强度是 T/2（S = T），要 T/2 > C/W，即 T > 2C/W。",
                         lambda: (lambda r: _swap(r, 0, r[0] / 2))(_p73b())),),
             explain="预填充的提示词超过约 1150 个 token 就计算受限；解码注意力的强度约为 1，和批次无关。"),
    Exercise("7.3c", "attn_bound", "choice", lambda: "A", choices=("A", "B", "C"),
             why={"B": "解码注意力的强度约为 1，与批次无关：每条序列读自己的 KV 缓存，批次再大也摊不薄。",
                  "C": "预填充的强度约为 T/2，长提示词时远超 C/W，是计算受限的。"},
             explain="预填充注意力随提示词长度变得计算受限，解码注意力永远卡在带宽上。"),
    Exercise("7.4", "gqa_intensity", "function", lambda S, T, G: S * T * G / (S + T * G), rtol=0.01,
             sampler=lambda rng: {"S": _rint(rng, 1, 100_000), "T": _rint(rng, 1, 4096),
                                  "G": int(rng.choice([1, 2, 4, 8, 16]))},
             edge_cases=({"S": 8192, "T": 1, "G": 8}, {"S": 4096, "T": 4096, "G": 1}, {"S": 16, "T": 64, "G": 4}),
             slips=(Slip("KV 缓存只读一次、被 G 个查询头共用：分母是 S + TG，不是 SG + T。",
                         lambda S, T, G: S * T * G / (S * G + T)),
                    Slip("G 个查询头共用一份 KV：运算多了 G 倍，强度也跟着变，不能把 G 忽略。",
                         lambda S, T, G: S * T / (S + T))),
             unit="FLOPs/字节", explain="解码时（T = 1）强度趋于 G：GQA 把解码注意力的强度提高了 G 倍，但仍远低于 C/W。"),
    Exercise("7.4b", "gqa_decode", "number", lambda N4: float(inf.attention_intensity(2048, 1, N4 // 8)), rtol=0.03,
             unit="FLOPs/字节", params=HEADS4,
             slips=(Slip("忘了 G：G 个查询头共用一份 KV，强度约为 G。",
                         lambda N4: float(inf.attention_intensity(2048, 1))),),
             explain=lambda N4: f"约等于 G = {N4 // 8}，还是远小于 575：解码注意力仍然卡在带宽上。"),
    Exercise("7.5", "quiz_ms", "numbers", _p75, rtol=0.03, unit="ms", labels=("B = 4", "大批次"), params=BIG5,
             slips=(Slip("权重是 int8（每个参数 1 字节），你按 bf16 的 2 字节算了。", lambda B5: _p75(B5, "bf16")),),
             explain=lambda B5: (lambda r: f"批次大了 {B5 // 4} 倍，时间只多了约 {r[1] / r[0]:.1f} 倍："
                                           "小批次时权重才是大头。")(_p75(B5))),
    Exercise("7.6", "m7_weights", "numbers", lambda F7: [_m7(F7).params, 2 * _m7(F7).params], rtol=0.01,
             unit="[个, 字节]", labels=("参数量", "字节数"), params=F7,
             slips=(Slip("K、V 的投影按 N 个头算了：这个模型只有 K = 8 个 KV 头。",
                         lambda F7: [_m7(F7).params + 2 * 32 * 4096 * 128 * 24,
                                     2 * (_m7(F7).params + 2 * 32 * 4096 * 128 * 24)]),
                    Slip("两个嵌入矩阵漏掉了：输入和输出嵌入各 V·D 个参数。",
                         lambda F7: [_m7(F7).params - 2 * 32000 * 4096, 2 * (_m7(F7).params - 2 * 32000 * 4096)]),
                    Slip("字节数按 int8 算了：bf16 每个参数 2 字节。", lambda F7: [_m7(F7).params, _m7(F7).params])),
             explain=lambda F7: (f"约 {_m7(F7).params / 1e8:.0f} 亿参数、约 {2 * _m7(F7).params / 1e9:.1f} GB 的 bf16 权重，"
                                 "一颗 32 GB 的 v6e 放得下。")),
    Exercise("7.7", "kv7", "numbers", _p77, rtol=0.01, unit="[字节, 条]", labels=("字节数", "条数"), params=F7,
             slips=(Slip("KV 缓存按 N = 32 个头算了：这个模型只有 K = 8 个 KV 头。",
                         lambda F7: [4 * _kv_seq(), math.ceil(2 * _m7(F7).params / (4 * _kv_seq()))]),
                    Slip("条数要向上取整：“至少几条”才超过权重。",
                         lambda F7: [_kv_seq(), math.floor(float(inf.kv_weight_balance_batch(_m7(F7), 8192)))]),
                    Slip("只算了 K（或只算了 V）：每层每个 token 要存 K 和 V 两份。",
                         lambda F7: [_kv_seq() / 2, math.ceil(2 * _m7(F7).params / (_kv_seq() / 2))])),
             explain="GQA 让 KV 缓存变小：要十几条 8k 序列才超过权重。"),
    Exercise("7.7b", "beyond_balance", "choice", lambda: "A", choices=("A", "B", "C"),
             why={"B": "权重每步只读一次，和批次无关；超过平衡点后，是随批次增长的 KV 缓存占了大头。",
                  "C": "解码的计算量很小：每个 token 每个参数两次运算，远不到芯片的峰值。"},
             explain="超过平衡点后，每步读的字节以 KV 缓存为主：批次加倍，步长也接近加倍。"),
    Exercise("7.8", "act_bytes", "number", lambda T8, F7: T8 * 4096 * 2.0, rtol=0.03, unit="字节",
             params={**T8, **F7},
             slips=(Slip("激活是 bf16（2 字节），不是 fp32。", lambda T8, F7: T8 * 4096 * 4.0),
                    Slip("这是 [T, F] 的张量：题目问 [T, D]。", lambda T8, F7: T8 * F7 * 2.0)),
             explain=lambda T8, F7: f"一个激活张量约 {T8 * 4096 * 2 / 1e6:.0f} MB：和权重、KV 缓存比，推理时激活可以忽略。"),
    Exercise("7.9", "step_time", "function", _step_ref, rtol=0.01,
             sampler=lambda rng: {"B": _rint(rng, 1, 512), "kv_seq": float(rng.uniform(1e8, 1e10)),
                                  "param_bytes": float(rng.uniform(1e9, 3e11)),
                                  "n": int(rng.choice([1, 4, 8, 16])), "W": 1.6e12},
             edge_cases=({"B": 1, "kv_seq": 1e9, "param_bytes": 1.4e10, "n": 1, "W": 1.6e12},
                         {"B": 256, "kv_seq": 1e9, "param_bytes": 1.4e10, "n": 8, "W": 1.6e12}),
             slips=(Slip("字节分在 n 颗芯片上，各自并行地读：要除以 n。",
                         lambda B, kv_seq, param_bytes, n, W: (B * kv_seq + param_bytes) / W),
                    Slip("权重也要每步读一遍：别漏了 param_bytes。",
                         lambda B, kv_seq, param_bytes, n, W: B * kv_seq / (n * W))),
             unit="秒", explain="小批次时每步就是把所有字节从 HBM 读一遍。"),
    Exercise("7.9b", "bmax7", "numbers", _p79b, rtol=0.02, unit="条", labels=("K = 8", "K = 32"),
             params={**F7, **N9B},
             slips=(Slip("每个 token 每层要存 K 和 V 两份：KV 缓存是 2LKH 个数，你只算了一份。",
                         lambda F7, n9b: [int((n9b * HBM6 - 2 * _m7(F7).params) // (_kv_seq() / 2)),
                                          int((n9b * HBM6 - 2 * _m7(F7).params) // (_kv_seq(M7_MHA) / 2))]),
                    Slip("权重也占内存：先从总 HBM 里减去 bf16 权重，剩下的才给 KV 缓存。",
                         lambda F7, n9b: [int(n9b * HBM6 // _kv_seq()), int(n9b * HBM6 // _kv_seq(M7_MHA))])),
             explain=lambda F7, n9b: (f"{n9b} 颗 v6e 放 K = 8 的模型能装 {_p79b(F7, n9b)[0]} 条 8k 序列，"
                                      "K = 32 时只有约四分之一。")),
    Exercise("7.9d", "gqa_gain", "choice", lambda: "A", choices=("A", "B", "C"),
             why={"B": "GQA 只减少 K、V 的投影，查询头一个不少，每个 token 的运算几乎不变。",
                  "C": "权重只少了一点点（K、V 投影占全部参数的很小一部分）。"},
             explain="解码卡在读 KV 上：KV 小 4 倍，同样的内存就能放约 4 倍的批次。"),
    Exercise("7.9c", "row32", "numbers", _p79c, rtol=0.02, unit="[ms, token/s]", labels=("ms", "token/s"),
             params={**F7, **B9C},
             slips=(Slip("吞吐要算整个 4 颗芯片的切片：每步产出 B 个 token。",
                         lambda F7, B9c: _p79c(F7, B9c, n_out=1)),
                    Slip("KV 缓存也要每步读一遍：B 条 8k 序列的 KV 和权重一样要从 HBM 读。",
                         lambda F7, B9c: _p79c(F7, B9c, kv=False))),
             explain=lambda F7, B9c: (f"批次 {B9c} 时 KV 已经超过权重，吞吐被缓存拖住。"
                                      if B9c * _kv_seq() > 2 * _m7(F7).params else
                                      f"批次 {B9c} 时读权重还占大头：再加大批次，吞吐还能涨不少。")),
    Exercise("7.10", "y_max", "number",
             lambda B10: float(inf.max_model_parallelism_memory_bound(14336, B10, beta=8)), rtol=0.01, unit="路",
             params=B10,
             slips=(Slip("忘了 β：上限是 F/(Bβ)。", lambda B10: 14336 / B10),
                    Slip("β 要除，不是乘：上限是 F/(Bβ)。", lambda B10: 14336 * 8 / B10)),
             explain="解码是读权重受限的，可以远远越过训练时的模型并行界限。"),
    Exercise("7.11", "lat_bytes", "numbers", _p711, rtol=0.03, unit="字节", labels=("门槛", "激活"), params=B11,
             slips=(Slip("这是每个分片的门槛 W_ici,1·T_min：题目问总数据量，要乘分片数 16。",
                         lambda B11: (lambda r: _swap(r, 0, r[0] / 16))(_p711(B11))),
                    Slip("激活是 int8（1 字节），不是 bf16。",
                         lambda B11: (lambda r: _swap(r, 1, r[1] * 2))(_p711(B11)))),
             explain=lambda B11: f"{B11 * 4096 / 1e3:.0f} kB 远小于 1.44 MB 的门槛。"),
    Exercise("7.11b", "lat_choice", "choice", _p711b, choices=("A", "B", "C"), params=B11,
             why={"B": lambda B11: (f"每个分片只有约 {B11 * 4096 / 16 / 1e3:.0f} kB，传完约 "
                                    f"{B11 * 4096 / 16 / W1_6 * 1e6:.2f} µs，比 1 µs 的固定延迟短得多。"),
                  "C": "集合通信不会“都不受限”：时间取延迟和带宽中较大的那个，这里是延迟。"},
             explain="每个分片的数据传完不到 1 µs，固定延迟说了算。"),
    Exercise("7.12", "floor_s", "number", _p712, rtol=0.03, unit="秒", params=F12,
             slips=(Slip("权重切成了 4 份：每颗芯片只读自己的 1/4。", lambda F12: _p712(F12, ways=1)),
                    Slip("用了 v5e 的 HBM 带宽：这道题是 v6e（1.6e12 B/s）。",
                         lambda F12: 2 * (2 * 4096 * F12) / 4 / 8.2e11)),
             explain="平的那一段正是读权重的时间。"),
    Exercise("7.13", "prefix_frac", "number", lambda n13, s13: (n13 - s13) / n13, rtol=0.01, unit="",
             params=REQ13,
             slips=(Slip("这是省下的比例：题目问还要算的比例。", lambda n13, s13: s13 / n13),),
             explain=lambda n13, s13: f"{n13} 个 token 里 {s13} 个的 KV 已经缓存，只需算 {n13 - s13} 个。"),
    Exercise("7.13b", "prefix_saves", "choice", lambda: "A", choices=("A", "B", "C"),
             why={"B": "解码每一步都要读全部 KV 缓存和权重，前缀缓存省不了这一步。",
                  "C": "权重每个预填充或解码步都要读，前缀缓存只省 token 的计算和 KV 的写入。"},
             explain="前缀缓存省的是共享前缀那部分的预填充。"),
    Exercise("7.14", "ch7_model", "numbers", lambda: [CH7.params, CH7.kv_elems_per_token], rtol=0.02,
             unit="[个, 个]", labels=("参数量", "KV 元素"),
             slips=(Slip("KV 元素按 N 个头算了：每层只有 K 个 KV 头，2LKH。",
                         lambda: [CH7.params, 2 * 64 * 32 * 256]),
                    Slip("每个 token 要存 K 和 V 两份：2LKH，不是 LKH。",
                         lambda: [CH7.params, CH7.kv_elems_per_token / 2])),
             explain="1.84e10 个参数；每个 token 的 KV 缓存有 262,144 个数，int8 是 262 kB。"),
    Exercise("7.15", "b_max", "numbers", _p715, rtol=0.02, unit="条", labels=("K = 8", "K = 1"), params=S15,
             slips=(Slip("权重也占内存：先从 4 颗芯片的 HBM 里减去 int8 权重，剩下的才给 KV 缓存。",
                         lambda S15: [int(4 * HBM6 // float(inf.kv_bytes_per_seq(CH7, S15, "int8"))),
                                      int(4 * HBM6 // float(inf.kv_bytes_per_seq(
                                          inf.ServedModel("K=1", CH7.params, 2 * 64 * 1 * 256), S15, "int8")))]),),
             explain="只有一个 KV 头时缓存小 8 倍，批次也大 8 倍。"),
    Exercise("7.16", "load_ms", "numbers", _p716, rtol=0.03, unit="ms", labels=("(a)", "(b)", "(c)"), params=N16,
             slips=(Slip("权重分在多颗芯片上并行地读：(a)、(b) 要除以芯片数。",
                         lambda n16: (lambda r: [r[0] * n16, r[1] * n16, r[2]])(_p716(n16))),
                    Slip("用了 v5e 的 HBM 带宽：这道题是 v6e（1.6e12 B/s）。",
                         lambda n16: [v * 1.6e12 / 8.2e11 for v in _p716(n16)])),
             explain="这是每个解码步的下限：权重至少要读一遍。"),
    Exercise("7.16b", "why_not_16x", "choice", lambda: "A", choices=("A", "B", "C"),
             why={"B": "每颗芯片有自己的 HBM，16 颗的带宽是相加的，不是共享的。",
                  "C": "模型并行时每颗芯片只读自己那一份权重。"},
             explain="每层的集合通信在关键路径上，小批次时是延迟受限的：芯片越多，这部分占比越大。"),
    Exercise("7.17", "latency_ms", "number", _p717, rtol=0.05, unit="ms", params=RUN17,
             slips=(Slip("权重是 int8（1 字节），你按 bf16 的 2 字节算了。",
                         lambda B17, S17: _p717(B17, S17, "bf16")),),
             explain=lambda B17, S17: (f"16 路模型并行时 B = {B17} 的一步约 {_p717(B17, S17):.1f} ms，"
                                       "另加一些延迟受限的集合通信。")),
    Exercise("7.18", "moe", "numbers", _p718, rtol=0.03, unit="[个, 个, token, 个]",
             labels=("总参数", "激活参数", "门槛", "KV 元素"),
             slips=(Slip("(c) 每个专家只看到 Bk/E 个 token：门槛要乘 E/k = 8。",
                         lambda: (lambda r: _swap(r, 2, r[2] * 2 / 16))(_p718())),
                    Slip("(d) MoE 只改 FFN，KV 缓存和稠密模型一样，不乘专家数。",
                         lambda: (lambda r: _swap(r, 3, r[3] * 16))(_p718()))),
             explain="MoE 让总参数暴涨，但每个 token 只用到其中一小部分，KV 缓存完全不变。"),
    Exercise("7.18c", "moe_bcrit_why", "choice", lambda: "A", choices=("A", "B", "C"),
             why={"B": "路由器只是一个 [D, E] 的小矩阵，它的运算可以忽略。",
                  "C": "门槛比的是读权重和做运算，AllToAll 的通信是另一回事。"},
             explain="读一份专家权重，只摊到 Bk/E 个 token 上：批次要大 E/k 倍才能摊薄。"),
    Exercise("7.18b", "moe_flops", "function", _moe_flops_ref, rtol=0.01,
             sampler=lambda rng: {"T": _rint(rng, 1, 32768)}, unit="FLOPs",
             edge_cases=({"T": 1}, {"T": 32768}),
             slips=(Slip("按激活的参数算：每个 token 只经过 k 个专家，不是全部参数。",
                         lambda T: 2 * _moe().params * T + 4 * 64 * 32 * 256 * T ** 2),
                    Slip("题目说不考虑因果掩码：注意力项不减半。",
                         lambda T: 2 * _moe().active_params * T + 2 * 64 * 32 * 256 * T ** 2)),
             explain="线性项来自激活的参数，平方项来自注意力（不考虑因果掩码）。"),
    Exercise("7.19", "expert_shard", "numbers", _p719, rtol=0.05, unit="[ms, GB, 颗]",
             labels=("ms", "GB", "颗"),
             slips=(Slip("切片只有规定的几种大小：把需要的芯片数向上取到 v5e 的切片规格。",
                         lambda: (lambda r: _swap(r, 2, math.ceil(inf.min_chips(_moe(), "bf16"))))(_p719())),
                    Slip("权重是 bf16（2 字节）：每颗芯片存全部参数的 1/128，每个 2 字节。",
                         lambda: (lambda r: [r[0] / 2, (16e9 - _moe().params / 128) / 1e9, r[2]])(_p719()))),
             explain="128 路切分后每颗只存 3.3 GB 权重；单放权重至少要 4x8。"),
    Exercise("7.20", "t_2d", "function", _t2d_ref, rtol=0.01,
             sampler=lambda rng: {"B": _rint(rng, 1, 512), "D": int(rng.choice([4096, 8192])),
                                  "F": int(rng.choice([16384, 32768])), "X": int(rng.choice([2, 4, 8])),
                                  "YZ": int(rng.choice([8, 16, 32])), "W": 9e10},
             edge_cases=({"B": 1, "D": 4096, "F": 16384, "X": 1, "YZ": 8, "W": 9e10},
                         {"B": 64, "D": 8192, "F": 32768, "X": 8, "YZ": 1, "W": 9e10}),
             slips=(Slip("两项要相加：沿 D 切和沿 F 切的通信都在关键路径上。",
                         lambda B, D, F, X, YZ, W: max(2 * B * D / (X * W), 4 * B * F / (YZ * W))),),
             unit="秒", explain="沿 D 切的那部分通信随 X 下降，沿 F 切的随 YZ 下降。"),
    Exercise("7.20b", "n_cross", "number", lambda F20: float(inf.two_d_ws_crossover_chips(4096, F20)), rtol=0.02,
             unit="颗", params=F20,
             slips=(Slip("这是 F = 4D 时的 72：门槛是 18F/D，要用这里的 F 和 D。", lambda F20: 72.0),
                    Slip("原书的 81 是笔误：按推导门槛是 18F/D。", lambda F20: 81 * F20 / (4 * 4096))),
             explain=lambda F20: f"超过约 {18 * F20 / 4096:.0f} 颗芯片，二维权重驻留的通信就比一维少。"),
    Exercise("7.21", "spec", "numbers", _p721, rtol=0.03, unit="[token, 目标步]", labels=("E", "目标步/token"),
             params=A21,
             slips=(Slip("(b) 是每个 token 的成本，不是加速比：是 (γ·t_draft + t_verify)/E。",
                         lambda a21: (lambda r: _swap(r, 1, 1 / r[1]))(_p721(a21))),
                    Slip("(a) 的指数是 γ + 1：即使全部猜错，验证那一步也会产出 1 个 token。",
                         lambda a21: (lambda e: [e, (5 * 0.05 + 1) / e])((1 - a21 ** 5) / (1 - a21)))),
             explain=lambda a21: (lambda r: f"每次目标前向平均产出约 {r[0]:.1f} 个 token，"
                                            f"每个 token 约 {r[1]:.2f} 个目标步。")(_p721(a21))),
    Exercise("7.21b", "low_accept", "choice", _p721b_choice, choices=("A", "B", "C"), params=A21B,
             why={"A": _why721b("A"), "B": _why721b("B"),
                  "C": "接受率低了，每次验证产出的 token 变少，收益只会变小。"},
             explain=lambda a21b: (f"接受率 {a21b} 时收益很小但还在：草稿只要 5% 的成本。" if _t721b(a21b) < 1 else
                                   f"接受率 {a21b} 时每个 token 要约 {_t721b(a21b):.2f} 个目标步：草稿几乎全被拒，"
                                   "白白多花了猜的成本。")),
]
