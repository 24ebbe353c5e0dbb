"""The book's one plot style (CJK font, colours) and shared figure helpers.

Units: SI in, readable units on the axes. Book: used by every chapter.
``set_style()`` is called by each notebook's setup cell. Fonts: Noto Sans CJK SC (or JP, which
holds every Chinese glyph; matplotlib 3.10 only sees the first face of a .ttc), then other common
CJK fonts; if none is installed, one warning, not a warning per glyph.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

__all__ = ["set_style", "cjk_font", "COLORS", "roofline_axes", "shade_regions", "overlay_points",
           "bar_breakdown", "new_figure", "draw_torus", "draw_fat_tree"]

_CANDIDATES = ["Noto Sans CJK SC", "Noto Sans CJK JP", "Source Han Sans SC", "WenQuanYi Micro Hei",
               "SimHei", "Microsoft YaHei", "PingFang SC"]
_FILE_HINTS = ("notosanscjk", "sourcehansans", "wqy", "simhei", "msyh")

#: house palette (colour-blind safe, Okabe-Ito order)
COLORS = {"compute": "#0072B2", "memory": "#D55E00", "comms": "#009E73", "other": "#999999",
          "accent": "#CC79A7", "yellow": "#E69F00", "sky": "#56B4E9", "black": "#000000"}
_CYCLE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999"]

_font_cache: str | None = None


def cjk_font() -> str | None:
    """Name of an installed CJK font that matplotlib can use, or None."""
    global _font_cache
    if _font_cache is not None:
        return _font_cache
    from matplotlib import font_manager

    def find():
        have = {f.name for f in font_manager.fontManager.ttflist}
        return next((c for c in _CANDIDATES if c in have), None)

    name = find()
    if name is None:  # stale font cache: fonts installed after matplotlib built its list
        for p in font_manager.findSystemFonts():
            if any(h in os.path.basename(p).lower() for h in _FILE_HINTS):
                try:
                    font_manager.fontManager.addfont(p)
                except Exception:  # a broken font file must not break the book
                    pass
        name = find()
    _font_cache = name
    return name


def set_style() -> None:
    """Apply the book's matplotlib style. Idempotent; safe in Colab and in CI."""
    import matplotlib as mpl

    font = cjk_font()
    sans = ([font] if font else []) + ["DejaVu Sans"]
    if font is None:
        warnings.warn("没有找到中文字体：图中的汉字会显示成方框。Debian/Ubuntu 上运行 "
                      "`apt-get install fonts-noto-cjk`（make book 以 root 运行时会自动安装）。",
                      stacklevel=2)
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
    mpl.rcParams.update({
        "font.family": "sans-serif",
        "font.sans-serif": sans,
        "axes.unicode_minus": False,
        "figure.figsize": (6.4, 4.0),
        "figure.dpi": 100,
        "savefig.dpi": 100,
        "figure.constrained_layout.use": True,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": mpl.cycler(color=_CYCLE),
        "legend.frameon": False,
        # one size for every legend: 9 pt stays legible on a phone, where a 640 px figure is shown
        # about 360 px wide (website-review M2); legend calls do not set their own size
        "legend.fontsize": LEGEND_PT,
        "svg.hashsalt": "scaling-book",
        "image.cmap": "viridis",
    })
    _retina_inline()


LEGEND_PT = 9


def _retina_inline() -> None:
    """In Jupyter/Colab, inline figures are stored at twice their pixel size (with their display
    size in the output's metadata): sharp on HiDPI screens and zoomable on the website
    (website-review M2). ``figure.dpi`` stays 100, so ``<Figure size 640x400 ...>`` reprs and every
    layout are unchanged. Outside IPython (scripts, tests) nothing happens."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is None:
        return
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:
        return
    set_matplotlib_formats("retina")


def new_figure(nrows: int = 1, ncols: int = 1, **kw):
    """``plt.subplots`` with the house style applied."""
    import matplotlib.pyplot as plt

    set_style()
    return plt.subplots(nrows, ncols, **kw)


def roofline_axes(peak_flops: float, bandwidths: dict, ax=None, imin: float = 0.1,
                  imax: float = 1e4, label_peak: str | None = None):
    """Draw a log-log roofline: a flat roof at ``peak_flops`` and one slope per bandwidth.

    ``bandwidths`` maps a label to bytes/s. Returns the axes. Book: sec-01-roofline-plot.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots()
    x = np.logspace(np.log10(imin), np.log10(imax), 200)
    for i, (lab, bw) in enumerate(bandwidths.items()):
        y = np.minimum(peak_flops, x * bw)
        ax.plot(x, y, color=_CYCLE[i % len(_CYCLE)], lw=2,
                label=f"{lab}（拐点 {peak_flops / bw:.0f} FLOPs/字节）")
    ax.axhline(peak_flops, color="0.3", lw=0.8, ls=":")
    if label_peak:
        ax.text(imin * 1.2, peak_flops * 1.15, label_peak, fontsize=9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("算术强度（FLOPs/字节）")
    ax.set_ylabel("可达算力（FLOPs/s）")
    ax.legend(loc="lower right")
    return ax


def shade_regions(ax, peak_flops: float, bw_low: float, bw_high: float, imin: float = 0.1,
                  imax: float = 1e4) -> None:
    """Shade bandwidth-bound (red), bound only at the lower bandwidth (yellow), compute-bound (green)."""
    k_hi, k_lo = peak_flops / bw_high, peak_flops / bw_low
    ax.axvspan(imin, k_hi, color="#D55E00", alpha=0.10, lw=0)
    ax.axvspan(k_hi, k_lo, color="#E69F00", alpha=0.15, lw=0)
    ax.axvspan(k_lo, imax, color="#009E73", alpha=0.10, lw=0)


def overlay_points(ax, intensities, flops_per_s, labels=None, color=None, marker="o", label=None):
    """Scatter measured or modelled points on a roofline axes."""
    ax.scatter(intensities, flops_per_s, color=color or COLORS["accent"], marker=marker, zorder=5,
               s=24, label=label)
    if labels is not None:
        for x, y, t in zip(intensities, flops_per_s, labels):
            ax.annotate(str(t), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    if label:
        ax.legend(loc="lower right")
    return ax


def bar_breakdown(parts: dict, ax=None, unit: str = "ms", scale: float = 1e3, title: str | None = None):
    """Horizontal stacked bar of named parts (e.g. times in seconds shown in ms)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 1.8))
    left = 0.0
    for i, (k, v) in enumerate(parts.items()):
        ax.barh([0], [v * scale], left=left, color=_CYCLE[i % len(_CYCLE)], label=k)
        left += v * scale
    ax.set_yticks([])
    ax.set_xlabel(f"时间（{unit}）")
    if title:
        ax.set_title(title)
    ax.legend(ncol=min(4, len(parts)), loc="upper center", bbox_to_anchor=(0.5, -0.45))
    return ax

# ---- network drawings (the core's topology objects call these through scaling_lib.hooks) -----

def _torus_coords(shape):
    import itertools
    return list(itertools.product(*(range(n) for n in shape)))


def draw_torus(topo, ax=None, path=None, annotate: bool = True):
    """Draw a 1D/2D slice: chips as squares, links as lines, wrap links dashed arcs.

    ``path``: a list of coordinates to highlight (e.g. a shortest route). Returns the axes.
    """
    import matplotlib.pyplot as plt

    if len(topo.shape) > 2:
        raise ValueError("draw() handles 1D and 2D slices; draw a 3D slice one plane at a time")
    shape = topo.shape if len(topo.shape) == 2 else (topo.shape[0], 1)
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * shape[0] + 1.6, 0.6 * shape[1] + 1.2))
    from matplotlib.collections import LineCollection
    from matplotlib.path import Path
    from matplotlib.patches import PathPatch

    pos = lambda c: (c[0], -(c[1] if len(c) > 1 else 0))
    straight, arcs = [], []
    for (a, b), is_wrap in topo.links():
        pa, pb = pos(a), pos(b)
        if is_wrap:
            # a quadratic Bezier bulging outwards from the grid
            mx, my = (pa[0] + pb[0]) / 2, (pa[1] + pb[1]) / 2
            bulge = 0.5 + 0.12 * (abs(pa[0] - pb[0]) + abs(pa[1] - pb[1]))
            ctrl = (mx, my + bulge) if pa[1] == pb[1] else (mx - bulge, my)
            arcs.append(Path([pa, ctrl, pb], [Path.MOVETO, Path.CURVE3, Path.CURVE3]))
        else:
            straight.append([pa, pb])
    ax.add_collection(LineCollection(straight, colors="0.45", linewidths=1.2, zorder=1))
    if arcs:
        ax.add_patch(PathPatch(Path.make_compound_path(*arcs), fc="none", ec=COLORS["comms"],
                               ls="--", lw=1.0, alpha=0.8))
    coords = _torus_coords(topo.shape)
    xs = [pos(c)[0] for c in coords]
    ys = [pos(c)[1] for c in coords]
    ax.scatter(xs, ys, s=max(25, 160 * min(1.0, 4 / max(shape))), marker="s",
               color=COLORS["compute"], zorder=3)
    if path:
        pts = [pos(topo._coord(c)) for c in path]
        segs, bends = [], []
        for pa, pb in zip(pts[:-1], pts[1:]):
            if abs(pa[0] - pb[0]) + abs(pa[1] - pb[1]) > 1:      # a wraparound hop
                mx, my = (pa[0] + pb[0]) / 2, (pa[1] + pb[1]) / 2
                bulge = 0.5 + 0.12 * (abs(pa[0] - pb[0]) + abs(pa[1] - pb[1]))
                ctrl = (mx, my + bulge) if pa[1] == pb[1] else (mx - bulge, my)
                bends.append(Path([pa, ctrl, pb], [Path.MOVETO, Path.CURVE3, Path.CURVE3]))
            else:
                segs.append([pa, pb])
        ax.add_collection(LineCollection(segs, colors=COLORS["memory"], linewidths=3, zorder=4))
        if bends:
            ax.add_patch(PathPatch(Path.make_compound_path(*bends), fc="none",
                                   ec=COLORS["memory"], lw=3, zorder=4))
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    for s in ax.spines.values():
        s.set_visible(False)
    if annotate:
        ax.set_title(topo.describe(), fontsize=9)
    ax.margins(0.15)
    return ax


def draw_fat_tree(tree, ax=None, max_children: int = 8):
    """Schematic of the tree: GPUs at the bottom, one row of units per level (capped width)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.2))
    nlev = len(tree.levels)
    # number of boxes per row, bottom row = GPUs (capped for readability)
    counts = []
    total = 1
    for lv in reversed(tree.levels):
        total *= min(lv.degree, max_children)
        counts.append(total)
    counts = list(reversed(counts))  # counts[0] = GPUs shown, ... counts[-1] = top children
    rows = [counts[0]] + [counts[i + 1] if i + 1 < nlev else 1 for i in range(nlev)]
    width = max(rows)
    xs_prev = None
    colors = [COLORS["compute"], COLORS["comms"], COLORS["yellow"], COLORS["accent"], COLORS["sky"]]
    labels = ["GPU"] + [lv.name for lv in tree.levels]
    for r, n in enumerate(rows):
        xs = [(i + 0.5) * width / n for i in range(n)]
        ax.scatter(xs, [r] * n, s=60 if r == 0 else 140, marker="s", color=colors[r % len(colors)],
                   zorder=3, label=labels[r])
        if xs_prev is not None:
            k = len(xs_prev) // n
            for j, x in enumerate(xs):
                for c in xs_prev[j * k:(j + 1) * k]:
                    ax.plot([c, x], [r - 1, r], color="0.6", lw=0.6, zorder=1)
        xs_prev = xs
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels)
    ax.set_xticks([])
    ax.grid(False)
    ax.set_title(tree.describe(), fontsize=9)
    return ax


def _register_drawings():
    from . import hooks
    hooks.provide("draw_torus", draw_torus)
    hooks.provide("draw_fat_tree", draw_fat_tree)


_register_drawings()
