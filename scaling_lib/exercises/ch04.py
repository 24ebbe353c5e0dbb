"""Chapter 4 exercises (spec 04, P4.1-P4.12; P4.4(d) and the first part of P4.6 are free-text
思考题 and not graded).

The chapter works its examples on the spec's toy model (D = 4096, F = 4D, 64 layers), LLaMA-class
configurations, MHA at T = 8D and DeepSeek-V3 against its FP8 peak. Every exercise here asks
another instance (a D = 6144, F = 16384, 48-layer model; G = 4 on the v5p; GQA with G = 8; a
gated FFN with F ≠ 4D; FFN-only recomputation; DeepSeek-V3 against the bf16 peak; a 70B-class
GQA cache at 40k), so no expected value is a number the chapter prints (tests/test_exercises.py
checks it). Each exercise declares its likely slips; the choice items ask which resource binds,
which term dominates and why.

Per-student numbers (``params``, see scaling_lib.exercises): the layer count (4.1, 4.1c, 4.9) and
vocabulary (4.1) of the exercise model, D of 4.5, G of 4.4b, T of 4.4e, D and T of 4.6, the FFN
widths of 4.8 and the context of 4.8b, the context S of 4.11/4.11b. Chips, peaks and bandwidths
stay the book's: they are what the chapter teaches.
"""
from __future__ import annotations

from .. import hardware, transformer as tr
from ..transformer import TransformerConfig
from . import Exercise, Param, Slip

# the exercises' model: D = 6144, F = 16384 (gated), 48 layers, MHA with 48 heads of 128
D4, F4, L4, V4 = 6144, 16384, 48, 50000
M4 = TransformerConfig(name="exercise 4 model", d_model=D4, n_layers=L4, n_heads=48, n_kv_heads=48,
                       d_ff=F4, vocab=V4)
# a 70B-class GQA model for the KV-cache items: 80 layers, 64 query heads, 8 KV heads of 128
M70 = TransformerConfig(name="exercise 4.11 model", d_model=8192, n_layers=80, n_heads=64, n_kv_heads=8,
                        d_ff=28672, vocab=128256)
C5E, W5E = 1.97e14, 8.2e11
C5P, W5P = 4.59e14, 2.8e12

# Per-student grids. 4.1: L <= 44 and V >= 50000 keep one embedding matrix > 1.3% of the total, so
# the slips still fail the ±1% check; 4.5: D is a multiple of 1024 (48 query heads of 128 -> D/128,
# G = 8 divides it); 4.4b: G = 1 would make the MHA slip the answer; 4.4e: T >= 1024 keeps the
# intensity >= 3x the v5e threshold; 4.8: no F is 4D (the chapter's 8D); 4.8b: T stays below 0.7x
# or above 1.5x the crossover for every F (the right letter flips between A and B, never a near-tie);
# 4.6: no T/D of 12 or 24 (the chapter prints 0.20 and 25%); 4.11: no context is a power of two
# (the chapter's 8k/32k/128k).
LAYERS = {"L4": Param(48, (16, 20, 24, 28, 32, 36, 40, 44))}
VOCAB = {"V4": Param(50000, (80000, 100000, 120000, 152064, 256000))}
D45 = {"D5": Param(6144, (3072, 5120, 7168, 8192, 10240, 12288, 16384, 20480))}
G44 = {"G4b": Param(4, (2, 3, 5, 6, 8, 12, 16))}
T44E = {"T4e": Param(4096, (1024, 1536, 2048, 3072, 6144, 8192, 16384))}
REMAT46 = {"D6": Param(4096, (2048, 3072, 5120, 6144, 8192)),
           "T6": Param(32768, (8192, 16384, 20480, 40960, 65536, 131072))}
FFN48 = {"F8a": Param(18432, (14336, 16384, 20480, 24576, 32768)),
         "F8b": Param(28672, (20480, 24576, 36864, 40960, 45056))}
T48B = {"T8b": Param(32768, (16384, 24576, 131072, 196608))}
CTX411 = {"S11": Param(40960, (12288, 20480, 24576, 49152, 57344, 73728, 90112, 114688))}


def _mha(D, L=1, F=None, H=128, K=None):
    return TransformerConfig(d_model=D, n_layers=L, n_heads=D // H, n_kv_heads=K or D // H,
                             d_ff=F or 4 * D, vocab=32000)


# ---- 4.1 --------------------------------------------------------------------------------------

def _params(L4=L4, V4=V4, ffn_mats=3, embeds=2):
    return L4 * (ffn_mats * D4 * F4 + 4 * D4 * D4 + D4) + embeds * D4 * V4


def _kv41c(L4=L4, dtype="int8"):
    return M4.replace(n_layers=L4).kv_bytes_per_token(dtype)


def _p41b(ffn_mats=3):
    return 4 * D4 * D4 / (4 * D4 * D4 + ffn_mats * D4 * F4)


# ---- 4.2 --------------------------------------------------------------------------------------

def _sharded(B, D, F, mesh):
    return list(tr.sharded_matmul_flops(B, D, F, mesh, sharded_axes=("X", "Y")))


def _mesh_sampler(rng):
    pick = lambda: int(rng.choice([1, 2, 4, 8, 16]))
    return {"B": int(rng.integers(1, 1 << 14)), "D": int(rng.integers(128, 1 << 15)),
            "F": int(rng.integers(128, 1 << 16)), "mesh": {"X": pick(), "Y": pick(), "Z": pick()}}


# ---- 4.3 --------------------------------------------------------------------------------------

_SPECS = ["np,pm->nm", "ijkl,ijmno->klmno", "ghijkl,ghmnkl->ghijmn", "bij,bjk->bik",
          "ij,ij->ij", "btd,df->btf", "btnh,bsnh->bnts", "i,i->"]


def _contraction_sampler(rng):
    spec = _SPECS[int(rng.integers(0, len(_SPECS)))]
    dims = sorted(set(spec.replace(",", "").replace("->", "")))
    return {"spec": spec, "sizes": {d: int(rng.integers(1, 9)) for d in dims}}


def _contraction_slip(kind):
    import math

    def f(spec, sizes):
        ins, out = spec.split("->")
        a, b = ins.split(",")
        dims = set(a) | set(b)
        contracted = dims - set(out)
        if kind == "sum":
            return 2 * sum(sizes[d] for d in dims)
        if kind == "always2":
            return 2 * math.prod(sizes[d] for d in dims)
        # each operand's size multiplied: shared dims counted twice
        return 2 * math.prod(sizes[d] for d in a) * math.prod(sizes[d] for d in b) if contracted else \
            math.prod(sizes[d] for d in a) * math.prod(sizes[d] for d in b)
    return f


# ---- 4.4 --------------------------------------------------------------------------------------

def _p44b(G4b=4, chip="v5p"):
    return float(tr.prefill_compute_bound_seq_len(chip, G4b))


# ---- 4.5: GQA, where the attention core catches up with QKVO ----------------------------------

def _p45(D5=D4):
    c = _mha(D5, F=F4, K=D5 // 128 // 8)    # D/128 query heads of 128, G = 8
    parts = c.flops_by_part(1, causal=False)
    return float(parts["attn_qkvo"] / parts["attn_core"])


# ---- 4.6 --------------------------------------------------------------------------------------

def _p46(D6=4096, T6=32768):
    return float(tr.remat_extra_fraction(_mha(D6), T6))


# ---- 4.7: DeepSeek-V3 against the bf16 dense peak ---------------------------------------------

def _mfu(peak, n_params=37e9, k=6):
    return float(tr.mfu(k * n_params * 14.8e12, 2.79e6 * 3600, 1, peak))


# ---- 4.8: crossover with a gated FFN, F != 4D -------------------------------------------------

def _p48(F8a=18432, F8b=28672):
    return [tr.attention_crossover_seq_len(_mha(7168, F=F8a)), tr.attention_crossover_seq_len(_mha(8192, F=F8b))]


def _p48b(F8b, T8b):
    return "A" if T8b > _p48(F8b=F8b)[1] else "B"


def _why48b(letter):
    def f(F8b, T8b):
        t = _p48(F8b=F8b)[1]
        r = T8b / t
        if letter == "A":
            return (f"T² 增长得快，但还没追上：这个模型的交点是 1.5F + 2D ≈ {t:,.0f}，{T8b} 还不到"
                    f"（注意力约是矩阵乘法的 {r:.2f} 倍）。")
        if letter == "B":
            return (f"{T8b} 已经过了交点 1.5F + 2D ≈ {t:,.0f}：点积注意力的 FLOPs 约是 FFN 和 QKVO 之和的 "
                    f"{r:.2f} 倍。")
        if letter == "C":
            return (f"8D = 65536 只是 F = 4D 时的交点；这里 F = {F8b / 8192:g}D，交点约 {t:,.0f}，"
                    f"两者在 {T8b} 处并不相等。")
        return "两边都正比于批次 B：B 在比值里约掉了。"
    return f


def _explain48b(F8b, T8b):
    t = _p48(F8b=F8b)[1]
    which = "点积注意力已经占了大头" if T8b > t else "大矩阵乘法仍占大头"
    return f"T = {T8b}，交点 1.5F + 2D ≈ {t:,.0f}：{which}。"


# ---- 4.9 --------------------------------------------------------------------------------------

def _p49(L4=L4, b=2.0, layers=None):
    layers = L4 if layers is None else layers
    return [float(tr.activation_bytes(1e6, D4, layers, 20, b)), float(tr.activation_bytes(1e6, D4, layers, 1, b))]


# ---- 4.10: only the FFN block recomputed ------------------------------------------------------

def _ffn_share():
    parts = _mha(8192).flops_by_part(1, causal=False)
    return float(parts["mlp"] / (parts["mlp"] + parts["attn_qkvo"]))


def _p410():
    return 1 + 2 / 6 * _ffn_share()


# ---- 4.11 -------------------------------------------------------------------------------------

def _p411(S11=40960, dtype="int8", cfg=M70):
    return float(cfg.kv_cache_bytes(1, S11, dtype))


def _p411b(S11=40960, weights=70e9, kv=None):
    return (8 * hardware.get("v5p").hbm_bytes - weights) / (kv or _p411(S11))


def _p412_slip(kind):
    def f(N, P, M):
        fwd = 2 * N * P * M
        if kind == "one_grad":
            return [fwd, fwd, 2 * fwd]
        return [N * P * M, 2 * N * P * M, 3 * N * P * M]
    return f


EXERCISES = [
    Exercise("4.1", "n_params", "number", _params, rtol=0.01, unit="个参数", params={**LAYERS, **VOCAB},
             slips=(Slip("漏了两个词表矩阵：输入嵌入和输出反嵌入不共享，各 D·V 个参数。",
                         lambda L4, V4: _params(L4, V4, embeds=0)),
                    Slip("只算了一个词表矩阵：嵌入和反嵌入不共享，要算两份。", lambda L4, V4: _params(L4, V4, embeds=1)),
                    Slip("FFN 按两个矩阵算了：门控 FFN 有 W_in1、W_in2、W_out 三个 D×F 矩阵，是 3DF。",
                         lambda L4, V4: _params(L4, V4, ffn_mats=2))),
             explain=lambda L4, V4: (f"约 {_params(L4, V4) / 1e8:.0f} 亿：每层 3DF + 4D² + D，{L4} 层，"
                                     "再加两个词表矩阵。")),
    Exercise("4.1b", "attn_share", "number", _p41b, rtol=0.03, unit="（比例）",
             slips=(Slip("套用了 F = 4D 时的 1/4：这个模型 F = 16384 ≈ 2.7D，不是 4D，要按 4D²/(4D² + 3DF) 重算。",
                         lambda: 0.25),
                    Slip("FFN 按两个矩阵（2DF）算了：门控 FFN 是 3DF。", lambda: _p41b(ffn_mats=2))),
             explain="F 比 4D 小时注意力的份额比 1/4 大：这里是三分之一。"),
    Exercise("4.1c", "kv_bytes_per_token", "number", _kv41c, rtol=0.02, unit="字节", params=LAYERS,
             slips=(Slip("按 bf16 的 2 字节算了：题目说 KV 缓存用 int8，每个元素 1 字节。",
                         lambda L4: _kv41c(L4, "bf16")),
                    Slip("只算了 K 或只算了 V：两者各存一份，要乘 2。", lambda L4: _kv41c(L4) / 2)),
             explain=lambda L4: (f"2·L·N·H·1 字节 = 2 × {L4} × 6144 字节：每个 token 约 "
                                 f"{_kv41c(L4) / 1e6:.2g} MB。")),
    Exercise("4.2", "sharded_matmul_flops", "function", _sharded, rtol=0.01, sampler=_mesh_sampler,
             unit="[总 FLOPs, 每芯片 FLOPs]", labels=("总 FLOPs", "每芯片 FLOPs"),
             edge_cases=({"B": 4096, "D": 8192, "F": 16384, "mesh": {"X": 4, "Y": 8, "Z": 1}},
                         {"B": 1, "D": 128, "F": 128, "mesh": {"X": 1, "Y": 1, "Z": 1}},
                         {"B": 4096, "D": 8192, "F": 16384, "mesh": {"X": 4, "Y": 8, "Z": 4}},
                         {"B": 512, "D": 1024, "F": 4096, "mesh": {"X": 1, "Y": 2, "Z": 16}}),
             slips=(Slip("总 FLOPs 没算上重复的部分：Z 轴上的几份芯片拿到相同的数据，把同样的计算各做一遍。",
                         lambda B, D, F, mesh: [2 * B * D * F, 2 * B * D * F / (mesh["X"] * mesh["Y"])]),
                    Slip("每芯片 FLOPs 除以了全部芯片数：Z 轴没有切任何维度，不会分掉计算。",
                         lambda B, D, F, mesh: [2 * B * D * F * mesh["Z"],
                                                2 * B * D * F / (mesh["X"] * mesh["Y"] * mesh["Z"])])),
             explain="没切任何维度的轴只会把计算重复：每芯片 2BDF/(XY)，总数 2BDF·Z。"),
    Exercise("4.2b", "replicated_axis", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "Z 轴的芯片拿到的是完全相同的数据：它们把同样的计算各做一遍，每颗芯片的工作量一点没少。",
                  "C": "沿 Y 切的是收缩维度 D：它把每芯片的 FLOPs 分成 Y 份，代价是事后一次 AllReduce；Z 轴不参与。",
                  "D": "每颗芯片的工作量和没有 Z 轴时一样（2BDF/(XY)），时间不会变长；多出来的只是重复的总量。"},
             explain="不切东西的轴只复制计算：要让它有用，得把某个维度（比如批次）也沿它切开。"),
    Exercise("4.3", "contraction_flops", "function", lambda spec, sizes: tr.contraction_flops(spec, sizes),
             rtol=0.01, sampler=_contraction_sampler, unit="FLOPs",
             edge_cases=({"spec": "ij,ij->ij", "sizes": {"i": 3, "j": 5}},
                         {"spec": "i,i->", "sizes": {"i": 7}},
                         {"spec": "ijkl,ijmno->klmno", "sizes": {c: n for c, n in zip("ijklmno", (2, 3, 4, 5, 6, 7, 8))}},
                         {"spec": "bij,bjk->bik", "sizes": {"b": 1, "i": 1, "j": 9, "k": 1}}),
             slips=(Slip("把维度的长度加起来了：FLOPs 是 2 × 所有不同维度之**积**。", _contraction_slip("sum")),
                    Slip("什么都不收缩时（逐元素乘）每个输出只有一次乘法、没有加法，不乘 2。", _contraction_slip("always2")),
                    Slip("把两个操作数的大小相乘了：共享的维度（收缩维度和批维度）只算一次。", _contraction_slip("shared"))),
             explain="2 × 所有不同维度之积，共享维度只算一次；什么都不收缩时不乘 2。"),
    Exercise("4.4", "attention_intensity", "function", lambda t, s, g: tr.attention_arithmetic_intensity(t, s, g),
             rtol=0.01, unit="FLOPs/字节",
             sampler=lambda rng: {"t": int(rng.integers(1, 1 << 16)), "s": int(rng.integers(1, 1 << 17)),
                                  "g": int(2 ** rng.integers(0, 5))},
             edge_cases=({"t": 1, "s": 1, "g": 1}, {"t": 1, "s": 32768, "g": 8}, {"t": 4096, "s": 4096, "g": 1},
                         {"t": 4096, "s": 4096, "g": 8}),
             slips=(Slip("K 和 V 按 N 个头算了：GQA 里 K、V 只有 K = N/G 个头，读它们的字节要除以 G。",
                         lambda t, s, g: t * s / (t + s)),
                    Slip("漏了写出 O 的字节：Q 读一遍、O 写一遍，各 BTNH 个元素。",
                         lambda t, s, g: 2 * t * s * g / (t * g + 2 * s)),
                    Slip("按 fp32 的 4 字节算了：题目是 bf16，每个元素 2 字节。",
                         lambda t, s, g: t * s * g / (2 * (t * g + s)))),
             explain="I = TSG / (TG + S)：预填充时随 T 增长，解码时趋近 G。"),
    Exercise("4.4b", "t_prefill_v5p_g4", "number", _p44b, rtol=0.03, unit="token", params=G44,
             slips=(Slip("这是 MHA（G = 1）的门槛：GQA 时门槛是 (G+1)/G × C/W。", lambda G4b: _p44b(1)),
                    Slip("这是 G 很大时的极限 C/W：还要乘 (G+1)/G。", lambda G4b: C5P / W5P),
                    Slip("用了 v5e 的 C/W ≈ 240：这道题是 v5p（4.59e14 / 2.8e12 ≈ 164）。",
                         lambda G4b: _p44b(G4b, chip="v5e"))),
             explain=lambda G4b: (f"164 × {G4b + 1}/{G4b} ≈ {_p44b(G4b):.0f}：v5p 的 HBM 相对更快，"
                                  "预填充注意力更早计算受限。")),
    Exercise("4.4c", "decode_bound", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "FLOPs 确实随 S 增长，但读 KV 缓存的字节也随 S 增长：强度 SG/(S + G) 趋于 G，与 S 无关。",
                  "C": "GQA 让每个 KV 字节被 G 个查询头复用，强度约为 G = 8；离 240 还差 30 倍。",
                  "D": "批里每条序列读自己的 KV 缓存，没有共享：B 在强度里约掉了，批次再大也没用。"},
             explain="解码时强度约为 G（这里 8），远低于 240：注意力永远卡在 HBM 上。"),
    Exercise("4.4e", "prefill_bound", "choice", lambda T4e: "A", choices=("A", "B", "C", "D"), params=T44E,
             why={"B": lambda T4e: (f"预填充时每个 K、V 元素被 T 个查询复用，强度约 TG/(G+1) ≈ {T4e * 8 / 9:,.0f}，"
                                    "远超 240；解码时才是读缓存受限。"),
                  "C": "softmax 的逐元素运算只是 O(T²N)，比 4T²NH 的矩阵乘法少 H 倍；本书的强度也不把它算进 FLOPs。",
                  "D": "B 在强度里约掉了（FLOPs 和字节都正比于 B）：是 T 决定谁受限。"},
             explain="T = {T4e} 远超门槛 270：预填充注意力是计算受限的矩阵乘法。"),
    Exercise("4.5", "t_equal_gqa", "number", _p45, rtol=0.03, unit="token", params=D45,
             slips=(Slip("这是 MHA 的 T = 2D：GQA 时 K、V 投影只有 D·D/G，QKVO 的 FLOPs 变少，交点提前到 D(1 + 1/G)。",
                         lambda D5: 2.0 * D5),
                    Slip("只比了 Q 和 O 两个投影：K、V 投影也要算，GQA 下各是 Q 的 1/G。", lambda D5: float(D5))),
             explain="T = D(1 + 1/G) = {D5} × 9/8：GQA 让注意力核心更早追上投影。"),
    Exercise("4.6", "dots_extra_32k", "number", _p46, rtol=0.03, unit="（比例）", params=REMAT46,
             slips=(Slip("分母漏了注意力核心：一层训练 FLOPs 是 96BTD² + 12BT²D，T = 8D 时两项一样大。",
                         lambda D6, T6: 4 * T6 / (96 * D6)),
                    Slip("只重算了 QKᵀ：PV 也要重算，各 2BT²NH，共 4BT²NH。",
                         lambda D6, T6: 2 * T6 / (96 * D6 + 12 * T6))),
             explain=lambda D6, T6: (f"T = {T6 / D6:g}D：只存矩阵乘法输出的重算要多花约 {_p46(D6, T6):.1%}；"
                                     "上下文越长，注意力核心的份额越大。")),
    Exercise("4.6b", "dots_long_context", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "这个策略保存了所有 7 个大矩阵乘法的输出，一个投影也不重算；多出来的只有注意力核心和逐元素运算。",
                  "C": "这里比的是 FLOPs，不是时间：带宽受限与否不改变要重算多少次运算。",
                  "D": "softmax 只有 O(BT²N) 次运算，是 QKᵀ 和 PV（4BT²NH）的 1/H：大头是两个 T² 的矩阵乘法。"},
             explain="重算的是 ∝ T² 的注意力核心，层里其余 FLOPs ∝ T：上下文越长，它的份额越大。"),
    Exercise("4.7", "mfu_bf16", "number", lambda: _mfu(hardware.peak_flops("H800")), rtol=0.03, unit="（比例）",
             slips=(Slip("训练是 6·P·token，不是 2·P·token：前向 2、反向 4。", lambda: _mfu(9.89e14, k=2)),
                    Slip("用了 6710 亿总参数：每个 token 只激活 370 亿参数，模型 FLOPs 按激活参数算。",
                         lambda: _mfu(9.89e14, n_params=671e9)),
                    Slip("用了 FP8 的峰值：这道题按 bf16 稠密峰值 9.89e14 算。", lambda: _mfu(1.979e15))),
             explain="按 bf16 峰值量，DeepSeek-V3 的 MFU 约三分之一：FP8 把分母翻了一倍。"),
    Exercise("4.8", "crossover_gated", "numbers", _p48, rtol=0.03, unit="token（先 D=7168，后 D=8192）",
             labels=("D=7168", "D=8192"), params=FFN48,
             slips=(Slip("套用了 T = 8D：那只在 F = 4D 时成立；这里 F ≠ 4D，交点是 T = 1.5F + 2D。",
                         lambda F8a, F8b: [8 * 7168.0, 8 * 8192.0]),
                    Slip("漏了 QKVO 投影：点积注意力要追上的是 FFN 和 QKVO 之和。",
                         lambda F8a, F8b: [1.5 * F8a, 1.5 * F8b])),
             explain="T = 1.5F + 2D：F 比 4D 小时交点比 8D 早，大时比 8D 晚。"),
    Exercise("4.8b", "dominant_term", "choice", _p48b, choices=("A", "B", "C", "D"),
             params={"F8b": FFN48["F8b"], **T48B},
             why={k: _why48b(k) for k in "ABCD"}, explain=_explain48b),
    Exercise("4.9", "act_bytes", "numbers", _p49, rtol=0.03, unit="[不重算, 整层重算]（字节）",
             labels=("不重算", "整层重算"), params=LAYERS,
             slips=(Slip("按 fp32 的 4 字节算了：题目是 bf16，每个元素 2 字节。", lambda L4: _p49(L4, b=4.0)),
                    Slip("按 1 字节算了：bf16 每个元素 2 字节。", lambda L4: _p49(L4, b=1.0)),
                    Slip("只算了一层：每层各存一份，要乘层数。", lambda L4: _p49(L4, layers=1))),
             explain=lambda L4: (f"约 {_p49(L4)[0] / 1e12:.2g} TB 对 {_p49(L4)[1] / 1e12:.2g} TB："
                                 "不重算的话，几百颗芯片也装不下。")),
    Exercise("4.10", "ffn_remat", "number", _p410, rtol=0.03, unit="（倍）",
             slips=(Slip("这是整层重算的 4/3：这里只重算 FFN 块，多出的是 FFN 的一次前向，占层训练 FLOPs 的 (2/6)×(FFN 份额)。",
                         lambda: 4 / 3),
                    Slip("用了 QKVO 的份额：F = 4D 时 FFN 占一层矩阵乘法 FLOPs 的 3/4，不是 1/4。",
                         lambda: 1 + 2 / 6 * (1 - _ffn_share())),
                    Slip("把 FFN 的反向也重算了：重算只重跑前向（2 份），反向本来就要做。",
                         lambda: 1 + _ffn_share())),
             explain="FFN 占层 FLOPs 的 3/4，多跑一遍它的前向：1 + 1/3 × 3/4 = 1.25 倍。"),
    Exercise("4.11", "kv_bytes_gqa", "number", _p411, rtol=0.03, unit="字节", params=CTX411,
             slips=(Slip("按 bf16 的 2 字节算了：题目说 KV 缓存用 int8。", lambda S11: _p411(S11, "bf16")),
                    Slip("只算了 K 或只算了 V：两者各存一份，要乘 2。", lambda S11: _p411(S11) / 2),
                    Slip("K、V 按 64 个查询头算了：GQA 里只有 8 个 KV 头，缓存只存它们。",
                         lambda S11: _p411(S11, cfg=M70.replace(n_kv_heads=64)))),
             explain=lambda S11: (f"2·S·L·K·H·1 字节 = 2 × {S11} × 80 × 8 × 128：约 "
                                  f"{_p411(S11) / 1e9:.2g} GB。")),
    Exercise("4.11b", "n_seqs", "number", _p411b, rtol=0.03, unit="条", params=CTX411,
             slips=(Slip("忘了先扣掉权重：700 亿个 int8 参数要占 70 GB。", lambda S11: _p411b(S11, weights=0.0)),
                    Slip("KV 缓存按 bf16 算了：题目说 int8。", lambda S11: _p411b(S11, kv=_p411(S11, "bf16"))),
                    Slip("权重按 bf16 算了：题目说权重是 int8，每个参数 1 字节。",
                         lambda S11: _p411b(S11, weights=140e9))),
             explain=lambda S11: (f"8 颗 v5p 扣掉权重还剩约 700 GB，每条 {S11} 个 token 的序列要 "
                                  f"{_p411(S11) / 1e9:.2g} GB：约 {_p411b(S11):.0f} 条。")),
    Exercise("4.12", "matmul_train_flops", "function", lambda N, P, M: list(tr.matmul_train_flops(N, P, M)),
             rtol=0.01, unit="[前向, 反向, 合计] FLOPs", labels=("前向", "反向", "合计"),
             sampler=lambda rng: {"N": int(rng.integers(1, 1 << 16)), "P": int(rng.integers(1, 1 << 14)),
                                  "M": int(rng.integers(1, 1 << 14))},
             edge_cases=({"N": 1, "P": 1, "M": 1}, {"N": 1, "P": 4096, "M": 4096}, {"N": 8192, "P": 1, "M": 8192}),
             slips=(Slip("反向只算了一个梯度：对输入的梯度和对权重的梯度各要一次矩阵乘法，反向是 4NPM。",
                         _p412_slip("one_grad")),
                    Slip("一次乘加算了 1 次运算：FLOPs 里乘法和加法各算一次，前向是 2NPM。", _p412_slip("no2"))),
             explain="前向 2NPM，反向 4NPM（两个梯度各一次矩阵乘法），合计 6NPM。"),
    Exercise("4.12b", "why_backward", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "那是重计算的代价：不重算时反向不用再跑前向，它的 4NPM 全是两个梯度的矩阵乘法。",
                  "C": "链式法则不会让每个运算翻倍：反向的代价来自要算的梯度个数，这里是两个。",
                  "D": "输入的梯度 ∂L/∂A 不能省：前面的层要靠它继续往回传（只有第一层的输入不需要）。"},
             explain="∂L/∂A = ∂L/∂C · Wᵀ 和 ∂L/∂W = Aᵀ · ∂L/∂C，各 2NPM。"),
]
