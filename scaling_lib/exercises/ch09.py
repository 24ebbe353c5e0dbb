"""Chapter 9 exercises (spec 09, P9.1-P9.7; P9.6 and parts of P9.7 are also 思考题).

The chapter reads the book's profile of a mock Transformer (B = 32, T = 1024, D = 8192,
F = 32768 on 8 TPU v2 cores) and one HLO line. Every exercise here asks another instance: the
same kind of profile for B = 16, T = 2048, D = 6144, F = 24576, other tiled shapes, another HLO
line (a 4-way ReduceScatter into HBM) and another mat-vec fusion, so no expected value is a number
the chapter prints (tests/test_exercises.py checks it). Each exercise declares its likely slips;
the choice items ask where the time goes and which resource binds, and why.

Per-student numbers (``params``, see scaling_lib.exercises): the batch of 9.1 (and the measured
time of 9.1b), the shard and sequence length of 9.2, the batch and length of 9.3, one tiled shape
of 9.4 and of 9.4c, the mat-vec time of 9.6, and the length (and batch) of 9.7/9.7b. The chip (a
TPU v2 core), D, F and the mesh stay fixed: they are what the profile shows. The grids keep every
value off the chapter's worked numbers (B = 32, T = 1024, D = 8192, F = 32768).
"""
from __future__ import annotations

from .. import profiling
from . import Exercise, Param, Slip

V2 = profiling.TPU_V2_CORE
C2, W2 = 23e12, 1.2e11                  # per v2 core: bf16 FLOPs/s; one ICI hop, bidirectional
B, T, D, F = 16, 2048, 6144, 24576      # the exercises' mock Transformer
TILED = "bf16[4,8]{1,0:T(2,4)(2,1)}"
SHAPES = ("f32[5,7]{1,0:T(2,2)}", "bf16[3,8]{1,0:T(2,4)(2,1)}", "bf16[16,20,8192]{2,1,0:T(8,128)(2,1)}",
          "f32[5,300]{1,0:T(8,128)}")
HLO_OUT = "bf16[16,2048,1536]{2,1,0:T(8,128)(2,1)}"
B7 = 4                                   # sequences in the layer-time item

# 9.1/9.1b: batch of the up-projection and the measured time (t_ffw = 3.36 ms per sequence; every
# student's t_ffw <= 94 ms < every measured time, so the fraction stays below 1)
FFW1 = {"B1": Param(16, (6, 8, 10, 12, 14, 20, 24, 28)), "M1": Param(61, (100, 110, 120, 135, 150), "61")}
RS2 = {"S2": Param(4, (2, 3, 5, 6, 7)), "T2": Param(2048, (512, 1536, 3072, 4096))}
ATT3 = {"B3": Param(16, (8, 12, 20, 24)), "T3": Param(2048, (512, 1536, 3072, 4096, 8192))}
# 9.4 (c): the second-minor dimension (padded to 8); every value gives another overhead
PAD4 = {"R4": Param(20, (10, 12, 14, 19, 22, 27, 30, 36))}
# 9.4c: rows padded to 8, columns to 128 (no multiple of either, so each slip stays wrong)
PAD4C = {"r4c": Param(5, (3, 6, 7, 9, 12, 17, 20)), "c4c": Param(300, (100, 200, 260, 400, 520, 700, 1000))}
MV6 = {"t6": Param(123, (95, 105, 115, 140, 150, 165, 180))}
LAYER7 = {"T7": Param(2048, (1536, 2560, 3072, 4096, 5120, 7168, 12288, 16384)), "B7": Param(4, (2, 3, 6, 8))}


def _t(flops, cores=8, peak=C2):
    return flops / (cores * peak)


def _p91(B1=B, cores=8, peak=C2):
    return _t(2 * B1 * T * D * F, cores, peak)


def _rs_bytes(S2=B // 4, T2=T, whole=1, width=2):
    return width * whole * S2 * T2 * D


def _p92(S2=B // 4, T2=T, whole=1, width=2):
    return profiling.expected_op_time(0, 0, _rs_bytes(S2, T2, whole, width), V2).t


def _p93(B3=B, T3=T, cores=8, causal=1.0):
    proj = _t(2 * B3 * T3 * D * D, cores)
    return [proj, 4 * proj, causal * _t(2 * B3 * T3 * T3 * D, cores)]


def _shapes(R4=20):
    return (SHAPES[0], SHAPES[1], f"bf16[16,{R4},8192]{{2,1,0:T(8,128)(2,1)}}", SHAPES[3])


def _up(n, m):
    return -(-n // m) * m


def _mv_bytes():
    return 2 * 2048 * 4096


def _minor_only(shape):
    """The overhead if only the last dimension were padded to its tile."""
    s = profiling.parse_hlo_shape(shape)
    full = profiling.padded_shape(shape)
    return (full[-1] / s.dims[-1])


def _p97(T7=T, scores=4):
    parts = [4 * D * F, 8 * D * D, scores * T7 * D]
    tot = sum(parts)
    return [x / tot for x in parts]


def _layer_flops(T7=T, B7=B7, scores=True):
    return B7 * T7 * (4 * D * F + 8 * D * D + (4 * T7 * D if scores else 0))


def _p97b(T7=T, B7=B7):
    return profiling.expected_op_time(_layer_flops(T7, B7), 0, 0, V2, n_devices=8).t


def _row_major(row, col):
    return row * 8 + col


def _tiles_no_inner(row, col):
    return ((row // 2) * 2 + col // 4) * 8 + (row % 2) * 4 + col % 4


EXERCISES = [
    Exercise("9.1", "t_ffw", "number", lambda B1: _p91(B1), rtol=0.03, unit="秒", params={"B1": FFW1["B1"]},
             slips=(Slip("没有平分到 8 个核心上：每个核心只算自己那 1/8 的 FLOPs。", lambda B1: _p91(B1, cores=1)),
                    Slip("用了整颗 v2 芯片的峰值 45e12：题目按每个核心 23e12 算，8 个核心各算 1/8。",
                         lambda B1: _p91(B1, peak=45e12)),
                    Slip("按 4 个设备分了：4 颗芯片共 8 个核心，profile 里每个核心是一个设备。",
                         lambda B1: _p91(B1, cores=4))),
             explain=lambda B1: f"约 {_p91(B1) * 1e3:.0f} ms：上投影的 FLOPs 除以 8 个核心的峰值。"),
    Exercise("9.1b", "ffw_fraction", "number", lambda B1, M1: _p91(B1) / (M1 * 1e-3), rtol=0.03,
             unit="（比值）", params=FFW1,
             slips=(Slip("比值倒过来了：要的是 Roofline 时间 ÷ 实测时间，它不会大于 1。",
                         lambda B1, M1: (M1 * 1e-3) / _p91(B1)),),
             explain=lambda B1, M1: (f"约 {_p91(B1) / (M1 * 1e-3):.0%}：离 Roofline 还有约 "
                                     f"{M1 - _p91(B1) * 1e3:.0f} ms 的余地。")),
    Exercise("9.1c", "optimise_first", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "它最贵，可离 Roofline 只差 7 ms：最多只能省这么多。该看的是实测和 Roofline 之差。",
                  "C": "带宽受限不等于没得优化：这个融合离它自己的（带宽）Roofline 还差 10 ms。",
                  "D": "强度低只说明它受带宽限制，不说明它离极限多远：比较的是每个算子能省下的时间。"},
             explain="按“实测 − Roofline”排序：融合能省 10 ms，上投影最多 7 ms。"),
    Exercise("9.2", "t_rs", "number", _p92, rtol=0.10, unit="秒", params=RS2,
             slips=(Slip("用了整个批次：只有每个数据并行分片的输出要做 ReduceScatter，整个批次是它的 4 倍。",
                         lambda S2, T2: _p92(S2, T2, whole=4)),
                    Slip("字节数是 2 倍：bf16 每个元素 2 字节，不是 fp32 的 4 字节；带宽按双向 1.2e11 B/s 算。",
                         lambda S2, T2: _p92(S2, T2, width=4))),
             explain=lambda S2, T2: (f"约 {_p92(S2, T2) * 1e3:.2g} ms：{_rs_bytes(S2, T2):.2g} 字节走一跳 ICI。")),
    Exercise("9.3", "t_attn", "numbers", _p93, rtol=0.03, unit="秒", labels=("一个投影", "四个投影", "QKᵀ"),
             params=ATT3,
             slips=(Slip("没有平分到 8 个核心上。", lambda B3, T3: _p93(B3, T3, cores=1)),
                    Slip("QKᵀ 按因果掩码减半了：题目说不利用因果掩码。", lambda B3, T3: _p93(B3, T3, causal=0.5))),
             explain="四个投影合起来和 FFW 的上投影一样贵（F = 4D）；注意力分数是 2BT²D，随序列长度平方增长。"),
    Exercise("9.4", "overheads", "numbers", lambda R4: [profiling.layout_overhead(s) for s in _shapes(R4)],
             rtol=0.01, unit="（倍）", labels=("(a)", "(b)", "(c)", "(d)"), params=PAD4,
             slips=(Slip("只补了最后一维：分块的每一维都要补到块大小的倍数（(d) 的 5 行也要补到 8 行）。",
                         lambda R4: [_minor_only(s) for s in _shapes(R4)]),
                    Slip("比值倒过来了：开销是补齐后的元素数 ÷ 逻辑元素数，不小于 1。",
                         lambda R4: [1 / profiling.layout_overhead(s) for s in _shapes(R4)])),
             explain="(d) 最亏：5 行补到 8 行、300 列补到 384 列，两倍多的内存。"),
    Exercise("9.4b", "tiled_slot", "function", lambda row, col: profiling.tiled_offset((row, col), TILED),
             rtol=0, atol=0, sampler=lambda rng: {"row": int(rng.integers(0, 4)), "col": int(rng.integers(0, 8))},
             n_samples=12, unit="（位置）",
             edge_cases=({"row": 0, "col": 0}, {"row": 1, "col": 0}, {"row": 0, "col": 4}, {"row": 2, "col": 0},
                         {"row": 3, "col": 7}),
             slips=(Slip("按普通的行主序排了：分块布局先按 (2,4) 的块排，块内再按 (2,1) 的小块排。", _row_major),
                    Slip("漏了内层的 (2,1) 小块：块内不是行主序，上下相邻的两个 bf16 排在一起。", _tiles_no_inner)),
             explain="内层 (2,1) 块把上下相邻的两个 bf16 拼成一个 4 字节的字。"),
    Exercise("9.4c", "padded_f32", "numbers",
             lambda r4c, c4c: list(profiling.padded_shape(f"f32[{r4c},{c4c}]{{1,0:T(8,128)}}")),
             rtol=0, unit="（形状）", labels=("行", "列"), params=PAD4C,
             slips=(Slip("只补了列：行数也要补到 8 的倍数。", lambda r4c, c4c: [r4c, _up(c4c, 128)]),
                    Slip("只补了行：列数也要补到 128 的倍数。", lambda r4c, c4c: [_up(r4c, 8), c4c])),
             explain=lambda r4c, c4c: f"{r4c} 行补到 {_up(r4c, 8)} 行，{c4c} 列补到 {_up(c4c, 128)} 列。"),
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
    Exercise("9.6", "matvec_bw", "number", lambda t6: _mv_bytes() / (t6 * 1e-6), rtol=0.05, unit="B/s",
             params=MV6,
             slips=(Slip("元素数当成了字节数：bf16 每个元素 2 字节，权重 2048 × 4096 个元素。",
                         lambda t6: _mv_bytes() / 2 / (t6 * 1e-6)),
                    Slip("按 fp32 的 4 字节算了：这个融合是 bf16。", lambda t6: 2 * _mv_bytes() / (t6 * 1e-6))),
             explain=lambda t6: (f"约 {_mv_bytes() / (t6 * 1e-6):.2g} B/s，只有一个 v2 核心 HBM 带宽"
                                 f"（约 3.5e11 B/s）的 {_mv_bytes() / (t6 * 1e-6) / 3.5e11:.0%}。")),
    Exercise("9.6b", "mp_ways", "number", lambda: 32768 / 2048, rtol=0, atol=0, unit="路",
             slips=(Slip("比值倒过来了：真实的维度 ÷ 每个设备看到的维度。", lambda: 2048 / 32768),
                    Slip("这是正文那个 profile 的 8 路：这里 32768 / 2048 = 16。", lambda: 8.0)),
             explain="副本组 16 个成员一组，2048 = 32768 / 16：16 路模型并行。"),
    Exercise("9.6d", "matvec_bound", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "FLOPs 的绝对数大不等于计算受限：矩阵乘向量每读 2 字节的权重只做 2 次运算，强度约 1。",
                  "C": "融合内部没有跨设备通信：ICI 只在后面的集合通信里用到。",
                  "D": "一百多微秒的算子远大于启动开销（微秒级）；它慢是因为要读 16 MB 的权重。"},
             explain="强度约 1 FLOP/字节：矩阵乘向量永远卡在 HBM 带宽上，只是这里没跑满。"),
    Exercise("9.7", "flop_shares", "numbers", lambda T7: _p97(T7), rtol=0.05, unit="（份额）",
             labels=("MLP", "注意力投影", "注意力分数"), params={"T7": LAYER7["T7"]},
             slips=(Slip("漏了注意力分数：每 token 的 4TD 不能当零。",
                         lambda T7: _p97(T7, scores=0)),
                    Slip("注意力分数只算了 QKᵀ：乘 V 也是同样的 FLOPs，每 token 共 4TD。",
                         lambda T7: _p97(T7, scores=2))),
             explain=lambda T7: ("MLP 约 {:.0%}，注意力投影约 {:.0%}，注意力分数约 {:.0%}："
                                 "T 翻倍，分数的份额也约翻倍。").format(*_p97(T7))),
    Exercise("9.7b", "t_layer", "number", _p97b, rtol=0.03, unit="秒", params=LAYER7,
             slips=(Slip("没有平分到 8 个核心上。", lambda T7, B7: _layer_flops(T7, B7) / C2),
                    Slip("漏了注意力分数的 4TD。", lambda T7, B7: _layer_flops(T7, B7, scores=False) / (8 * C2))),
             explain=lambda T7, B7: f"约 {_p97b(T7, B7) * 1e3:.0f} ms：每层的 FLOPs 除以 8 个核心的峰值。"),
    Exercise("9.7d", "scores_long", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "注意力分数每 token 是 4TD，正比于 T：T 变成 16 倍，它的份额不会停在 5%。",
                  "C": "到 T = 32768 时 4TD 约 8e8，和 MLP 加投影的约 9e8 差不多，还没到压倒性的地步。",
                  "D": "D 不变，可 4TD 里还有 T：它随上下文线性增长，其余两项不变。"},
             explain="每 token 4TD 对 4DF + 8D²：T = 32768 时两者差不多，分数约占一半。"),
]
