"""Collective explorer (chapters 2, 3, 12): pick a collective, an array size and a topology; see
time, regime and effective bandwidth, and the time-vs-size curve with both regimes.

Book: sec-02-collectives, sec-12-collectives. ``draw_collective`` is pure numpy + matplotlib
(< 100 ms) and is what the widget calls; ``collective_slider_figure`` is the kernel-free twin.
"""
from __future__ import annotations

import numpy as np

from .. import collectives as C, topology as T
from ..units import fmt_bw, fmt_bytes, fmt_time

__all__ = ["TOPOLOGIES", "KIND_LABELS", "draw_collective", "collective_explorer",
           "collective_slider_figure", "sweep", "SLICES", "route", "draw_slice", "slice_explorer", "FAMILIES", "family_topology",
           "draw_collective_sized", "collective_size_explorer"]

#: label -> (topology preset, axes)
TOPOLOGIES = {
    "v5e 4×4（无环绕），X 轴": ("v5e-4x4", ("X",)),
    "v5e 16×16 整个 Pod，X 轴": ("v5e-16x16", ("X",)),
    "v5e 16×16 整个 Pod，X+Y 两轴": ("v5e-16x16", ("X", "Y")),
    "v5p 4×4×4 立方体，X 轴": ("v5p-4x4x4", ("X",)),
    "v5p 4×4×4 立方体，三轴": ("v5p-4x4x4", ("X", "Y", "Z")),
    "两个 v5e Pod（DCN）": ("v5e-2pods", ("X", "Y", "DCN")),
    "8×H100 NVLink 节点": ("h100-node", ("X",)),
    "8×H100 节点 + SHARP": ("h100-node-sharp", ("X",)),
    "GB200 NVL72 机架": ("gb200-nvl72", ("X",)),
    "H100 SuperPOD 1024 GPU": ("h100-superpod", ("X",)),
}
KIND_LABELS = {"AllGather": "all_gather", "ReduceScatter": "reduce_scatter",
               "AllReduce": "all_reduce", "AllToAll": "all_to_all"}
SIZES = np.logspace(2, 11, 91)


def sweep(kind: str, topology: str, sizes=SIZES):
    """CollectiveResult over an array of sizes for a TOPOLOGIES label."""
    if topology not in TOPOLOGIES:
        raise ValueError(f"unknown topology {topology!r}; allowed: {', '.join(TOPOLOGIES)}")
    name, axes = TOPOLOGIES[topology]
    return C.collective_time(kind, sizes, name, axes)


def draw_collective(kind="all_gather", topology="v5e 16×16 整个 Pod，X 轴", nbytes=1e8, ax=None):
    """Time vs array size (log-log) with the bandwidth and latency terms, the chosen size marked,
    and a text box with time, regime and effective bandwidth."""
    import matplotlib.pyplot as plt

    if kind in KIND_LABELS:
        kind = KIND_LABELS[kind]
    r = sweep(kind, topology)
    one = sweep(kind, topology, float(nbytes))
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.loglog(SIZES, r.total, lw=2.2, color="#0072B2", label="模型总时间")
    ax.loglog(SIZES, r.t_bandwidth, ls="--", color="#009E73", label="带宽项")
    ax.loglog(SIZES, np.broadcast_to(r.t_latency, SIZES.shape), ls=":", color="#D55E00",
              label="延迟项")
    x = C.crossover_bytes(kind, *TOPOLOGIES[topology])
    if SIZES[0] < x < SIZES[-1]:
        ax.axvline(x, color="0.5", lw=0.8)
        ax.text(x * 1.15, r.total.min() * 1.3, f"分界 {fmt_bytes(x)}", fontsize=8)
    ax.plot([one.nbytes], [one.total], "o", color="#CC79A7", ms=8, zorder=5)
    ax.set_xlabel("数组大小（字节）")
    ax.set_ylabel("时间（秒）")
    ax.set_title(f"{C.KIND_ZH[kind]}：{one.topology}", fontsize=9)
    ax.legend(loc="upper left")
    ax.text(0.98, 0.04, f"{fmt_bytes(one.nbytes)} → {fmt_time(one.total)}\n{one.regime}，"
            f"有效带宽 {fmt_bw(one.effective_bandwidth)}", transform=ax.transAxes, ha="right",
            va="bottom", fontsize=8, bbox={"fc": "white", "ec": "0.8"})
    plt.show()
    return one


def collective_explorer():
    """The ipywidgets explorer (needs a kernel)."""
    from . import dropdown, explorer, log_slider
    controls = {"kind": dropdown(list(KIND_LABELS.items()), "all_gather", "集合操作"),
                "topology": dropdown(list(TOPOLOGIES), "v5e 16×16 整个 Pod，X 轴", "拓扑"),
                "nbytes": log_slider(1e8, 2, 11, 0.25, "数组字节数")}
    return explorer(controls, draw_collective)


def collective_slider_figure(kind: str = "all_reduce"):
    """Plotly twin for the static page: time vs size, one slider step per topology."""
    from ..interactive import slider_figure
    steps = []
    for label in TOPOLOGIES:
        r = sweep(kind, label)
        steps.append((label, [
            {"x": SIZES, "y": r.total, "name": "总时间", "mode": "lines", "line": {"width": 3}},
            {"x": SIZES, "y": r.t_bandwidth, "name": "带宽项", "mode": "lines", "line": {"dash": "dash"}},
            {"x": SIZES, "y": np.broadcast_to(r.t_latency, SIZES.shape), "name": "延迟项",
             "mode": "lines", "line": {"dash": "dot"}},
        ]))
    return slider_figure(steps, title=f"{C.KIND_ZH[C._kind(kind)]} 时间随数组大小的变化",
                         slider_label="拓扑", active=1,
                         xaxis={"title": {"text": "数组大小（字节）"}, "type": "log"},
                         yaxis={"title": {"text": "时间（秒）"}, "type": "log"})


# ---- slice & hop explorer (chapter 2) ---------------------------------------------------------
SLICES = {"v5e 4×4": ("v5e", (4, 4)), "v5e 8×16": ("v5e", (8, 16)), "v5e 16×16": ("v5e", (16, 16)),
          "v6e 8×8": ("v6e", (8, 8))}


def route(topo, src, dst) -> list:
    """A shortest path from src to dst on a 2D torus: X first, then Y, each the short way round."""
    path = [tuple(src)]
    cur = list(src)
    for i, n in enumerate(topo.shape):
        d = (dst[i] - cur[i]) % n if topo.wraps[i] else dst[i] - cur[i]
        if topo.wraps[i] and d > n // 2:
            d -= n
        step = 1 if d > 0 else -1
        for _ in range(abs(d)):
            cur[i] = (cur[i] + step) % n
            path.append(tuple(cur))
    return path


def draw_slice(slice_name="v5e 4×4", dst_x=3, dst_y=3, nbytes=16.8e6):
    """Draw a slice with its wrap links, the route from (0, 0) to (dst_x, dst_y) and the
    point-to-point time (G15)."""
    import matplotlib.pyplot as plt
    if slice_name not in SLICES:
        raise ValueError(f"unknown slice {slice_name!r}; allowed: {', '.join(SLICES)}")
    chip, shape = SLICES[slice_name]
    s = T.TpuSlice(chip, shape)
    dst = (min(int(dst_x), shape[0] - 1), min(int(dst_y), shape[1] - 1))
    r = T.p2p_time(float(nbytes), s, (0, 0), dst)
    fig, ax = plt.subplots(figsize=(5.6, 4.2))
    s.draw(ax=ax, path=route(s, (0, 0), dst))
    ax.set_xlabel(f"(0,0) → {dst}：{r.hops} 跳，{r.ports} 个端口；首字节 {fmt_time(r.t_first)}，"
                  f"共 {fmt_time(r.total)}", fontsize=8)
    plt.show()
    return r


def slice_explorer():
    """ipywidgets explorer for ``draw_slice``."""
    from . import dropdown, explorer, int_slider, log_slider
    return explorer({"slice_name": dropdown(list(SLICES), "v5e 4×4", "切片"),
                     "dst_x": int_slider(3, 0, 15, 1, "目的地 x"),
                     "dst_y": int_slider(3, 0, 15, 1, "目的地 y"),
                     "nbytes": log_slider(1.6e7, 3, 10, 0.25, "字节数")}, draw_slice)


# ---- explorer with a topology size control ------------------------------------------------------
FAMILIES = ("TPU v5e：一根轴", "TPU v5p：整个立方体（三轴）", "H100 集群（胖树）",
            "H100 集群 + SHARP", "GB200 NVL72 集群")


def family_topology(family: str, size: int):
    """(topology, axes, n_gpus, label) for a family and a size index 1..7 (doubling steps)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; allowed: {', '.join(FAMILIES)}")
    k = int(size)
    if not 1 <= k <= 7:
        raise ValueError(f"size must be 1..7, got {size!r}")
    if family == FAMILIES[0]:
        n = 2 ** min(k, 4)
        return T.TpuSlice("v5e", (n, 16)), ("X",), None, f"v5e 轴长 {n}"
    if family == FAMILIES[1]:
        n = 2 ** min(k, 4)
        return T.TpuSlice("v5p", (n, n, n)), ("X", "Y", "Z"), None, f"v5p {n}×{n}×{n}"
    if family in (FAMILIES[2], FAMILIES[3]):
        n = 8 * 2 ** (k - 1)
        return T.dgx_h100_superpod(sharp=family == FAMILIES[3]), ("X",), n, f"{n} 颗 H100"
    n = 72 * 2 ** min(k - 1, 3)
    return T.nvl72_superpod(), ("X",), n, f"{n} 颗 GB200"


def draw_collective_sized(kind="all_reduce", family=FAMILIES[0], size=4, nbytes=1e8, inner=1):
    """Like ``draw_collective`` but the topology is a family plus a size (slider). ``inner``:
    GPU trees only, the array is already sharded that many ways over an inner axis (F22)."""
    import matplotlib.pyplot as plt

    if kind in KIND_LABELS:
        kind = KIND_LABELS[kind]
    topo, axes, n, label = family_topology(family, size)
    kw = {"n_gpus": n, "inner": int(inner)} if n else {}
    if int(inner) > 1 and not n:
        raise ValueError("内层分片（inner）只对 GPU 胖树有意义；TPU 轴请把数组大小直接除以分片数")
    if kind == "all_to_all" and int(inner) > 1:
        raise ValueError("内层分片只用于 AllGather/ReduceScatter/AllReduce")
    if kind == "all_to_all":
        kw.pop("inner", None)
    r = C.collective_time(kind, SIZES, topo, axes, **kw)
    one = C.collective_time(kind, float(nbytes), topo, axes, **kw)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.loglog(SIZES, r.total, lw=2.2, color="#0072B2", label="模型总时间")
    ax.loglog(SIZES, r.t_bandwidth, ls="--", color="#009E73", label="带宽项")
    ax.loglog(SIZES, np.broadcast_to(r.t_latency, SIZES.shape), ls=":", color="#D55E00", label="延迟项")
    ax.plot([one.nbytes], [one.total], "o", color="#CC79A7", ms=8, zorder=5)
    ax.set_xlabel("数组大小（字节）")
    ax.set_ylabel("时间（秒）")
    ax.set_title(f"{C.KIND_ZH[kind]}：{label}（{one.n_devices} 个设备"
                 + (f"，内层已分片 {int(inner)} 路" if int(inner) > 1 else "") + "）", fontsize=9)
    ax.legend(loc="upper left")
    extra = f"\n瓶颈层：{one.bottleneck}" if one.bottleneck else ""
    ax.text(0.98, 0.04, f"{fmt_bytes(one.nbytes)} → {fmt_time(one.total)}\n{one.regime}，"
            f"有效带宽 {fmt_bw(one.effective_bandwidth)}{extra}", transform=ax.transAxes,
            ha="right", va="bottom", fontsize=8, bbox={"fc": "white", "ec": "0.8"})
    plt.show()
    return one


def collective_size_explorer():
    """ipywidgets explorer: collective, topology family, its size, array size."""
    from . import dropdown, explorer, int_slider, log_slider
    return explorer({"kind": dropdown(list(KIND_LABELS.items()), "all_reduce", "集合操作"),
                     "family": dropdown(list(FAMILIES), FAMILIES[0], "拓扑"),
                     "size": int_slider(4, 1, 7, 1, "规模（每格翻倍）"),
                     "nbytes": log_slider(1e8, 2, 11, 0.25, "数组字节数"),
                     "inner": dropdown([1, 2, 4, 8, 16, 32, 64], 1, "内层已分片 Y（GPU）")},
                    draw_collective_sized)
