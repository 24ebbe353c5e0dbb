"""Chapter 9 exercises (spec 09, P9.1-P9.7; P9.6 and parts of P9.7 are also 思考题).

The chapter reads the book's profile of a mock Transformer (B = 32, T = 1024, D = 8192,
F = 32768 on 8 TPU v2 cores) and one HLO line. Every exercise here asks another instance: the
same kind of profile for B = 16, T = 2048, D = 6144, F = 24576, other tiled shapes, another HLO
line (a 4-way ReduceScatter into HBM) and another mat-vec fusion, so no expected value is a number
the chapter prints (tests/test_exercises.py checks it). Each exercise declares its likely slips;
the choice items ask where the time goes and which resource binds, and why.
"""
from __future__ import annotations

from .. import profiling
from . import Exercise, Slip

V2 = profiling.TPU_V2_CORE
C2, W2 = 23e12, 1.2e11                  # per v2 core: bf16 FLOPs/s; one ICI hop, bidirectional
B, T, D, F = 16, 2048, 6144, 24576      # the exercises' mock Transformer
TILED = "bf16[4,8]{1,0:T(2,4)(2,1)}"
SHAPES = ("f32[5,7]{1,0:T(2,2)}", "bf16[3,8]{1,0:T(2,4)(2,1)}", "bf16[16,20,8192]{2,1,0:T(8,128)(2,1)}",
          "f32[5,300]{1,0:T(8,128)}")
HLO_OUT = "bf16[16,2048,1536]{2,1,0:T(8,128)(2,1)}"
T_FFW_MEASURED = 61e-3
B7 = 4                                   # sequences in the layer-time item


def _t(flops, cores=8, peak=C2):
    return flops / (cores * peak)


def _p91(cores=8, peak=C2):
    return _t(2 * B * T * D * F, cores, peak)


def _p92(nbytes=2 * (B // 4) * T * D):
    return profiling.expected_op_time(0, 0, nbytes, V2).t


def _p93(cores=8, causal=1.0):
    proj = _t(2 * B * T * D * D, cores)
    return [proj, 4 * proj, causal * _t(2 * B * T * T * D, cores)]


def _minor_only(shape):
    """The overhead if only the last dimension were padded to its tile."""
    s = profiling.parse_hlo_shape(shape)
    full = profiling.padded_shape(shape)
    return (full[-1] / s.dims[-1])


def _p97(parts=None):
    parts = parts or [4 * D * F, 8 * D * D, 4 * T * D]
    tot = sum(parts)
    return [x / tot for x in parts]


def _layer_flops(scores=True):
    return B7 * T * (4 * D * F + 8 * D * D + (4 * T * D if scores else 0))


def _p97b():
    return profiling.expected_op_time(_layer_flops(), 0, 0, V2, n_devices=8).t


def _row_major(row, col):
    return row * 8 + col


def _tiles_no_inner(row, col):
    return ((row // 2) * 2 + col // 4) * 8 + (row % 2) * 4 + col % 4


EXERCISES = [
    Exercise("9.1", "t_ffw", "number", _p91, rtol=0.03, unit="秒",
             slips=(Slip("没有平分到 8 个核心上：每个核心只算自己那 1/8 的 FLOPs。", lambda: _p91(cores=1)),
                    Slip("用了整颗 v2 芯片的峰值 45e12：题目按每个核心 23e12 算，8 个核心各算 1/8。",
                         lambda: _p91(peak=45e12)),
                    Slip("按 4 个设备分了：4 颗芯片共 8 个核心，profile 里每个核心是一个设备。", lambda: _p91(cores=4))),
             explain="约 54 ms：上投影的 FLOPs 除以 8 个核心的峰值。"),
    Exercise("9.1b", "ffw_fraction", "number", lambda: _p91() / T_FFW_MEASURED, rtol=0.03,
             unit="（比值）",
             slips=(Slip("比值倒过来了：要的是 Roofline 时间 ÷ 实测时间，它不会大于 1。",
                         lambda: T_FFW_MEASURED / _p91()),),
             explain="约 88%：离 Roofline 还有约 7 ms 的余地。"),
    Exercise("9.1c", "optimise_first", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "它最贵，可已经跑到 Roofline 的 88%：最多只能省约 7 ms。该看的是实测和 Roofline 之差。",
                  "C": "带宽受限不等于没得优化：这个融合离它自己的（带宽）Roofline 还差 10 ms。",
                  "D": "强度低只说明它受带宽限制，不说明它离极限多远：比较的是每个算子能省下的时间。"},
             explain="按“实测 − Roofline”排序：融合能省 10 ms，上投影最多 7 ms。"),
    Exercise("9.2", "t_rs", "number", _p92, rtol=0.10, unit="秒",
             slips=(Slip("用了整个批次：只有每个数据并行分片（16/4 = 4 条序列）的输出要做 ReduceScatter。",
                         lambda: _p92(2 * B * T * D)),
                    Slip("字节数是 2 倍：bf16 每个元素 2 字节，不是 fp32 的 4 字节；带宽按双向 1.2e11 B/s 算。",
                         lambda: _p92(4 * (B // 4) * T * D))),
             explain="约 0.84 ms：1e8 字节走一跳 ICI。"),
    Exercise("9.3", "t_attn", "numbers", _p93, rtol=0.03, unit="秒", labels=("一个投影", "四个投影", "QKᵀ"),
             slips=(Slip("没有平分到 8 个核心上。", lambda: _p93(cores=1)),
                    Slip("QKᵀ 按因果掩码减半了：题目说不利用因果掩码。", lambda: _p93(causal=0.5))),
             explain="四个投影合起来和 FFW 的上投影一样贵（F = 4D）；注意力分数便宜得多。"),
    Exercise("9.4", "overheads", "numbers", lambda: [profiling.layout_overhead(s) for s in SHAPES], rtol=0.01,
             unit="（倍）", labels=("(a)", "(b)", "(c)", "(d)"),
             slips=(Slip("只补了最后一维：分块的每一维都要补到块大小的倍数（(d) 的 5 行也要补到 8 行）。",
                         lambda: [_minor_only(s) for s in SHAPES]),
                    Slip("比值倒过来了：开销是补齐后的元素数 ÷ 逻辑元素数，不小于 1。",
                         lambda: [1 / profiling.layout_overhead(s) for s in SHAPES])),
             explain="(d) 最亏：5 行补到 8 行、300 列补到 384 列，两倍多的内存。"),
    Exercise("9.4b", "tiled_slot", "function", lambda row, col: profiling.tiled_offset((row, col), TILED),
             rtol=0, atol=0, sampler=lambda rng: {"row": int(rng.integers(0, 4)), "col": int(rng.integers(0, 8))},
             n_samples=12, unit="（位置）",
             edge_cases=({"row": 0, "col": 0}, {"row": 1, "col": 0}, {"row": 0, "col": 4}, {"row": 2, "col": 0},
                         {"row": 3, "col": 7}),
             slips=(Slip("按普通的行主序排了：分块布局先按 (2,4) 的块排，块内再按 (2,1) 的小块排。", _row_major),
                    Slip("漏了内层的 (2,1) 小块：块内不是行主序，上下相邻的两个 bf16 排在一起。", _tiles_no_inner)),
             explain="内层 (2,1) 块把上下相邻的两个 bf16 拼成一个 4 字节的字。"),
    Exercise("9.4c", "padded_f32", "numbers", lambda: list(profiling.padded_shape("f32[5,300]{1,0:T(8,128)}")),
             rtol=0, unit="（形状）", labels=("行", "列"),
             slips=(Slip("只补了列：行数 5 也要补到 8 的倍数。", lambda: [5, 384]),
                    Slip("只补了行：列数 300 也要补到 128 的倍数。", lambda: [8, 300])),
             explain="5 行补到 8 行，300 列补到 384 列。"),
    Exercise("9.4d", "worst_padding", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "1024 × 1024 两维都整除 (8, 128)：没有填充。",
                  "C": "最后一维 4096 整除 128；只有 3 行补到 8 行，约 2.7 倍。",
                  "D": "64 × 256 整除 (8, 128)，内层 (2,1) 也整除：没有填充。"},
             explain="最次要的一维补到 128：f32[4096, 3] 的 3 列变成 128 列，浪费四十多倍。"),
    Exercise("9.5", "memory_space", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "S(1) 才是 VMEM：这条指令的输出布局里没有 S(…)，在默认的内存空间 HBM 里（它的输入有 S(1)）。",
                  "C": "主机内存不会出现在一个融合的输出布局里：设备上的数组在 HBM 或 VMEM 中。",
                  "D": "HLO 的数组形状不描述寄存器：寄存器是编译器在 kernel 内部分配的。"},
             explain="没写 S(…) 就是 S(0)，即 HBM；输入的 S(1) 表示它在 VMEM 里。"),
    Exercise("9.5b", "out_shape", "numbers", lambda: list(profiling.parse_hlo_shape(HLO_OUT).dims), rtol=0,
             unit="（形状）",
             slips=(Slip("这是输入的形状：等号左边、fusion 前面的才是输出。", lambda: [16, 2048, 6144]),),
             explain="形状写在 dtype 后面的方括号里，布局和分块不改变逻辑形状。"),
    Exercise("9.5c", "rs_ways", "number", lambda: 6144 / 1536, rtol=0, atol=0, unit="份",
             slips=(Slip("比值倒过来了：输入的最后一维是输出的几倍，就分成了几份。", lambda: 1536 / 6144),
                    Slip("这是正文那条 HLO 的 2 份：这里最后一维从 6144 变成 1536。", lambda: 2.0)),
             explain="最后一维从 6144 变成 1536：这个 ReduceScatter 把数据分成 4 份。"),
    Exercise("9.6", "matvec_bw", "number", lambda: 2 * 2048 * 4096 / 123e-6, rtol=0.05, unit="B/s",
             slips=(Slip("元素数当成了字节数：bf16 每个元素 2 字节，权重 2048 × 4096 个元素。",
                         lambda: 2048 * 4096 / 123e-6),
                    Slip("按 fp32 的 4 字节算了：这个融合是 bf16。", lambda: 4 * 2048 * 4096 / 123e-6)),
             explain="约 1.4e11 B/s，只有一个 v2 核心 HBM 带宽（约 3.5e11 B/s）的四成。"),
    Exercise("9.6b", "mp_ways", "number", lambda: 32768 / 2048, rtol=0, atol=0, unit="路",
             slips=(Slip("比值倒过来了：真实的维度 ÷ 每个设备看到的维度。", lambda: 2048 / 32768),
                    Slip("这是正文那个 profile 的 8 路：这里 32768 / 2048 = 16。", lambda: 8.0)),
             explain="副本组 16 个成员一组，2048 = 32768 / 16：16 路模型并行。"),
    Exercise("9.6d", "matvec_bound", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "FLOPs 的绝对数大不等于计算受限：矩阵乘向量每读 2 字节的权重只做 2 次运算，强度约 1。",
                  "C": "融合内部没有跨设备通信：ICI 只在后面的集合通信里用到。",
                  "D": "123 µs 的算子远大于启动开销（微秒级）；它慢是因为要读 16 MB 的权重。"},
             explain="强度约 1 FLOP/字节：矩阵乘向量永远卡在 HBM 带宽上，只是这里没跑满。"),
    Exercise("9.7", "flop_shares", "numbers", _p97, rtol=0.05, unit="（份额）",
             labels=("MLP", "注意力投影", "注意力分数"),
             slips=(Slip("漏了注意力分数：4TD 在 T = 2048 时占 5%，不能当零。",
                         lambda: _p97([4 * D * F, 8 * D * D, 0])),
                    Slip("注意力分数只算了 QKᵀ：乘 V 也是同样的 FLOPs，每 token 共 4TD。",
                         lambda: _p97([4 * D * F, 8 * D * D, 2 * T * D]))),
             explain="MLP 约 63%，注意力投影约 31%，注意力分数约 5%：T 翻倍，分数的份额也约翻倍。"),
    Exercise("9.7b", "t_layer", "number", _p97b, rtol=0.03, unit="秒",
             slips=(Slip("没有平分到 8 个核心上。", lambda: _layer_flops() / C2),
                    Slip("漏了注意力分数的 4TD。", lambda: _layer_flops(scores=False) / (8 * C2))),
             explain=lambda: f"约 {_p97b() * 1e3:.0f} ms；若实测 48 ms，就达到了 Roofline 的 {_p97b() / 48e-3:.0%}。"),
    Exercise("9.7d", "scores_long", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "注意力分数每 token 是 4TD，正比于 T：T 变成 16 倍，它的份额不会停在 5%。",
                  "C": "到 T = 32768 时 4TD 约 8e8，和 MLP 加投影的约 9e8 差不多，还没到压倒性的地步。",
                  "D": "D 不变，可 4TD 里还有 T：它随上下文线性增长，其余两项不变。"},
             explain="每 token 4TD 对 4DF + 8D²：T = 32768 时两者差不多，分数约占一半。"),
]
