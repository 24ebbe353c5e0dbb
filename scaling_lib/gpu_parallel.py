"""LLM rooflines on GPU clusters: when data, tensor, expert and pipeline parallelism are compute-
bound on DGX H100/B200 nodes and GB200 NVL72 racks (MLP block only, bf16).

Units: SI (seconds, bytes/s, FLOPs/s; batches in tokens). Book: 第12章 sec-12-rooflines,
formulas F25-F33 of the chapter-12 spec; appendix sec-12-gb200. Chapter 5's closed forms are the
TPU versions; these are the GPU ones (the two share notation: C = peak FLOPs/s per GPU,
W_gpu = NVLink per GPU per direction, W_node = node egress per direction).

A node type is a view of a ``topology.System`` built from the catalogue (no typed-in numbers);
the DP threshold and the in-node TP limit are computed from ``collectives.group_time`` on that
system — the gradient AllReduce of a replica sharded over one node, the TP AllGather +
ReduceScatter of the activations — and equal the chapter's closed forms C/W_node, C/W_gpu,
F·W_gpu/C under the book convention (the exact ring factor (X−1)/X of F27 when ``n_nodes``
is given).
Ignores: attention, latency, imperfect overlap, NCCL's below-peak bandwidth (pass
``efficiency`` < 1 to scale the bandwidths).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dataclasses import field

from . import collectives, hardware, topology
from .units import check_positive

__all__ = ["GpuNodeType", "NODE_TYPES", "node_type", "dp_critical_batch_per_gpu",
           "dp_times", "tp_max_degree", "tp_times", "ep_times", "ep_min_d_ff", "pp_comm_time",
           "train_time_seconds", "min_gpus_for_state", "mp_spanned_threshold"]


@dataclass(frozen=True)
class GpuNodeType:
    """The three numbers the GPU rooflines need, per direction (12 node-type table)."""

    name: str
    chip: str
    gpus_per_node: int
    w_gpu: float        #: NVLink bandwidth per GPU (bytes/s)
    w_node: float       #: node egress (bytes/s)
    system: object = field(default=None, compare=False, repr=False)   #: two nodes of it

    def cluster(self, n_nodes: int = 2) -> "topology.System":
        """``n_nodes`` of these nodes on their fabric, as a ``topology.System``."""
        check_positive("n_nodes", n_nodes, allow_array=False)
        return topology.system(_SYSTEM_NAME.get(self.name, self.name),
                               int(n_nodes) * self.gpus_per_node)

    @property
    def c(self) -> float:
        return hardware.peak_flops(self.chip)

    @property
    def alpha_gpu(self) -> float:
        """C / W_gpu: the in-node DP threshold (tokens per GPU)."""
        return self.c / self.w_gpu

    @property
    def alpha_node(self) -> float:
        """C / W_node: the cross-node DP threshold (tokens per GPU)."""
        return self.c / self.w_node


_SYSTEM_NAME = {"H800 节点": "H800"}


def _mk(name, preset):
    """A node type from ``topology.system(preset)``: every number from the catalogue."""
    sys2 = topology.system(preset, 2 * hardware.get(topology.NODE_PRESETS[preset]).pod_chips)
    return GpuNodeType(name, sys2.chip.name, sys2.pod_chips, sys2.w_scale_up, sys2.w_node, sys2)


NODE_TYPES = {"DGX H100": _mk("DGX H100", "DGX H100"), "DGX B200": _mk("DGX B200", "DGX B200"),
              "GB200 NVL72": _mk("GB200 NVL72", "GB200 NVL72"), "H800": _mk("H800 节点", "H800"),
              "DGX A100": _mk("DGX A100", "DGX A100")}


def node_type(name) -> GpuNodeType:
    """A node type by name ('DGX H100', 'DGX B200', 'GB200 NVL72', 'H800', 'DGX A100')."""
    if isinstance(name, GpuNodeType):
        return name
    if name not in NODE_TYPES:
        import difflib
        close = difflib.get_close_matches(str(name), list(NODE_TYPES), n=3, cutoff=0.3)
        raise KeyError(f"unknown node type {name!r}; known: {', '.join(NODE_TYPES)}"
                       + (f"; did you mean {', '.join(close)}?" if close else ""))
    return NODE_TYPES[name]


def _a(x):
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def _eff(efficiency):
    e = float(check_positive("efficiency", efficiency, allow_array=False))
    if e > 1:
        raise ValueError(f"efficiency must be in (0, 1], got {e}")
    return e


def dp_critical_batch_per_gpu(node="DGX H100", cross_node: bool = True, n_experts: int = 1,
                              top_k: int = 1, n_nodes=None, mp_nodes: int = 1,
                              efficiency: float = 1.0, include_node_level: bool = False):
    """Per-GPU token batch above which DP/FSDP is compute-bound (F25-F27).

    C/W (W = node egress across nodes, NVLink inside a node) × E/k for MoE (F26)
    × (X−1)/X for DP over X = ``n_nodes`` nodes (F27) ÷ ``mp_nodes`` when each model replica
    already spans that many nodes (P5.10, P6.2c, P6.3: its gradient shards leave through all
    their NICs).
    """
    nt = node_type(node)
    e = _eff(efficiency)
    k = check_positive("top_k", top_k, allow_array=False)
    E = check_positive("n_experts", n_experts, allow_array=False)
    if k > E:
        raise ValueError(f"top_k ({k}) cannot exceed n_experts ({E})")
    x = 2.0 if n_nodes is None else check_positive("n_nodes", n_nodes)
    out = _dp_threshold(nt, cross_node, x, "book" if n_nodes is None else "ring") / e * (E / k)
    mp = check_positive("mp_nodes", mp_nodes, allow_array=False)
    out = out / mp
    if cross_node and include_node_level:
        out = np.maximum(out, nt.c / (nt.w_gpu * e) * (E / k))
    return _a(out)


def _dp_threshold(nt: GpuNodeType, cross_node: bool, n_nodes, convention: str):
    """C·T_comms/T_math-coefficient for the backward pass of one MLP layer (per unit D·F): the
    gradient AllReduce of the layer's 4DF bytes, priced by ``collectives.group_time``.

    Across nodes each replica is sharded over one node (inner = the node's g GPUs), so a GPU
    AllReduces its 4DF/g shard over the X nodes through its NIC: 8DF/W_node (book), ×(X−1)/X
    (ring). Inside a node (pure DP over its GPUs): 8DF/W_gpu. T_math = 8·B·D·F/C per GPU.
    """
    sys2 = nt.system
    g = nt.gpus_per_node
    if cross_node:
        t = collectives.group_time("all_reduce", 4.0 / g, sys2, n_nodes, g, convention=convention)
    else:
        t = collectives.group_time("all_reduce", 4.0, sys2, g, 1, convention="book")
    # 12 significant digits: the closed forms are exact (C/W_node = 625 for GB200), the
    # composed path must not print float noise into the book (625 not 624.9999999999999)
    x = nt.c * np.asarray(t, dtype=float) / 8.0
    return np.vectorize(lambda v: float(f"{v:.12g}"))(x) if np.ndim(x) else float(f"{float(x):.12g}")


def dp_times(batch_per_gpu, d_model, d_ff, node="DGX H100", cross_node: bool = True,
             n_experts: int = 1, top_k: int = 1):
    """(T_math, T_comms) per MLP layer for the backward pass of DP/FSDP (F25/F26), per GPU:
    T_math = 8·k·B_gpu·D·F/C, T_comms = 8·E·D·F/W."""
    nt = node_type(node)
    b = check_positive("batch_per_gpu", batch_per_gpu)
    d = check_positive("d_model", d_model, allow_array=False)
    f = check_positive("d_ff", d_ff, allow_array=False)
    w = nt.w_node if cross_node else nt.w_gpu
    return _a(8 * top_k * b * d * f / nt.c), _a(8 * n_experts * d * f / w + 0 * b)


def tp_max_degree(d_ff, node="DGX H100", across_nodes: bool = False):
    """Largest TP degree that stays compute-bound (F28/F29): Y < F·W_gpu/C inside a node;
    across nodes F > α(Y − g) ⇒ Y < g + F/α with α = C/W_node, g = GPUs per node."""
    nt = node_type(node)
    f = check_positive("d_ff", d_ff)
    if across_nodes:
        return _a(nt.gpus_per_node + f / nt.alpha_node)
    # T_comms of Y-way TP per MLP forward: AllGather in + ReduceScatter out of [B, D] (bf16),
    # 2·2BD bytes over the node's switch (collectives), against T_math = 4BDF/(Y C)
    t = sum(collectives.group_time(kd, 2.0, nt.system, 2, 1) for kd in ("all_gather",
                                                                          "reduce_scatter"))
    return _a(f * 4.0 / (nt.c * float(t)))


def tp_times(batch_tokens, d_model, d_ff, y, node="DGX H100"):
    """(T_math, T_comms) of Y-way TP for one MLP forward (F28/F29): 4BDF/(YC) vs 4BD/W, with
    W = NVLink inside a node and W_node·M/(M−1) over M = Y/g nodes."""
    nt = node_type(node)
    b = check_positive("batch_tokens", batch_tokens)
    d = check_positive("d_model", d_model, allow_array=False)
    f = check_positive("d_ff", d_ff, allow_array=False)
    y = check_positive("y", y)
    g = nt.gpus_per_node
    m = np.asarray(y, dtype=float) / g
    with np.errstate(divide="ignore", invalid="ignore"):
        t_out = np.where(m > 1, 4 * b * d / nt.w_node * (m - 1) / np.where(m > 0, m, 1), 0.0)
    t_in = 4 * b * d / nt.w_gpu
    return _a(4 * b * d * f / (y * nt.c)), _a(np.maximum(t_in, t_out))


def ep_times(batch_tokens, d_model, d_ff, top_k, z, node="DGX H100"):
    """(T_math, T_comms) of Z-way expert parallelism spanning nodes (F30):
    T_math = 4·B·k·D·F/(Z·C); T_comms = 4·B·D·(Z−g)/(W_node·Z) · min(g·k/Z, 1)."""
    nt = node_type(node)
    b = check_positive("batch_tokens", batch_tokens)
    d = check_positive("d_model", d_model, allow_array=False)
    f = check_positive("d_ff", d_ff)
    k = check_positive("top_k", top_k, allow_array=False)
    z = check_positive("z", z)
    g = nt.gpus_per_node
    zz = np.asarray(z, dtype=float)
    if np.any(zz <= g):
        raise ValueError(f"ep_times models EP across nodes: z must exceed {g} (GPUs per node)")
    t_math = 4 * b * k * d * f / (zz * nt.c)
    t_comms = 4 * b * d * (zz - g) / (nt.w_node * zz) * np.minimum(g * k / zz, 1.0)
    return _a(t_math), _a(t_comms + 0 * t_math)


def ep_min_d_ff(top_k, z, node="DGX H100"):
    """Smallest F for which cross-node EP is compute-bound: α(Z−g)/k while k > Z/g, else g·α."""
    nt = node_type(node)
    k = check_positive("top_k", top_k, allow_array=False)
    z = np.asarray(check_positive("z", z), dtype=float)
    g = nt.gpus_per_node
    a = nt.alpha_node
    return _a(np.where(k > z / g, a * (z - g) / k, g * a * (z - g) / z))


def pp_comm_time(batch_tokens, d_model, n_microbatches, n_stages, w, bytes_per_elem: int = 2):
    """Total activation traffic time of a pipeline (F31): 2BD/(W·N_MB)·(N_MB + N_stages − 2)."""
    b = check_positive("batch_tokens", batch_tokens)
    d = check_positive("d_model", d_model, allow_array=False)
    nm = check_positive("n_microbatches", n_microbatches)
    ns = check_positive("n_stages", n_stages)
    w = check_positive("w", w, allow_array=False)
    return _a(bytes_per_elem * b * d / (w * nm) * (nm + ns - 2))


def mp_spanned_threshold(model_parallel, node="DGX H100"):
    """Cross-node DP threshold when each model replica spans model_parallel/g nodes (P5.10, P6.3)."""
    nt = node_type(node)
    mp = check_positive("model_parallel", model_parallel)
    nodes = np.maximum(np.asarray(mp, dtype=float) / nt.gpus_per_node, 1.0)
    return _a(nt.alpha_node / nodes)


def train_time_seconds(n_params, n_tokens, n_gpus, flops_per_gpu, mfu):
    """T = 6·P·tokens / (n·C·MFU) (F32)."""
    p = check_positive("n_params", n_params)
    t = check_positive("n_tokens", n_tokens)
    n = check_positive("n_gpus", n_gpus)
    c = check_positive("flops_per_gpu", flops_per_gpu)
    m = check_positive("mfu", mfu)
    if np.any(np.asarray(m) > 1):
        raise ValueError(f"mfu must be in (0, 1], got {mfu!r}")
    return _a(6 * p * t / (n * c * m))


def min_gpus_for_state(n_params, hbm_bytes, bytes_per_param: float = 10.0) -> int:
    """Fewest GPUs whose HBM holds weights + Adam state: ⌈P·bytes/HBM⌉ (F33; 10 B/param =
    bf16 weights + fp32 m and v; 14 with fp32 master weights)."""
    p = float(check_positive("n_params", n_params, allow_array=False))
    h = float(check_positive("hbm_bytes", hbm_bytes, allow_array=False))
    b = float(check_positive("bytes_per_param", bytes_per_param, allow_array=False))
    return int(np.ceil(p * b / h - 1e-9))
