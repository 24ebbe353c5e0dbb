"""Chapter 2 exercises (spec 02, P2.1-P2.13; ids "2.N" = spec P2.N, letters for sub-parts).

The chapter works its examples on the v5e and the v5p (MXU peak, Pod, VMEM threshold, the int8
crossover x[B,4096]·W[4096,16384], the 4×4 point-to-point transfer, the four-stage pipeline, the
v5p VPU). Every exercise here asks another instance (a 256×256 MXU at another clock, the v4p Pod,
int8 on VMEM, the v5p/v6e bandwidth ratios, 405B on v5p, a v6e crossover, the v4 VPU), so no
expected value is a number the chapter prints (tests/test_exercises.py checks it against the
ledger and the chapter's outputs). Each exercise declares its likely slips (``Slip``); the choice
items ask which resource binds and why.

Per-student numbers (``params``, see scaling_lib.exercises): the clock of 2.1's imagined MXU, the
chip count of 2.2, the batch of 2.3b and 2.7b, the model size and chip count of 2.7, the slice of
2.8, D of 2.9c, the shapes of 2.10, the array of 2.11 and the matrix of 2.12/2.12b. The chips, their
peaks, bandwidths and links stay the book's: they are what the chapter teaches.
"""
from __future__ import annotations

from .. import chip_internals as ci, hardware, roofline, topology
from . import Exercise, Param, Slip

C5E, C5E_I8, W5E, WV5E = 1.97e14, 3.94e14, 8.2e11, 22 * 8.2e11
C4, W4, PCIE = 2.75e14, 1.2e12, 1.6e10
C5P, W5P, L5P = 4.59e14, 2.8e12, 9e10
C6E, C6E_I8, W6E, L6E, PCIE6 = 9.2e14, 1.84e15, 1.6e12, 9e10, 3.2e10

# Per-student grids. Every value keeps the book's method valid (2.3b: 24-112 stays between the VMEM
# threshold ~11 and the HBM one ~240 by a factor of 2; 2.7b: far below v5p's B_crit ~160; 2.7: the
# weights still fit in 96 GB per chip; 2.9c: 1.6D stays below the int8 threshold; 2.11: the 5 us of
# latency stays above the 1% tolerance; 2.10: the crossover stays finite (612-1081 tokens) and every
# slip > 3% away; the D, F grids spread it so that two students agree within 3% with p ~ 0.13).
CLK21 = {"f21": Param(1.6, (1.1, 1.2, 1.3, 1.4, 1.7, 1.8, 1.9, 2.2))}            # GHz
CHIPS22 = {"n22": Param(8960, (1024, 1536, 2048, 2560, 3072, 4096, 6144, 12288))}
BATCH3B = {"B3b": Param(64, (24, 32, 40, 48, 80, 96, 112))}
MODEL27 = {"N27": Param(4050, (700, 1750, 2350, 3400, 5400, 6710)),              # 亿 parameters
           "n27": Param(64, (16, 32, 128, 256))}
BATCH7B = {"B7b": Param(8, (2, 4, 6, 12, 16, 24, 32))}
SLICE28 = {"S28": Param("8×8×16", ("4×4×4", "4×4×8", "4×8×8", "8×8×8", "8×8×12", "8×16×16", "16×16×16",
                                   "16×16×24"))}
D9C = {"D9c": Param(8192, (4096, 6144, 10240, 12288, 16384))}
SHAPE10 = {"D10": Param(8192, (1536, 2048, 3072, 4096, 6144, 12288)),
           "F10": Param(28672, (6144, 8192, 12288, 16384, 24576, 40960))}
ARR211 = {"n211": Param(24, (4, 6, 8, 12, 16, 20, 28, 32))}
BYTES212 = {"A212": Param(2.4e10, (8e9, 1.2e10, 1.6e10, 2e10, 2.8e10, 3.6e10, 4e10, 4.8e10))}


def _chips(shape: str) -> int:
    n = 1
    for k in shape.split("×"):
        n *= int(k)
    return n


# ---- 2.1: a 256×256 MXU at 1.6 GHz ------------------------------------------------------------

def _p21(f21=1.6, size=256, per_mac=2):
    per_cycle = per_mac / 2 * ci.mxu_flops_per_cycle(size)
    return [per_cycle, per_cycle * f21 * 1e9, C6E / (per_cycle * f21 * 1e9)]


def _explain21(f21):
    return (f"256×256 的阵列每周期 131,072 FLOPs；要凑出 9.2e14，{f21} GHz 下得 "
            f"{_p21(f21)[2]:.1f} 个这样的阵列。")


# ---- 2.2: v6e chips to match the v5p Pod's peak ------------------------------------------------

def _p22(n22=8960):
    return n22 * hardware.peak_flops("v5p") / hardware.peak_flops("v6e")


# ---- 2.3: int8 from VMEM ----------------------------------------------------------------------

def _p23():
    return hardware.critical_intensity("v5e", dtype="int8", link="vmem")


# ---- 2.7: 405B in bf16 on 64 v5p --------------------------------------------------------------

def _p27(N27=4050, n27=64, bytes_per_param=2, chips=None, bw=W5P):
    return N27 * 1e8 * bytes_per_param / (n27 if chips is None else chips) / bw


def _explain27(N27, n27):
    per = N27 * 1e8 * 2 / n27
    return (f"每颗 v5p 读 {per / 1e9:.1f} GB 要约 {_p27(N27, n27) * 1e3:.2g} ms："
            "这是批次小时每生成一个 token 的延迟下界。")


# ---- 2.8: the v4p Pod -------------------------------------------------------------------------

SLICE8 = (8, 8, 16)


def _p28(S28="8×8×16", chips_per_host=None, cores=None, peak_per=1):
    c = hardware.get("v5p")
    n = _chips(S28)
    hosts = n // (chips_per_host or c.chips_per_host)
    return [n, hosts, n * (cores or c.cores), n * c.peak() * peak_per, n * c.hbm_bytes]


def _explain28(S28):
    n, h, k, f, m = _p28(S28)
    mant, exp = f"{f:.1e}".split("e")
    return (f"{S28} 的 v5p 切片：{n} 颗芯片、{h} 台主机、{k} 个核心，约 {mant}e{int(exp)} FLOPs/s、"
            f"{m / 1e12:.3g} TB HBM。")


# ---- 2.9: feeding a v4p from host memory over PCIe --------------------------------------------

def _p29():
    # int8 weights read over PCIe (1 byte each), bf16 activations and bf16 math on a v5p
    return hardware.peak_flops("v5p") / (2 * hardware.get("v5p").pcie_bw)


def _p29b():
    # bytes 2BD (x) + 4D^2 (int8 A[D, 4D]) + 8BD (bf16 output): as B grows, 8BD^2 / 10BD = 0.8 D
    return hardware.peak_flops("v5p") / hardware.get("v5p").pcie_bw / 0.8


def _why29c(letter):
    def f(D9c):
        if letter == "A":
            return (f"批次再大，强度也只趋于上限 0.8D ≈ {0.8 * D9c:,.0f}，低于门槛 C/W_pcie ≈ 2.9 万："
                    "加批次没用。")
        return (f"激活值也量化、改用 int8 运算，强度上限翻倍到 1.6D ≈ {1.6 * D9c:,.0f}，可 int8 峰值也翻倍，"
                "门槛变成约 5.7 万：差距一点没缩小。")
    return f


def _explain29c(D9c):
    return (f"D = {D9c} 时强度上限约 {0.8 * D9c:,.0f}，比门槛约 2.9 万低 {_p29() * 2 / (0.8 * D9c):.1f} 倍："
            "从主机内存喂数据注定带宽受限，权重要放在 HBM 里。")


# ---- 2.10: int8 crossover on a v6e; W8A16 from VMEM on a v5e ----------------------------------

def _p210(D10=8192, F10=28672):
    return float(roofline.critical_batch("v6e", w="int8", compute="int8", x="int8", out="int8",
                                         D=D10, F=F10))


def _bstar(D, F, C, W, bx, bw, bo):
    return bw * D * F / W / (2 * D * F / C - (bx * D + bo * F) / W)


def _p210b():
    return float(roofline.critical_batch("v5e", w="int8", compute="bf16", x="bf16", out="bf16",
                                         link="vmem", D=4096, F=16384))


# ---- 2.11: v6e 4×4, (0,0) -> (3,2), bf16[24,128,8192] -----------------------------------------

def _n211(n211=24):
    return 2 * n211 * 128 * 8192


def _p211(n211=24):
    r = topology.p2p_time(_n211(n211), "v6e-4x4", (0, 0), (3, 2))
    return [r.t_first, r.total]


def _explain211(n211):
    return f"5 跳只多 5 µs，带宽项约 {_n211(n211) / (2 * L6E) * 1e6:.0f} µs 才是大头。"


# ---- 2.12: 24e9 bytes from two v6e hosts into chip (0,0) --------------------------------------

def _p212(A212=2.4e10):
    v6e = hardware.get("v6e")
    s = topology.TpuSlice(v6e, (4, 4))
    pcie = A212 / (s.num_chips * v6e.pcie_bw)
    ici = A212 * 15 / 16 / (s.ports((0, 0)) * v6e.ici_link_bw_1way)
    hbm = A212 / v6e.hbm_bw
    math = 2 * 8 * A212 / v6e.peak()   # int8 A has A212 elements, bf16[8, N] @ A[N, N]
    return [pcie, ici, hbm, math]


def _p212b(A212=2.4e10):
    return "ABCD"[max(range(4), key=lambda i: _p212(A212)[i])]


def _why212c(A212):
    return f"HBM 比 ICI 快十几倍：同样的 {A212:.2g} 字节读一遍只要约 {A212 / W6E * 1e3:.0f} 毫秒。"


def _explain212b(A212):
    return f"流水化以后总时间由最慢的 ICI 段决定：约 {_p212(A212)[1]:.3g} 秒。"


# ---- 2.13: the v4 VPU -------------------------------------------------------------------------

def _p213():
    v4 = hardware.get("v4p")
    f = hardware.peak_flops(v4) / ci.chip_peak_flops(v4.cores, v4.mxus_per_core, v4.mxu_size, 1.0)
    per_core = ci.vpu_peak_flops(1, 2, f)
    return [f, per_core, hardware.peak_flops(v4) / v4.cores / per_core]


def _max_hops_sampler(rng):
    return {"N": int(rng.integers(1, 65)), "wrap": bool(rng.integers(0, 2))}


EXERCISES = [
    Exercise("2.1", "mxu256", "numbers", _p21, rtol=0.03, unit="[FLOPs/周期, FLOPs/s, 个]", params=CLK21,
             labels=("每周期 FLOPs", "一个 MXU 的峰值", "MXU 个数"),
             slips=(Slip("一次乘加是 2 次浮点运算：阵列每周期做 256×256 次乘加，是 2×256² FLOPs。",
                         lambda f21: _p21(f21, per_mac=1)),
                    Slip("用了 128×128 的阵列：这道题的 MXU 是 256×256，每周期的运算是 128×128 的 4 倍。",
                         lambda f21: _p21(f21, size=128))),
             explain=_explain21),
    Exercise("2.1b", "mxu256_small", "choice", lambda: "B", choices=("A", "B", "C", "D"),
             why={"A": "MXU 不会自动把小矩阵拼满：D = F = 128 的块只占 256×256 阵列的一部分，其余格子空转。",
                  "C": "两个维度都只有阵列的一半：用上的格子是 (128/256)²，不是 128/256。",
                  "D": "时钟和 HBM 带宽与这个比例无关：只看块占了阵列多少格子（批次 B 很大，权重可以一直留在阵列里）。"},
             explain="128×128 的权重块只占 256×256 阵列的四分之一：v6e 上维度不到 256 的矩阵吃亏更多。"),
    Exercise("2.2", "v6e_match_v5p", "number", _p22, rtol=0.03, unit="颗", params=CHIPS22,
             slips=(Slip("按核心算了 v5p 的峰值：4.59e14 已经是一颗芯片（两个核心）的峰值，总峰值是芯片数 × 4.59e14。",
                         lambda n22: 2 * _p22(n22)),
                    Slip("用了 v5e 的峰值 1.97e14：这道题问的是 v6e（9.2e14）。", lambda n22: n22 * C5P / C5E),
                    Slip("比值倒过来了：要的是 v6e 的芯片数，等于 v5p 的总峰值除以一颗 v6e 的峰值。",
                         lambda n22: n22 / (C5P / C6E))),
             explain="一颗 v6e 的峰值约是 v5p 的两倍：v6e 的颗数约是 v5p 的一半（{n22} 颗 v5p）。"),
    Exercise("2.3", "vmem_icrit_int8", "number", _p23, rtol=0.10, unit="OPs/字节",
             slips=(Slip("这是 bf16 的门槛：int8 的峰值是 3.94e14 OPs/s，翻了一倍，门槛也翻倍。",
                         lambda: C5E / WV5E),
                    Slip("分母用了 HBM 带宽：操作数已经在 VMEM 里，带宽是 HBM 的 22 倍。",
                         lambda: C5E_I8 / W5E)),
             explain="int8 运算从 VMEM 取数时，门槛约 22 OPs/字节：批次二十来个 token 就够了。"),
    Exercise("2.3b", "vmem_bound", "choice", lambda B3b: "A", choices=("A", "B", "C", "D"), params=BATCH3B,
             why={"B": lambda B3b: f"批次 {B3b} 听起来不小，可权重在 HBM 里时要超过约 240 才计算受限：{B3b} 远远不够。",
                  "C": lambda B3b: f"VMEM 不改变算术强度（FLOPs 和字节都没变），改变的是门槛：C/W_vmem 约 11，{B3b} 已经超过。",
                  "D": "弄反了：带宽越高门槛越低。HBM 的门槛约 240，VMEM 的约 11。"},
             explain="同一个强度约 {B3b} 的矩阵乘法：比 HBM 的门槛 240 低，比 VMEM 的门槛 11 高。"),
    Exercise("2.4", "v5p_pcie_ratio", "number",
             lambda: hardware.get("v5p").hbm_bw / hardware.get("v5p").pcie_bw, rtol=0.10, unit="倍",
             slips=(Slip("PCIe 按两个方向加起来算了：从主机往 HBM 搬数据只用得上一个方向的 1.6e10 B/s。",
                         lambda: W5P / (2 * PCIE)),
                    Slip("分母用了 ICI 链路：题目问的是 PCIe。", lambda: W5P / L5P)),
             explain="v5p 的 HBM 比 PCIe 快两个数量级，比 v4 的差距还大：主机内存只适合放不常用的东西。"),
    Exercise("2.5", "v6e_ici_ratio", "number",
             lambda: hardware.get("v6e").hbm_bw / hardware.get("v6e").ici_link_bw_1way, rtol=0.15,
             unit="倍",
             slips=(Slip("链路按两个方向加起来算了：题目问的是一条链路的单向带宽 9e10 B/s。",
                         lambda: W6E / (2 * L6E)),
                    Slip("把 4 条链路加在一起了：题目问的是一条链路。", lambda: W6E / (4 * L6E))),
             explain="v6e 的 HBM 比一条 ICI 链路快约 18 倍：跨芯片的流量要精打细算。"),
    Exercise("2.6", "max_hops", "function", lambda N, wrap: topology.max_hops(N, wrap),
             rtol=0.0, sampler=_max_hops_sampler, unit="跳",
             edge_cases=({"N": 1, "wrap": False}, {"N": 1, "wrap": True}, {"N": 2, "wrap": True},
                         {"N": 3, "wrap": True}, {"N": 5, "wrap": False}, {"N": 16, "wrap": True}),
             slips=(Slip("没有区分有没有环绕：有环绕链路时可以反方向走，最远只要 ⌊N/2⌋ 跳。",
                         lambda N, wrap: N - 1),
                    Slip("数的是芯片数，不是跳数：两端相距 N−1 跳（环绕时 ⌊N/2⌋）。",
                         lambda N, wrap: N // 2 + 1 if wrap else N),
                    Slip("环绕时向上取整了：N 为奇数时两个方向中较近的一边是 ⌊N/2⌋ 跳（N = 3 时 1 跳）。",
                         lambda N, wrap: (N + 1) // 2 if wrap else N - 1)),
             explain="环绕链路把最远距离从 N−1 跳砍到 ⌊N/2⌋ 跳。"),
    Exercise("2.7", "t_decode_405b", "number", _p27, rtol=0.05, unit="秒", params=MODEL27,
             slips=(Slip("每个参数按 1 字节算了：bf16 每个参数 2 字节。",
                         lambda N27, n27: _p27(N27, n27, bytes_per_param=1)),
                    Slip("没有按芯片分摊：每颗芯片只读自己那一份权重，所有芯片同时进行。",
                         lambda N27, n27: _p27(N27, n27, chips=1)),
                    Slip("用了 v4p 的 HBM 带宽：这道题是 v5p（2.8e12 B/s）。",
                         lambda N27, n27: _p27(N27, n27, bw=W4))),
             explain=_explain27),
    Exercise("2.7b", "decode_batch", "choice", lambda B7b: "B", choices=("A", "B", "C", "D"), params=BATCH7B,
             why={"A": lambda B7b: f"每个序列并不各读一遍权重：一步解码里整批共用一次权重读取，所以不是 {B7b} 倍。",
                  "C": "批次大不会让每步更快：权重一个字节也没少读，下界还是读一遍权重的时间。",
                  "D": lambda B7b: f"B = {B7b} 远低于 v5p 的临界批次（约 160），读权重仍是瓶颈，算力还闲着，不会变成计算受限。"},
             explain="批次远低于门槛时，每步时间由读一遍权重决定：批次 {B7b} 的每步时间几乎不变，吞吐量约是 {B7b} 倍。"),
    Exercise("2.8", "v5p_slice", "numbers", _p28, rtol=0.03, params=SLICE28,
             unit="[芯片, 主机, 核心, FLOPs/s, 字节]",
             labels=("芯片数", "主机数", "核心数", "bf16 总峰值", "HBM 总量"),
             slips=(Slip("v5p 一台主机只挂 4 颗芯片（一块托盘，2×2×1），不是 8 颗。",
                         lambda S28: _p28(S28, chips_per_host=8)),
                    Slip("v5p 每颗芯片 2 个核心（megacore），核心数是芯片数的 2 倍。", lambda S28: _p28(S28, cores=1)),
                    Slip("峰值按核心数乘了：4.59e14 已经是整颗芯片（两个核心）的峰值。",
                         lambda S28: _p28(S28, peak_per=2))),
             explain=_explain28),
    Exercise("2.9", "b_pcie_w8", "number", _p29, rtol=0.03, unit="token",
             slips=(Slip("这是 bf16 权重（或 int8 运算）时的门槛 C/W_pcie：权重是 int8、每个 1 字节，运算仍用 bf16，"
                         "读权重的字节减半、峰值不变，门槛减半。", lambda: C5P / PCIE),
                    Slip("PCIe 按 3.2e10 B/s 算了（那是 v6e 的数，或者把两个方向加在了一起）：v5p 每颗芯片"
                         "从主机读进来只有单向 1.6e10 B/s。", lambda: C5P / (2 * PCIE6))),
             explain="权重换成 int8，门槛减半到一万四千多个 token：仍然远远超过任何合理的批次。"),
    Exercise("2.9b", "d_min_w8", "number", _p29b, rtol=0.03, unit="（D 的取值）",
             slips=(Slip("这是门槛 C/W_pcie 本身：强度随 B 增大只趋于上限 0.8D，D 要大于 C/W_pcie ÷ 0.8。",
                         lambda: C5P / PCIE),
                    Slip("写出的输出没有算：输出 [B, 4D] 是 bf16，8BD 字节，和读 x 的 2BD 加在一起才是 10BD。",
                         lambda: C5P / PCIE / 4),
                    Slip("激活值也按 1 字节算了：x 和输出是 bf16，只有权重是 int8；强度上限是 0.8D，不是 1.6D。",
                         lambda: C5P / PCIE / 1.6)),
             explain="权重量化帮不了 B 很大时的情形：那时字节的大头是激活值，强度上限仍是 0.8D，D 要大于约 3.6 万。"),
    Exercise("2.9c", "pcie_fix", "choice", lambda D9c: "B", choices=("A", "B", "C", "D"), params=D9C,
             why={"A": _why29c("A"), "C": _why29c("C"),
                  "D": "每颗芯片本来就走自己的 PCIe：四颗芯片一起读，每颗的带宽和门槛都不变。"},
             explain=_explain29c),
    Exercise("2.10", "b_v6e_int8", "number", _p210, rtol=0.03, unit="token", params=SHAPE10,
             slips=(Slip("这是 B ≪ D、F 的渐近值 C/(2W)：题目要精确交点，输入和输出的字节也要算。",
                         lambda D10, F10: C6E_I8 / (2 * W6E)),
                    Slip("用了 bf16 的峰值 9.2e14：这里是 int8 运算，峰值 1.84e15 OPs/s。",
                         lambda D10, F10: _bstar(D10, F10, C6E, W6E, 1, 1, 1)),
                    Slip("写出的输出 BF 字节没有算进去。",
                         lambda D10, F10: _bstar(D10, F10, C6E_I8, W6E, 1, 1, 0))),
             explain=lambda D10, F10: (f"v6e 的 int8 门槛比 v5e 高得多：这组形状下批次要约 {_p210(D10, F10):.0f} "
                                       "个 token 才计算受限。")),
    Exercise("2.10b", "b_vmem_w8a16", "number", _p210b, rtol=0.10, unit="token",
             slips=(Slip("这是正文 int8 例子的交点（约 11）：这里激活值和输出是 bf16、运算用 bf16 峰值 1.97e14，"
                         "权重是 int8（1 字节）。int8 运算或 2 字节的权重都会回到约 11。",
                         lambda: _bstar(4096, 16384, C5E_I8, WV5E, 1, 1, 1)),
                    Slip("带宽用了 HBM：权重已经在 VMEM 里，带宽按 22 倍 HBM。",
                         lambda: _bstar(4096, 16384, C5E, W5E, 2, 1, 2))),
             explain="只量化权重、运算仍用 bf16 时，门槛再减半：权重在 VMEM 里，五六个 token 就计算受限。"),
    Exercise("2.11", "p2p_v6e", "numbers", _p211, rtol=0.01, unit="[第一个字节 秒, 送完 秒]", params=ARR211,
             labels=("第一个字节", "送完"),
             slips=(Slip("带宽只算了一半：(0,0) 在角上，两条出链路可以同时用，每条单向 9e10 B/s"
                         "（只用一个端口，或用了 v5e 的 4.5e10，都会得到 2 倍的带宽项）。",
                         lambda n211: [5e-6, 5e-6 + _n211(n211) / L6E]),
                    Slip("带宽项乘了跳数：中间的芯片收到一点就转发一点，带宽项只付一次。",
                         lambda n211: [5e-6, 5e-6 + 5 * _n211(n211) / (2 * L6E)]),
                    Slip("漏了延迟：5 跳每跳 1 µs，第一个字节要 5 µs 才到，总时间也要加上。",
                         lambda n211: [0.0, _n211(n211) / (2 * L6E)])),
             explain=_explain211),
    Exercise("2.11b", "store_forward", "choice", lambda: "C", choices=("A", "B", "C", "D"),
             why={"A": "这是边收边转（流水）的情形：每颗中间芯片要先收齐整块才往下发时，带宽项每跳都要付一次。",
                  "B": "两个出端口在两种做法里都能用：它们让每一跳快一倍，不会抵消跳数。",
                  "D": "这个切片没有环绕链路，最短路径仍是 5 跳；环绕与否也不改变“每跳付一次”的代价。"},
             explain="收齐再转发时，每跳都要把整块送一遍：带宽项乘以跳数 5。"),
    Exercise("2.12", "stages_v6e", "numbers", _p212, rtol=0.03, unit="秒（PCIe、ICI、HBM、计算）",
             params=BYTES212, labels=("PCIe", "ICI", "HBM→MXU", "计算"),
             slips=(Slip("ICI 段按 4 条进来的链路算了：(0,0) 在角上、没有环绕，只有 2 条。",
                         lambda A212: (lambda s: [s[0], s[1] / 2, s[2], s[3]])(_p212(A212))),
                    Slip("PCIe 段只用了一条 PCIe：16 颗芯片各经自己的 PCIe 读自己那一份，同时进行。",
                         lambda A212: (lambda s: [16 * s[0], s[1], s[2], s[3]])(_p212(A212))),
                    Slip("用了 v5e 的数：这道题是 v6e（PCIe 3.2e10、ICI 9e10、HBM 1.6e12 B/s、9.2e14 FLOPs/s）。",
                         lambda A212: [A212 / (16 * PCIE), A212 * 15 / 16 / (2 * 4.5e10), A212 / W5E,
                                       16 * A212 / C5E])),
             explain="ICI 一段最慢：所有数据都要挤进角上那颗芯片的两条链路。"),
    Exercise("2.12b", "stage_bound", "choice", _p212b, choices=("A", "B", "C", "D"), params=BYTES212,
             why={"A": "每颗芯片的 PCIe 比一条 ICI 链路慢，可 16 条 PCIe 同时在读；汇到 (0,0) 的数据却只能走它的 2 条链路。",
                  "C": _why212c,
                  "D": "这是 B = 8 的矩阵乘法，强度只有约 16，计算几乎不花时间：算力不是瓶颈。"},
             explain=_explain212b),
    Exercise("2.13", "vpu_v4", "numbers", _p213, rtol=0.03, unit="[Hz, FLOPs/s, 倍]",
             labels=("时钟", "每核心 VPU 峰值", "每核心 MXU/VPU"),
             slips=(Slip("反推时钟时忘了 v4p 每颗芯片有 2 个核心：2.75e14 是两个核心、共 8 个 MXU 的峰值。",
                         lambda: (lambda f: [f, 2048 * f, 64])(C4 / (4 * 32768))),
                    Slip("拿每芯片的 MXU 和每核心的 VPU 比了：比较时要统一按核心（或统一按芯片）。",
                         lambda: (lambda p: [p[0], p[1], 2 * p[2]])(_p213())),
                    Slip("按 v5p 的每位置 4 个 ALU 算了：v4 每个 (sublane, lane) 位置只有 2 个。",
                         lambda: (lambda p: [p[0], 2 * p[1], p[2] / 2])(_p213()))),
             explain="v4 的 VPU 每位置只有 2 个 ALU：MXU 比 VPU 快 64 倍，比 v5p 的差距还大。"),
]
