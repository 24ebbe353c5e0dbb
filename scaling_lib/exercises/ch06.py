"""Chapter 6 exercises (spec 06, P6.1-P6.14; the layout questions of P6.9 and P6.12 are free-text
思考题, not graded).

The chapter works the case of LLaMA 3 70B (and 8B, 405B) on TPU v5p Pods with 15T tokens and a
batch of 4M tokens. Every exercise here asks another instance: LLaMA 2 13B (MHA, V = 32000) on
TPU v5e Pods (16 GB HBM, a 2D torus, 1.2 $/chip-hour) with 2T tokens and a batch of 3·2^20
tokens, then a 3B model and LLaMA 2 70B. No expected value is a number the chapter prints
(tests/test_exercises.py checks it). Each exercise declares its likely slips; the choice items ask
what binds (memory, ICI, DCN) and which option wins, and why.
"""
from __future__ import annotations

import math

from .. import hardware, models, training as tr
from ..transformer import TransformerConfig
from ..units import DAY
from . import Exercise, Slip

V5E = hardware.get("v5e")
L13, L70 = models.get("LLaMA-2-13B"), models.get("LLaMA-2-70B")
# a 3B model (OpenLLaMA-3B shapes): D = 3200, 26 layers, MHA 32 heads of 100, F = 8640, V = 32000
L3 = TransformerConfig(name="3B", d_model=3200, n_layers=26, n_heads=32, n_kv_heads=32, d_ff=8640,
                       vocab=32000, d_head=100)
TOK = 2e12                 # training tokens
B6 = 3 * 2**20             # batch tokens (768 sequences of 4096)
POD = 256                  # v5e chips per Pod (16x16)
PRICE = 1.2                # $/chip-hour (v5e, the catalogue's Feb-2025 list price)
C5E, C5P = 1.97e14, 4.59e14
YEAR = 365 * DAY


def _p(cfg, embeds=2, kv=None, ffn=3):
    """Parameters without the norm weights: L·(ffn·DF + 2DH(N + K)) + embeds·VD."""
    K = cfg.n_kv_heads if kv is None else kv
    D, H = cfg.d_model, cfg.d_head
    return cfg.n_layers * (ffn * D * cfg.d_ff + 2 * D * H * (cfg.n_heads + K)) + embeds * cfg.vocab * D


P13 = _p(L13)


def _param_count(L, D, F, N, K, H, V):
    return TransformerConfig(d_model=D, n_layers=L, n_heads=N, n_kv_heads=K, d_ff=F, vocab=V,
                             d_head=H).params()


def _param_sampler(rng):
    K = int(2 ** rng.integers(0, 4))
    N = K * int(2 ** rng.integers(0, 4))
    H = int(2 ** rng.integers(5, 8))
    return {"L": int(rng.integers(2, 128)), "D": N * H, "F": int(rng.integers(1, 64)) * 512,
            "N": N, "K": K, "H": H, "V": int(rng.integers(1000, 200_000))}


def _pc_slip(kind):
    def f(L, D, F, N, K, H, V):
        if kind == "no_embed":
            return L * (3 * D * F + 2 * D * H * (N + K))
        if kind == "one_embed":
            return L * (3 * D * F + 2 * D * H * (N + K)) + V * D
        return L * (3 * D * F + 4 * D * H * N) + 2 * V * D     # K and V with N heads
    return f


def _flops(P=P13, tokens=TOK, k=6):
    return k * P * tokens


def _days(flops, n_chips, mfu=0.4, chip=V5E):
    return float(tr.train_time(flops, chip, n_chips, mfu)) / DAY


# ---- 6.5, 6.6: memory ---------------------------------------------------------------------------

def _mem(saves=4, opt_bytes=8.0, act_bytes=2.0):
    return tr.training_memory(P13, B6, L13.d_model, L13.n_layers, saves=("D",) * saves,
                              opt_bytes=opt_bytes, act_bytes=act_bytes)["total"]


def _p65(**kw):
    m = _mem(**kw)
    n = tr.min_chips_for_memory(m, V5E)
    return [m, n, _days(_flops(), n)]


# ---- 6.8-6.10: FSDP on the 2D torus, several Pods over DCN --------------------------------------

def _fsdp_bound(axes=2):
    # the library refuses a third axis on the v5e's 2D torus; a reader's slip computes alpha/3 anyway
    return float(tr.dp_min_tokens_per_chip(V5E, axes)) if axes <= 2 else float(tr.alpha(V5E)) / axes


def _p68(axes=2):
    return [B6 / POD, _fsdp_bound(axes)]


def _p69(axes=2):
    return B6 / _fsdp_bound(axes)


def _p610():
    return [B6 / 4, float(tr.dcn_min_tokens_per_pod(V5E))]


def _cost(P, n_chips, mfu=0.4, price=PRICE, seconds_per=3600):
    t = float(tr.train_time(_flops(P), V5E, n_chips, mfu))
    return t / seconds_per * n_chips * price


EXERCISES = [
    Exercise("6.1", "n_params", "number", lambda: P13, rtol=0.01, unit="个参数",
             slips=(Slip("漏了两个词表矩阵：输入嵌入和输出反嵌入不共享，各 V·D 个参数。", lambda: _p(L13, embeds=0)),
                    Slip("只算了一个词表矩阵：LLaMA 2 的嵌入和反嵌入不共享，要算两份。", lambda: _p(L13, embeds=1)),
                    Slip("按 GQA（8 个 KV 头）算了：LLaMA 2 13B 是 MHA，K、V 各有 40 个头。",
                         lambda: _p(L13, kv=8)),
                    Slip("FFN 按两个矩阵算了：门控 FFN 有三个 D×F 矩阵。", lambda: _p(L13, ffn=2))),
             explain="约 130 亿：FFN 占约 2/3，MHA 的注意力投影占近 1/3，词表矩阵只占 2.5%。"),
    Exercise("6.1b", "param_count", "function", _param_count, rtol=1e-3, sampler=_param_sampler,
             unit="个参数",
             edge_cases=({"L": 40, "D": 5120, "F": 13824, "N": 40, "K": 40, "H": 128, "V": 32000},
                         {"L": 2, "D": 4096, "F": 1024, "N": 32, "K": 1, "H": 128, "V": 1000},
                         {"L": 80, "D": 8192, "F": 28672, "N": 64, "K": 8, "H": 128, "V": 32000}),
             slips=(Slip("漏了两个词表矩阵：2·V·D 个参数也要算。", _pc_slip("no_embed")),
                    Slip("只算了一个词表矩阵：嵌入和反嵌入不共享。", _pc_slip("one_embed")),
                    Slip("K、V 投影按 N 个头算了：GQA 里它们只有 K 个头，各 D·K·H。", _pc_slip("kv_as_n"))),
             explain="P = LD(3F + 2H(N+K)) + 2VD；归一化权重 (2L+1)D 小到可以不算。"),
    Exercise("6.2", "per_token", "numbers", lambda: [6 * P13, 6 * P13 / C5E], rtol=0.03,
             unit="[FLOPs, 秒]", labels=("FLOPs", "秒"),
             slips=(Slip("训练是前向 2P 加反向 4P，共 6P；2P 只是前向。", lambda: [2 * P13, 2 * P13 / C5E]),
                    Slip("用了 v5p 的峰值：这道题是 v5e（1.97e14 FLOPs/s）。", lambda: [6 * P13, 6 * P13 / C5P])),
             explain="每个 token 约 7.8e10 FLOPs，一颗 v5e 满载要约 0.4 ms。"),
    Exercise("6.3", "total", "numbers", lambda: [_flops(), _flops() / C5E / YEAR], rtol=0.03,
             unit="[FLOPs, 年]", labels=("总 FLOPs", "年"),
             slips=(Slip("训练是 6P 每 token，不是 2P。", lambda: [_flops(k=2), _flops(k=2) / C5E / YEAR]),
                    Slip("用了正文的 15T token：这道题是 2T。",
                         lambda: [_flops(tokens=15e12), _flops(tokens=15e12) / C5E / YEAR])),
             explain="约 1.6e23 FLOPs：一颗 v5e 满载也要二十多年。"),
    Exercise("6.4", "days_pod", "number", lambda: _days(_flops(), POD), rtol=0.03, unit="天",
             slips=(Slip("忘了除以 MFU 0.4：芯片只有 40% 的时间在做有用的 FLOPs。", lambda: _days(_flops(), POD, mfu=1.0)),
                    Slip("乘了 MFU 而不是除以它：MFU 越低，时间越长。",
                         lambda: _days(_flops(), POD, mfu=1.0) * 0.4),
                    Slip("按 8960 颗芯片算了：那是 v5p 的 Pod；v5e 的 Pod 是 16×16 = 256 颗。",
                         lambda: _days(_flops(), 8960))),
             explain="一个 v5e Pod、40% MFU 约三个月。"),
    Exercise("6.4b", "cheaper_chip", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "v5p 每颗更快，但也贵得多：总花费 = FLOPs ÷ (峰值 × MFU) × 单价，比的是单价 ÷ 峰值，不是速度。",
                  "C": "两者的“单价 ÷ 峰值”不一样：v5e 约 1.2/1.97e14，v5p 约 4.2/4.59e14，差了一半。",
                  "D": "HBM 大让你能少用几颗芯片，但在同样的 MFU 下总的芯片小时不变：花费只看单价 ÷ 峰值。"},
             explain="同样的 MFU 下，花费正比于单价 ÷ 峰值：v5e 每个峰值 FLOP 便宜约 1/3。"),
    Exercise("6.5", "min_memory", "numbers", _p65, rtol=0.03, unit="[字节, 颗, 天]",
             labels=("总字节", "最少芯片数", "天数"),
             slips=(Slip("每层只算了 3 个检查点：题目说 4 个。", lambda: _p65(saves=3)),
                    Slip("检查点按 fp32 的 4 字节算了：题目说 bf16。", lambda: _p65(act_bytes=4.0))),
             explain="约 5.3 TB，大头是检查点：至少要 331 颗 v5e，训练要两个多月。"),
    Exercise("6.6", "mem_per_chip", "number", lambda: _mem() / POD, rtol=0.03, unit="字节",
             slips=(Slip("漏了检查点：权重和优化器状态每颗只占约 0.5 GB，检查点才是大头。",
                         lambda: (_mem() - float(tr.training_memory(P13, B6, 5120, 40)["checkpoints"])) / POD),
                    Slip("除以了 8960：v5e 的 Pod 只有 256 颗芯片。", lambda: _mem() / 8960)),
             explain="每颗约 21 GB，超过了 v5e 的 16 GB：一个 Pod 装不下这份账。"),
    Exercise("6.6b", "memory_fix", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "FSDP 已经把权重和优化器状态切成 256 份，每颗只剩约 0.5 GB；超出的是检查点（每颗约 20 GB）。",
                  "C": "纯数据并行每颗芯片都要存一整份权重和优化器状态（约 130 GB），更装不下。",
                  "D": "int8 权重只省下权重的那一半（每颗约 0.05 GB），检查点一点没少。"},
             explain="检查点占了约 97%：每层只存一个（整层重算）就把它砍到四分之一，每颗约 5 GB。"),
    Exercise("6.7", "pure_dp_ok", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "序列数够（768 ≥ 256），但纯数据并行每颗芯片都要存一整份权重和 Adam 状态：约 130 GB，远超 16 GB。",
                  "C": "批次里有 768 条序列，比 256 颗芯片多：不切序列也分得开。",
                  "D": "纯数据并行每步只做一次梯度的 AllReduce，每芯片 12288 个 token 时远在 ICI 门槛之上；卡住它的是内存。"},
             explain="序列够分，内存不够：每参数 10 字节，130 亿参数要 130 GB，一颗 v5e 只有 16 GB。"),
    Exercise("6.7b", "max_pure_dp", "number", lambda: float(tr.max_params_pure_dp(V5E)), rtol=0.03, unit="个参数",
             slips=(Slip("每参数只算了 bf16 权重的 2 字节：Adam 的两个 fp32 矩还要 8 字节，共 10 字节。",
                         lambda: 16e9 / 2),
                    Slip("用了 v5p 的 96 GB：这道题是 v5e，每颗 16 GB。", lambda: 96e9 / 10)),
             explain="16 GB ÷ 10 字节：纯数据并行在 v5e 上最多放 16 亿参数的模型。"),
    Exercise("6.8", "fsdp_numbers", "numbers", _p68, rtol=0.03, unit="[token/芯片, token/芯片]",
             labels=("每芯片 token", "FSDP 门槛"),
             slips=(Slip("门槛按一个轴算了：v5e 的 2D 环面两个轴都能用，门槛是 α/2。", lambda: _p68(axes=1)),
                    Slip("门槛按三个轴算了：v5e 是 2D 环面，只有两个轴（v5p 才有三个）。", lambda: _p68(axes=3))),
             explain="每芯片 12288 个 token，门槛约 1094：FSDP 在一个 v5e Pod 上轻松计算受限。"),
    Exercise("6.8b", "fsdp_ok", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "v5e 的 ICI 确实比 v5p 慢，但门槛 α/2 ≈ 1094 已经算进了它；每芯片 12288 个 token 是门槛的 11 倍。",
                  "C": "2D 环面只是让门槛是 α/2 而不是 α/3：两个轴都用上，门槛仍远低于 12288。",
                  "D": "门槛只和芯片有关（α = C/W_ici），和序列长度无关：比的是每芯片的 token 数。"},
             explain="12288 ≫ 1094：通信能完全藏在计算后面。"),
    Exercise("6.9", "fsdp_max_chips", "number", _p69, rtol=0.03, unit="颗",
             slips=(Slip("门槛按一个轴算了：v5e 两个轴都用上时门槛是 α/2 ≈ 1094。", lambda: _p69(axes=1)),
                    Slip("门槛按三个轴算了：v5e 是 2D 环面。", lambda: _p69(axes=3))),
             explain="批次除以门槛：纯 FSDP 最多铺到约 2900 颗芯片，再多就卡在 ICI 上。"),
    Exercise("6.10", "four_pods", "numbers", _p610, rtol=0.03, unit="[token/Pod, token/Pod]",
             labels=("每 Pod token", "DCN 门槛"),
             slips=(Slip("DCN 门槛按 v5p 算了：v5e 每颗芯片的 DCN 只有 3.125e9 B/s，门槛是 C/W_dcn ≈ 63040。",
                         lambda: [B6 / 4, C5P / 6.25e9]),
                    Slip("第一个数给了每芯片的 token 数：DCN 门槛比的是每个 Pod 的 token 数。",
                         lambda: [B6 / 1024, float(tr.dcn_min_tokens_per_pod(V5E))])),
             explain="每个 Pod 78 万多个 token，DCN 门槛约 6.3 万：跨 Pod 的数据并行也计算受限。"),
    Exercise("6.10b", "regime", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "DCN 慢，但每步只跨 Pod 归约一次梯度：每个 Pod 78 万 token，是 DCN 门槛（约 6.3 万）的 12 倍。",
                  "C": "每芯片 3072 个 token，仍比 Pod 内 FSDP 的门槛（约 1094）大近 3 倍。",
                  "D": "4 个 Pod 时每颗芯片约 5 GB（4 个检查点），16 GB 放得下；内存也不是瓶颈。"},
             explain="Pod 内 3072 > 1094，Pod 间 78 万 > 6.3 万：两级都计算受限。"),
    Exercise("6.10c", "days_four_pods", "number", lambda: _days(_flops(), 4 * POD), rtol=0.03, unit="天",
             slips=(Slip("忘了除以 MFU 0.4。", lambda: _days(_flops(), 4 * POD, mfu=1.0)),
                    Slip("这是一个 Pod 的天数：4 个 Pod 计算受限时快 4 倍。", lambda: _days(_flops(), POD))),
             explain="计算受限时 4 个 Pod 正好快 4 倍：三周出头。"),
    Exercise("6.11", "llama2_70b", "numbers",
             lambda: [_p(L70), 6 * _p(L70), _flops(_p(L70))], rtol=0.03, unit="[个参数, FLOPs, FLOPs]",
             labels=("参数量", "每 token FLOPs", "总 FLOPs"),
             slips=(Slip("按 MHA 算了：LLaMA 2 70B 用 GQA，K、V 只有 8 个头。",
                         lambda: [_p(L70, kv=64), 6 * _p(L70, kv=64), _flops(_p(L70, kv=64))]),
                    Slip("用了正文的 15T token：这道题是 2T。",
                         lambda: [_p(L70), 6 * _p(L70), _flops(_p(L70), tokens=15e12)])),
             explain="约 690 亿参数，2T token 共约 8.3e23 FLOPs。"),
    Exercise("6.12", "days_70", "number", lambda: _days(_flops(_p(L70)), 4 * POD), rtol=0.03, unit="天",
             slips=(Slip("忘了除以 MFU 0.4。", lambda: _days(_flops(_p(L70)), 4 * POD, mfu=1.0)),
                    Slip("用了 v5p 的峰值：这道题是 v5e。",
                         lambda: _days(_flops(_p(L70)), 4 * POD, chip=hardware.get("v5p")))),
             explain="4 个 v5e Pod、40% MFU 要近四个月：同样的 FLOPs，v5e 每颗只有 v5p 的四成多。"),
    Exercise("6.12b", "bound_70", "number", lambda: float(tr.mixed_min_tokens_per_chip(L70.d_ff, V5E)),
             rtol=0.03, unit="token/芯片",
             slips=(Slip("这是 3D 环面（M_X M_Y = 2）的 2α²/F：v5e 是 2D 环面，M_X M_Y = 1，门槛是 4α²/F。",
                         lambda: float(tr.mixed_min_tokens_per_chip(L70.d_ff, V5E, mx_my=1)) / 2),
                    Slip("用了 v5p 的 α：这道题是 v5e（α = C/W_ici ≈ 2189）。",
                         lambda: float(tr.mixed_min_tokens_per_chip(L70.d_ff, "v5p")))),
             explain="4α²/F ≈ 668：每芯片 3072 个 token，FSDP + TP 也计算受限。"),
    Exercise("6.13", "model_3b", "numbers",
             lambda: [_p(L3), _flops(_p(L3)), _days(_flops(_p(L3)), POD)], rtol=0.03,
             unit="[个, FLOPs, 天]", labels=("参数量", "总 FLOPs", "天数"),
             slips=(Slip("训练是 6P 每 token，不是 2P。",
                         lambda: [_p(L3), _flops(_p(L3), k=2), _days(_flops(_p(L3), k=2), POD)]),
                    Slip("忘了除以 MFU 0.4。", lambda: [_p(L3), _flops(_p(L3)), _days(_flops(_p(L3)), POD, mfu=1.0)])),
             explain="3B 在一个 v5e Pod 上不到一个月。"),
    Exercise("6.14", "dollars", "numbers",
             lambda: [_cost(P13, POD), _cost(_p(L3), POD), _cost(_p(L70), 4 * POD)], rtol=0.03,
             unit="[美元, 美元, 美元]", labels=("13B", "3B", "70B"),
             slips=(Slip("芯片小时：秒数要除以 3600，不是 86400（那是天）。",
                         lambda: [_cost(P13, POD, seconds_per=86400), _cost(_p(L3), POD, seconds_per=86400),
                                  _cost(_p(L70), 4 * POD, seconds_per=86400)]),
                    Slip("用了 v5p 的 4.2 美元：这道题是 v5e，1.2 美元/芯片小时。",
                         lambda: [_cost(P13, POD, price=4.2), _cost(_p(L3), POD, price=4.2),
                                  _cost(_p(L70), 4 * POD, price=4.2)]),
                    Slip("忘了除以 MFU 0.4：只有 40% 的芯片小时在做有用的 FLOPs，付钱却是全部的。",
                         lambda: [_cost(P13, POD, mfu=1.0), _cost(_p(L3), POD, mfu=1.0), _cost(_p(L70), 4 * POD, mfu=1.0)])),
             explain="按 v5e 的标价：13B 约 66 万美元，3B 约 17 万，70B 约 350 万。"),
    Exercise("6.14b", "pods_cost", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "芯片多了 4 倍，时间也短了 4 倍：芯片小时不变，花费不变。",
                  "C": "快了不等于便宜：按芯片小时付钱，4 倍的芯片用四分之一的时间，总数一样。",
                  "D": "6.10b 里两级都计算受限，MFU 不变：DCN 没有让它变慢，也就没有多花钱。"},
             explain="花费 = FLOPs ÷ (峰值 × MFU) × 单价，与芯片数无关：MFU 不掉，加芯片只换时间。"),
]
