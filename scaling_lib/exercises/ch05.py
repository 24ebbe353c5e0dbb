"""Chapter 5 exercises (spec 05, P5.1-P5.20; P5.16 and P5.18 are free-text 思考题, not graded).

Expected values are computed from scaling_lib (training, models, hardware) with the corrected
constants of CANON §1.4/§4 (F = 28,672 for LLaMA-3-70B, DCN bound 73,440); the spec's answers
are pinned in tests/test_exercises_05.py.
"""
from __future__ import annotations

from .. import hardware, models, training as tr
from ..units import DAY
from . import Exercise

V5P = hardware.get("v5p")
L13 = models.LLAMA2_13B
L70 = models.LLAMA3_70B


def _mem_16m():
    m = tr.training_memory(L13.params(), 16e6, 5120, 40, 13824, saves=("F", "F", "D"))
    return [m["params"] + m["optimizer"], m["checkpoints"]]


def _mem_per_chip_3m():
    m = tr.training_memory(L13.params(), 3e6, 5120, 40, 13824, saves=("F", "F", "D"))
    return m["total"] / 4096


def _p53_choice():
    return "A" if 10 * L13.params() <= V5P.hbm_bytes else "B"


def _p53c_choice():
    return "A" if 3e6 / 4096 >= tr.dp_min_tokens_per_chip(V5P, 3) else "B"


def _p54():
    return [float(tr.fsdp_step_comm_time(L13.params(), V5P, 3)),
            float(tr.step_time(L13.params(), 1e6, 1024, V5P)),
            float(tr.step_time(L13.params(), 10e6, 4096, V5P))]


def _p58():
    n = 16e6 / tr.dp_min_tokens_per_chip(V5P, 3)
    return tr.train_time(tr.total_train_flops(L70.params(), 15e12), V5P, n, mfu=0.5) / DAY


def _p512_sample(rng):
    """F, a chip, and an M_X·M_Y its torus allows (1 on the 2-D v5e/v6e, 1 or 2 on 3-D tori)."""
    chip = ["v5p", "v4p", "v5e", "v6e"][int(rng.integers(0, 4))]
    hi = hardware.max_mx_my(chip)
    return {"d_ff": int(rng.integers(4096, 65536)), "chip": chip,
            "mx_my": int(rng.integers(1, hi + 1))}


def _p59_choice():
    return "A" if 16 < tr.tp_max_degree(28672, V5P) else "B"


def _p510_choice():
    same = abs(tr.tp_max_degree(28672, V5P, dtype="int8") - tr.tp_max_degree(28672, V5P)) < 1e-9
    return "B" if same else "A"


def _p514c():
    t = tr.fsdp_tp_layer_times(3.5e6, 8192, 28672, 1024, 8, V5P, m_x=2, m_y=1)
    return t["t_comms"] / t["t_math"]


def _pow2(rng, lo, hi):
    return int(2 ** rng.integers(lo, hi + 1))


def _layer_bytes(kind, B, D, F, x, y):
    c = tr.layer_costs(kind, B, D, F, x=x, y=y)
    return [c.bytes_fwd, c.bytes_bwd]


def _layer_sampler(rng):
    kind = ["dp", "fsdp", "tp", "fsdp_tp"][int(rng.integers(0, 4))]
    x = _pow2(rng, 1, 10) if kind != "tp" else 1
    y = _pow2(rng, 1, 6) if kind in ("tp", "fsdp_tp") else 1
    return {"kind": kind, "B": _pow2(rng, 10, 24), "D": _pow2(rng, 9, 14), "F": _pow2(rng, 11, 16),
            "x": x, "y": y}


EXERCISES = [
    Exercise("5.1", "n_params", "number", lambda: L13.params(), rtol=0.03, unit="个参数",
             explain="FFN 8.49e9 + 注意力 4.19e9 + 词表 0.33e9 ≈ 1.30e10：FFN 占三分之二。"),
    Exercise("5.2", "mem_16m", "numbers", _mem_16m, rtol=0.05, unit="[字节, 字节]",
             hints=((0.5, "检查点是 bf16，每个元素 2 字节。"),),
             explain="参数加优化器只有 130 GB，检查点却有约 42 TB：大批次训练的内存大头是激活。"),
    Exercise("5.3", "pure_dp", "choice", _p53_choice, choices=("A", "B"),
             explain="10 字节 × 1.3e10 = 130 GB，一颗 96 GB 的 v5p 放不下一份完整副本。"),
    Exercise("5.3b", "fsdp_mem_per_chip", "number", _mem_per_chip_3m, rtol=0.10, unit="字节",
             accept=(2.05e9,),
             explain="约 8 TB 分到 4096 颗芯片，每颗约 2 GB：FSDP 在内存上绰绰有余。"),
    Exercise("5.3c", "fsdp_compute_bound", "choice", _p53c_choice, choices=("A", "B"),
             explain="每芯片 732 个 token < 850：纯 FSDP 卡在 ICI 上，批次至少要 3.48M 才行。"),
    Exercise("5.3d", "step_time", "number", lambda: tr.step_time(L13.params(), 3e6, 4096, V5P),
             rtol=0.10, unit="秒", accept=(0.131,),
             explain="6PB/(NC) ≈ 0.125 秒；32k 上下文时注意力还要再加约 80%。"),
    Exercise("5.3e", "x_opt", "number", lambda: tr.optimal_fsdp(3e6, 4096, 13824), rtol=0.05,
             unit="路",
             explain="X_opt ≈ 1333，取 X = 1024、Y = 4（2048 × 2 也可以）。"),
    Exercise("5.4", "step_times", "numbers", _p54, rtol=0.10, unit="[秒, 秒, 秒]",
             explain="1M 批次在 4096 颗上被 0.145 秒的 FSDP 通信卡住；换成 1024 颗反而计算受限；"
                     "10M 批次直接用纯 FSDP。"),
    Exercise("5.5", "max_params", "number", lambda: tr.max_params_pure_dp(V5P), rtol=0.10,
             unit="个参数",
             explain="96 GB / 10 字节 ≈ 96 亿参数，这还没算梯度和激活，是个上限。"),
    Exercise("5.6", "dp_bounds", "numbers",
             lambda: [tr.dp_min_tokens_per_chip(V5P, 1), tr.dp_min_tokens_per_chip(V5P, 3)],
             rtol=0.05, unit="[token/芯片, token/芯片]",
             hints=((2.0, "ICI 的 W 要用双向带宽 1.8e11。"),),
             explain="一个轴 2550，三个轴 850：整个 Pod 用纯数据并行至少要约 7.6M token 的批次。"),
    Exercise("5.6b", "pod_batch", "number", lambda: tr.dp_min_tokens_per_chip(V5P, 3) * 8960,
             rtol=0.05, unit="token",
             explain="850 × 8960 ≈ 7.6M token。"),
    Exercise("5.7", "deepseek_chips", "number", lambda: 40e6 / tr.dp_min_tokens_per_chip(V5P, 3),
             rtol=0.05, unit="颗",
             explain="约 4.7 万颗芯片，5 个多 Pod：大批次让纯 FSDP 也能铺得很开。"),
    Exercise("5.8", "days", "number", _p58, rtol=0.05, unit="天",
             hints=((2.0, "MFU 是 50%，别忘了除以 0.5。"),),
             explain="约 1.9 万颗芯片、50% MFU，15T token 约 17 天。"),
    Exercise("5.9", "tp_max", "number", lambda: tr.tp_max_degree(28672, V5P), rtol=0.05, unit="路",
             accept=(11.8,),
             explain="F/α ≈ 11.2：8 路可以，16 路在一个轴上就通信受限了。"),
    Exercise("5.9b", "tp16_ok", "choice", _p59_choice, choices=("A", "B"),
             explain="16 > 11.2，16 路 TP 放在一个轴上是通信受限的。"),
    Exercise("5.10", "int8_changes", "choice", _p510_choice, choices=("A", "B"),
             explain="int8 让 C 翻倍，但激活字节也减半，F/α 不变。"),
    Exercise("5.11", "x_opt_64", "number", lambda: tr.optimal_fsdp(48000, 64, 32768), rtol=0.05,
             unit="路", accept=(13.9,),
             explain="X_opt ≈ 13.7，取 2 的幂：16 路 FSDP × 4 路 TP。"),
    Exercise("5.12", "mixed_min", "function",
             lambda d_ff, chip, mx_my: float(tr.mixed_min_tokens_per_chip(d_ff, chip, mx_my)),
             rtol=0.01, unit="token/芯片",
             sampler=_p512_sample,
             explain="4α²/(M_X M_Y F)：F = 32,768、M_X M_Y = 2 时约 397，是纯 FSDP 850 的一半不到。"),
    Exercise("5.12b", "mixed_min_v5p", "number", lambda: tr.mixed_min_tokens_per_chip(32768, V5P),
             rtol=0.03, unit="token/芯片", accept=(400.0,),
             explain="约 397 个 token/芯片，和 HBM 强度（164）只差两三倍。"),
    Exercise("5.13", "b_star", "number", lambda: 4096 * tr.mixed_min_tokens_per_chip(32768, V5P),
             rtol=0.05, unit="token",
             hints=((1e4, "原书图注印成了 1.6e10，是笔误。"),),
             explain="约 1.6M token：再小，任何切法都通信受限。"),
    Exercise("5.14", "fsdp_chips_2m", "number", lambda: 2e6 / tr.dp_min_tokens_per_chip(V5P, 3),
             rtol=0.05, unit="颗",
             explain="约 2350 颗，四分之一个 Pod。"),
    Exercise("5.14b", "x_opt_pod", "number", lambda: tr.optimal_fsdp(3.5e6, 8192, 28672),
             rtol=0.05, unit="路", accept=(1383.0,),
             explain="约 1414，取 1024 × 8（8192 颗芯片）。"),
    Exercise("5.14c", "comms_over_math", "number", _p514c, rtol=0.03, unit="（比值）",
             accept=(5293 / 5026,),
             explain="约 1.08：相加模型下通信比计算多 8%，就在边上。"),
    Exercise("5.14d", "dcn_tokens", "number", lambda: tr.dcn_min_tokens_per_pod(V5P), rtol=0.05,
             unit="token/Pod", accept=(75000.0,),
             explain="C/W_dcn ≈ 73,440：LLaMA 的批次动辄几百万，轻松满足。"),
    Exercise("5.14e", "days_10_pods", "number",
             lambda: tr.train_time(tr.total_train_flops(L70.params(), 15e12), V5P, 89600, 1.0) / DAY,
             rtol=0.10, unit="天",
             explain="100% MFU 下约 1.8 天，50% 时约 3.6 天；原书的“约 2 天”隐含了接近满载。"),
    Exercise("5.15", "fsdp_tp_threshold", "function",
             lambda n_fsdp, n_tp, m_x, m_y, d_ff, chip: tr.fsdp_tp_threshold(n_fsdp, n_tp, m_x, m_y,
                                                                              d_ff, chip),
             rtol=1e-6, unit="token",
             sampler=lambda rng: {"n_fsdp": _pow2(rng, 1, 12), "n_tp": _pow2(rng, 0, 3),
                                  "m_x": int(rng.integers(1, 4)), "m_y": 1,
                                  "d_ff": _pow2(rng, 15, 17), "chip": "v5p"},
             explain="B* = Nα/(Y M_X) = Xα/M_X：D 约掉了；TP 越多，门槛越低。"),
    Exercise("5.17", "layer_comm_bytes", "function", _layer_bytes, rtol=1e-9,
             sampler=_layer_sampler, unit="[前向字节, 反向字节]",
             explain="DP 0 / 8DF，FSDP 4DF / 8DF，TP 4BD / 4BD，FSDP+TP 是两者各除以对方的并行度。"),
    Exercise("5.19", "ep_ratio", "number", lambda: tr.ep_compute_comm_ratio(2048, 8, V5P),
             rtol=0.05, unit="（比值）",
             hints=((2.0, "AllToAll 在双向环上的代价是 V/(4W)。"),),
             explain="约 0.40：8 个细专家在一个环上通信受限。"),
    Exercise("5.19b", "ep_max", "number", lambda: tr.ep_max_degree(2048, V5P), rtol=0.10,
             unit="个专家",
             explain="E < 4F_e/α ≈ 3.2：环上的专家轴要短，或者专家要胖。"),
    Exercise("5.20", "bubbles", "numbers",
             lambda: [float(tr.bubble_fraction(8, 32)), float(tr.bubble_fraction(8, 8))], rtol=0.03,
             unit="[比例, 比例]",
             hints=((100.0, "这里要 0 到 1 之间的小数，不是百分数。"),),
             explain="8 级、32 个微批次空闲 18%，8 个微批次空闲 47%：微批次要远多于级数。"),
]
