"""Chapter 12 exercises (spec 12, 42 worked problems). Ids are "12.N", numbered in the spec's
order; free-text problems are 思考题 in the notebook and have no registry entry.

  12.1-12.9  = P1.1-P1.9 (chip)          12.10-12.12 = P2.1-P2.3 (node)
  12.13-12.16 = P3.1-P3.4 (beyond a node) 12.17-12.26 = P4.1-P4.10 (collectives)
  12.27-12.36 = P5.1-P5.10 (LLM rooflines) 12.37-12.39 = P6.1-P6.3 (quiz 5)
  12.40-12.42 = P7.1-P7.3 (appendix)
Free-text only (not registered): 12.14 (P3.2), 12.34 (P5.8), 12.42 (P7.3).

Issue #19: the chapter works the spec's problems on H100 / B200 and the DGX H100 SuperPOD; every
exercise here asks the same question about **another instance** — chips the chapter's spec table
does not list (L40S, L4; their numbers are given in the question), a DGX A100 or DGX B200 node,
a smaller fat tree (3 SUs of 24 nodes), LLaMA-3-405B instead of 70B, fp8 instead of bf16 — so
that no expected value is a number the chapter prints or glues (tests/test_exercises.py checks
it with ``scaling_lib.exercises.audit``). Each numeric item declares its likely slips (``Slip``);
the choice items ask which resource binds and why, with feedback for every wrong reason.

Expected values are computed from scaling_lib (hardware, chip_internals, topology, collectives,
gpu_parallel, roofline); hand-computed answers are pinned in tests/test_exercises.py (PINS).

Per-student numbers (``params``, see scaling_lib.exercises): the task sizes of 12.4 (the two
batches, one memory-bound and one compute-bound), 12.7 (the vector length), 12.9 (registers per
thread), 12.12 and 12.17 (the gathered arrays), 12.20, 12.21 and 12.24 (the bytes moved), 12.26
(the GPU counts), 12.29 (the MoE's E and k), 12.30 (the number of nodes), 12.35 (GPUs) and
12.38b (GPUs and MFU). Chips, nodes, links and the SuperPOD's shape stay fixed:
they are what the chapter teaches. The questions whose numbers are tied together by a stated
layout (tensor x pipeline x data = GPUs) or a named model keep the book's numbers.
"""
from __future__ import annotations

import math

from .. import chip_internals as ci, collectives as C, gpu_parallel as gp, hardware, roofline, topology
from . import Alt, Exercise, Param, Slip

H100 = "H100"
W_GPU, W_NODE = 4.5e11, 4e11              # H100 NVLink per GPU / DGX H100 node egress, one way
_DF = 2 * 8192 * 32768                    # P4.3 / P4.7: bf16[8192, 32768]

# Two chips the chapter's spec table does not list (NVIDIA data sheets; the questions give them).
L40S = hardware.replace(H100, name="L40S", generation="Ada", cores=142, clock_hz=2.52e9,
                        clock_base_hz=1.11e9, flops_per_s={"bf16": 3.62e14}, hbm_bytes=48e9,
                        hbm_bw=8.64e11, source="NVIDIA L40S data sheet (exercise 12.1)")
L4 = hardware.replace(H100, name="L4", generation="Ada", cores=58, clock_hz=2.04e9,
                      clock_base_hz=7.95e8, flops_per_s={"bf16": 1.21e14}, hbm_bytes=24e9,
                      hbm_bw=3e11, source="NVIDIA L4 data sheet (exercise 12.1)")

A100N, B200N = gp.node_type("DGX A100"), gp.node_type("DGX B200")
P405, F405 = 405e9, 53248                 # LLaMA-3-405B: parameters, d_ff


def _h():
    return hardware.get(H100)


def _tree(gpu="H100"):
    """Exercises 12.13 / 12.16: a smaller SuperPOD, 3 SUs of 24 nodes (6 leaf switches of
    64 x 50 GB/s per SU, half the ports up; 9 spine switches)."""
    g = hardware.get(gpu)
    nic = g.dcn_bw_1way
    node = topology.TreeLevel("节点", 8, g.nvlink_bw_1way)
    leaf = topology.TreeLevel("叶（SU）", 24, 8 * nic, switches=6, port_bw=5e10)
    spine = topology.TreeLevel("脊", 3, 24 * 8 * nic, switches=9, port_bw=5e10)
    return topology.FatTree((node, leaf, spine), gpu=g, label="3 个 SU × 24 个节点")


def _ch(name):
    return {"L40S": L40S, "L4": L4}[name]


def _mm(B, chip="B200", D=8192, F=16384):
    return float(roofline.matmul_time(B, D, F, chip, x="f16", w="f16", out="f16", compute="bf16").t_lower)


def _mm_math(B):
    return float(roofline.matmul_time(B, 8192, 16384, "B200", x="f16", w="f16", out="f16").t_math)


def _mm_mem(B):
    return float(roofline.matmul_time(B, 8192, 16384, "B200", x="f16", w="f16", out="f16").t_comms)


# ---- per-student numbers ----------------------------------------------------------------------
# 12.3b: the matmul's intensity (~0.96 B) stays > 5% above H200's threshold (206) and B > 5% below
# H100's (295), so A stays the answer with a margin
B3B = {"B3b": Param(250, (230, 240, 255, 260, 270))}
# 12.4: Bm stays well below B200's critical intensity (~281): below ~140, so that reading fp16 as 1 byte still
# leaves it memory-bound; Bc well above it
MM4 = {"Bm4": Param(128, (72, 80, 88, 96, 104, 112, 120)), "Bc4": Param(768, (512, 640, 896, 1280, 1536, 2048))}
# 12.7/12.7b: N = 2^n7; even 2^24 moves 200 MB (25 µs), far above a kernel launch
VEC7 = {"n7": Param(28, (24, 25, 26, 27, 29, 30, 31))}
# 12.9: no value divides 2048, so rounding up and down give different warp counts
REG9 = {"r9": Param(80, (40, 48, 52, 60, 76, 100, 152, 200))}
AG12 = {"D12": Param(6144, (3072, 5120, 7168, 10240)),
        "F12": Param(24576, (12288, 20480, 28672, 36864), "24{,}576")}
AG17 = {"B17": Param(2048, (896, 1152, 1408, 1664, 2560)),
        "F17": Param(12288, (7168, 9216, 14336, 18432), "12{,}288")}
SU20 = {"B20": Param(2e9, (1e9, 1.5e9, 2.5e9, 3e9, 4e9, 5e9, 6e9))}
SHARP21 = {"B21": Param(2e9, (5e8, 1e9, 1.5e9, 2.5e9, 3e9, 4e9, 8e9))}
V24 = {"V24": Param(1.5e9, (5e8, 8e8, 1e9, 2e9, 2.5e9, 3e9, 4e9))}
# 12.26: the first N stays below 50, so forgetting (N - 1)/N (a ratio of 2) is off by more than 2%
# 2(N-1)/N tends to 2: above N ~ 16 neighbouring N give speedups within the 2 % tolerance, so a
# classmate's answer would pass; the small N are spaced > 2 % apart (grading copies)
N26 = {"Na26": Param(24, (3, 4, 5, 6, 8, 10, 16)), "Nb26": Param(72, (64, 144, 256))}
MOE29 = {"E29": Param(160, (64, 112, 144, 256)), "k29": Param(6, (3, 4, 7))}
# 12.30: X = 2 would make (X - 1)/X equal 1/X; X <= 16 keeps (X - 1)/X more than 3% below 1
X30 = {"X30": Param(4, (3, 5, 6, 8, 10, 12, 16))}
# 12.35: GPU counts that split into 7 data-parallel ways of whole 8-GPU nodes
DS35 = {"G35": Param(7168, (3584, 4480, 5376, 6272, 8064, 8960, 10752, 12544))}
DF23 = {"D23": Param(8192, (2048, 4096, 6144, 12288, 16384)), "F23": Param(32768, (8192, 16384, 24576, 49152))}
# 12.28: LLaMA-3's GPUs stay <= 24,000, so its batch stays below DeepSeek's real 63M tokens
GPUS28 = {"G28a": Param(16000, (4000, 6000, 8000, 10000, 12000, 20000, 24000), "16,000"),
          "G28b": Param(2048, (512, 1024, 1536, 3072, 4096))}
SEQ39 = {"S39": Param(4096, (1024, 2560, 5120, 7168, 8192, 12288, 16384))}
# 12.38b: every product GPUs x MFU differs
TR38 = {"G38": Param(16384, (6144, 10240, 12288, 20480, 28672), "16,384"),
        "M38": Param(40, (35, 45, 50, 55))}


# ---- P1: chip ---------------------------------------------------------------------------------

def _p11():
    return [ci.cuda_cores(L40S), ci.cuda_cores(L4)]


def _p12(fma=False):
    return [ci.vector_flops(L40S, L40S.clock_base_hz, fma), ci.vector_flops(L40S, None, fma),
            L40S.peak() / ci.vector_flops(L40S)]


def _p15(kib=1024):
    g = hardware.get("B200")
    m = ci.onchip_memory_totals(g)
    s = kib / 1024
    return [m["smem"] * s, (m["smem"] + m["registers"] + m["tmem"]) * s]


def _p17(bytes_per_elem=4, n_io=3, n7=28):
    n = 2 ** n7
    t = float(ci.elementwise_time(n, "B200", bytes_per_elem=bytes_per_elem, n_inputs=n_io - 1,
                                  clock_hz=1.9e9))
    return [1 / (bytes_per_elem * n_io), t]


def _dur(t):
    """A time in feedback: 25.2 µs, 403 µs, 3.22 ms."""
    return f"{t * 1e6:.3g} µs" if t < 1e-3 else f"{t * 1e3:.3g} ms"


def _gb(n7):
    """12 bytes per element of 2^n7, written as 12.7b's feedback writes it."""
    nb = 12 * 2 ** n7
    return f"{nb / 1e9:.2g} GB" if nb >= 1e9 else f"{nb / 1e6:.3g} MB"


def _p18(peak_scale=1.0, tcs=4, clock="boost"):
    f = L40S.clock_hz if clock == "boost" else L40S.clock_base_hz
    mine = ci.tc_flops_per_cycle(L40S, f) * peak_scale * 4 / tcs
    return [mine, ci.tc_flops_per_cycle(H100, 1.76e9) / mine]


# ---- P4: collectives ------------------------------------------------------------------------

def _a2a_ref(V, N, W):
    return V * (N - 1) / (W * N ** 2)


def _a2a_sampler(rng):
    return {"V": float(10 ** rng.uniform(3, 10)), "N": int(rng.choice([2, 4, 8, 16, 72])),
            "W": float(rng.choice([3e11, 4.5e11, 9e11]))}


def _sharded_ref(Y):
    return float(C.sharded_allgather_time(_DF, int(Y)))


def _sharded_sampler(rng):
    return {"Y": int(2 ** rng.integers(0, 7))}


def _sharp_sharded_ref(D, F, Y):
    return float(C.collective_time("all_reduce", 2 * D * F / Y, "h100-node-sharp").total)


def _sharp_sampler(rng):
    return {"D": int(rng.choice([2048, 4096, 8192])), "F": int(rng.choice([8192, 16384, 32768])),
            "Y": int(rng.choice([1, 2, 4]))}


def _ragged_ref(k, z):
    return float(C.ragged_fraction(k, z, exact=True))


def _ragged_sampler(rng):
    return {"k": int(rng.integers(1, 9)), "z": int(2 ** rng.integers(1, 9))}




def _ag(V, topo, **kw):
    return float(C.collective_time("all_gather", V, topo, **kw).total)


def _p420(B=2e9, M=24):
    return [B / _h().nvlink_bw_1way, B * (M - 1) / (M * W_NODE)]


def _p45(B=2e9, N=8):
    return [B * N, B * N, float(C.collective_time("all_reduce", B, "h100-node-sharp").total)]


def _p48(V=1.5e9, node="DGX B200"):
    nt = gp.node_type(node)
    return max(V * 7 / (8 * nt.w_gpu), V / (2 * nt.w_node))


# ---- P5-P7: LLM rooflines -------------------------------------------------------------------

def _p52(G28a=16000, G28b=2048):
    llama = gp.dp_critical_batch_per_gpu() * G28a
    ds = gp.dp_critical_batch_per_gpu("H800", include_node_level=True) * G28b
    return [llama, ds]


def _mega_thr(node="DGX A100", per="nodes"):
    a = gp.dp_critical_batch_per_gpu(node)
    if per == "nodes":
        return [a, float(gp.mp_spanned_threshold(16, node)), float(gp.mp_spanned_threshold(64, node))]
    return [a, a / 16, a / 64]


def _p62b(flops="bf16", mfu=0.4, k=6, gpus=16384):
    return float(gp.train_time_seconds(P405, 15e12, gpus, hardware.peak_flops(H100, flops), mfu)) * k / 6


def _p71(w_nic=1e11, chip="GB200"):
    c = hardware.peak_flops(chip)
    egress = 72 * w_nic
    return [(egress / W_NODE) / (c / hardware.peak_flops(H100)), c / egress]


def _choice(right, **why):
    return dict(expected=lambda: right, choices=("A", "B", "C", "D"), why=why)


EXERCISES = [
    # ---- P1: chip ------------------------------------------------------------------------------
    Exercise("12.1", "cores", "numbers", _p11, rtol=0.0, unit="个", labels=("L40S", "L4"),
             slips=(Slip("漏了每个 SM 的 4 个子分区：每个 SM 是 4 × 32 = 128 个 fp32 lane。",
                         lambda: [ci.cuda_cores(L40S) // 4, ci.cuda_cores(L4) // 4]),
                    Slip("每个子分区按 16 个 fp32 lane 算了（那是 V100、A100）：Ada 和 Hopper 一样是 32 个。",
                         lambda: [ci.cuda_cores(L40S) // 2, ci.cuda_cores(L4) // 2]),
                    Slip("用的是 H100 的 132 个 SM：这道题是 L40S（142 个）和 L4（58 个）。",
                         lambda: [ci.cuda_cores(H100), ci.cuda_cores(H100)])),
             explain="L40S 有 18,176 个 CUDA 核心，比 H100 还多；算力的差别在 Tensor Core 上。"),
    Exercise("12.2", "vec", "numbers", _p12, rtol=0.03, unit="FLOPs/s、FLOPs/s、倍",
             labels=("基础频率", "加速频率", "Tensor Core / 向量"),
             slips=(Slip("把 FMA 算成了两次：题目要的是每个核心每周期一次运算，规格表上的数要除以 2。",
                         lambda: _p12(fma=True)[:2] + [_p12()[2] / 2]),
                    Slip("用了稀疏算力（7.24e14）：本书一律用稠密峰值 3.62e14。",
                         lambda: _p12()[:2] + [2 * _p12()[2]]),
                    Slip("两个频率对调了：基础频率 1.11 GHz 在前，加速频率 2.52 GHz 在后，倍数按加速频率算。",
                         lambda: [_p12()[1], _p12()[0], L40S.peak() / _p12()[0]])),
             explain="L40S 的 Tensor Core 只有向量单元的约 8 倍（H100 约 30 倍）：它是图形卡，向量单元多，Tensor Core 小。"),
    Exercise("12.3", "icrit", "numbers",
             lambda: [hardware.critical_intensity("H200", "fp8"), hardware.critical_intensity("A100", "int8")],
             rtol=0.03, unit="FLOPs/字节", labels=("H200 fp8", "A100 int8"),
             slips=(Slip("低精度那两项没有翻倍：fp8 / int8 的算力是 bf16 的两倍，HBM 带宽不变，临界强度也翻倍。",
                         lambda: [hardware.critical_intensity("H200"), hardware.critical_intensity("A100")]),
                    Slip("H200 用了 H100 的 HBM 带宽 3.35e12 B/s（正文的例子）：H200 算力和 H100 相同，HBM 快到 4.8e12 B/s。",
                         lambda: [hardware.critical_intensity("H100", "fp8"),
                                  hardware.critical_intensity("A100", "int8")])),
             explain="低精度运算让门槛翻倍；H200 的 HBM 更快，fp8 门槛约 412，低于 H100 的约 591。"),
    Exercise("12.3b", "h200_bound", "choice", lambda B3b: "A", choices=("A", "B", "C", "D"), params=B3B,
             why={"B": lambda B3b: ("门槛是 C / W_hbm，不只看 Tensor Core：H200 的 HBM 更快，门槛更低，"
                                    f"H100 的门槛约 295，B = {B3b} 还不到。"),
                  "C": lambda B3b: f"HBM 变快正是门槛降低的原因：H200 的门槛约 206，B = {B3b} 已经超过，计算受限。",
                  "D": "方向反了：带宽 W 在分母上，HBM 越快门槛越低，不是越高。"},
             explain=lambda B3b: f"同样的 Tensor Core、更快的 HBM：H200 的门槛约 206，H100 约 295，B = {B3b} 正好夹在中间。"),
    Exercise("12.4", "t_mm", "numbers", lambda Bm4, Bc4: [_mm(Bm4), _mm(Bc4)], rtol=0.05, unit="秒",
             labels=("小批次", "大批次"), params=MM4,
             slips=(Slip("只算了 T_math：小批次时读 268 MB 的权重比算还慢，Roofline 时间取两者中较大的。",
                         lambda Bm4, Bc4: [_mm_math(Bm4), _mm_math(Bc4)]),
                    Slip("把 T_math 和 T_comms 加起来了：Roofline 假设两者完全重叠，取较大的那个。",
                         lambda Bm4, Bc4: [_mm_math(Bm4) + _mm_mem(Bm4), _mm_math(Bc4) + _mm_mem(Bc4)]),
                    Slip("用了 H100 的数：这道题在 B200 上（2.25e15 FLOPs/s、8e12 B/s）。",
                         lambda Bm4, Bc4: [_mm(Bm4, H100), _mm(Bc4, H100)]),
                    Slip("每个元素按 1 字节算了：fp16 是 2 字节。",
                         lambda Bm4, Bc4: [max(_mm_math(Bm4), _mm_mem(Bm4) / 2),
                                           max(_mm_math(Bc4), _mm_mem(Bc4) / 2)])),
             explain=lambda Bm4, Bc4: (f"B = {Bm4} 时内存受限（读权重约 {_mm(Bm4) * 1e6:.0f} µs），"
                                       f"B = {Bc4} 时计算受限（约 {_mm(Bc4) * 1e6:.0f} µs）。")),
    Exercise("12.4b", "mm_bound", "choice", lambda Bm4: "B", choices=("A", "B", "C", "D"),
             params={"Bm4": MM4["Bm4"]},
             why={"A": lambda Bm4: f"B200 的算力虽大，B = {Bm4} 的强度只有约 {Bm4} FLOPs/字节，低于它的临界强度 281：搬权重比算慢。",
                  "C": lambda Bm4: (f"延迟是微秒级的固定开销，这里搬 268 MB 就要约 {_mm(Bm4) * 1e6:.0f} µs，"
                                    "主导的是带宽不是延迟。"),
                  "D": lambda Bm4: f"门槛看的是 C / W_hbm ≈ 281，不是 64；B = {Bm4} 还在门槛以下。"},
             explain=lambda Bm4: f"bf16/fp16 权重的矩阵乘法强度约等于 B：{Bm4} < 281，内存受限。"),
    Exercise("12.5", "onchip", "numbers", _p15, rtol=0.01, unit="字节", labels=("SMEM", "SMEM + 寄存器 + TMEM"),
             slips=(Slip("把 256 KiB 当成了 256,000 字节：NVIDIA 写的 KB 是 KiB，1 KiB = 1024 字节（差 2.4%，超出 ±1%）。",
                         lambda: _p15(kib=1000)),
                    Slip("第二项漏了 TMEM：B200 每个 SM 还有 256 KiB 的张量内存。",
                         lambda: [_p15()[0], _p15()[1] * 2 / 3]),
                    Slip("用了 H100 的 132 个 SM：B200 有 148 个。",
                         lambda: [v * 132 / 148 for v in _p15()])),
             explain="B200 片上合计约 116 MB（SMEM、寄存器、TMEM 各三分之一）。"),
    Exercise("12.6", "b200_clock", "number", lambda: 80e12 / (2 * ci.cuda_cores("B200")), rtol=0.03,
             unit="Hz",
             slips=(Slip("没有除以 2：规格表的 80 TFLOPs/s 把 FMA 算成两次，每个核心每周期 2 个 FLOPs。",
                         lambda: 80e12 / ci.cuda_cores("B200")),
                    Slip("用了 H100 的 16,896 个 CUDA 核心：B200 有 148 × 128 = 18,944 个。",
                         lambda: 80e12 / (2 * ci.cuda_cores(H100)))),
             explain="约 2.1 GHz：要靠液冷才跑得住。"),
    Exercise("12.7", "vec_add", "numbers", lambda n7: _p17(n7=n7), rtol=0.05, unit="FLOPs/字节、秒",
             labels=("算术强度", "时间"), params=VEC7,
             slips=(Slip("漏了写回结果：读两个、写一个，每个元素 12 字节，不是 8 字节。",
                         lambda n7: _p17(n_io=2, n7=n7)),
                    Slip("按 bf16 的 2 字节算了：题目是 fp32，每个数 4 字节。",
                         lambda n7: _p17(bytes_per_elem=2, n7=n7)),
                    Slip("按 H100 的 HBM（3.35e12 B/s）算了：这道题在 B200 上，HBM 是 8e12 B/s。",
                         lambda n7: [1 / 12, 12 * 2 ** n7 / 3.35e12])),
             explain=lambda n7: ("强度 1/12 远低于向量单元的临界强度（只有几 FLOPs/字节）：逐元素运算永远带宽受限，"
                                 f"B200 上约 {_dur(_p17(n7=n7)[1])}。")),
    Exercise("12.7b", "add_bound", "choice", lambda n7: "C", choices=("A", "B", "C", "D"), params=VEC7,
             why={"A": lambda n7: (f"向量单元每秒能做约 4e13 次加法，2^{n7} 次只要约 {2 ** n7 / 4e13 * 1e6:.2g} µs，"
                                   f"远比搬 {_gb(n7)} 的 {_dur(_p17(n7=n7)[1])} 快：算力不是瓶颈。"),
                  "B": "Tensor Core 只做矩阵乘法，逐元素加法用的是 CUDA 核心；而且不管哪种单元，瓶颈都在 HBM。",
                  "D": lambda n7: (f"2^{n7} 个元素要搬 {_gb(n7)}，约 {_dur(_p17(n7=n7)[1])}，"
                                   "比启动 kernel 的几微秒大得多；延迟只在很小的 N 时主导。")},
             explain="强度 1/12 远低于临界强度：HBM 带宽决定时间。"),
    Exercise("12.8", "tc_fpc", "numbers", _p18, rtol=0.05, unit="FLOPs/周期、倍",
             labels=("L40S 每个 Tensor Core 每周期", "H100 / L40S"),
             slips=(Slip("漏了每个 SM 的 4 个 Tensor Core：这是整个 SM 每周期的 FLOPs，要再除以 4。",
                         lambda: _p18(tcs=1)),
                    Slip("用了稀疏算力：规格表上带 “sparsity” 的数是稠密的两倍，本书用稠密值 3.62e14。",
                         lambda: _p18(peak_scale=2.0)),
                    Slip("用了基础频率 1.11 GHz：题目说按加速频率 2.52 GHz 算。",
                         lambda: _p18(clock="base"))),
             explain="L40S 每个 Tensor Core 每周期约 256 FLOPs，只有 H100 的约四分之一。"),
    Exercise("12.9", "warps", "number", lambda r9: ci.resident_warps(r9), rtol=0.0, unit="个 warp", params=REG9,
             slips=(Slip("向上取整了：放不下一个完整 warp 的寄存器就不能驻留，要向下取整。",
                         lambda r9: math.ceil(65536 / (32 * r9))),
                    Slip("忘了一个 warp 有 32 个线程：65536 除以每线程寄存器数是线程数，还要除以 32；"
                         "而且每个 SM 最多 64 个 warp。",
                         lambda r9: min(64, 65536 // r9))),
             explain=lambda r9: (f"每线程 {r9} 个寄存器时能驻留 {ci.resident_warps(r9)} 个 warp，"
                                 f"是上限 64 的 {ci.resident_warps(r9) / 64:.0%}。")),
    Exercise("12.9b", "warps_cost", "choice", **_choice(
        "A",
        B="Tensor Core 的峰值不看驻留了几个 warp：一个 warpgroup 就能喂满一个 SM 的 Tensor Core。",
        C="寄存器和 SMEM 是两块独立的存储，线程多用寄存器不会占 SMEM。",
        D="warp 少了程序照样正确；寄存器不够时编译器会溢出到本地内存，变慢但不出错。"),
        explain="能驻留的 warp 越少，一个 warp 等内存时可换上的 warp 越少，访存延迟越难藏住。"),
    # ---- P2: node ------------------------------------------------------------------------------
    Exercise("12.10", "node_bw", "number", lambda: topology.get("a100-node").total_bw, rtol=0.03,
             unit="B/s",
             slips=(Slip("这是 NVSwitch 的容量（6 × 36 × 25 GB/s）：8 颗 GPU 每颗只能发 300 GB/s，总带宽受 GPU 限制。",
                         lambda: 6 * 36 * 25e9),
                    Slip("把两个方向都算上了：题目要的是每方向的带宽。",
                         lambda: 2 * topology.get("a100-node").total_bw),
                    Slip("用了 H100 的每 GPU 450 GB/s：A100 是 12 条 NVLink × 25 GB/s = 300 GB/s。",
                         lambda: 8 * W_GPU)),
             explain="交换机能转 5.4 TB/s，8 颗 A100 只能发出 2.4 TB/s。"),
    Exercise("12.10b", "node_limit", "choice", **_choice(
        "A",
        B="交换机的容量（5.4 TB/s）比 GPU 能发出的（2.4 TB/s）大：交换机不是瓶颈。",
        C="网卡管的是节点之外（每节点 200 GB/s），节点内的 GPU 之间走 NVLink。",
        D="PCIe 连的是 CPU 和网卡，GPU 之间的数据走 NVLink 和 NVSwitch。"),
        explain="节点总带宽是 min(GPU 能发的, 交换机能转的)：A100 节点受 GPU 的 NVLink 端口限制。"),
    Exercise("12.11", "bisection", "number", lambda: topology.get("b200-node").bisection_bw, rtol=0.03,
             unit="B/s",
             slips=(Slip("少了一半：要么只算了一个方向（题目要两个方向都算，4 × 900 GB/s × 2），要么用了 H100 的每 GPU 450 GB/s（B200 是 900 GB/s）。",
                         lambda: topology.get("b200-node").bisection_bw / 2),
                    Slip("把 8 颗 GPU 都算进去了：对分带宽是切开后一半 GPU（4 颗）跨切口的带宽。",
                         lambda: 2 * topology.get("b200-node").bisection_bw)),
             explain="4 颗 GPU × 900 GB/s × 2 个方向 = 7.2 TB/s，是 H100 节点的两倍。"),
    Exercise("12.12", "t_ag", "numbers",
             lambda D12, F12: [_ag(2 * D12 * F12, "h100-node"), 2 * D12 * F12 / W_GPU], rtol=0.03, unit="秒",
             labels=("精确", "粗估"), params=AG12,
             slips=(Slip("结果少了一半：要么用了双向带宽 900 GB/s（AllGather 按每个方向 450 GB/s 算），要么把 bf16 按每元素 1 字节算了（是 2 字节）。",
                         lambda D12, F12: [_ag(2 * D12 * F12, "h100-node") / 2, D12 * F12 / W_GPU]),
                    Slip("粗估除了 N：原书旧版的 B/(NW) 后来改正为 B/W（每颗 GPU 要收进 7/8 的数组）。",
                         lambda D12, F12: [_ag(2 * D12 * F12, "h100-node"), 2 * D12 * F12 / (8 * W_GPU)]),
                    Slip("两项对调了：精确值 B(N−1)/(NW) 比粗估 B/W 小，精确值在前。",
                         lambda D12, F12: [2 * D12 * F12 / W_GPU, _ag(2 * D12 * F12, "h100-node")])),
             explain=lambda D12, F12: (f"数组 {2 * D12 * F12 / 1e6:.0f} MB：精确约 "
                                       f"{_ag(2 * D12 * F12, 'h100-node') * 1e3:.2g} ms，"
                                       f"粗估约 {2 * D12 * F12 / W_GPU * 1e3:.2g} ms。")),
    # ---- P3: beyond the node -------------------------------------------------------------------
    Exercise("12.13", "fat_tree", "numbers",
             lambda: [_tree().levels[1].cable_bw, 9 * 64 * 5e10, _tree().bisection_bandwidth(both_directions=False)],
             rtol=0.03, unit="B/s", labels=("一个 SU 往上", "脊层总带宽", "对分带宽（单向）"),
             slips=(Slip("把叶交换机的 64 个口都算成朝上了：一半朝下接节点，一半朝上接脊。",
                         lambda: [2 * _tree().levels[1].cable_bw, 9 * 64 * 5e10,
                                  _tree().bisection_bandwidth(both_directions=False)]),
                    Slip("对分带宽算了两个方向：题目要单向，一半节点（36 个）× 400 GB/s。",
                         lambda: [_tree().levels[1].cable_bw, 9 * 64 * 5e10,
                                  _tree().bisection_bandwidth(both_directions=True)]),
                    Slip("把 400 Gbps 当成了 400 GB/s：每块网卡 400 Gbps = 50 GB/s，每节点 8 块才是 400 GB/s。",
                         lambda: [8 * _tree().levels[1].cable_bw, 8 * 9 * 64 * 5e10,
                                  8 * _tree().bisection_bandwidth(both_directions=False)])),
             explain="一个 SU 往上 9.6 TB/s = 24 个节点 × 400 GB/s，脊层 28.8 TB/s = 72 × 400 GB/s：每层都给每个节点 400 GB/s，无阻塞。"),
    Exercise("12.15", "nvl72_egress", "number", lambda: 72 * hardware.gbps_to_bytes_per_s(800), rtol=0.03,
             unit="B/s",
             slips=(Slip("没把 Gbps 换成字节：800 Gbps = 100 GB/s（除以 8）。",
                         lambda: 72 * 800e9),
                    Slip("按 400 Gbps 的网卡算了（GB200 NVL72 的）：这道题每颗 GPU 一块 800 Gbps 的网卡。",
                         lambda: 72 * 5e10),
                    Slip("只算了一颗 GPU：整个机架 72 颗 GPU 各有一块网卡。",
                         lambda: 1e11)),
             explain="72 × 100 GB/s = 7.2 TB/s，是 DGX H100 节点出口的 18 倍。"),
    Exercise("12.16", "level_bw", "numbers",
             lambda: _tree("B200").level_allgather_bandwidth(), rtol=0.03, unit="B/s",
             labels=("节点", "叶", "脊"),
             slips=(Slip("漏了 D/(D−1)：每一层的有效带宽是 D_i W_i/(D_i − 1)，不是 W_i。",
                         lambda: [lv.link_bw for lv in _tree("B200").levels]),
                    Slip("节点层用了 H100 的 450 GB/s：DGX B200 的每 GPU NVLink 是 900 GB/s。",
                         lambda: _tree("H100").level_allgather_bandwidth()),
                    Slip("除以了 D_i 而不是 D_i − 1：有效带宽 D W/(D − 1) 比 W 略大，不是略小。",
                         lambda: [lv.link_bw * (lv.degree - 1) / lv.degree for lv in _tree("B200").levels])),
             explain="节点约 1.03 TB/s，叶约 417 GB/s，脊 14.4 TB/s：瓶颈是叶层。"),
    Exercise("12.16b", "tree_bottleneck", "choice", **_choice(
        "B",
        A="B200 节点内每 GPU 900 GB/s，有效约 1.03 TB/s，比叶层的约 417 GB/s 快一倍多：节点层不是瓶颈。",
        C="脊层的带宽是按 SU 算的（每个 SU 9.6 TB/s），折到每个节点仍是 400 GB/s，而它的 D = 3 让有效带宽更大。",
        D="三层的有效带宽差很多（1.03 TB/s、417 GB/s、14.4 TB/s），取最小的那层，不是平均。"),
        explain="多层 AllGather 的时间由有效带宽最小的那层决定：叶层约 417 GB/s。"),
    # ---- P4: collectives -----------------------------------------------------------------------
    Exercise("12.17", "t_ag_small", "number", lambda B17, F17: _ag(2 * B17 * F17, "b200-node"), rtol=0.05,
             unit="秒", params=AG17,
             slips=(Slip("用了粗估 B/W：题目要精确式 B(N−1)/(NW)，粗估偏大 1/7。",
                         lambda B17, F17: 2 * B17 * F17 / 9e11),
                    Slip("用了 H100 的 450 GB/s：DGX B200 每 GPU 是 900 GB/s。",
                         lambda B17, F17: _ag(2 * B17 * F17, "h100-node")),
                    Slip("数组按每元素 1 字节算了：bf16 是 2 字节。",
                         lambda B17, F17: _ag(2 * B17 * F17, "b200-node") / 2)),
             explain=lambda B17, F17: (f"数组 {2 * B17 * F17 / 1e6:.0f} MB，精确约 "
                                       f"{_ag(2 * B17 * F17, 'b200-node') * 1e6:.0f} µs"
                                       f"（粗估 B/W 是 {2 * B17 * F17 / 9e11 * 1e6:.0f} µs）。")),
    Exercise("12.18", "a2a_time", "function", _a2a_ref, rtol=0.01, sampler=_a2a_sampler, unit="秒",
             edge_cases=({"V": 1e9, "N": 1, "W": 4.5e11}, {"V": 1e9, "N": 2, "W": 4.5e11},
                         {"V": 1e9, "N": 8, "W": 4.5e11}),
             slips=(Slip("每颗 GPU 发的是它本地的 (N−1)/N，本地只有 V/N：T = V(N−1)/(WN²)，你少除了一个 N。",
                         lambda V, N, W: V * (N - 1) / (W * N)),
                    Slip("V/(8W) 只是 N = 8 时的近似：一般的 N 要用 V(N−1)/(WN²)（N = 1 时是 0）。",
                         lambda V, N, W: V / (8 * W)),
                    Slip("漏了 (N−1)/N：发给自己的那份不用走链路，N = 1 时时间是 0。",
                         lambda V, N, W: V / (W * N))),
             explain="每颗 GPU 只需发出 (N−1)/N 份本地数据，本地只有 V/N。"),
    Exercise("12.19", "sharded_ag", "function", _sharded_ref, rtol=0.05, sampler=_sharded_sampler,
             unit="秒", edge_cases=({"Y": 1}, {"Y": 8}, {"Y": 16}, {"Y": 64}),
             slips=(Slip("Y ≤ 8 时也除了 Y：内层分片只让节点内那一层变便宜，瓶颈在叶层，Y ≤ 8 时时间不变。",
                         lambda Y: _DF * 31 / (32 * 400e9) / Y),
                    Slip("Y > 8 时没有变快：这时每颗 GPU 只需收 2DF/Y 字节，走自己 50 GB/s 的网卡。",
                         lambda Y: _DF * 31 / (32 * 400e9)),
                    Slip("Y > 8 时用了 NVLink 的 450 GB/s：跨节点的数据走每颗 GPU 自己的网卡（50 GB/s）。",
                         lambda Y: _DF * 31 / (32 * 400e9) if Y <= 8 else _DF / (Y * 450e9))),
             explain="Y ≤ 8 时总时间不变；Y > 8 后跨节点流量才按 Y 减少。"),
    Exercise("12.19b", "why_flat", "choice", **_choice(
        "C",
        A="节点内的 NVLink 很快，但内层分片不会让它“更慢”；问题是它本来就不是瓶颈。",
        B="Y ≤ 8 时内层轴在节点内，每个节点仍要经叶层收进 31/32 的数组，字节没有减少；延迟是微秒级，解释不了毫秒级的时间。",
        D="叶交换机能同时转发所有端口，不会“排队”；时间不变是因为每个节点经叶层收的字节数不变。"),
        explain="Y ≤ 8 只让节点内一层便宜了，而瓶颈是叶层：每节点仍要经 400 GB/s 收进 31/32 的数组。"),
    Exercise("12.20", "su_times", "numbers", lambda B20: _p420(B20), rtol=0.03, unit="秒",
             labels=("节点交换机", "叶层"), params=SU20,
             slips=(Slip("叶层漏了 (M−1)/M：叶交换机发出的是 B(M−1) 字节，分给 M 个节点。",
                         lambda B20: [_p420(B20)[0], B20 / W_NODE]),
                    Slip("节点交换机只算了一条 GPU 链路：NB 字节分在 N 条 450 GB/s 的链路上，T = B/450e9。",
                         lambda B20: [8 * _p420(B20)[0], _p420(B20)[1]])),
             explain=lambda B20: ("节点交换机约 {:.3g} ms，叶层约 {:.3g} ms：叶层略慢。"
                                  .format(*[t * 1e3 for t in _p420(B20)]))),
    Exercise("12.21", "sharp_bytes", "numbers", lambda B21: _p45(B21), rtol=0.03, unit="字节、字节、秒",
             labels=("交换机收到", "交换机发出", "时间"), params=SHARP21,
             slips=(Slip("只算了前两个阶段（归约）：后两个阶段（发归约好的分片、组播）也走交换机，进出各再加 B(N−1) 或 B。",
                         lambda B21: [B21 * 7, B21, _p45(B21)[2]]),
                    Slip("时间用了环形 AllReduce 的 2B(N−1)/(NW)：有 SHARP 时每条链路每个方向只走 B 字节，T = B/W。",
                         lambda B21: _p45(B21)[:2] + [2 * B21 * 7 / (8 * W_GPU)])),
             explain=lambda B21: (f"进出各 BN，每条 GPU 链路每个方向正好 B：T = B/W ≈ {_p45(B21)[2] * 1e3:.3g} ms。")),
    Exercise("12.22", "sharp_sharded", "function", _sharp_sharded_ref, rtol=0.01,
             sampler=_sharp_sampler, unit="秒",
             edge_cases=({"D": 4096, "F": 16384, "Y": 1}, {"D": 4096, "F": 16384, "Y": 4}),
             slips=(Slip("漏了 bf16 的 2 字节：数组是 2DF 字节。",
                         lambda D, F, Y: D * F / (Y * W_GPU)),
                    Slip("没有除以 Y：每颗 GPU 只持有 1/Y 的数组，SHARP AllReduce 随 Y 线性变快。",
                         lambda D, F, Y: 2 * D * F / W_GPU),
                    Slip("用了环形 AllReduce 的 2(X−1)/X 倍：有 SHARP 时每条链路只走一遍，T = 2DF/(Y W)。",
                         lambda D, F, Y: 2 * (2 * D * F / Y) * (8 // Y - 1) / (8 // Y) / W_GPU)),
             explain="节点内的 SHARP AllReduce 随 Y 线性变快。"),
    Exercise("12.23", "t_spine", "number", lambda D23, F23: 2 * D23 * F23 / 12.8e12, rtol=0.05, unit="秒",
             params=DF23,
             accept=(Alt(lambda D23, F23: 2 * D23 * F23 / 6.4e12,
                         "按原书附录的每 SU 6.4 TB/s 算，也接受：这一题原书本身存疑。"),),
             slips=(Slip("用了不带 SHARP 的环形 AllReduce（2 · 2DF · 3/4）：脊层有 SHARP，每个 SU 只需送出一遍 2DF。",
                         lambda D23, F23: 2 * (2 * D23 * F23) * 3 / 4 / 12.8e12),
                    Slip("按全部 4 个 SU 的 51.2 TB/s 算了：每个 SU 都要把自己的 2DF 字节送到脊层，走的是它自己的 12.8 TB/s。",
                         lambda D23, F23: 2 * D23 * F23 / 51.2e12)),
             explain=lambda D23, F23: f"按正文的 12.8 TB/s 每 SU 算，约 {2 * D23 * F23 / 12.8e12 * 1e6:.3g} µs。"),
    Exercise("12.24", "t_2node", "number", lambda V24: _p48(V24), rtol=0.03, unit="秒", params=V24,
             slips=(Slip("取了节点内那一层：B200 的 NVLink 翻倍到 900 GB/s，节点内比跨节点那层快。",
                         lambda V24: V24 * 7 / (8 * 9e11)),
                    Slip("把两层加起来了：两层同时进行，取较大者。",
                         lambda V24: V24 * 7 / (8 * 9e11) + V24 / (2 * W_NODE)),
                    Slip("用了 H100 的 450 GB/s：这道题是两个 DGX B200 节点。",
                         lambda V24: _p48(V24, node="DGX H100"))),
             explain=lambda V24: (f"节点层约 {V24 * 7 / (8 * 9e11) * 1e3:.3g} ms，跨节点约 "
                                  f"{V24 / (2 * W_NODE) * 1e3:.3g} ms：换成 B200 后跨节点那层成了瓶颈。")),
    Exercise("12.24b", "two_node_bound", "choice", **_choice(
        "B",
        A="H100 上节点内那层（514 GB/s）确实是瓶颈；B200 的 NVLink 翻倍，节点内有效带宽约 1.03 TB/s，已经快过跨节点的 800 GB/s。",
        C="两层的时间不同（约 1.46 ms 对 1.88 ms），不相等。",
        D="两个节点之间只经过叶交换机，不经过脊层；而且决定时间的是各层的带宽，不是层数。"),
        explain="NVLink 快了一倍，出口没变：两个 B200 节点的 AllGather 受跨节点那层限制。"),
    Exercise("12.25", "a2a_slowdown", "number",
             lambda: (1 / (2 * A100N.w_node)) / (1 / (8 * A100N.w_gpu)), rtol=0.03, unit="倍",
             slips=(Slip("用了 H100 节点的数（450 GB/s、400 GB/s）：DGX A100 每 GPU 300 GB/s，出口 200 GB/s。",
                         lambda: (1 / (2 * W_NODE)) / (1 / (8 * W_GPU))),
                    Slip("倒过来了：这是扩到两个节点后速度剩下的比例，题目问慢了几倍。",
                         lambda: (1 / (8 * A100N.w_gpu)) / (1 / (2 * A100N.w_node)))),
             explain="DGX A100 上慢 6 倍：离开节点的每个字节都要挤过 200 GB/s 的出口。"),
    Exercise("12.25b", "a2a_flat", "choice", **_choice(
        "A",
        B="NCCL 实现了 AllToAll；问题不在软件，在于每个字节的目的地都不同，没法先在节点内合并。",
        C="延迟在大数组时可以忽略；AllToAll 慢是因为跨节点的字节全都挤过节点出口。",
        D="SHARP 做的是归约（求和），AllToAll 没有要归约的数据，SHARP 帮不上也不是原因。"),
        explain="AllGather 可以先在节点内收齐再跨节点，AllToAll 每个字节都有自己的目的地，没有可以合并的部分。"),
    Exercise("12.26", "sharp", "numbers",
             lambda Na26, Nb26: [float(C.sharp_speedup(Na26)), float(C.sharp_speedup(Nb26))],
             rtol=0.02, unit="倍", labels=("较少的 GPU", "较多的 GPU"), params=N26,
             slips=(Slip("漏了 (N−1)/N：环形 AllReduce 是 2B(N−1)/(NW)，SHARP 是 B/W，比值 2(N−1)/N。",
                         lambda Na26, Nb26: [2.0, 2.0]),
                    Slip("倒过来了：题目问 SHARP 比环形快几倍，应大于 1。",
                         lambda Na26, Nb26: [1 / float(C.sharp_speedup(Na26)), 1 / float(C.sharp_speedup(Nb26))]),
                    Slip("用了 AllGather 的 (N−1)/N：环形 AllReduce 是 ReduceScatter 加 AllGather，字节数是两倍。",
                         lambda Na26, Nb26: [(Na26 - 1) / Na26, (Nb26 - 1) / Nb26])),
             explain=lambda Na26, Nb26: (f"N 越大越接近 2 倍：{Na26} 颗 GPU 约 {float(C.sharp_speedup(Na26)):.3g} 倍，"
                                         f"{Nb26} 颗约 {float(C.sharp_speedup(Nb26)):.3g} 倍。")),
    # ---- P5: LLM rooflines ---------------------------------------------------------------------
    Exercise("12.27", "dp_thr", "numbers",
             lambda: [gp.dp_critical_batch_per_gpu("DGX A100", cross_node=False),
                      gp.dp_critical_batch_per_gpu("DGX A100")],
             rtol=0.03, unit="token/GPU", labels=("节点内", "跨节点"),
             slips=(Slip("用了 H100 的数：DGX A100 是 C = 3.1e14、每 GPU 300 GB/s、出口每节点 200 GB/s。",
                         lambda: [gp.dp_critical_batch_per_gpu(cross_node=False), gp.dp_critical_batch_per_gpu()]),
                    Slip("用了双向带宽：门槛按每个方向的带宽算，C/W 里的 W 是单向的。",
                         lambda: [A100N.c / (2 * A100N.w_gpu), A100N.c / (2 * A100N.w_node)]),
                    Slip("把网卡按 400 Gbps 算了：DGX A100 是 8 块 200 Gbps 的网卡，出口 200 GB/s。",
                         lambda: [A100N.alpha_gpu, A100N.c / 4e11])),
             explain="DGX A100 节点内约 1033，跨节点 1550：都比 H100 低，因为 A100 的算力小得多。"),
    Exercise("12.28", "batches", "numbers", _p52, rtol=0.05, unit="token", labels=("LLaMA-3", "DeepSeek-V3"),
             params=GPUS28,
             accept=(Alt(lambda G28a, G28b: [2475 * G28a, 3300 * G28b], "按原书把 H800 的 NVLink 当成 300 GB/s 也接受。"),),
             slips=(Slip("DeepSeek-V3 用了出口的门槛：H800 的 NVLink（每方向 200 GB/s）比出口还慢，节点内那层才是瓶颈。",
                         lambda G28a, G28b: [_p52(G28a, G28b)[0], gp.dp_critical_batch_per_gpu("H800") * G28b]),
                    Slip("LLaMA-3 用了节点内的门槛 C/W_GPU：它的数据并行跨节点，按出口 C/W_node 算。",
                         lambda G28a, G28b: [gp.dp_critical_batch_per_gpu(cross_node=False) * G28a,
                                             _p52(G28a, G28b)[1]])),
             explain="两者都远小于 DeepSeek 实际的 6300 万 token。"),
    Exercise("12.29", "moe_thr", "number",
             lambda E29, k29: gp.dp_critical_batch_per_gpu(n_experts=E29, top_k=k29),
             rtol=0.03, unit="token/GPU", params=MOE29,
             slips=(Slip("乘反了：门槛要乘 E/k（每个 token 只用 k/E 的权重，却要同步全部梯度），不是 k/E。",
                         lambda E29, k29: gp.dp_critical_batch_per_gpu() * k29 / E29),
                    Slip("漏了 MoE 的倍数 E/k：稠密模型的门槛才是 C/W_node。",
                         lambda E29, k29: gp.dp_critical_batch_per_gpu()),
                    Slip("只乘了 E、没有除以 k：每个 token 用 k 个专家，倍数是 E/k。",
                         lambda E29, k29: gp.dp_critical_batch_per_gpu() * E29)),
             explain=lambda E29, k29: (f"E/k = {E29 / k29:.3g}，门槛约 "
                                       f"{gp.dp_critical_batch_per_gpu(n_experts=E29, top_k=k29):,.0f} 个 token/GPU。")),
    Exercise("12.29b", "moe_why", "choice", **_choice(
        "A",
        B="门槛比的是计算和梯度同步，不含 AllToAll；E/k 来自每个 token 只用到 k/E 的权重。",
        C="专家的权重和稠密层的一样，每个字节传输的代价没有变；变的是每个 token 的 FLOPs。",
        D="E/k 让门槛变大不是变小：每个 token 的计算少了，而要同步的梯度还是全部专家的。"),
        explain="计算按 k/E 缩小，梯度同步不变：要 E/k 倍的 token 才能摊平通信。"),
    Exercise("12.30", "dp2_thr", "number", lambda X30: gp.dp_critical_batch_per_gpu("DGX A100", n_nodes=X30),
             rtol=0.03, unit="token/GPU", params=X30,
             slips=(Slip("漏了 (X−1)/X：只在 X 个节点之间做时，每个节点只需送出 (X−1)/X 的梯度。",
                         lambda X30: gp.dp_critical_batch_per_gpu("DGX A100")),
                    Slip("乘的是 1/X：跨节点流量是 (X−1)/X，不是 1/X。",
                         lambda X30: gp.dp_critical_batch_per_gpu("DGX A100") / X30),
                    Slip("用了 H100 节点的 C/W_node：这道题是 DGX A100（3.1e14、200 GB/s）。",
                         lambda X30: gp.dp_critical_batch_per_gpu(n_nodes=X30))),
             explain=lambda X30: (f"1550 × {X30 - 1}/{X30} ≈ "
                                  f"{gp.dp_critical_batch_per_gpu('DGX A100', n_nodes=X30):.0f}。")),
    Exercise("12.31", "tp_max", "numbers",
             lambda: [float(gp.tp_max_degree(F405)), F405 / gp.node_type("DGX H100").alpha_node],
             rtol=0.03, unit="路", labels=("节点内", "跨节点"),
             slips=(Slip("用了正文 70B 的 F = 28,672：这道题是 405B，F = 53,248。",
                         lambda: [float(gp.tp_max_degree(28672)), 28672 / gp.node_type("DGX H100").alpha_node]),
                    Slip("除反了：上限是 F·W/C = F/α，不是 α/F。",
                         lambda: [1 / float(gp.tp_max_degree(F405)), gp.node_type("DGX H100").alpha_node / F405]),
                    Slip("用了模型维度 D = 16,384：张量并行切的是 F。",
                         lambda: [float(gp.tp_max_degree(16384)), 16384 / gp.node_type("DGX H100").alpha_node])),
             explain="约 24 和 21.5：理论上限都超过一个节点的 8 路。"),
    Exercise("12.32", "tp2", "number", lambda: float(gp.tp_max_degree(F405, across_nodes=True)),
             rtol=0.05, unit="路",
             slips=(Slip("漏了 +8：条件是 F > α(Y − 8)，所以 Y < 8 + F/α。",
                         lambda: F405 / gp.node_type("DGX H100").alpha_node),
                    Slip("用了正文 70B 的 F = 28,672：这道题 F = 53,248。",
                         lambda: float(gp.tp_max_degree(28672, across_nodes=True))),
                    Slip("α 用了节点内的 C/W_GPU：跨节点的那部分走出口，α = C/W_node。",
                         lambda: 8 + F405 / gp.node_type("DGX H100").alpha_gpu)),
             explain="约 29.5：405B 跨两个节点做 16 路张量并行仍计算受限。"),
    Exercise("12.32b", "tp16", "choice", **_choice(
        "A",
        B="张量并行可以跨节点，只是每跨一个节点门槛更高；要算 Y < 8 + F/α，而不是一律停在 8 路。",
        C="Y = 16 > 8 只说明跨了节点；跨节点的上限是 8 + F/α ≈ 29.5，16 还在上限以内。",
        D="SHARP 能让 AllReduce 更快，但这里不需要它：没有 SHARP，16 也在约 29.5 的上限以内。"),
        explain="F = 53,248 的上限约 29.5 路，16 路跨两个节点仍计算受限（70B 的上限只有约 19.6）。"),
    Exercise("12.33", "ep_f", "number", lambda: 8 * B200N.alpha_node, rtol=0.03, unit="（F 的取值）",
             slips=(Slip("用了 H100 的 α：DGX B200 是 C = 2.25e15、出口 400 GB/s，α = 5625。",
                         lambda: 8 * gp.node_type("DGX H100").alpha_node),
                    Slip("漏了 8 倍：界是 F = 8α。",
                         lambda: B200N.alpha_node),
                    Slip("α 用了节点内的 C/W_GPU：跨节点的专家并行看的是出口，α = C/W_node。",
                         lambda: 8 * B200N.alpha_gpu)),
             explain="45,000：B200 算力涨了、出口没涨，专家并行跨节点更难。"),
    Exercise("12.35", "deepseek", "numbers", lambda G35: [62914560 / G35, 7 / 6], rtol=0.03,
             unit="token/GPU、倍", labels=("每 GPU token", "有效带宽倍数"), params=DS35,
             slips=(Slip("漏了序列长度：每批 15,360 条序列，每条 4096 个 token。",
                         lambda G35: [15360 / G35, 7 / 6]),
                    Slip("倍数乘反了：跨节点流量是 (X−1)/X，有效带宽是它的倒数 X/(X−1)。",
                         lambda G35: [62914560 / G35, 6 / 7]),
                    Slip("用了原来的 2048 颗 GPU、2 路：这道题的 GPU 数是题目给的，数据并行 7 路。",
                         lambda G35: [62914560 / 2048, 2.0])),
             explain=lambda G35: (f"每 GPU 约 {62914560 / G35:.0f} 个 token，有效带宽是 7/6 ≈ 1.17 倍："
                                  "数据并行的路数越多，这点好处越小。")),
    Exercise("12.36", "llama", "numbers",
             lambda: [16 * 2 ** 20 / 24576, float(gp.mp_spanned_threshold(8 * 6))], rtol=0.03,
             unit="token/GPU", labels=("每 GPU token", "跨节点门槛"),
             slips=(Slip("门槛除以了模型并行的 GPU 数（48）：一个副本跨 6 个节点，是按节点数除。",
                         lambda: [16 * 2 ** 20 / 24576, gp.dp_critical_batch_per_gpu() / 48]),
                    Slip("漏了流水线：一个副本跨 6 个节点，梯度分片从 6 个节点的网卡同时出去，门槛除以 6。",
                         lambda: [16 * 2 ** 20 / 24576, gp.dp_critical_batch_per_gpu()]),
                    Slip("用了 16k 颗 GPU：这道题是 24,576 颗。",
                         lambda: [16 * 2 ** 20 / 16384, float(gp.mp_spanned_threshold(8 * 6))])),
             explain="每 GPU 约 683 个 token，门槛约 412：计算受限。"),
    Exercise("12.36b", "pp_bound", "choice", **_choice(
        "A",
        B="2475 是一个副本只占一个节点时的门槛；流水线 6 路让每个副本跨 6 个节点，门槛降到约 412。",
        C="气泡浪费的是计算时间，不改变数据并行的梯度同步是否被计算藏住；这里问的是后者。",
        D="张量并行在节点内，走 NVLink；数据并行的梯度同步走的是跨节点的网卡。"),
        explain="683 > 412：梯度同步藏得住，计算受限。"),
    # ---- P6: quiz 5 ----------------------------------------------------------------------------
    Exercise("12.37", "b200", "numbers",
             lambda: [hardware.peak_flops("B200", "fp8") / B200N.w_gpu,
                      hardware.peak_flops("B200", "fp8") / B200N.w_node],
             rtol=0.03, unit="token/GPU", labels=("节点内", "跨节点"),
             slips=(Slip("少了一半：要么用了 bf16 的算力（fp8 训练的矩阵乘法快一倍，4.5e15），要么把梯度也按 fp8 算了（题目说梯度仍按 bf16 同步，字节数不变）。",
                         lambda: [gp.dp_critical_batch_per_gpu("DGX B200", cross_node=False),
                                  gp.dp_critical_batch_per_gpu("DGX B200")]),
                    Slip("节点内用了 H100 的 450 GB/s：B200 每 GPU 是 900 GB/s。",
                         lambda: [hardware.peak_flops("B200", "fp8") / W_GPU,
                                  hardware.peak_flops("B200", "fp8") / B200N.w_node])),
             explain="fp8 训练时节点内 5000、跨节点 11,250：算力翻倍，通信不变，门槛翻倍。"),
    Exercise("12.37b", "fp8_dp", "choice", **_choice(
        "A",
        B="以 token 计的门槛不随精度变，是推理时权重也变成 fp8、字节同样减半的结论；这里梯度仍是 bf16，只有算力翻倍。",
        C="方向反了：算力变大，同样的通信要更多 token 的计算才藏得住，门槛变高。",
        D="NVLink 和出口带宽都没变；变的是算力。"),
        explain="C 翻倍、W 不变：数据并行的门槛翻倍，跨节点更难。"),
    Exercise("12.38", "mem405b", "numbers",
             lambda: [P405 * 10, gp.min_gpus_for_state(P405, _h().hbm_bytes)],
             rtol=0.0, unit="字节、GPU", labels=("总字节", "最少 GPU 数"),
             slips=(Slip("只算了 bf16 权重的 2 字节：Adam 的两个 fp32 状态还要 8 字节，共 10 字节/参数。",
                         lambda: [P405 * 2, gp.min_gpus_for_state(P405, _h().hbm_bytes, 2.0)]),
                    Slip("GPU 数向下取整了：50 颗放不下，要向上取整。",
                         lambda: [P405 * 10, math.floor(P405 * 10 / _h().hbm_bytes)]),
                    Slip("把 80 GB 当成了 80 GiB：H100 的 HBM 是 80e9 字节。",
                         lambda: [P405 * 10, math.ceil(P405 * 10 / (80 * 2 ** 30))])),
             explain="4.05 TB，至少 51 颗 80 GB 的 H100：七个节点。"),
    Exercise("12.38b", "t_train", "number", lambda G38, M38: _p62b(mfu=M38 / 100, gpus=G38), rtol=0.03, unit="秒",
             params=TR38,
             slips=(Slip("用了 2PT：训练是前向 2PT 加反向 4PT，共 6PT。",
                         lambda G38, M38: _p62b(k=2, mfu=M38 / 100, gpus=G38)),
                    Slip("没有乘 MFU：实际只跑到峰值的 MFU 那么多。",
                         lambda G38, M38: _p62b(mfu=1.0, gpus=G38)),
                    Slip("用了 fp8 的算力：这次训练按 bf16 峰值 9.89e14 算。",
                         lambda G38, M38: _p62b(flops="fp8", mfu=M38 / 100, gpus=G38))),
             explain=lambda G38, M38: (f"约 {_p62b(mfu=M38 / 100, gpus=G38):.2g} 秒，也就是 "
                                       f"{_p62b(mfu=M38 / 100, gpus=G38) / 86400:.0f} 天。")),
    Exercise("12.38c", "thr_pp4", "number", lambda: float(gp.mp_spanned_threshold(8 * 4)), rtol=0.03,
             unit="token/GPU",
             slips=(Slip("除以了模型并行的 GPU 数（32）：一个副本跨 4 个节点，按节点数除。",
                         lambda: gp.dp_critical_batch_per_gpu() / 32),
                    Slip("漏了流水线：一个副本跨 4 个节点，梯度分片从 4 个节点的网卡同时出去。",
                         lambda: gp.dp_critical_batch_per_gpu()),
                    Slip("用了正文的 8 路流水线：这道题是 4 路。",
                         lambda: float(gp.mp_spanned_threshold(8 * 8)))),
             explain="约 618，低于每 GPU 1024 个 token：计算受限。"),
    Exercise("12.38d", "plan405", "choice", **_choice(
        "A",
        B="纯数据并行每颗 GPU 要放下一个副本的状态：4.05 TB / 8 ≈ 506 GB，远超 80 GB。",
        C="ZeRO-3 把状态分到 2048 路，内存够了；但每 GPU 1024 个 token 低于跨节点门槛约 2475，通信受限。",
        D="流水线 16 路让每个副本跨 16 个节点，梯度分片从 16 个节点的网卡同时出去，门槛降到约 155；2475 是副本只占一个节点时的门槛。"),
        explain="张量 8 × 流水线 16 × 数据 128：状态 4.05 TB/128 ≈ 32 GB 放得下，门槛约 155 < 1024。"),
    Exercise("12.39", "mega_tok", "numbers",
             lambda S39: [192 * S39 / 192, 384 * S39 / 768, 1536 * S39 / 3072], rtol=0.0,
             unit="token/GPU", labels=("16B", "70B", "314B"), params=SEQ39,
             slips=(Slip("漏了序列长度：每条序列有题目给的那么多个 token。",
                         lambda S39: [192 / 192, 384 / 768, 1536 / 3072]),
                    Slip("除以了节点数而不是 GPU 数：每节点 8 颗 GPU。",
                         lambda S39: [192 * S39 / 24, 384 * S39 / 96, 1536 * S39 / 384])),
             explain=lambda S39: f"三个配置每 GPU 分别是 {S39}、{S39 // 2}、{S39 // 2} 个 token。"),
    Exercise("12.39b", "mega_thr", "numbers", _mega_thr, rtol=0.03, unit="token/GPU",
             labels=("16B", "70B", "314B"),
             slips=(Slip("用了 H100 的门槛：这道题把三个配置放到 DGX A100 上（C/W_node = 1550）。",
                         lambda: _mega_thr("DGX H100")),
                    Slip("除以了模型并行的 GPU 数（16、64）：应除以一个副本跨的节点数（2、8）。",
                         lambda: _mega_thr(per="gpus"))),
             explain="约 1550、775、194：模型并行跨的节点越多，数据并行的门槛越低。"),
    # ---- P7: appendix --------------------------------------------------------------------------
    Exercise("12.40", "nvl72", "numbers", _p71, rtol=0.03, unit="倍、token/GPU",
             labels=("跨节点 Roofline 好了几倍", "跨机架门槛"),
             slips=(Slip("按 400 Gbps 的网卡算了（GB200 NVL72）：这道题每颗 GPU 一块 800 Gbps 的网卡，出口 7.2 TB/s。",
                         lambda: _p71(w_nic=5e10)),
                    Slip("只算了出口的倍数：算力也涨了 2.25e15 / 9.89e14 倍，要除掉。",
                         lambda: [72 * 1e11 / W_NODE, _p71()[1]]),
                    Slip("没把 Gbps 换成字节：800 Gbps = 100 GB/s。",
                         lambda: _p71(w_nic=8e11))),
             explain="出口 18 倍、算力约 2.3 倍：跨机架好了约 8 倍，门槛约 312。"),
    Exercise("12.40b", "nvl_real", "choice", **_choice(
        "B",
        A="312 只是跨机架那层的门槛；机架内那层每 GPU 仍是 900 GB/s 的 NVLink，门槛 2500 更高，两层取较大者。",
        C="两层同时进行，门槛取较大者，不是相加。",
        D="625 是 400 Gbps 网卡时跨机架的门槛；而且即使是 625，机架内那层的 2500 也更高。"),
        explain="出口快了，机架内的 NVLink 成了瓶颈：门槛是 2500。"),
    Exercise("12.41", "ragged_exact", "function", _ragged_ref, rtol=0.01, sampler=_ragged_sampler,
             unit="比例", edge_cases=({"k": 1, "z": 8}, {"k": 8, "z": 1}, {"k": 8, "z": 2}, {"k": 8, "z": 256}),
             slips=(Slip("这是近似式 min(k/Z, 1)(Z−1)/Z：k 个专家可能落在同一个分片上，精确值是 1 − ((Z−1)/Z)^k 再乘 (Z−1)/Z。",
                         lambda k, z: min(k / z, 1.0) * (z - 1) / z),
                    Slip("漏了 (Z−1)/Z：落在本地分片上的那份不用发。",
                         lambda k, z: 1 - ((z - 1) / z) ** k),
                    Slip("指数用错了：覆盖一个分片的概率是 1 − ((Z−1)/Z)^k，指数是 k 不是 Z。",
                         lambda k, z: (1 - ((z - 1) / z) ** z) * (z - 1) / z)),
             explain="Z 大时精确值和近似值几乎一样；Z 小时近似高估很多。"),
    Exercise("12.41b", "ragged_bias", "choice", **_choice(
        "A",
        B="近似式假设 k 个专家落在 k 个不同的分片上，这只会多算、不会少算：Z 小时重复落在同一分片的机会最大。",
        C="Z = 8、k = 8 时近似是 0.875，精确约 0.574，差了五成，不是“几乎一样”。",
        D="差别来自 k 个专家可能落在同一个分片上，这和 Z 大小有关：Z 越小越容易撞上。"),
        explain="近似式把重复的分片也算了一次，Z 小时高估最多。"),
]
