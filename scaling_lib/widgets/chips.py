"""Chip comparison (chapters 2 and 12): any two catalogue chips side by side — peaks, bandwidths,
critical intensities per link, memories — plus a bandwidth-ladder bar chart.

Book: sec-02-specs, sec-02-vs-gpu. ``draw_compare`` is pure numpy + matplotlib (< 100 ms).
"""
from __future__ import annotations

import numpy as np

from .. import hardware
from ..units import fmt_bytes, fmt_num

__all__ = ["LINKS", "ladder", "compare_rows", "draw_compare", "chip_compare_explorer",
           "ladder_slider_figure"]

#: ladder rungs: label -> function(chip) -> bytes/s (0 = not in the catalogue)
LINKS = {
    "VMEM": lambda c: c.vmem_bw,
    "HBM": lambda c: c.hbm_bw,
    "ICI 每芯片出口": lambda c: c.ici_link_bw_1way * c.ici_links,
    "ICI 单链路双向": lambda c: c.ici_bw_bidi,
    "NVLink 每 GPU": lambda c: c.nvlink_bw_1way,
    "PCIe": lambda c: c.pcie_bw,
    "DCN/网卡 每芯片": lambda c: c.dcn_bw_1way,
}


def ladder(chip) -> dict:
    """{rung: bytes/s} for the links the catalogue has for ``chip``."""
    c = hardware.get(chip)
    return {k: f(c) for k, f in LINKS.items() if f(c)}


def compare_rows(a, b) -> list:
    """Rows (quantity, value a, value b, ratio b/a) for two chips; '—' where not given."""
    ca, cb = hardware.get(a), hardware.get(b)

    def val(c, f):
        try:
            v = f(c)
        except ValueError:
            return None
        return v if v else None

    qs = [("bf16 峰值（FLOPs/s）", lambda c: c.peak("bf16")),
          ("8 位峰值（OPs/s）", lambda c: max((c.flops_per_s.get(k, 0) for k in ("int8", "fp8")),
                                            default=0)),
          ("HBM 容量（字节）", lambda c: c.hbm_bytes), ("HBM 带宽（B/s）", lambda c: c.hbm_bw),
          ("临界算术强度 C/W_hbm", lambda c: c.critical_intensity()),
          ("片间带宽（每芯片出口，B/s）", lambda c: c.ici_link_bw_1way * c.ici_links or c.nvlink_bw_1way),
          ("C / 片间带宽", lambda c: c.peak() / (c.ici_link_bw_1way * c.ici_links or c.nvlink_bw_1way)),
          ("跨节点/DCN 每芯片（B/s）", lambda c: c.dcn_bw_1way),
          ("C / DCN 每芯片", lambda c: c.peak() / c.dcn_bw_1way),
          ("片上快速内存（字节）", lambda c: c.vmem_bytes or c.smem_bytes_per_sm * c.cores),
          ("价格（美元/小时）", lambda c: c.price_per_hour)]
    rows = []
    for q, f in qs:
        va, vb = val(ca, f), val(cb, f)
        ratio = vb / va if (va and vb) else None
        rows.append((q, va, vb, ratio))
    return rows


def draw_compare(a="TPU v5p", b="H100", ax=None):
    """Bandwidth ladders of two chips (log bars) and a printed comparison table."""
    import matplotlib.pyplot as plt

    ca, cb = hardware.get(a), hardware.get(b)
    la, lb = ladder(ca), ladder(cb)
    keys = [k for k in LINKS if k in la or k in lb]
    if ax is None:
        _, ax = plt.subplots(figsize=(6.8, 3.6))
    y = np.arange(len(keys))
    ax.barh(y - 0.2, [la.get(k, 0) or np.nan for k in keys], height=0.4, color="#0072B2",
            label=ca.name)
    ax.barh(y + 0.2, [lb.get(k, 0) or np.nan for k in keys], height=0.4, color="#D55E00",
            label=cb.name)
    ax.set_yticks(y)
    ax.set_yticklabels(keys)
    ax.set_xscale("log")
    ax.set_xlabel("带宽（B/s，每方向）")
    ax.invert_yaxis()
    ax.legend(loc="lower right")
    ax.set_title(f"带宽阶梯：{ca.name} 对比 {cb.name}", fontsize=9)
    plt.show()
    from IPython.display import display
    from ..book import table
    fmt = lambda v: "—" if v is None else fmt_num(v)
    display(table([(q, fmt(va), fmt(vb), fmt(r)) for q, va, vb, r in compare_rows(ca, cb)],
                  header=["", ca.name, cb.name, "后/前"]))


def chip_compare_explorer():
    """The ipywidgets explorer: two dropdowns of catalogue chips."""
    from . import dropdown, explorer
    names = hardware.names()
    return explorer({"a": dropdown(names, "TPU v5p", "芯片 A"),
                     "b": dropdown(names, "H100", "芯片 B")}, draw_compare)


def ladder_slider_figure():
    """Kernel-free twin: each chip's bandwidth ladder, one slider step per chip."""
    from ..interactive import slider_figure
    steps = []
    for name in hardware.names():
        lad = ladder(name)
        steps.append((name, [{"type": "bar", "x": list(lad.values()), "y": list(lad.keys()),
                              "orientation": "h", "name": name}]))
    return slider_figure(steps, title="带宽阶梯", slider_label="芯片", active=3, legend=False,
                         xaxis={"title": {"text": "带宽（B/s，每方向）"}, "type": "log"},
                         yaxis={"autorange": "reversed"})
