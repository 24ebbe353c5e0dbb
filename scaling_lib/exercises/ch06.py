"""Chapter 6 exercises (spec 06, P6.1-P6.14; the layout part of P6.9 and the scheme of P6.12 are
free-text 思考题, not graded).

Expected values are computed from scaling_lib with the HF configs of LLaMA 3 (70.55e9 params for
70B) and the corrected constants of CANON; tests/test_exercises_06.py pins the spec's answers.
"""
from __future__ import annotations

from .. import hardware, models, training as tr
from ..transformer import TransformerConfig
from ..units import DAY
from . import Exercise

V5P = hardware.get("v5p")
L8, L70, L405 = models.LLAMA3_8B, models.LLAMA3_70B, models.LLAMA3_405B
B4 = 4 * 2**20
YEAR = 365 * DAY


def _param_count(L, D, F, N, K, H, V):
    return TransformerConfig(d_model=D, n_layers=L, n_heads=N, n_kv_heads=K, d_ff=F, vocab=V,
                             d_head=H).params()


def _param_sampler(rng):
    K = int(2 ** rng.integers(0, 4))
    N = K * int(2 ** rng.integers(0, 4))
    H = int(2 ** rng.integers(5, 8))
    return {"L": int(rng.integers(2, 128)), "D": N * H, "F": int(rng.integers(1, 64)) * 512,
            "N": N, "K": K, "H": H, "V": int(rng.integers(1000, 200_000))}


def _flops70():
    return tr.total_train_flops(L70.params(), 15e12)


def _p65():
    m = tr.training_memory(L70.params(), 4e6, 8192, 80)["total"]
    n = tr.min_chips_for_memory(m, V5P)
    return [m, n, tr.train_time(_flops70(), V5P, n, 0.4) / DAY]


def _p610():
    e = tr.estimate_train_days(L70, 15e12, B4, V5P, 4 * 8960, n_pods=4)
    return [e["tokens_per_chip"], e["ratio"]]


def _p610_days():
    e = tr.estimate_train_days(L70, 15e12, B4, V5P, 4 * 8960, n_pods=4)
    return (e["days_ici"] + e["days_compute"]) / 2      # the 8-12 day band: ICI bound .. 40% MFU


def _p610_choice():
    e = tr.estimate_train_days(L70, 15e12, B4, V5P, 4 * 8960, n_pods=4)
    return "B" if e["verdict"] in ("ici", "dcn") else "A"


def _cost(model, n_chips):
    t = tr.train_time(tr.total_train_flops(model.params(), 15e12), V5P, n_chips, 0.4)
    return tr.train_cost(t, n_chips, V5P)


EXERCISES = [
    Exercise("6.1", "n_params", "number", lambda: L70.params(), rtol=0.02, unit="个参数",
             accept=(70.4e9,),
             explain="FFN 5.64e10 + 注意力 1.21e10 + 嵌入 2.1e9 ≈ 7.06e10，FFN 占约 80%。"),
    Exercise("6.1b", "param_count", "function", _param_count, rtol=1e-3, sampler=_param_sampler,
             unit="个参数",
             explain="P = LD(3F + 2H(N+K)) + 2VD；归一化权重 (2L+1)D 小到可以不算。"),
    Exercise("6.2", "per_token", "numbers",
             lambda: [6 * L70.params(), 6 * L70.params() / V5P.peak()], rtol=0.05,
             unit="[FLOPs, 秒]",
             hints=((3.0, "训练是前向 2P 加反向 4P，共 6P。"),),
             explain="约 4.2e11 FLOPs，一颗 v5p 满载每个 token 约 0.92 ms。"),
    Exercise("6.3", "total", "numbers",
             lambda: [_flops70(), tr.train_time(_flops70(), V5P, 1, 1.0) / YEAR], rtol=0.05,
             unit="[FLOPs, 年]",
             explain="6.3e24 FLOPs，一颗芯片要四百多年。"),
    Exercise("6.4", "days_pod", "number", lambda: tr.train_time(_flops70(), V5P, 8960, 0.4) / DAY,
             rtol=0.05, unit="天",
             hints=((0.4, "别忘了除以 MFU 0.4。"),),
             explain="一个 Pod、40% MFU 约 44 天。"),
    Exercise("6.5", "min_memory", "numbers", _p65, rtol=0.05, unit="[字节, 颗, 天]",
             hints=((0.75, "题目说每层 4 个检查点，不是 3 个。"),),
             explain="约 21.7 TB，226 颗芯片就装得下，但要训 1750 天（约 4.8 年）。"),
    Exercise("6.6", "mem_per_chip", "number",
             lambda: tr.training_memory(L70.params(), 4e6, 8192, 80)["total"] / 8960, rtol=0.05,
             unit="字节",
             explain="每颗芯片只用约 2.4 GB，96 GB 的 HBM 远没用满。"),
    Exercise("6.6b", "mem_per_chip_12", "number",
             lambda: tr.training_memory(L70.params(), 4e6, 8192, 80, saves=("D",) * 12)["total"] / 8960,
             rtol=0.13, unit="字节", accept=(8e9,),
             explain="12 个检查点也只有约 7 GB：集群大小由 FLOPs 决定，不是内存。"),
    Exercise("6.7", "pure_dp_ok", "choice", lambda: "A" if tr.max_pure_dp(B4, 4096) >= 8960 else "B",
             choices=("A", "B"),
             explain="只有 1024 条序列，不切序列最多 1024 路。"),
    Exercise("6.7b", "n_seq", "number", lambda: tr.max_pure_dp(B4, 4096), rtol=0.0, atol=0.5,
             unit="条序列",
             explain="4·2^20 / 4096 = 1024。"),
    Exercise("6.8", "fsdp_numbers", "numbers",
             lambda: [B4 / 8960, tr.dp_min_tokens_per_chip(V5P, 3)], rtol=0.02,
             unit="[token/芯片, token/芯片]",
             explain="468 < 850：即使三个轴都用上，纯 FSDP 也卡在 ICI 上。"),
    Exercise("6.8b", "fsdp_ok", "choice",
             lambda: "A" if B4 / 8960 >= tr.dp_min_tokens_per_chip(V5P, 3) else "B", choices=("A", "B"),
             explain="不行：每芯片 token 不够。"),
    Exercise("6.9", "mixed_numbers", "numbers",
             lambda: [float(tr.mixed_min_tokens_per_chip(28672, V5P)),
                      float(tr.optimal_fsdp(B4, 8960, 28672))], rtol=0.05,
             unit="[token/芯片, 路]",
             explain="门槛 453.6 < 468，刚好可行；X_opt ≈ 1619，取 2048 × 4。"),
    Exercise("6.10", "four_pods", "numbers", _p610, rtol=0.05, unit="[token/芯片, 比值]",
             explain="每芯片 117 个 token，比值约 0.51：单步时间约是 FLOPs 时间的两倍。"),
    Exercise("6.10b", "regime", "choice", _p610_choice, choices=("A", "B"),
             explain="ICI 受限：该看通信的 Roofline，不是 FLOPs 的。"),
    Exercise("6.10c", "days_four_pods", "number", _p610_days, rtol=0.2, unit="天",
             explain="通信下界约 8.8 天，按 40% MFU 天真算是 11 天；答案在 8～12 天之间都算对。"),
    Exercise("6.11", "llama405", "numbers",
             lambda: [L405.params(), 6 * L405.params(), tr.total_train_flops(L405.params(), 15e12)],
             rtol=0.03, unit="[个参数, FLOPs, FLOPs]",
             explain="4.06e11 参数，每 token 2.44e12 FLOPs，15T token 共 3.65e25 FLOPs。"),
    Exercise("6.12", "days_405", "number",
             lambda: tr.train_time(tr.total_train_flops(L405.params(), 15e12), V5P, 8 * 8960, 0.4) / DAY,
             rtol=0.10, unit="天",
             explain="8 个 Pod、40% MFU 约 32 天，前提是计算受限。"),
    Exercise("6.12b", "bound_405", "number", lambda: tr.mixed_min_tokens_per_chip(53248, V5P),
             rtol=0.03, unit="token/芯片",
             explain="2α²/F ≈ 244：批次 4M 时每芯片只有 58 个 token，16M 时 234，正在边界上。"),
    Exercise("6.13", "llama8", "numbers",
             lambda: [L8.params(), tr.total_train_flops(L8.params(), 15e12),
                      tr.train_time(tr.total_train_flops(L8.params(), 15e12), V5P, 8960, 0.4) / DAY],
             rtol=0.05, unit="[个参数, FLOPs, 天]",
             explain="8B 在一个 Pod 上约 5 天；每参数 10 字节共 80 GB，纯数据并行勉强放得下参数。"),
    Exercise("6.14", "dollars", "numbers",
             lambda: [_cost(L70, 8960), _cost(L8, 8960), _cost(L405, 8 * 8960)], rtol=0.05,
             unit="[美元, 美元, 美元]",
             hints=((1 / 24, "芯片小时：秒数要除以 3600，不是 86400。"),),
             explain="70B 约 4000 万美元，8B 约 460 万，405B 约 2.3 亿（按 2025 年 2 月的标价）。"),
]
