"""Chapter 4 explorers: the Transformer accountant (model configurator) and the remat planner.

Book: sec-04-explorer. ``draw_accountant`` and ``draw_remat`` are pure numpy + matplotlib (what
the widgets call; tests time them, < 100 ms). ``build_config`` turns slider values into a
``TransformerConfig`` on top of a preset, so preset-only features (MLA, biases, shared experts)
are kept while the sliders change the sizes.
"""
from __future__ import annotations

import numpy as np

from .. import hardware, models, transformer as tr
from ..units import dtype_bytes, fmt_bytes, fmt_num

__all__ = ["PART_LABELS", "FLOP_LABELS", "build_config", "accountant_text", "draw_accountant",
           "accountant", "draw_remat", "remat_planner", "context_steps", "draw_context",
           "context_explorer", "context_series", "context_twin"]

#: Chinese labels of params_by_part keys, merged into the bars' groups.
PART_LABELS = {"embedding": "嵌入", "pos_embedding": "嵌入", "attn_q": "注意力 QKVO",
               "attn_k": "注意力 QKVO", "attn_v": "注意力 QKVO", "attn_o": "注意力 QKVO",
               "mlp": "FFN（专家）", "router": "FFN（专家）", "norms": "归一化与偏置",
               "biases": "归一化与偏置", "unembedding": "反嵌入"}
FLOP_LABELS = {"attn_qkvo": "QKVO 投影", "attn_core": "点积注意力", "mlp": "FFN",
               "router": "路由器", "unembed": "反嵌入"}
_COLORS = {"嵌入": "#999999", "注意力 QKVO": "#0072B2", "FFN（专家）": "#E69F00",
           "归一化与偏置": "#CC79A7", "反嵌入": "#56B4E9", "QKVO 投影": "#0072B2",
           "点积注意力": "#D55E00", "FFN": "#E69F00", "路由器": "#F0E442"}
CUSTOM = "自定义（基于 LLaMA-3-8B）"


def build_config(preset: str, d_model: int, d_ff: int, n_layers: int, n_heads: int,
                 n_kv_heads: int, d_head: int, vocab: int, gated: bool, tied: bool,
                 n_experts: int, top_k: int) -> tr.TransformerConfig:
    """The preset with the given sizes (ValueError for impossible combinations)."""
    base = models.get("LLaMA-3-8B" if preset == CUSTOM else preset)
    changes = dict(d_model=int(d_model), d_ff=int(d_ff), n_layers=int(n_layers),
                   n_heads=int(n_heads), n_kv_heads=int(n_kv_heads), d_head=int(d_head),
                   vocab=int(vocab), gated_mlp=bool(gated), tied_embeddings=bool(tied),
                   n_experts=int(n_experts), top_k=int(top_k))
    if int(n_experts) == 1:
        changes.update(n_shared_experts=0, n_dense_layers=0)
    if base.is_moe and int(n_experts) > 1 and base.d_ff_expert != base.d_ff:
        changes["d_ff_expert"] = base.d_ff_expert
    name = base.name if preset != CUSTOM else "自定义"
    return base.replace(name=name, **changes)


def accountant_text(cfg: tr.TransformerConfig, seq_len: int, kv_dtype: str = "bf16",
                    remat: str = "block", tokens_per_step: float = 4e6,
                    n_tokens: float = 15e12) -> str:
    """The numbers the accountant prints under its figure (Chinese)."""
    kv_tok = cfg.kv_bytes_per_token(kv_dtype)
    mem = cfg.training_memory(tokens_per_step, seq_len, remat=remat)
    f_tok = cfg.flops_per_token(seq_len, causal=False, backward=True)
    ratio = tr.attention_to_matmul_ratio(seq_len, cfg)
    lines = [
        f"{cfg.label}：{cfg.attention_kind}，参数 {fmt_num(cfg.params())}，"
        f"每 token 激活 {fmt_num(cfg.active_params())}",
        f"训练 FLOPs/token（T={seq_len}）：{fmt_num(f_tok)}；6·P_激活 = "
        f"{fmt_num(6 * cfg.matmul_params())}；注意力/矩阵乘法 = {ratio:.3g}"
        f"（交叉点 T ≈ {fmt_num(tr.attention_crossover_seq_len(cfg))}）",
        f"KV 缓存（{kv_dtype}）：每 token {fmt_bytes(kv_tok)}，每条长 {seq_len} 的序列 "
        f"{fmt_bytes(kv_tok * seq_len)}",
        f"训练内存/副本（{fmt_num(tokens_per_step)} token/步，Adam，重计算 {remat}）："
        f"参数 {fmt_bytes(mem.params)} + 梯度 {fmt_bytes(mem.grads)} + 优化器 "
        f"{fmt_bytes(mem.optimizer)} + 激活 {fmt_bytes(mem.activations)} = {fmt_bytes(mem.total)}",
        f"训练 {fmt_num(n_tokens)} token 共需 "
        f"{fmt_num(tr.train_flops(cfg, n_tokens, seq_len))} FLOPs",
    ]
    return "\n".join(lines)


def draw_accountant(preset="LLaMA-3-8B", d_model=4096, d_ff=14336, n_layers=32, n_heads=32,
                    n_kv_heads=8, d_head=128, vocab=128256, gated=True, tied=False, n_experts=1,
                    top_k=1, seq_len=8192, kv_dtype="bf16", remat="block",
                    tokens_per_step=4e6, show=True):
    """Parameters by part (total vs active) and FLOPs/token split vs context; prints the rest."""
    import matplotlib.pyplot as plt

    cfg = build_config(preset, d_model, d_ff, n_layers, n_heads, n_kv_heads, d_head, vocab,
                       gated, tied, n_experts, top_k)
    seq_len = int(seq_len)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.4),
                                   gridspec_kw={"width_ratios": [1, 1.3]})
    # params: total and active, grouped
    groups: dict[str, float] = {}
    for k, v in cfg.params_by_part().items():
        groups[PART_LABELS[k]] = groups.get(PART_LABELS[k], 0) + v
    inactive = cfg.params() - cfg.active_params()
    left = np.zeros(2)
    for g, v in groups.items():
        widths = np.array([v - inactive if g.startswith("FFN") else v, v]) / 1e9
        ax1.barh([0, 1], widths, left=left, color=_COLORS[g], label=g)
        left += widths
    ax1.set_yticks([0, 1], ["激活", "总计"])
    ax1.set_xlabel("参数量（十亿）")
    ax1.legend(loc="lower right")
    ax1.set_title("参数构成")
    # FLOPs per token vs context length (stacked), current T marked
    ts = np.logspace(np.log10(512), 6, 48)
    parts = cfg.flops_by_part(ts, causal=False)
    ys = [np.broadcast_to(np.asarray(v, dtype=float), ts.shape) * 3 for v in parts.values()]
    labels = [FLOP_LABELS[k] for k in parts]
    ax2.stackplot(ts, ys, labels=labels, colors=[_COLORS[l] for l in labels], alpha=0.85)
    ax2.axvline(seq_len, color="k", lw=1, ls="--")
    ax2.set_xscale("log")
    ax2.set_xlabel("上下文长度 T（token）")
    ax2.set_ylabel("训练 FLOPs / token")
    ax2.set_title("每 token 训练 FLOPs 的构成")
    ax2.legend(loc="upper left")
    text = accountant_text(cfg, seq_len, kv_dtype, remat, tokens_per_step)
    if show:
        plt.show()
        print(text)
    return cfg


def accountant(preset: str = "LLaMA-3-8B"):
    """The model configurator: a preset fills the sliders; every slider edits the config."""
    from . import dropdown, explorer, int_slider, log_slider, toggle

    names = [n for n in models.names()] + [CUSTOM]
    base = models.get(preset)
    c = {
        "preset": dropdown(names, preset, "预设模型"),
        "d_model": int_slider(base.d_model, 256, 20480, 128, "D（d_model）"),
        "d_ff": int_slider(base.d_ff, 256, 65536, 128, "F（d_ff）"),
        "n_layers": int_slider(base.n_layers, 1, 160, 1, "L（层数）"),
        "n_heads": int_slider(base.n_heads, 1, 256, 1, "N（查询头）"),
        "n_kv_heads": int_slider(base.n_kv_heads, 1, 256, 1, "K（KV 头）"),
        "d_head": int_slider(base.d_head, 16, 512, 16, "H（头维度）"),
        "vocab": int_slider(base.vocab, 1000, 262144, 1000, "V（词表）"),
        "gated": toggle([("门控 FFN", True), ("普通 FFN", False)], base.gated_mlp, ""),
        "tied": toggle([("独立反嵌入", False), ("共享嵌入", True)], base.tied_embeddings, ""),
        "n_experts": int_slider(base.n_experts, 1, 256, 1, "E（专家数）"),
        "top_k": int_slider(base.top_k, 1, 16, 1, "k（每 token 专家）"),
        "seq_len": log_slider(8192, 9, 20, 1, "上下文 T（token）", base=2, fmt=".0f"),
        "kv_dtype": dropdown(["bf16", "int8", "fp8", "f32"], "bf16", "KV 数据类型"),
        "remat": dropdown([("不重计算（≈20 份）", "none"), ("只存大矩阵乘法的输出（≈7 份）", "dots"),
                           ("整层重计算（1 份）", "block")], "block", "重计算策略"),
        "tokens_per_step": log_slider(4194304, 16, 26, 1, "每步 token", base=2, fmt=".3g"),
    }

    def load(change):
        if change["new"] == CUSTOM:
            return
        m = models.get(change["new"])
        for k, v in (("d_model", m.d_model), ("d_ff", m.d_ff), ("n_layers", m.n_layers),
                     ("n_heads", m.n_heads), ("n_kv_heads", m.n_kv_heads), ("d_head", m.d_head),
                     ("vocab", m.vocab), ("gated", m.gated_mlp), ("tied", m.tied_embeddings),
                     ("n_experts", m.n_experts), ("top_k", m.top_k)):
            c[k].value = v

    c["preset"].observe(load, names="value")
    return explorer(c, draw_accountant)


def draw_remat(model="LLaMA-3-70B", tokens_per_step=4e6, n_chips=256, chip="TPU v5p",
               seq_len=8192, custom_c=4.0, show=True):
    """Activation bytes per chip for each policy vs the chip's HBM, and the FLOPs multiplier."""
    import matplotlib.pyplot as plt

    cfg = models.get(model)
    chip = hardware.get(chip)
    n_chips = int(n_chips)
    policies = [("不重计算", tr.REMAT_POLICIES["none"], 1.0),
                ("只存大矩阵乘法的输出", tr.REMAT_POLICIES["dots"],
                 float(tr.remat_flops_multiplier("dots", cfg, seq_len))),
                ("整层重计算", tr.REMAT_POLICIES["block"], tr.remat_flops_multiplier("block")),
                (f"自定义 c={custom_c:g}", float(custom_c), float("nan"))]
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    state = (cfg.params() * (2 + 2 + 8)) / n_chips
    for i, (name, c, mult) in enumerate(policies):
        act = tr.activation_bytes(tokens_per_step, cfg.d_model, cfg.n_layers, c) / n_chips
        ax.barh([i], [state / 1e9], color="#999999", label="参数+梯度+Adam" if i == 0 else None)
        ax.barh([i], [act / 1e9], left=state / 1e9, color="#0072B2",
                label="激活值" if i == 0 else None)
        m = "FLOPs ×?" if np.isnan(mult) else f"FLOPs ×{mult:.3f}"
        ax.text((state + act) / 1e9, i, f"  {fmt_bytes(state + act)}，{m}", va="center",
                fontsize=8)
    ax.axvline(chip.hbm_bytes / 1e9, color="#D55E00", ls="--", lw=1.2,
               label=f"{chip.name} HBM {fmt_bytes(chip.hbm_bytes)}")
    ax.set_yticks(range(len(policies)), [p[0] for p in policies])
    ax.set_xscale("log")
    ax.set_xlabel("每芯片内存（GB，对数坐标）")
    ax.set_title(f"{cfg.label}：每步 {fmt_num(tokens_per_step)} token，{n_chips} 颗芯片均分")
    ax.legend(loc="lower right")
    if show:
        plt.show()
    return fig


def remat_planner(model: str = "LLaMA-3-70B"):
    """W4.3: policy vs activation memory per chip and FLOPs overhead."""
    from . import dropdown, explorer, float_slider, log_slider

    c = {
        "model": dropdown(models.names(), model, "模型"),
        "tokens_per_step": log_slider(4194304, 16, 26, 1, "每步 token", base=2, fmt=".3g"),
        "n_chips": log_slider(256, 0, 14, 1, "芯片数", base=2, fmt=".0f"),
        "chip": dropdown(hardware.names(), "TPU v5p", "芯片"),
        "seq_len": log_slider(8192, 10, 20, 1, "序列长度 T", base=2, fmt=".0f"),
        "custom_c": float_slider(4.0, 1.0, 20.0, 0.5, "自定义每层保存份数 c"),
    }
    return explorer(c, draw_remat)


def context_steps(model_names, seq_lens):
    """Traces for the kernel-free plotly twin: one slider step per model, each with the
    training FLOPs/token split (stacked) against context length."""
    steps = []
    ts = np.asarray(seq_lens, dtype=float)
    for name in model_names:
        cfg = models.get(name)
        parts = cfg.flops_by_part(ts, causal=False)
        traces = []
        for k, v in parts.items():
            y = np.broadcast_to(np.asarray(v, dtype=float), ts.shape) * 3
            if not np.any(y):
                continue
            traces.append({"x": ts, "y": y, "name": FLOP_LABELS[k], "mode": "lines",
                           "stackgroup": "one", "line": {"color": _COLORS[FLOP_LABELS[k]]}})
        steps.append((cfg.label, traces))
    return steps


def context_series(chip="TPU v5e", group=8, phase="prefill", seq_len=8192) -> list:
    """Attention's arithmetic intensity against context length (prefill: T = S; decode: T = 1),
    the chip's critical intensity and the chosen S, as trace dicts: one definition for
    ``draw_context`` (widget) and ``context_twin`` (plotly, website)."""
    if phase not in ("prefill", "decode"):
        raise ValueError(f"phase must be 'prefill' or 'decode', got {phase!r}")
    chip = hardware.get(chip)
    ss = np.logspace(8, 20, 40, base=2)
    ts = ss if phase == "prefill" else np.ones_like(ss)
    inten = np.asarray(tr.attention_arithmetic_intensity(ts, ss, int(group)), dtype=float)
    crit = chip.critical_intensity()
    lo, hi = float(min(inten.min(), crit) / 2), float(max(inten.max(), crit) * 2)
    return [{"x": ss, "y": inten, "name": "注意力的算术强度", "mode": "lines", "line": {"color": "#0072B2"}},
            {"x": [ss[0], ss[-1]], "y": [crit, crit], "name": f"{chip.name} 临界强度 {crit:.0f}",
             "mode": "lines", "line": {"color": "#000000", "dash": "dash", "width": 1.3}},
            {"x": [float(seq_len)] * 2, "y": [lo, hi], "name": f"S = {int(seq_len)}", "mode": "lines",
             "line": {"color": "#999999", "dash": "dot", "width": 1.3}}]


def context_twin(chips=("TPU v5e", "TPU v5p", "TPU v6e", "H100", "B200"), group=8, phase="decode",
                 seq_len=8192):
    """Kernel-free twin of ``context_explorer``'s intensity panel: one slider step per chip."""
    from . import twin
    names = [hardware.get(c).name for c in chips]
    return twin(context_series, "chip", names, fixed={"group": group, "phase": phase, "seq_len": seq_len},
                title=f"注意力的算术强度（G = {group}，{'预填充' if phase == 'prefill' else '解码'}）",
                slider_label="芯片", active=0,
                xaxis={"title": {"text": "上下文长度 S（token）"}, "type": "log"},
                yaxis={"title": {"text": "FLOPs/字节"}, "type": "log"})


def draw_context(chip="TPU v5e", d_model=8192, group=8, phase="prefill", seq_len=8192,
                 batch=1, show=True):
    """W4.2: one layer of a D-wide model (F = 4D, H = 128, N = D/128, K = N/G) on ``chip``:
    attention vs MLP roofline time at this context, and attention intensity vs context."""
    import matplotlib.pyplot as plt
    from . import plot_traces

    if phase not in ("prefill", "decode"):
        raise ValueError(f"phase must be 'prefill' or 'decode', got {phase!r}")
    chip = hardware.get(chip)
    n_heads = max(1, int(d_model) // 128)
    group = int(group)
    if n_heads % group:
        raise ValueError(f"G={group} must divide N = D/128 = {n_heads}")
    cfg = tr.TransformerConfig(d_model=int(d_model), n_layers=1, n_heads=n_heads,
                               n_kv_heads=n_heads // group, d_ff=4 * int(d_model), vocab=1,
                               d_head=128, name=f"D={int(d_model)}, G={group}")
    S = float(seq_len)
    b = int(batch)
    t = S if phase == "prefill" else 1.0
    t_att = float(tr.attention_time(cfg, b, t, S, chip))
    t_mlp = float(tr.mlp_time(cfg, b * t, chip))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 3.2), gridspec_kw={"width_ratios": [1, 1.5]})
    ax1.bar(["点积注意力", "FFN"], [t_att * 1e6, t_mlp * 1e6], color=["#D55E00", "#E69F00"])
    ax1.set_ylabel("每层耗时（µs，Roofline 下界）")
    ax1.set_title(f"{chip.name}，{'预填充' if phase == 'prefill' else '解码'}，S = {int(S)}")
    plot_traces(ax2, context_series(chip.name, group, phase, seq_len))
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("上下文长度 S（token）")
    ax2.set_ylabel("FLOPs/字节")
    ax2.legend()
    if show:
        plt.show()
        ratio = float(tr.attention_to_matmul_ratio(S, cfg)) if phase == "prefill" else float("nan")
        print(f"注意力/FFN 时间 = {t_att / t_mlp:.3g}；注意力强度 = "
              f"{float(tr.attention_arithmetic_intensity(t, S, group)):.3g} FLOPs/字节"
              + (f"；注意力/矩阵乘法 FLOPs = {ratio:.3g}（T/8D）" if phase == "prefill" else ""))
    return t_att, t_mlp


def context_explorer(chip: str = "TPU v5e"):
    """W4.2: chip, D, G, phase and context length → attention vs MLP time and intensity."""
    from . import dropdown, explorer, int_slider, log_slider, toggle

    c = {
        "chip": dropdown(hardware.names(), chip, "芯片"),
        "d_model": int_slider(8192, 1024, 16384, 1024, "D（d_model）"),
        "group": dropdown([1, 2, 4, 8, 16], 8, "G = N/K"),
        "phase": toggle([("预填充", "prefill"), ("解码", "decode")], "prefill", ""),
        "seq_len": log_slider(8192, 8, 20, 1, "上下文 S（token）", base=2, fmt=".0f"),
        "batch": log_slider(1, 0, 8, 1, "批 B（序列）", base=2, fmt=".0f"),
    }
    return explorer(c, draw_context)
