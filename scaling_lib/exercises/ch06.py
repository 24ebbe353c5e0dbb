"""Chapter 6 exercises (spec 06, P6.1-P6.14; the layout questions of P6.9 and P6.12 are free-text
思考题, not graded).

The chapter works the case of LLaMA 3 70B (and 8B, 405B) on TPU v5p Pods with 15T tokens and a
batch of 4M tokens. Every exercise here asks another instance: LLaMA 2 13B (MHA, V = 32000) on
TPU v5e Pods (16 GB HBM, a 2D torus, 1.2 $/chip-hour) with 2T tokens and a batch of 3·2^20
tokens, then a 3B model and LLaMA 2 70B. No expected value is a number the chapter prints
(tests/test_exercises.py checks it). Each exercise declares its likely slips; the choice items ask
what binds (memory, ICI, DCN) and which option wins, and why.

Per-student numbers (``params``, see scaling_lib.exercises): the training tokens (``tokens``), the
batch as a number of 4096-token sequences (``seqs``) and the number of Pods (``pods``) of 6.10-6.14b.
The models of the table, the chip (v5e: peak, HBM, ICI, DCN, price) and the 40% MFU stay fixed:
they are what the chapter teaches. The grids keep the chapter's reasoning valid: with 4
checkpoints per layer one Pod still runs out of HBM (6.6, 6.6b: at least 704 sequences, 19 GB per
chip), several Pods still fit in it and stay compute-bound at both levels (6.10b: at least 1.7
times the FSDP bound per chip; at most 1536 sequences on 3 Pods, 14 GB per chip), and the sizes
leave out the chapter's own (15T tokens, a batch of 4M = 1024 sequences).
"""
from __future__ import annotations

import math

from .. import hardware, models, training as tr
from ..transformer import TransformerConfig
from ..units import DAY
from . import Exercise, Param, Slip

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
SEQ = 4096                 # tokens per sequence

TOKENS = {"tokens": Param(TOK, (1.2e12, 1.3e12, 1.6e12, 2.4e12, 3.2e12, 4e12, 5e12, 6e12, 8e12))}
SEQS = {"seqs": Param(768, (704, 832, 896, 1000, 1088, 1280, 1408, 1536))}
PODS = {"pods": Param(4, (3, 5, 6))}


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

def _mem(seqs=768, saves=4, opt_bytes=8.0, act_bytes=2.0, part="total"):
    return tr.training_memory(P13, seqs * SEQ, L13.d_model, L13.n_layers, saves=("D",) * saves,
                              opt_bytes=opt_bytes, act_bytes=act_bytes)[part]


def _p65(seqs=768, tokens=TOK, **kw):
    m = _mem(seqs, **kw)
    n = tr.min_chips_for_memory(m, V5E)
    return [m, n, _days(_flops(tokens=tokens), n)]


# ---- 6.8-6.10: FSDP on the 2D torus, several Pods over DCN --------------------------------------

def _fsdp_bound(axes=2):
    # the library refuses a third axis on the v5e's 2D torus; a reader's slip computes alpha/3 anyway
    return float(tr.dp_min_tokens_per_chip(V5E, axes)) if axes <= 2 else float(tr.alpha(V5E)) / axes


def _p68(seqs=768, axes=2):
    return [seqs * SEQ / POD, _fsdp_bound(axes)]


def _p69(seqs=768, axes=2):
    return seqs * SEQ / _fsdp_bound(axes)


def _p610(seqs=768, pods=4):
    return [seqs * SEQ / pods, float(tr.dcn_min_tokens_per_pod(V5E))]


def _cost(P, n_chips, mfu=0.4, price=PRICE, seconds_per=3600, tokens=TOK):
    t = float(tr.train_time(_flops(P, tokens), V5E, n_chips, mfu))
    return t / seconds_per * n_chips * price


def _p614(tokens=TOK, **kw):
    return [_cost(P13, POD, tokens=tokens, **kw), _cost(_p(L3), POD, tokens=tokens, **kw),
            _cost(_p(L70), 4 * POD, tokens=tokens, **kw)]


def _sci(x):
    return f"{x:.2g}".replace("e+", "e")


FSDP_BOUND = _fsdp_bound()
DCN_BOUND = float(tr.dcn_min_tokens_per_pod(V5E))


def _why66b(letter):
    def f(seqs):
        ckpt = _mem(seqs, part="checkpoints") / POD / 1e9
        return {"A": f"FSDP 已经把权重和优化器状态切成 256 份，每颗只剩约 0.5 GB；超出的是检查点（每颗约 {ckpt:.0f} GB）。",
                "C": "纯数据并行每颗芯片都要存一整份权重和优化器状态（约 130 GB），更装不下。",
                "D": "int8 权重只省下权重的那一半（每颗约 0.05 GB），检查点一点没少。"}[letter]
    return f


def _explain66b(seqs):
    share = _mem(seqs, part="checkpoints") / _mem(seqs)
    one = _mem(seqs, saves=1) / POD / 1e9
    return f"检查点占了约 {share:.0%}：每层只存一个（整层重算）就把它砍到四分之一，每颗约 {one:.1f} GB。"


def _why67(letter):
    def f(seqs):
        return {"A": f"序列够数（{seqs} ≥ 256），但纯数据并行每颗芯片都要存一整份权重和 Adam 状态：约 130 GB，远超 16 GB。",
                "C": f"批次里有 {seqs} 条序列，比 256 颗芯片多：不切序列也分得开。",
                "D": (f"纯数据并行每步只做一次梯度的 AllReduce，每芯片 {seqs * SEQ // POD} 个 token 时远在 ICI 门槛之上；"
                      "卡住它的是内存。")}[letter]
    return f


def _why68b(letter):
    def f(seqs):
        per = seqs * SEQ / POD
        return {"B": (f"v5e 的 ICI 确实比 v5p 慢，但门槛 α/2 ≈ 1094 已经算进了它；每芯片 {per:.0f} 个 token 是门槛的 "
                      f"{per / FSDP_BOUND:.0f} 倍。"),
                "C": f"2D 环面只是让门槛是 α/2 而不是 α/3：两个轴都用上，门槛仍远低于 {per:.0f}。",
                "D": "门槛只和芯片有关（α = C/W_ici），和序列长度无关：比的是每芯片的 token 数。"}[letter]
    return f


def _why610b(letter):
    def f(seqs, pods):
        per_pod, per_chip = seqs * SEQ / pods, seqs * SEQ / (pods * POD)
        mem = _mem(seqs) / (pods * POD) / 1e9
        return {"B": (f"DCN 慢，但每步只跨 Pod 归约一次梯度：每个 Pod {per_pod / 1e4:.0f} 万 token，是 DCN 门槛"
                      f"（约 6.3 万）的 {per_pod / DCN_BOUND:.0f} 倍。"),
                "C": f"每芯片 {per_chip:.0f} 个 token，仍比 Pod 内 FSDP 的门槛（约 1094）大 {per_chip / FSDP_BOUND:.1f} 倍。",
                "D": f"{pods} 个 Pod 时每颗芯片约 {mem:.0f} GB（4 个检查点），16 GB 放得下；内存也不是瓶颈。"}[letter]
    return f


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
    Exercise("6.3", "total", "numbers", lambda tokens: [_flops(tokens=tokens), _flops(tokens=tokens) / C5E / YEAR],
             rtol=0.03, unit="[FLOPs, 年]", labels=("总 FLOPs", "年"), params=TOKENS,
             slips=(Slip("训练是 6P 每 token，不是 2P。",
                         lambda tokens: [_flops(tokens=tokens, k=2), _flops(tokens=tokens, k=2) / C5E / YEAR]),
                    Slip("用了正文的 15T token：这道题的 token 数写在题目里。",
                         lambda tokens: [_flops(tokens=15e12), _flops(tokens=15e12) / C5E / YEAR])),
             explain=lambda tokens: (f"约 {_sci(_flops(tokens=tokens))} FLOPs：一颗 v5e 满载也要 "
                                     f"{_flops(tokens=tokens) / C5E / YEAR:.0f} 年。")),
    Exercise("6.4", "days_pod", "number", lambda tokens: _days(_flops(tokens=tokens), POD), rtol=0.03, unit="天",
             params=TOKENS,
             slips=(Slip("忘了除以 MFU 0.4：芯片只有 40% 的时间在做有用的 FLOPs。",
                         lambda tokens: _days(_flops(tokens=tokens), POD, mfu=1.0)),
                    Slip("乘了 MFU 而不是除以它：MFU 越低，时间越长。",
                         lambda tokens: _days(_flops(tokens=tokens), POD, mfu=1.0) * 0.4),
                    Slip("按 8960 颗芯片算了：那是 v5p 的 Pod；v5e 的 Pod 是 16×16 = 256 颗。",
                         lambda tokens: _days(_flops(tokens=tokens), 8960))),
             explain=lambda tokens: f"一个 v5e Pod、40% MFU 约 {_days(_flops(tokens=tokens), POD):.0f} 天。"),
    Exercise("6.4b", "cheaper_chip", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "v5p 每颗更快，但也贵得多：总花费 = FLOPs ÷ (峰值 × MFU) × 单价，比的是单价 ÷ 峰值，不是速度。",
                  "C": "两者的“单价 ÷ 峰值”不一样：v5e 约 1.2/1.97e14，v5p 约 4.2/4.59e14，差了一半。",
                  "D": "HBM 大让你能少用几颗芯片，但在同样的 MFU 下总的芯片小时不变：花费只看单价 ÷ 峰值。"},
             explain="同样的 MFU 下，花费正比于单价 ÷ 峰值：v5e 每个峰值 FLOP 便宜约 1/3。"),
    Exercise("6.5", "min_memory", "numbers", _p65, rtol=0.03, unit="[字节, 颗, 天]", params={**SEQS, **TOKENS},
             labels=("总字节", "最少芯片数", "天数"),
             slips=(Slip("每层只算了 3 个检查点：题目说 4 个。", lambda seqs, tokens: _p65(seqs, tokens, saves=3)),
                    Slip("检查点按 fp32 的 4 字节算了：题目说 bf16。",
                         lambda seqs, tokens: _p65(seqs, tokens, act_bytes=4.0))),
             explain=lambda seqs, tokens: (f"约 {_mem(seqs) / 1e12:.1f} TB，大头是检查点：至少要 "
                                           f"{_p65(seqs, tokens)[1]} 颗 v5e，训练要约 {_p65(seqs, tokens)[2]:.0f} 天。")),
    Exercise("6.6", "mem_per_chip", "number", lambda seqs: _mem(seqs) / POD, rtol=0.03, unit="字节", params=SEQS,
             slips=(Slip("漏了检查点：权重和优化器状态每颗只占约 0.5 GB，检查点才是大头。",
                         lambda seqs: (_mem(seqs) - _mem(seqs, part="checkpoints")) / POD),
                    Slip("除以了 8960：v5e 的 Pod 只有 256 颗芯片。", lambda seqs: _mem(seqs) / 8960)),
             explain=lambda seqs: (f"每颗约 {_mem(seqs) / POD / 1e9:.0f} GB，超过了 v5e 的 16 GB："
                                   "一个 Pod 装不下这份账。")),
    Exercise("6.6b", "memory_fix", "choice", lambda seqs: "B", choices=("A", "B", "C", "D"), params=SEQS,
             why={k: _why66b(k) for k in "ACD"}, explain=_explain66b),
    Exercise("6.7", "pure_dp_ok", "choice", lambda seqs: "B", choices=("A", "B", "C", "D"), params=SEQS,
             why={k: _why67(k) for k in "ACD"},
             explain="序列够分，内存不够：每参数 10 字节，130 亿参数要 130 GB，一颗 v5e 只有 16 GB。"),
    Exercise("6.7b", "max_pure_dp", "number", lambda: float(tr.max_params_pure_dp(V5E)), rtol=0.03, unit="个参数",
             slips=(Slip("每参数只算了 bf16 权重的 2 字节：Adam 的两个 fp32 矩还要 8 字节，共 10 字节。",
                         lambda: 16e9 / 2),
                    Slip("用了 v5p 的 96 GB：这道题是 v5e，每颗 16 GB。", lambda: 96e9 / 10)),
             explain="16 GB ÷ 10 字节：纯数据并行在 v5e 上最多放 16 亿参数的模型。"),
    Exercise("6.8", "fsdp_numbers", "numbers", _p68, rtol=0.03, unit="[token/芯片, token/芯片]", params=SEQS,
             labels=("每芯片 token", "FSDP 门槛"),
             slips=(Slip("门槛按一个轴算了：v5e 的 2D 环面两个轴都能用，门槛是 α/2。",
                         lambda seqs: _p68(seqs, axes=1)),
                    Slip("门槛按三个轴算了：v5e 是 2D 环面，只有两个轴（v5p 才有三个）。",
                         lambda seqs: _p68(seqs, axes=3))),
             explain=lambda seqs: (f"每芯片 {seqs * SEQ // POD} 个 token，门槛约 1094：FSDP 在一个 v5e Pod 上"
                                   "轻松计算受限。")),
    Exercise("6.8b", "fsdp_ok", "choice", lambda seqs: "A", choices=("A", "B", "C", "D"), params=SEQS,
             why={k: _why68b(k) for k in "BCD"},
             explain=lambda seqs: f"{seqs * SEQ // POD} ≫ 1094：通信能完全藏在计算后面。"),
    Exercise("6.9", "fsdp_max_chips", "number", _p69, rtol=0.03, unit="颗", params=SEQS,
             slips=(Slip("门槛按一个轴算了：v5e 两个轴都用上时门槛是 α/2 ≈ 1094。", lambda seqs: _p69(seqs, axes=1)),
                    Slip("门槛按三个轴算了：v5e 是 2D 环面。", lambda seqs: _p69(seqs, axes=3))),
             explain=lambda seqs: (f"批次除以门槛：纯 FSDP 最多铺到约 {_p69(seqs):.0f} 颗芯片，"
                                   "再多就卡在 ICI 上。")),
    Exercise("6.10", "four_pods", "numbers", _p610, rtol=0.03, unit="[token/Pod, token/Pod]",
             params={**SEQS, **PODS}, labels=("每 Pod token", "DCN 门槛"),
             slips=(Slip("DCN 门槛按 v5p 算了：v5e 每颗芯片的 DCN 只有 3.125e9 B/s，门槛是 C/W_dcn ≈ 63040。",
                         lambda seqs, pods: [seqs * SEQ / pods, C5P / 6.25e9]),
                    Slip("第一个数给了每芯片的 token 数：DCN 门槛比的是每个 Pod 的 token 数。",
                         lambda seqs, pods: [seqs * SEQ / (pods * POD), DCN_BOUND])),
             explain=lambda seqs, pods: (f"每个 Pod 约 {seqs * SEQ / pods / 1e4:.0f} 万个 token，DCN 门槛约 6.3 万："
                                         "跨 Pod 的数据并行也计算受限。")),
    Exercise("6.10b", "regime", "choice", lambda seqs, pods: "A", choices=("A", "B", "C", "D"),
             params={**SEQS, **PODS}, why={k: _why610b(k) for k in "BCD"},
             explain=lambda seqs, pods: (f"Pod 内 {seqs * SEQ / (pods * POD):.0f} > 1094，Pod 间 "
                                         f"{seqs * SEQ / pods / 1e4:.0f} 万 > 6.3 万：两级都计算受限。")),
    Exercise("6.10c", "days_four_pods", "number", lambda tokens, pods: _days(_flops(tokens=tokens), pods * POD),
             rtol=0.03, unit="天", params={**TOKENS, **PODS},
             slips=(Slip("忘了除以 MFU 0.4。", lambda tokens, pods: _days(_flops(tokens=tokens), pods * POD, mfu=1.0)),
                    Slip("这是一个 Pod 的天数：几个 Pod 计算受限时就快几倍。",
                         lambda tokens, pods: _days(_flops(tokens=tokens), POD))),
             explain=lambda tokens, pods: (f"计算受限时 {pods} 个 Pod 正好快 {pods} 倍：约 "
                                           f"{_days(_flops(tokens=tokens), pods * POD):.0f} 天。")),
    Exercise("6.11", "llama2_70b", "numbers",
             lambda tokens: [_p(L70), 6 * _p(L70), _flops(_p(L70), tokens)], rtol=0.03, unit="[个参数, FLOPs, FLOPs]",
             labels=("参数量", "每 token FLOPs", "总 FLOPs"), params=TOKENS,
             slips=(Slip("按 MHA 算了：LLaMA 2 70B 用 GQA，K、V 只有 8 个头。",
                         lambda tokens: [_p(L70, kv=64), 6 * _p(L70, kv=64), _flops(_p(L70, kv=64), tokens)]),
                    Slip("用了正文的 15T token：这道题的 token 数写在题目里。",
                         lambda tokens: [_p(L70), 6 * _p(L70), _flops(_p(L70), tokens=15e12)])),
             explain=lambda tokens: f"约 690 亿参数，共约 {_sci(_flops(_p(L70), tokens))} FLOPs。"),
    Exercise("6.12", "days_70", "number", lambda tokens, pods: _days(_flops(_p(L70), tokens), pods * POD),
             rtol=0.03, unit="天", params={**TOKENS, **PODS},
             slips=(Slip("忘了除以 MFU 0.4。",
                         lambda tokens, pods: _days(_flops(_p(L70), tokens), pods * POD, mfu=1.0)),
                    Slip("用了 v5p 的峰值：这道题是 v5e。",
                         lambda tokens, pods: _days(_flops(_p(L70), tokens), pods * POD, chip=hardware.get("v5p")))),
             explain=lambda tokens, pods: (f"{pods} 个 v5e Pod、40% MFU 要约 {_days(_flops(_p(L70), tokens), pods * POD):.0f} 天："
                                           "同样的 FLOPs，v5e 每颗只有 v5p 的四成多。")),
    Exercise("6.12b", "bound_70", "number", lambda: float(tr.mixed_min_tokens_per_chip(L70.d_ff, V5E)),
             rtol=0.03, unit="token/芯片",
             slips=(Slip("这是 3D 环面（M_X M_Y = 2）的 2α²/F：v5e 是 2D 环面，M_X M_Y = 1，门槛是 4α²/F。",
                         lambda: float(tr.mixed_min_tokens_per_chip(L70.d_ff, V5E, mx_my=1)) / 2),
                    Slip("用了 v5p 的 α：这道题是 v5e（α = C/W_ici ≈ 2189）。",
                         lambda: float(tr.mixed_min_tokens_per_chip(L70.d_ff, "v5p")))),
             explain="4α²/F ≈ 668：每芯片几千个 token，FSDP + TP 也计算受限。"),
    Exercise("6.13", "model_3b", "numbers",
             lambda tokens: [_p(L3), _flops(_p(L3), tokens), _days(_flops(_p(L3), tokens), POD)], rtol=0.03,
             unit="[个, FLOPs, 天]", labels=("参数量", "总 FLOPs", "天数"), params=TOKENS,
             slips=(Slip("训练是 6P 每 token，不是 2P。",
                         lambda tokens: [_p(L3), _flops(_p(L3), tokens, k=2), _days(_flops(_p(L3), tokens, k=2), POD)]),
                    Slip("忘了除以 MFU 0.4。",
                         lambda tokens: [_p(L3), _flops(_p(L3), tokens), _days(_flops(_p(L3), tokens), POD, mfu=1.0)])),
             explain=lambda tokens: f"3B 在一个 v5e Pod 上约 {_days(_flops(_p(L3), tokens), POD):.0f} 天。"),
    Exercise("6.14", "dollars", "numbers", lambda tokens, pods: _p614(tokens), rtol=0.03,
             unit="[美元, 美元, 美元]", labels=("13B", "3B", "70B"), params={**TOKENS, **PODS},
             slips=(Slip("芯片小时：秒数要除以 3600，不是 86400（那是天）。",
                         lambda tokens, pods: _p614(tokens, seconds_per=86400)),
                    Slip("用了 v5p 的 4.2 美元：这道题是 v5e，1.2 美元/芯片小时。",
                         lambda tokens, pods: _p614(tokens, price=4.2)),
                    Slip("忘了除以 MFU 0.4：只有 40% 的芯片小时在做有用的 FLOPs，付钱却是全部的。",
                         lambda tokens, pods: _p614(tokens, mfu=1.0))),
             explain=lambda tokens, pods: ("按 v5e 的标价：13B 约 {:.0f} 万美元，3B 约 {:.0f} 万，70B 约 {:.0f} 万；"
                                           "芯片数约掉了。").format(*(x / 1e4 for x in _p614(tokens)))),
    Exercise("6.14b", "pods_cost", "choice", lambda pods: "A", choices=("A", "B", "C", "D"), params=PODS,
             why={"B": lambda pods: f"芯片多了 {pods} 倍，时间也短了 {pods} 倍：芯片小时不变，花费不变。",
                  "C": "快了不等于便宜：按芯片小时付钱，几倍的芯片用几分之一的时间，总数一样。",
                  "D": "6.10b 里两级都计算受限，MFU 不变：DCN 没有让它变慢，也就没有多花钱。"},
             explain="花费 = FLOPs ÷ (峰值 × MFU) × 单价，与芯片数无关：MFU 不掉，加芯片只换时间。"),
]
