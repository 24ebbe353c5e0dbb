"""Chapter 3 exercises (spec 03, P3.1-P3.16; the free-text parts of P3.14-P3.16 are 思考题).

The chapter works the spec's examples itself (the (4, 128) shapes, the fp32[1024, 4096] quiz, the
AllGather on v5e's 4-chip axis, the v4p cube with B = 1024, D = 4096, the two strategies at
D = 8192, the AllToAll ratios at D = 4 and 8); every exercise here asks another instance (another
shape, axis, size or ring length), so that no expected value is a number the chapter prints
(tests/test_exercises.py checks it against the ledger and the chapter's outputs). Each exercise
declares its likely slips (``Slip``: the wrong method and the answer it gives); the choice items
ask which collective or strategy wins and why, with feedback for every wrong reason.

Per-student numbers (``params``, see scaling_lib.exercises): the array shapes of 3.1-3.4, the
sizes of the AllGathers in 3.6 and 3.8/3.8b, the problem of 3.10b and the batch of 3.13.
Meshes, chips and link speeds stay fixed: they are what the chapter teaches.
"""
from __future__ import annotations

from .. import collectives, hardware, sharding, topology
from . import Exercise, Param, Slip

V4P_CUBE = {"X": 4, "Y": 4, "Z": 4}
C4P, W1, WBI = 2.75e14, 4.5e10, 9e10          # v4p peak; v4p/v5e ICI link one way / both ways
C5E, C5P, W5P = 1.97e14, 4.59e14, 1.8e11       # v5e peak; v5p peak and bidirectional link
T_HOP = 1e-6

# the book's instances differ from the chapter's worked ones; a student's never equal them either
# (the chapter's 1024 / 4096 / 2048 / 8192 are left out of the grids where they would reproduce it)
SHAPE1 = {"r1": Param(24, (8, 12, 16, 32, 48, 64, 96)), "c1": Param(384, (64, 96, 128, 192, 256, 512, 640))}
SHAPE2 = {"r2": Param(1536, (256, 512, 768, 2048, 3072, 4096, 8192)),
          "c2": Param(6144, (512, 1024, 2048, 3072, 8192, 12288, 16384))}
SHAPE3 = {"r3": Param(384, (32, 64, 96, 160, 256, 512, 1024)), "c3": Param(2048, (512, 1024, 1536, 3072, 4096, 8192))}
SHAPE4 = {"k4": Param(3072, (512, 1024, 1536, 4096, 6144)), "c4": Param(12288, (2048, 4096, 6144, 16384, 32768))}
# I x F and B x D set the bytes moved: the grids make every product different (odd part x power of
# two, or disjoint primes), so two students share an answer only if they share both numbers
AG6 = {"I6": Param(4096, (512, 768, 1280, 1792, 2816, 3328)), "F6": Param(8192, (8704, 9728, 11776, 14848))}
# (D8 >= 4096 keeps the collectives bandwidth-bound, as the book's method assumes; no B8 is a power
# of two, so no B8 x D8 equals the chapter's 1024 x 4096)
CUBE8 = {"B8": Param(1536, (384, 640, 896, 1152, 1408, 1664)), "D8": Param(8192, (4096, 16384, 32768))}
STRAT10 = {"B10": Param(2560, (256, 384, 640, 1536, 3072)), "D10": Param(4096, (2048, 10240, 16384)),
           "F10": Param(32768, (8192, 16384, 65536)), "X10": Param(4, (2, 8, 16))}
FFN13 = {"B13": Param(128, (32, 48, 64, 96, 192, 256, 384, 512))}


def _swap(ref, i, value):
    out = list(ref)
    out[i] = value
    return out


# ---- 3.1-3.4, 3.7: notation and bytes -------------------------------------------------------------

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
    # the whole gathered array V below which every hop is latency-bound: V/N < W_ici,1 * T_min
    return [n * hardware.get(c).ici_link_bw_1way * sharding.T_HOP for c, n in (("v5e", 4), ("v5p", 16))]


# ---- 3.6, 3.9: one axis, with and without wraparound ------------------------------------------------

V5E_8x4 = topology.TpuSlice("v5e", (8, 4), ("X", "Y"))
V5E_16x16 = topology.TpuSlice("v5e", (16, 16), ("X", "Y"))


def _p6(I6, F6):
    return sharding.reshard_cost("A[I_X, F]", "A[I, F]", {"X": 8, "Y": 4}, {"I": I6, "F": F6},
                                 topo=V5E_8x4)[0].time


def _p9(B=512):
    return sharding.reshard_cost("A[B_XY]", "A[B]", {"X": 16, "Y": 16}, {"B": B}, topo=V5E_16x16)[0].time


def _p9b_choice():
    small, big = _p9(512), _p9(51200)
    return "A" if big < 1.5 * small else "B"


# ---- 3.8: the v4p cube ---------------------------------------------------------------------------

CUBE = topology.TpuSlice("v4p", (4, 4, 4), ("X", "Y", "Z"))


def _p8(pairs, B8=1024, D8=4096):
    return [sharding.reshard_cost(src, dst, V4P_CUBE, {"B": B8, "D": D8}, topo=CUBE)[0].time
            for src, dst in pairs]


P8 = [("A[B_X, D_Y]", "A[B, D_Y]"), ("A[B_X, D_Y]", "A[B, D]"), ("A[B_X, D_Y]{U_Z}", "A[B_X, D_Y]")]
P8B = [("A[B_XZ, D_Y]", "A[B, D_Y]"), ("A[B_XZ, D_Y]", "A[B, D]")]


# ---- 3.10: two strategies ------------------------------------------------------------------------

def _p10(B, D, F, X):
    r = sharding.strategy_times(B, D, F, X, "v5p")
    return [max(r["S1"]), max(r["S2"])]


def _p10_choice(B10, D10, F10, X10):
    t1, t2 = _p10(B10, D10, F10, X10)
    return "B" if t2 < t1 else "A"


def _why10(letter):
    def f(B10, D10, F10, X10):
        t1, t2 = _p10(B10, D10, F10, X10)
        s1 = f"策略 1 是 max({2 * B10 * D10 * F10 / C5P * 1e3:.2f}, {2 * D10 * F10 / W5P * 1e3:.2f}) ms"
        s2 = f"策略 2 是 max({2 * B10 * D10 * F10 / (X10 * C5P) * 1e3:.2f}, {4 * B10 * F10 / W5P * 1e3:.2f}) ms"
        if letter == "C":
            return (f"两种策略的瓶颈不同，一般不会一样快：{s1}，{s2}。"
                    "每个都取计算和通信中较大的那个，再比两者。")
        slower = "策略 1" if letter == "A" else "策略 2"
        return (f"{slower}在这组数下更慢：{s1}，{s2}。策略 2 的计算只有 1/|X|，可它的 AllReduce 搬的是"
                f" 2BF 字节、代价 2V/W_ici，和 B 成正比；策略 1 收集的权重 2DF 字节与 B 无关。")
    return f


def _explain_10b(B10, D10, F10, X10):
    t1, t2 = _p10(B10, D10, F10, X10)
    which = "先乘后 AllReduce（策略 2）" if t2 < t1 else "先 AllGather（策略 1）"
    return f"两种策略都是 max(计算, 通信)；这组数下{which}的那个更小。"


def _p10_slip(kind):
    def f(B, D, F, X):
        tm1, tm2 = 2 * B * D * F / C5P, 2 * B * D * F / (X * C5P)
        tc1, tc2 = 2 * D * F / W5P, 4 * B * F / W5P
        if kind == "ar_once":
            tc2 = 2 * B * F / W5P
        elif kind == "shard":
            tc1 = 2 * D * F / X / W5P
        elif kind == "ring_exact":
            tc1, tc2 = tc1 * (X - 1) / X, tc2 * (X - 1) / X
        elif kind == "no_split":
            tm2 = tm1
        return [max(tm1, tc1), max(tm2, tc2)]
    return f


# ---- 3.11: the best plan on the cube -----------------------------------------------------------------

I11, J11, K11 = 16384, 4096, 16384


def _p11(I, J, K):
    p = sharding.matmul("A[I_XYZ, J]", "B[J, K]", V4P_CUBE, out="Out[I, K]",
                        sizes={"I": I, "J": J, "K": K}, topo=CUBE)
    return [p.t_math, p.t_comms]


def _p11_options():
    a = max(_p11(I11, J11, K11))
    b = max(2 * I11 * J11 * K11 / (64 * C4P), 4 * I11 * K11 / (3 * WBI))
    c = 2 * I11 * J11 * K11 / C4P
    d = max(2 * I11 * J11 * K11 / (16 * C4P), 2 * I11 * K11 / (2 * WBI))
    return {"A": a, "B": b, "C": c, "D": d}


def _p11_choice():
    t = _p11_options()
    return min(t, key=t.get)


def _why11():
    t = {k: v * 1e3 for k, v in _p11_options().items()}
    return {
        "B": (f"收缩维 J 分片时，每颗芯片乘出的是部分和，要 AllReduce：代价 2V/W，是 AllGather 的两倍"
              f"（约 {t['B']:.1f} ms，A 约 {t['A']:.1f} ms）。"),
        "C": (f"不通信，但每颗芯片做全部 2IJK 次运算，约 {t['C']:.1f} ms，比 A 的通信还慢；"
              "只有 J 很小、通信占大头时，全部复制才划算。"),
        "D": (f"只沿两条轴分片，收集时每颗芯片只有 2 条轴的入口，通信约 {t['D']:.1f} ms，"
              "比三条轴一起收集慢一半。"),
    }


def _p11_slip(kind):
    def f(I, J, K):
        t_math = 2 * I * J * K / (64 * C4P)
        bw = 2 * I * K / (3 * WBI)
        lat = 6 * T_HOP
        if kind == "one_axis":
            return [t_math, max(lat, 2 * I * K / WBI)]
        if kind == "no_latency":
            return [t_math, bw]
        if kind == "lat64":
            return [t_math, max(32 * T_HOP, bw)]
        return [t_math * 64, max(lat, bw)]
    return f


# ---- 3.12: the 4x4 v5e without wraparound -------------------------------------------------------------

def _p12(I, J, K):
    m, s = {"X": 4, "Y": 4}, {"I": I, "J": J, "K": K}
    a = [sharding.matmul("A[I_X, J_Y]", "B[J_Y, K]", m, out="[I_X, K]", sizes=s, chip="v5e",
                         wrap=w).t_comms for w in (True, False)]
    b = [sharding.matmul("A[I_X, J]", "B[J_X, K_Y]", m, sizes=s, chip="v5e", wrap=w).t_comms
         for w in (True, False)]
    t_math = sharding.matmul("A[I_X, J]", "B[J, K_Y]", m, sizes=s, chip="v5e").t_math
    return [*a, *b, t_math]


def _p12_slip(kind):
    def f(I, J, K):
        r = _p12(I, J, K)
        if kind == "rs":
            return [r[0] / 2, r[1] / 2, *r[2:]]
        if kind == "ring":
            return [r[0], r[0], r[2], r[2], r[4]]
        return [r[0], r[1], r[2] / 4, r[3] / 4, r[4]]
    return f


def _p12_choice():
    p = sharding.matmul("A[I_X, J_Y]", "B[J_Y, K]", {"X": 4, "Y": 4}, out="[I_X, K]")
    return {"all_gather": "A", "all_reduce": "B", "reduce_scatter": "C"}[p.collectives[0][0]]


# ---- 3.13: a tensor-parallel FFN on a 2x2 v5e -----------------------------------------------------------

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


# ---- 3.15b, 3.16: reduce-first, and link loads on a ring ---------------------------------------------------

def _p15(J, K):
    # gather-first moves the [I, J] operand; multiply-then-ReduceScatter moves the [I, K] result
    mesh, s = {"X": 4}, {"I": 64, "J": int(J), "K": int(K)}
    g = sharding.matmul("A[I, J_X]", "B[J, K]", mesh, sizes=s)
    r = sharding.matmul("A[I, J_X]", "B[J, K]", mesh, out="[I_X, K]", sizes=s, strategy="reduce")
    return g.comm_bytes / r.comm_bytes


def _p16_ag(M, N):
    return M * M * sharding.ring_link_load("all_gather", int(N), bidirectional=False)


def _p16_a2a(M, N):
    return M * M * sharding.ring_link_load("all_to_all", int(N), bidirectional=False)


def _p16e_ratios(split_ties=False):
    big = 10**6
    limit = float(collectives.ring_time("all_gather", 1.0, big, 1.0).total
                  / collectives.alltoall_ring_exact(1.0, big, 1.0))
    return [sharding.ring_link_load("all_gather", n)
            / sharding.ring_link_load("all_to_all", n, split_ties=split_ties) for n in (10, 20)] + [round(limit, 3)]


def _pow2(rng, lo, hi):
    return int(2 ** rng.integers(lo, hi + 1))


EXERCISES = [
    Exercise("3.1", "shapes", "numbers", _p1, rtol=0.0, atol=0.0, unit="元素", params=SHAPE1,
             labels=("A[I_X, J_Y] 行", "A[I_X, J_Y] 列", "A[I_XY, J] 行", "A[I_XY, J] 列"),
             slips=(Slip("A[I_XY, J] 的 I 被 X 和 Y 两条轴一起切开，是 |X|·|Y| = 4 份，不是 2 份。",
                         lambda r1, c1: [r1 // 2, c1 // 2, r1 // 2, c1]),
                    Slip("A[I_X, J_Y] 的两维都切开了：J 也要除以 |Y|。",
                         lambda r1, c1: [r1 // 2, c1, r1 // 4, c1])),
             explain="两种切法每颗芯片存的元素一样多，只是块的形状不同。"),
    Exercise("3.2", "answer", "numbers", _p2, rtol=0.03, unit="[字节, 秒]", params=SHAPE2,
             labels=("字节", "秒"),
             slips=(Slip("按 bf16 的 2 字节算了：数组是 fp32，每个元素 4 字节。",
                         lambda r2, c2: [v / 2 for v in _p2(r2, c2)]),
                    Slip("只除了 X 轴的 8：I 被 X 和 Y 一起切成 16 份。",
                         lambda r2, c2: [v * 2 for v in _p2(r2, c2)]),
                    Slip("算的是整个数组：每颗芯片只存 1/16。",
                         lambda r2, c2: [v * 16 for v in _p2(r2, c2)])),
             explain="每颗芯片只存 1/16；这么小的数组 H100 读一遍只要几微秒以内，实际被各种固定开销主导。"),
    Exercise("3.3", "answer", "numbers", _p3, rtol=0.0, unit="字节", params=SHAPE3, labels=("每设备", "总数"),
             slips=(Slip("总数少了一半：没用到的 Z 轴把整个数组存了 2 份。",
                         lambda r3, c3: [_p3(r3, c3)[0], _p3(r3, c3)[0] * 16]),
                    Slip("每颗芯片的字节按 32 颗芯片平分算了：I 只被 X、Y 切成 16 份，Z 轴上是复制。",
                         lambda r3, c3: [_p3(r3, c3)[0] // 2, _p3(r3, c3)[1]]),
                    Slip("按 bf16 的 2 字节算了：int8 每个元素 1 字节。",
                         lambda r3, c3: [2 * v for v in _p3(r3, c3)])),
             explain="Z 轴没用到，每块存两份：总量 = 32 颗芯片 × 每颗芯片的字节数。"),
    Exercise("3.4", "shapes", "numbers", _p4, rtol=0.0, unit="元素", params=SHAPE4,
             labels=("A 行", "A 列", "B 行", "B 列"),
             slips=(Slip("X 和 Y 弄反了：X 轴有 4 颗芯片，Y 轴有 2 颗。",
                         lambda k4, c4: [4, k4 // 4, k4, c4 // 4]),
                    Slip("P(None, 'Y') 是第二维沿 Y 切开、第一维不切。",
                         lambda k4, c4: [2, k4 // 2, k4 // 2, c4])),
             explain="本地形状就是每一维除以切开它的那些轴的大小。"),
    Exercise("3.7", "ratio", "number",
             lambda: sharding.parse("A[I_Y, J, K]").replication_factor({"X": 4, "Y": 8, "Z": 2}),
             rtol=0.0, unit="倍",
             slips=(Slip("把所有芯片都算上了：沿 Y 切开的每一块只在没用到的 X、Z 轴上复制。", 64),
                    Slip("Y 是切分的轴，不带来复制：复制份数是没用到的轴（X 和 Z）的大小之积。", 32),
                    Slip("这是每颗芯片存的比例（1/|Y|）；题目问每个元素被多少颗芯片存着。", 0.125)),
             explain="没用到的 X、Z 两条轴上各自复制：4 × 2 = 8。"),
    Exercise("3.5", "thresholds", "numbers", _p5, rtol=0.05, unit="字节", labels=("v5e", "v5p"),
             slips=(Slip("这是每跳一块的门槛 W_ici,1·T_min：题目问的是整个数组 V，每跳只传 V/N。",
                         lambda: [4.5e10 * T_HOP, 9e10 * T_HOP]),
                    Slip("用了双向带宽：每跳的一块只在一条链路的一个方向上走，用单向带宽。",
                         lambda: [2 * v for v in _p5()])),
             explain="门槛是 N·W_ici,1·T_min：轴越长，整个数组要越大才摆脱延迟。"),
    Exercise("3.6", "t_ag", "number", _p6, rtol=0.05, unit="秒", params=AG6,
             slips=(Slip("按带环绕链路的环算了（V/W_ici）：v5e 只有长度 16 的轴才有环绕链路，"
                         "8 芯片的 X 轴是一条线，只能单向走。", lambda I6, F6: 2 * I6 * F6 / WBI),
                    Slip("(N−1)/N·V/W_ici 是有环绕链路的双向环：8 芯片的 X 轴没有环绕链路，"
                         "最忙的链路单向扛 (N−1)/N·V。", lambda I6, F6: 7 / 8 * 2 * I6 * F6 / WBI),
                    Slip("每颗芯片自己那一块不用传：一条线上最忙的链路扛 (N−1)/N·V，不是 V。",
                         lambda I6, F6: 2 * I6 * F6 / W1),
                    Slip("按 4 芯片的 Y 轴算了：题目收集的是 8 芯片的 X 轴。",
                         lambda I6, F6: 3 / 4 * 2 * I6 * F6 / W1)),
             explain="没有环绕链路的 8 芯片轴只能单向走 7 跳，比按带环绕的环估计慢约 75%。"),
    Exercise("3.6b", "faster_axis", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "带宽受限时，时间看最忙的链路要扛多少字节，不看跳数；跳数只决定延迟项（几 µs）。",
                  "C": "每颗芯片收的字节一样，但 8 芯片的线只能单向走，最忙的链路扛约 7/8·V；"
                       "16 芯片的环两个方向同时传，每个方向只扛约 V/2。",
                  "D": "带宽受限的 AllGather 与芯片数基本无关（(N−1)/N 接近 1），决定快慢的是有没有环绕链路。"},
             explain="有环绕链路的环两个方向同时传，最忙的链路只扛约一半。"),
    Exercise("3.6c", "t_small", "number", lambda: _p6(256, 256), rtol=0.15, unit="秒",
             slips=(Slip("只算了带宽：每跳只传 16 kB，传输不到 1 µs，每跳 1 µs 的延迟说了算。",
                         lambda: 7 * (2 * 256 * 256 / 8) / W1),
                    Slip("本章的模型里每跳取延迟和传输时间中较大的那个，不是两者相加。",
                         lambda: 7 * (T_HOP + (2 * 256 * 256 / 8) / W1)),
                    Slip("按环算了最远 N/2 跳：这条 8 芯片的轴没有环绕链路，数据要单向走 N−1 = 7 跳。",
                         lambda: 4 * T_HOP)),
             explain="每跳只有 16 kB，传输不到 1 µs：7 跳的延迟说了算。"),
    Exercise("3.8", "times", "numbers", lambda B8, D8: _p8(P8, B8, D8), rtol=0.05, unit="秒", params=CUBE8,
             labels=("(a)", "(b)", "(c)"),
             slips=(Slip("(a) 的 V 是收集之后每颗芯片持有的字节 2BD/|Y|，不是收集之前的分片。",
                         lambda B8, D8: (lambda r: _swap(r, 0, r[0] / 4))(_p8(P8, B8, D8))),
                    Slip("(b) 沿两条轴一起收集，每颗芯片有两条轴的入口，带宽是 2·W_ici。",
                         lambda B8, D8: (lambda r: _swap(r, 1, r[1] * 2))(_p8(P8, B8, D8))),
                    Slip("(c) 大了约 16 倍：每颗芯片上未归约的数组只有 2BD/16 字节（原书旧版就错在这里）。",
                         lambda B8, D8: (lambda r: _swap(r, 2, r[2] * 16))(_p8(P8, B8, D8))),
                    Slip("(c) 的 AllReduce 是 ReduceScatter 加 AllGather，代价 2V/W_ici，不是 V/W_ici。",
                         lambda B8, D8: (lambda r: _swap(r, 2, r[2] / 2))(_p8(P8, B8, D8)))),
             explain="每颗芯片要收集的只是它那一份 Y 分片；AllReduce 的 V 是本地分片的大小。"),
    Exercise("3.8b", "times_bonus", "numbers", lambda B8, D8: _p8(P8B, B8, D8), rtol=0.05, unit="秒",
             params=CUBE8, labels=("(a)", "(b)"),
             slips=(Slip("(a) 现在沿 X 和 Z 两条轴一起收集：带宽是 2·W_ici。",
                         lambda B8, D8: (lambda r: _swap(r, 0, r[0] * 2))(_p8(P8B, B8, D8))),
                    Slip("(b) 沿 X、Z、Y 三条轴一起收集：带宽是 3·W_ici。",
                         lambda B8, D8: (lambda r: _swap(r, 1, r[1] * 1.5))(_p8(P8B, B8, D8)))),
             explain="先沿空闲的 Z 轴免费地再切一刀，收集时就多了一条轴的带宽：分得越细越好。"),
    Exercise("3.9", "t_lat", "number", _p9, rtol=0.10, unit="秒",
             slips=(Slip("只算了一条轴：沿 X、Y 两条轴一起收集，数据要走遍两条轴，跳数是两条轴各自最远距离之和。",
                         lambda: 8 * T_HOP),
                    Slip("两条轴都长 16，有环绕链路：两个方向同时走，每条轴最远只要 16/2 = 8 跳，不是 15 跳。",
                         lambda: 30 * T_HOP),
                    Slip("把 256 颗芯片当成一条环了：两条轴一起收集，跳数是每条轴最远距离之和 8 + 8。",
                         lambda: 128 * T_HOP),
                    Slip("只算了带宽：总共 1 KB，传输时间几乎为零，时间由每跳 1 µs 的延迟决定。",
                         lambda: 1024 / (2 * WBI))),
             explain="只有 1 KB，带宽时间几乎为零；每条轴最远 8 跳，两条轴共 16 跳，延迟约 16 µs。"),
    Exercise("3.9b", "scale_100", "choice", _p9b_choice, choices=("A", "B", "C"),
             why={"B": "耗时正比于数据量是带宽受限时的规律；放大后每跳也只传约 400 字节，传输时间约 0.005 µs，"
                       "远小于 1 µs 的延迟。",
                  "C": "耗时不按平方根变：延迟受限时与数据量无关，带宽受限时与数据量成正比。"},
             explain="每跳的数据远小于 45 kB 的门槛，仍是延迟受限：时间只看跳数。"),
    Exercise("3.10", "strategy_times", "function", _p10, rtol=0.02, unit="秒", labels=("T1", "T2"),
             sampler=lambda rng: {"B": _pow2(rng, 6, 14), "D": _pow2(rng, 9, 16),
                                  "F": _pow2(rng, 10, 16), "X": _pow2(rng, 1, 4)},
             edge_cases=({"B": 16384, "D": 8192, "F": 8192, "X": 2}, {"B": 64, "D": 65536, "F": 1024, "X": 16},
                         {"B": 1024, "D": 512, "F": 65536, "X": 2}),
             slips=(Slip("AllReduce 的代价是 2V/W_ici（ReduceScatter 加 AllGather），你只算了一次 V/W_ici。",
                         _p10_slip("ar_once")),
                    Slip("策略 1 AllGather 的 V 是收集后每颗芯片持有的 2DF 字节，不是收集前的分片 2DF/|X|。",
                         _p10_slip("shard")),
                    Slip("你乘了 (N−1)/N：题目要按本章的模型 V/W_ici 算。", _p10_slip("ring_exact")),
                    Slip("策略 2 每颗芯片只算 D/|X| 那一段：它的 FLOPs 要除以 |X|。", _p10_slip("no_split"))),
             explain="两种策略都是 max(计算, 通信)；策略 2 的通信只和 B·F 有关，不随 D 增长。"),
    Exercise("3.10b", "winner", "choice", _p10_choice, choices=("A", "B", "C"), params=STRAT10,
             why={"A": _why10("A"), "B": _why10("B"), "C": _why10("C")}, explain=_explain_10b),
    Exercise("3.11", "best", "choice", _p11_choice, choices=("A", "B", "C", "D"), why=_why11(),
             explain="把 I 分到全部 64 颗芯片，只需一次沿三条轴的 AllGather；收缩维分片要 AllReduce，通信翻倍。"),
    Exercise("3.11b", "option1_times", "function", _p11, rtol=0.02, unit="秒", labels=("T_math", "T_comms"),
             sampler=lambda rng: {"I": _pow2(rng, 8, 16), "J": _pow2(rng, 10, 15),
                                  "K": _pow2(rng, 10, 15)},
             edge_cases=({"I": 256, "J": 1024, "K": 256}, {"I": 65536, "J": 32768, "K": 65536}),
             slips=(Slip("三条轴一起收集，每颗芯片有三条轴的入口：带宽是 3·W_ici。", _p11_slip("one_axis")),
                    Slip("数据少时每跳 1 µs 的延迟是下限：三条轴一共最远 6 跳，约 6 µs。", _p11_slip("no_latency")),
                    Slip("延迟下限按跳数算：每条轴最远 |X_i|/2 跳，三条轴相加是 6 跳，不是 64/2。",
                         _p11_slip("lat64")),
                    Slip("FLOPs 分到了 64 颗芯片上：T_math 要除以 64。", _p11_slip("flops"))),
             explain="三条轴一起收集，带宽是 3·W_ici；数据少时 6 跳的延迟（约 6 µs）才是下限。"),
    Exercise("3.12", "q6_times", "function", _p12, rtol=0.02, unit="秒",
             labels=("(a) 环", "(a) 无环绕", "(b) 环", "(b) 无环绕", "T_math"),
             sampler=lambda rng: {"I": _pow2(rng, 11, 15), "J": _pow2(rng, 10, 15),
                                  "K": _pow2(rng, 11, 15)},
             edge_cases=({"I": 1024, "J": 1024, "K": 1024}, {"I": 32768, "J": 1024, "K": 2048}),
             slips=(Slip("(a) 的输出要 Out[I_X, K]（K 不切），沿 Y 的部分和要 AllReduce（2V/W），"
                         "不是 ReduceScatter。", _p12_slip("rs")),
                    Slip("“无环绕”按环算了：没有环绕链路时每个阶段是 (3/4)·V/W_ici,1，比环慢一半。",
                         _p12_slip("ring")),
                    Slip("(b) 的 V 是收集后每颗芯片持有的 B[J, K_Y]（2JK/4 字节），不是收集前的分片。",
                         _p12_slip("shard"))),
             explain="4×4 的 v5e 没有环绕链路，每次 AllGather/ReduceScatter 约慢一半。"),
    Exercise("3.12b", "collective_a", "choice", _p12_choice, choices=("A", "B", "C", "D"),
             why={"A": "AllGather 只把分片拼起来；(a) 的本地结果是沿 Y 未归约的部分和，要先相加。",
                  "C": "ReduceScatter 会让输出沿 Y 切开；题目要 Out[I_X, K]，K 不切，所以要 AllReduce。",
                  "D": "两个收缩维度都沿 Y 切开，每颗芯片只乘出了和的一部分，必须通信才能加起来。"},
             explain="(a) 的两个收缩维度都沿 Y 切开，本地乘出沿 Y 未归约的部分和，输出要 I_X，所以是 AllReduce_Y。"),
    Exercise("3.13", "ffn", "numbers", _p13, rtol=0.05, unit="[秒, 秒, 秒, 字节]", params=FFN13,
             labels=("AllGather", "ReduceScatter", "计算", "权重字节"),
             slips=(Slip("AG_XY 和 RS_XY 沿两条轴一起做，带宽是 2·W_ici。",
                         lambda B13: (lambda r: [r[0] * 2, r[1] * 2, r[2], r[3]])(_p13(B13))),
                    Slip("FLOPs 分到了 4 颗芯片上：计算时间要除以 4。",
                         lambda B13: (lambda r: _swap(r, 2, r[2] * 4))(_p13(B13))),
                    Slip("每颗芯片存两个权重矩阵（W_in 和 W_out）各 1/4，不是一个。",
                         lambda B13: (lambda r: _swap(r, 3, r[3] / 2))(_p13(B13)))),
             explain="张量并行每层只搬 B·D 大小的激活，比两个矩阵乘法的计算时间短得多。"),
    Exercise("3.13b", "plan", "choice", _p13_choice, choices=("A", "B", "C"), params=FFN13,
             why={"A": "FSDP 要把每个 537 MB 的权重收集到每颗芯片上：300 MB 的空闲 HBM 放不下，"
                       "收集一次也要约 3 ms；张量并行只搬几 MB 的激活值。",
                  "C": "两者搬的东西不同：FSDP 搬权重（几百 MB），张量并行搬激活（几 MB），差两个数量级。"},
             explain="FSDP 要收集 537 MB 的权重，每个约 3 ms，还放不下；张量并行只搬激活。"),
    Exercise("3.15b", "comm_ratio", "function", _p15, rtol=0.01, unit="倍",
             sampler=lambda rng: {"J": _pow2(rng, 6, 14), "K": _pow2(rng, 6, 14)},
             edge_cases=({"J": 1024, "K": 1024}, {"J": 64, "K": 16384}),
             slips=(Slip("比值倒过来了：先收集搬的是 A[I, J]，字节正比于 J；先乘后归约搬的是结果 [I, K]。",
                         lambda J, K: K / J),
                    Slip("输出要分片，用 ReduceScatter（V/W），不是 AllReduce（2V/W）。",
                         lambda J, K: J / (2 * K))),
             explain="先收集搬的是 [I, J] 的 A，先乘后 ReduceScatter 搬的是 [I, K] 的结果：比值 J/K。"),
    Exercise("3.16", "ag_scalars", "function", _p16_ag, rtol=0.01, unit="个标量",
             sampler=lambda rng: {"M": _pow2(rng, 4, 12), "N": _pow2(rng, 1, 6)},
             edge_cases=({"M": 64, "N": 2}, {"M": 48, "N": 3}),
             slips=(Slip("每个设备自己那一块不用传：一条链路上过 N−1 块，不是 N 块。", lambda M, N: M * M),
                    Slip("每块只有 M²/N 个标量，不是整个矩阵。", lambda M, N: M * M * (N - 1))),
             explain="单向环上，每条链路要过 N−1 条 M²/N 的条带。"),
    Exercise("3.16b", "a2a_scalars", "function", _p16_a2a, rtol=0.01, unit="个标量",
             sampler=lambda rng: {"M": _pow2(rng, 4, 12), "N": _pow2(rng, 1, 6)},
             edge_cases=({"M": 64, "N": 2}, {"M": 48, "N": 3}),
             slips=(Slip("AllToAll 每块只送到它的目的地，不是送给所有设备：块只有 M²/N² 个标量。",
                         lambda M, N: M * M * (1 - 1 / N)),
                    Slip("距离 k 的块要过 k 条链路：经过一条链路的块的距离之和是 1 + 2 + … + (N−1)。",
                         lambda M, N: M * M / N**2 * (N - 1))),
             explain="距离 1 到 N−1 的块各 M²/N² 个，1+2+…+(N−1) = N(N−1)/2。"),
    Exercise("3.16c", "one_way_saving", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "每个设备确实只要 1/N 的数据，但这些块要走不同的距离：平均约 N/2 跳，"
                       "所以链路负载只省一半，不是省到 1/N。",
                  "C": "两者搬的字节不一样：AllGather 每个分片都要走 N−1 跳到所有设备，"
                       "AllToAll 每块只走到它的目的地。",
                  "D": "省到四分之一是双向环（最远距离也减半）时的极限；单向环只省一半。"},
             explain="单向环上 AllToAll 每块平均走约 N/2 跳，链路负载是 AllGather 的一半。"),
    Exercise("3.16e", "bidi_ratios", "numbers", _p16e_ratios, rtol=0.02, unit="倍",
             labels=("N = 10", "N = 20", "N → ∞"),
             slips=(Slip("你把距离正好 N/2 的块两个方向各分了一半：题目约定这些块全部按顺时针走。",
                         lambda: _p16e_ratios(split_ties=True)),
                    Slip("这是单向环的比值：双向环上 AllToAll 的最远距离也减半。", lambda: [2.0, 2.0, 2.0]),
                    Slip("比值倒过来了：题目要 AllGather 负载 ÷ AllToAll 负载。",
                         lambda: [1 / r for r in _p16e_ratios()])),
             explain="双向环上 AllToAll 的最远距离减半，比值 4N/(N+2) 从 3.33 慢慢逼近 4。"),
]
