"""Chapter 2 exercises (spec 02, P2.1-P2.13; ids "2.N" = spec P2.N, letters for sub-parts).

Expected values are computed from scaling_lib (hardware, topology, chip_internals, roofline);
tests/test_exercises_02.py pins them to the spec's corrected answers.
"""
from __future__ import annotations

from .. import chip_internals as ci, hardware, roofline, topology
from . import Exercise


def _p21():
    v5e = hardware.get("v5e")
    per_mxu = ci.mxu_flops_per_cycle(128) * v5e.clock_hz
    return [ci.mxu_flops_per_cycle(128), per_mxu, ci.chip_peak_flops(1, 4, 128, v5e.clock_hz)]


def _pod(name):
    p = hardware.pod_summary(name)
    return [p.chips, p.hosts, p.cores, p.flops_per_s, p.hbm_bytes]


def _p29():
    v6e = hardware.get("v6e")
    return hardware.peak_flops(v6e) / 1.6e10   # the book's question fixes PCIe at 1.6e10


def _p29b():
    return 1.25 * hardware.peak_flops("v6e") / 1.6e10


def _p210(link):
    return float(roofline.critical_batch("v5e", w="int8", compute="int8", link=link, D=4096, F=16384,
                                         x="int8", out="int8"))


def _p211():
    r = topology.p2p_time(2 * 8 * 128 * 8192, "v5e-4x4", (0, 0), (3, 3))
    return [r.t_first, r.total]


def _p212():
    v5e = hardware.get("v5e")
    nbytes = 16e9
    s = topology.TpuSlice(v5e, (4, 4))
    pcie = nbytes / (s.num_chips * v5e.pcie_bw)
    ici = nbytes * 15 / 16 / (s.ports((0, 0)) * v5e.ici_link_bw_1way)
    hbm = nbytes / v5e.hbm_bw
    math = 2 * 8 * 131072 ** 2 / v5e.peak()
    return [pcie, ici, hbm, math]


def _p213():
    v5p = hardware.get("v5p")
    per_core = ci.vpu_peak_flops(1, 4, v5p.clock_hz)
    return [8 * 128 * 4, per_core, 2 * per_core, v5p.peak() / 2 / per_core]


def _max_hops_sampler(rng):
    return {"N": int(rng.integers(1, 65)), "wrap": bool(rng.integers(0, 2))}


EXERCISES = [
    Exercise("2.1", "mxu", "numbers", _p21, rtol=0.03, unit="FLOPs/周期、FLOPs/s、FLOPs/s",
             explain="一个 MXU 每周期 32,768 FLOPs，四个 MXU 在 1.5 GHz 下正好是 v5e 的 1.97e14。"),
    Exercise("2.2", "pod_flops", "number", lambda: hardware.pod_summary("v5p").flops_per_s,
             rtol=0.05, unit="FLOPs/s", accept=(4.0e18,),
             explain="一个 v5p Pod 约 4 个 bf16 exaFLOPs/s。"),
    Exercise("2.3", "vmem_icrit", "number", lambda: hardware.critical_intensity("v5e", link="vmem"),
             rtol=0.10, unit="FLOPs/字节",
             explain="操作数在 VMEM 里时，批次大小十几个 token 就能让 MXU 忙起来。"),
    Exercise("2.4", "pcie_ratio", "number",
             lambda: hardware.get("v4p").hbm_bw / hardware.get("v4p").pcie_bw, rtol=0.10, unit="倍",
             explain="PCIe 比 HBM 慢近两个数量级：从主机内存喂 MXU 几乎一定带宽受限。"),
    Exercise("2.5", "ici_ratio", "number",
             lambda: hardware.get("v5p").hbm_bw / hardware.get("v5p").ici_link_bw_1way, rtol=0.15,
             unit="倍", accept=(2.5e12 / 9e10,),
             explain="一条 ICI 链路比 HBM 慢约 30 倍，所以跨芯片的流量要精打细算。"),
    Exercise("2.6", "max_hops", "function", lambda N, wrap: topology.max_hops(N, wrap),
             rtol=0.0, sampler=_max_hops_sampler, unit="跳",
             explain="环绕链路把最远距离从 N−1 跳砍到 ⌊N/2⌋ 跳。"),
    Exercise("2.7", "t_decode", "number",
             lambda: ci.decode_latency_floor(200e9, 2, 32, "v4p"), rtol=0.05, unit="秒",
             accept=(4e11 / 32 / 1.23e12,),
             explain="每生成一个 token 都要把全部权重从 HBM 读一遍：这是小批次解码延迟的下界。"),
    Exercise("2.8", "v5e_pod", "numbers", lambda: _pod("v5e"), rtol=0.05,
             unit="芯片、主机、核心、FLOPs/s、字节", accept=([256, 32, 256, 5.1e16, 4.1e12],),
             explain="v5e Pod：256 颗芯片、32 台主机，约 5e16 FLOPs/s、4 TB HBM。"),
    Exercise("2.8b", "v5p_pod", "numbers", lambda: _pod("v5p"), rtol=0.05,
             unit="芯片、主机、核心、FLOPs/s、字节",
             explain="v5p Pod：8960 颗芯片、2240 台主机、17,920 个核心，约 4.1e18 FLOPs/s、860 TB HBM。"),
    Exercise("2.9", "b_pcie", "number", _p29, rtol=0.05, unit="token", accept=(9.2e14 / 1.5e10,),
             explain="门槛是 C/W_pcie，远远超过任何合理的批次大小。"),
    Exercise("2.9b", "d_min", "number", _p29b, rtol=0.05, unit="（D 的取值）",
             explain="强度最多 0.8D，所以 D 要大于 1.25·C/W_pcie（约 7 万）才可能计算受限。"),
    Exercise("2.10", "b_hbm", "number", lambda: _p210("hbm"), rtol=0.04, unit="token",
             accept=(267, 271, 263),
             explain="精确的交点约 259，比渐近的 240 大，因为输出的写回不可忽略。"),
    Exercise("2.10b", "b_vmem", "number", lambda: _p210("vmem"), rtol=0.10, unit="token",
             explain="权重在 VMEM 里时，批次大小约 11 就够了。"),
    Exercise("2.11", "p2p", "numbers", _p211, rtol=0.05, unit="秒、秒",
             accept=([6e-6, 194e-6],),
             explain="延迟和带宽项相加：6 跳只多了 6 µs，主要是带宽项。"),
    Exercise("2.12", "stages", "numbers", _p212, rtol=0.05, unit="秒（PCIe、ICI、HBM、计算）",
             accept=([67e-3, 167e-3, 19.8e-3, 1.4e-3],),
             explain="ICI 这一段最慢：(0,0) 在角上，只有两条进来的链路。"),
    Exercise("2.12b", "t_total", "number", lambda: max(_p212()), rtol=0.2, unit="秒",
             explain="流水化以后总时间由最慢的一段决定，约 0.17～0.2 秒。"),
    Exercise("2.13", "vpu", "numbers", _p213, rtol=0.05,
             unit="FLOPs/周期、FLOPs/s、FLOPs/s、倍",
             explain="VPU 每核心约 7e12 FLOPs/s，比同一核心的 MXU 慢约 30 倍。"),
]
