"""Chapters 7-8 explorers: a serving planner (one decode configuration: time parts, memory,
throughput, cost, bottleneck) and the latency-throughput Pareto front with a context control.

Book: sec-07-explorer, sec-08-explorer. ``draw_serving`` and ``draw_pareto`` are pure numpy +
matplotlib (< 100 ms, timed in tests/test_inference.py); a configuration that does not fit raises
``inference.Infeasible`` (a ValueError), which the explorer shows as a message.
"""
from __future__ import annotations

import numpy as np

from .. import hardware, inference
from ..units import fmt_bytes, fmt_num, fmt_time

__all__ = ["MODELS", "CHIPS", "serving_model", "draw_serving", "serving_explorer",
           "draw_pareto", "pareto_explorer", "latency_breakdown_steps", "pareto_steps",
           "draw_disagg", "disagg_explorer", "draw_intensity", "intensity_explorer"]

#: label -> (preset name or ServedModel, params override)
MODELS = {
    "LLaMA 3-8B": ("llama3-8b", None),
    "LLaMA 3-70B（P 取 70e9）": ("llama3-70b", 70e9),
    "LLaMA 3-405B（P 取 405e9）": ("llama3-405b", 405e9),
    "LLaMA 2-13B": ("llama2-13b", None),
    "第7章虚构模型（18.4B）": (inference.BOOK_CH7_MODEL, None),
}
CHIPS = ["TPU v5e", "TPU v6e", "TPU v5p", "H100", "H200"]
_CACHE: dict = {}


def serving_model(label: str) -> inference.ServedModel:
    """The ServedModel behind a menu label (cached)."""
    if label not in MODELS:
        raise ValueError(f"unknown model {label!r}; allowed: {', '.join(MODELS)}")
    if label not in _CACHE:
        m, p = MODELS[label]
        _CACHE[label] = inference.served_model(m, params=p)
    return _CACHE[label]


def draw_serving(model="LLaMA 3-70B（P 取 70e9）", chip="TPU v5e", n_chips=16, batch=32,
                 seq_len=8192, weights="int8", kv="int8", price=1.2):
    """Left: time of one decode step split into KV loading / weight loading / MLP FLOPs vs the
    batch (current batch marked); right: memory per chip. Prints the numbers."""
    import matplotlib.pyplot as plt

    m = serving_model(model)
    c = hardware.get(chip)
    n, b, s = int(n_chips), int(round(batch)), int(round(seq_len))
    st = inference.decode_step_time(m, b, s, n, c, weights, kv)       # raises if it does not fit
    bmax = inference.max_batch_size(m, s, n, c, weights, kv)
    bs = np.unique(np.round(np.logspace(0, np.log10(max(bmax, 2)), 60)))
    sw = inference.decode_step_time(m, bs, s, n, c, weights, kv, check_memory=False)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9.6, 3.6), gridspec_kw={"width_ratios": [3, 1]})
    ax.plot(bs, np.asarray(sw.kv_s) * 1e3, label="KV 缓存读取", color="#D55E00")
    ax.plot(bs, np.broadcast_to(sw.param_s, bs.shape) * 1e3, label="权重读取", color="#0072B2")
    ax.plot(bs, np.asarray(sw.flops_s) * 1e3, label="FFN 计算", color="#009E73")
    ax.plot(bs, np.asarray(sw.total_s) * 1e3, label="每步总耗时", color="k", lw=2)
    ax.axvline(b, color="#CC79A7", ls="--", lw=1)
    bc = inference.critical_batch(c, weights)
    if bc <= bs[-1]:
        ax.axvspan(bc, bs[-1], color="#009E73", alpha=0.08, lw=0)
    ax.set_xscale("log"), ax.set_yscale("log")
    ax.set_xlabel("批次大小 B（序列数）"), ax.set_ylabel("每个解码步的时间（ms）")
    ax.legend(loc="upper left")
    hbm = c.hbm_bytes / 1e9
    p_chip = m.params * inference.bytes_per_elem(weights) / n / 1e9
    kv_chip = float(st.memory_bytes) / n / 1e9 - p_chip
    ax2.bar([0], [p_chip], color="#0072B2", label="权重")
    ax2.bar([0], [kv_chip], bottom=[p_chip], color="#D55E00", label="KV 缓存")
    ax2.axhline(hbm, color="k", ls="--", lw=1)
    ax2.set_xticks([]), ax2.set_ylabel("每芯片 HBM（GB）"), ax2.set_ylim(0, hbm * 1.15)
    ax2.legend(loc="lower center")
    plt.show()
    tpc = float(st.tokens_per_s_per_chip)
    regime = "计算受限（FFN）" if bool(st.compute_bound) else "内存带宽受限"
    cost = (f"；每百万 token {inference.cost_per_million_tokens(tpc, price):.3g} 美元"
            if price else "")
    print(f"每步 {fmt_time(float(st.total_s))}（KV {fmt_time(float(st.kv_s))} + max(计算 "
          f"{fmt_time(float(st.flops_s))}, 权重 {fmt_time(float(st.param_s))})），{regime}\n"
          f"吞吐 {fmt_num(float(st.tokens_per_s))} token/s，每芯片 {fmt_num(tpc)} token/s{cost}\n"
          f"HBM {fmt_bytes(float(st.memory_bytes))} / {fmt_bytes(float(st.hbm_bytes))}，"
          f"最大批次大小 {bmax}；临界批次大小 {bc:.0f}")
    return st


def serving_explorer(model="LLaMA 3-70B（P 取 70e9）"):
    """The serving planner: model, chip, chips, batch, context, weight/KV dtype, price."""
    from . import dropdown, explorer, float_slider, log_slider
    import ipywidgets as w
    controls = {
        "model": dropdown(list(MODELS), model, "模型"),
        "chip": dropdown(CHIPS, "TPU v5e", "芯片"),
        "n_chips": w.SelectionSlider(options=list(inference.V5E_SLICES), value=16,
                                     description="芯片数", continuous_update=False,
                                     style={"description_width": "initial"}),
        "batch": log_slider(32, 0, 10, 0.25, "批次大小 B", base=2, fmt=".0f"),
        "seq_len": log_slider(8192, 9, 17, 0.5, "上下文 S（token）", base=2, fmt=".0f"),
        "weights": dropdown(["bf16", "int8", "int4"], "int8", "权重类型"),
        "kv": dropdown(["bf16", "int8", "int4"], "int8", "KV 类型"),
        "price": float_slider(1.2, 0.0, 12.0, 0.1, "每芯片小时（美元）", fmt=".1f"),
    }
    return explorer(controls, draw_serving)


def draw_pareto(seq_len=8192, weights="int8", n_chips=16, budget_ms=15.0,
                model="LLaMA 3-70B（P 取 70e9）", chip="TPU v5e"):
    """Latency vs tokens/s/chip as the batch grows, for the chosen slice and for half/double
    the chips; the best point under the latency budget is marked."""
    import matplotlib.pyplot as plt

    m = serving_model(model)
    s = int(round(seq_len))
    fig, ax = plt.subplots(figsize=(6.8, 4.0))
    best = None
    for n, ls in ((max(1, int(n_chips) // 2), ":"), (int(n_chips), "-"), (int(n_chips) * 2, "--")):
        try:
            fr = inference.pareto_frontier(m, s, n, chip, weights, "int8" if weights != "bf16" else "bf16")
        except inference.Infeasible:
            continue
        ax.plot(fr.latency_s * 1e3, fr.tok_s_chip, ls=ls, label=f"{n} 颗芯片（B ≤ {int(fr.batch[-1])}）")
        ok = fr.latency_s * 1e3 <= budget_ms
        if ok.any():
            i = int(np.argmax(np.where(ok, fr.tok_s_chip, -1)))
            if best is None or fr.tok_s_chip[i] > best[2]:
                best = (n, int(fr.batch[i]), float(fr.tok_s_chip[i]), float(fr.latency_s[i]))
    if not ax.lines:
        plt.close(fig)
        raise inference.Infeasible(f"权重在 {int(n_chips) * 2} 颗以内的芯片上都放不下")
    ax.axvline(budget_ms, color="#CC79A7", ls="--", lw=1)
    if best:
        ax.scatter([best[3] * 1e3], [best[2]], color="#CC79A7", zorder=5, s=40)
    ax.set_xscale("log"), ax.set_yscale("log")
    ax.set_xlabel("每步延迟（ms）"), ax.set_ylabel("每芯片吞吐（token/s）")
    ax.legend(loc="lower right")
    plt.show()
    if best:
        print(f"延迟预算 {budget_ms:g} ms 内最好的点：{best[0]} 颗芯片，B = {best[1]}，"
              f"每步 {best[3] * 1e3:.3g} ms，每芯片 {best[2]:.3g} token/s")
    else:
        print(f"这几个切片都做不到每步 {budget_ms:g} ms 以内")


def pareto_explorer():
    """The Pareto front with context, weight dtype, chips and a latency budget."""
    from . import dropdown, explorer, float_slider, log_slider
    import ipywidgets as w
    controls = {
        "seq_len": log_slider(8192, 10, 16, 0.5, "上下文 S（token）", base=2, fmt=".0f"),
        "weights": dropdown(["bf16", "int8", "int4"], "int8", "权重类型"),
        "n_chips": w.SelectionSlider(options=[4, 8, 16, 32, 64], value=16, description="芯片数",
                                     continuous_update=False, style={"description_width": "initial"}),
        "budget_ms": float_slider(15.0, 2.0, 60.0, 1.0, "延迟预算（ms）", fmt=".0f"),
    }
    return explorer(controls, draw_pareto)


# ---- kernel-free plotly twins ---------------------------------------------------------------

def pareto_steps(model, contexts, n_chips=16, chip="TPU v5e", weights="int8", kv="int8"):
    """Slider steps (label, traces) of the Pareto front per context, for interactive.slider_figure."""
    m = inference.served_model(model) if not isinstance(model, inference.ServedModel) else model
    steps = []
    for s in contexts:
        fr = inference.pareto_frontier(m, int(s), n_chips, chip, weights, kv)
        steps.append((f"{int(s)}", [{
            "x": np.round(fr.latency_s * 1e3, 4), "y": np.round(fr.tok_s_chip / 1e3, 5),
            "mode": "lines+markers", "marker": {"size": 3},
            "text": [f"B = {int(b)}" for b in fr.batch], "name": f"S = {int(s)}",
            "hovertemplate": "%{text}<br>%{x:.3g} ms, %{y:.3g} token/ms/芯片<extra></extra>"}]))
    return steps


def latency_breakdown_steps(model, contexts, n_chips=16, chip="TPU v5e", weights="int8",
                            kv="int8", bmax=512):
    """Slider steps of the decode-step breakdown (weights / KV / FLOPs / total) vs batch."""
    m = inference.served_model(model) if not isinstance(model, inference.ServedModel) else model
    bs = np.unique(np.round(np.logspace(0, np.log10(bmax), 48)))
    steps = []
    for s in contexts:
        st = inference.decode_step_time(m, bs, int(s), n_chips, chip, weights, kv,
                                        check_memory=False)
        fit = inference.max_batch_size(m, int(s), n_chips, chip, weights, kv)
        tr = []
        for name, y, color in (("权重读取", np.broadcast_to(st.param_s, bs.shape), "#0072B2"),
                               ("KV 缓存读取", st.kv_s, "#D55E00"),
                               ("FFN 计算", st.flops_s, "#009E73"),
                               ("总耗时", st.total_s, "#000000")):
            tr.append({"x": bs, "y": np.round(np.asarray(y) * 1e3, 5), "mode": "lines",
                       "name": name, "line": {"color": color}})
        tr.append({"x": [fit, fit], "y": [0.01, 100], "mode": "lines", "name": f"HBM 上限 B = {fit}",
                   "line": {"color": "#CC79A7", "dash": "dash"}})
        steps.append((f"{int(s)}", tr))
    return steps


# ---- disaggregation calculator (sec-08-prefill) ---------------------------------------------

def draw_disagg(prompt_len=8192, decode_len=512, mfu=0.4, prefill_chips=16, batch=32,
                decode_chips=8, model="LLaMA 3-70B（P 取 70e9）", chip="TPU v5e"):
    """Prefill time, decode step, the prefill:decode server ratio and the KV eviction rate of a
    disaggregated deployment; a bar chart of the work one request needs from each pool."""
    import matplotlib.pyplot as plt

    m = serving_model(model)
    t_pre = float(inference.prefill_time(m, int(prompt_len), int(prefill_chips), chip, mfu=float(mfu)))
    st = inference.decode_step_time(m, int(batch), int(prompt_len) + int(decode_len), int(decode_chips),
                                    chip, "int8", "int8")
    t_step = float(st.total_s)
    ratio = float(inference.prefill_decode_ratio(t_pre, t_step, int(batch), int(decode_len)))
    evict = float(inference.kv_evictions_per_step(int(batch), int(prompt_len), int(decode_len)))
    kv_gb = float(inference.kv_bytes_per_seq(m, int(prompt_len), "int8")) / 1e9
    fig, ax = plt.subplots(figsize=(6.4, 2.4))
    per_req_pre = t_pre * int(prefill_chips)                       # chip-seconds per request
    per_req_dec = t_step * int(decode_len) * int(decode_chips) / int(batch)
    ax.barh(["预填充", "解码"], [per_req_pre, per_req_dec], color=["#0072B2", "#D55E00"])
    ax.set_xlabel("每个请求占用的芯片·秒")
    plt.show()
    print(f"预填充 {fmt_time(t_pre)}（{int(prefill_chips)} 颗），解码每步 {fmt_time(t_step)}"
          f"（{int(decode_chips)} 颗，B = {int(batch)}）\n"
          f"预填充服务器 : 解码服务器 ≈ {ratio:.2f} : 1；每步淘汰 {evict:.0f} 个 token 的 KV；"
          f"每个请求要传 {kv_gb:.2f} GB 的 int8 KV 缓存")
    return ratio


def disagg_explorer():
    """Disaggregation calculator: prompt and decode length, MFU, chips per pool, decode batch."""
    from . import explorer, float_slider, int_slider, log_slider
    controls = {
        "prompt_len": log_slider(8192, 9, 15, 0.5, "提示词长度（token）", base=2, fmt=".0f"),
        "decode_len": log_slider(512, 5, 12, 0.5, "生成长度（token）", base=2, fmt=".0f"),
        "mfu": float_slider(0.4, 0.1, 0.9, 0.05, "预填充 MFU"),
        "prefill_chips": int_slider(16, 4, 64, 4, "预填充芯片数"),
        "batch": int_slider(32, 1, 128, 1, "解码批次大小 B"),
        "decode_chips": int_slider(8, 8, 64, 8, "解码芯片数"),
    }
    return explorer(controls, draw_disagg)


# ---- intensity explorer (sec-07-attention) --------------------------------------------------

def draw_intensity(S=8192, T=1, G=8, chip="TPU v5e", D=8192, F=28672):
    """Left: attention intensity S·T·G/(S + T·G) against T for the chosen S and G, with the
    chip's ridge C/W; right: the linear layer's exact intensity against B with B_crit marked."""
    import matplotlib.pyplot as plt
    from .. import roofline

    c = hardware.get(chip)
    ridge = c.critical_intensity()
    s, t, g = float(S), float(T), float(G)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9.6, 3.4))
    ts = np.logspace(0, np.log10(max(s, 2)), 80)
    ax.plot(ts, inference.attention_intensity(s, ts, g), label=f"注意力（S = {int(s)}，G = {int(g)}）")
    ax.axhline(ridge, color="k", ls="--", lw=1, label=f"{c.name} 临界算术强度 {ridge:.0f}")
    here = float(inference.attention_intensity(s, t, g))
    ax.scatter([t], [here], color="#CC79A7", zorder=5)
    ax.set_xscale("log"), ax.set_yscale("log")
    ax.set_xlabel("查询 token 数 T"), ax.set_ylabel("算术强度（FLOPs/字节）")
    ax.legend()
    bs = np.logspace(0, 4, 120)
    ax2.plot(bs, roofline.matmul_intensity(bs, D, F), label=f"线性层 D = {int(D)}，F = {int(F)}")
    ax2.axhline(ridge, color="k", ls="--", lw=1)
    b_exact = float(roofline.critical_batch(c, D=D, F=F))
    ax2.axvline(inference.critical_batch(c), color="0.5", ls=":", label="近似 B_crit = C/W")
    if np.isfinite(b_exact):
        ax2.axvline(b_exact, color="#D55E00", ls=":", label=f"精确 B* = {b_exact:.0f}")
    ax2.set_xscale("log"), ax2.set_yscale("log")
    ax2.set_xlabel("批次大小 B（token）"), ax2.set_ylabel("算术强度（FLOPs/字节）")
    ax2.legend()
    plt.show()
    bound = "计算受限" if here >= ridge else "内存带宽受限"
    print(f"这次注意力的强度 {here:.3g} FLOPs/字节，{c.name} 的临界算术强度 {ridge:.0f}：{bound}")


def intensity_explorer():
    """Sliders for S, T, G and a chip menu."""
    from . import dropdown, explorer, log_slider
    controls = {
        "S": log_slider(8192, 7, 17, 0.5, "缓存长度 S", base=2, fmt=".0f"),
        "T": log_slider(1, 0, 14, 0.5, "查询长度 T", base=2, fmt=".0f"),
        "G": dropdown([1, 2, 4, 8, 16], 8, "每个 KV 头的查询头数 G"),
        "chip": dropdown(CHIPS, "TPU v5e", "芯片"),
    }
    return explorer(controls, draw_intensity)
