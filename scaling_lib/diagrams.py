"""Pictures of ideas, drawn from the same data the library's models compute.

A sharding diagram is drawn from a sharding spec and a mesh (``sharding.device_blocks``); a
collective's animation from its own step schedule (``collectives.collective_schedule``); a
pipeline picture from the schedule the training model uses (``training.pipeline_schedule``); the
systolic array from ``chip_internals.systolic_matmul``. So a picture cannot disagree with the
numbers the book prints next to it.

Two kinds of output:

- plotly figures with frames, a play button and a slider (``*_animation``): they play in the
  static website without a Python kernel and in Jupyter/Colab; every one passes through
  ``interactive.tidy`` (rounded, deterministic JSON for nbval);
- matplotlib figures (``*_figure``) where nothing moves.

Labels are Chinese and LaTeX-free (plotly would need MathJax from a CDN). The list of diagrams,
what each shows and which chapter it is meant for is docs/DIAGRAMS.md.
Book: every chapter (chapter 9 uses ``trace_timeline``, ``fusion_graph``, ``memory_timeline``).
"""
from __future__ import annotations

import colorsys
import math

import numpy as np

from . import collectives as coll
from . import pipeline as _pl
from . import sharding as shd
from .interactive import tidy
from .plots import COLORS

__all__ = ["palette", "collective_animation", "sharding_figure", "matmul_case_figure",
           "MATMUL_CASES", "pipeline_figure", "systolic_animation"]

_FONT = {"family": "Noto Sans CJK SC, Noto Sans CJK JP, Microsoft YaHei, PingFang SC, sans-serif"}
_KIND_ZH = {"all_gather": "AllGather", "reduce_scatter": "ReduceScatter",
            "all_reduce": "AllReduce", "all_to_all": "AllToAll"}


def palette(n: int) -> list:
    """``n`` distinct colours (hex), one per device/chunk; the house palette first."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    base = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
    if n <= len(base):
        return base[:n]
    out = []
    for i in range(n):
        r, g, b = colorsys.hsv_to_rgb(i / n, 0.55 + 0.25 * (i % 2), 0.85 - 0.2 * (i % 3 == 2))
        out.append(f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}")
    return out


def _mix(hex_colour: str, f: float) -> str:
    """``hex_colour`` faded toward white: f = 1 the colour itself, f = 0 white."""
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    m = lambda c: int(round(255 - (255 - c) * f))  # noqa: E731
    return f"#{m(r):02x}{m(g):02x}{m(b):02x}"


def _anim_controls(fig, names: list, duration_ms: int, prefix: str, y: float = -0.02):
    """Play/pause buttons and a slider over the frames ``names`` (plotly 'animate': no kernel)."""
    fig.update_layout(
        updatemenus=[{
            "type": "buttons", "direction": "left", "showactive": False,
            "x": 0.0, "y": y, "xanchor": "left", "yanchor": "top", "pad": {"r": 10, "t": 10},
            "buttons": [
                {"label": "▶ 播放", "method": "animate",
                 "args": [None, {"frame": {"duration": duration_ms, "redraw": True},
                                 "fromcurrent": True, "transition": {"duration": 0}}]},
                {"label": "暂停", "method": "animate",
                 "args": [[None], {"frame": {"duration": 0, "redraw": False}, "mode": "immediate",
                                   "transition": {"duration": 0}}]}]}],
        sliders=[{"active": 0, "x": 0.18, "len": 0.82, "y": y, "yanchor": "top",
                  "pad": {"t": 10}, "currentvalue": {"prefix": prefix},
                  "steps": [{"label": str(n), "method": "animate",
                             "args": [[str(n)], {"frame": {"duration": 0, "redraw": True},
                                                  "mode": "immediate",
                                                  "transition": {"duration": 0}}]}
                            for n in names]}])


# ---- collectives --------------------------------------------------------------------------------

def _device_xy(sched) -> np.ndarray:
    """Where each device is drawn: a circle for a ring, a row for a line, a grid for 2-D."""
    N = sched.n_devices
    if len(sched.shape) == 1:
        if sched.wraps[0] and N > 2:
            ang = np.pi / 2 - 2 * np.pi * np.arange(N) / N
            r = max(1.6, N * 0.42)
            return np.stack([r * np.cos(ang), r * np.sin(ang)], axis=1)
        return np.stack([np.arange(N) * 2.4, np.zeros(N)], axis=1)
    if len(sched.shape) == 2:
        nx, ny = sched.shape
        xy = np.zeros((N, 2))
        for d in range(N):
            i, j = sched.coords(d)
            xy[d] = (j * 2.6, -i * 2.6)
        return xy
    raise ValueError("collective_animation draws 1-D rings/lines and 2-D tori")


def _cells(sched, colours):
    """Per device, one cell per chunk owner: (x offsets, y offsets) inside a device box."""
    N = sched.n_devices
    cols = N if N <= 4 else int(math.ceil(math.sqrt(N)))
    rows = int(math.ceil(N / cols))
    step = 1.5 / max(cols, rows)
    off = [((k % cols - (cols - 1) / 2) * step, -((k // cols) - (rows - 1) / 2) * step)
           for k in range(N)]
    return off, step


def _cell_state(sched, s: int, colours):
    """Colour of every (device, owner) cell after ``s`` steps, and the count in transit."""
    N = sched.n_devices
    st = sched.state[s]
    parts = sched.n_chunks // N if sched.kind != "all_to_all" else 1
    fill, transit = [], []
    for d in range(N):
        if sched.kind == "all_to_all":
            here = np.nonzero(st[d])[0]
            cell = ["#ffffff"] * N
            moving = 0
            for c in here:
                src, dst = divmod(int(c), N)
                if src == d:
                    cell[dst] = colours[dst]
                elif dst == d:
                    cell[src] = colours[d]
                else:
                    moving += 1
            fill.extend(cell)
            transit.append(moving)
            continue
        for o in range(N):
            cnt = st[d, o * parts:(o + 1) * parts]
            if sched.kind == "all_gather":
                f = cnt.sum() / parts
            else:
                f = cnt.sum() / (N * parts)
            fill.append("#ffffff" if f == 0 else _mix(colours[o], 0.2 + 0.8 * f))
        transit.append(0)
    return fill, transit


def collective_animation(kind, topo, axes=None, *, bidirectional: bool = True,
                         duration_ms: int = 900, height: int | None = None):
    """A collective step by step, as a kernel-free plotly animation (play button and slider).

    Drawn from ``collectives.collective_schedule(kind, topo, axes, bidirectional=...)``: one frame
    per step plus the start (``len(fig.frames) == schedule.n_steps + 1``). Each device is a box
    with one cell per chunk, coloured by the chunk's owner: AllGather fills the cells;
    ReduceScatter/AllReduce darken a cell as more devices' contributions are summed into it
    (white: this device holds no partial sum of that chunk); AllToAll colours a block by its
    destination (cell = the device at the other end; blocks passing through are counted).
    Arrows are the messages of the step; their hover text and ``customdata`` give the size as a
    fraction of V. The title says how many bytes the busiest link carries in the step.
    ``topo``: a ring/torus (``topology.Ring(8, ...)``, ``Torus((4, 4), (True, True), ...)``) or a
    preset name; a 2-D torus without wraparound is ``Torus(..., wraps=(False, False))``.
    """
    import plotly.graph_objects as go

    sched = coll.collective_schedule(kind, topo, axes, bidirectional=bidirectional)
    if not isinstance(duration_ms, int) or duration_ms < 50:
        raise ValueError(f"duration_ms must be an int >= 50, got {duration_ms!r}")
    N = sched.n_devices
    colours = palette(N)
    xy = _device_xy(sched)
    off, cstep = _cells(sched, colours)
    box = 1.0
    fig = go.Figure()
    # static: links (solid), wraparound links (dashed), device boxes and labels
    lx, ly, wx, wy = [], [], [], []
    seen = set()
    links = set()
    for st in sched.steps:
        for tr in st:
            links.add(tuple(sorted((tr.src, tr.dst))))
    grid2 = len(sched.shape) == 2
    for a, b in sorted(links):
        (x0, y0), (x1, y1) = xy[a], xy[b]
        if grid2 and abs(x0 - x1) + abs(y0 - y1) > 2.7:      # a wraparound link of the grid
            for (xa, ya), (xb, yb) in (((x0, y0), (x1, y1)), ((x1, y1), (x0, y0))):
                dx, dy = np.sign(xb - xa), np.sign(yb - ya)
                wx += [xa, xa - dx * 1.7, None]
                wy += [ya, ya - dy * 1.7, None]
            continue
        if (a, b) in seen:
            continue
        seen.add((a, b))
        ux, uy = (x1 - x0), (y1 - y0)
        norm = math.hypot(ux, uy)
        ux, uy = ux / norm, uy / norm
        cut = box / max(abs(ux), abs(uy))          # leave the box at its edge
        lx += [x0 + ux * cut, x1 - ux * cut, None]
        ly += [y0 + uy * cut, y1 - uy * cut, None]
    fig.add_trace(go.Scatter(x=lx, y=ly, mode="lines", line={"color": "#bbbbbb", "width": 2},
                             hoverinfo="skip", name="链路"))
    fig.add_trace(go.Scatter(x=wx or [None], y=wy or [None], mode="lines",
                             line={"color": "#bbbbbb", "width": 2, "dash": "dot"},
                             hoverinfo="skip", name="环绕链路", showlegend=bool(wx)))
    shapes = [{"type": "rect", "x0": float(x - box), "x1": float(x + box), "y0": float(y - box),
               "y1": float(y + box), "line": {"color": colours[d], "width": 2},
               "fillcolor": "#fafafa", "layer": "below"} for d, (x, y) in enumerate(xy)]
    lab = xy.copy()
    if len(sched.shape) == 1 and sched.wraps[0] and N > 2:       # ring: labels outside the circle
        rad = np.hypot(xy[:, 0], xy[:, 1])[:, None]
        lab = xy * (rad + box * 1.95) / rad
    else:
        lab[:, 1] += box + 0.35
    fig.add_trace(go.Scatter(x=lab[:, 0], y=lab[:, 1], mode="text",
                             text=[f"设备 {d}" if not grid2 else f"({sched.coords(d)[0]},{sched.coords(d)[1]})"
                                   for d in range(N)],
                             textfont={"size": 11}, hoverinfo="skip", showlegend=False))
    cx = [float(x + dx) for x, _ in xy for dx, _ in off]
    cy = [float(y + dy) for _, y in xy for _, dy in off]
    size = max(5, int(34 * cstep))

    def frame_traces(s: int):
        fill, transit = _cell_state(sched, s, colours)
        cells = go.Scatter(x=cx, y=cy, mode="markers", hoverinfo="skip", showlegend=False,
                           marker={"symbol": "square", "size": size, "color": fill,
                                   "line": {"color": "#888888", "width": 1}})
        ax, ay, ang, col, txt, frac = [], [], [], [], [], []
        if s > 0:
            for tr in sched.steps[s - 1]:
                (x0, y0), (x1, y1) = xy[tr.src], xy[tr.dst]
                dx, dy = x1 - x0, y1 - y0
                if grid2 and abs(dx) + abs(dy) > 2.7:          # wraparound: draw at the stub
                    dx, dy = -np.sign(dx), -np.sign(dy)
                    px, py = x0 + dx * 1.45, y0 + dy * 1.45
                else:
                    norm = math.hypot(dx, dy)
                    ux, uy = dx / norm, dy / norm
                    px, py = (x0 + x1) / 2 - uy * 0.28, (y0 + y1) / 2 + ux * 0.28
                owners = sorted({sched.chunk_owner[c] for c in tr.chunks})
                if sched.kind == "all_to_all":
                    col.append(colours[tr.chunks[0] % N] if len({c % N for c in tr.chunks}) == 1
                               else "#444444")
                    what = "、".join(f"{c // N}→{c % N}" for c in tr.chunks[:6])
                else:
                    col.append(colours[owners[0]] if len(owners) == 1 else "#444444")
                    what = "、".join(str(o) for o in owners[:8]) + ("…" if len(owners) > 8 else "")
                ax.append(float(px))
                ay.append(float(py))
                ang.append(float(90 - math.degrees(math.atan2(dy, dx))))
                frac.append(float(tr.fraction))
                txt.append(f"设备 {tr.src} → {tr.dst}（{tr.axis} 轴）：块 {what}，V 的 {tr.fraction:.3g}")
        arrows = go.Scatter(x=ax or [None], y=ay or [None], mode="markers", hovertext=txt or None,
                            hoverinfo="text", showlegend=False, customdata=frac or None,
                            marker={"symbol": "arrow", "size": 15, "angle": ang or None,
                                    "color": col or None, "line": {"color": "#222222", "width": 1}})
        tx = [float(x) for x, _ in xy] if sched.kind == "all_to_all" else [None]
        ty = [float(y - box - 0.35) for _, y in xy] if sched.kind == "all_to_all" else [None]
        tt = [f"途经 {k} 块" if k else "" for k in transit] if sched.kind == "all_to_all" else None
        transit_tr = go.Scatter(x=tx, y=ty, mode="text", text=tt, hoverinfo="skip",
                                showlegend=False, textfont={"size": 10, "color": "#666666"})
        return [cells, arrows, transit_tr]

    topo_txt = "×".join(map(str, sched.shape)) + (
        "环" if len(sched.shape) == 1 and sched.wraps[0] and N > 2 else
        "链（无环绕链路）" if len(sched.shape) == 1 else
        " 二维环面" if all(sched.wraps) else " 二维网格（无环绕链路）")
    dirs = "双向" if sched.bidirectional else "单向"
    name = _KIND_ZH[sched.kind]

    def title(s: int) -> str:
        head = f"{name}，{topo_txt}，{dirs}链路"
        if s == 0:
            return f"{head}：开始（共 {sched.n_steps} 步）"
        sf = sched.step_fraction(s)
        return (f"{head}：第 {s}/{sched.n_steps} 步，{sched.phase[s - 1]}，"
                f"最忙的链路这一步传 V 的 {sf:.3g}")

    for tr in frame_traces(0):
        fig.add_trace(tr)
    dyn = [3, 4, 5]
    fig.frames = [go.Frame(name=str(s), data=frame_traces(s), traces=dyn,
                           layout={"title": {"text": title(s)}})
                  for s in range(sched.n_steps + 1)]
    pad = 2.2
    rng_x = [float(xy[:, 0].min() - pad), float(xy[:, 0].max() + pad)]
    rng_y = [float(xy[:, 1].min() - pad), float(xy[:, 1].max() + pad)]
    fig.update_layout(
        title={"text": title(0), "font": {"size": 14}}, shapes=shapes, font=_FONT,
        template="plotly_white", showlegend=bool(wx), legend={"orientation": "h", "y": 1.02,
                                                               "x": 1, "xanchor": "right"},
        height=height or int(min(640, max(380, 90 * (rng_y[1] - rng_y[0]) / 2 + 160))),
        margin={"l": 10, "r": 10, "t": 60, "b": 90}, hovermode="closest",
        xaxis={"visible": False, "range": rng_x, "fixedrange": True},
        yaxis={"visible": False, "range": rng_y, "scaleanchor": "x", "fixedrange": True})
    _anim_controls(fig, [str(s) for s in range(sched.n_steps + 1)], duration_ms, "步：")
    return _tidy_frames(fig)


def _tidy_frames(fig):
    """``interactive.tidy`` on the figure, its frames included (tidy rounds them too)."""
    return tidy(fig)


# ---- sharded arrays and matmuls ------------------------------------------------------------------

def _mesh_grid(m: dict):
    """(rows, cols, names) of a mesh drawn as a grid: first axis down, the rest across."""
    names = list(m)
    if len(names) == 1:
        return 1, m[names[0]], names
    if len(names) == 2:
        return m[names[0]], m[names[1]], names
    raise ValueError(f"diagrams draw meshes of 1 or 2 axes, got {len(names)}: {', '.join(names)}")


def _block_colour(idx, nblocks):
    flat = int(np.ravel_multi_index(idx, nblocks)) if len(nblocks) > 1 else int(idx[0])
    return palette(int(np.prod(nblocks)))[flat]


def _draw_array(ax, nblocks, highlight=None, colour_all=True, label=None, partial=None):
    """An array as a grid of blocks (2-D: rows × cols; 1-D: one row). ``highlight``: the block
    index drawn in full colour (others faded or blank)."""
    import matplotlib.patches as mp
    nb = tuple(nblocks) if len(nblocks) == 2 else (1, nblocks[0])
    for i in range(nb[0]):
        for j in range(nb[1]):
            idx = (i, j) if len(nblocks) == 2 else (j,)
            c = _block_colour(idx, tuple(nblocks))
            on = highlight is None or tuple(highlight) == idx
            fc = c if on else (_mix(c, 0.15) if colour_all else "#ffffff")
            ax.add_patch(mp.Rectangle((j, nb[0] - 1 - i), 1, 1, facecolor=fc, edgecolor="#555555",
                                      lw=0.8, hatch="//" if (on and partial) else None))
    ax.set_xlim(-0.05, nb[1] + 0.05)
    ax.set_ylim(-0.05, nb[0] + 0.05)
    ax.set_aspect("equal")
    ax.axis("off")
    if label:
        ax.set_title(label, fontsize=8)


def sharding_figure(spec, mesh, shape=None, ax=None):
    """Which device holds which block of a sharded array: the global array cut into coloured
    blocks, then the mesh with each device's block in colour.

    Drawn from ``sharding.device_blocks(spec, mesh)``: ``spec`` in the book's notation
    (``"A[I_X, J_Y]"``, ``"A[I_XY, J]"``, ``"A[I, J]{U_X}"``), ``mesh`` a dict ``{"X": 2, "Y": 2}``
    (1 or 2 axes), ``shape`` the global shape (optional; adds local shapes). Arrays of 1 or 2 dims.
    Returns the matplotlib Figure.
    """
    import matplotlib.pyplot as plt
    from .plots import set_style

    set_style()
    a = shd.parse(spec)
    m = shd.as_mesh(mesh)
    if len(a.dims) not in (1, 2):
        raise ValueError(f"sharding_figure draws 1-D or 2-D arrays; {a} has {len(a.dims)} dims")
    blocks = shd.device_blocks(a, m)
    nb = shd.blocks_per_dim(a, m)
    rows, cols, names = _mesh_grid(m)
    fig = plt.figure(figsize=(2.2 + 1.5 * cols + 0.4, 0.9 + 1.25 * rows), constrained_layout=True)
    gs = fig.add_gridspec(rows, cols + 1, width_ratios=[1.3] + [1] * cols)
    ax0 = fig.add_subplot(gs[:, 0])
    _draw_array(ax0, nb, label=f"全局数组 {a}\n切成 {'×'.join(map(str, nb))} 块")
    local = ""
    if shape is not None:
        local = "，每设备 " + "×".join(map(str, a.local_shape(shape, m)))
    for coords, idx in blocks.items():
        r, c = (0, coords[0]) if len(coords) == 1 else coords
        axd = fig.add_subplot(gs[r, c + 1])
        psum = shd.partial_sum_index(a, m, coords) if a.unreduced else None
        lab = "设备 " + ",".join(f"{n}={v}" for n, v in zip(names, coords))
        lab += "\n块 (" + ",".join(map(str, idx)) + ")"
        if psum is not None:
            lab += f" 部分和 {psum}"
        _draw_array(axd, nb, highlight=idx, colour_all=False, label=lab, partial=psum is not None)
    rep = a.replication_factor(m)
    fig.suptitle(f"{a} 在网格 {' × '.join(f'{k}={v}' for k, v in m.items())} 上"
                 f"（每块 {rep} 份副本{local}）", fontsize=10)
    return fig


#: the chapter-3 cases, as (A, B, output) specs on a mesh {"X": 2, "Y": 2}
MATMUL_CASES = {
    1: ("A[I_X, J]", "B[J, K_Y]", None),
    2: ("A[I, J_X]", "B[J, K]", None),
    3: ("A[I, J_X]", "B[J_X, K]", "[I, K]"),
    4: ("A[I_X, J]", "B[J, K_X]", None),
}


def matmul_case_figure(a, b, mesh=None, out=None):
    """A sharded matmul ``a · b`` drawn from its plan (``sharding.matmul``): for every device, the
    blocks of A and B it holds, the blocks it multiplies after the plan's collectives, and the
    block of the output it ends with; the title lists the collectives. ``MATMUL_CASES[k]`` gives
    the chapter's four cases. Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt
    from .plots import set_style

    set_style()
    m = shd.as_mesh(mesh or {"X": 2, "Y": 2})
    plan = shd.matmul(a, b, m, out=out)
    rows_spec = [("A（输入）", plan.a), ("B（输入）", plan.b)]
    if plan.a_local != plan.a:
        rows_spec.append(("A（通信后参与乘法）", plan.a_local))
    if plan.b_local != plan.b:
        rows_spec.append(("B（通信后参与乘法）", plan.b_local))
    rows_spec.append(("本地乘积", plan.product))
    if plan.out != plan.product:
        rows_spec.append(("输出", plan.out))
    devs = list(shd.device_blocks(plan.a, m))
    fig, axes = plt.subplots(len(rows_spec), len(devs) + 1,
                             figsize=(1.3 * (len(devs) + 1) + 1.2, 1.15 * len(rows_spec) + 0.7),
                             squeeze=False)
    for r, (what, spec) in enumerate(rows_spec):
        axes[r, 0].axis("off")
        axes[r, 0].text(1.0, 0.5, f"{what}\n{spec}", ha="right", va="center", fontsize=8,
                        transform=axes[r, 0].transAxes)
        blocks = shd.device_blocks(spec, m)
        nb = shd.blocks_per_dim(spec, m)
        for c, dev in enumerate(devs):
            psum = shd.partial_sum_index(spec, m, dev) if spec.unreduced else None
            lab = ("设备 " + ",".join(map(str, dev))) if r == 0 else None
            _draw_array(axes[r, c + 1], nb, highlight=blocks[dev], colour_all=False, label=lab,
                        partial=psum is not None)
    comm = "，".join(f"{shd.COLLECTIVES[s.kind]}（沿 {''.join(s.axes)}）" for s in plan.steps
                    if s.kind != "slice") or "无需通信"
    fig.suptitle(f"情形 {plan.case}：{plan.notation()}\n通信：{comm}", fontsize=10)
    return fig


# ---- pipelines -------------------------------------------------------------------------------------

def pipeline_figure(schedule="1f1b", n_stages: int = 4, n_micro: int = 8, ax=None,
                    virtual_stages: int = 2):
    """A pipeline schedule as a stage × time chart: forward cells (blue) and backward cells
    (orange) numbered by microbatch, idle time (the bubble) hatched grey.

    ``schedule``: a kind that ``training.pipeline_schedule`` knows ("gpipe", "1f1b", …), drawn
    from ``training.pipeline_schedule(kind, n_stages, n_micro)``; "interleaved", drawn from
    ``training.interleaved_schedule(n_stages, n_micro, virtual_stages)`` (cells are 1/v wide,
    lighter shades for later chunks); or a grid (stage × time ints: +m+1 forward of microbatch
    m, −(m+1) its backward, 0 idle). The title gives the bubble measured on the grid. Returns
    the axes.
    """
    import matplotlib.patches as mp
    import matplotlib.pyplot as plt
    from . import training
    from .plots import set_style

    set_style()
    chunk = None
    v = 1
    if isinstance(schedule, str) and schedule == "interleaved":
        kind = f"交错式 1F1B（每设备 {virtual_stages} 段）"
        v = virtual_stages
        grid, chunk = training.interleaved_schedule(n_stages, n_micro, virtual_stages)
    elif isinstance(schedule, str):
        kind = schedule.upper()
        grid = np.asarray(training.pipeline_schedule(schedule, n_stages, n_micro))
    else:
        kind = "自定义"
        grid = np.asarray(schedule)
    if grid.ndim != 2 or grid.dtype.kind not in "iu":
        raise ValueError("a pipeline grid must be a 2-D int array (stages × time units)")
    Z, T = grid.shape
    w = 1.0 / v                       # a cell is 1/v of a full stage's forward
    if ax is None:
        _, ax = plt.subplots(figsize=(min(13, 1.2 + 0.32 * T * w * max(1, v / 1.6)), 0.6 + 0.45 * Z))
    for s in range(Z):
        for t in range(T):
            val = int(grid[s, t])
            if val == 0:
                ax.add_patch(mp.Rectangle((t * w, s), w, 1, facecolor="#eeeeee", edgecolor="#cccccc",
                                          hatch="///", lw=0.5))
                continue
            fc = COLORS["compute"] if val > 0 else COLORS["memory"]
            if chunk is not None and chunk[s, t] > 0:      # later chunks lighter
                fc = _mix(fc, 1.0 - 0.45 * chunk[s, t] / max(1, v - 1))
            ax.add_patch(mp.Rectangle((t * w, s), w, 1, facecolor=fc, edgecolor="white", lw=0.8))
            ax.text((t + 0.5) * w, s + 0.5, str(abs(val)), ha="center", va="center",
                    color="white", fontsize=7 if v < 3 else 5)
    idle = float((grid == 0).mean())
    ax.set_xlim(0, T * w)
    ax.set_ylim(Z, 0)
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_yticks(np.arange(Z) + 0.5, [f"阶段 {s}" for s in range(Z)])
    ax.set_xlabel("时间（单位：一个阶段的一次前向或反向）" if v == 1 else
                  f"时间（单位：一个阶段的一次前向；每格是一段，1/{v} 个单位；颜色深浅区分段）")
    ax.grid(False)
    handles = [mp.Patch(facecolor=COLORS["compute"], label="前向（数字：微批次）"),
               mp.Patch(facecolor=COLORS["memory"], label="反向"),
               mp.Patch(facecolor="#eeeeee", hatch="///", edgecolor="#cccccc", label="空闲（气泡）")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=3)
    ax.set_title(f"{kind} 流水线：{Z} 个阶段，"
                 f"{int(np.abs(grid).max())} 个微批次，空闲占 {idle:.0%}", fontsize=10)
    return ax


# ---- systolic array ----------------------------------------------------------------------------------

def systolic_animation(M: int = 4, S: int = 4, N: int = 4, duration_ms: int = 600):
    """A weight-stationary systolic array multiplying X[M, S] by W[S, N], one frame per cycle.

    Drawn from ``chip_internals.systolic_matmul``: cell (k, j) holds W[k, j]; a lit cell does a
    multiply-add at that cycle, labelled with the row m of X it works on (m = t − k − j). The
    frames show the wavefront entering skewed, filling the array and draining; the title gives
    the share of busy cells. ``len(fig.frames) == n_cycles``.
    """
    import plotly.graph_objects as go
    from .chip_internals import systolic_matmul
    from .units import check_int

    for nm, v in (("M", M), ("S", S), ("N", N)):
        check_int(nm, v)
        if v > 16:
            raise ValueError(f"{nm} must be <= 16 for a readable picture, got {v}")
    tr = systolic_matmul(np.ones((M, S)), np.ones((S, N)))
    T = tr.n_cycles
    xs = [float(j) for k in range(S) for j in range(N)]
    ys = [float(-k) for k in range(S) for j in range(N)]
    colours = palette(M)

    def traces(t):
        act = tr.active[t]
        col, txt = [], []
        for k in range(S):
            for j in range(N):
                m = t - k - j
                on = bool(act[k, j])
                col.append(colours[m] if on else "#f2f2f2")
                txt.append(f"x{m}" if on else "")
        cells = go.Scatter(x=xs, y=ys, mode="markers+text", text=txt, hoverinfo="skip",
                           textfont={"size": 10, "color": "white"}, showlegend=False,
                           marker={"symbol": "square", "size": 30, "color": col,
                                   "line": {"color": "#888888", "width": 1}})
        # the row of X entering at the left edge this cycle and the outputs leaving the bottom
        ins = [(k, t - k) for k in range(S) if 0 <= t - k < M]
        outs = [(j, t - (S - 1) - j) for j in range(N) if 0 <= t - (S - 1) - j < M]
        feed = go.Scatter(x=[-1.0] * len(ins) or [None], y=[float(-k) for k, _ in ins] or [None],
                          mode="markers+text", text=[f"x{m}[{k}]" for k, m in ins] or None,
                          textposition="middle left", hoverinfo="skip", showlegend=False,
                          marker={"symbol": "arrow", "angle": 90, "size": 14,
                                  "color": [colours[m] for _, m in ins] or None})
        drain = go.Scatter(x=[float(j) for j, _ in outs] or [None], y=[-float(S)] * len(outs) or [None],
                           mode="markers+text", text=[f"y{m}[{j}]" for j, m in outs] or None,
                           textposition="bottom center", hoverinfo="skip", showlegend=False,
                           marker={"symbol": "arrow", "angle": 180, "size": 14,
                                   "color": [colours[m] for _, m in outs] or None})
        return [cells, feed, drain]

    def title(t):
        busy = int(tr.active[t].sum())
        return (f"脉动阵列 {S}×{N}，X 有 {M} 行：第 {t + 1}/{T} 拍，"
                f"{busy}/{S * N} 个单元在做乘加")

    fig = go.Figure(data=traces(0))
    fig.frames = [go.Frame(name=str(t + 1), data=traces(t), traces=[0, 1, 2],
                           layout={"title": {"text": title(t)}}) for t in range(T)]
    fig.update_layout(title={"text": title(0), "font": {"size": 14}}, font=_FONT,
                      template="plotly_white", height=160 + 60 * S,
                      margin={"l": 10, "r": 10, "t": 60, "b": 90},
                      xaxis={"visible": False, "range": [-3.2, N + 0.2], "fixedrange": True},
                      yaxis={"visible": False, "range": [-S - 0.9, 0.8], "fixedrange": True},
                      annotations=[{"x": (N - 1) / 2, "y": 0.65, "text": "权重 W 常驻在单元里；X 从左侧斜着流入，部分和向下流出",
                                    "showarrow": False, "font": {"size": 11}}])
    _anim_controls(fig, [str(t + 1) for t in range(T)], duration_ms, "拍：")
    return _tidy_frames(fig)


# ---- the profiler's three views (chapter 9) ------------------------------------------------------

_BAR_COLOUR = {"step": "#999999", "host": "#56B4E9", "module": "#E69F00", "matmul": "#0072B2",
               "collective": "#D55E00", "other": "#009E73"}


def _lane_order(lane: str):
    if lane.startswith("主机"):
        return (0, 0 if "训练步" in lane else 1, 0)
    import re as _re
    m = _re.match(r"设备 (\d+) · (.*)", lane)
    if m:
        return (1, int(m.group(1)), 0 if "模块" in m.group(2) else 1)
    return (2, 0, lane)


def trace_timeline(bars, title: str = "Trace Viewer 式时间线", height: int | None = None):
    """A captured trace drawn the way Trace Viewer / Perfetto draw it: one lane per row (host
    steps and Python calls on top; per device an "XLA 模块" row and an "XLA 算子" row), one bar
    per event, collectives in red, matmul fusions in blue. Hover shows the op, its duration and
    the JAX source (named scopes) it came from. Zoom by dragging on the plot or the range slider
    below it, double-click to reset: plain plotly, so it works on the website without a kernel.

    ``bars``: ``profiling.timeline_bars(trace, sources, step)``. Times are shown in ms.
    """
    import plotly.graph_objects as go
    from .profiling import BAR_KINDS

    bars = list(bars)
    if not bars:
        raise ValueError("no bars to draw: pass profiling.timeline_bars(...)")
    lanes = sorted({b.lane for b in bars}, key=_lane_order)
    fig = go.Figure()
    for kind, label in BAR_KINDS.items():
        sel = [b for b in bars if b.kind == kind]
        if not sel:
            continue
        hover = [f"{b.name}<br>{b.duration_s * 1e3:.3g} ms（起点 {b.start_s * 1e3:.3g} ms）"
                 + (f"<br>来源：{b.source}" if b.source else "") for b in sel]
        fig.add_trace(go.Bar(
            y=[b.lane for b in sel], x=[b.duration_s * 1e3 for b in sel],
            base=[b.start_s * 1e3 for b in sel], orientation="h", name=label,
            marker={"color": _BAR_COLOUR[kind], "line": {"color": "white", "width": 0.5}},
            hovertext=hover, hoverinfo="text",
            width=0.8 if kind not in ("step", "module") else 0.5))
    fig.update_layout(
        title={"text": title, "font": {"size": 14}}, barmode="overlay", font=_FONT,
        template="plotly_white", height=height or int(220 + 26 * len(lanes)),
        margin={"l": 10, "r": 10, "t": 50, "b": 40}, hovermode="closest",
        legend={"orientation": "h", "y": -0.22, "yanchor": "top", "x": 0},
        xaxis={"title": {"text": "时间（ms）；在图上拖动可放大，双击还原"},
               "rangeslider": {"visible": True, "thickness": 0.06}},
        yaxis={"categoryorder": "array", "categoryarray": lanes[::-1], "automargin": True,
               "fixedrange": True})
    return tidy(fig)


def fusion_graph(hlo_text: str, computation: str | None = None, scope: str | None = None,
                 max_nodes: int = 40, title: str | None = None):
    """One computation of an optimised HLO module as a graph, like XProf's Graph Viewer: a box per
    instruction (name, shape), an edge from each operand to its user, laid out top to bottom by
    dependency depth; dots (and fusions holding one), other fusions and collectives coloured;
    hover shows the opcode, shape, fusion kind and the JAX source it came from.

    ``computation``: a computation name (e.g. a fusion's ``calls=``), default ENTRY. ``scope``:
    keep only instructions whose source (``op_name``) contains it, e.g. ``"mlp"`` — the
    neighbourhood Graph Viewer opens around an op — plus the operands they read (drawn as inputs).
    Returns a plotly figure (static; hover works without a kernel).
    """
    import plotly.graph_objects as go
    from .profiling import hlo_ops

    ops_all = hlo_ops(hlo_text)
    if computation is None:
        ops = [o for o in ops_all if o.in_entry]
        comp = "ENTRY"
    else:
        ops = [o for o in ops_all if o.computation == computation]
        comp = computation
        if not ops:
            names = sorted({o.computation for o in ops_all})
            raise ValueError(f"no computation {computation!r} in the HLO; it has: {', '.join(names)}")
    inputs = set()
    if scope is not None:
        keep = [o for o in ops if scope in o.op_name]
        if not keep:
            raise ValueError(f"no instruction of {comp} comes from a source containing {scope!r}")
        names = {o.name for o in keep}
        inputs = {a for o in keep for a in o.operands} - names
        ops = [o for o in ops if o.name in names or o.name in inputs]
        comp = f"{comp} 中来自 {scope} 的部分"
    if len(ops) > max_nodes:
        raise ValueError(f"{comp} has {len(ops)} instructions (> max_nodes={max_nodes}); pass "
                         f"scope=... or a fusion's computation")
    idx = {o.name: i for i, o in enumerate(ops)}
    depth = [0] * len(ops)
    for i, o in enumerate(ops):
        ins = [idx[a] for a in o.operands if a in idx and o.name not in inputs]
        depth[i] = 0 if o.name in inputs else 1 + max((depth[j] for j in ins), default=-1)
    cols: dict = {}
    pos = []
    for i, d in enumerate(depth):
        k = cols.get(d, 0)
        cols[d] = k + 1
        pos.append((k * 4.0, -d * 1.0))

    def kind(o):
        if o.name in inputs:
            return "input", "#999999"
        if o.opcode in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                        "collective-permute", "all-reduce-start", "all-gather-start"):
            return "collective", "#D55E00"
        if o.opcode in ("dot", "convolution") or (o.opcode in ("fusion", "custom-call")
                                                  and "dot_general" in o.op_name) or (
                o.opcode == "fusion" and _calls_dot(ops_all, o)):
            return "matmul", "#0072B2"
        if o.opcode == "fusion":
            return "fusion", "#009E73"
        if o.opcode == "parameter":
            return "input", "#999999"
        return "other", "#CC79A7"

    ex, ey = [], []
    for i, o in enumerate(ops):
        if o.name in inputs:
            continue
        for a in o.operands:
            if a in idx:
                (x0, y0), (x1, y1) = pos[idx[a]], pos[i]
                ex += [x0, x1, None]
                ey += [y0 - 0.12, y1 + 0.12, None]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ex or [None], y=ey or [None], mode="lines", hoverinfo="skip",
                             line={"color": "#aaaaaa", "width": 1.2}, showlegend=False))
    groups: dict = {}
    for i, o in enumerate(ops):
        groups.setdefault(kind(o), []).append(i)
    zh = {"collective": "集合通信", "matmul": "矩阵乘法（dot 或含 dot 的融合）", "fusion": "其他融合",
          "input": "参数或输入", "other": "其他指令（bitcast、copy……）"}
    for (k, c), members in sorted(groups.items(), key=lambda kv: list(zh).index(kv[0][0])):
        fig.add_trace(go.Scatter(
            x=[pos[i][0] for i in members], y=[pos[i][1] for i in members], mode="markers+text",
            name=zh[k], marker={"symbol": "square", "size": 14, "color": c},
            text=[f"{ops[i].name}  {ops[i].shape.split('{')[0][:26]}" for i in members],
            textposition="middle right", textfont={"size": 10},
            hovertext=[f"{ops[i].name} = {ops[i].opcode}  {ops[i].shape[:80]}"
                       + (f"<br>kind={ops[i].fusion_kind}" if ops[i].fusion_kind else "")
                       + (f"<br>calls={ops[i].calls}" if ops[i].calls else "")
                       + (f"<br>来源：{ops[i].op_name}" if ops[i].op_name else "") for i in members],
            hoverinfo="text"))
    n_depth = max(depth) + 1
    width = max(cols.values())
    fig.update_layout(
        title={"text": title or f"HLO 图：{comp}（{len(ops)} 条指令）", "font": {"size": 14}},
        font=_FONT, template="plotly_white", height=int(170 + 46 * n_depth),
        margin={"l": 10, "r": 10, "t": 60, "b": 20}, hovermode="closest",
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
        xaxis={"visible": False, "range": [-0.6, 4.0 * width + 0.4]},
        yaxis={"visible": False, "range": [-(n_depth - 1) - 0.6, 0.6]})
    return tidy(fig)


def _calls_dot(ops_all, fusion_op) -> bool:
    return bool(fusion_op.calls) and any(o.computation == fusion_op.calls and o.opcode in ("dot", "convolution")
                                         for o in ops_all)


def memory_timeline(profile, title: str = "内存剖析：活着的缓冲区随程序推进", top: int = 6):
    """XProf's Memory Profile and Memory Viewer, modelled from the HLO: live bytes along the
    program's scheduled instructions (a step line, the peak marked) and, beside it, the buffers
    alive at the peak, largest first. ``profile``: ``profiling.memory_profile(hlo_text)``.
    Returns a plotly figure (static)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    from .units import fmt_bytes

    live = np.asarray(profile.live, dtype=float)
    n = len(live)
    unit, scale = ("MB", 1e6) if live.max() >= 1e6 else ("kB", 1e3)
    fig = make_subplots(rows=1, cols=2, column_widths=[0.62, 0.38], horizontal_spacing=0.12,
                        subplot_titles=("活跃内存（按指令执行顺序）", "峰值时活着的缓冲区"))
    fig.add_trace(go.Scatter(
        x=list(range(n)), y=(live / scale).tolist(), mode="lines", line={"shape": "hv", "width": 2,
                                                                       "color": "#0072B2"},
        fill="tozeroy", name="活跃内存",
        hovertext=[f"{nm}（{op}）：{fmt_bytes(v)}" for nm, op, v in
                   zip(profile.names, profile.opcodes, live)], hoverinfo="text"), row=1, col=1)
    fig.add_trace(go.Scatter(
        x=[0, n - 1], y=[profile.argument_bytes / scale] * 2, mode="lines", name="参数（常驻）",
        line={"dash": "dot", "color": "#999999"}, hoverinfo="skip"), row=1, col=1)
    fig.add_trace(go.Scatter(
        x=[profile.peak_index], y=[profile.peak_bytes / scale], mode="markers+text",
        marker={"color": "#D55E00", "size": 10}, text=[f"峰值 {fmt_bytes(profile.peak_bytes)}"],
        textposition="top center", name="峰值", hoverinfo="skip"), row=1, col=1)
    rows = list(profile.at_peak[:top])
    fig.add_trace(go.Bar(
        y=[r[0] for r in rows][::-1], x=[r[2] / scale for r in rows][::-1], orientation="h",
        marker={"color": ["#999999" if r[1] == "parameter" else "#0072B2" for r in rows][::-1]},
        hovertext=[f"{r[0]}（{r[1]}）{fmt_bytes(r[2])}" + (f"<br>来源：{r[3]}" if r[3] else "")
                   for r in rows][::-1], hoverinfo="text", showlegend=False), row=1, col=2)
    fig.update_xaxes(title_text="指令序号（调度顺序）", row=1, col=1)
    fig.update_yaxes(title_text=f"字节（{unit}）", row=1, col=1,
                     range=[0, float(live.max() / scale * 1.25)])
    fig.update_xaxes(title_text=f"字节（{unit}）", row=1, col=2)
    fig.update_layout(title={"text": title, "font": {"size": 14}}, font=_FONT,
                      template="plotly_white", height=400, margin={"l": 10, "r": 10, "t": 90, "b": 40},
                      legend={"orientation": "h", "y": -0.25, "x": 0})
    return tidy(fig)


__all__ += ["trace_timeline", "fusion_graph", "memory_timeline"]


# ---- hardware hierarchies ------------------------------------------------------------------------

def _box(ax, x, y, w, h, label, fc="#f7f7f7", ec="#555555", fs=8, lw=1.0, va="top"):
    import matplotlib.patches as mp
    ax.add_patch(mp.FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.05",
                                   facecolor=fc, edgecolor=ec, lw=lw))
    if label:
        ax.text(x + w / 2, y + h - 0.04 if va == "top" else y + h / 2, label, ha="center", va=va,
                fontsize=fs)


def hierarchy_levels(family: str = "tpu", chip=None) -> list:
    """The levels of a TPU or GPU system with their sizes, from the catalogue:
    ``[(name, how many of the level below, total chips, note)]``.

    TPU: chip (its TensorCores) → host tray (``chips_per_host``) → the smallest 3-D torus unit
    (4×4×4 cube on 3-D chips; a 2-D pod has no cube) → pod (``pod_shape``). GPU: SM → GPU (``n_sm``)
    → node (8 GPUs over NVLink) → scalable unit → SuperPOD (``topology.dgx_h100_superpod``).
    """
    from . import hardware
    from . import topology as topo
    if family == "tpu":
        c = hardware.get(chip or "v5p")
        if c.family != "tpu":
            raise ValueError(f"{c.name} is not a TPU")
        pod = math.prod(c.pod_shape)
        lv = [("芯片", c.cores, 1, f"{c.cores} 个 TensorCore" + ("（megacore）" if getattr(c, "megacore", False) else "")),
              ("托盘（一台主机）", c.chips_per_host, c.chips_per_host, "经 PCIe 接主机 CPU")]
        if c.torus_dims == 3:
            lv.append(("立方体 4×4×4", 64 // c.chips_per_host, 64, "最小的带环绕链路的切片（OCS 连成环面）"))
            lv.append(("Pod " + "×".join(map(str, c.pod_shape)), pod // 64, pod, "ICI 三维环面"))
        else:
            lv.append(("Pod " + "×".join(map(str, c.pod_shape)), pod // c.chips_per_host, pod,
                       "ICI 二维环面；切片可取其中一块"))
        return lv
    if family == "gpu":
        tree = topo.dgx_h100_superpod(gpu=chip or "H100")
        g = tree.gpu
        node, leaf, spine = tree.levels
        return [("GPU", g.n_sm, 1, f"{g.n_sm} 个 SM"),
                ("节点", node.degree, node.degree, "NVLink + NVSwitch 全互连"),
                ("可扩展单元 SU", leaf.degree, node.degree * leaf.degree, "InfiniBand 叶交换机"),
                ("SuperPOD", spine.degree, tree.num_chips, "InfiniBand 脊交换机")]
    raise ValueError(f"family must be 'tpu' or 'gpu', got {family!r}")


def hierarchy_figure(family: str = "tpu", chip=None):
    """Chip → tray → (cube) → pod for a TPU, SM → GPU → node → SU → SuperPOD for a GPU: one panel
    per level, each drawn as a grid of the level below with the count and the total number of
    chips. Sizes from ``hierarchy_levels`` (the hardware catalogue and the SuperPOD topology).
    Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt
    from .plots import set_style

    set_style()
    lv = hierarchy_levels(family, chip)
    fig, axes = plt.subplots(1, len(lv), figsize=(2.6 * len(lv), 2.9))
    cols = palette(len(lv) + 1)
    for k, (ax, (name, n_below, total, note)) in enumerate(zip(axes, lv)):
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.25)
        ax.axis("off")
        _box(ax, 0.02, 0.02, 0.96, 0.96, "", fc=_mix(cols[k + 1], 0.12), ec=cols[k + 1], lw=1.5)
        show = min(n_below, 64)
        g = int(math.ceil(math.sqrt(show)))
        cell = 0.8 / g
        for i in range(show):
            r, c = divmod(i, g)
            _box(ax, 0.1 + c * cell, 0.85 - (r + 1) * cell, cell * 0.8, cell * 0.8, "",
                 fc=_mix(cols[k], 0.5), ec=cols[k], lw=0.6)
        below = lv[k - 1][0] if k else ("SM" if family == "gpu" else "TensorCore")
        more = f"（画出 {show} 个）" if show < n_below else ""
        ax.set_title(f"{name}\n{n_below} 个{below}{more}", fontsize=9)
        ax.text(0.5, 1.02, f"共 {total:,} 颗{'GPU' if family == 'gpu' else '芯片'}" if total > 1 else "",
                ha="center", fontsize=8)
        ax.text(0.5, -0.08, note, ha="center", va="top", fontsize=7, color="#444444")
        if k < len(lv) - 1:
            ax.annotate("", xy=(1.12, 0.5), xytext=(1.0, 0.5), xycoords="axes fraction",
                        arrowprops={"arrowstyle": "->", "color": "#555555"})
    who = lv[0][0] if family == "gpu" else "TPU"
    fig.suptitle(f"{'GPU' if family == 'gpu' else 'TPU'} 系统的层级（{chip or ('H100' if family == 'gpu' else 'v5p')}）",
                 fontsize=10)
    del who
    return fig


# ---- parallelism layouts -------------------------------------------------------------------------

#: how each strategy shards one MLP layer on a 1-D mesh of n devices (chapter 5's notation)
PARALLEL_LAYOUTS = {
    "dp": {"激活 X": "X[B_X, D]", "权重 W_in": "W[D, F]", "权重 W_out": "W[F, D]"},
    "fsdp": {"激活 X": "X[B_X, D]", "权重 W_in": "W[D_X, F]", "权重 W_out": "W[F, D_X]"},
    "tp": {"激活 X": "X[B, D]", "权重 W_in": "W[D, F_X]", "权重 W_out": "W[F_X, D]"},
}
_PAR_ZH = {"dp": "数据并行（DP）", "fsdp": "全分片数据并行（FSDP）", "tp": "张量并行（TP）",
           "pp": "流水线并行（PP）"}


def parallelism_figure(kind: str, n: int = 4, batch_tokens: int = 4096, d_model: int = 8192,
                       d_ff: int = 32768, n_layers: int = 8):
    """What each of ``n`` devices holds and sends under DP, FSDP, TP or PP, for one MLP layer.

    Holds: the block of the activations and of each weight a device keeps (``sharding.device_blocks``
    of the layout in ``PARALLEL_LAYOUTS``; PP: its stage's layers). Sends: the collectives per
    layer and their bytes per device, forward and backward, from ``training.layer_costs``
    (bf16); PP sends one activation block per microbatch to the next stage. Returns the Figure.
    """
    import matplotlib.pyplot as plt
    from . import training
    from .plots import set_style
    from .units import check_int, fmt_bytes

    set_style()
    check_int("n", n)
    if kind not in _PAR_ZH:
        raise ValueError(f"kind must be one of {', '.join(_PAR_ZH)}, got {kind!r}")
    mesh = {"X": n}
    if kind == "pp":
        if n_layers % n:
            raise ValueError(f"n_layers={n_layers} must be divisible by n={n} stages")
        fig, axes = plt.subplots(1, n + 1, figsize=(1.5 * (n + 1) + 1, 1.9), squeeze=False)
        axes[0, 0].axis("off")
        axes[0, 0].text(1, 0.5, f"层 L={n_layers}\n每段 {n_layers // n} 层", ha="right",
                        va="center", fontsize=8, transform=axes[0, 0].transAxes)
        for d in range(n):
            _draw_array(axes[0, d + 1], (n_layers,), highlight=None, colour_all=False)
            for i in range(n_layers):
                if i // (n_layers // n) != d:
                    axes[0, d + 1].patches[i].set_facecolor("#ffffff")
            axes[0, d + 1].set_title(f"设备 {d}（阶段 {d}）", fontsize=8)
        act = 2 * batch_tokens * d_model
        sends = (f"前向：每个微批次把激活 [B_mb, D] 交给下一阶段（点对点，ppermute）；反向把梯度传回上一阶段。"
                 f"整个批次合计每个阶段边界 {fmt_bytes(act)}（bf16）每个方向")
        fig.suptitle(f"{_PAR_ZH[kind]}：每个设备只存一段层，不切层内的矩阵\n{sends}", fontsize=9)
        return fig
    lay = PARALLEL_LAYOUTS[kind]
    cost = training.layer_costs(kind, batch_tokens, d_model, d_ff, x=n if kind != "tp" else 1,
                                y=n if kind == "tp" else 1)
    fig, axes = plt.subplots(len(lay), n + 1, figsize=(1.5 * (n + 1) + 1, 1.25 * len(lay) + 1.0),
                             squeeze=False)
    for r, (what, spec) in enumerate(lay.items()):
        axes[r, 0].axis("off")
        axes[r, 0].text(1, 0.5, f"{what}\n{spec}", ha="right", va="center", fontsize=8,
                        transform=axes[r, 0].transAxes)
        blocks = shd.device_blocks(spec, mesh)
        nb = shd.blocks_per_dim(spec, mesh)
        for d in range(n):
            _draw_array(axes[r, d + 1], nb, highlight=blocks[(d,)], colour_all=False,
                        label=f"设备 {d}" if r == 0 else None)
    coll = {"dp": "反向：两个权重梯度各一次 AllReduce",
            "fsdp": "前向：两个权重各 AllGather；反向：再 AllGather，梯度 ReduceScatter",
            "tp": "前向：AllGather 输入、ReduceScatter 输出；反向同样各一次（在激活上）"}[kind]
    fig.suptitle(f"{_PAR_ZH[kind]}，{n} 个设备（B={batch_tokens}，D={d_model}，F={d_ff}）\n"
                 f"通信 {coll}\n每层每设备：前向 {fmt_bytes(cost.bytes_fwd)}，反向 {fmt_bytes(cost.bytes_bwd)}",
                 fontsize=9)
    return fig


# ---- the Transformer block --------------------------------------------------------------------

def transformer_block_figure(cfg, batch: int = 1, seq_len: int = 8192, kv_len=None,
                             weights="bf16", kv="bf16"):
    """One Transformer layer as a flow of named tensors with their shapes (B, T, D, N, K, H, F
    from ``cfg``) and each matmul's FLOPs per layer from ``TransformerConfig.flops_by_part``.
    ``cfg``: a ``TransformerConfig`` or a preset name (``models.get``). Returns the Figure.

    ``kv_len`` (decode): the T = ``seq_len`` new tokens attend to ``kv_len`` cached ones (S), so
    the scores are [B, N, T, S] and the attention FLOPs are those of T queries over S keys
    (``attention_flops_per_token(S, causal=False)``); a third column gives the bytes each step
    reads from HBM (weights in ``weights``, the KV cache [B, S, K, H] twice in ``kv``) and the
    FLOPs per byte, which is what makes decode memory-bound."""
    import matplotlib.pyplot as plt
    from . import models
    from .inference import bytes_per_elem
    from .plots import set_style
    from .units import check_int, fmt_bytes, fmt_num

    set_style()
    if isinstance(cfg, str):
        cfg = models.get(cfg)
    check_int("batch", batch)
    check_int("seq_len", seq_len)
    decode = kv_len is not None
    S = check_int("kv_len", kv_len) if decode else seq_len
    B, T, D, N, K, H, F = batch, seq_len, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_head, cfg.d_ff
    pp = cfg.params_by_part()
    L = cfg.n_layers
    tok = B * T / L                # flops_by_part / params_by_part: per token, all layers
    if decode:
        attn = float(cfg.attention_flops_per_token(S, causal=False)) * tok
        mlp = cfg.flops_by_part(S)["mlp"] * tok
    else:
        fl = cfg.flops_by_part(seq_len)
        attn, mlp = fl["attn_core"] * tok, fl["mlp"] * tok
    qkv = 2.0 * (pp["attn_q"] + pp["attn_k"] + pp["attn_v"]) * tok
    o_proj = 2.0 * pp["attn_o"] * tok
    bw, bk = bytes_per_elem(weights), bytes_per_elem(kv)
    up = 2 / 3 if cfg.gated_mlp else 0.5
    mlp_w = pp["mlp"] / L
    steps = [
        ("输入 x", f"[B,T,D] = [{B},{T},{D}]", None, None),
        ("归一化", "[B,T,D]", None, None),
        ("Q / K / V 投影", f"Q [B,T,N,H] = [.., {N},{H}]\nK,V [B,T,K,H] = [.., {K},{H}]"
         + ("\n追加进 KV 缓存" if decode else ""), qkv,
         (pp["attn_q"] + pp["attn_k"] + pp["attn_v"]) / L * bw),
        ("注意力 softmax(QK^T)V",
         (f"缓存 K,V [B,S,K,H] = [.., {S},{K},{H}]\n分数 [B,N,T,S] = [.., {N},{T},{S}]" if decode
          else f"分数 [B,N,T,S] = [.., {N},{T},{T}]"), attn, 2 * B * S * K * H * bk),
        ("输出投影 + 残差", f"[B,T,N·H] → [B,T,D] = [.., {D}]", o_proj, pp["attn_o"] / L * bw),
        ("归一化", "[B,T,D]", None, None),
        ("MLP 上投影" + ("（门控 ×2）" if cfg.gated_mlp else ""), f"[B,T,D]·[D,F] → [B,T,F] = [.., {F}]",
         mlp * up, mlp_w * up * bw),
        ("MLP 下投影 + 残差", "[B,T,F]·[F,D] → [B,T,D]", mlp * (1 - up), mlp_w * (1 - up) * bw),
    ]
    fig, ax = plt.subplots(figsize=(9.2 if decode else 7.2, 0.62 * len(steps) + 0.8))
    xmax = 12.6 if decode else 10
    ax.set_xlim(0, xmax)
    ax.set_ylim(-len(steps), 0.6)
    ax.axis("off")
    colours = {"注": COLORS["accent"], "Q": COLORS["compute"], "输": COLORS["compute"],
               "M": COLORS["memory"], "归": COLORS["other"]}
    for i, (name, shape, flops, nbytes) in enumerate(steps):
        y = -i
        col = colours.get(name[0], COLORS["other"])
        _box(ax, 0.2, y - 0.42, 3.2, 0.78, name, fc=_mix(col, 0.25), ec=col, fs=9, va="center")
        ax.text(3.6, y - 0.03, shape, va="center", fontsize=8)
        if flops:
            ax.text(9.8, y - 0.03, f"{fmt_num(flops)} FLOPs", va="center", ha="right", fontsize=8)
        if flops and decode:
            ax.text(xmax - 0.1, y - 0.03, f"读 {fmt_bytes(nbytes)}，{flops / nbytes:.3g} FLOPs/B",
                    va="center", ha="right", fontsize=8)
        if i < len(steps) - 1:
            ax.annotate("", xy=(1.8, y - 0.6), xytext=(1.8, y - 0.42),
                        arrowprops={"arrowstyle": "->", "color": "#555555"})
    total = sum(s[2] for s in steps if s[2])
    if decode:
        read = sum(s[3] for s in steps if s[3])
        ax.set_title(f"{cfg.name} 的一层在解码（B={B}，T={T}，缓存 S={S}）：矩阵乘法 {fmt_num(total)} FLOPs，"
                     f"读 HBM {fmt_bytes(read)}，{total / read:.3g} FLOPs/字节", fontsize=9)
    else:
        ax.set_title(f"{cfg.name} 的一层（B={B}，T={T}；右列：这一层前向的矩阵乘法 FLOPs，合计 {fmt_num(total)}）",
                     fontsize=9)
    return fig


# ---- serving ---------------------------------------------------------------------------------------

def serving_timeline(model="LLaMA-3-70B", chip="v5e", n_chips: int = 16, prompt_len: int = 512,
                     n_new: int = 16, batch: int = 32, weights: str = "int8", kv: str = "int8",
                     mfu: float = 0.4, mode: str = "single"):
    """Prefill and decode on a timeline, with their times from the library's serving model.

    mode "single": one request — a long prefill (compute-bound, ``inference.prefill_time``) then
    ``n_new`` short decode steps (memory-bound, ``inference.decode_step_time``), each bar labelled
    with what bounds it. mode "interleaved" vs "disaggregated": a decode batch of ``batch``
    sequences on one server; a new request arrives every few steps. Interleaved, the decode
    stops while the server prefills it; disaggregated, a second group of chips prefills and
    hands the KV cache over, and the decode lane never stops. Returns the matplotlib Figure.
    """
    import matplotlib.patches as mp
    import matplotlib.pyplot as plt
    from . import inference, models
    from .plots import set_style
    from .units import fmt_time

    set_style()
    if mode not in ("single", "interleaved", "disaggregated"):
        raise ValueError(f"mode must be 'single', 'interleaved' or 'disaggregated', got {mode!r}")
    m = models.get(model) if isinstance(model, str) else model
    t_pre = float(inference.prefill_time(m, prompt_len, n_chips, chip, mfu=mfu))
    b = 1 if mode == "single" else batch
    st = inference.decode_step_time(m, b, prompt_len + n_new, n_chips, chip, weights=weights, kv=kv)
    t_dec = float(st.total_s)
    dec_bound = st.bottleneck
    ms = 1e3
    if mode == "single":
        fig, ax = plt.subplots(figsize=(8, 1.9))
        ax.add_patch(mp.Rectangle((0, 0.2), t_pre * ms, 0.6, color=COLORS["compute"]))
        ax.text(t_pre * ms / 2, 0.5, f"预填充 {prompt_len} 个 token\n{fmt_time(t_pre)}（计算受限）",
                ha="center", va="center", color="white", fontsize=8)
        for i in range(n_new):
            x = (t_pre + i * t_dec) * ms
            ax.add_patch(mp.Rectangle((x, 0.2), t_dec * ms * 0.92, 0.6, color=COLORS["memory"]))
        end = (t_pre + n_new * t_dec) * ms
        ax.text((t_pre * ms + end) / 2, 0.95, f"{n_new} 个解码步，每步 {fmt_time(t_dec)}（{dec_bound}）",
                ha="center", fontsize=8)
        ax.set_xlim(0, end * 1.02)
        ax.set_ylim(0, 1.2)
        ax.set_yticks([])
        ax.set_xlabel("时间（ms）")
        ax.set_title(f"{m.name} 在 {n_chips} 颗 {chip} 上：一个请求的预填充和解码（批次 1）", fontsize=10)
        return fig
    every = max(4, int(math.ceil(t_pre / t_dec)) + 1)     # one prefill server keeps up
    n_steps = 3 * every + 1
    fig, ax = plt.subplots(figsize=(8.5, 2.4 if mode == "interleaved" else 2.9))
    t = 0.0
    lanes = {"interleaved": ["服务器"], "disaggregated": ["解码服务器", "预填充服务器"]}[mode]
    gaps = []
    last = 0.0
    for k in range(n_steps):
        if k % every == 0 and k:
            if mode == "interleaved":
                ax.add_patch(mp.Rectangle((t * ms, 0.2), t_pre * ms, 0.6, color=COLORS["compute"]))
                t += t_pre
            else:
                s0 = (t - t_pre) * ms
                ax.add_patch(mp.Rectangle((s0, 1.2), t_pre * ms, 0.6, color=COLORS["compute"]))
                ax.annotate("", xy=(t * ms, 0.8), xytext=(t * ms, 1.2),
                            arrowprops={"arrowstyle": "->", "color": COLORS["comms"]})
        ax.add_patch(mp.Rectangle((t * ms, 0.2), t_dec * ms * 0.92, 0.6, color=COLORS["memory"]))
        if k:
            gaps.append(t + t_dec - last)
        last = t + t_dec
        t += t_dec
    ax.set_xlim(min(0.0, (every * t_dec - t_pre) * ms) - 1, t * ms * 1.02)
    ax.text(0.99, 0.02 if mode == "interleaved" else 0.52, f"每 {every} 个解码步来一个新请求",
            transform=ax.transAxes, ha="right", fontsize=7, color="#444444")
    ax.set_ylim(0, 2.0 if mode == "disaggregated" else 1.1)
    ax.set_yticks([0.5, 1.5][:len(lanes)], lanes)
    ax.set_xlabel("时间（ms）")
    handles = [mp.Patch(color=COLORS["compute"], label=f"预填充 {fmt_time(t_pre)}"),
               mp.Patch(color=COLORS["memory"], label=f"解码步 {fmt_time(t_dec)}（批次 {batch}）")]
    if mode == "disaggregated":
        handles.append(mp.Patch(color=COLORS["comms"], label="KV 缓存交给解码服务器"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=3)
    worst = max(gaps)
    ax.set_title(("交错式：每来一个请求，解码就停下来等它的预填充" if mode == "interleaved" else
                  "分离式：预填充在另一组芯片上做，解码不停")
                 + f"；相邻 token 最长间隔 {fmt_time(worst)}", fontsize=10)
    return fig


def kv_paging_figure(seq_lens=(700, 2100, 380, 1500, 1000), max_len: int = 2048 + 128,
                     block_size: int = 256):
    """The KV cache of a batch under contiguous allocation (each sequence reserves ``max_len``
    slots) and under PagedAttention (pages of ``block_size`` tokens, handed out as sequences
    grow, found through a block table). Drawn from ``kv_decode.paged_allocation``: used slots in
    colour, reserved-but-empty slots hatched, and the physical pages each sequence got.
    Returns the matplotlib Figure."""
    import matplotlib.patches as mp
    import matplotlib.pyplot as plt
    from .kv_decode import paged_allocation
    from .plots import set_style

    set_style()
    r = paged_allocation(seq_lens, max_len, block_size)
    lens = r["lens"]
    cols = palette(len(lens))
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(10, 0.5 * len(lens) + 1.6),
                                 gridspec_kw={"width_ratios": [1, 1.1]})
    for i, n in enumerate(lens):
        y = len(lens) - 1 - i
        a0.add_patch(mp.Rectangle((0, y + 0.15), n, 0.7, color=cols[i]))
        a0.add_patch(mp.Rectangle((n, y + 0.15), max_len - n, 0.7, facecolor="white",
                                  edgecolor="#bbbbbb", hatch="///", lw=0.5))
        a0.text(-20, y + 0.5, f"序列 {i}（{n}）", ha="right", va="center", fontsize=8)
    a0.set_xlim(-0.28 * max_len, max_len * 1.02)
    a0.set_ylim(0, len(lens))
    a0.axis("off")
    a0.set_title(f"连续分配：每条预留 {max_len} 个位置，空着 {r['contiguous_waste']:.0%}", fontsize=9)
    per_row = 8
    for i, pages in enumerate(r["block_table"]):
        n = lens[i]
        for j, p in enumerate(pages):
            row, c = divmod(p, per_row)
            fill = min(block_size, n - j * block_size) / block_size
            x, y = c * 1.1, -row * 1.1
            a1.add_patch(mp.Rectangle((x, y), 1, 1, facecolor="white", edgecolor="#888888", lw=0.6))
            a1.add_patch(mp.Rectangle((x, y), fill, 1, color=cols[i]))
            a1.text(x + 0.5, y + 0.5, f"{i}·{j}", ha="center", va="center", fontsize=7,
                    color="white" if fill > 0.5 else "black")
    rows = -(-r["n_pages"] // per_row)
    a1.set_xlim(-0.2, per_row * 1.1)
    a1.set_ylim(-(rows - 1) * 1.1 - 0.2, 1.2)
    a1.set_aspect("equal")
    a1.axis("off")
    a1.set_title(f"分页（PagedAttention）：{r['n_pages']} 页 × {block_size} token，"
                 f"只空着 {r['paged_waste']:.0%}；“i·j”= 序列 i 的第 j 页", fontsize=9)
    return fig


def _batching_slots(g, slots, mode):
    """``inference.simulate_batching`` plus, per request, its start step and slot (a request takes
    the lowest free slot, as the simulation does)."""
    from . import inference
    sim = inference.simulate_batching(g, slots, mode=mode)
    start = sim["finish_step"] - g
    if mode == "static":
        return sim, start, [i % slots for i in range(len(g))]
    free_at = [0] * slots
    slot_of = []
    for i in range(len(g)):
        j = min(range(slots), key=lambda s: (free_at[s] > start[i], s))
        slot_of.append(j)
        free_at[j] = int(sim["finish_step"][i])
    return sim, start, slot_of


def batching_animation(gen_lens=(3, 9, 4, 7, 2, 8, 5, 3, 6, 4, 9, 2), slots: int = 4,
                       duration_ms: int = 500):
    """Static and continuous batching side by side, one frame per decode step (kernel-free
    plotly): each slot's cell shows which request it is decoding at that step; the title counts
    busy slots and requests still waiting. Drawn from ``inference.simulate_batching``;
    ``len(fig.frames)`` is the longer run's step count + 1."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    g = np.asarray(gen_lens, dtype=int)
    cols = palette(len(g))
    runs = {m: _batching_slots(g, slots, m) for m in ("static", "continuous")}
    T = max(r[0]["steps"] for r in runs.values())
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.18,
                        subplot_titles=("静态批处理", "连续批处理"))

    def cells(mode, t):
        sim, start, slot_of = runs[mode]
        xs, ys, cs, tx = [], [], [], []
        for i in range(len(g)):
            for k in range(int(start[i]), min(int(start[i] + g[i]), t)):
                xs.append(k + 0.5)
                ys.append(slots - 1 - slot_of[i] + 0.5)
                cs.append(cols[i])
                tx.append(str(i))
        return go.Scatter(x=xs or [None], y=ys or [None], mode="markers+text", text=tx or None,
                          textfont={"size": 9, "color": "white"}, hoverinfo="skip",
                          showlegend=False, marker={"symbol": "square", "size": 18,
                                                    "color": cs or None})

    def title(t):
        parts = []
        for mode, name in (("static", "静态"), ("continuous", "连续")):
            sim, start, _ = runs[mode]
            busy = int(sim["active"][t - 1]) if 0 < t <= sim["steps"] else 0
            waiting = int((start >= t).sum()) if t > 0 else len(g)
            parts.append(f"{name}：{busy}/{slots} 槽位在忙，{waiting} 个请求在排队")
        return f"第 {t}/{T} 步　" + "；".join(parts)

    fig.add_trace(cells("static", 0), row=1, col=1)
    fig.add_trace(cells("continuous", 0), row=2, col=1)
    fig.frames = [go.Frame(name=str(t), data=[cells("static", t), cells("continuous", t)],
                           traces=[0, 1], layout={"title": {"text": title(t)}}) for t in range(T + 1)]
    for r in (1, 2):
        fig.update_xaxes(range=[0, T], dtick=5, title_text="解码步" if r == 2 else None, row=r, col=1,
                         fixedrange=True)
        fig.update_yaxes(range=[0, slots], tickvals=[s + 0.5 for s in range(slots)],
                         ticktext=[f"槽位 {slots - 1 - s}" for s in range(slots)], row=r, col=1,
                         fixedrange=True)
    fig.update_layout(title={"text": title(0), "font": {"size": 13}}, font=_FONT,
                      template="plotly_white", height=200 + 70 * slots,
                      margin={"l": 10, "r": 10, "t": 80, "b": 120})
    _anim_controls(fig, [str(t) for t in range(T + 1)], duration_ms, "步：", y=-0.14)
    return _tidy_frames(fig)


def batching_figure(gen_lens=(3, 9, 4, 7, 2, 8, 5, 3, 6, 4, 9, 2), slots: int = 4):
    """Static vs continuous batching as slot × decode-step charts: each request a bar in the slot
    that serves it, idle slots blank. Drawn from ``inference.simulate_batching`` (its finish
    steps; a request takes the lowest free slot, as in the simulation); the titles give the steps
    and the slot utilisation it reports. Returns the matplotlib Figure."""
    import matplotlib.patches as mp
    import matplotlib.pyplot as plt
    from . import inference
    from .plots import set_style

    set_style()
    g = np.asarray(gen_lens, dtype=int)
    cols = palette(len(g))
    fig, axes = plt.subplots(2, 1, figsize=(8, 1.2 + 0.5 * slots * 2), sharex=True)
    for ax, mode in zip(axes, ("static", "continuous")):
        sim, start, slot_of = _batching_slots(g, slots, mode)
        for i in range(len(g)):
            ax.add_patch(mp.Rectangle((start[i], slots - 1 - slot_of[i] + 0.1), g[i], 0.8,
                                      facecolor=cols[i], edgecolor="white"))
            ax.text(start[i] + g[i] / 2, slots - 1 - slot_of[i] + 0.5, f"请求 {i}", ha="center",
                    va="center", fontsize=7, color="white")
        ax.set_xlim(0, max(inference.simulate_batching(g, slots, mode=m)["steps"]
                           for m in ("static", "continuous")))
        ax.set_ylim(0, slots)
        ax.set_yticks(np.arange(slots) + 0.5, [f"槽位 {slots - 1 - s}" for s in range(slots)])
        ax.grid(False)
        name = "静态批处理" if mode == "static" else "连续批处理"
        ax.set_title(f"{name}：{sim['steps']} 步做完，槽位利用率 {sim['utilisation']:.0%}", fontsize=9)
    axes[-1].set_xlabel("解码步")
    return fig


__all__ += ["hierarchy_levels", "hierarchy_figure", "PARALLEL_LAYOUTS", "parallelism_figure",
            "transformer_block_figure", "serving_timeline", "kv_paging_figure", "batching_figure",
            "batching_animation"]


# ---- a pointwise op streaming through the chip (chapters 0 and 2) -----------------------------------

_STREAM_UNITS = ("load", "compute", "store")
_STREAM_VERB = {"load": "读", "compute": "算", "store": "写"}


def _ink(hex_colour: str) -> str:
    """Dark or white text, whichever reads on ``hex_colour``."""
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return "#222222" if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "#ffffff"


def _stream_events(n_chunks, t_load, t_compute, t_store, n_buffers, shared_hbm):
    from . import chip_internals as ci
    from .units import check_int

    check_int("n_chunks", n_chunks)
    if n_chunks > 16:
        raise ValueError(f"n_chunks must be <= 16 for a readable picture, got {n_chunks}")
    return ci.pipeline_schedule(n_chunks, t_load, t_compute, t_store, n_buffers,
                                shared_hbm=shared_hbm)


def _stream_rows(shared_hbm: bool) -> dict:
    if shared_hbm:
        return {"load": "HBM 通道：读", "compute": "VPU：计算", "store": "HBM 通道：写"}
    return {"load": "HBM→VMEM（读）", "compute": "VPU：计算", "store": "VMEM→HBM（写）"}


def streaming_figure(n_chunks: int = 8, t_load=2.0, t_compute=1.0, t_store=2.0,
                     n_buffers: int = 2, shared_hbm: bool = False, ax=None, title=None):
    """A chunked elementwise op as a Gantt chart: which chunk is being read from HBM, computed on
    the VPU and written back at every moment, drawn from ``chip_internals.pipeline_schedule``
    (``shared_hbm=True``: reads and writes share one HBM channel, so they never overlap). The
    title gives the makespan and the share of time the VPU is busy. Returns the axes."""
    import matplotlib.patches as mp
    import matplotlib.pyplot as plt
    from .plots import set_style

    set_style()
    ev = _stream_events(n_chunks, t_load, t_compute, t_store, n_buffers, shared_hbm)
    total = max(e[3] for e in ev)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 2.4))
    rows = {"load": 2, "compute": 1, "store": 0}
    cols = {"load": COLORS["memory"], "compute": COLORS["compute"], "store": COLORS["comms"]}
    for unit, i, s, e in ev:
        if e <= s:
            continue
        ax.add_patch(mp.Rectangle((s, rows[unit] - 0.4), e - s, 0.8, facecolor=cols[unit],
                                  edgecolor="white", lw=0.8))
        ax.text((s + e) / 2, rows[unit], str(i), ha="center", va="center", fontsize=7,
                color="white")
    names = _stream_rows(shared_hbm)
    ax.set_yticks([0, 1, 2], [names["store"], names["compute"], names["load"]])
    ax.set_ylim(-0.6, 2.6)
    ax.set_xlim(0, total * 1.02)
    ax.set_xlabel("时间（单位时间）")
    ax.grid(False)
    busy = sum(e - s for u, _, s, e in ev if u == "compute") / total
    head = title or ("读写共用一条 HBM 通道" if shared_hbm else "读、写各一条 HBM 通道")
    ax.set_title(f"{head}：总时间 {total:.3g}，VPU 忙 {busy:.0%}", fontsize=9)
    return ax


def streaming_animation(n_chunks: int = 8, t_load=2.0, t_compute=1.0, t_store=2.0,
                        n_buffers: int = 2, shared_hbm: bool = False, duration_ms: int = 700,
                        op: str = "z = x × y"):
    """An elementwise op streaming HBM → VMEM → VPU → VMEM → HBM, as a kernel-free animation.

    Drawn from ``chip_internals.pipeline_schedule(n_chunks, t_load, t_compute, t_store,
    n_buffers, shared_hbm=...)`` (the DMA/compute schedule of the chapter-2 model): the arrays
    are cut into ``n_chunks`` chunks; chunk i uses input and output buffer ``i % n_buffers`` in
    VMEM. One frame per interval between two consecutive event times (nothing starts or ends
    inside it), plus the start and the end: the top shows where every chunk is (HBM, a VMEM
    buffer, the VPU; an arrow for each DMA in flight), the bottom the Gantt chart up to the end
    of the interval. ``shared_hbm=True``: reads and writes take turns on one HBM channel.
    ``len(fig.frames) == number of distinct event times + 1``. Every frame has the same number
    of points per trace (plotly.js mixes up labels when a frame drops points).
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    if not isinstance(duration_ms, int) or duration_ms < 50:
        raise ValueError(f"duration_ms must be an int >= 50, got {duration_ms!r}")
    ev = _stream_events(n_chunks, t_load, t_compute, t_store, n_buffers, shared_hbm)
    n, nb = n_chunks, int(n_buffers)
    total = max(e[3] for e in ev)
    span = {(u, i): (s, e) for u, i, s, e in ev}
    times = sorted({0.0, *(s for _, _, s, _ in ev), *(e for _, _, _, e in ev)})
    colours = palette(n)
    blank = "rgba(0,0,0,0)"
    # --- where things are drawn (top panel, axes x/y) ---
    h = 4.0 / max(n, 4)
    col_y = [3.6 - (i + 0.5) * h for i in range(n)]                  # chunk rows in HBM
    slot_y = [2.0 + (nb - 1) / 2 * 0.9 - k * 0.9 for k in range(nb)]   # buffer slots
    X_IN, X_VIN, X_VPU, X_VOUT, X_OUT = 1.0, 4.6, 8.0, 11.4, 15.0
    boxes = [(X_IN, f"HBM：输入 x、y（{n} 块）"), (X_VIN, f"VMEM：输入缓冲（{nb} 个）"),
             (X_VPU, "VPU"), (X_VOUT, f"VMEM：输出缓冲（{nb} 个）"), (X_OUT, f"HBM：输出 z（{n} 块）")]
    cell_x = [X_IN] * n + [X_VIN] * nb + [X_VPU] + [X_VOUT] * nb + [X_OUT] * n
    cell_y = col_y + slot_y + [2.0] + slot_y + col_y

    def running(t0, t1):
        """Events running during the open interval (t0, t1) (none at an instant t0 == t1)."""
        if t1 <= t0:
            return set()
        return {(u, i) for u, i, s, e in ev if s <= t0 and e >= t1}

    def done(u, i, t):
        return span[(u, i)][1] <= t

    def state(t0, t1):
        """Cell colours and labels, and the two DMA arrows, during (t0, t1)."""
        run = running(t0, t1)
        fill = ["#ffffff"] * len(cell_x)
        text = [" "] * len(cell_x)
        vpu = n + nb
        for i in range(n):
            vin, vout, out = n + i % nb, n + nb + 1 + i % nb, n + 2 * nb + 1 + i
            fill[i], text[i] = _mix(colours[i], 0.25 if done("load", i, t0) else 1.0), str(i)
            loaded, computed, stored = (done(u, i, t0) for u in _STREAM_UNITS)
            if ("load", i) in run:
                fill[vin], text[vin] = _mix(colours[i], 0.45), f"{i}←"
            elif loaded and not computed:
                fill[vin], text[vin] = colours[i], str(i)
            if ("compute", i) in run:
                fill[vpu], text[vpu] = colours[i], str(i)
                fill[vout], text[vout] = _mix(colours[i], 0.45), f"{i}←"
            elif computed and not stored:
                fill[vout], text[vout] = colours[i], str(i)
            if ("store", i) in run:
                fill[out], text[out] = _mix(colours[i], 0.45), f"{i}←"
            elif stored:
                fill[out], text[out] = colours[i], str(i)
        arrows = []                                        # (colour, label) for read, write
        for u in ("load", "store"):
            on = [i for uu, i in run if uu == u]
            arrows.append((colours[on[0]], f"块 {on[0]}") if on else (blank, " "))
        return fill, text, arrows

    rows = {"load": 2, "compute": 1, "store": 0}
    ucol = {"load": COLORS["memory"], "compute": COLORS["compute"], "store": COLORS["comms"]}

    def gantt(t):
        """One rectangle per event (zero width until it starts, clipped at t) and its label."""
        out = []
        for u in _STREAM_UNITS:
            xs, ys = [], []
            for uu, i, s, e in ev:
                if uu != u:
                    continue
                e2 = min(max(s, t), e)
                y = rows[u]
                xs += [s, e2, e2, s, s, None]
                ys += [y - 0.38, y - 0.38, y + 0.38, y + 0.38, y - 0.38, None]
            out.append(go.Scatter(x=xs, y=ys, mode="lines", fill="toself", fillcolor=ucol[u],
                                  line={"color": "white", "width": 1}, hoverinfo="skip",
                                  showlegend=False, xaxis="x2", yaxis="y2"))
        lx, ly, lt = [], [], []
        for u, i, s, e in ev:
            lx.append((s + min(max(s, t), e)) / 2)
            ly.append(rows[u])
            lt.append(str(i) if s < t and e > s else " ")
        out.append(go.Scatter(x=lx, y=ly, text=lt, mode="text", hoverinfo="skip",
                              textfont={"color": "white", "size": 10}, showlegend=False,
                              xaxis="x2", yaxis="y2"))
        out.append(go.Scatter(x=[t, t], y=[-0.6, 2.6], mode="lines", hoverinfo="skip",
                              line={"color": "#333333", "width": 1, "dash": "dot"},
                              showlegend=False, xaxis="x2", yaxis="y2"))
        return out

    def frame(t0, t1):
        fill, text, arrows = state(t0, t1)
        cells = go.Scatter(x=cell_x, y=cell_y, mode="markers+text", text=text,
                           textfont={"size": 10, "color": [_ink(c) for c in fill]}, hoverinfo="skip",
                           showlegend=False,
                           marker={"symbol": "square", "size": 26, "color": fill,
                                   "line": {"color": "#888888", "width": 1}})
        dma = go.Scatter(x=[(X_IN + X_VIN) / 2, (X_VOUT + X_OUT) / 2], y=[2.0, 2.0],
                         text=[a[1] for a in arrows], mode="markers+text",
                         textposition="top center", hoverinfo="skip", showlegend=False,
                         marker={"symbol": "arrow", "angle": 90, "size": 18,
                                 "color": [a[0] for a in arrows],
                                 "line": {"color": [blank if a[0] == blank else "#222222"
                                                    for a in arrows], "width": 1}})
        return [cells, dma] + gantt(t1)

    mode = "读写共用一条 HBM 通道" if shared_hbm else "读、写各一条 HBM 通道"
    busy_vpu = sum(e - s for u, _, s, e in ev if u == "compute")

    def title(t0, t1, k):
        head = f"{op}：{n} 块流过芯片（{mode}）"
        if k == 0:
            return f"{head}：开始"
        if t0 >= total:
            return f"{head}：完成，总时间 {total:.3g}，VPU 忙 {busy_vpu / total:.0%}"
        what = "，".join(f"{_STREAM_VERB[u]}块 {i}" for u, i in
                        sorted(running(t0, t1), key=lambda k: (_STREAM_UNITS.index(k[0]), k[1])))
        return f"{head}：t = {t0:.3g}–{t1:.3g}，{what or '等待'}"

    intervals = [(0.0, 0.0)] + list(zip(times[:-1], times[1:])) + [(total, total)]
    fig = make_subplots(rows=2, cols=1, row_heights=[0.56, 0.44], vertical_spacing=0.08)
    for tr in frame(*intervals[0]):
        fig.add_trace(tr)
    names = [str(k) for k in range(len(intervals))]
    fig.frames = [go.Frame(name=names[k], data=frame(a, b), traces=list(range(7)),
                           layout={"title": {"text": title(a, b, k)}})
                  for k, (a, b) in enumerate(intervals)]
    shapes, notes = [], []
    for x, label in boxes:
        hw = 1.15 if label != "VPU" else 0.9
        y0, y1 = (-0.2, 4.0) if label.startswith("HBM") else (0.6, 3.4)
        shapes.append({"type": "rect", "xref": "x", "yref": "y", "x0": x - hw, "x1": x + hw,
                       "y0": y0, "y1": y1, "line": {"color": "#777777", "width": 1.5},
                       "fillcolor": "#f6f6f6", "layer": "below"})
        notes.append({"x": x, "y": y1 + 0.12, "xref": "x", "yref": "y", "text": label,
                      "showarrow": False, "yanchor": "bottom", "font": {"size": 11}})
    rl = _stream_rows(shared_hbm)
    fig.update_layout(
        title={"text": title(0, 0, 0), "font": {"size": 13}}, font=_FONT, template="plotly_white",
        height=640, margin={"l": 10, "r": 10, "t": 60, "b": 90}, shapes=shapes, annotations=notes,
        xaxis={"visible": False, "range": [-0.5, 16.5], "fixedrange": True},
        yaxis={"visible": False, "range": [-0.4, 4.7], "fixedrange": True},
        xaxis2={"range": [0, total * 1.02], "title": {"text": "时间（单位时间）"},
                "fixedrange": True},
        yaxis2={"range": [-0.6, 2.6], "tickvals": [0, 1, 2], "fixedrange": True,
                "ticktext": [rl["store"], rl["compute"], rl["load"]]})
    _anim_controls(fig, names, duration_ms, "帧：", y=-0.08)
    return _tidy_frames(fig)


__all__ += ["streaming_figure", "streaming_animation"]


# ---- inside a GPU, and an NVLink node (chapter 12) ---------------------------------------------

def _gpu_chip(chip):
    from . import hardware
    g = hardware.get(chip)
    if g.family != "gpu":
        raise ValueError(f"{g.name} is not a GPU; these drawings are of NVIDIA GPUs")
    return g


def gpu_chip_figure(chip="H100", ax=None):
    """A GPU as the catalogue describes it: one small box per SM (all ``n_sm`` of them, each
    with its Tensor Cores), the L2 cache in two halves, and HBM with its capacity and bandwidth.
    Not to scale. Numbers from ``hardware.get(chip)``: ``n_sm``, ``subpartitions_per_sm``
    (one Tensor Core each), ``l2_bytes``, ``hbm_bytes``, ``hbm_bw``, ``peak()``. Returns the axes.
    """
    import matplotlib.pyplot as plt
    from .plots import set_style
    from .units import fmt_num

    set_style()
    g = _gpu_chip(chip)
    n = g.n_sm
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.8))
    cols = 12 if n > 96 else 10
    rows = int(math.ceil(n / cols))
    w, hgt = 0.9, 2.9 / rows
    for i in range(n):
        r, c = divmod(i, cols)
        half = 0 if c < cols // 2 else 0.35            # the two halves of the chip
        _box(ax, c * w + half, 1.5 + (rows - 1 - r) * hgt, w * 0.82, hgt * 0.78, "",
             fc="#cfe3f3", ec="#5a7a99", lw=0.5)
    width = cols * w + 0.35
    ax.text(width / 2, 1.5 + rows * hgt + 0.08,
            f"{n} 个 SM，每个 {g.subpartitions_per_sm} 个 Tensor Core"
            f"（共 {n * g.subpartitions_per_sm} 个），bf16 峰值 {fmt_num(g.peak())} FLOPs/s",
            ha="center", va="bottom", fontsize=8)
    for k in range(2):
        x0 = k * (width / 2 + 0.1)
        _box(ax, x0, 0.85, width / 2 - 0.1, 0.5, f"L2 的一半（{g.l2_bytes / 2e6:.0f} MB）",
             fc="#d7ecd9", ec="#4d7a55", fs=8, va="center")
    _box(ax, 0, 0.0, width, 0.6, f"HBM：{g.hbm_bytes / 1e9:.0f} GB，{fmt_num(g.hbm_bw)} B/s",
         fc="#f3d9e8", ec="#8a4d6d", fs=8, va="center")
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-0.15, 1.5 + rows * hgt + 0.45)
    ax.axis("off")
    ax.set_title(f"{g.name} 示意图（不按比例）", fontsize=10)
    return ax


def sm_figure(chip="H100", ax=None):
    """One SM from the catalogue: ``subpartitions_per_sm`` subpartitions, each with one Tensor
    Core, a warp scheduler with ``fp32_lanes_per_subpartition`` fp32 lanes (CUDA cores) and its
    share of the register file (``regs_bytes_per_sm`` / subpartitions); SMEM/L1
    (``smem_bytes_per_sm``) and, on Blackwell, TMEM (``tmem_bytes_per_sm``). Returns the axes."""
    import matplotlib.pyplot as plt
    from .plots import set_style
    from .units import KiB

    set_style()
    g = _gpu_chip(chip)
    q = g.subpartitions_per_sm
    if not q or not g.fp32_lanes_per_subpartition or not g.regs_bytes_per_sm:
        raise ValueError(f"the catalogue lacks {g.name}'s SM layout (subpartitions, lanes, registers)")
    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 4.2))
    cols = 2
    rows = int(math.ceil(q / cols))
    regs = g.regs_bytes_per_sm / q
    for k in range(q):
        x, y = (k % cols) * 2.6, (rows - 1 - k // cols) * 2.0 + 1.2
        _box(ax, x, y, 2.4, 1.8, f"子分区 {k}", fc="#f4f4f4", ec="#555555", fs=7)
        _box(ax, x + 0.1, y + 0.8, 1.0, 0.65, "Tensor\nCore", fc="#cfe3f3", ec="#5a7a99", fs=7,
             va="center")
        _box(ax, x + 1.25, y + 0.8, 1.05, 0.65,
             f"warp 调度器\n{g.fp32_lanes_per_subpartition} 条 fp32 lane", fc="#fde2cf", ec="#a86a3d",
             fs=6.5, va="center")
        _box(ax, x + 0.1, y + 0.1, 2.2, 0.55,
             f"寄存器 {regs / KiB:.0f} KiB\n{int(regs // 4):,} 个 32 位", fc="#e6e6e6", ec="#777777",
             fs=6.5, va="center")
    mem = f"SMEM / L1 共 {g.smem_bytes_per_sm / KiB:.0f} KiB"
    if g.tmem_bytes_per_sm:
        mem += f"；TMEM {g.tmem_bytes_per_sm / KiB:.0f} KiB"
    _box(ax, 0, 0.0, 5.0, 0.9, mem, fc="#d7ecd9", ec="#4d7a55", fs=8, va="center")
    ax.set_xlim(-0.2, 5.3)
    ax.set_ylim(-0.2, rows * 2.0 + 1.3)
    ax.axis("off")
    ax.set_title(f"{g.name} 的一个 SM：{q} 个子分区，{q * g.fp32_lanes_per_subpartition} 个 CUDA 核心",
                 fontsize=10)
    return ax


def nvswitch_links(chip="H100") -> tuple:
    """How one GPU's ``nvlink_links`` NVLink ports spread over the node's ``nvswitches_per_node``
    NVSwitches, as evenly as possible with the extra links on the outer switches (H100: 18 links
    over 4 switches = (5, 4, 4, 5), as in the DGX H100; B200: (9, 9); A100: six 2s)."""
    g = _gpu_chip(chip)
    L, S = g.nvlink_links, g.nvswitches_per_node
    if not L or not S:
        raise ValueError(f"the catalogue has no NVLink/NVSwitch layout for {g.name} "
                         f"(nvlink_links={L}, nvswitches_per_node={S})")
    base, extra = divmod(L, S)
    out = [base] * S
    ends = [i for pair in zip(range(S), range(S - 1, -1, -1)) for i in pair]
    for i in list(dict.fromkeys(ends))[:extra]:
        out[i] += 1
    return tuple(out)


def nvlink_node_figure(chip="H100", ax=None):
    """An NVLink node drawn from ``topology.NvlinkNode(chip)`` and the catalogue: its GPUs, its
    NVSwitches, and every GPU's links to every switch (line width = number of links, from
    ``nvswitch_links``); the title gives the per-GPU bandwidth (links × per-link) and the node's
    total, min(GPUs × per-GPU, switch capacity). Returns the axes."""
    import matplotlib.pyplot as plt
    from . import topology as topo
    from .plots import set_style
    from .units import fmt_num

    set_style()
    g = _gpu_chip(chip)
    node = topo.NvlinkNode(g)
    per = nvswitch_links(g)
    N, S = node.n_gpus, len(per)
    if N > 16:
        raise ValueError(f"{N} GPUs per node: draw nodes of up to 16 GPUs (GB200 NVL72 has its "
                         f"own figure in topology)")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.1))
    gx = np.linspace(0.5, 9.5, N)
    sx = np.linspace(5 - min(3.8, 1.3 * (S - 1)), 5 + min(3.8, 1.3 * (S - 1)), S)
    for x in gx:
        for j, xs in enumerate(sx):
            ax.plot([x, xs], [0.4, 2.2], color="0.6", lw=0.4 * per[j], zorder=1)
    for j, xs in enumerate(sx):
        used = N * per[j]
        _box(ax, xs - 0.7, 2.2, 1.4, 0.75,
             f"NVSwitch {j}\n每 GPU {per[j]} 条\n用 {used}/{node.switch_ports} 口", fc="#d7ecd9",
             ec="#4d7a55", fs=7, va="center")
    for i, x in enumerate(gx):
        _box(ax, x - 0.42, 0.0, 0.84, 0.4, f"GPU{i}", fc="#cfe3f3", ec="#5a7a99", fs=7, va="center")
    ax.set_xlim(-0.2, 10.2)
    ax.set_ylim(-0.2, 3.1)
    ax.axis("off")
    split = "+".join(map(str, per))
    ax.set_title(f"{N}×{g.name} 节点：每 GPU {g.nvlink_links} 条 NVLink {g.nvlink_gen}（{split}）"
                 f"× {fmt_num(g.nvlink_link_bw_1way)} B/s = {fmt_num(node.gpu_bw)} B/s 单向；"
                 f"节点合计 {fmt_num(node.total_bw)} B/s", fontsize=9)
    return ax


__all__ += ["gpu_chip_figure", "sm_figure", "nvswitch_links", "nvlink_node_figure"]


# ---- SHARP: the switch reduces (chapter 12) ----------------------------------------------------------

def _sharp_node(topo):
    from . import topology as topo_mod
    t = topo_mod.get(topo)
    if not isinstance(t, topo_mod.NvlinkNode):
        raise ValueError(f"SHARP is drawn on one NVLink node (e.g. 'h100-node-sharp'); got "
                         f"{t.describe()}")
    return t


def sharp_steps(topo="h100-node-sharp", nbytes=1.0) -> list:
    """The four steps of an AllReduce of ``nbytes`` (V) reduced in the NVSwitches (NVLink SHARP)
    on an N-GPU node, counted per GPU: ``[(what, direction, bytes per GPU, state)]`` with
    direction "上行" (GPU → switch) or "下行" (switch → GPU).

    1. every GPU sends the N−1 chunks it does not own: V(N−1)/N up;
    2. the switch sums them and sends each GPU the sum of its own chunk: V/N down;
    3. each GPU adds its own contribution and sends the finished chunk back: V/N up;
    4. the switch multicasts every finished chunk to the other GPUs: V(N−1)/N down.

    ``state`` after the step: ``(gpu, switch)``, an N × N array (GPU g, chunk c) and an N-array
    (chunk c) of how many GPUs' contributions the copy there holds (0 = none). Each GPU sends V
    and receives V in total, so the time is V / W_GPU: the SHARP path of
    ``collectives.collective_time`` (tested against it).
    """
    from .units import check_nonneg

    t = _sharp_node(topo)
    v = float(check_nonneg("nbytes", nbytes, allow_array=False))
    N = t.n_gpus
    own = np.eye(N, dtype=int)                       # GPU g owns (ends up reducing) chunk g
    return [
        ("每颗 GPU 把不归自己的 N−1 块发给交换机", "上行", v * (N - 1) / N,
         (own.copy(), np.full(N, N - 1))),          # the switch sums N−1 contributions per chunk
        ("交换机求和，把每块的和发给负责它的 GPU", "下行", v / N,
         (own * (N - 1), np.zeros(N, dtype=int))),   # the sum of the others; own not yet added
        ("GPU 加上自己那份，把算好的块送回交换机", "上行", v / N,
         (own * N, np.full(N, N))),
        ("交换机把每块组播给其余 N−1 颗 GPU", "下行", v * (N - 1) / N,
         (np.full((N, N), N), np.full(N, N))),
    ]


def sharp_figure(topo="h100-node-sharp", nbytes=1e9):
    """NVLink SHARP's data flow next to the ring: four panels, one per step of ``sharp_steps``
    (the switch at the top with the partial sums it holds, the GPUs below with theirs, arrows
    labelled with the bytes per GPU), and a fifth with the bytes each GPU sends and receives
    over its NVLink and the resulting time, SHARP vs ring, from ``collectives.collective_time``
    on the same node with and without ``sharp``. Returns the Figure."""
    import dataclasses

    import matplotlib.pyplot as plt
    from . import collectives as coll_mod
    from .plots import set_style
    from .units import fmt_bytes, fmt_time

    set_style()
    t = _sharp_node(topo)
    t_sharp = dataclasses.replace(t, sharp=True)
    t_ring = dataclasses.replace(t, sharp=False)
    steps = sharp_steps(t_sharp, nbytes)
    N = t.n_gpus
    cols = palette(N)
    fig = plt.figure(figsize=(12, 6.2), constrained_layout=True)
    gs = fig.add_gridspec(2, 3, width_ratios=[1, 1, 0.8])
    cw = 1.0 / N

    def cells(ax, x0, y0, w, counts):
        import matplotlib.patches as mp
        for c in range(N):
            k = int(counts[c])
            fc = "#ffffff" if k == 0 else _mix(cols[c], 0.2 + 0.8 * k / N)
            ax.add_patch(mp.Rectangle((x0 + c * w * cw, y0), w * cw, 0.22, facecolor=fc,
                                      edgecolor="#888888", lw=0.4))

    for k, (what, direction, b, (gpu, sw)) in enumerate(steps):
        ax = fig.add_subplot(gs[k // 2, k % 2])
        ax.set_xlim(-0.3, N * 1.2)
        ax.set_ylim(-0.35, 3.0)
        ax.axis("off")
        sx0, swid = N * 0.6 - 1.8, 3.6
        _box(ax, sx0, 2.2, swid, 0.7, "NVSwitch（合起来看作一个）", fc="#d7ecd9", ec="#4d7a55",
             fs=7)
        cells(ax, sx0 + 0.1, 2.3, swid - 0.2, sw)
        for gi in range(N):
            x = gi * 1.2
            _box(ax, x, 0.0, 1.0, 0.55, f"GPU{gi}", fc="#f7f7f7", ec=cols[gi], fs=6.5)
            cells(ax, x + 0.05, 0.05, 0.9, gpu[gi])
            up = direction == "上行"
            ax.annotate("", xy=(sx0 + swid * (gi + 0.5) / N, 2.2) if up else (x + 0.5, 0.58),
                        xytext=(x + 0.5, 0.58) if up else (sx0 + swid * (gi + 0.5) / N, 2.2),
                        arrowprops={"arrowstyle": "->", "color": "#D55E00" if up else "#0072B2",
                                    "lw": 0.6 + 2.4 * b / max(s[2] for s in steps)})
        ax.set_title(f"第 {k + 1} 步（{direction}）：{what}\n每颗 GPU {direction} "
                     f"{fmt_bytes(b)}（V 的 {b / nbytes:.3g}）", fontsize=8)
    ax = fig.add_subplot(gs[:, 2])
    ring = coll_mod.collective_time("all_reduce", nbytes, t_ring)
    shp = coll_mod.collective_time("all_reduce", nbytes, t_sharp)
    up = sum(s[2] for s in steps if s[1] == "上行")
    down = sum(s[2] for s in steps if s[1] == "下行")
    ring_bytes = float(ring.t_bandwidth) * t.gpu_bw
    labels = ["环形：发出", "环形：收进", "SHARP：发出", "SHARP：收进"]
    vals = [ring_bytes, ring_bytes, up, down]
    ax.barh(labels, [v / nbytes for v in vals],
            color=[COLORS["memory"], _mix(COLORS["memory"], 0.5), COLORS["comms"],
                   _mix(COLORS["comms"], 0.5)])
    for i, v in enumerate(vals):
        ax.text(v / nbytes + 0.03, i, f"{v / nbytes:.3g} V", va="center", fontsize=8)
    ax.set_xlim(0, 2.3)
    ax.invert_yaxis()
    ax.set_xlabel("每颗 GPU 经自己的 NVLink 的字节数（单位 V）")
    ax.set_title(f"每 GPU 链路上的字节\n环形 {fmt_time(float(ring.t_bandwidth))}，SHARP "
                 f"{fmt_time(float(shp.t_bandwidth))}（带宽项，V = {fmt_bytes(nbytes)}）",
                 fontsize=8)
    fig.suptitle(f"{N}×{t.gpu.name} 节点上的 AllReduce：交换机做归约（NVLink SHARP），"
                 f"格子的深浅 = 已加进去的 GPU 份数", fontsize=10)
    return fig


__all__ += ["sharp_steps", "sharp_figure"]


# ---- pipelines in time: unequal F and B, transfers, the data-parallel AllReduce (chapter 12) -------

_TRANSFER_RED = "#B2182B"


def _fb_needs(Z: int):
    """The inputs of a pass on a Z-stage pipeline, for ``pipeline.schedule_ops`` (ops are
    (kind, stage, microbatch)): F(s, m) waits for F(s−1, m), B(s, m) for F(s, m) and B(s+1, m),
    W(s, m) for B(s, m)."""
    def needs(s, op):
        kind, _, m = op
        if kind == "F":
            return [("F", s - 1, m)] if s > 0 else []
        if kind == "W":
            return [("B", s, m)]
        return [("F", s, m)] + ([("B", s + 1, m)] if s < Z - 1 else [])
    return needs


def pipeline_events(schedule="gpipe", n_stages: int = 2, n_micro: int = 2, t_fwd=1.0, t_bwd=2.0,
                    t_transfer=0.0, t_allreduce=0.0) -> list:
    """A pipeline schedule in time: ``[(stage, kind, microbatch, start, end)]``, kind "F"
    (forward), "B" (backward), "XF" (the activations of F leaving the stage for stage + 1),
    "XB" (the gradients of B leaving for stage − 1) or "G" (the stage's data-parallel gradient
    AllReduce; microbatch −1).

    Each stage runs its forwards and backwards in the order of ``training.pipeline_schedule(
    schedule, n_stages, n_micro)`` (so GPipe and 1F1B are the training model's), each as early
    as its inputs allow: F(s, m) after F(s−1, m) and its transfer, B(s, m) after F(s, m) and
    after B(s+1, m) and its transfer. A forward takes ``t_fwd``, a backward ``t_bwd`` (2·t_fwd:
    the weight and input gradients), a transfer ``t_transfer`` (it occupies the link, not the
    stage), and a stage's AllReduce ``t_allreduce`` starts after its last backward: it cannot
    start before the last microbatch has passed the stage. With t_fwd = t_bwd = 1 and no
    transfers this reproduces the grid's time steps exactly (tested).
    """
    from . import training
    from .units import check_nonneg

    tf = float(check_nonneg("t_fwd", t_fwd, allow_array=False))
    tb = float(check_nonneg("t_bwd", t_bwd, allow_array=False))
    tx = float(check_nonneg("t_transfer", t_transfer, allow_array=False))
    tg = float(check_nonneg("t_allreduce", t_allreduce, allow_array=False))
    if tf <= 0 or tb <= 0:
        raise ValueError(f"t_fwd and t_bwd must be > 0, got {t_fwd!r} and {t_bwd!r}")
    grid = np.asarray(training.pipeline_schedule(schedule, n_stages, n_micro))
    Z = grid.shape[0]
    orders = [[("F" if v > 0 else "B", s, abs(int(v)) - 1) for v in row if v != 0]
              for s, row in enumerate(grid)]
    placed = _pl.schedule_ops(orders, _fb_needs(Z), lambda s, op: tf if op[0] == "F" else tb,
                              transfer=tx)
    ev, end = [], {}                          # end: ("F"|"B", s, m) -> end time
    for s, (kind, _, m), start, stop in placed:
        end[(kind, s, m)] = stop
        ev.append((s, kind, m, start, stop))
        if tx > 0 and ((kind == "F" and s < Z - 1) or (kind == "B" and s > 0)):
            ev.append((s, "X" + kind, m, stop, stop + tx))
    if tg > 0:
        for s in range(Z):
            last = max(e for (k, ss, _), e in end.items() if ss == s and k == "B")
            ev.append((s, "G", -1, last, last + tg))
    return sorted(ev, key=lambda e: (e[3], e[0], e[1]))


def pipeline_idle(events, n_stages: int) -> float:
    """Share of stage time not spent computing (F, B or W) between 0 and the end of the last event:
    the bubble, plus AllReduce time that nothing overlaps."""
    total = max(e[4] for e in events)
    busy = sum(e[4] - e[3] for e in events if e[1] in ("F", "B", "W"))
    return 1.0 - busy / (n_stages * total)


def pipeline_timeline_figure(schedule="gpipe", n_stages: int = 2, n_micro: int = 2, t_fwd=1.0,
                             t_bwd=2.0, t_transfer=0.0, t_allreduce=0.0, ax=None, title=None):
    """``pipeline_events`` drawn: one row per stage, forwards "F m" (blue), backwards "B m"
    (orange, twice as long by default), the data-parallel AllReduce "G" (red, after the stage's
    last backward) and transfers between stages as red bars in the gap between the rows;
    idle time hatched. The title gives the step time and the idle share. Returns the axes."""
    import matplotlib.patches as mp
    import matplotlib.pyplot as plt
    from .plots import set_style

    set_style()
    ev = pipeline_events(schedule, n_stages, n_micro, t_fwd, t_bwd, t_transfer, t_allreduce)
    head = title or f"{str(schedule).upper()}：{int(n_stages)} 个阶段，{n_micro} 个微批次"
    return _draw_pipeline_events(ax, ev, int(n_stages), head)


def _draw_pipeline_events(ax, ev, Z: int, head: str):
    """Draw ``pipeline_events`` / ``zero_bubble_events`` on ``ax`` (a new one if None)."""
    import matplotlib.patches as mp
    import matplotlib.pyplot as plt

    total = max(e[4] for e in ev)
    kinds = {e[1] for e in ev}
    if ax is None:
        _, ax = plt.subplots(figsize=(min(13, 2 + 0.45 * total), 0.8 + 0.75 * Z))
    for s in range(Z):
        ax.add_patch(mp.Rectangle((0, s + 0.15), total, 0.7, facecolor="#eeeeee",
                                  edgecolor="#cccccc", hatch="///", lw=0.5, zorder=0))
    fc = {"F": COLORS["compute"], "B": COLORS["memory"], "W": COLORS["yellow"], "G": COLORS["comms"]}
    for s, kind, m, a, b in ev:
        if kind in ("XF", "XB"):
            y = s + 1.0 if kind == "XF" else float(s)      # the gap toward the receiving stage
            ax.add_patch(mp.Rectangle((a, y - 0.1), b - a, 0.2, facecolor=_TRANSFER_RED,
                                      edgecolor="none", zorder=3))
            continue
        ax.add_patch(mp.Rectangle((a, s + 0.15), b - a, 0.7, facecolor=fc[kind], edgecolor="white",
                                  lw=0.8, zorder=2))
        ax.text((a + b) / 2, s + 0.5, "G" if kind == "G" else f"{kind}{m}", ha="center",
                va="center", color="white", fontsize=8, zorder=4)
    ax.set_xlim(0, total)
    ax.set_ylim(Z, 0)
    ax.set_yticks(np.arange(Z) + 0.5, [f"阶段 {s}" for s in range(Z)])
    ax.set_xlabel("时间（单位：一个阶段的一次前向）")
    ax.grid(False)
    handles = [mp.Patch(facecolor=COLORS["compute"], label="F 前向（数字：微批次）"),
               mp.Patch(facecolor=COLORS["memory"],
                        label="B 对输入的梯度" if "W" in kinds else "B 反向")]
    if "W" in kinds:
        handles.append(mp.Patch(facecolor=COLORS["yellow"], label="W 对权重的梯度"))
    handles.append(mp.Patch(facecolor="#eeeeee", hatch="///", edgecolor="#cccccc", label="空闲"))
    if "G" in kinds:
        handles.append(mp.Patch(facecolor=COLORS["comms"], label="G 数据并行 AllReduce"))
    if kinds & {"XF", "XB"}:
        handles.append(mp.Patch(facecolor=_TRANSFER_RED, label="阶段间传输"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"{head}，一步 {total:.3g} 个单位，计算空闲占 {pipeline_idle(ev, Z):.0%}",
                 fontsize=10)
    return ax


def zero_bubble_order(n_stages: int, n_micro: int, stage: int) -> list:
    """The order in which ``stage`` runs its passes in ZB-H1 (Qi et al. 2023, "Zero Bubble
    Pipeline Parallelism"): ``[(kind, microbatch)]`` with kind "F" (forward), "B" (gradient with
    respect to the stage's input: stage − 1 waits for it) and "W" (gradient with respect to the
    weights: nobody waits for it).

    Stage s starts with Z − s − 1 forwards, then s rounds of "F, B" (their W postponed), then
    "F, B, W" while forwards remain, then "B, W", and ends with the s postponed W. Like 1F1B, at
    most Z − s microbatches are between their F and their B on stage s; the postponed W fill
    the bubbles at the end of the step."""
    from .units import check_int

    Z, M = check_int("n_stages", n_stages), check_int("n_micro", n_micro)
    s = check_int("stage", stage, 0)
    if s >= Z:
        raise ValueError(f"stage must be < n_stages = {Z}, got {stage}")
    out, f, b, w = [], 0, 0, 0
    for _ in range(min(Z - s - 1, M)):
        out.append(("F", f))
        f += 1
    for _ in range(s):
        if f == M:
            break
        out += [("F", f), ("B", b)]
        f, b = f + 1, b + 1
    while f < M:
        out += [("F", f), ("B", b), ("W", w)]
        f, b, w = f + 1, b + 1, w + 1
    while b < M:
        out += [("B", b), ("W", w)]
        b, w = b + 1, w + 1
    out += [("W", m) for m in range(w, M)]
    return out


def zero_bubble_events(n_stages: int = 4, n_micro: int = 8, t_fwd=1.0, t_bgrad=1.0,
                       t_wgrad=1.0) -> list:
    """The ZB-H1 zero-bubble schedule in time, in the format of ``pipeline_events``:
    ``[(stage, kind, microbatch, start, end)]``, kind "F", "B" or "W" (see ``zero_bubble_order``).

    Each stage runs ``zero_bubble_order`` as early as the inputs allow: F(s, m) after F(s−1, m),
    B(s, m) after F(s, m) and B(s+1, m), W(s, m) after B(s, m). Splitting the backward is the
    whole trick: B travels down the pipeline without waiting for W, and the W fill the gaps.
    For n_micro >= n_stages the step takes M(F + B + W) + (Z − 1)(F + B − W) (tested), against
    1F1B's (M + Z − 1)(F + B + W): with F = B = W a third of the bubble, the idle share
    ``pipeline.bubble_fraction(Z, M, "zb")`` (tested).
    """
    from .units import check_nonneg

    tf = float(check_nonneg("t_fwd", t_fwd, allow_array=False))
    tb = float(check_nonneg("t_bgrad", t_bgrad, allow_array=False))
    tw = float(check_nonneg("t_wgrad", t_wgrad, allow_array=False))
    if tf <= 0 or tb <= 0 or tw <= 0:
        raise ValueError(f"t_fwd, t_bgrad and t_wgrad must be > 0, got {t_fwd!r}, {t_bgrad!r}, "
                         f"{t_wgrad!r}")
    orders = [[(kind, s, m) for kind, m in zero_bubble_order(n_stages, n_micro, s)]
              for s in range(int(n_stages))]
    dur = {"F": tf, "B": tb, "W": tw}
    placed = _pl.schedule_ops(orders, _fb_needs(len(orders)), lambda s, op: dur[op[0]])
    ev = [(s, kind, m, start, stop) for s, (kind, _, m), start, stop in placed]
    return sorted(ev, key=lambda e: (e[3], e[0], e[1]))


def zero_bubble_figure(n_stages: int = 4, n_micro: int = 8, t_fwd=1.0, t_bgrad=1.0, t_wgrad=1.0):
    """1F1B above ZB-H1 below on the same time axis: ``pipeline_events("1f1b", …)`` with one
    backward of t_bgrad + t_wgrad (the training model's 1F1B) and ``zero_bubble_events``. Titles:
    the step time and the idle share. Returns the Figure."""
    import matplotlib.pyplot as plt
    from .plots import set_style

    set_style()
    one = pipeline_events("1f1b", n_stages, n_micro, t_fwd, float(t_bgrad) + float(t_wgrad))
    zb = zero_bubble_events(n_stages, n_micro, t_fwd, t_bgrad, t_wgrad)
    Z = int(n_stages)
    total = max(e[4] for e in one)
    fig, axes = plt.subplots(2, 1, figsize=(min(13, 2.5 + 0.3 * total), 1.6 + 1.4 * Z),
                             sharex=True)
    _draw_pipeline_events(axes[0], one, Z, f"1F1B（反向不拆）：{Z} 个阶段，{n_micro} 个微批次")
    _draw_pipeline_events(axes[1], zb, Z, "ZB-H1（反向拆成 B 和 W，W 去填气泡）")
    axes[0].set_xlabel("")
    axes[1].set_xlim(0, total)
    return fig


__all__ += ["pipeline_events", "pipeline_idle", "pipeline_timeline_figure", "zero_bubble_order",
            "zero_bubble_events",
            "zero_bubble_figure"]


def _draw_dualpipe_events(ax, ev, P: int, head: str):
    """Draw ``pipeline.dualpipe_events`` on ``ax``: one row per device; direction 0 (fed at
    device 0) in full colour, direction 1 (fed at device P−1) lighter; an overlapped F&B pair as
    its two passes stacked (F above, the other direction's backward below) in one black frame."""
    import matplotlib.patches as mp
    from . import pipeline as _pl

    total = max(e[5] for e in ev)
    for r in range(P):
        ax.add_patch(mp.Rectangle((0, r + 0.1), total, 0.8, facecolor="#eeeeee",
                                  edgecolor="#cccccc", hatch="///", lw=0.5, zorder=0))
    base = {"F": COLORS["compute"], "B": COLORS["memory"], "BW": "#8C3A00", "W": COLORS["yellow"]}
    fs = 7 if total <= 40 else 5.5
    for r, kind, d, m, a, b, pair in ev:
        fc = base[kind] if d == 0 else _mix(base[kind], 0.5)
        y, h = (r + 0.1, 0.8) if not pair else ((r + 0.1, 0.4) if kind == "F" else (r + 0.5, 0.4))
        ax.add_patch(mp.Rectangle((a, y), b - a, h, facecolor=fc, edgecolor="white", lw=0.6,
                                  zorder=2))
        ax.text((a + b) / 2, y + h / 2, str(m), ha="center", va="center", fontsize=fs, zorder=4,
                color="white" if d == 0 else "#222222")
        if pair and kind == "F":
            ax.add_patch(mp.Rectangle((a, r + 0.1), b - a, 0.8, fill=False,
                                      edgecolor="black", lw=1.3, zorder=5))
    ax.set_xlim(0, total)
    ax.set_ylim(P, 0)
    ax.set_yticks(np.arange(P) + 0.5, [f"设备 {r}" for r in range(P)])
    ax.set_xlabel("时间（单位：一个阶段的一次前向）")
    ax.grid(False)
    idle = _pl.dualpipe_idle(ev, P)
    ax.set_title(f"{head}，一步 {total:.3g} 个单位，每设备空闲 {max(idle):.3g} 个单位"
                 f"（占 {max(idle) / total:.0%}）", fontsize=10)
    return ax


def dualpipe_figure(n_stages: int = 8, n_micro: int = 20, t_fwd=1.0, t_bgrad=1.0, t_wgrad=1.0,
                    t_fb=None, compare: bool = True):
    """DualPipe (DeepSeek-V3, ``pipeline.DUALPIPE_SOURCE``) drawn from ``pipeline.dualpipe_events``:
    devices × time, microbatches fed from both ends (direction 0 from device 0 in full colour,
    direction 1 from device P−1 lighter), F blue, B (input gradient) orange, W (weight gradient)
    yellow, a whole backward B+W dark orange; an overlapped F&B pair is one black frame holding
    a forward of one direction above a backward of the other. Numbers: the microbatch within its
    direction. ``compare``: 1F1B (``pipeline_events``, backward = t_bgrad + t_wgrad) and ZB-H1
    (``zero_bubble_events``) with the same devices and microbatches above it, on one time
    axis; each title gives the step and the idle time per device (the report's Table 2
    expressions at F = B = W, ``pipeline.bubble_time``). Returns the Figure."""
    import matplotlib.patches as mp
    import matplotlib.pyplot as plt
    from . import pipeline as _pl
    from .plots import set_style

    if not isinstance(compare, bool):
        raise TypeError(f"compare must be True or False, got {compare!r}")
    set_style()
    ev = _pl.dualpipe_events(n_stages, n_micro, t_fwd, t_bgrad, t_wgrad, t_fb)
    P = int(n_stages)
    rows = []
    if compare:
        one = pipeline_events("1f1b", P, n_micro, t_fwd, float(t_bgrad) + float(t_wgrad))
        zb = zero_bubble_events(P, n_micro, t_fwd, t_bgrad, t_wgrad)
        rows = [(one, f"1F1B：{P} 个阶段，{n_micro} 个微批次"),
                (zb, "ZB-H1（反向拆成 B 和 W）")]
    total = max([max(e[5] for e in ev)] + [max(e[4] for e in r[0]) for r in rows])
    fig, axes = plt.subplots(len(rows) + 1, 1, sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": [0.55] * len(rows) + [1.0]},
                             figsize=(min(10, 2.5 + 0.13 * total), 1.3 + 0.36 * P * (1 + 0.55 * len(rows))))
    axes = axes[:, 0]
    for ax, (e, head) in zip(axes, rows):
        _draw_pipeline_events(ax, e, P, head)
        busy = sum(x[4] - x[3] for x in e if x[0] == 0 and x[1] in ("F", "B", "W"))
        t = max(x[4] for x in e)
        ax.set_title(f"{head}，一步 {t:.3g} 个单位，每设备空闲 {t - busy:.3g} 个单位"
                     f"（占 {(t - busy) / t:.0%}）", fontsize=10)
        ax.set_xlabel("")
        ax.set_yticks(np.arange(P) + 0.5, [f"设备 {r}" for r in range(P)])
        ax.get_legend().remove()
        for txt in list(ax.texts):                       # the comparison: cells only,
            txt.remove()                                  # the numbers are in DualPipe's panel
        ax.tick_params(axis="y", labelsize=7)
    _draw_dualpipe_events(axes[-1], ev, P,
                          f"DualPipe：两个方向各 {int(n_micro) // 2} 个微批次")
    axes[-1].set_xlim(0, total)
    fc = lambda k, d: COLORS[k] if d == 0 else _mix(COLORS[k], 0.5)  # noqa: E731
    handles = [mp.Patch(facecolor=fc("compute", 0), label="F 前向（数字：微批次）"),
               mp.Patch(facecolor=fc("memory", 0), label="B 对输入的梯度"),
               mp.Patch(facecolor=fc("yellow", 0), label="W 对权重的梯度"),
               mp.Patch(facecolor="#8C3A00", label="B+W 不拆的反向"),
               mp.Patch(facecolor=fc("compute", 1), label="浅色：从另一端送入的方向"),
               mp.Patch(facecolor="white", edgecolor="black", label="黑框：F 与 B 重叠（F&B）"),
               mp.Patch(facecolor="#eeeeee", hatch="///", edgecolor="#cccccc", label="空闲")]
    fig.legend(handles=handles, loc="outside lower center", ncol=4)
    return fig


__all__ += ["dualpipe_figure"]


# ---- inference: what the KV-cache tricks and the serving tricks look like (chapter 7) ----------------

def kv_head_of(n_heads: int, n_kv_heads: int) -> list:
    """Which KV head each query head reads: query head n uses KV head n // G, G = N / K (the
    grouping of ``kv_decode.decode_block``, which reshapes the N query heads to [K, G])."""
    from .units import check_int

    N, K = check_int("n_heads", n_heads), check_int("n_kv_heads", n_kv_heads)
    if N % K:
        raise ValueError(f"n_kv_heads must divide n_heads: {N} query heads, {K} KV heads")
    return [n // (N // K) for n in range(N)]


def head_sharing_figure(n_heads: int = 8, kv_heads=(8, 2, 1), head_dim: int = 128,
                        context: int = 8192, kv="bf16"):
    """MHA, GQA and MQA side by side: the N query heads on top, the K KV heads below, a line from
    every query head to the KV head it reads (``kv_head_of``). Under each panel: the KV cache per
    token per layer, 2·K·H·b_kv (the per-layer share of ``inference.kv_bytes_per_token``), and
    the decode attention intensity over ``context`` cached tokens,
    ``inference.attention_intensity(context, 1, G)``. Returns the Figure."""
    import matplotlib.pyplot as plt
    from . import inference as inf
    from .plots import set_style
    from .units import check_int, fmt_bytes

    set_style()
    N, H = check_int("n_heads", n_heads), check_int("head_dim", head_dim)
    if N > 32:
        raise ValueError(f"n_heads must be <= 32 for a readable picture, got {n_heads}")
    kvs = [check_int("kv_heads", k) for k in kv_heads]
    if not kvs:
        raise ValueError("kv_heads must name at least one KV-head count")
    b = inf.bytes_per_elem(kv)
    fig, axes = plt.subplots(1, len(kvs), figsize=(3.6 * len(kvs), 3.0), squeeze=False)
    for ax, K in zip(axes[0], kvs):
        owner = kv_head_of(N, K)
        G = N // K
        cols = palette(K) if K <= 8 else [palette(8)[k % 8] for k in range(K)]
        qx = np.linspace(0.5, 9.5, N)
        kx = [float(np.mean([qx[n] for n in range(N) if owner[n] == k])) for k in range(K)]
        for n in range(N):
            ax.plot([qx[n], kx[owner[n]]], [2.0, 0.75], color=cols[owner[n]], lw=1.2, zorder=1)
        w = min(0.8, 9.0 / N)
        for n in range(N):
            _box(ax, qx[n] - w / 2, 2.0, w, 0.5, f"Q{n}" if N <= 16 else "",
                 fc=_mix(cols[owner[n]], 0.35), ec=cols[owner[n]], fs=6.5, va="center")
        wk = min(1.6, 9.0 / K - 0.2)
        for k in range(K):
            _box(ax, kx[k] - wk / 2, 0.15, wk, 0.6, "K,V" if K > 4 else f"K{k}, V{k}",
                 fc=cols[k], ec="#333333", fs=6.5, va="center")
        name = "MHA" if K == N else ("MQA" if K == 1 else "GQA")
        per_tok = 2 * K * H * b
        ax.set_title(f"{name}：N = {N} 个查询头，K = {K} 个 KV 头（G = {G}）", fontsize=9)
        ax.text(5, -0.35, f"每层每 token 的 KV：2·K·H·b = {fmt_bytes(per_tok)}\n"
                f"解码注意力强度 ≈ {float(inf.attention_intensity(context, 1, G)):.1f} FLOPs/字节",
                ha="center", va="top", fontsize=8)
        ax.set_xlim(0, 10)
        ax.set_ylim(-1.3, 2.7)
        ax.axis("off")
    return fig


def cross_layer_kv_figure(model="LLaMA-3-8B", share: int = 2, seq_len: int = 8192, kv="bf16"):
    """Cross-layer KV sharing: the model's layers in a row, the caches below, a line from every
    layer to the cache it reads (layer l reads cache l // ``share``), without sharing on top and
    with it below. The titles give, per sequence of ``seq_len`` tokens, the cache size (fewer
    caches) and the bytes read from HBM per decode step (unchanged: every layer still reads a
    whole layer's cache), from ``inference.kv_bytes_per_seq``. Returns the Figure."""
    import matplotlib.pyplot as plt
    from . import inference as inf
    from .plots import set_style
    from .units import check_int, fmt_bytes

    set_style()
    m = inf.served_model(model)
    L = m.n_layers
    r = check_int("share", share)
    if not 1 < r <= L:
        raise ValueError(f"share must be in 2..{L} (layers per shared cache), got {share}")
    if L > 128:
        raise ValueError(f"{m.name} has {L} layers; draw models of up to 128 layers")
    per_layer = float(inf.kv_bytes_per_seq(m, seq_len, kv)) / L
    fig, axes = plt.subplots(2, 1, figsize=(10, 3.6))
    x = np.linspace(0.2, 9.8, L)
    w = min(0.6, 9.0 / L)
    for ax, k in zip(axes, (1, r)):
        n_caches = -(-L // k)
        for c in range(n_caches):
            members = x[c * k:(c + 1) * k]
            cx, cw = float(members.mean()), float(members[-1] - members[0]) + w
            _box(ax, cx - cw / 2, 0.0, cw, 0.45, "", fc=_mix(COLORS["memory"], 0.5),
                 ec=COLORS["memory"], lw=0.8)
            for xl in members:
                ax.plot([xl, cx], [0.95, 0.45], color=COLORS["memory"], lw=0.7, zorder=1)
        for l, xl in enumerate(x):
            _box(ax, xl - w / 2, 0.95, w, 0.45, "", fc=_mix(COLORS["compute"], 0.4),
                 ec=COLORS["compute"], lw=0.6)
        head = "不共享：每层一份缓存" if k == 1 else f"每 {k} 层共享一份缓存"
        ax.set_title(f"{m.name}，{L} 层（上：层，下：KV 缓存）。{head}：{n_caches} 份，每序列 "
                     f"{fmt_bytes(n_caches * per_layer)}；每个解码步读 HBM {fmt_bytes(L * per_layer)}",
                     fontsize=9)
        ax.set_xlim(0, 10)
        ax.set_ylim(-0.1, 1.5)
        ax.axis("off")
    return fig


def prefix_trie(prompts) -> dict:
    """The prefix tree of ``prompts`` (lists of tokens, any hashable) as a prefix cache without
    a capacity limit stores it: ``nodes`` (every distinct prefix, a tuple, in insertion order;
    one node = one token's KV), ``count`` (prefix -> how many prompts pass through it) and
    ``hits`` (per prompt, the length of the longest prefix already cached when it arrived: the
    prefill tokens it skips). sum(hits) / total tokens is ``inference.prefix_saving(prompts)``
    (tested)."""
    if not isinstance(prompts, (list, tuple)) or not prompts:
        raise ValueError("prompts must be a non-empty list of token lists")
    nodes, count, hits = {}, {}, []
    for p in prompts:
        if not isinstance(p, (list, tuple)) or not p:
            raise ValueError(f"each prompt must be a non-empty list of tokens, got {p!r}")
        p = tuple(p)
        hits.append(max([i for i in range(len(p) + 1) if p[:i] in nodes or i == 0]))
        for i in range(1, len(p) + 1):
            nodes.setdefault(p[:i], None)
            count[p[:i]] = count.get(p[:i], 0) + 1
    return {"nodes": list(nodes), "count": count, "hits": hits}


def prefix_trie_figure(prompts, names=None):
    """The prefix tree that a prefix cache builds from ``prompts`` (``prefix_trie``): one box per
    cached token, left to right along each prompt, shared prefixes stored once and darker the
    more prompts pass through them; each prompt's last token is labelled with how many of its
    tokens were found in the cache when it arrived. The title gives the tokens stored, the
    tokens sent and the prefill saved, ``inference.prefix_saving(prompts)``. Returns the axes."""
    import matplotlib.patches as mp
    import matplotlib.pyplot as plt
    from . import inference as inf
    from .plots import set_style

    set_style()
    tr = prefix_trie(prompts)
    nodes, count = tr["nodes"], tr["count"]
    if len(nodes) > 80:
        raise ValueError(f"the tree has {len(nodes)} nodes; draw at most 80")
    names = list(names) if names is not None else [f"请求 {i + 1}" for i in range(len(prompts))]
    if len(names) != len(prompts):
        raise ValueError(f"names must have one entry per prompt ({len(prompts)}), got {len(names)}")
    children = {}
    for nd in nodes:
        children.setdefault(nd[:-1], []).append(nd)
    y, row = {}, [0]

    def place(nd):                                 # leaves get consecutive rows, parents the mean
        kids = children.get(nd, [])
        if not kids:
            y[nd] = row[0]
            row[0] += 1
        else:
            for c in kids:
                place(c)
            y[nd] = float(np.mean([y[c] for c in kids]))
    for root in children.get((), []):
        place(root)
    ends = {}
    for i, p in enumerate(prompts):
        ends.setdefault(tuple(p), []).append(i)
    depth = max(len(nd) for nd in nodes)
    n_rows = max(row[0], 1)
    fig_w = min(12, 1.6 + 1.25 * depth + 1.8)
    _, ax = plt.subplots(figsize=(fig_w, 0.55 * n_rows + 1.2))
    top = max(count.values())
    for nd in nodes:
        if len(nd) > 1:
            par = nd[:-1]
            ax.plot([len(par) - 0.3, len(nd) - 1.0], [y[par], y[nd]], color="#888888",
                    lw=0.8, zorder=1)
    for nd in nodes:
        f = 0.25 + 0.75 * (count[nd] - 1) / max(top - 1, 1)
        col = COLORS["compute"]
        ax.add_patch(mp.FancyBboxPatch(
            (len(nd) - 1.0, y[nd] - 0.3), 0.7, 0.6, boxstyle="round,pad=0.02",
            facecolor=_mix(col, f), edgecolor=col, lw=0.8, zorder=2))
        ax.text(len(nd) - 0.65, y[nd], str(nd[-1]), ha="center", va="center", fontsize=8,
                color="white" if f > 0.6 else "#222222", zorder=3)
    for p_tuple, idx in ends.items():
        lab = "；".join(f"{names[i]}：命中 {tr['hits'][i]}/{len(p_tuple)}" for i in idx)
        if children.get(p_tuple):                  # it ends inside a longer prompt: label above
            ax.text(len(p_tuple) - 0.65, y[p_tuple] - 0.38, lab, ha="center", va="bottom",
                    fontsize=7)
        else:
            ax.text(len(p_tuple) - 0.2, y[p_tuple], lab, va="center", fontsize=8)
    total = sum(len(p) for p in prompts)
    saved = float(inf.prefix_saving([list(p) for p in prompts]))
    ax.set_title(f"前缀树：{len(nodes)} 个节点存下 {len(prompts)} 个请求（共 {total} 个 token）的 KV，"
                 f"按先后到达省掉 {saved:.0%} 的预填充", fontsize=9)
    ax.set_xlim(-0.3, depth + 1.9)
    ax.set_ylim(n_rows - 0.4, -0.6)
    ax.axis("off")
    return ax


def speculative_rounds(accepted, gamma: int, n_new=None) -> list:
    """The rounds of greedy speculative decoding from the accepted-draft counts per target pass
    (``kv_decode.generate_speculative(...)["accepted"]``): ``[(k, cells)]`` where ``cells`` is
    the γ draft positions marked "accept" (the first k), "reject" (position k when k < γ) or
    "discard" (after the rejection), followed by one "target" token (the target's correction,
    or its bonus token when all γ were accepted). Each round emits k + 1 tokens; with ``n_new``
    the last round's surplus is cut off as the generator does."""
    from .units import check_int

    g = check_int("gamma", gamma)
    acc = [int(a) for a in np.asarray(accepted).ravel()]
    if not acc or any(a < 0 or a > g for a in acc):
        raise ValueError(f"accepted must be a non-empty list of counts in 0..{g}, got {accepted!r}")
    rounds = []
    for k in acc:
        cells = ["accept"] * k + (["reject"] + ["discard"] * (g - k - 1) if k < g else [])
        rounds.append((k, cells + ["target"]))
    if n_new is not None:
        n = check_int("n_new", n_new)
        if sum(k + 1 for k in acc) < n or sum(k + 1 for k in acc[:-1]) >= n:
            raise ValueError(f"{len(acc)} rounds emitting {sum(k + 1 for k in acc)} tokens do not "
                             f"match n_new = {n}")
    return rounds


def speculative_figure(spec, gamma: int, n_new=None, t_draft=0.05, t_verify=1.0):
    """Speculative decoding, draft and verify. ``spec``: the dict of
    ``kv_decode.generate_speculative`` (its ``accepted``) or the accepted counts themselves.

    Top: one row per target pass — the γ drafted tokens (accepted green, the first rejected red,
    the rest grey) and the target's own token (purple). Bottom: tokens emitted against time,
    each round γ draft steps of ``t_draft`` then one verification of ``t_verify`` (units of one
    target decode step), beside plain decoding's one token per step. The title: tokens per pass
    and the time per token, (γ·t_draft + t_verify)·passes / tokens. Returns the Figure."""
    import matplotlib.patches as mp
    import matplotlib.pyplot as plt
    from .plots import set_style
    from .units import check_nonneg, check_positive

    set_style()
    acc = spec["accepted"] if isinstance(spec, dict) else spec
    if isinstance(spec, dict) and n_new is None:
        n_new = len(spec["tokens"])
    rounds = speculative_rounds(acc, gamma, n_new)
    td = float(check_nonneg("t_draft", t_draft, allow_array=False))
    tv = float(check_positive("t_verify", t_verify, allow_array=False))
    g = int(gamma)
    if len(rounds) > 30:
        raise ValueError(f"{len(rounds)} rounds; draw at most 30")
    emitted = sum(k + 1 for k, _ in rounds)
    n_tok = n_new if n_new is not None else emitted
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 0.32 * len(rounds) + 3.4),
                                  gridspec_kw={"height_ratios": [max(len(rounds), 3) * 0.32, 2.2]})
    fc = {"accept": COLORS["comms"], "reject": "#B2182B", "discard": "#cccccc",
          "target": COLORS["accent"]}
    for r, (k, cells) in enumerate(rounds):
        for j, c in enumerate(cells):
            ax.add_patch(mp.Rectangle((j, r + 0.1), 0.9, 0.8, facecolor=fc[c], edgecolor="white"))
        ax.text(g + 1.2, r + 0.5, f"接受 {k}，产出 {k + 1}", va="center", fontsize=8)
    ax.set_xlim(0, g + 3.2)
    ax.set_ylim(len(rounds), 0)
    ax.set_yticks(np.arange(len(rounds)) + 0.5, [f"第 {r + 1} 次" for r in range(len(rounds))],
                  fontsize=7)
    ax.set_xticks(np.arange(g + 1) + 0.45, [f"草稿 {j + 1}" for j in range(g)] + ["目标"],
                  fontsize=7)
    ax.tick_params(length=0)
    ax.grid(False)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ax.legend(handles=[mp.Patch(facecolor=fc["accept"], label="草稿被接受"),
                       mp.Patch(facecolor=fc["reject"], label="第一个不一致"),
                       mp.Patch(facecolor=fc["discard"], label="随之作废"),
                       mp.Patch(facecolor=fc["target"], label="目标模型自己的 token")],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    t, done, ts, ys = 0.0, 0, [0.0], [0]
    for k, _ in rounds:
        t += g * td + tv
        done = min(done + k + 1, n_tok)
        ts += [t, t]
        ys += [ys[-1], done]
    ax2.plot(ts, ys, color=COLORS["accent"], label=f"投机解码（γ = {g}）", drawstyle="default")
    steps = np.arange(n_tok + 1) * tv
    ax2.step(steps, np.arange(n_tok + 1), where="post", color="#555555", label="普通解码：每步 1 个")
    ax2.set_xlabel("时间（单位：目标模型的一个解码步）")
    ax2.set_ylabel("已生成 token")
    ax2.legend(loc="upper left")
    per_tok = t / n_tok
    fig.suptitle(f"{len(rounds)} 次目标前向产出 {n_tok} 个 token（平均 {n_tok / len(rounds):.2f} 个/次），"
                 f"每个 token 约 {per_tok:.2f} 个目标步", fontsize=10)
    return fig


__all__ += ["kv_head_of", "head_sharing_figure", "cross_layer_kv_figure", "prefix_trie",
            "prefix_trie_figure", "speculative_rounds", "speculative_figure"]


# ---- networks: the switched fat tree and the torus (chapter 12's opening) -------------------------

def _gbs(x: float) -> str:
    """A bandwidth per direction for a figure label: '450 GB/s', '12.8 TB/s'."""
    x = float(x)
    return f"{x / 1e12:.3g} TB/s" if x >= 1e12 else f"{x / 1e9:.3g} GB/s"


def _as_fat_tree(tree):
    """A ``topology.FatTree`` from a FatTree, a preset name ('h100-superpod', ...) or a GPU
    ``topology.System`` (its ``fat_tree()``)."""
    from . import topology

    if isinstance(tree, topology.System):
        return tree.fat_tree()
    if isinstance(tree, str):
        tree = topology.get(tree)
    if not isinstance(tree, topology.FatTree):
        raise TypeError(f"tree must be a topology.FatTree, a GPU topology.System or a preset name "
                        f"such as 'h100-superpod', got {type(tree).__name__} {tree!r}")
    return tree


def fat_tree_levels(tree="h100-superpod") -> list:
    """Per level of a switched tree, from the node outwards, what ``fat_tree_figure`` draws:
    dicts with ``name``, ``units`` (how many units of the level the whole tree has), ``degree``
    (children per unit), ``switches`` (per unit), ``total_switches``, ``gpus`` (GPUs under one
    unit), ``uplink_bw`` (one child's uplink, per direction), ``unit_bw`` (all children's
    uplinks) and ``per_node_bw`` (what the level gives each node). All read from the
    ``topology.FatTree`` (``TreeLevel`` fields, ``per_node_bandwidth``)."""
    t = _as_fat_tree(tree)
    per_node = t.per_node_bandwidth()
    out = []
    for i, lv in enumerate(t.levels):
        units = math.prod(x.degree for x in t.levels[i + 1:])
        out.append({"name": lv.name, "units": units, "degree": lv.degree, "switches": lv.switches,
                    "total_switches": units * lv.switches, "gpus": t.gpus_under(i),
                    "uplink_bw": lv.link_bw, "unit_bw": lv.cable_bw, "per_node_bw": per_node[i]})
    return out


def _draw_fat_tree(ax, t, max_nodes: int, route: bool, notes: bool):
    """Draw ``t`` on ``ax``: bottom row the nodes (first ``max_nodes`` of each unit of the level
    above, "+k" for the rest), above them one row per level with every switch of every unit as a
    square (a level without switches in the model: one box per unit), each child joined to every
    switch of its parent unit. Returns the x positions of the drawn rows and the route drawn."""
    import matplotlib.patches as mp

    info = fat_tree_levels(t)
    L = len(info)
    # x extent: top-down, every unit of level i >= 1 gets a slot; nodes are capped per parent
    shown = [None] * L                       # per level: list of unit x-centres
    width = 1.0
    if L == 1:
        shown[0] = [0.5 * width]
    else:
        n_par = info[1]["units"] if L > 1 else 1
        per = info[1]["degree"]              # nodes under one unit of the level above
        k = min(per, max_nodes)
        slots = n_par * (k + (1 if per > k else 0))
        step = width / slots
        nodes, node_parent, x = [], [], 0.0
        for p in range(n_par):
            for _ in range(k):
                nodes.append(x + step / 2)
                node_parent.append(p)
                x += step
            if per > k:
                ax.text(x + step / 2, 0, f"+{per - k}", ha="center", va="center",
                        fontsize=7, color="0.35")
                x += step
        shown[0] = nodes
        for i in range(1, L):
            n = info[i]["units"]
            shown[i] = [(j + 0.5) * width / n for j in range(n)]
    sw_x = [None] * L                        # per level >= 1: per unit, the switch x positions
    colours = [COLORS["compute"], COLORS["comms"], COLORS["yellow"], COLORS["accent"], COLORS["sky"]]
    for i in range(1, L):
        n, s = info[i]["units"], max(1, info[i]["switches"])
        span = 0.8 * width / n
        sw_x[i] = [[cx - span / 2 + (q + 0.5) * span / s for q in range(s)] for cx in shown[i]]
        size = min(0.8 * span / s, 0.06)
        for u, xs in enumerate(sw_x[i]):
            for x in xs:
                ax.add_patch(mp.Rectangle((x - size / 2, i - 0.12), size, 0.24,
                                          facecolor=colours[i % len(colours)], edgecolor="white",
                                          lw=0.5, zorder=3))
    # nodes: a box with the node's GPU and switch count
    nbox = min(0.8 * (shown[0][1] - shown[0][0]) if len(shown[0]) > 1 else 0.3, 0.12)
    for x in shown[0]:
        ax.add_patch(mp.FancyBboxPatch((x - nbox / 2, -0.22), nbox, 0.44,
                                       boxstyle="round,pad=0.003", facecolor=COLORS["compute"],
                                       edgecolor="white", zorder=3))
        ax.text(x, 0, f"{info[0]['degree']}\nGPU", ha="center", va="center", fontsize=6,
                color="white", zorder=4)
    # edges: every child to every switch of its parent unit
    for i in range(1, L):
        deg = info[i]["degree"]
        if i == 1:
            yb = 1 - 0.22                     # a bar under each unit's switches: a node's
            for xs in sw_x[1]:                 # line to it stands for its cables to every one
                ax.plot([xs[0], xs[-1]], [yb, yb], color="0.35", lw=1.2, zorder=2)
                for sx in xs:
                    ax.plot([sx, sx], [yb, 1 - 0.12], color="0.55", lw=0.5, zorder=1)
            for j, x in enumerate(shown[0]):
                xs = sw_x[1][node_parent[j]]
                ax.plot([x, min(max(x, xs[0]), xs[-1])], [0.22, yb], color="0.55", lw=0.5,
                        zorder=1)
        else:
            for u, xs in enumerate(sw_x[i - 1]):  # a child unit's switches share a bus bar;
                p = u // deg                         # one line per parent switch stands for
                y0 = i - 1 + 0.16                    # the cables of every one of them
                ax.plot([xs[0], xs[-1]], [y0, y0], color="0.35", lw=1.2, zorder=2)
                cx = (xs[0] + xs[-1]) / 2
                for sx in sw_x[i][p]:
                    ax.plot([cx, sx], [y0, i - 0.12], color="0.55", lw=0.4, zorder=1)
    path = None
    if route and L >= 3:
        # the first and the last node drawn: their ancestors meet only at the top level
        def unit(p, i):                      # the level-i unit above level-1 unit p
            return p // math.prod(info[j]["degree"] for j in range(2, i + 1))
        pa, pb = node_parent[0], node_parent[-1]
        path = [(shown[0][0], 0.22)]
        path += [(sw_x[i][unit(pa, i)][0], i) for i in range(1, L)]
        path += [(sw_x[i][unit(pb, i)][0], i) for i in range(L - 2, 0, -1)]
        path.append((shown[0][-1], 0.22))
        ax.plot([p[0] for p in path], [p[1] for p in path], color=COLORS["memory"], lw=2.2,
                zorder=5)
    ax.set_xlim(-0.02, width + (0.75 if notes else 0.02))
    ax.set_ylim(-0.45, L - 0.55)
    ax.set_yticks(range(L), ["节点"] + [d["name"] for d in info[1:]])
    ax.set_xticks([])
    ax.grid(False)
    for sp in ("top", "right", "bottom"):
        ax.spines[sp].set_visible(False)
    if notes:
        for i, d in enumerate(info):
            if i == 0:
                txt = (f"{d['units']} 个节点，每个 {d['degree']} 颗 GPU、{d['switches']} 个 NVSwitch\n"
                       f"每 GPU 单向 {_gbs(d['uplink_bw'])}")
            else:
                child = "节点" if i == 1 else info[i - 1]["name"]
                txt = (f"{d['units']} 个单元 × {d['switches']} 台交换机；每单元 {d['degree']} 个{child}\n"
                       f"每个{child}上行 {_gbs(d['uplink_bw'])}，每节点 {_gbs(d['per_node_bw'])}")
            ax.text(width + 0.03, i, txt, ha="left", va="center", fontsize=7.5)
    return path


def fat_tree_figure(tree="h100-superpod", max_nodes: int = 3, ax=None):
    """A switched fat tree drawn from its ``topology.FatTree`` (or a GPU ``topology.System`` /
    preset name): nodes at the bottom (the first ``max_nodes`` of each unit, the rest counted),
    every switch of every level as a square (counts from ``TreeLevel.switches``); a bar under a
    unit's switches stands for "cabled to every one of them": each node has one line to its
    unit's bar, each unit of a higher level one line from its bar to every switch of the parent
    (every switch of the unit has those cables); on the right, per level (``fat_tree_levels``) the
    units, switches, uplink bandwidth and the bandwidth per node, which stays the same at every
    level of a non-blocking tree. Title: GPUs, switches in all, bisection bandwidth. Returns the
    axes."""
    import matplotlib.pyplot as plt
    from .units import check_int
    from .plots import set_style

    t = _as_fat_tree(tree)
    check_int("max_nodes", max_nodes)
    set_style()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.6 + 0.7 * len(t.levels)))
    _draw_fat_tree(ax, t, int(max_nodes), route=False, notes=True)
    info = fat_tree_levels(t)
    ax.set_title(f"{t.describe()}：{t.num_chips} 颗 GPU，交换机共 "
                 f"{sum(d['total_switches'] for d in info)} 台，对分带宽单向 "
                 f"{_gbs(t.bisection_bandwidth(both_directions=False))}"
                 f"{'，无阻塞' if t.is_nonblocking() else '，超额订阅'}", fontsize=10)
    return ax


def _torus_route(topo, src, dst) -> list:
    """A shortest route on ``topo`` from ``src`` to ``dst``, one axis after the other, each axis
    the short way round (through the wraparound link where that is shorter)."""
    cur, path = list(topo._coord(src)), [tuple(src)]
    dst = topo._coord(dst)
    for i, (n, w) in enumerate(zip(topo.shape, topo.wraps)):
        d = (dst[i] - cur[i]) % n if w else dst[i] - cur[i]
        step = 1
        if w and d > n - d:
            step, d = -1, n - d
        elif not w and d < 0:
            step, d = -1, -d
        for _ in range(d):
            cur[i] = (cur[i] + step) % n
            path.append(tuple(cur))
    assert len(path) - 1 == topo.hops(src, dst), "route is not a shortest one"
    return path


def torus_vs_fat_tree_figure(tpu="v5p", shape=(4, 4), tree="h100-superpod", max_nodes: int = 1):
    """Chapter 12's opening contrast, both halves drawn from the library: left, a TPU slice as a
    torus (``topology.Torus`` with the catalogue's ICI link bandwidth; ``shape`` a 2-D face),
    every chip cabled only to its neighbours, the route between two far chips highlighted and
    its hop count, the diameter and the chip's ICI egress (links × link bandwidth, from the
    catalogue) in the title; right, the GPU fat tree (``fat_tree_figure``'s drawing) with a
    route between GPUs in different top-level units and its switch count, the NVLink and NIC
    bandwidth per GPU in the title. Returns the Figure."""
    import matplotlib.pyplot as plt
    from . import hardware, topology
    from .plots import set_style

    chip = hardware.get(tpu)
    if chip.family != "tpu":
        raise ValueError(f"tpu must be a TPU of the catalogue, got {chip.name} ({chip.family})")
    if not isinstance(shape, (tuple, list)) or len(shape) != 2:
        raise ValueError(f"shape must be a 2-D face such as (4, 4) (a 3-D torus is drawn one face "
                         f"at a time), got {shape!r}")
    link = hardware.require(chip, "ici_link_bw_1way")
    links = chip.ici_links or 2 * hardware.require(chip, "torus_dims")
    torus = topology.Torus(tuple(shape), (True, True), link, label=f"{chip.name} 的一个 "
                           f"{shape[0]}×{shape[1]} 面")
    t = _as_fat_tree(tree)
    g = t.gpu
    set_style()
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(9, 3.3), gridspec_kw={"width_ratios": [1, 1.5]})
    src, dst = (0, 0), (shape[0] // 2, shape[1] // 2)
    route = _torus_route(torus, src, dst)
    torus.draw(ax=a0, path=route, annotate=False)
    a0.set_title(f"{chip.name}：{chip.torus_dims}-D 环面（画出一个 {shape[0]}×{shape[1]} 面）\n"
                 f"每颗芯片 {links} 条 ICI 链路 × {_gbs(link)} = 出口 {_gbs(links * link)}；"
                 f"\n红线 {len(route) - 1} 跳，这一面最远 {torus.max_hops()} 跳，跳数随距离增长",
                 fontsize=9)
    path = _draw_fat_tree(a1, t, int(max_nodes), route=True, notes=False)
    if path is None:
        raise ValueError(f"{t.describe()} has {len(t.levels)} levels; the contrast needs a tree "
                         f"with at least node, leaf and spine (3 levels)")
    n_sw = len(path) - 2                     # the switches between the two GPUs' nodes
    nvl = t.levels[0].link_bw
    nic = t.per_node_bandwidth()[1] / t.levels[0].degree if len(t.levels) > 1 else float("nan")
    a1.set_title(f"GPU {g.name if g else ''}：{t.describe()}，交换机组成的胖树\n"
                 f"节点内每 GPU {_gbs(nvl)}（NVLink），出节点每 GPU {_gbs(nic)}（网卡）；\n"
                 f"红线跨单元也只经过 {n_sw} 台交换机，跳数有上限", fontsize=9)
    return fig


__all__ += ["fat_tree_levels", "fat_tree_figure", "torus_vs_fat_tree_figure"]
