"""Chapter 3 explorers: the sharded-matmul explorer and its kernel-free plotly twin.

Book: sec-03-explorer. ``draw_matmul`` (numpy + matplotlib, < 100 ms) is what the widget calls:
choose how A[I, J] and B[J, K] are sharded on a 2D mesh, the output, the sizes and the chip, and
see the case, the collectives, local shapes, and compute vs communication time.
``cost_figure`` precomputes the same costs for a list of sharding choices over a batch-size
slider (``scaling_lib.interactive.slider_figure``).
"""
from __future__ import annotations

from .. import sharding
from ..plots import COLORS
from ..units import fmt_bytes, fmt_time

__all__ = ["AXIS_CHOICES", "CHIPS", "WRAP_CHOICES", "mesh_wrap", "plan_for", "draw_matmul",
           "matmul_explorer",
           "A_IN", "OUT", "STRATEGIES", "strategy_costs", "cost_figure", "draw_shards",
           "draw_race", "race_explorer"]

#: what a dimension may be sharded over on a {X, Y} mesh
AXIS_CHOICES = [("不分片", ""), ("X", "X"), ("Y", "Y"), ("XY", "XY")]
CHIPS = ["TPU v5e", "TPU v5p", "TPU v4p", "TPU v6e"]
_STEP_COLORS = {"all_gather": COLORS["comms"], "reduce_scatter": COLORS["yellow"],
                "all_reduce": COLORS["memory"], "all_to_all": COLORS["accent"],
                "permute": COLORS["sky"]}


def _dim(name, axes):
    return f"{name}_{axes}" if axes else name


#: the explorer's choices for the mesh axes: the chip's wraparound rule, or forced ring / line
WRAP_CHOICES = [("按芯片规则", "auto"), ("环（有环绕链路）", "ring"), ("链（无环绕）", "line")]


def mesh_wrap(chip, X, Y, wrap="auto"):
    """Whether each axis of the explorer's {X, Y} mesh is a ring: ``{"X": bool, "Y": bool}``.

    ``wrap``: ``"auto"`` (or None) applies the chip's rule (chapter 2, ``topology.wraparound``):
    on a 2-D-torus chip (v5e, v6e) the mesh is the slice X×Y, and an axis wraps only when it is a
    whole pod axis (16), so a v5e 4×4 has none; on a 3-D-torus chip (v4p, v5p) the 2-D mesh is
    read as axes of whole 4×4×4 cubes, which wrap when their length is a multiple of 4.
    ``"ring"``/True and ``"line"``/False force every axis.
    """
    from .. import hardware, topology
    if wrap in (True, "ring"):
        return {"X": True, "Y": True}
    if wrap in (False, "line"):
        return {"X": False, "Y": False}
    if wrap not in (None, "auto"):
        raise ValueError(f"wrap must be 'auto', 'ring' or 'line' (or None/True/False), got {wrap!r}")
    c = hardware.get(chip)
    X, Y = int(X), int(Y)
    if c.torus_dims == 2:
        wx, wy = topology.wraparound(c, (X, Y))
    else:
        wx, wy = X % 4 == 0, Y % 4 == 0
    return {"X": bool(wx), "Y": bool(wy)}


def _wrap_text(w: dict) -> str:
    if all(w.values()):
        return "（两条轴都有环绕链路）"
    if not any(w.values()):
        return "（无环绕链路）"
    return "（只有 " + "、".join(k for k, v in w.items() if v) + " 轴有环绕链路）"


def plan_for(a_i="X", a_j="", b_j="", b_k="Y", out="自动", X=4, Y=2, I=8192, J=4096, K=16384,
             chip="TPU v5e", wrap="auto", strategy="gather", dtype="bf16") -> sharding.MatmulPlan:
    """The ``MatmulPlan`` for the explorer's control values (raises ValueError on bad specs).
    ``wrap``: see ``mesh_wrap`` (default: the chip's wraparound rule for an X×Y slice)."""
    a = f"A[{_dim('I', a_i)}, {_dim('J', a_j)}]"
    b = f"B[{_dim('J', b_j)}, {_dim('K', b_k)}]"
    mesh = {"X": int(X), "Y": int(Y)}
    o = None if out in (None, "自动") else f"Out[{out}]"
    return sharding.matmul(a, b, mesh, out=o, sizes={"I": int(I), "J": int(J), "K": int(K)},
                           chip=chip, wrap=mesh_wrap(chip, X, Y, wrap), strategy=strategy, dtype=dtype)


def draw_matmul(a_i="X", a_j="", b_j="", b_k="Y", out="自动", X=4, Y=2, I=8192, J=4096,
                K=16384, chip="TPU v5e", wrap="auto", strategy="gather", dtype="bf16", ax=None):
    """A stacked bar (compute vs each collective) and a text card of the plan; returns the plan."""
    import matplotlib.pyplot as plt

    p = plan_for(a_i, a_j, b_j, b_k, out, X, Y, I, J, K, chip, wrap, strategy, dtype)
    card = None
    if ax is None:   # the plan's text card gets a row of its own above the bars (never over them)
        _, (card, ax) = plt.subplots(2, 1, figsize=(7.2, 4.0), height_ratios=[0.75, 1.0],
                                     gridspec_kw={"hspace": 0.08})
        card.axis("off")
    ax.barh([1], [p.t_math * 1e6], color=COLORS["compute"], label="计算 T_math")
    left = 0.0
    for st in p.steps:
        if st.kind == "slice":
            continue
        ax.barh([0], [st.time * 1e6], left=[left], color=_STEP_COLORS[st.kind],
                label=f"{sharding.COLLECTIVES[st.kind]}_{''.join(st.axes)}")
        left += st.time * 1e6
    ax.set_yticks([0, 1])
    ax.set_yticklabels(["通信", "计算"])
    ax.set_xlabel("每设备时间（µs）")
    hi = max(p.t_math, p.t_comms) * 1e6
    ax.set_xlim(0, hi * 1.15 if hi > 0 else 1)
    ax.set_ylim(-0.6, 1.6 if card is not None else 2.9)
    m = p.mesh
    lines = [p.notation(),
             f"情形 {p.case}；网格 X={m['X']}，Y={m['Y']}；{p.chip}" + _wrap_text(mesh_wrap(chip, X, Y, wrap)),
             "通信：" + ("无" if not p.collectives else "；".join(
                 f"{sharding.COLLECTIVES[s.kind]}_{''.join(s.axes)} V={fmt_bytes(s.nbytes)}"
                 for s in p.steps if s.kind != "slice")),
             f"本地形状：A {p.a.local_shape(p.sizes, m)}，B {p.b.local_shape(p.sizes, m)}，"
             f"输出 {p.out.local_shape(p.sizes, m)}；每设备内存（A+B+输出）{fmt_bytes(p.mem_per_device)}",
             f"T_math {fmt_time(p.t_math)}，T_comms {fmt_time(p.t_comms)} → {p.bottleneck}受限"]
    holder = card if card is not None else ax
    holder.text(0.0 if card is not None else 0.01, 1.0 if card is not None else 0.98, "\n".join(lines),
                transform=holder.transAxes, va="top", fontsize=8.5,
                bbox={"boxstyle": "round", "fc": "white", "ec": "0.7"})
    ax.legend(loc="upper right", ncol=2) if card is not None else \
        ax.legend(loc="lower right", ncol=2)
    ax.grid(axis="y", visible=False)
    plt.show()
    return p


def matmul_explorer():
    """The ipywidgets explorer (needs a kernel): shardings, output, sizes, chip, wraparound."""
    from . import dropdown, explorer, log_slider, toggle
    dims_out = ["自动", "I, K", "I_X, K", "I, K_X", "I_Y, K", "I, K_Y", "I_X, K_Y", "I_Y, K_X",
                "I_XY, K", "I, K_XY"]
    controls = {
        "a_i": dropdown(AXIS_CHOICES, "X", "A 的 I 分片"),
        "a_j": dropdown(AXIS_CHOICES, "", "A 的 J 分片"),
        "b_j": dropdown(AXIS_CHOICES, "", "B 的 J 分片"),
        "b_k": dropdown(AXIS_CHOICES, "Y", "B 的 K 分片"),
        "out": dropdown(dims_out, "自动", "输出 Out"),
        "strategy": dropdown([("先 AllGather", "gather"), ("先乘后 AllReduce", "reduce")],
                             "gather", "情形2 策略"),
        "X": dropdown([2, 4, 8, 16], 4, "网格 X"),
        "Y": dropdown([1, 2, 4, 8, 16], 2, "网格 Y"),
        "I": log_slider(8192, 7, 17, 1, "I（行）", base=2, fmt=".0f"),
        "J": log_slider(4096, 7, 17, 1, "J（收缩）", base=2, fmt=".0f"),
        "K": log_slider(16384, 7, 17, 1, "K（列）", base=2, fmt=".0f"),
        "chip": dropdown(CHIPS, "TPU v5e", "芯片"),
        "dtype": dropdown([("bf16", "bf16"), ("int8", "int8")], "bf16", "数据类型"),
        "wrap": toggle(WRAP_CHOICES, "auto", "网格轴"),
    }

    def draw(**kw):
        draw_matmul(**kw)

    return explorer(controls, draw, columns=3)


#: the twin's scenario: activations arrive batch-sharded, the weight must be sharded over all
#: 16 chips (it does not fit replicated), and the output must leave sharded like the input.
A_IN, OUT = "A[I_XY, J]", "Out[I_XY, K]"
#: label -> (A as multiplied, B as stored)
STRATEGIES = {
    "FSDP：收集权重": ("A[I_XY, J]", "B[J_XY, K]"),
    "张量并行：收集激活": ("A[I, J]", "B[J, K_XY]"),
    "收缩维分片 + ReduceScatter": ("A[I, J_XY]", "B[J_XY, K]"),
    "FSDP(X) + 张量并行(Y)": ("A[I_X, J]", "B[J_X, K_Y]"),
}


def strategy_costs(I, J, K, mesh=None, chip="TPU v5e", wrap="auto") -> dict:
    """{label: (t_math, t_comms)} per ``STRATEGIES`` entry: reshard A from ``A_IN`` to the
    strategy's sharding, multiply with the chapter's rules, and leave the output as ``OUT``.
    ``wrap``: see ``mesh_wrap`` (default: the chip's rule, so a v5e 4×4 has no wraparound)."""
    mesh = mesh or {"X": 4, "Y": 4}
    wrap = mesh_wrap(chip, mesh["X"], mesh["Y"], wrap)
    sizes = {"I": int(I), "J": int(J), "K": int(K)}
    out = {}
    for label, (a, b) in STRATEGIES.items():
        pre = sharding.reshard_cost(A_IN, a, mesh, {"I": sizes["I"], "J": sizes["J"]},
                                    chip=chip, wrap=wrap)
        p = sharding.matmul(a, b, mesh, out=OUT, sizes=sizes, chip=chip, wrap=wrap)
        out[label] = (p.t_math, p.t_comms + sum(st.time for st in pre))
    return out


def cost_figure(Is=(256, 1024, 4096, 16384, 65536), J=8192, K=32768, mesh=None,
                chip="TPU v5e", wrap="auto"):
    """Plotly twin: grouped bars of T_math and T_comms per sharding choice, slider over I.
    ``wrap`` as in ``mesh_wrap``: by default a v5e 4×4 is priced without wraparound links."""
    from ..interactive import slider_figure
    steps = []
    labels = list(STRATEGIES)
    for I in Is:
        c = strategy_costs(I, J, K, mesh, chip, wrap)
        tm = [round(c[k][0] * 1e6, 4) for k in labels]
        tc = [round(c[k][1] * 1e6, 4) for k in labels]
        steps.append((str(I), [
            {"type": "bar", "x": labels, "y": tm, "name": "计算 T_math",
             "marker": {"color": COLORS["compute"]}},
            {"type": "bar", "x": labels, "y": tc, "name": "通信 T_comms",
             "marker": {"color": COLORS["comms"]}},
        ]))
    m = mesh or {"X": 4, "Y": 4}
    wt = _wrap_text(mesh_wrap(chip, m["X"], m["Y"], wrap))
    fig = slider_figure(steps, title=f"{A_IN}·B → {OUT}（J={J}，K={K}，{chip} {m['X']}×{m['Y']}{wt}）",
                        xaxis={"title": {"text": "分片方式"}},
                        yaxis={"title": {"text": "每设备时间（µs）"}, "type": "log"},
                        slider_label="I（token 数）", active=min(2, len(steps) - 1), height=480)
    fig.update_layout(barmode="group")
    return fig


def draw_shards(x, ax=None, title: str | None = None):
    """Picture of a real 1D/2D jax array's sharding: its global shape cut into the blocks each
    device holds (read from ``addressable_shards``), coloured and labelled by device id; a block
    held by several devices lists them all (replication)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    shape = tuple(x.shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"draw_shards draws 1D or 2D arrays, got shape {shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(3, 3))
    rows, cols = (1, shape[0]) if len(shape) == 1 else shape
    blocks: dict = {}
    for s in x.addressable_shards:
        idx = s.index if len(shape) == 2 else (slice(0, 1), s.index[0])
        r0, r1 = idx[0].start or 0, idx[0].stop if idx[0].stop is not None else rows
        c0, c1 = idx[1].start or 0, idx[1].stop if idx[1].stop is not None else cols
        blocks.setdefault((r0, r1, c0, c1), []).append(s.device.id)
    cmap = plt.get_cmap("tab20")
    for (r0, r1, c0, c1), devs in sorted(blocks.items()):
        devs = sorted(devs)
        ax.add_patch(Rectangle((c0, r0), c1 - c0, r1 - r0, fc=cmap(devs[0] % 20), ec="black", lw=1))
        label = ",".join(map(str, devs)) if len(devs) <= 4 else f"{devs[0]}…{devs[-1]}"
        ax.text((c0 + c1) / 2, (r0 + r1) / 2, label, ha="center", va="center", fontsize=8)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_aspect("auto")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    if title:
        ax.set_title(title, fontsize=9)
    return blocks


def draw_race(B=1024, D=8192, F=32768, X=4, chip="TPU v5p", ax=None):
    """Problem 3.10's race: compute and communication bars of the two case-2 strategies for
    X[B, D] · Y[D_X, F] and the winner (each strategy takes max(compute, comms))."""
    import matplotlib.pyplot as plt

    r = sharding.strategy_times(int(B), int(D), int(F), int(X), chip)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.2))
    names = ["策略1：先 AllGather", "策略2：先乘后 AllReduce"]
    for i, key in enumerate(("S1", "S2")):
        tm, tc = r[key]
        ax.barh(i + 0.18, tm * 1e6, height=0.34, color=COLORS["compute"], label="计算" if i == 0 else None)
        ax.barh(i - 0.18, tc * 1e6, height=0.34, color=COLORS["comms"], label="通信" if i == 0 else None)
    t1, t2 = max(r["S1"]), max(r["S2"])
    ax.set_yticks([0, 1])
    ax.set_yticklabels(names)
    ax.set_xlabel("时间（µs）")
    win = names[0] if t1 <= t2 else names[1]
    ax.set_title(f"B={int(B)}，D={int(D)}，F={int(F)}，|X|={int(X)}：{win}更快"
                 f"（{fmt_time(min(t1, t2))} 对 {fmt_time(max(t1, t2))}）", fontsize=9)
    ax.legend(loc="lower right")
    ax.grid(axis="y", visible=False)
    plt.show()
    return r


def race_explorer():
    """The P3.10 strategy race as an ipywidgets explorer (needs a kernel)."""
    from . import dropdown, explorer, log_slider
    controls = {"B": log_slider(1024, 6, 16, 1, "B（token）", base=2, fmt=".0f"),
                "D": log_slider(8192, 9, 17, 1, "D（收缩维）", base=2, fmt=".0f"),
                "F": log_slider(32768, 10, 17, 1, "F", base=2, fmt=".0f"),
                "X": dropdown([2, 4, 8, 16, 32, 64], 4, "|X|"),
                "chip": dropdown(CHIPS, "TPU v5p", "芯片")}
    return explorer(controls, draw_race)
