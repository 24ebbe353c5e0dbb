"""Chapter 12 exercises (spec 12, 42 worked problems). Ids are "12.N", numbered in the spec's
order; free-text problems are 思考题 in the notebook and have no registry entry.

  12.1-12.9  = P1.1-P1.9 (chip)          12.10-12.12 = P2.1-P2.3 (node)
  12.13-12.16 = P3.1-P3.4 (beyond a node) 12.17-12.26 = P4.1-P4.10 (collectives)
  12.27-12.36 = P5.1-P5.10 (LLM rooflines) 12.37-12.39 = P6.1-P6.3 (quiz 5)
  12.40-12.42 = P7.1-P7.3 (appendix)
Free-text only (not registered): 12.14 (P3.2), 12.34 (P5.8), 12.42 (P7.3).

Expected values are computed from scaling_lib (hardware, chip_internals, topology, collectives,
gpu_parallel, roofline); tests/test_exercises_12.py pins them to the spec's corrected answers.
"""
from __future__ import annotations

from .. import chip_internals as ci, collectives as C, gpu_parallel as gp, hardware, roofline, topology
from . import Exercise, Slip

H100 = "H100"
_DF = 2 * 8192 * 32768          # P4.3 / P4.7: bf16[8192, 32768]


def _h():
    return hardware.get(H100)


def _p12():
    h = _h()
    boost = ci.vector_flops(h)
    return [ci.vector_flops(h, h.clock_base_hz), boost, h.peak() / boost]


def _p14():
    return [roofline.matmul_time(64, 4096, 8192, "B200", x="f16", w="f16", out="f16").t_lower,
            roofline.matmul_time(512, 4096, 8192, "B200", x="f16", w="f16", out="f16").t_lower]


def _p15():
    m = ci.onchip_memory_totals(H100)
    return [m["smem"], m["smem"] + m["registers"]]


def _p17():
    return [1 / 12, float(ci.elementwise_time(2 ** 30, H100))]


def _p31():
    sp = topology.dgx_h100_superpod()
    return [sp.levels[1].cable_bw, sp.levels[2].cable_bw, sp.bisection_bandwidth(both_directions=False)]


def _a2a_ref(V, N, W):
    return V * (N - 1) / (W * N ** 2)


def _a2a_sampler(rng):
    return {"V": float(10 ** rng.uniform(3, 10)), "N": int(rng.choice([2, 4, 8, 16, 72])),
            "W": float(rng.choice([3e11, 4.5e11, 9e11]))}


def _sharded_ref(Y):
    return float(C.sharded_allgather_time(_DF, int(Y)))


def _sharded_sampler(rng):
    return {"Y": int(2 ** rng.integers(0, 7))}


def _p44():
    B, M = 1e9, 32
    return [B / _h().nvlink_bw_1way, B * (M - 1) / (M * 4e11)]


def _p45():
    B, N = 1e9, 8
    return [B * N, B * N, float(C.collective_time("all_reduce", B, "h100-node-sharp").total)]


def _sharp_sharded_ref(D, F, Y):
    return 2 * D * F / (Y * _h().nvlink_bw_1way)


def _sharp_sampler(rng):
    return {"D": int(rng.choice([4096, 8192])), "F": int(rng.choice([16384, 32768])),
            "Y": int(rng.choice([1, 2, 4, 8]))}


def _p410():
    return [float(C.sharp_speedup(8)), 1.3 * 370e9]


def _p52():
    llama = gp.dp_critical_batch_per_gpu() * 16000
    ds = gp.dp_critical_batch_per_gpu("H800", include_node_level=True) * 2048
    return [llama, ds]


def _p62c():
    return gp.node_type("DGX H100").c / (8 * gp.node_type("DGX H100").w_node)


def _p63():
    return [192 * 4096 / 192, 384 * 4096 / 768, 1536 * 4096 / 3072]


def _p63b():
    return [gp.dp_critical_batch_per_gpu(), float(gp.mp_spanned_threshold(16)),
            float(gp.mp_spanned_threshold(64))]


def _ragged_ref(k, z):
    return float(C.ragged_fraction(k, z, exact=True))


def _ragged_sampler(rng):
    return {"k": int(rng.integers(1, 9)), "z": int(2 ** rng.integers(1, 9))}


EXERCISES = [
    # ---- P1: chip --------------------------------------------------------------------------
    Exercise("12.1", "cores", "numbers",
             lambda: [ci.cuda_cores("H100"), ci.cuda_cores("B200"), 2 * hardware.get("v5p").vpu_alus_per_core],
             rtol=0.0, unit="个", labels=("H100", "B200", "v5p"),
             slips=(Slip("漏了每个 SM 的 4 个子分区：每个 SM 是 4 × 32 = 128 个 fp32 lane。",
                         lambda: [ci.cuda_cores("H100") // 4, ci.cuda_cores("B200") // 4,
                                  2 * hardware.get("v5p").vpu_alus_per_core]),
                    Slip("v5p 只算了一个 TensorCore：每颗芯片有 2 个。",
                         lambda: [ci.cuda_cores("H100"), ci.cuda_cores("B200"),
                                  hardware.get("v5p").vpu_alus_per_core])),
             explain="v5p 的 VPU ALU 大约是 H100 CUDA 核心的一半。"),
    Exercise("12.2", "vec", "numbers", _p12, rtol=0.03, unit="FLOPs/s、FLOPs/s、倍",
             explain="Tensor Core 的算力是 CUDA 核心的约 30 倍。"),
    Exercise("12.3", "icrit", "numbers",
             lambda: [hardware.critical_intensity("H200", "fp8"), hardware.critical_intensity("A100", "int8")],
             rtol=0.03, unit="FLOPs/字节", labels=("H200 fp8", "A100 int8"),
             slips=(Slip("低精度那两项没有翻倍：fp8 / int8 的算力是 bf16 的两倍，HBM 带宽不变，临界强度也翻倍。",
                         lambda: [hardware.critical_intensity("H200"), hardware.critical_intensity("A100")]),
                    Slip("H200 用了 H100 的 HBM 带宽 3.35e12 B/s（正文的例子）：H200 算力和 H100 相同，HBM 快到 4.8e12 B/s。",
                         lambda: [hardware.critical_intensity("H100", "fp8"),
                                  hardware.critical_intensity("A100", "int8")])),
             explain="低精度运算让门槛翻倍；H200 的 HBM 更快，fp8 门槛约 412，低于 H100 的约 591。"),
    Exercise("12.3b", "h200_bound", "choice", lambda: "A", choices=("A", "B", "C", "D"),
             why={"B": "门槛是 C / W_hbm，不只看 Tensor Core：H200 的 HBM 更快，门槛更低，H100 的门槛约 295，B = 250 还不到。",
                  "C": "HBM 变快正是门槛降低的原因：H200 的门槛约 206，B = 250 已经超过，计算受限。",
                  "D": "方向反了：带宽 W 在分母上，HBM 越快门槛越低，不是越高。"},
             explain="同样的 Tensor Core、更快的 HBM：H200 的门槛约 206，H100 约 295，B = 250 正好夹在中间。"),
    Exercise("12.4", "t_mm", "numbers", _p14, rtol=0.10, unit="秒",
             explain="B = 64 时内存受限（读权重），B = 512 时计算受限。"),
    Exercise("12.5", "onchip", "numbers", _p15, rtol=0.05, unit="字节",
             explain="SMEM 和寄存器各约 33 MB，合起来约是 TPU VMEM 的一半。"),
    Exercise("12.6", "b200_clock", "number", lambda: 80e12 / (2 * ci.cuda_cores("B200")), rtol=0.03,
             unit="Hz", explain="约 2.1 GHz：要靠液冷才跑得住。"),
    Exercise("12.7", "vec_add", "numbers", _p17, rtol=0.05, unit="FLOPs/字节、秒",
             explain="强度 1/12 远低于向量单元约 10 的临界算术强度：逐元素运算永远带宽受限。"),
    Exercise("12.8", "tc_fpc", "numbers",
             lambda: [ci.tc_flops_per_cycle("H100", 1.76e9), ci.tc_flops_per_cycle("B200", 1.86e9)],
             rtol=0.10, unit="FLOPs/周期", accept=([1024, 2048],),
             explain="H100 的一个 Tensor Core 每周期约做一个 8×8×8 的矩阵乘。"),
    Exercise("12.9", "warps", "number", lambda: ci.resident_warps(256), rtol=0.0, unit="个 warp",
             explain="寄存器用满时，每个 SM 只能驻留 8 个 warp。"),
    # ---- P2: node --------------------------------------------------------------------------
    Exercise("12.10", "node_bw", "number", lambda: topology.get("h100-node").total_bw, rtol=0.03,
             unit="B/s", hints=((6.4e12 / 3.6e12, "这是交换机的容量；GPU 发得出这么多吗？"),),
             explain="交换机能转 6.4 TB/s，但 8 颗 GPU 只能发出 3.6 TB/s。"),
    Exercise("12.11", "bisection", "number", lambda: topology.get("h100-node").bisection_bw, rtol=0.03,
             unit="B/s", explain="4 颗 GPU × 450 GB/s × 2 个方向 = 3.6 TB/s。"),
    Exercise("12.12", "t_ag", "numbers",
             lambda: [float(C.collective_time("all_gather", 2 * 4096 * 65536, "h100-node").total),
                      2 * 4096 * 65536 / 4.5e11],
             rtol=0.03, unit="秒", explain="精确值 1.04 ms，近似 B/W 是 1.19 ms；实测约 1.5 ms。"),
    # ---- P3: beyond the node -------------------------------------------------------------------
    Exercise("12.13", "fat_tree", "numbers", _p31, rtol=0.03, unit="B/s",
             explain="每一层都给每个节点 400 GB/s：这棵胖树无阻塞。"),
    Exercise("12.15", "nvl72_egress", "number", lambda: topology.get("gb200-nvl72").node_egress,
             rtol=0.03, unit="B/s", explain="72 块 400 Gbps 网卡：3.6 TB/s，是 H100 节点的 9 倍。"),
    Exercise("12.16", "level_bw", "numbers",
             lambda: topology.dgx_h100_superpod().level_allgather_bandwidth(), rtol=0.03, unit="B/s",
             explain="叶层（约 413 GB/s）是瓶颈。"),
    # ---- P4: collectives -------------------------------------------------------------------------
    Exercise("12.17", "t_ag_small", "number",
             lambda: float(C.collective_time("all_gather", 2 * 1024 * 16384, "h100-node").total),
             rtol=0.05, unit="秒", accept=(2 * 1024 * 16384 / 4.5e11,),
             explain="约 65 µs（粗估 B/W 是 75 µs）。"),
    Exercise("12.18", "a2a_time", "function", _a2a_ref, rtol=0.01, sampler=_a2a_sampler, unit="秒",
             explain="每颗 GPU 只需发出 (N−1)/N 份本地数据，本地只有 B/N。"),
    Exercise("12.19", "sharded_ag", "function", _sharded_ref, rtol=0.05, sampler=_sharded_sampler,
             unit="秒", explain="Y ≤ 8 时总时间不变；Y > 8 后跨节点流量才按 Y 减少。"),
    Exercise("12.20", "su_times", "numbers", _p44, rtol=0.03, unit="秒",
             explain="节点交换机受出口限制（B/450e9），叶层是 B(M−1)/(M·400e9)。"),
    Exercise("12.21", "sharp_bytes", "numbers", _p45, rtol=0.03, unit="字节、字节、秒",
             explain="每条 GPU 链路每个方向只走 B 字节，所以 T = B/W。"),
    Exercise("12.22", "sharp_sharded", "function", _sharp_sharded_ref, rtol=0.01,
             sampler=_sharp_sampler, unit="秒", explain="节点内的 SHARP AllReduce 随 Y 线性变快。"),
    Exercise("12.23", "t_spine", "number", lambda: _DF / 12.8e12, rtol=0.05, unit="秒",
             accept=(_DF / 6.4e12,), explain="按正文的 12.8 TB/s 每 SU 算；原书附录的 6.4 TB/s 给出两倍的时间。"),
    Exercise("12.24", "t_2node", "number",
             lambda: float(C.collective_time("all_gather", 1e9, "h100-superpod", n_gpus=16).total),
             rtol=0.03, unit="秒", explain="两个节点时，节点内那一层（514 GB/s）反而是瓶颈。"),
    Exercise("12.25", "a2a_slowdown", "number", lambda: (1 / (2 * 4e11)) / (1 / (8 * 4.5e11)),
             rtol=0.03, unit="倍", explain="AllToAll 不能分层做，跨节点后慢 4.5 倍。"),
    Exercise("12.26", "sharp", "numbers", _p410, rtol=0.03, unit="倍、B/s",
             explain="理论快 1.75 倍，实测只快约 30%。"),
    # ---- P5: LLM rooflines --------------------------------------------------------------------------
    Exercise("12.27", "dp_thr", "numbers",
             lambda: [gp.dp_critical_batch_per_gpu(cross_node=False), gp.dp_critical_batch_per_gpu()],
             rtol=0.03, unit="token/GPU", explain="节点内约 2200，跨节点约 2475：比 TPU v5p 的 850 高得多。"),
    Exercise("12.28", "batches", "numbers", _p52, rtol=0.05, unit="token",
             accept=([2475 * 16000, 3300 * 2048],),
             explain="两者都远小于 DeepSeek 实际的 6300 万 token。"),
    Exercise("12.29", "moe_thr", "number", lambda: gp.dp_critical_batch_per_gpu(n_experts=128, top_k=4),
             rtol=0.03, unit="token/GPU", explain="MoE 的数据并行门槛要乘 E/k = 32。"),
    Exercise("12.30", "dp2_thr", "number", lambda: gp.dp_critical_batch_per_gpu(n_nodes=2),
             rtol=0.03, unit="token/GPU", explain="只跨两个节点时跨节点流量减半，门槛减半。"),
    Exercise("12.31", "tp_max", "numbers",
             lambda: [float(gp.tp_max_degree(28672)), 28672 / gp.node_type("DGX H100").alpha_node],
             rtol=0.05, unit="路", accept=([12.7, 11.3],),
             explain="都在 11～13 之间：实践中张量并行停在一个节点的 8 路。"),
    Exercise("12.32", "tp2", "number", lambda: float(gp.tp_max_degree(28672, across_nodes=True)),
             rtol=0.05, unit="路", accept=(19.3,), explain="理论上跨两个节点可到约 19 路，实践中常用 16 路。"),
    Exercise("12.33", "ep_f", "number", lambda: 8 * gp.node_type("DGX H100").alpha_node, rtol=0.03,
             unit="（F 的取值）", explain="F 小于约 2 万时，专家并行只能跨一两个节点。"),
    Exercise("12.35", "deepseek", "numbers", lambda: [62914560 / 2048, 2 / (2 - 1)], rtol=0.03,
             unit="token/GPU、倍", explain="每 GPU 3 万多 token，远在门槛之上。"),
    Exercise("12.36", "llama", "numbers",
             lambda: [16 * 2 ** 20 / 16384, float(gp.mp_spanned_threshold(16 * 8))], rtol=0.05,
             unit="token/GPU", accept=([1000, 155],),
             explain="流水线 16 路让门槛降到约 155，远低于每 GPU 约 1k token。"),
    # ---- P6: quiz 5 ----------------------------------------------------------------------------------
    Exercise("12.37", "b200", "numbers",
             lambda: [gp.dp_critical_batch_per_gpu("DGX B200", cross_node=False),
                      gp.dp_critical_batch_per_gpu("DGX B200")],
             rtol=0.03, unit="token/GPU", explain="B200 的算力涨了，节点出口没涨：跨节点门槛升到 5625。"),
    Exercise("12.38", "mem70b", "numbers",
             lambda: [70e9 * 10, gp.min_gpus_for_state(70e9, hardware.get("H100").hbm_bytes)],
             rtol=0.03, unit="字节、GPU", explain="700 GB 至少要 9 颗 80 GB 的 GPU，也就是两个节点。"),
    Exercise("12.38b", "t_train", "number",
             lambda: float(gp.train_time_seconds(70e9, 15e12, 4096, hardware.peak_flops("H100"), 0.45)),
             rtol=0.03, unit="秒", explain="约 3.45e6 秒，也就是 40 天。"),
    Exercise("12.38c", "thr_pp8", "number", _p62c, rtol=0.03, unit="token/GPU",
             explain="流水线 8 路让每个副本跨 8 个节点，门槛降到约 309，低于每 GPU 976 个 token。"),
    Exercise("12.39", "mega_tok", "numbers", _p63, rtol=0.0, unit="token/GPU",
             explain="三个配置每 GPU 分别是 4096、2048、2048 个 token。"),
    Exercise("12.39b", "mega_thr", "numbers", _p63b, rtol=0.05, unit="token/GPU",
             accept=([2472, 1236, 309],), explain="模型并行跨的节点越多，数据并行的门槛越低。"),
    # ---- P7: appendix -----------------------------------------------------------------------------------
    Exercise("12.40", "nvl72", "numbers",
             lambda: [(3.6e12 / 4e11) / (2.25e15 / 9.89e14), gp.dp_critical_batch_per_gpu("GB200 NVL72")],
             rtol=0.05, unit="倍、token/GPU", accept=([4.0, 625],),
             explain="出口 9 倍、算力 2.25 倍：跨节点好了约 4 倍。"),
    Exercise("12.41", "ragged_exact", "function", _ragged_ref, rtol=0.01, sampler=_ragged_sampler,
             unit="比例", explain="Z 大时精确值和近似值几乎一样；Z 小时近似高估很多。"),
]
