"""Chapter 1 explorers: the roofline of a chip with one operation on it, and the critical batch.

Book: sec-01-roofline-plot. ``draw_roofline`` and ``draw_batch`` are pure numpy + matplotlib and
are what the widgets call; tests time them (< 100 ms).
"""
from __future__ import annotations

import numpy as np

from .. import hardware, roofline
from ..units import fmt_time, fmt_num

__all__ = ["DTYPE_MODES", "op_result", "draw_roofline", "roofline_explorer", "draw_batch",
           "batch_explorer", "batch_series", "batch_twin"]

#: dtype combinations: label -> (x, w, out, compute)
DTYPE_MODES = {
    "bf16（全部）": ("bf16", "bf16", "bf16", "bf16"),
    "int8 权重 + bf16 运算": ("bf16", "int8", "bf16", "bf16"),
    "int8（全部）": ("int8", "int8", "int8", "int8"),
}
LINKS = {"HBM": "hbm", "VMEM": "vmem", "ICI（单向单链路）": "ici_1way", "PCIe": "pcie"}
OPS = {"矩阵乘法 X[B,D]·W[D,F]": "matmul", "点积（长度 N=D·F）": "dot",
       "逐样本权重 X[B,D]·W[B,D,F]": "per_example_matmul"}


def op_result(chip, op: str, mode: str, link: str, B: int, D: int, F: int) -> roofline.RooflineResult:
    """The RooflineResult of the chosen op; raises ValueError for impossible combinations."""
    chip = hardware.get(chip)
    if mode not in DTYPE_MODES:
        raise ValueError(f"unknown dtype mode {mode!r}; allowed: {', '.join(DTYPE_MODES)}")
    x, w, out, compute = DTYPE_MODES[mode]
    if op == "matmul":
        flops = roofline.matmul_flops(B, D, F)
        nbytes = roofline.matmul_bytes(B, D, F, x, w, out)
    elif op == "dot":
        n = D * F
        flops = roofline.dot_flops(n)
        nbytes = roofline.dot_bytes(n, w)
    elif op == "per_example_matmul":
        from ..units import dtype_bytes
        flops = roofline.matmul_flops(B, D, F)
        nbytes = dtype_bytes(x) * B * D + dtype_bytes(w) * B * D * F + dtype_bytes(out) * B * F
    else:
        raise ValueError(f"unknown op {op!r}; allowed: {', '.join(OPS.values())}")
    return roofline.roofline(flops, nbytes, chip, dtype=compute, link=link)


def draw_roofline(chip="TPU v5e", op="matmul", mode="bf16（全部）", link="hbm", B=256, D=8192,
                  F=8192, ax=None):
    """Roofline of ``chip`` over ``link`` with the op's point and a text box of its times."""
    import matplotlib.pyplot as plt

    r = op_result(chip, op, mode, link, int(B), int(D), int(F))
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    imin, imax = 0.1, 1e5
    xs = np.logspace(-1, 5, 120)
    ax.plot(xs, np.minimum(r.peak_flops, xs * r.bandwidth), lw=2, color="#0072B2",
            label=f"{r.chip}，{link.upper()}")
    ax.axvline(r.critical_intensity, color="0.5", ls=":", lw=1)
    y = min(r.peak_flops, r.intensity * r.bandwidth)
    ax.scatter([r.intensity], [y], color="#D55E00", zorder=5, s=40, label="这个操作")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(imin, imax)
    ax.set_ylim(r.peak_flops * 1e-5, r.peak_flops * 3)
    ax.set_xlabel("算术强度（FLOPs/字节）")
    ax.set_ylabel("可达算力（FLOPs/s）")
    txt = (f"T_math = {fmt_time(r.t_math)}\nT_comms = {fmt_time(r.t_comms)}\n"
           f"下界 {fmt_time(r.t_lower)}，上界 {fmt_time(r.t_upper)}\n"
           f"强度 {fmt_num(r.intensity)}，临界 {fmt_num(r.critical_intensity)}\n"
           f"利用率 {r.utilisation:.0%}：{r.bottleneck}")
    ax.text(0.02, 0.97, txt, transform=ax.transAxes, va="top", fontsize=8.5,
            bbox={"boxstyle": "round", "fc": "white", "ec": "0.7"})
    ax.legend(loc="lower right")
    return r


def roofline_explorer(chip="TPU v5e"):
    """The chapter 1 widget: chip, op, dtypes, link and sizes -> the point on the roofline."""
    import matplotlib.pyplot as plt
    from . import dropdown, explorer, int_slider

    chips = [c for c in hardware.names()]
    controls = {
        "chip": dropdown(chips, hardware.get(chip).name, "芯片"),
        "op": dropdown(list(OPS.items()), "matmul", "操作"),
        "mode": dropdown(list(DTYPE_MODES), "bf16（全部）", "数据类型"),
        "link": dropdown(list(LINKS.items()), "hbm", "带宽来源"),
        "B": int_slider(256, 1, 4096, 1, "批次大小 B（token）"),
        "D": int_slider(8192, 256, 32768, 256, "D"),
        "F": int_slider(8192, 256, 65536, 256, "F"),
    }

    def draw(**kw):
        draw_roofline(**kw)
        plt.show()

    return explorer(controls, draw)


def batch_series(chip="TPU v5e", mode="bf16（全部）", D=4096, F=4096, B_max=2048) -> list:
    """T_math, T_comms (HBM) and their max against B for X[B,D]·W[D,F], plus the exact crossover
    B* and the asymptotic rule, as trace dicts (µs). One definition for ``draw_batch`` (widget)
    and ``batch_twin`` (plotly, website)."""
    chip = hardware.get(chip)
    if mode not in DTYPE_MODES:
        raise ValueError(f"unknown dtype mode {mode!r}; allowed: {', '.join(DTYPE_MODES)}")
    x, w, out, compute = DTYPE_MODES[mode]
    Bs = np.unique(np.geomspace(1, int(B_max), 200).astype(int))
    tm = roofline.t_math(roofline.matmul_flops(Bs, D, F), chip.peak(compute)) * 1e6
    tc = roofline.t_comms(roofline.matmul_bytes(Bs, D, F, x, w, out), chip.hbm_bw) * 1e6
    bstar = roofline.critical_batch(chip, w=w, compute=compute, D=D, F=F, x=x, out=out)
    brule = roofline.critical_batch(chip, w=w, compute=compute)
    lo, hi = float(min(tm.min(), tc.min())), float(max(tm.max(), tc.max()))
    traces = [{"x": Bs, "y": tm, "name": "T_math", "mode": "lines", "line": {"color": "#0072B2"}},
              {"x": Bs, "y": tc, "name": "T_comms（HBM）", "mode": "lines", "line": {"color": "#D55E00"}},
              {"x": Bs, "y": np.maximum(tm, tc), "name": "下界 max", "mode": "lines",
               "line": {"color": "#000000", "dash": "dash", "width": 1.3}}]
    if np.isfinite(bstar):
        traces.append({"x": [bstar, bstar], "y": [lo, hi], "name": f"精确交点 B* ≈ {bstar:.0f}",
                       "mode": "lines", "line": {"color": "#009E73", "width": 2}})
    traces.append({"x": [brule, brule], "y": [lo, hi], "name": f"渐近规则 ≈ {brule:.0f}",
                   "mode": "lines", "line": {"color": "#999999", "dash": "dot", "width": 1.3}})
    return traces


def draw_batch(chip="TPU v5e", mode="bf16（全部）", D=4096, F=4096, B_max=2048, ax=None):
    """T_math and T_comms of X[B,D]·W[D,F] against B with the exact crossover B*."""
    import matplotlib.pyplot as plt
    from . import plot_traces

    c = hardware.get(chip)
    x, w, out, compute = DTYPE_MODES[mode]
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    plot_traces(ax, batch_series(chip, mode, D, F, B_max))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("批次大小 B（token）")
    ax.set_ylabel("耗时（µs）")
    ax.set_title(f"{c.name}：X[B,{D}]·W[{D},{F}]")
    ax.legend()
    return roofline.critical_batch(c, w=w, compute=compute, D=D, F=F, x=x, out=out)


def batch_twin(chips=("TPU v5e", "TPU v5p", "TPU v6e", "H100", "B200"), mode="bf16（全部）", D=4096,
               F=4096, B_max=2048):
    """Kernel-free twin of ``batch_explorer``: the same curves, one slider step per chip."""
    from . import twin
    names = [hardware.get(c).name for c in chips]
    return twin(batch_series, "chip", names, fixed={"mode": mode, "D": D, "F": F, "B_max": B_max},
                title=f"X[B,{D}]·W[{D},{F}] 的两只时钟", slider_label="芯片",
                xaxis={"title": {"text": "批次大小 B（token）"}, "type": "log"},
                yaxis={"title": {"text": "耗时（µs）"}, "type": "log"})


def batch_explorer(chip="TPU v5e"):
    """Critical-batch widget: chip, dtypes, D, F -> T_math and T_comms against B."""
    import matplotlib.pyplot as plt
    from . import dropdown, explorer, int_slider

    controls = {
        "chip": dropdown(hardware.names(), hardware.get(chip).name, "芯片"),
        "mode": dropdown(list(DTYPE_MODES), "bf16（全部）", "数据类型"),
        "D": int_slider(4096, 256, 32768, 256, "D"),
        "F": int_slider(4096, 256, 65536, 256, "F"),
    }

    def draw(**kw):
        draw_batch(**kw)
        plt.show()

    return explorer(controls, draw)
