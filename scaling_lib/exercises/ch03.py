"""Chapter 3 exercises (spec 03, P3.1-P3.16; the free-text parts of P3.14-P3.16 are 思考题).

Expected values are computed from scaling_lib (sharding, collectives, topology, hardware); the
spec's corrected answers (the book's numbers, the parameters' defaults) are pinned in
tests/test_exercises_03.py.

Per-student numbers (``params``, see scaling_lib.exercises): the array shapes of 3.1-3.4, the
sizes of the AllGathers in 3.6 and 3.8/3.8b, the problem of 3.10b and the batch of 3.13.
Meshes, chips and link speeds stay the book's: they are what the chapter teaches.
"""
from __future__ import annotations

from .. import collectives, hardware, sharding, topology
from . import Exercise, Param

V4P_CUBE = {"X": 4, "Y": 4, "Z": 4}

SHAPE1 = {"r1": Param(4, (8, 12, 16, 20, 24, 32, 64)), "c1": Param(128, (64, 96, 192, 256, 384, 512))}
SHAPE2 = {"r2": Param(1024, (256, 512, 2048, 3072, 4096, 8192)),
          "c2": Param(4096, (512, 1024, 2048, 3072, 6144, 8192, 16384))}
SHAPE3 = {"r3": Param(128, (32, 64, 256, 384, 512, 1024)), "c3": Param(2048, (512, 1024, 3072, 4096, 8192))}
SHAPE4 = {"k4": Param(2048, (512, 1024, 3072, 4096, 6144)), "c4": Param(8192, (2048, 4096, 12288, 16384, 32768))}
# I x F and B x D set the bytes moved: the grids make every product different (odd part x power of
# two, or disjoint primes), so two students share an answer only if they share both numbers
AG6 = {"I6": Param(2048, (512, 768, 1280, 1792, 2816, 3328)), "F6": Param(8192, (8704, 9728, 11776, 14848))}
# (D8 >= 4096 and B13 >= 32 keep the collectives bandwidth-bound, as the book's method assumes;
# no D10 is near 2 B10, where the two strategies of 3.10 tie)
CUBE8 = {"B8": Param(1024, (384, 640, 896, 1152, 1408, 1664)), "D8": Param(4096, (8192, 16384, 32768))}
STRAT10 = {"B10": Param(1024, (256, 384, 640, 1536, 2560)), "D10": Param(8192, (4096, 10240, 16384)),
           "F10": Param(32768, (8192, 16384, 65536)), "X10": Param(4, (2, 8, 16))}
FFN13 = {"B13": Param(128, (32, 48, 64, 96, 192, 256, 384, 512))}


def _p1(r1, c1):
    m = {"X": 2, "Y": 2}
    return [*sharding.parse("A[I_X, J_Y]").local_shape((r1, c1), m),
            *sharding.parse("A[I_XY, J]").local_shape((r1, c1), m)]


def _p2(r2, c2):
    nb = sharding.parse("A[I_XY, J]").bytes_per_device((r2, c2), "f32", {"X": 8, "Y": 2})
    return [nb, nb / hardware.get("H100").hbm_bw]


def _p3(r3, c3):
    a, m = sharding.parse("A[I_XY, J]"), {"X": 2, "Y": 8, "Z": 2}
    return [a.bytes_per_device((r3, c3), "int8", m), a.total_bytes((r3, c3), "int8", m)]


def _p4(k4, c4):
    m = {"X": 4, "Y": 2}
    return [*sharding.parse("A[I_X, J_Y]").local_shape((8, k4), m),
            *sharding.parse("B[J, K_Y]").local_shape((k4, c4), m)]


def _p5():
    return [hardware.get(c).ici_link_bw_1way * sharding.T_HOP for c in ("v5e", "v5p")]


def _p6(I, F, wrap):
    m = {"X": 8, "Y": 4}
    if wrap:
        return sharding.reshard_cost("A[I_Y, F]", "A[I, F]", m, {"I": I, "F": F}, chip="v5e")[0].time
    slc = topology.TpuSlice("v5e", (8, 4), ("X", "Y"))
    return sharding.reshard_cost("A[I_Y, F]", "A[I, F]", m, {"I": I, "F": F}, topo=slc)[0].time


def _p8(pairs, B8=1024, D8=4096):
    cube = topology.TpuSlice("v4p", (4, 4, 4), ("X", "Y", "Z"))
    return [sharding.reshard_cost(src, dst, V4P_CUBE, {"B": B8, "D": D8}, topo=cube)[0].time
            for src, dst in pairs]


def _p9():
    cube = topology.TpuSlice("v4p", (4, 4, 4), ("X", "Y", "Z"))
    return sharding.reshard_cost("A[B_X]", "A[B]", V4P_CUBE, {"B": 128}, topo=cube)[0].time


def _p10(B, D, F, X):
    r = sharding.strategy_times(B, D, F, X, "v5p")
    return [max(r["S1"]), max(r["S2"])]


def _p10_choice(B10, D10, F10, X10):
    t1, t2 = _p10(B10, D10, F10, X10)
    return "B" if t2 < t1 else "A"


def _explain_10b(B10, D10, F10, X10):
    t1, t2 = _p10(B10, D10, F10, X10)
    which = "先乘后 AllReduce（策略 2）" if t2 < t1 else "先 AllGather（策略 1）"
    return f"两种策略都是 max(计算, 通信)；这组数下{which}的那个更小。"


def _p11(I, J, K):
    cube = topology.TpuSlice("v4p", (4, 4, 4), ("X", "Y", "Z"))
    p = sharding.matmul("A[I_XYZ, J]", "B[J, K]", V4P_CUBE, out="Out[I, K]",
                        sizes={"I": I, "J": J, "K": K}, topo=cube)
    return [p.t_math, p.t_comms]


def _p12(I, J, K):
    m, s = {"X": 4, "Y": 4}, {"I": I, "J": J, "K": K}
    a = [sharding.matmul("A[I_X, J_Y]", "B[J_Y, K]", m, out="[I_X, K]", sizes=s, chip="v5e",
                         wrap=w).t_comms for w in (True, False)]
    b = [sharding.matmul("A[I_X, J]", "B[J_X, K_Y]", m, sizes=s, chip="v5e", wrap=w).t_comms
         for w in (True, False)]
    t_math = sharding.matmul("A[I_X, J]", "B[J, K_Y]", m, sizes=s, chip="v5e").t_math
    return [*a, *b, t_math]


def _p12_choice():
    p = sharding.matmul("A[I_X, J_Y]", "B[J_Y, K]", {"X": 4, "Y": 4}, out="[I_X, K]")
    return {"all_gather": "A", "all_reduce": "B", "reduce_scatter": "C"}[p.collectives[0][0]]


def _p13(B13=128):
    m, s = {"X": 2, "Y": 2}, {"B": B13, "D": 8192, "F": 32768}
    up = sharding.matmul("In[B, D_XY]", "Win[D, F_XY]", m, sizes=s, chip="v5e")
    down = sharding.matmul("H[B, F_XY]", "Wout[F_XY, D]", m, out="[B, D_XY]", sizes=s, chip="v5e")
    w = 2 * sharding.parse("Win[D, F_XY]").bytes_per_device((8192, 32768), "bf16", m)
    return [up.t_comms, down.t_comms, up.t_math + down.t_math, w]


def _p13_choice(B13=128):
    m, s = {"X": 2, "Y": 2}, {"D": 8192, "F": 32768}
    fsdp = sharding.reshard_cost("Win[D_XY, F]", "Win[D, F]", m, s, chip="v5e")[0].time
    t = _p13(B13)
    return "B" if t[0] + t[1] < fsdp else "A"



def _p15(M, K):
    # gather-first moves the [N, M] operand; multiply-then-ReduceScatter moves the [N, K] result
    mesh, s = {"X": 4}, {"N": 64, "M": int(M), "K": int(K)}
    g = sharding.matmul("A[N, M_X]", "B[M, K]", mesh, sizes=s)
    r = sharding.matmul("A[N, M_X]", "B[M, K]", mesh, out="[N_X, K]", sizes=s, strategy="reduce")
    return g.comm_bytes / r.comm_bytes


def _p16_ag(N, D):
    return N * N * sharding.ring_link_load("all_gather", int(D), bidirectional=False)


def _p16_a2a(N, D):
    return N * N * sharding.ring_link_load("all_to_all", int(D), bidirectional=False)


def _p16_ratios():
    big = 10**6
    limit = float(collectives.ring_time("all_gather", 1.0, big, 1.0).total
                  / collectives.alltoall_ring_exact(1.0, big, 1.0))
    return [sharding.ring_link_load("all_gather", n) / sharding.ring_link_load("all_to_all", n)
            for n in (4, 8)] + [round(limit, 3)]


def _pow2(rng, lo, hi):
    return int(2 ** rng.integers(lo, hi + 1))


def _even(rng, lo, hi):
    return int(2 * rng.integers(lo // 2, hi // 2 + 1))


EXERCISES = [
    Exercise("3.1", "shapes", "numbers", _p1, rtol=0.0, atol=0.0, unit="元素", params=SHAPE1,
             explain="两种切法每颗芯片存的元素一样多，只是块的形状不同。"),
    Exercise("3.2", "answer", "numbers", _p2, rtol=0.10, unit="[字节, 秒]", params=SHAPE2,
             explain="每颗芯片只存 1/16；这么小的数组 H100 读一遍不到几微秒，实际被各种固定开销主导。"),
    Exercise("3.3", "answer", "numbers", _p3, rtol=0.0, unit="字节", params=SHAPE3,
             hints=((0.5, "总字节数少了一半：没用到的 Z 轴上还有一份副本。"),),
             explain="Z 轴没用到，每块存两份：总量 = 32 颗芯片 × 每颗芯片的字节数。"),
    Exercise("3.4", "shapes", "numbers", _p4, rtol=0.0, unit="元素", params=SHAPE4,
             hints=((2.0, "有一维差了 2 倍：X 轴有 4 颗芯片、Y 轴有 2 颗，别把两条轴弄反。"),),
             explain="本地形状就是每一维除以切开它的那些轴的大小。"),
    Exercise("3.5", "thresholds", "numbers", _p5, rtol=0.05, unit="字节",
             hints=((2.0, "大了 2 倍：门槛用的是单向链路带宽。"),),
             explain="每跳传的数据少于这个量，1 µs 的跳延迟就比传输时间长。"),
    Exercise("3.6", "t_ag", "number", lambda I6, F6: _p6(I6, F6, False), rtol=0.10, unit="秒",
             params=AG6, accept=(lambda I6, F6: _p6(I6, F6, True),),
             hints=((2 / 3, "这是带环绕链路的环的结果。v5e 的 4 芯片轴有环绕链路吗？"),),
             explain="没有环绕链路的 4 芯片轴只能单向走 3 跳，比理想的环慢约一半。"),
    Exercise("3.6b", "why", "choice", lambda: "A", choices=("A", "B", "C"),
             explain="v5e 只有长度 16 的轴才有环绕链路；4 芯片的 Y 轴是一条链。"),
    Exercise("3.6c", "t_small", "number", lambda: _p6(256, 256, False), rtol=0.5, unit="秒",
             explain="每跳只有 32 kB，传输不到 1 µs，3 跳的延迟说了算（实测约 8 µs）。"),
    Exercise("3.7", "ratio", "number",
             lambda: sharding.parse("A[I_X, J, K]").replication_factor({"X": 4, "Y": 8, "Z": 2}),
             rtol=0.0, unit="倍", explain="没用到的 Y、Z 两条轴上各自复制：8 × 2 = 16。"),
    Exercise("3.8", "times", "numbers",
             lambda B8, D8: _p8([("A[B_X, D_Y]", "A[B, D_Y]"), ("A[B_X, D_Y]", "A[B, D]"),
                                 ("A[B_X, D_Y]{U_Z}", "A[B_X, D_Y]")], B8, D8),
             rtol=0.10, unit="秒", params=CUBE8,
             hints=((16.0, "(c) 大了约 16 倍：每颗芯片上未归约的数组只有 2BD/16 字节（原书旧版就错在这里）。"),),
             explain="每颗芯片要收集的只是它那一份 Y 分片；AllReduce 的 V 是本地分片的大小。"),
    Exercise("3.8b", "times_bonus", "numbers",
             lambda B8, D8: _p8([("A[B_XZ, D_Y]", "A[B, D_Y]"), ("A[B_XZ, D_Y]", "A[B, D]")], B8, D8),
             rtol=0.10, unit="秒", params=CUBE8,
             explain="先沿空闲的 Z 轴免费地再切一刀，收集时就多了一条轴的带宽：分得越细越好。"),
    Exercise("3.9", "t_lat", "number", _p9, rtol=0.5, unit="秒",
             explain="只有 256 字节，带宽时间几乎为零；4 芯片环最远 2 跳，延迟约 2 µs。"),
    Exercise("3.10", "strategy_times", "function", _p10, rtol=0.02, unit="秒",
             sampler=lambda rng: {"B": _pow2(rng, 6, 14), "D": _pow2(rng, 9, 16),
                                  "F": _pow2(rng, 10, 16), "X": _pow2(rng, 1, 4)},
             explain="两种策略都是 max(计算, 通信)；策略 2 的通信只和 B·F 有关，不随 D 增长。"),
    Exercise("3.10b", "winner", "choice", _p10_choice, choices=("A", "B"), params=STRAT10,
             explain=_explain_10b),
    Exercise("3.11", "best", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             explain="把 I 或 K 分到全部 64 颗芯片，只需一次 AllGather；收缩维分片要 AllReduce，通信翻倍。"),
    Exercise("3.11b", "option1_times", "function", _p11, rtol=0.02, unit="秒",
             sampler=lambda rng: {"I": _pow2(rng, 8, 16), "J": _pow2(rng, 10, 15),
                                  "K": _pow2(rng, 10, 15)},
             explain="三条轴一起收集，带宽是 3·W_ici；数据少时 6 跳的延迟（约 6 µs）才是下限。"),
    Exercise("3.12", "q6_times", "function", _p12, rtol=0.02, unit="秒",
             sampler=lambda rng: {"I": _pow2(rng, 11, 15), "J": _pow2(rng, 10, 15),
                                  "K": _pow2(rng, 11, 15)},
             explain="4×4 的 v5e 没有环绕链路，每次 AllGather/ReduceScatter 约慢一半。"),
    Exercise("3.12b", "collective_a", "choice", _p12_choice, choices=("A", "B", "C", "D"),
             explain="(a) 的两个收缩维度都沿 Y 切开，本地乘出沿 Y 未归约的部分和，输出要 I_X，所以是 AllReduce_Y。"),
    Exercise("3.13", "ffn", "numbers", _p13, rtol=0.10, unit="[秒, 秒, 秒, 字节]", params=FFN13,
             explain="张量并行每层只搬 B·D 大小的激活，比两个矩阵乘法的计算时间短得多。"),
    Exercise("3.13b", "plan", "choice", _p13_choice, choices=("A", "B"), params=FFN13,
             explain="FSDP 要收集 537 MB 的权重，每个约 3 ms，还放不下；张量并行只搬激活。"),
    Exercise("3.15", "comm_ratio", "function", _p15, rtol=0.01, unit="倍",
             sampler=lambda rng: {"M": _pow2(rng, 6, 14), "K": _pow2(rng, 6, 14)},
             explain="先收集搬的是 [N, M] 的 A，先乘后 ReduceScatter 搬的是 [N, K] 的结果：比值 M/K。"),
    Exercise("3.16", "ag_scalars", "function", _p16_ag, rtol=0.01, unit="个标量",
             sampler=lambda rng: {"N": _pow2(rng, 4, 12), "D": _pow2(rng, 1, 6)},
             explain="单向环上，每条链路要过 D-1 条 N²/D 的条带。"),
    Exercise("3.16b", "a2a_scalars", "function", _p16_a2a, rtol=0.01, unit="个标量",
             sampler=lambda rng: {"N": _pow2(rng, 4, 12), "D": _pow2(rng, 1, 6)},
             explain="距离 1 到 D-1 的块各 N²/D² 个，1+2+…+(D-1) = D(D-1)/2。"),
    Exercise("3.16c", "one_way_ratio", "number",
             lambda: sharding.ring_link_load("all_gather", 8, False)
             / sharding.ring_link_load("all_to_all", 8, False),
             rtol=0.01, unit="倍", explain="单向环上 AllToAll 只省一半。"),
    Exercise("3.16d", "bidi_ratios", "numbers", _p16_ratios, rtol=0.02, unit="倍",
             explain="双向环上 AllToAll 的最远距离减半、距离之和约为 D²/8，比值从 2.67 慢慢逼近 4。"),
]
