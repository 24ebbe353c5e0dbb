"""GPU-cluster parallelism roofline explorer (chapter 12): for a node type and an MLP size, the
compute and communication times of data, tensor and expert parallelism, and which one binds.

Book: sec-12-rooflines. ``draw_parallel`` is pure numpy + matplotlib (< 100 ms).
"""
from __future__ import annotations

import numpy as np

from .. import gpu_parallel as gp
from ..units import fmt_time

__all__ = ["strategy_times", "draw_parallel", "parallel_explorer"]


def strategy_times(node="DGX H100", d_model=8192, d_ff=28672, tokens_per_gpu=4096, tp=8, ep=64,
                   top_k=8, efficiency=1.0):
    """{strategy: (T_math, T_comms)} per MLP layer for one GPU's share of the batch.

    DP: cross-node data parallelism (backward pass, F25); its communication time is the larger of
    the two levels it crosses, the node egress (W_node) and every GPU's own NVLink (W_gpu), so a
    GB200 NVL72 rack or an H800 node is bound by NVLink (book: sec-12-gb200, the max rule).
    TP: ``tp``-way tensor parallelism of a batch of tokens_per_gpu·tp tokens (F28/F29).
    EP: ``ep``-way expert parallelism with top-k routing (F30), batch tokens_per_gpu·ep.
    ``efficiency`` scales every bandwidth (NCCL rarely reaches the peak)."""
    e = float(efficiency)
    if not 0 < e <= 1:
        raise ValueError(f"efficiency must be in (0, 1], got {efficiency}")
    out = {}
    tm, tc_node = gp.dp_times(tokens_per_gpu, d_model, d_ff, node)
    _, tc_gpu = gp.dp_times(tokens_per_gpu, d_model, d_ff, node, cross_node=False)
    out["数据并行（跨节点）"] = (tm, max(tc_node, tc_gpu) / e)
    tm, tc = gp.tp_times(tokens_per_gpu * tp, d_model, d_ff, tp, node)
    out[f"张量并行 {tp} 路"] = (tm, tc / e)
    g = gp.node_type(node).gpus_per_node
    if ep > g:
        tm, tc = gp.ep_times(tokens_per_gpu * ep, d_model, d_ff, top_k, ep, node)
        out[f"专家并行 {ep} 路（k={top_k}）"] = (tm, tc / e)
    return out


def draw_parallel(node="DGX H100", d_ff=28672, tokens_per_gpu=4096, tp=8, ep=64, efficiency=1.0,
                  d_model=8192, top_k=8):
    """Paired bars of T_math and T_comms per strategy (log time axis), the binding one marked."""
    import matplotlib.pyplot as plt

    res = strategy_times(node, float(d_model), float(d_ff), float(tokens_per_gpu), int(tp), int(ep),
                         int(top_k), float(efficiency))
    names = list(res)
    y = np.arange(len(names))
    tm = np.array([res[n][0] for n in names])
    tc = np.array([res[n][1] for n in names])
    fig, ax = plt.subplots(figsize=(6.6, 2.8))
    ax.barh(y - 0.18, tm, height=0.36, color="#0072B2", label="计算时间")
    ax.barh(y + 0.18, tc, height=0.36, color="#009E73", label="通信时间")
    ax.set_xscale("log")
    ax.set_yticks(y)
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    for i in range(len(names)):
        tag = "计算受限" if tm[i] >= tc[i] else "通信受限"
        ax.text(max(tm[i], tc[i]) * 1.15, y[i], f"{tag}（{fmt_time(max(tm[i], tc[i]))}）",
                va="center", fontsize=8)
    ax.set_xlim(min(tm.min(), tc.min()) / 3, max(tm.max(), tc.max()) * 30)
    ax.set_xlabel("每层时间（秒）")
    ax.set_title(f"{node}：D = {int(d_model)}，F = {int(d_ff)}，k = {int(top_k)}，"
                 f"每 GPU {int(tokens_per_gpu)} 个 token", fontsize=9)
    ax.legend(loc="lower right")
    plt.show()
    return res


def parallel_explorer():
    """ipywidgets explorer for ``draw_parallel``."""
    from . import dropdown, explorer, float_slider, int_slider, log_slider
    return explorer({"node": dropdown(list(gp.NODE_TYPES), "DGX H100", "节点类型"),
                     "d_model": dropdown([4096, 7168, 8192, 12288, 16384], 8192, "D"),
                     "d_ff": log_slider(28672, 3, 5, 0.05, "F", base=10, fmt=".0f"),
                     "top_k": dropdown([1, 2, 4, 8], 8, "每个 token 的专家数 k"),
                     "tokens_per_gpu": log_slider(4096, 2, 5, 0.25, "每 GPU token 数", fmt=".0f"),
                     "tp": dropdown([2, 4, 8, 16, 32], 8, "张量并行 Y"),
                     "ep": dropdown([16, 32, 64, 128, 256], 64, "专家并行 Z"),
                     "efficiency": float_slider(1.0, 0.3, 1.0, 0.05, "带宽效率")}, draw_parallel)
