"""Chapter 5 exercises (spec 05, P5.1-P5.20; P5.16 and P5.18 are free-text 思考题, not graded).

The chapter works the spec's problems itself on TPU v5p (LLaMA-2-13B, LLaMA-3-70B, the 4×4×4
slice, the v5p pod and its DCN bound); every exercise here asks the same questions on TPU v4p (its
own α = C/W_ici, 32 GB of HBM, 4096-chip pods, DCN per chip) and for a 7B model with grouped-query
attention (the structure of Mistral-7B), so that no expected value is a number chapters 4 and 5
print (tests/test_exercises.py checks it). Each exercise declares its likely slips (``Slip``),
the power-of-two degrees the chapter recommends are accepted as valid alternatives (``Alt``), and
the choice items ask which resource binds and why, with feedback for every wrong reason.

Expected values are computed from scaling_lib (training, models, hardware); the hand-computed
answers are pinned in tests/test_exercises.py.

Per-student numbers (``params``, see scaling_lib.exercises): the batches of 5.2, 5.3b-5.3e, 5.4,
5.7, 5.8, 5.11, 5.14-5.14c, the training tokens of 5.8 and 5.14e, the number of pods of 5.14e/5.14f,
the FFN widths of 5.9/5.9b and 5.12b/5.13, the expert width of 5.19 and the pipeline of 5.20. The chip (v4p, its α, HBM,
pod and DCN), the 7B model of 5.1-5.4 and the worked slices stay fixed: they are what the chapter
teaches. The grids keep the book's method valid (pure FSDP stays communication-bound in 5.3c and
5.4b, X = 1024, Y = 4 stays compute-bound in 5.14c, 16-way TP stays over F/α in 5.9b, the experts stay
communication-bound in 5.19), keep X_opt away from a power of two (the accepted power of two must
fail the tolerance), leave out the chapter's own numbers, and space the values so that a
classmate's answer (or the book's) fails the tolerance: in the grids below, a copied answer
passes for at most 1 student in 7 (5.14b), mostly 1 in 8 or fewer.
"""
from __future__ import annotations

import math

from .. import hardware, models, training as tr
from ..units import DAY
from . import Alt, Exercise, Param, Slip

V4P = hardware.get("v4p")
C, W = V4P.peak(), V4P.ici_bw_bidi            # 2.75e14 FLOPs/s, 9e10 B/s
A = C / W                                     # α ≈ 3056
HBM, POD = V4P.hbm_bytes, V4P.pod_chips       # 32 GB, 4096
L70 = models.LLAMA3_70B
F70 = L70.d_ff
# a 7B model with grouped-query attention (Mistral-7B's structure), not one of the chapters' presets
M7 = models.TransformerConfig(d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_ff=14336, vocab=32000,
                              d_head=128, gated_mlp=True, name="7B (GQA)")
L7, D7, F7, N7, K7, H7, V7 = 32, 4096, 14336, 32, 8, 128, 32000
P7 = M7.params()

# ---- per-student numbers ----------------------------------------------------------------------------
B2 = {"B2": Param(1.6e7, (6e6, 8e6, 1.2e7, 1.4e7, 1.8e7, 2.2e7, 2.4e7, 2.8e7))}
# (square-root answers: sizes at least 12% apart, so that two students' X_opt differ by more than the
# 5% tolerance, and stay 12% away from the book's number)
# B3 / 4096 stays well under α/3 ≈ 1019 (5.3c); X_opt stays in 545-693 or 1090-1394, where the power of
# two below it is also the nearest one (512 or 1024) and lies outside the tolerance
B3 = {"B3": Param(3e6, (5.2e5, 5.9e5, 6.6e5, 7.4e5, 8.4e5, 2.08e6, 2.35e6, 2.62e6, 3.4e6))}
# B4a / 4096 stays under α/3 (4096 chips are communication-bound, 5.4b); B4b / 4096 stays over it
B4A = {"B4a": Param(1e6, (6e5, 7e5, 8e5, 9e5, 1.2e6, 1.4e6, 1.5e6))}
B4B = {"B4b": Param(1e7, (6e6, 8e6, 1.2e7, 1.4e7, 2e7))}
B7 = {"B7": Param(4e7, (2.4e7, 2.8e7, 3.2e7, 3.6e7, 4.4e7, 4.8e7, 5.2e7, 5.6e7))}
RUN8 = {"B8": Param(1.6e7, (8e6, 1.2e7, 2e7, 2.4e7, 2.8e7)),
        "T8": Param(15e12, (1e13, 1.2e13, 1.8e13, 2.1e13))}
# F/α stays in 8.4-12.7: 8-way TP is the power of two below it, 16-way stays well over it (5.9b)
F9 = {"F9": Param(28672, (25600, 26624, 27648, 30720, 32768, 34816, 36864, 38912))}
# X_opt = sqrt(B/F·2·128) in 17-21, 25-27, 34-42 or 51-58: the nearest power of two (16, 32 or 64, nearest
# both on a log and on a linear scale) lies outside the tolerance
B11 = {"B11": Param(96000, (34000, 40000, 46000, 71000, 79000, 134000, 154000, 175000, 198000, 292000,
                            333000, 377000))}
F12 = {"F12": Param(28672, (16384, 20480, 24576, 32768, 36864, 40960, 49152, 57344))}
B14 = {"B14": Param(2e6, (1.2e6, 1.4e6, 1.8e6, 2.2e6, 2.4e6, 2.6e6, 2.8e6, 3.2e6))}
# X_opt = sqrt(B/F·2·4096) stays in 1082-1844 (never 1380-1530, where the v5p-pod slip √2·X_opt would
# land on the accepted 2048): the power of two below (1024) and the nearest one (1024 or
# 2048) are both accepted and lie outside the tolerance
B14B = {"B14b": Param(5e6, (4.1e6, 5.8e6, 6.5e6, 8.4e6, 9.4e6, 1.06e7, 1.19e7))}
# 5.14c's own batch (the ratio flattens out at large B, so its grid is denser at small B): X = 1024, Y = 4
# stays compute-bound (ratio 0.59-0.92), two batches give ratios at least 3.5% apart
B14C = {"B14c": Param(5e6, (3.2e6, 3.6e6, 4.1e6, 4.6e6, 5.5e6, 6.2e6, 7e6, 8e6, 9.5e6))}
PODS = {"pods": Param(10, (4, 5, 6, 8, 12, 16, 20))}
T14 = {"T14": Param(15e12, (1.05e13, 1.3e13, 1.7e13, 1.95e13))}
# 4F_e/(8α) stays at or under 0.67: the 8 experts stay communication-bound (5.19c)
FE = {"Fe": Param(2048, (1024, 1280, 1536, 1792, 2560, 3072, 3584, 4096))}
# M_a > M_b always (5.20b goes from M_b to M_a micro-batches)
PIPE = {"S20": Param(6, (4, 5, 8, 10)), "Ma": Param(24, (28, 32, 36, 40, 44, 48)),
        "Mb": Param(12, (8, 10, 14, 16))}


def _p51_slip(attn_heads=N7 + K7, emb=2, ffn=3):
    return ffn * L7 * D7 * F7 + 2 * L7 * D7 * H7 * attn_heads + emb * V7 * D7


def _ckpt(batch, per_layer=D7 + 2 * F7, nbytes=2):
    return nbytes * L7 * batch * per_layer


def _mem_16m(B2=16e6):
    m = tr.training_memory(P7, B2, D7, L7, F7, saves=("F", "F", "D"))
    return [m["params"] + m["optimizer"], m["checkpoints"]]


def _mem_per_chip_3m(B3=3e6):
    m = tr.training_memory(P7, B3, D7, L7, F7, saves=("F", "F", "D"))
    return m["total"] / POD


def _p53_choice():
    return "B" if 10 * P7 > HBM else "A"


def _p53c_choice(B3=3e6):
    return "A" if B3 / POD >= tr.dp_min_tokens_per_chip(V4P, 3) else "B"


def _why53c(letter):
    def f(B3):
        if letter == "A":
            return (f"每芯片约 {B3 / POD:.0f} 个 token，要和三个轴的门槛 α/3 ≈ 1019 比，"
                    "不是和 HBM 的门槛比。")
        return "FSDP 每步的通信量（约 2·2P 字节的收集和归约）与批次无关，批次小时藏不到计算后面。"
    return f


def _p54(B4a=1e6, B4b=1e7):
    return [float(tr.fsdp_step_comm_time(P7, V4P, 3)),
            float(tr.step_time(P7, B4a, 1024, V4P)),
            float(tr.step_time(P7, B4b, POD, V4P))]


def _p58(n_axes=3, mfu=0.5, per_token=6.0, B8=16e6, T8=15e12):
    n = B8 / tr.dp_min_tokens_per_chip(V4P, n_axes)
    return tr.train_time(tr.total_train_flops(L70.params(), T8, per_token), V4P, n, mfu=mfu) / DAY


def _days_pods(pods=10, T14=15e12, mfu=1.0, pod_chips=POD):
    return tr.train_time(tr.total_train_flops(L70.params(), T14), V4P, pods * pod_chips, mfu) / DAY


def _p512_sample(rng):
    """F, a chip, and an M_X·M_Y its torus allows (1 on the 2-D v5e/v6e, 1 or 2 on 3-D tori)."""
    chip = ["v5p", "v4p", "v5e", "v6e"][int(rng.integers(0, 4))]
    hi = hardware.max_mx_my(chip)
    return {"d_ff": int(rng.integers(4096, 65536)), "chip": chip,
            "mx_my": int(rng.integers(1, hi + 1))}


def _alpha(chip):
    c = hardware.get(chip)
    return c.peak() / c.ici_bw_bidi


def _p59_choice(F9=F70):
    return "A" if 16 < tr.tp_max_degree(F9, V4P) else "B"


def _p510_choice():
    same = abs(tr.tp_max_degree(F70, V4P, dtype="int8") - tr.tp_max_degree(F70, V4P)) < 1e-9
    return "B" if same else "A"


def _p514c(m_x=2, B14c=5e6):
    t = tr.fsdp_tp_layer_times(B14c, 8192, F70, 1024, 4, V4P, m_x=m_x, m_y=1)
    return t["t_comms"] / t["t_math"]


def _explain512b(F12):
    t = tr.mixed_min_tokens_per_chip(F12, V4P)
    pure = tr.dp_min_tokens_per_chip(V4P, 3)
    cmp = (f"比纯 FSDP 的门槛（约 1019）低 {1 - t / pure:.0%}" if t < pure
           else "反而比纯 FSDP 的门槛（约 1019）高：F 太小，TP 帮不上忙")
    return f"2α²/F ≈ {t:.0f} 个 token/芯片，{cmp}。"


def _bubbles(S20, Ma, Mb):
    return [float(tr.bubble_fraction(S20, Ma)), float(tr.bubble_fraction(S20, Mb))]


def _pow2(rng, lo, hi):
    return int(2 ** rng.integers(lo, hi + 1))


def _pow2_below(x):
    return float(2 ** math.floor(math.log2(x)))


def _pow2_nearest(x):
    return float(2 ** round(math.log2(x)))


def _pow2_other(x):
    """The nearest power of two when it is not the one below (NaN: no second alternative)."""
    return _pow2_nearest(x) if _pow2_nearest(x) != _pow2_below(x) else float("nan")


def _layer_bytes(kind, B, D, F, x, y):
    c = tr.layer_costs(kind, B, D, F, x=x, y=y)
    return [c.bytes_fwd, c.bytes_bwd]


def _layer_slip(which):
    def f(kind, B, D, F, x, y):
        if which == "degree1":  # every strategy communicates, whatever its degree
            return {"dp": [0.0, 8.0 * D * F], "fsdp": [4.0 * D * F, 8.0 * D * F], "tp": [4.0 * B * D, 4.0 * B * D],
                    "fsdp_tp": [4.0 * B * D / x + 4.0 * D * F / y, 4.0 * B * D / x + 8.0 * D * F / y]}[kind]
        r = _layer_bytes(kind, B, D, F, x, y)
        if which == "bwd8" and kind == "fsdp_tp" and y > 1:
            return [r[0], r[1] + 4.0 * B * D / x]
        if which == "ar_once" and kind == "dp" and x > 1:
            return [r[0], r[1] / 2]
        return r
    return f


def _layer_sampler(rng):
    kind = ["dp", "fsdp", "tp", "fsdp_tp"][int(rng.integers(0, 4))]
    x = _pow2(rng, 1, 10) if kind != "tp" else 1
    y = _pow2(rng, 1, 6) if kind in ("tp", "fsdp_tp") else 1
    return {"kind": kind, "B": _pow2(rng, 10, 24), "D": _pow2(rng, 9, 14), "F": _pow2(rng, 11, 16),
            "x": x, "y": y}


def _p515_sample(rng):
    return {"n_fsdp": _pow2(rng, 1, 12), "n_tp": _pow2(rng, 0, 3), "m_x": int(rng.integers(1, 3)), "m_y": 1,
            "d_ff": _pow2(rng, 15, 17), "chip": "v4p"}


def _p515_slip(which):
    def f(n_fsdp, n_tp, m_x, m_y, d_ff, chip):
        ref = tr.fsdp_tp_threshold(n_fsdp, n_tp, m_x, m_y, d_ff, chip)
        if math.isinf(ref):
            return ref
        a = _alpha(chip)
        if which == "no_zero":
            return n_fsdp * a / m_x
        if which == "no_mx":
            return 0.0 if n_fsdp == 1 else n_fsdp * a
        return 0.0 if n_fsdp == 1 else n_fsdp * n_tp * a / m_x
    return f


EXERCISES = [
    # ---- a 7B model on a v4p pod ------------------------------------------------------------------
    Exercise("5.1", "n_params", "number", lambda: P7, rtol=0.01, unit="个参数",
             slips=(Slip("两个嵌入矩阵都漏掉了：输入嵌入和输出投影各 V·D 个参数（题目说不共享）。",
                         lambda: _p51_slip(emb=0)),
                    Slip("只算了一个嵌入矩阵：题目说输入和输出嵌入不共享，要算两份 V·D。",
                         lambda: _p51_slip(emb=1)),
                    Slip("K 和 V 的投影按 N 个头算了：这个模型是分组查询注意力（GQA），只有 K = 8 个 KV 头。",
                         lambda: _p51_slip(attn_heads=2 * N7)),
                    Slip("门控 FFN 有三个矩阵（W_gate、W_up、W_down），不是两个。",
                         lambda: _p51_slip(ffn=2))),
             explain="FFN 5.64e9 + 注意力 1.34e9 + 词表 0.26e9 ≈ 7.2e9：GQA 让注意力只占不到两成。"),
    Exercise("5.2", "mem_16m", "numbers", _mem_16m, rtol=0.03, unit="[字节, 字节]", params=B2,
             labels=("参数和优化器", "检查点"),
             slips=(Slip("检查点按 fp32 的 4 字节算了：题目说是 bf16，每个元素 2 字节。",
                         lambda B2: [10 * P7, _ckpt(B2, nbytes=4)]),
                    Slip("每层有两个 [B, F] 检查点（门控 FFN 的两个输入投影）和一个 [B, D]，你少算了一个 [B, F]。",
                         lambda B2: [10 * P7, _ckpt(B2, per_layer=D7 + F7)]),
                    Slip("参数和优化器状态每参数 10 字节（bf16 参数 2 字节加两个 fp32 矩 8 字节），不是 2 字节。",
                         lambda B2: [2 * P7, _ckpt(B2)])),
             explain=lambda B2: (f"参数加优化器只有约 72 GB，检查点却有约 {_ckpt(B2) / 1e12:.0f} TB："
                                 "大批次训练的内存大头是激活。")),
    Exercise("5.3", "pure_dp", "choice", _p53_choice, choices=("A", "B", "C"),
             why={"A": "纯数据并行时每颗芯片都要放一份完整的参数和优化器状态，不只是自己那份批次。",
                  "C": "只放 bf16 参数是放得下，可训练还要 Adam 的两个 fp32 矩：每参数 10 字节，约 72 GB。"},
             explain="10 字节 × 7.2e9 ≈ 72 GB，一颗 32 GB 的 v4p 放不下一份完整副本。"),
    Exercise("5.3b", "fsdp_mem_per_chip", "number", _mem_per_chip_3m, rtol=0.05, unit="字节", params=B3,
             slips=(Slip("检查点没算进去：这么大批次的检查点（几 TB）才是大头。",
                         lambda B3: 10 * P7 / POD),
                    Slip("检查点按 fp32 的 4 字节算了：它们是 bf16。",
                         lambda B3: (10 * P7 + _ckpt(B3, nbytes=4)) / POD),
                    Slip("总量没有分到 4096 颗芯片上：FSDP 把参数、优化器状态和检查点都分片。",
                         lambda B3: 10 * P7 + _ckpt(B3))),
             explain=lambda B3: (f"约 {(10 * P7 + _ckpt(B3)) / 1e12:.1f} TB 分到 4096 颗芯片，每颗约 "
                                 f"{_mem_per_chip_3m(B3) / 1e9:.2f} GB：FSDP 在内存上绰绰有余。")),
    Exercise("5.3c", "fsdp_compute_bound", "choice", _p53c_choice, choices=("A", "B", "C"), params=B3,
             why={"A": _why53c("A"), "C": _why53c("C")},
             explain=lambda B3: (f"每芯片约 {B3 / POD:.0f} 个 token < α/3 ≈ 1019：纯 FSDP 卡在 ICI 上，"
                                 "批次至少要约 4.2M 才行。")),
    Exercise("5.3d", "step_time", "number", lambda B3: tr.step_time(P7, B3, POD, V4P), rtol=0.05, unit="秒",
             params=B3,
             slips=(Slip("只算了前向的 2PB：训练一步是前向加反向，约 6PB 次运算。",
                         lambda B3: 2 * P7 * B3 / (POD * C)),
                    Slip("用了 v5p 的峰值：这道题是 v4p（2.75e14 FLOPs/s）。",
                         lambda B3: 6 * P7 * B3 / (POD * 4.59e14))),
             explain=lambda B3: (f"6PB/(NC) ≈ {tr.step_time(P7, B3, POD, V4P):.3f} 秒；"
                                 "32k 上下文时注意力还要再加不少。")),
    Exercise("5.3e", "x_opt", "number", lambda B3: tr.optimal_fsdp(B3, POD, F7), rtol=0.05, unit="路", params=B3,
             accept=(Alt(lambda B3: _pow2_below(tr.optimal_fsdp(B3, POD, F7)),
                         "取 2 的幂也对：实际的 FSDP 度要整除芯片数，正文也这样取。"),),
             slips=(Slip("M_X/M_Y 写反了：FSDP 用两个轴（M_X = 2），TP 用一个（M_Y = 1）。",
                         lambda B3: math.sqrt(B3 / F7 * 0.5 * POD)),
                    Slip("用了 D 而不是 F：X_opt = √((B/F)(M_X/M_Y)N)。",
                         lambda B3: math.sqrt(B3 / D7 * 2 * POD)),
                    Slip("忘了开平方。", lambda B3: B3 / F7 * 2 * POD)),
             explain=lambda B3: (f"X_opt ≈ {tr.optimal_fsdp(B3, POD, F7):.0f}：取 X = "
                                 f"{_pow2_below(tr.optimal_fsdp(B3, POD, F7)):.0f}、"
                                 f"Y = {POD / _pow2_below(tr.optimal_fsdp(B3, POD, F7)):.0f}。")),
    Exercise("5.4", "step_times", "numbers", _p54, rtol=0.05, unit="[秒, 秒, 秒]", params={**B4A, **B4B},
             labels=("(1) FSDP 通信", "(2) 1024 颗的计算", "(3) 大批次的计算"),
             slips=(Slip("(1) 三个轴一起收集，带宽是 3·W_ici：每步的 FSDP 通信约 3·2P/(3W_ici)。",
                         lambda B4a, B4b: (lambda r: [r[0] * 3, r[1], r[2]])(_p54(B4a, B4b))),
                    Slip("(2) 芯片少了，每颗芯片的计算多了：1024 颗时是 6PB/(1024·C)。",
                         lambda B4a, B4b: (lambda r: [r[0], r[1] / 4, r[2]])(_p54(B4a, B4b)))),
             explain="小批次在 4096 颗上被约 0.16 秒的 FSDP 通信卡住；换成 1024 颗，计算才盖得住通信；"
                     "大批次直接用纯 FSDP。"),
    Exercise("5.4b", "why_fewer_chips", "choice", lambda B4a: "A", choices=("A", "B", "C"), params=B4A,
             why={"B": "内存不是问题：FSDP 把参数、优化器状态和检查点都分到 4096 颗芯片上，每颗只要一两 GB。",
                  "C": lambda B4a: (f"每颗芯片 {B4a / POD:.0f} 个 token 对矩阵单元来说不算小；问题在 FSDP 的"
                                    "通信量与批次无关，批次小时计算时间比它短得多。")},
             explain="FSDP 每步的通信固定，计算随每芯片的 token 数变：少用芯片，计算才盖得住通信。"),
    # ---- thresholds --------------------------------------------------------------------------------
    Exercise("5.5", "max_params", "number", lambda: tr.max_params_pure_dp(V4P), rtol=0.03, unit="个参数",
             slips=(Slip("只算了 bf16 参数的 2 字节：Adam 训练每参数 10 字节。", lambda: HBM / 2),
                    Slip("用了 v5p 的 96 GB：v4p 每颗芯片 32 GB HBM。", lambda: 96e9 / 10)),
             explain="32 GB / 10 字节 ≈ 32 亿参数，这还没算梯度和激活，是个上限。"),
    Exercise("5.6", "dp_bounds", "numbers", lambda: [tr.dp_min_tokens_per_chip(V4P, 1), tr.dp_min_tokens_per_chip(V4P, 3)],
             rtol=0.03, unit="[token/芯片, token/芯片]", labels=("一个轴", "三个轴"),
             slips=(Slip("ICI 的 W 要用双向带宽（v4p 每条链路 9e10 B/s）：你用了单向的。",
                         lambda: [2 * A, 2 * A / 3]),
                    Slip("三个轴一起用，带宽变成三倍，门槛要除以 3，不是乘以 3。", lambda: [A, 3 * A]),
                    Slip("用了 v5p 的 α（2550）：这道题是 v4p。", lambda: [2550.0, 850.0])),
             explain="一个轴约 3056，三个轴约 1019：v4p 的算力和链路之比比 v5p 还高。"),
    Exercise("5.6b", "pod_batch", "number", lambda: tr.dp_min_tokens_per_chip(V4P, 3) * POD, rtol=0.03, unit="token",
             slips=(Slip("用了一个轴的门槛：整个 Pod 的三个轴都参与，门槛是 α/3。", lambda: A * POD),
                    Slip("用了 v5p Pod 的 8960 颗：v4p 的 Pod 是 4096 颗。", lambda: A / 3 * 8960)),
             explain="约 1019 × 4096 ≈ 4.2M token。"),
    Exercise("5.7", "deepseek_chips", "number", lambda B7: B7 / tr.dp_min_tokens_per_chip(V4P, 3), rtol=0.03,
             unit="颗", params=B7,
             slips=(Slip("用了一个轴的门槛 α：FSDP 用三个轴，门槛是 α/3。", lambda B7: B7 / A),
                    Slip("乘反了：芯片数是批次除以每芯片至少要的 token 数。", lambda B7: B7 * A / 3)),
             explain=lambda B7: (f"约 {B7 / tr.dp_min_tokens_per_chip(V4P, 3) / 1e4:.1f} 万颗芯片，约 "
                                 f"{B7 / tr.dp_min_tokens_per_chip(V4P, 3) / POD:.0f} 个 v4p Pod。")),
    Exercise("5.8", "days", "number", lambda B8, T8: _p58(B8=B8, T8=T8), rtol=0.03, unit="天", params=RUN8,
             slips=(Slip("MFU 是 50%：实际算力只有峰值的一半，时间要除以 0.5。",
                         lambda B8, T8: _p58(mfu=1.0, B8=B8, T8=T8)),
                    Slip("只算了前向的 2 FLOPs/参数/token：训练是 6。",
                         lambda B8, T8: _p58(per_token=2.0, B8=B8, T8=T8)),
                    Slip("芯片数用了一个轴的门槛 α：FSDP 铺满三个轴，每芯片至少 α/3 个 token。",
                         lambda B8, T8: _p58(n_axes=1, B8=B8, T8=T8))),
             explain=lambda B8, T8: (f"约 {B8 / tr.dp_min_tokens_per_chip(V4P, 3) / 1e4:.1f} 万颗 v4p、50% MFU，"
                                     f"约 {_p58(B8=B8, T8=T8):.0f} 天。")),
    # ---- tensor parallelism ------------------------------------------------------------------------
    Exercise("5.9", "tp_max", "number", lambda F9: tr.tp_max_degree(F9, V4P), rtol=0.03, unit="路", params=F9,
             accept=(Alt(lambda F9: _pow2_below(tr.tp_max_degree(F9, V4P)),
                         "取 2 的幂也对：实际的张量并行度取 2 的幂，不超过上限的最大一个就是它。"),),
             slips=(Slip("用了 D 而不是 F：TP 的上限是 F/α。", lambda F9: 8192 / A),
                    Slip("倒过来了：上限是 F/α，不是 α/F。", lambda F9: A / F9),
                    Slip("用了 v5p 的 α（2550）：这道题是 v4p。", lambda F9: F9 / 2550.0)),
             explain=lambda F9: (f"F/α ≈ {F9 / A:.1f}：8 路可以，16 路在一个轴上就通信受限了。")),
    Exercise("5.9b", "tp16_ok", "choice", _p59_choice, choices=("A", "B", "C"), params=F9,
             why={"A": lambda F9: f"16 路要求 F ≥ 16α ≈ 48900，F = {F9} 不够。",
                  "C": "张量并行的门槛 Y < F/α 里没有批次：每层搬的激活和要做的运算都正比于 B，B 约掉了。"},
             explain=lambda F9: (f"16 > {F9 / A:.1f}，16 路 TP 放在一个轴上是通信受限的；"
                                 "跨两个轴（M_Y = 2）才行。")),
    Exercise("5.10", "int8_changes", "choice", _p510_choice, choices=("A", "B", "C"),
             why={"A": "int8 让 C 翻倍，可每个激活也只剩 1 字节：每字节要做的运算和每字节能做的运算同时翻倍。",
                  "C": "门槛不会收紧：算力翻倍被激活字节减半抵消了。"},
             explain="int8 让 C 翻倍，但激活字节也减半，F/α 不变。"),
    # ---- FSDP + TP ---------------------------------------------------------------------------------
    Exercise("5.11", "x_opt_128", "number", lambda B11: tr.optimal_fsdp(B11, 128, F70), rtol=0.05, unit="路",
             params=B11,
             accept=(Alt(lambda B11: 2.0 ** round(math.log2(tr.optimal_fsdp(B11, 128, F70))),
                         "取最近的 2 的幂也对：正文也这样取。"),),
             slips=(Slip("M_X/M_Y 写反了：题目里是 2。", lambda B11: math.sqrt(B11 / F70 * 0.5 * 128)),
                    Slip("忘了开平方。", lambda B11: B11 / F70 * 2 * 128)),
             explain=lambda B11: (f"X_opt ≈ {tr.optimal_fsdp(B11, 128, F70):.0f}，取 2 的幂："
                                  f"{2 ** round(math.log2(tr.optimal_fsdp(B11, 128, F70)))} 路 FSDP × "
                                  f"{128 // 2 ** round(math.log2(tr.optimal_fsdp(B11, 128, F70)))} 路 TP。")),
    Exercise("5.12", "mixed_min", "function",
             lambda d_ff, chip, mx_my: float(tr.mixed_min_tokens_per_chip(d_ff, chip, mx_my)),
             rtol=0.01, unit="token/芯片", sampler=_p512_sample,
             edge_cases=({"d_ff": 28672, "chip": "v4p", "mx_my": 2}, {"d_ff": 8192, "chip": "v5e", "mx_my": 1}),
             slips=(Slip("分子是 4α²：2α²/F 只是 M_X M_Y = 2 时的写法。",
                         lambda d_ff, chip, mx_my: 2 * _alpha(chip) ** 2 / (mx_my * d_ff)),
                    Slip("M_X M_Y 要在分母里：3D 环面上它是 2，门槛减半。",
                         lambda d_ff, chip, mx_my: 4 * _alpha(chip) ** 2 / d_ff)),
             explain="4α²/(M_X M_Y F)：F 越大、轴越多，门槛越低。"),
    Exercise("5.12b", "mixed_min_v4p", "number", lambda F12: tr.mixed_min_tokens_per_chip(F12, V4P), rtol=0.03,
             unit="token/芯片", params=F12,
             slips=(Slip("v4p 是 3D 环面：M_X M_Y 取 2。", lambda F12: 4 * A ** 2 / F12),
                    Slip("用了 v5p 的 α（2550）：这道题是 v4p。", lambda F12: 2 * 2550.0 ** 2 / F12)),
             explain=_explain512b),
    Exercise("5.13", "b_star", "number", lambda F12: POD * tr.mixed_min_tokens_per_chip(F12, V4P), rtol=0.03,
             unit="token", params=F12,
             slips=(Slip("这是每颗芯片的门槛：题目问全局批次，要乘以 4096 颗芯片。",
                         lambda F12: tr.mixed_min_tokens_per_chip(F12, V4P)),
                    Slip("v4p 是 3D 环面：M_X M_Y 取 2。", lambda F12: POD * 4 * A ** 2 / F12)),
             explain=lambda F12: (f"约 {POD * tr.mixed_min_tokens_per_chip(F12, V4P) / 1e6:.1f}M token："
                                  "再小，按相加的模型任何切法都通信受限。")),
    Exercise("5.13b", "below_b_star", "choice", lambda: "A", choices=("A", "B", "C"),
             why={"B": "加大 TP 度会让 TP 项（正比于 Y）更早通信受限：门槛 4α²/(M_X M_Y F) 和怎么切无关。",
                  "C": "int8 让算力翻倍，但每字节也只剩一半，α 的作用不变（见练习 5.10）。"},
             explain="门槛是每芯片的 token 数：批次定了，就少用芯片。"),
    # ---- LLaMA-3-70B across v4p pods ---------------------------------------------------------------
    Exercise("5.14", "fsdp_chips_2m", "number", lambda B14: B14 / tr.dp_min_tokens_per_chip(V4P, 3), rtol=0.03,
             unit="颗", params=B14,
             slips=(Slip("用了一个轴的门槛 α：纯 FSDP 用三个轴，门槛是 α/3。", lambda B14: B14 / A),),
             explain=lambda B14: (f"约 {B14 / tr.dp_min_tokens_per_chip(V4P, 3):.0f} 颗，"
                                  "还不到一个 v4p Pod（4096 颗）。")),
    Exercise("5.14b", "x_opt_pod", "number", lambda B14b: tr.optimal_fsdp(B14b, POD, F70), rtol=0.05, unit="路",
             params=B14B,
             accept=(Alt(lambda B14b: _pow2_below(tr.optimal_fsdp(B14b, POD, F70)),
                         "取 2 的幂也对：X = 1024、Y = 4 正好铺满 4096 颗芯片。"),
                     Alt(lambda B14b: _pow2_other(tr.optimal_fsdp(B14b, POD, F70)),
                         "取最近的 2 的幂也对：X = 2048、Y = 2 也正好铺满 4096 颗芯片。")),
             slips=(Slip("M_X/M_Y 写反了：FSDP 用两个轴（M_X = 2），TP 用一个（M_Y = 1）。",
                         lambda B14b: math.sqrt(B14b / F70 * 0.5 * POD)),
                    Slip("用了 v5p Pod 的 8192 颗：v4p 的 Pod 是 4096 颗。",
                         lambda B14b: math.sqrt(B14b / F70 * 2 * 8192))),
             explain=lambda B14b: (f"约 {tr.optimal_fsdp(B14b, POD, F70):.0f}，取 X = 1024、Y = 4"
                                   + ("（或 X = 2048、Y = 2）" if _pow2_nearest(tr.optimal_fsdp(B14b, POD, F70)) > 1024
                                      else "") + "。")),
    Exercise("5.14c", "comms_over_math", "number", lambda B14c: _p514c(B14c=B14c), rtol=0.03, unit="（比值）",
             params=B14C,
             slips=(Slip("FSDP 项是 F/(Y·M_X)：FSDP 用两个轴，M_X = 2。", lambda B14c: _p514c(m_x=1, B14c=B14c)),
                    Slip("比值倒过来了：题目要通信时间 ÷ 计算时间。", lambda B14c: 1 / _p514c(B14c=B14c))),
             explain=lambda B14c: (f"约 {_p514c(B14c=B14c):.2f}：相加模型下通信也比计算少，计算受限。")),
    Exercise("5.14d", "dcn_tokens", "number", lambda: tr.dcn_min_tokens_per_pod(V4P), rtol=0.03, unit="token/Pod",
             slips=(Slip("每台主机有 4 颗芯片：主机的 2.5e10 B/s 要分给 4 颗，每颗 6.25e9 B/s。",
                         lambda: C / V4P.dcn_bw_per_host),
                    Slip("用了 v5p 的数：v4p 的峰值是 2.75e14 FLOPs/s。", lambda: 4.59e14 / V4P.dcn_bw_1way)),
             explain="C/W_dcn ≈ 44,000：LLaMA 的批次动辄几百万，轻松满足。"),
    Exercise("5.14e", "days_10_pods", "number", lambda pods, T14: _days_pods(pods, T14), rtol=0.03, unit="天",
             params={**PODS, **T14},
             slips=(Slip("题目说 100% MFU：不用再除以 0.5。", lambda pods, T14: _days_pods(pods, T14, mfu=0.5)),
                    Slip("用了 v5p Pod 的 8960 颗：v4p 的 Pod 是 4096 颗。",
                         lambda pods, T14: _days_pods(pods, T14, pod_chips=8960))),
             explain=lambda pods, T14: (f"100% MFU 下约 {_days_pods(pods, T14):.1f} 天，50% 时约 "
                                        f"{_days_pods(pods, T14, mfu=0.5):.0f} 天。")),
    Exercise("5.14f", "across_pods", "choice", lambda pods: "A", choices=("A", "B", "C"), params=PODS,
             why={"B": "FSDP 每层都要收集和归约权重，DCN 比 ICI 慢十几倍，跨 Pod 就卡在 DCN 上。",
                  "C": "张量并行每层都要搬激活、在关键路径上，只能放在最快的链路（一个 Pod 的 ICI 轴）上。"},
             explain="Pod 之间只做数据并行：每步只归约一次梯度，每 Pod 的批次远超 DCN 门槛。"),
    # ---- the interactive figure's threshold and the layer bytes ------------------------------------
    Exercise("5.15", "fsdp_tp_threshold", "function",
             lambda n_fsdp, n_tp, m_x, m_y, d_ff, chip: tr.fsdp_tp_threshold(n_fsdp, n_tp, m_x, m_y, d_ff, chip),
             rtol=1e-3, unit="token", sampler=_p515_sample,
             edge_cases=({"n_fsdp": 1, "n_tp": 4, "m_x": 1, "m_y": 1, "d_ff": 65536, "chip": "v4p"},
                         {"n_fsdp": 2048, "n_tp": 2, "m_x": 2, "m_y": 1, "d_ff": 32768, "chip": "v4p"},
                         {"n_fsdp": 512, "n_tp": 8, "m_x": 2, "m_y": 1, "d_ff": 65536, "chip": "v4p"}),
             slips=(Slip("n_fsdp = 1 时没有 FSDP 通信，门槛是 0（题目说了）。", _p515_slip("no_zero")),
                    Slip("FSDP 项除以 Y·M_X：FSDP 用 M_X 条轴，门槛要除以 M_X。", _p515_slip("no_mx")),
                    Slip("B* = Nα/(Y·M_X) = Xα/M_X：TP 度在 N/Y 里约掉了，不要再乘 Y。", _p515_slip("times_y"))),
             explain="B* = Nα/(Y M_X) = Xα/M_X：D 约掉了；TP 越多，门槛越低。"),
    Exercise("5.17", "layer_comm_bytes", "function", _layer_bytes, rtol=1e-3, sampler=_layer_sampler,
             unit="[前向字节, 反向字节]", labels=("前向", "反向"),
             edge_cases=({"kind": "dp", "B": 4096, "D": 1024, "F": 4096, "x": 1, "y": 1},
                         {"kind": "fsdp_tp", "B": 65536, "D": 2048, "F": 8192, "x": 8, "y": 1},
                         {"kind": "fsdp_tp", "B": 65536, "D": 2048, "F": 8192, "x": 1, "y": 4},
                         {"kind": "fsdp_tp", "B": 65536, "D": 2048, "F": 8192, "x": 16, "y": 4}),
             slips=(Slip("并行度为 1 的那一方不通信（题目的约定）：只有一份时没什么可收集、可归约的。",
                         _layer_slip("degree1")),
                    Slip("FSDP+TP 反向的激活项是 4BD/X（一次 AllGather dOut 加一次 ReduceScatter dIn），"
                         "不是原书汇总表里的 8BD/X。", _layer_slip("bwd8")),
                    Slip("数据并行的梯度要 AllReduce，按约定记 2V：两个权重矩阵共 2·2·2DF = 8DF。",
                         _layer_slip("ar_once"))),
             explain="DP 0 / 8DF，FSDP 4DF / 8DF，TP 4BD / 4BD，FSDP+TP 是两者各除以对方的并行度。"),
    # ---- experts and pipelines ---------------------------------------------------------------------
    Exercise("5.19", "ep_ratio", "number", lambda Fe: tr.ep_compute_comm_ratio(Fe, 8, V4P), rtol=0.03,
             unit="（比值）", params=FE,
             slips=(Slip("AllToAll 在双向环上的代价是 V/(4W)，不是 V/(2W)。",
                         lambda Fe: tr.ep_compute_comm_ratio(Fe, 8, V4P) / 2),
                    Slip("比值倒过来了：题目要计算时间 ÷ 通信时间。", lambda Fe: 1 / tr.ep_compute_comm_ratio(Fe, 8, V4P)),
                    Slip("题目的专家不带门控：两个矩阵，不是三个。",
                         lambda Fe: tr.ep_compute_comm_ratio(Fe, 8, V4P, gated=True))),
             explain=lambda Fe: f"约 {tr.ep_compute_comm_ratio(Fe, 8, V4P):.2f}：8 个细专家在一个环上通信受限。"),
    Exercise("5.19b", "ep_max", "number", lambda Fe: tr.ep_max_degree(Fe, V4P), rtol=0.03, unit="个专家",
             params=FE,
             slips=(Slip("AllToAll 在双向环上的代价是 V/(4W)：上限是 4F_e/α，不是 2F_e/α。",
                         lambda Fe: tr.ep_max_degree(Fe, V4P) / 2),
                    Slip("用了 v5p 的 α（2550）：这道题是 v4p。", lambda Fe: 4 * Fe / 2550.0)),
             explain=lambda Fe: (f"E < 4F_e/α ≈ {tr.ep_max_degree(Fe, V4P):.1f}：v4p 上环上的专家轴要更短，"
                                 "或者专家要更胖。")),
    Exercise("5.19c", "fix_experts", "choice", lambda: "A", choices=("A", "B", "C"),
             why={"B": "专家越多，每颗芯片分到的 token 越分散：比值 4F_e/(αE) 随 E 变小，更通信受限。",
                  "C": "int8 让算力翻倍，可 AllToAll 搬的激活也只剩一半字节，比值不变（和练习 5.10 一样）。"},
             explain="计算正比于 F_e，AllToAll 的字节与 F_e 无关：专家胖一些，计算就盖得住通信。"),
    Exercise("5.20", "bubbles", "numbers", _bubbles, rtol=0.03, unit="[比例, 比例]", params=PIPE,
             labels=("微批次多的", "微批次少的"),
             slips=(Slip("分母是总时隙 M + S − 1，不是微批次数 M。",
                         lambda S20, Ma, Mb: [(S20 - 1) / Ma, (S20 - 1) / Mb]),
                    Slip("空闲的时隙是 S − 1（首尾各等一段），不是 S。",
                         lambda S20, Ma, Mb: [S20 / (Ma + S20), S20 / (Mb + S20)])),
             explain=lambda S20, Ma, Mb: (f"{S20} 级、{Ma} 个微批次空闲约 {_bubbles(S20, Ma, Mb)[0]:.0%}，"
                                          f"{Mb} 个约 {_bubbles(S20, Ma, Mb)[1]:.0%}：微批次要远多于级数。")),
    Exercise("5.20b", "micro_cost", "choice", lambda Ma, Mb: "A", choices=("A", "B", "C"),
             params={"Ma": PIPE["Ma"], "Mb": PIPE["Mb"]},
             why={"B": "流水线每个微批次只在相邻两级之间传一次激活，总字节和微批次数无关。",
                  "C": "有代价：全局批次不变时，微批次越多每个越小。"},
             explain="微批次太小，每次矩阵乘法的批次维变小，可能掉到 HBM 门槛以下。"),
]
