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


def _anim_controls(fig, names: list, duration_ms: int, prefix: str):
    """Play/pause buttons and a slider over the frames ``names`` (plotly 'animate': no kernel)."""
    fig.update_layout(
        updatemenus=[{
            "type": "buttons", "direction": "left", "showactive": False,
            "x": 0.0, "y": -0.02, "xanchor": "left", "yanchor": "top", "pad": {"r": 10, "t": 10},
            "buttons": [
                {"label": "▶ 播放", "method": "animate",
                 "args": [None, {"frame": {"duration": duration_ms, "redraw": True},
                                 "fromcurrent": True, "transition": {"duration": 0}}]},
                {"label": "暂停", "method": "animate",
                 "args": [[None], {"frame": {"duration": 0, "redraw": False}, "mode": "immediate",
                                   "transition": {"duration": 0}}]}]}],
        sliders=[{"active": 0, "x": 0.18, "len": 0.82, "y": -0.02, "yanchor": "top",
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
                             hoverinfo="skip", name="环回链路", showlegend=bool(wx)))
    shapes = [{"type": "rect", "x0": float(x - box), "x1": float(x + box), "y0": float(y - box),
               "y1": float(y + box), "line": {"color": colours[d], "width": 2},
               "fillcolor": "#fafafa", "layer": "below"} for d, (x, y) in enumerate(xy)]
    fig.add_trace(go.Scatter(x=xy[:, 0], y=xy[:, 1] + box + 0.35, mode="text",
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
        "链（无环回）" if len(sched.shape) == 1 else
        " 二维环面" if all(sched.wraps) else " 二维网格（无环回）")
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
    """``interactive.tidy`` on the figure and on every frame's traces."""
    tidy(fig)
    for fr in fig.frames or ():
        tidy(fr)
    return fig


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

def pipeline_figure(schedule="1f1b", n_stages: int = 4, n_micro: int = 8, ax=None):
    """A pipeline schedule as a stage × time chart: forward cells (blue) and backward cells
    (orange) numbered by microbatch, idle time (the bubble) hatched grey.

    ``schedule``: a kind that ``training.pipeline_schedule`` knows ("gpipe", "1f1b", …), drawn
    from ``training.pipeline_schedule(kind, n_stages, n_micro)``, or the grid it returned (stage ×
    time ints: +m+1 forward of microbatch m, −(m+1) its backward, 0 idle). The title gives the
    bubble measured on the grid. Returns the axes.
    """
    import matplotlib.patches as mp
    import matplotlib.pyplot as plt
    from . import training
    from .plots import set_style

    set_style()
    if isinstance(schedule, str):
        kind = schedule
        grid = np.asarray(training.pipeline_schedule(schedule, n_stages, n_micro))
    else:
        kind = "自定义"
        grid = np.asarray(schedule)
    if grid.ndim != 2 or grid.dtype.kind not in "iu":
        raise ValueError("a pipeline grid must be a 2-D int array (stages × time units)")
    Z, T = grid.shape
    if ax is None:
        _, ax = plt.subplots(figsize=(min(12, 1.2 + 0.32 * T), 0.6 + 0.45 * Z))
    for s in range(Z):
        for t in range(T):
            v = int(grid[s, t])
            if v == 0:
                ax.add_patch(mp.Rectangle((t, s), 1, 1, facecolor="#eeeeee", edgecolor="#cccccc",
                                          hatch="///", lw=0.5))
                continue
            fc = COLORS["compute"] if v > 0 else COLORS["memory"]
            ax.add_patch(mp.Rectangle((t, s), 1, 1, facecolor=fc, edgecolor="white", lw=0.8))
            ax.text(t + 0.5, s + 0.5, str(abs(v)), ha="center", va="center", color="white",
                    fontsize=7)
    idle = float((grid == 0).mean())
    ax.set_xlim(0, T)
    ax.set_ylim(Z, 0)
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_yticks(np.arange(Z) + 0.5, [f"阶段 {s}" for s in range(Z)])
    ax.set_xlabel("时间（每格一次前向或反向）")
    ax.grid(False)
    handles = [mp.Patch(facecolor=COLORS["compute"], label="前向（数字：微批次）"),
               mp.Patch(facecolor=COLORS["memory"], label="反向"),
               mp.Patch(facecolor="#eeeeee", hatch="///", edgecolor="#cccccc", label="空闲（气泡）")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=3, fontsize=8)
    ax.set_title(f"{kind.upper() if kind != '自定义' else kind} 流水线：{Z} 个阶段，"
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
