"""Explorers for chapters 9 and 10: HLO shape decoder, roofline prediction of XLA cost numbers
on different chips, and the collective-matmul timeline.

Book: sec-09-hlo-op, sec-09-op-roofline, sec-10-collective-matmul. Each ``draw_*`` is pure
numpy + matplotlib (< 100 ms; see ``scaling_lib.widgets.time_update``); the ``*_explorer``
functions wire them to controls with ``scaling_lib.widgets.explorer``.
"""
from __future__ import annotations

import numpy as np

from .. import hardware, profiling as pr
from ..units import fmt_time, fmt_num, fmt_bytes
from . import dropdown, explorer, int_slider, log_slider, toggle

__all__ = ["plot_memory_order", "draw_shape", "shape_decoder", "draw_cost", "cost_explorer", "cost_series", "cost_twin",
           "plot_timeline", "draw_collective_matmul", "collective_matmul_explorer", "CHIPS"]

#: chips offered in the explorers (names accepted by ``hardware.get`` plus the v2 core)
CHIPS = ("TPU v2 core", "TPU v5e", "TPU v5p", "TPU v6e", "H100", "B200")


def plot_memory_order(shape, ax=None, title: str | None = None):
    """Draw a ≤2-D HLO shape as a grid: colour = outer tile, number = memory slot; the padding
    the tile adds is hatched. Book: sec-09-tiling."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    sh = pr.parse_hlo_shape(shape)
    if len(sh.dims) not in (1, 2):
        raise ValueError(f"only 1-D or 2-D shapes can be drawn, got {len(sh.dims)}-D {sh}")
    dims = sh.dims if len(sh.dims) == 2 else (1,) + sh.dims
    s2 = pr.HloShape(sh.dtype, dims, None if sh.minor_to_major is None else
                     ((1, 0) if len(sh.dims) == 1 else sh.minor_to_major), sh.tiles, sh.memory_space)
    if dims[0] * dims[1] > 2048:
        raise ValueError(f"{sh} is too large to draw ({dims[0] * dims[1]} elements; limit 2048)")
    pad = pr.padded_shape(s2)
    order = pr.memory_order(s2)
    tile = s2.tiles[0] if s2.tiles else (1, dims[1])
    if ax is None:
        _, ax = plt.subplots(figsize=(min(0.55 * pad[1] + 1, 9), min(0.55 * pad[0] + 0.8, 6)), layout="none")
    cmap = plt.get_cmap("tab20")
    row_major = s2.physical_order == (0, 1)
    rgba = np.ones((pad[0], pad[1], 4))
    rgba[...] = (0.93, 0.93, 0.93, 1.0)
    rr, cc = np.meshgrid(np.arange(dims[0]), np.arange(dims[1]), indexing="ij")
    if row_major:
        t0, t1 = rr // tile[0], cc // tile[-1]
    else:
        t0, t1 = cc // tile[0], rr // tile[-1]
    rgba[:dims[0], :dims[1]] = cmap((t0 * 7 + t1 * 3) % 20)
    ax.imshow(rgba, extent=(0, pad[1], pad[0], 0), interpolation="nearest")
    pad_cells = [[(c, r), (c + 1, r), (c + 1, r + 1), (c, r + 1)]
                 for r in range(pad[0]) for c in range(pad[1]) if r >= dims[0] or c >= dims[1]]
    if pad_cells:
        ax.add_collection(PolyCollection(pad_cells, facecolors="none", edgecolors="#bbbbbb",
                                         hatch="//", linewidths=0.5))
    for r in range(dims[0]):
        for c in range(dims[1]):
            ax.text(c + 0.5, r + 0.5, str(order[r, c]), ha="center", va="center", fontsize=8)
    ax.hlines(np.arange(pad[0] + 1), 0, pad[1], colors="white", linewidth=1)
    ax.vlines(np.arange(pad[1] + 1), 0, pad[0], colors="white", linewidth=1)
    ax.set_xlim(0, pad[1])
    ax.set_ylim(pad[0], 0)
    ax.set_aspect("equal")
    ax.set_axis_off()   # tick labels cost more than the whole grid; rows/cols are implicit
    ax.set_title(title or f"{sh}：数字 = 内存中的位置，阴影 = 填充", fontsize=9)
    return ax


def draw_shape(shape: str = "bf16[4,8]{1,0:T(2,4)(2,1)}"):
    """Print what an HLO shape string says and draw it if it is small enough."""
    import matplotlib.pyplot as plt

    sh = pr.parse_hlo_shape(shape.strip())
    print(f"元素类型 {sh.dtype}（每个元素 {fmt_num(sh.bytes_per_element)} 字节），逻辑形状 {list(sh.dims)}")
    print(f"物理顺序（从主到次）：{list(sh.physical_order)}；存储空间：{sh.memory}")
    if sh.tiles:
        print(f"分块：{' 再 '.join(str(t) for t in sh.tiles)}；按外层块填充后 {list(pr.padded_shape(sh))}")
    print(f"占用 {fmt_bytes(sh.nbytes * pr.layout_overhead(sh))}（逻辑 {fmt_bytes(sh.nbytes)}），"
          f"填充开销 {pr.layout_overhead(sh):.3g}×")
    if len(sh.dims) <= 2 and np.prod(pr.padded_shape(sh)) <= 512:
        plot_memory_order(sh)
        plt.show()


def shape_decoder(initial: str = "bf16[4,8]{1,0:T(2,4)(2,1)}"):
    """Text box for an HLO shape → its fields, padding and (small shapes) the memory order."""
    import ipywidgets as w

    box = w.Text(value=initial, description="HLO 形状", continuous_update=False,
                 style={"description_width": "initial"}, layout=w.Layout(width="460px"))
    return explorer({"shape": box}, draw_shape, columns=1)


def cost_series(program: str, chip: str, programs: dict) -> list:
    """The three roofline clocks of one program (XLA's per-device numbers) on ``chip``, in ms, as
    a horizontal bar trace (the binding clock in red): one definition for ``draw_cost`` (widget)
    and ``cost_twin`` (plotly, website)."""
    if program not in programs:
        raise ValueError(f"unknown program {program!r}; choose one of {list(programs)}")
    flops, hbm, ici = programs[program]
    c = pr._chip(chip)
    ot = pr.expected_op_time(flops, hbm, ici if c.ici_link_bw_1way else 0.0, c)
    vals = [ot.t_flops * 1e3, ot.t_hbm * 1e3, ot.t_ici * 1e3]
    return [{"type": "bar", "orientation": "h", "y": ["计算 FLOPs/C", "HBM 字节/W", "ICI 字节/W"], "x": vals,
             "name": f"{ot.chip}：{ot.bottleneck}，估计 {fmt_time(ot.t)}",
             "marker": {"color": ["#d62728" if v == max(vals) else "#7f7f7f" for v in vals]}}]


def draw_cost(program: str, chip: str, measured_ms: float, programs: dict):
    """Bars of the three roofline clocks of one program (XLA's per-device numbers) on ``chip``."""
    import matplotlib.pyplot as plt
    from . import plot_traces

    traces = cost_series(program, chip, programs)
    flops, hbm, ici = programs[program]
    c = pr._chip(chip)
    ot = pr.expected_op_time(flops, hbm, ici if c.ici_link_bw_1way else 0.0, c)
    fig, ax = plt.subplots(figsize=(7, 2.6), layout="none")
    plot_traces(ax, traces)
    if measured_ms > 0:
        ax.axvline(measured_ms, color="#1f77b4", ls="--", label=f"实测 {measured_ms:.3g} ms")
        ax.legend(loc="lower right")
    ax.set_xlabel("耗时（ms）")
    head = f"{program} 在 {ot.chip} 上：{ot.bottleneck}，估计 {fmt_time(ot.t)}"
    if measured_ms > 0:
        head += f"，达到 Roofline 的 {ot.achieved(measured_ms * 1e-3):.0%}"
    ax.set_title(head, fontsize=9)
    fig.subplots_adjust(left=0.2, right=0.97, bottom=0.22, top=0.85)
    plt.show()


def cost_twin(programs: dict, program: str | None = None, chips=None):
    """Kernel-free twin of ``cost_explorer``: one program's clocks, one slider step per chip."""
    from . import twin
    if not programs:
        raise ValueError("programs must hold at least one (flops, hbm_bytes, ici_bytes) entry")
    program = program or next(iter(programs))
    chips = list(chips or CHIPS)
    return twin(cost_series, "chip", chips, fixed={"program": program, "programs": programs},
                title=f"{program}：三只时钟", slider_label="芯片", legend=True,
                active=chips.index("TPU v5e") if "TPU v5e" in chips else 0,
                xaxis={"title": {"text": "耗时（ms）"}}, yaxis={"autorange": "reversed"}, height=360)


def cost_explorer(programs: dict, measured_ms: float = 0.0):
    """``programs``: {name: (flops, hbm_bytes, ici_bytes)} per device, e.g. from
    ``CompileReport.flops/bytes_accessed/ici_bytes``. Dropdowns pick the program and the chip."""
    if not programs:
        raise ValueError("programs must hold at least one (flops, hbm_bytes, ici_bytes) entry")
    first = next(iter(programs))
    controls = {"program": dropdown(list(programs), first, "程序"),
                "chip": dropdown(list(CHIPS), "TPU v5e", "芯片"),
                "measured_ms": log_slider(1.0, -3, 3, 0.25, "实测耗时（ms）")}
    return explorer(controls, lambda **kw: draw_cost(programs=programs, **kw))


def plot_timeline(bars, ax, rows: int | None = None, offset: int = 0):
    """Gantt bars from ``profiling.collective_matmul_timeline`` (times drawn in µs): one
    PolyCollection per kind, so redrawing stays well under 100 ms. Returns the largest time."""
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch

    colours = {"compute": "#1f77b4", "ppermute": "#ff7f0e", "allgather": "#d62728"}
    labels = {"compute": "计算", "ppermute": "ppermute", "allgather": "AllGather"}
    t_max = 0.0
    for kind in ("allgather", "compute", "ppermute"):
        sel = [b for b in bars if b[0] == kind and (rows is None or b[1] < rows)]
        if not sel:
            continue
        h = 0.35 if kind == "ppermute" else 0.7
        verts = []
        for _, dev, t0, t1 in sel:
            yc = offset + dev + (0.22 if kind == "ppermute" else 0.0)
            x0, x1 = t0 * 1e6, t1 * 1e6
            verts.append([(x0, yc - h / 2), (x1, yc - h / 2), (x1, yc + h / 2), (x0, yc + h / 2)])
            t_max = max(t_max, x1)
        ax.add_collection(PolyCollection(verts, facecolors=colours[kind], edgecolors="white",
                                         linewidths=0.5))
        ax._timeline_handles = getattr(ax, "_timeline_handles", {})
        ax._timeline_handles[labels[kind]] = Patch(color=colours[kind], label=labels[kind])
    return t_max


def draw_collective_matmul(B: int = 1024, D: int = 2048, F: int = 8192, X: int = 2, Y: int = 4,
                           chip: str = "TPU v5e", bidirectional: bool = False, wrap: bool = True):
    """Two Gantt charts (naive AllGather-then-matmul vs ring collective matmul) and the totals.
    ``wrap=False``: the Y axis is a line without wraparound (``profiling.collective_matmul_time``)."""
    import matplotlib.pyplot as plt

    m = pr.collective_matmul_time(B, D, F, X, Y, chip, bidirectional=bidirectional, wrap=wrap)
    rows = min(Y, 4)
    fig, ax = plt.subplots(figsize=(8, 0.5 + 0.55 * 2 * rows), layout="none")
    t1 = plot_timeline(pr.collective_matmul_timeline(B, D, F, X, Y, chip, mode="naive",
                                                     bidirectional=bidirectional, wrap=wrap),
                       ax, rows, rows + 1)
    t2 = plot_timeline(pr.collective_matmul_timeline(B, D, F, X, Y, chip,
                                                     bidirectional=bidirectional, wrap=wrap),
                       ax, rows, 0)
    ax.set_xlim(0, 1.03 * max(t1, t2))
    ax.set_ylim(-0.6, 2 * rows + 0.6)
    ax.set_yticks([])    # row labels as plain text: tick machinery is the slow part of a redraw
    for i in range(rows):
        ax.text(-0.01, i, f"集合 设备{i}", transform=ax.get_yaxis_transform(), ha="right",
                va="center", fontsize=8)
        ax.text(-0.01, rows + 1 + i, f"朴素 设备{i}", transform=ax.get_yaxis_transform(),
                ha="right", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("时间（µs）")
    badge = "通信被藏住" if m.hidden else "通信露在外面"
    ax.set_title(f"朴素 {fmt_time(m.naive)}，集合矩阵乘法 {fmt_time(m.collective)}，"
                 f"无通信下限 {fmt_time(m.no_comm)}：{badge}", fontsize=9)
    ax.legend(handles=list(ax._timeline_handles.values()), loc="lower right")
    fig.subplots_adjust(left=0.16, right=0.98, bottom=0.16, top=0.88)
    plt.show()


def collective_matmul_explorer():
    """Sliders for B, D, F, X, Y, chip and a bidirectional toggle → timelines and totals."""
    controls = {"B": log_slider(1024, 7, 14, 1, "批次 B", base=2, fmt=".0f"),
                "D": log_slider(2048, 9, 15, 1, "D", base=2, fmt=".0f"),
                "F": log_slider(8192, 10, 17, 1, "F", base=2, fmt=".0f"),
                "X": int_slider(2, 1, 8, 1, "X（数据轴）"),
                "Y": int_slider(4, 2, 16, 1, "Y（环的长度 n）"),
                "chip": dropdown([c for c in CHIPS if c.startswith("TPU v5") or c.startswith("TPU v6")],
                                 "TPU v5e", "芯片"),
                "bidirectional": toggle([("单向", False), ("双向", True)], False, "环"),
                "wrap": toggle([("有环绕（环）", True), ("无环绕（线）", False)], True, "Y 轴")}

    def draw(B, D, F, **kw):
        draw_collective_matmul(int(round(B)), int(round(D)), int(round(F)), **kw)
    return explorer(controls, draw)
