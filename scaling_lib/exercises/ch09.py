"""Chapter 9 exercises (spec 09, P9.1-P9.7; P9.6 and parts of P9.7 are also 思考题).

Expected values are computed from scaling_lib.profiling (the book's TPU v2 core: 23e12 bf16
FLOPs/s, 1.2e11 B/s bidirectional ICI). The spec's answers are pinned in
tests/test_exercises_09.py.
"""
from __future__ import annotations

from .. import profiling
from . import Exercise

V2 = profiling.TPU_V2_CORE
B, T, D, F = 32, 1024, 8192, 32768        # the mock Transformer of the book's profile
TILED = "bf16[4,8]{1,0:T(2,4)(2,1)}"


def _p91():
    return profiling.expected_op_time(2 * B * T * D * F, 0, 0, V2, n_devices=8).t


def _p92():
    return profiling.expected_op_time(0, 0, 2 * (B // 4) * T * D, V2).t


def _p93():
    proj = profiling.expected_op_time(2 * B * T * D * D, 0, 0, V2, n_devices=8).t
    qk = profiling.expected_op_time(2 * B * T * T * D, 0, 0, V2, n_devices=8).t
    return [proj, 4 * proj, qk]


def _p94():
    return [profiling.layout_overhead(s) for s in
            ("f32[3,5]{1,0:T(2,2)}", TILED, "bf16[32,32,8192]{2,1,0:T(8,128)(2,1)}",
             "f32[3,200]{1,0:T(8,128)}")]


def _p94_offset(row, col):
    return profiling.tiled_offset((row, col), TILED)


def _p95_shape():
    return list(profiling.parse_hlo_shape("bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)}").dims)


def _p97_shares():
    per_tok = [4 * D * F, 8 * D * D, 4 * T * D]
    tot = sum(per_tok)
    return [x / tot for x in per_tok]


def _p97_layer():
    return profiling.expected_op_time(8 * T * (4 * D * F + 8 * D * D + 4 * T * D), 0, 0, V2,
                                      n_devices=8).t


EXERCISES = [
    Exercise("9.1", "t_ffw", "number", _p91, rtol=0.03, unit="秒",
             hints=((8.0, "大了 8 倍左右：FLOPs 要平分到 8 个核心上。"),
                    (0.5, "小了一半：每个 v2 核心是 23e12，不是整颗芯片的 45e12。")),
             explain="实测 96 ms，几乎正好在 Roofline 上。"),
    Exercise("9.1b", "ffw_fraction", "number", lambda: _p91() / 96e-3, rtol=0.03,
             explain="大矩阵乘法跑到 Roofline 的 99% 左右，没什么可优化的了。"),
    Exercise("9.2", "t_rs", "number", _p92, rtol=0.10, unit="秒",
             hints=((4.0, "大了 4 倍：只有每个数据并行分片的 [8, 1024, 8192] 要做 ReduceScatter。"),),
             explain="实测 1.13 ms：这个 ReduceScatter 也贴着 ICI 的 Roofline。"),
    Exercise("9.3", "t_attn", "numbers", _p93, rtol=0.03, unit="秒",
             explain="四个投影合起来和 FFW 的上投影差不多贵；注意力分数本身便宜得多。"),
    Exercise("9.4", "overheads", "numbers", _p94, rtol=0.01,
             explain="只有小维度落在 (8,128) 块上时，填充才会把内存放大好几倍。"),
    Exercise("9.4b", "tiled_slot", "function", _p94_offset, rtol=0, atol=0,
             sampler=lambda rng: {"row": int(rng.integers(0, 4)), "col": int(rng.integers(0, 8))},
             n_samples=12, explain="内层 (2,1) 块把上下相邻的两个 bf16 拼成一个 4 字节的字。"),
    Exercise("9.4c", "padded_f32", "numbers", lambda: list(profiling.padded_shape("f32[3,200]{1,0:T(8,128)}")),
             rtol=0, explain="3 行补到 8 行，200 列补到 256 列。"),
    Exercise("9.5", "memory_space", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             explain="S(1) 表示这块数据已经在 VMEM 里，离 MXU 最近。"),
    Exercise("9.5b", "out_shape", "numbers", _p95_shape, rtol=0,
             explain="形状写在 dtype 后面的方括号里，布局和分块不改变逻辑形状。"),
    Exercise("9.5c", "rs_ways", "number", lambda: 8192 / 4096, rtol=0, atol=0,
             explain="最后一维从 8192 变成 4096：这个 ReduceScatter 把数据分成 2 份。"),
    Exercise("9.6", "matvec_bw", "number", lambda: 6.71e7 / 209e-6, rtol=0.05, unit="B/s",
             explain="约 3.2e11 B/s：这个矩阵乘向量卡在 HBM 带宽上。"),
    Exercise("9.6b", "mp_ways", "number", lambda: 32768 / 4096, rtol=0, atol=0,
             explain="副本组 8 个成员一组，4096 = 32768 / 8：f 维 8 路模型并行。"),
    Exercise("9.7", "flop_shares", "numbers", _p97_shares, rtol=0.05,
             explain="MLP 约占三分之二，注意力投影约三分之一，注意力分数只有 2%。"),
    Exercise("9.7b", "t_layer", "number", _p97_layer, rtol=0.05, unit="秒",
             explain=lambda: f"截图里一层 79 ms：达到了这个 Roofline 的 {_p97_layer() / 79e-3:.0%}（Roofline ÷ 实测）。"),
]
