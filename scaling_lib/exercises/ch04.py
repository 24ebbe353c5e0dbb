"""Chapter 4 exercises (spec 04, P4.1-P4.12; P4.4(d) and the first part of P4.6 are free-text
思考题 and not graded).

Expected values are computed from scaling_lib; the spec's corrected answers are pinned in
tests/test_exercises_04.py.
"""
from __future__ import annotations

from .. import hardware, models, transformer as tr
from ..transformer import TransformerConfig
from ..units import GiB
from . import Exercise

TOY = models.TOY_P41


def _mha(D, L, F=None, H=128):
    return TransformerConfig(d_model=D, n_layers=L, n_heads=D // H, n_kv_heads=D // H,
                             d_ff=F or 4 * D, vocab=32000)


def _toy_attn_share():
    p = TOY.params_by_part()
    attn = sum(p[k] for k in ("attn_q", "attn_k", "attn_v", "attn_o"))
    return attn / (attn + p["mlp"])


def _sharded(B, D, F, mesh):
    return list(tr.sharded_matmul_flops(B, D, F, mesh, sharded_axes=("X", "Y")))


_SPECS = ["np,pm->nm", "ijkl,ijmno->klmno", "ghijkl,ghmnkl->ghijmn", "bij,bjk->bik",
          "ij,ij->ij", "btd,df->btf", "btnh,bsnh->bnts"]


def _contraction_sampler(rng):
    spec = _SPECS[int(rng.integers(0, len(_SPECS)))]
    dims = sorted(set(spec.replace(",", "").replace("->", "")))
    return {"spec": spec, "sizes": {d: int(rng.integers(1, 9)) for d in dims}}


def _mfu(peak):
    used = tr.flops_6nd(37e9, 14.8e12)
    return tr.mfu(used, 2.79e6 * 3600, 1, peak)


EXERCISES = [
    Exercise("4.1", "n_params", "number", lambda: TOY.params(), rtol=0.10, unit="个参数",
             hints=((16e9 / 17.44e9, "原书的 16B 是把 4096、16384 取整成 4e3、16e3 的结果，"
                                     "这里在容差内也算对。"),),
             explain="约 174 亿：每层 3DF + 4D² + D，64 层，再加输入和输出两个词表矩阵。"),
    Exercise("4.1b", "attn_share", "number", _toy_attn_share, rtol=0.05, unit="（比例）",
             accept=(0.246,),
             explain="4D² / (4D² + 3·D·4D) = 1/4：F = 4D、NH = D 时注意力占层参数的四分之一。"),
    Exercise("4.1c", "kv_bytes_per_token", "number", lambda: TOY.kv_bytes_per_token("int8"),
             rtol=0.02, unit="字节",
             hints=((2.0, "int8 每个元素 1 字节，不是 2 字节。"),
                    (0.5, "K 和 V 各存一份：别漏了因子 2。")),
             explain="2·L·N·H·1 字节 = 512 KiB：生成 1000 个 token 就要半 GB。"),
    Exercise("4.2", "sharded_matmul_flops", "function", _sharded, rtol=1e-6,
             sampler=lambda rng: {"B": int(rng.integers(1, 1 << 14)),
                                  "D": int(rng.integers(128, 1 << 15)),
                                  "F": int(rng.integers(128, 1 << 16)),
                                  "mesh": {"X": 4, "Y": 8, "Z": 4}},
             unit="[总 FLOPs, 每芯片 FLOPs]",
             explain="Z 轴没切任何东西，计算重复了 4 份：总共 8BDF，每芯片 2BDF/(XY) = BDF/16。"),
    Exercise("4.3", "contraction_flops", "function",
             lambda spec, sizes: tr.contraction_flops(spec, sizes), rtol=1e-9,
             sampler=_contraction_sampler, unit="FLOPs",
             explain="2 × 所有不同维度之积，共享维度只算一次；什么都不收缩时不乘 2。"),
    Exercise("4.4", "attention_intensity", "function",
             lambda t, s, g: tr.attention_arithmetic_intensity(t, s, g), rtol=1e-6,
             sampler=lambda rng: {"t": int(rng.integers(1, 1 << 16)),
                                  "s": int(rng.integers(1, 1 << 17)),
                                  "g": int(2 ** rng.integers(0, 5))},
             unit="FLOPs/字节",
             explain="I = TSG / (TG + S)：预填充时随 T 增长，解码时趋近 G。"),
    Exercise("4.4b", "t_prefill_g8", "number",
             lambda: float(tr.prefill_compute_bound_seq_len("v5e", 8)), rtol=0.05, unit="token",
             accept=(240.0,),
             hints=((480.5 / 270.3, "这是 MHA（G=1）的门槛；题目里 G = 8。"),),
             explain="240 × 9/8 ≈ 270：G 越大越接近 240 这个极限。"),
    Exercise("4.4c", "decode_bound", "choice", lambda: "B", choices=("A", "B"),
             explain="解码时强度约为 G（比如 8），远低于 240：永远卡在带宽上。"),
    Exercise("4.5", "t_equal", "number", lambda: float(tr.qkvo_equals_attention_seq_len(4096)),
             rtol=0.01, unit="token",
             hints=((4.0, "T = 8D 是点积注意力追上 QKVO 加 FFN 的地方；这里只和 QKVO 比。"),),
             explain="24BTDNH = 12BT²NH ⇒ T = 2D = 8192。"),
    Exercise("4.6", "dots_extra", "number",
             lambda: float(tr.remat_extra_fraction(_mha(8192, 1), 8192)), rtol=0.05,
             unit="（比例）",
             explain="只多重算一遍注意力核心：4T/(96D + 12T)，T = D 时约 3.7%。"),
    Exercise("4.7", "mfu_book", "number", lambda: float(_mfu(1.513e15)), rtol=0.05,
             unit="（比例）", accept=(0.217,),
             hints=((1 / 3, "训练是 6·P·token，不是 2·P·token（原书最早的版本也犯过这个错）。"),),
             explain="约 21.7%：按原书用的 1.513e15 峰值。"),
    Exercise("4.7b", "mfu_sxm", "number",
             lambda: float(_mfu(hardware.peak_flops("H800", "fp8"))), rtol=0.05, unit="（比例）",
             hints=((0.2166 / 0.1656, "这是按 1.513e15 算的；换成 SXM 版的 FP8 稠密峰值。"),),
             explain="约 16.5%：1.513e15 其实是 PCIe 版的数字。"),
    Exercise("4.8", "crossover", "numbers",
             lambda: [tr.attention_crossover_seq_len(_mha(8192, 1)),
                      tr.attention_crossover_seq_len(_mha(4608, 1, H=64))],
             rtol=0.01, unit="[D=8192 的 T, D=4608 的 T]（token）",
             explain="T = 8D：65,536 和 36,864。"),
    Exercise("4.9", "act_bytes", "numbers",
             lambda: [tr.activation_bytes(4e6, 8192, 64, 20),
                      tr.activation_bytes(4e6, 8192, 64, 1)],
             rtol=0.05, unit="[不重算, 整层重算]（字节）",
             hints=((0.5, "bf16 每个元素 2 字节。"),),
             explain="约 84 TB 和 4.2 TB：不重算的话，没有哪个集群装得下。"),
    Exercise("4.10", "remat_multiplier", "number",
             lambda: float(tr.remat_flops_multiplier("block")), rtol=0.01, unit="（倍）",
             explain="多跑一遍前向：(2 + 2 + 4) / 6 = 4/3。"),
    Exercise("4.11", "kv_bytes", "number",
             lambda: float(tr.kv_cache_bytes(_mha(8192, 64), 8192, bytes_per_elem=1)),
             rtol=0.02, unit="字节",
             hints=((2.0, "int8 每个元素 1 字节。"), (0.5, "K 和 V 各一份：别漏了因子 2。")),
             explain="2·8192·64·8192 字节 = 8 GiB：一颗 v5e 只放得下一条序列。"),
    Exercise("4.11b", "kv_bytes_gqa", "number",
             lambda: float(_mha(8192, 64).replace(n_kv_heads=8).kv_cache_bytes(1, 8192, "int8")),
             rtol=0.02, unit="字节",
             explain=f"K = N/8 时缓存也只剩 1/8：{GiB:,d} 字节 = 1 GiB。"),
    Exercise("4.12", "matmul_train_flops", "function",
             lambda N, P, M: list(tr.matmul_train_flops(N, P, M)), rtol=1e-9,
             sampler=lambda rng: {"N": int(rng.integers(1, 1 << 16)),
                                  "P": int(rng.integers(1, 1 << 14)),
                                  "M": int(rng.integers(1, 1 << 14))},
             unit="[前向, 反向, 合计] FLOPs",
             explain="前向 2NPM，反向 4NPM（两个梯度各一次矩阵乘法），合计 6NPM。"),
]
