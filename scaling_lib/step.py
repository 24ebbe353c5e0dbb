"""One training step on a system: time, memory per device and bottleneck of a strategy, and a
planner that searches every strategy at once.

Units: SI (seconds, bytes, FLOPs). Book: sec-05-planner (the whole-step model), sec-06-* (LLaMA 3
on TPU v5p), sec-12-rooflines (GPU clusters). Composition, as the book teaches it:

- the model (``transformer.TransformerConfig``) gives parameters and FLOPs per layer;
- the strategy's sharding table (``strategy.Strategy``) gives, through ``sharding.matmul`` on
  the layer's matmuls (``strategy.layer_comms``), every collective a pass needs and the bytes it
  moves (the book's V);
- the system (``topology.System``) places each collective's group on its tiers and
  ``collectives.group_time`` prices it (torus axes or NVLink switch inside a domain, DCN or the
  GPU fabric across domains);
- ``memory`` gives parameters, gradients, optimizer state (ZeRO over the whole data group) and
  saved activations; ``pipeline`` gives the schedule's bubble and activations in flight.

Each pass (forward, backward) takes max(T_math, T_hbm, T_comms) (perfect overlap inside a pass);
T_comms sums the pass's collectives (``combine='sum'``, the book's model) or takes the largest
('max', the interactive chart's). The step is (forward + backward) / (1 − bubble). ``convention``
'book' (default) prices collectives as chapter 5 writes them, 'ring' with the exact ring/switch
factors (``collectives.CONVENTIONS``). The bounds are what an efficiency model (issue 17) can
scale: ``StepResult.breakdown()`` keeps every term.
Ignores: latency-bound collectives (small messages), optimizer-step time, load imbalance between
experts, non-matmul FLOPs, CP's causal load imbalance (zig-zag assumed), partial overlap.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import collectives, hardware, memory as _mem, pipeline as _pl, topology
from .errors import Infeasible
from .strategy import (AXIS_LETTERS, DEFAULT_ORDER, MESH_AXES, PRECISIONS, Strategy,
                       layer_comms)
from .units import check_int, check_positive, dtype_bytes, fmt_bytes, fmt_num, fmt_time, DAY

__all__ = ["StepResult", "PlanResult", "evaluate", "plan", "model_shapes", "BOTTLENECKS",
           "FAIL_REASONS", "step_arrays", "FLOPS_CONVENTIONS"]

#: how model FLOPs are counted (``StepResult.model_flops_as``): 'matmul' = 6 per weight that
#: multiplies (chapter 4, the library's); 'all_params' = 6 per active parameter
FLOPS_CONVENTIONS = ("matmul", "all_params")

BOTTLENECKS = ("compute", "hbm", "tp", "cp", "fsdp", "pp", "ep", "dp", "dcn", "bubble")
#: planner rejection reasons (keys) in the order they are checked
FAIL_REASONS = ("memory", "tp_divides", "pp_layers", "ep_experts", "cp_seq", "batch", "micro",
                "pods", "sequences")
_DEG = {"data": "dp", "fsdp": "fsdp", "expert": "ep", "context": "cp", "tensor": "tp",
        "pipe": "pp"}


# =============================================================================================
# the model as the step needs it (read from the one TransformerConfig)
# =============================================================================================

@dataclass(frozen=True)
class _Shapes:
    L: int
    D: int
    Q: float          # effective width of the fused Q/K/V projection (D·Q = its weights)
    O: float          # width of the output projection's input (N·H)
    F: float          # effective dense-MLP width (dense layers + shared experts, per layer)
    mats: int         # matrices per MLP (3 gated, 2 plain)
    N: int
    K: int
    H: int
    E: int
    k: int
    F_e: int
    moe_frac: float   # MoE layers / L
    expert_params_layer: float    # routed experts of one (average) layer
    router_layer: float
    vocab_params: float
    P_total: float
    P_active: float
    P_matmul: float   # active weights that multiply (transformer.matmul_params): no embedding lookup
    name: str
    parallel: bool = False    # attention and MLP side by side (PaLM): half the TP activation traffic


def model_shapes(model) -> _Shapes:
    """The per-layer sizes the step model uses, read from a ``TransformerConfig`` (or a preset
    name). Layers are averaged: DeepSeek-V3's 3 dense + 58 MoE layers become 61 layers with the
    mean dense-MLP, expert and router parameters."""
    from .transformer import TransformerConfig
    if isinstance(model, str):
        from . import models as _models
        model = _models.get(model)
    if not isinstance(model, TransformerConfig):
        raise TypeError(f"model must be a transformer.TransformerConfig or a preset name, got "
                        f"{type(model).__name__}")
    p = model.params_by_part()
    L, D = model.n_layers, model.d_model
    mats = 3 if model.gated_mlp else 2
    q = (p["attn_q"] + p["attn_k"] + p["attn_v"]) / (L * D)
    o = p["attn_o"] / (L * D)
    n_moe = model.n_moe_layers if model.is_moe else 0
    n_dense = L - n_moe
    dense_mlp = n_dense * mats * D * model.d_ff + n_moe * model.n_shared_experts * mats * D * \
        model.d_ff_expert
    experts = n_moe * model.n_experts * mats * D * model.d_ff_expert if model.is_moe else 0.0
    return _Shapes(L=L, D=D, Q=q, O=o, F=dense_mlp / (L * mats * D), mats=mats,
                   N=model.n_heads, K=model.n_kv_heads, H=model.d_head,
                   E=model.n_experts, k=model.top_k, F_e=model.d_ff_expert,
                   moe_frac=n_moe / L, expert_params_layer=experts / L,
                   router_layer=p["router"] / L,
                   vocab_params=float(p["embedding"] + p["unembedding"]),
                   P_total=float(model.params()), P_active=float(model.active_params()),
                   P_matmul=float(model.matmul_params(active=True)),
                   name=model.label, parallel=bool(model.parallel_block))


def _dim_size(d, sh: _Shapes, B):
    return {"S": B, "D": sh.D, "Q": sh.Q, "O": sh.O, "F2": (sh.mats - 1) * sh.F,
            "F": sh.F}[d]


# =============================================================================================
# the vectorised core
# =============================================================================================

def _inner_of(axes, order, deg):
    """Chips inside a group over ``axes``: product of the axes placed before its innermost
    non-trivial axis (vectorised over candidates)."""
    found = np.zeros(np.shape(deg["tensor"]), dtype=bool)
    inner = np.ones(np.shape(deg["tensor"]))
    for a in order:
        if a in axes:
            found = found | (deg[a] > 1)
        else:
            inner = np.where(found, inner, inner * deg[a])
    return inner


def _per_device_bytes(arr, sizes, deg, bpe):
    """Bytes per device of a ShardedArray (letters → long mesh axes), vectorised."""
    long = {v: k for k, v in AXIS_LETTERS.items()}
    out = bpe
    for d, ax in zip(arr.dims, arr.axes):
        div = 1.0
        for a in ax:
            div = div * deg[long[a]]
        out = out * sizes[d] / div
    return out


def step_arrays(model, system, batch_tokens, seq_len, deg: dict, mb, remat, zero, schedule,
                virtual, precision, *, sp=True, order=DEFAULT_ORDER, cp_kind="ring",
                ep_node_limit=None, stage_imbalance=1.0, param_bytes=2.0, opt_bytes=8.0,
                grad_bytes=2.0, attention=True, combine="sum", convention="book"):
    """The whole-step model for arrays of strategies (one entry per candidate).

    ``deg``: {mesh axis: int array}; mb, remat (codes 0 none / 1 selective / 2 full), zero,
    schedule (``pipeline.SCHEDULE_CODE``), virtual: arrays. ``precision``: one dtype name.
    Returns a dict of arrays: step, t_math, t_hbm, bubble, per-category comm times (t_tp, t_cp,
    t_fsdp, t_pp, t_ep, t_dp, t_dcn), bottleneck, flops_chip, comm_bytes, model_flops, memory
    parts (mem_params, mem_opt, mem_grads, mem_act, mem_buf, mem_total), b, bmu.
    """
    sh = model if isinstance(model, _Shapes) else model_shapes(model)
    chip = system.chip
    C = hardware.peak_flops(chip, precision)
    W_hbm = chip.hbm_bw
    f = lambda a: np.asarray(a, dtype=float)  # noqa: E731
    deg = {a: f(deg[a]) for a in MESH_AXES}
    mb, zero, virtual = f(mb), f(zero), f(virtual)
    remat = np.asarray(remat)
    schedule = np.asarray(schedule)
    B, T = float(batch_tokens), float(seq_len)
    dp, fsdp, tp, pp, ep, cp = (deg[a] for a in ("data", "fsdp", "tensor", "pipe", "expert",
                                                 "context"))
    N = dp * fsdp * tp * pp * ep * cp
    ways = dp * fsdp * ep
    b = B / ways                          # tokens per data shard per step
    bmu = b / mb
    L_s = sh.L / pp * stage_imbalance     # layers of the slowest stage
    moe = sh.moe_frac > 0
    act_b = dtype_bytes("bf16")
    # ---- FLOPs (model FLOPs; full remat recomputes the forward) ----
    # 6 per weight that multiplies (chapter 4's count, transformer.matmul_params: the input-
    # embedding lookup is a gather, norms and biases are not matmuls) + causal attention
    attn_tok = 6.0 * sh.L * T * sh.N * sh.H if attention else 0.0
    model_flops = 6.0 * sh.P_matmul * B + attn_tok * B
    flops_chip = model_flops / N
    f_fwd = flops_chip / 3.0 * stage_imbalance
    f_bwd = flops_chip * 2.0 / 3.0 * stage_imbalance + np.where(remat == 2, f_fwd, 0.0)
    t_math_f, t_math_b = f_fwd / C, f_bwd / C
    # ---- HBM: weights streamed once per microbatch forward, twice backward (dX, dW) ----
    dense_layer = sh.D * (sh.Q + sh.O) + sh.mats * sh.D * sh.F + sh.router_layer
    w_layer_chip = 2.0 * (dense_layer + sh.expert_params_layer / ep) / tp
    t_hbm_f = mb * L_s * w_layer_chip / W_hbm
    t_hbm_b = 2 * t_hbm_f + np.where(remat == 2, t_hbm_f, 0.0)
    # ---- collectives of the dense layer, from the sharding table ----
    sizes = {d: _dim_size(d, sh, B) for d in ("S", "D", "Q", "O", "F2", "F")}
    tpu = system.family == "tpu"
    cats = {k: [np.zeros_like(N), np.zeros_like(N)] for k in ("tp", "cp", "fsdp", "pp", "ep",
                                                               "dp", "dcn")}
    comm_bytes = np.zeros_like(N)
    z3 = zero == 3

    # A collective's time is linear in its bytes, and its rate (seconds per byte) depends only
    # on the degree tuple: price each distinct tuple once, then scale by every candidate's bytes.
    key = np.zeros(N.shape, dtype=np.int64)
    for a in MESH_AXES:                       # mixed-radix key of the tuple (1-D unique is fast)
        vals, idx = np.unique(np.broadcast_to(deg[a], N.shape), return_inverse=True)
        key = key * (len(vals) + 1) + idx.ravel()
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    inv = np.asarray(inv).ravel()
    udeg = {a: np.broadcast_to(deg[a], N.shape)[first] for a in MESH_AXES}
    udm = first
    rate_cache: dict = {}

    def rates(kind, axes, **kw):
        key = (kind, axes, tuple(sorted(kw.items())))
        if key not in rate_cache:
            g = np.ones(len(udm))
            for a in axes:
                g = g * udeg[a]
            up, out = collectives.group_time(kind, 1.0, system, g, _inner_of(axes, order, udeg),
                                             convention=convention, tiers=True, **kw)
            rate_cache[key] = (np.asarray(up)[inv], np.asarray(out)[inv], (g > 1)[inv])
        return rate_cache[key]

    def charge(cat, pass_i, kind, V, axes, **kw):
        nonlocal comm_bytes
        up_r, out_r, on = rates(kind, axes, **kw)
        up, out = V * up_r, V * out_r
        if tpu:
            cats[cat][pass_i] = cats[cat][pass_i] + up
            cats["dcn"][pass_i] = cats["dcn"][pass_i] + out
        else:
            cats[cat][pass_i] = cats[cat][pass_i] + np.maximum(up, out)
        comm_bytes = comm_bytes + np.where(on, V * (2 if kind == "all_reduce" else 1), 0.0)

    for pattern_zero3, mask in ((True, z3), (False, ~z3)):
        if not np.any(mask):
            continue
        groups: dict = {}
        for it in layer_comms(3 if pattern_zero3 else 1, sp, sh.parallel):
            by = _per_device_bytes(it.array, sizes, udeg, param_bytes if it.operand in
                                   ("weight", "grad", "update") else act_b)
            for a in it.factor_axes:
                by = by * udeg[a]
            key = (it.pass_, it.kind, it.axes, it.operand)
            groups[key] = groups.get(key, 0.0) + by
        for (pass_, kind, axes, operand), V in groups.items():
            Vf = np.asarray(V, dtype=float)[inv] * L_s
            if operand == "weight":
                Vf = Vf * mb                         # re-gathered every microbatch
            cat = ("tp" if "tensor" in axes else "dp" if operand == "grad" and "fsdp" not in axes
                   else "fsdp")
            charge(cat, 0 if pass_ == "fwd" else 1, kind, np.where(mask, Vf, 0.0), axes)
    # ---- experts: AllToAll dispatch + combine per MoE layer, expert weights over fsdp ----
    if moe:
        L_moe = L_s * sh.moe_frac
        tok = b / (tp if sp else 1) / cp
        disp_b = dtype_bytes("fp8") if precision == "fp8" else act_b
        V_disp = ep * tok * sh.k * sh.D                 # dispatched array over the expert group
        for pass_i in (0, 1):
            for bpe in ((disp_b, act_b) if pass_i == 0 else (act_b, act_b)):
                charge("ep", pass_i, "all_to_all", V_disp * bpe * L_moe, ("expert",),
                       top_k=sh.k, node_limit=ep_node_limit)
        we = 2.0 * sh.expert_params_layer / (ep * tp) * (param_bytes / 2.0)
        charge("fsdp", 0, "all_gather", np.where(z3, mb * we * L_s, 0.0), ("fsdp",))
        charge("fsdp", 1, "all_gather", np.where(z3, mb * we * L_s, 0.0), ("fsdp",))
        charge("fsdp", 1, "reduce_scatter", we * L_s, ("fsdp",))
        charge("fsdp", 1, "all_gather", np.where(z3, 0.0, we * L_s), ("fsdp",))
        charge("dp", 1, "all_reduce", we * L_s / fsdp, ("data", "context"))
    # ---- context parallelism: attention over a sharded sequence ----
    if np.any(cp > 1):
        kvh = np.maximum(sh.K / tp, 1.0)                # KV heads per tensor rank
        kv = 2.0 * (B / ways) * kvh * sh.H * act_b      # K and V of the whole sequence, one layer
        if cp_kind == "allgather":
            charge("cp", 0, "all_gather", kv * L_s, ("context",))
            charge("cp", 1, "reduce_scatter", kv * L_s, ("context",))
        else:                                            # ring: cp−1 hops of one KV chunk
            hops = np.maximum(cp - 1, 0)
            charge("cp", 0, "permute", hops * kv / cp * L_s, ("context",))
            charge("cp", 1, "permute", 2 * hops * kv / cp * L_s, ("context",))
    # ---- pipeline: activations one stage forward, gradients one back ----
    pp_bytes = 2.0 * b * sh.D / (tp if sp else 1) / cp
    for pass_i in (0, 1):
        charge("pp", pass_i, "permute", np.where(pp > 1, pp_bytes, 0.0), ("pipe",))
    # ---- combine per pass ----
    order_c = ["tp", "cp", "fsdp", "pp", "ep", "dp", "dcn"]
    comm_f = [cats[c][0] for c in order_c]
    comm_b = [cats[c][1] for c in order_c]
    if combine == "sum":
        c_f, c_b = sum(comm_f), sum(comm_b)
    else:
        c_f, c_b = np.maximum.reduce(comm_f), np.maximum.reduce(comm_b)
    pass_f = np.maximum.reduce([t_math_f, t_hbm_f, c_f])
    pass_b = np.maximum.reduce([t_math_b, t_hbm_b, c_b])
    bubble = _pl.bubble_fraction(pp, mb, schedule, virtual)
    bubble = np.asarray(bubble, dtype=float) * np.ones_like(N)
    step = (pass_f + pass_b) / (1 - bubble)
    t = {c: cats[c][0] + cats[c][1] for c in order_c}
    names = ["compute", "hbm"] + order_c
    terms = np.stack([t_math_f + t_math_b, t_hbm_f + t_hbm_b] + [t[c] for c in order_c])
    comm_binds = (c_f > np.maximum(t_math_f, t_hbm_f)) | (c_b > np.maximum(t_math_b, t_hbm_b))
    idx_comm = 2 + np.argmax(terms[2:], axis=0)
    idx_local = np.where(terms[1] > terms[0], 1, 0)
    idx = np.where(comm_binds, idx_comm, idx_local)
    bubble_binds = bubble * step > np.take_along_axis(terms, idx[None], 0)[0]
    bottleneck = np.where(bubble_binds, "bubble", np.array(names)[idx])
    # ---- memory per device (the one memory model) ----
    copies = _pl.param_copies(schedule)
    p_dense = (sh.L * dense_layer) / (tp * pp)
    p_exp = sh.L * sh.expert_params_layer / (tp * pp * ep)
    p_vocab = sh.vocab_params / tp
    zgroup_dense = fsdp * ep                              # ZeRO over the whole data group
    st_dense = _mem.state_bytes(p_dense + p_vocab, param_bytes, grad_bytes, opt_bytes,
                                zero, np.where(fsdp > 1, zgroup_dense, 1.0))
    st_exp = _mem.state_bytes(p_exp, param_bytes, grad_bytes, opt_bytes, zero,
                              np.where(fsdp > 1, fsdp, 1.0))
    mem_params = copies * (np.asarray(st_dense["params"]) + np.asarray(st_exp["params"]))
    mem_grads = copies * (np.asarray(st_dense["grads"]) + np.asarray(st_exp["grads"]))
    mem_opt = np.asarray(st_dense["optimizer"]) + np.asarray(st_exp["optimizer"])
    width = _mem.saved_width(remat, sh.D, sh.N, sh.K, sh.H, sh.F + sh.k * sh.F_e * (
        sh.moe_frac > 0) * sh.moe_frac, sh.mats, 1)
    in_flight = np.asarray(_pl.activations_in_flight(pp, mb, schedule, virtual))
    mem_act = np.asarray(width) * L_s * bmu * in_flight * act_b / tp / cp
    if not sp:   # without sequence parallelism the D-wide saves are replicated over TP
        d_part = np.where(remat == 2, sh.D, np.where(remat == 1, 4.0 * sh.D, 3.0 * sh.D))
        mem_act = mem_act + d_part * L_s * bmu * in_flight * act_b * (1 - 1 / tp) / cp
    wb = 2.0 * (dense_layer + sh.expert_params_layer / ep) / tp * (param_bytes / 2.0)
    mem_buf = np.where((fsdp > 1) & z3, 2 * wb, 0.0)
    mem_total = mem_params + mem_opt + mem_grads + mem_act + mem_buf
    out = dict(step=step, t_math=t_math_f + t_math_b, t_hbm=t_hbm_f + t_hbm_b, bubble=bubble,
               bottleneck=bottleneck, flops_chip=np.broadcast_to(flops_chip, N.shape),
               comm_bytes=comm_bytes, model_flops=model_flops,
               lookup_flops=6.0 * (sh.P_active - sh.P_matmul) * B, mem_params=mem_params,
               mem_opt=mem_opt, mem_grads=mem_grads, mem_act=mem_act, mem_buf=mem_buf,
               mem_total=mem_total, b=b, bmu=bmu)
    for c in order_c:
        out["t_" + c] = t[c]
    return out


# =============================================================================================
# results
# =============================================================================================

@dataclass(frozen=True)
class StepResult:
    """One strategy evaluated: times (s), memory per chip (bytes), bottleneck, MFU."""

    strategy: Strategy
    cluster: object                   # the topology.System
    batch_tokens: float
    seq_len: int
    step_time: float
    t_math: float
    t_hbm: float
    comms: Mapping[str, float]        # per-step seconds per collective family
    bubble: float
    memory: Mapping[str, float]       # bytes per chip by part, plus 'total'
    flops_per_chip: float
    bytes_per_chip: float
    model_flops: float                # 6·P_matmul·B (+ attention) for the whole step
    bottleneck: str
    #: what counting 6 FLOPs per token for every active parameter adds to ``model_flops``: the
    #: weights that multiply nothing (input-embedding lookup, norms, biases), 6·(P_active −
    #: P_matmul)·B; see ``model_flops_as``
    lookup_flops: float = 0.0

    def model_flops_as(self, convention: str = "matmul") -> float:
        """The step's model FLOPs in a stated convention: 'matmul' (chapter 4's count, the
        library's: 6 per weight that multiplies, ``model_flops``) or 'all_params' (6 per active
        parameter, embedding lookup included: how some papers count, e.g. LLaMA 3's
        3.8e25 = 6·405.85e9·15.6e12). A published MFU is converted with the paper's convention."""
        if convention not in FLOPS_CONVENTIONS:
            raise ValueError(f"convention must be one of {FLOPS_CONVENTIONS}, got {convention!r}")
        return self.model_flops + (self.lookup_flops if convention == "all_params" else 0.0)

    @property
    def system(self):
        return self.cluster

    @property
    def ratio(self) -> float:
        """FLOPs per byte communicated, per chip (∞ with no communication)."""
        return self.flops_per_chip / self.bytes_per_chip if self.bytes_per_chip else math.inf

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation the step could reach: model FLOPs / (N C step_time), with C
        the peak of the strategy's matmul precision (bf16 for every chapter's run; FP8's peak
        for an FP8 run such as DeepSeek-V3's)."""
        C = hardware.peak_flops(self.cluster.chip, self.strategy.precision)
        return self.model_flops / (self.cluster.n_chips * C * self.step_time)

    @property
    def compute_bound(self) -> bool:
        return self.bottleneck == "compute"

    def days(self, n_tokens: float, mfu_cap: float = 1.0) -> float:
        """Days to train on ``n_tokens`` at this step time (slowed further if MFU is capped)."""
        n = check_positive("n_tokens", n_tokens, allow_array=False)
        if isinstance(mfu_cap, bool) or not 0 < mfu_cap <= 1:
            raise ValueError(f"mfu_cap must be a fraction in (0, 1], got {mfu_cap!r}")
        t = max(self.step_time, self.t_math / mfu_cap)
        return n / self.batch_tokens * t / DAY

    def breakdown(self) -> dict:
        """Per-step seconds: compute, HBM, each communication, pipeline bubble (Chinese keys)."""
        out = {"计算": self.t_math, "HBM": self.t_hbm}
        out.update({LABELS[k]: v for k, v in self.comms.items() if v > 0})
        out["流水线气泡"] = self.step_time * self.bubble
        return out

    def __str__(self):
        mem = self.memory["total"]
        return (f"{self.strategy}：单步 {fmt_time(self.step_time)}，瓶颈 {LABELS[self.bottleneck]}，"
                f"MFU 上限 {self.mfu:.0%}，每芯片内存 {fmt_bytes(mem)}")

    def _repr_html_(self):
        rows = "".join(f"<tr><td>{k}</td><td>{fmt_time(v)}</td></tr>" for k, v in self.breakdown().items())
        mrows = "".join(f"<tr><td>{MEM_LABELS.get(k, k)}</td><td>{fmt_bytes(v)}</td></tr>"
                        for k, v in self.memory.items())
        return (f"<b>{self}</b><table><tr><th>时间</th><th></th></tr>{rows}"
                f"<tr><th>每芯片内存</th><th></th></tr>{mrows}</table>")


# Chinese labels of results (kept here until the presentation layer owns them)
LABELS = {"compute": "计算", "hbm": "HBM 带宽", "dp": "DP 梯度 AllReduce", "fsdp": "FSDP 权重收集/梯度分散",
          "tp": "TP 激活通信", "cp": "CP 注意力 KV 通信", "pp": "流水线传递", "ep": "EP AllToAll",
          "dcn": "跨 Pod（DCN）", "bubble": "流水线气泡"}
MEM_LABELS = {"params": "参数", "optimizer": "优化器状态", "grads": "梯度", "activations": "激活检查点",
              "buffers": "收集的权重缓冲", "total": "合计"}
FAIL_TEXT = {
    "memory": "内存放不下",
    "tp_divides": "TP 度不整除头数或 d_ff",
    "pp_layers": "流水线级数不整除层数（或多于层数）",
    "ep_experts": "EP 度不整除专家数（或模型不是 MoE）",
    "cp_seq": "CP 度不整除序列长度",
    "batch": "批次不能均分到数据并行的各份",
    "micro": "微批次数不整除每份的序列数",
    "pods": "只有数据并行可以跨 Pod（DCN 太慢）",
    "sequences": "数据分片或微批次拿不到整条序列",
}


@dataclass(frozen=True)
class PlanResult:
    """The planner's answer: ranked feasible strategies and why the others failed."""

    cluster: object
    batch_tokens: float
    seq_len: int
    results: tuple                     # StepResult, fastest first (at most ``top``)
    n_candidates: int
    n_feasible: int
    rejected: Mapping[str, int]        # reason key -> count
    min_memory_needed: float           # smallest per-chip memory among structurally valid ones
    seconds: float = float("nan")      # wall time of the search

    @property
    def best(self) -> StepResult:
        return self.results[0]

    @property
    def candidates_per_second(self) -> float:
        return self.n_candidates / self.seconds if self.seconds > 0 else math.inf

    def find(self, strategy) -> StepResult | None:
        """The ranked result whose strategy equals ``strategy`` (None if not among them)."""
        for r in self.results:
            if r.strategy == strategy:
                return r
        return None

    def table(self, n: int = 10) -> list[dict]:
        rows = []
        for r in self.results[:n]:
            rows.append({"策略": str(r.strategy), "单步时间": fmt_time(r.step_time),
                         "瓶颈": LABELS[r.bottleneck], "MFU 上限": f"{r.mfu:.0%}",
                         "每芯片内存": fmt_bytes(r.memory["total"]),
                         "FLOPs/通信字节": fmt_num(r.ratio)})
        return rows

    def reasons_text(self) -> str:
        parts = [f"{FAIL_TEXT[k]} {v}" for k, v in self.rejected.items() if v]
        return "；".join(parts) if parts else "无"

    def __str__(self):
        head = (f"{self.cluster}，批次 {fmt_num(self.batch_tokens)} token：候选 {self.n_candidates} 个，"
                f"可行 {self.n_feasible} 个；淘汰原因：{self.reasons_text()}")
        lines = [head]
        for i, row in enumerate(self.table(), 1):
            lines.append(f"{i:>2}. " + "，".join(f"{k} {v}" for k, v in row.items()))
        return "\n".join(lines)

    def _repr_html_(self):
        rows = self.table()
        if not rows:
            return f"<p>{self}</p>"
        head = "".join(f"<th>{k}</th>" for k in rows[0])
        body = "".join(f"<tr><td>{i}</td>" + "".join(f"<td>{v}</td>" for v in r.values()) + "</tr>"
                       for i, r in enumerate(rows, 1))
        return (f"<p>{str(self).splitlines()[0]}</p><table><tr><th>#</th>{head}</tr>"
                + body + "</table>")


# =============================================================================================
# evaluate and plan
# =============================================================================================

def _system(cluster) -> topology.System:
    if isinstance(cluster, topology.System):
        return cluster
    raise TypeError(f"cluster must be a topology.System (training.Cluster), got "
                    f"{type(cluster).__name__}")


def _reasons(sh: _Shapes, system, B, T, deg, mb, stage_ok=None, whole_sequences=False):
    """Boolean masks of the structural constraints that fail (arrays), by reason key.

    The chapters count the batch in tokens: a data shard may hold part of a sequence (chapter
    5's pure-FSDP examples go below one sequence per chip). A real run cannot: every data shard
    (dp·fsdp·ep ranks) and every microbatch must hold whole sequences, a part of one needs
    context parallelism. ``whole_sequences`` adds that rule ('sequences')."""
    i = lambda a: np.asarray(a, dtype=np.int64)  # noqa: E731
    dp, fsdp, tp, pp, ep, cp = (i(deg[a]) for a in ("data", "fsdp", "tensor", "pipe", "expert",
                                                    "context"))
    mb = i(mb)
    n_seq = int(B // T)
    ways = dp * fsdp * ep
    pp_bad = (pp > sh.L) | ((sh.L % pp != 0) if stage_ok is None else ~stage_ok)
    return {
        "tp_divides": (sh.N % tp != 0) | (np.round(sh.F * sh.mats) % tp != 0)
                      | ((sh.E > 1) & (sh.F_e % tp != 0)),
        "pp_layers": pp_bad,
        "ep_experts": (ep > 1) & ((sh.E <= 1) | (sh.E % ep != 0)),
        "cp_seq": (cp > 1) & (int(T) % cp != 0),
        "batch": (int(B) % ways != 0) | (n_seq % dp != 0),
        "micro": (mb > 1) & (((n_seq // np.maximum(dp, 1)) % mb != 0) | (int(B) % (ways * mb) != 0)),
        "pods": ((system.n_pods > 1) & (system.family == "tpu") & (dp % system.n_pods != 0)),
        "sequences": np.asarray(whole_sequences) & ((n_seq % ways != 0) |
                                                    ((mb > 1) & ((n_seq // ways) % mb != 0))),
    }


def _validate(model, cluster, batch_tokens, seq_len):
    sh = model_shapes(model)
    system = _system(cluster)
    B = check_positive("batch_tokens", batch_tokens, allow_array=False)
    T = check_int("seq_len", seq_len)
    if B < T:
        raise ValueError(f"batch_tokens ({B:g}) must hold at least one sequence of seq_len {T}")
    return sh, system, B, T


_MSG = {
    "tp_divides": "tp={tp} must divide n_heads={N}, the MLP width and the expert width",
    "pp_layers": "pp={pp} pipeline stages must divide n_layers={L} (and not exceed it); give "
                 "stage_layers for an uneven split",
    "ep_experts": "ep={ep} must divide n_experts={E} (expert parallelism needs an MoE)",
    "cp_seq": "cp={cp} must divide seq_len={T}",
    "batch": "batch of {B:g} tokens ({nseq} sequences of {T}) does not divide across {ways} "
             "data-parallel ranks (dp·fsdp·ep) with dp={dp} taking whole sequences",
    "micro": "microbatches={mb} must divide each DP replica's sequences",
    "sequences": "whole_sequences: {nseq} sequences do not split into {ways} data shards "
                 "(dp·fsdp·ep) of {mb} microbatch(es) of whole sequences each; a shard holding "
                 "part of a sequence needs context parallelism (cp)",
    "pods": "the cluster has {pods} pods joined by DCN; dp={dp} must be a multiple of it (only "
            "data parallelism crosses pods)",
}


def _result(s, system, B, T, r, j):
    g = lambda k: float(np.asarray(r[k]).ravel()[j])  # noqa: E731
    comms = {c: g("t_" + c) for c in ("tp", "cp", "fsdp", "dp", "pp", "ep", "dcn")}
    mem = {"params": g("mem_params"), "optimizer": g("mem_opt"), "grads": g("mem_grads"),
           "activations": g("mem_act"), "buffers": g("mem_buf"), "total": g("mem_total")}
    return StepResult(s, system, B, T, g("step"), g("t_math"), g("t_hbm"),
                      MappingProxyType(comms), g("bubble"), MappingProxyType(mem),
                      g("flops_chip"), g("comm_bytes"), float(np.asarray(r["model_flops"]).ravel()[0]),
                      str(np.asarray(r["bottleneck"]).ravel()[j]),
                      float(np.asarray(r["lookup_flops"]).ravel()[0]))


def evaluate(strategy: Strategy, model, cluster, batch_tokens, seq_len: int, *,
             param_bytes: float = 2.0, opt_bytes: float = 8.0, grad_bytes: float = 2.0,
             attention: bool = True, combine: str = "sum", convention: str = "book",
             check_memory: bool = True, whole_sequences: bool = False) -> StepResult:
    """Step time, memory per chip and bottleneck of ``strategy`` for one training step of
    ``model`` on ``cluster`` (a ``topology.System``; ``training.Cluster`` is the same class).

    Raises ValueError naming the constraint when the degrees do not multiply to the chip count,
    the batch does not divide across data-parallel ranks, the stages do not split the layers
    (pass ``stage_layers`` for uneven stages), the chip has no peak for the strategy's precision
    ...; raises ``Infeasible`` (carrying ``needed`` and ``available`` bytes) when it does not
    fit in HBM (unless ``check_memory=False``). ``whole_sequences``: every data shard and
    microbatch must hold whole sequences (a real run's rule; the chapters count tokens).
    """
    if not isinstance(whole_sequences, bool):
        raise TypeError(f"whole_sequences must be True or False, got {whole_sequences!r}")
    if not isinstance(strategy, Strategy):
        raise TypeError(f"strategy must be a Strategy, got {type(strategy).__name__}")
    if combine not in ("sum", "max"):
        raise ValueError(f"combine must be 'sum' or 'max', got {combine!r}")
    sh, system, B, T = _validate(model, cluster, batch_tokens, seq_len)
    s = strategy
    if s.n_chips != system.n_chips:
        raise ValueError(f"degrees of {s} multiply to {s.n_chips} chips, but the cluster has "
                         f"{system.n_chips}: dp·fsdp·tp·pp·ep·cp must equal the chip count")
    hardware.peak_flops(system.chip, s.precision)          # a missing peak raises, naming both
    imb = 1.0
    stage_ok = None
    if s.stage_layers is not None:
        sl = _pl.check_stage_layers(s.stage_layers, sh.L, s.pp)
        imb = _pl.stage_imbalance(sl)
        stage_ok = np.array([True])
    deg = {a: np.array([s.degree(a)]) for a in MESH_AXES}
    fails = _reasons(sh, system, B, T, deg, [s.microbatches], stage_ok, whole_sequences)
    vals = dict(tp=s.tp, N=sh.N, pp=s.pp, L=sh.L, ep=s.ep, E=sh.E, cp=s.cp, T=T, B=B,
                nseq=int(B // T), ways=s.data_ways, dp=s.dp, mb=s.microbatches,
                pods=system.n_pods)
    for k, bad in fails.items():
        if bad[0]:
            raise ValueError(_MSG[k].format(**vals))
    r = step_arrays(sh, system, B, T, deg, [s.microbatches],
                    [_mem.REMAT_POLICIES.index(s.remat)], [s.zero],
                    [_pl.SCHEDULE_CODE[s.schedule]], [s.virtual_stages], s.precision, sp=s.sp,
                    order=s.order, cp_kind=s.cp_kind, ep_node_limit=s.ep_node_limit,
                    stage_imbalance=imb, param_bytes=param_bytes, opt_bytes=opt_bytes,
                    grad_bytes=grad_bytes, attention=attention, combine=combine,
                    convention=convention)
    hbm = system.chip.hbm_bytes
    need = float(r["mem_total"][0])
    if check_memory and need > hbm:
        raise Infeasible(f"{s} needs {fmt_bytes(need)} per chip but {system.chip.name} has "
                         f"{fmt_bytes(hbm)} of HBM", need, hbm)
    return _result(s, system, B, T, r, 0)


def _divisors(n: int) -> np.ndarray:
    return np.array([k for k in range(1, n + 1) if n % k == 0], dtype=np.int64)


def _enumerate(n: int, use_ep: bool, use_pp: bool = True, cps=(1,)) -> np.ndarray:
    """All ordered (dp, fsdp, tp, pp, ep, cp) with product n, as an int array of shape (M, 6)."""
    dv = _divisors(n)
    free = 2 + int(use_pp) + int(use_ep)      # dims enumerated freely; dp is n / product
    grids = np.meshgrid(*([dv] * free), indexing="ij")
    cols = [g.ravel() for g in grids]
    out = []
    for c in cps:
        if n % c:
            continue
        prod = np.ones_like(cols[0]) * c
        for col in cols:
            prod = prod * col
        ok = n % prod == 0
        cc = [col[ok] for col in cols]
        dp = n // (np.prod(np.stack(cc), axis=0) * c)
        fsdp, tp = cc[0], cc[1]
        pp = cc[2] if use_pp else np.ones_like(dp)
        ep = cc[-1] if use_ep else np.ones_like(dp)
        out.append(np.stack([dp, fsdp, tp, pp, ep, np.full_like(dp, c)], axis=1))
    return np.concatenate(out) if out else np.zeros((0, 6), dtype=np.int64)


def plan(model, cluster, batch_tokens, seq_len: int, *, top: int = 20,
         microbatches=(1, 2, 4, 8, 16, 32, 64), remats=("none", "selective", "full"),
         zeros=(1, 2, 3), cps=(1,), schedules=("1f1b",), virtual_stages=(1,),
         precision: str = "bf16", uneven_stages: bool = False, sp: bool = True,
         ep_node_limit=None, param_bytes: float = 2.0, opt_bytes: float = 8.0,
         grad_bytes: float = 2.0, attention: bool = True, combine: str = "sum",
         convention: str = "book", raise_if_none: bool = True, distinct: bool = True,
         order=DEFAULT_ORDER, whole_sequences: bool = False) -> PlanResult:
    """Every strategy that tiles ``cluster``, evaluated at once with numpy; the feasible ones
    ranked by step time (ties within 0.1%: less communication, then less memory first).

    The space: all degree tuples (dp, fsdp, tp, pp, ep, cp ∈ ``cps``) whose product is the chip
    count × ``microbatches`` × ``remats`` × ``zeros`` × ``schedules`` × ``virtual_stages``
    (interleaved only), at ``precision``. ``uneven_stages`` admits pipelines whose stage count
    does not divide the layers (the most even split). ``PlanResult.rejected`` counts failures
    by reason; ``PlanResult.seconds`` is the search's wall time. With ``distinct`` (default)
    only the best variant (ZeRO stage, remat, microbatches, schedule) of each degree tuple is
    listed. With no feasible strategy, raises ``Infeasible`` saying why, unless
    ``raise_if_none=False``. ``whole_sequences`` keeps only candidates whose data shards and
    microbatches hold whole sequences (what a real run needs; ``layouts`` searches that way).
    """
    if not isinstance(whole_sequences, bool):
        raise TypeError(f"whole_sequences must be True or False, got {whole_sequences!r}")
    import time
    t0 = time.perf_counter()
    sh, system, B, T = _validate(model, cluster, batch_tokens, seq_len)
    top = check_int("top", top)
    mbs = np.array([check_int("microbatch", m) for m in microbatches], dtype=np.int64)
    rc = np.array([_mem.REMAT_POLICIES.index(_mem.remat_policy(r)) for r in remats])
    if combine not in ("sum", "max"):
        raise ValueError(f"combine must be 'sum' or 'max', got {combine!r}")
    zs = np.array(sorted({check_int("zero stage", z) for z in zeros}), dtype=np.int64)
    if not set(zs.tolist()) <= {1, 2, 3}:
        raise ValueError(f"zero stages must be among 1, 2, 3; got {list(zeros)}")
    scs = np.array([_pl.SCHEDULE_CODE[_pl.schedule_name(s)] for s in schedules])
    vss = np.array([check_int("virtual_stages", v) for v in virtual_stages])
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    hardware.peak_flops(system.chip, precision)
    for c in cps:
        check_int("cp", c)
    base = _enumerate(system.n_chips, use_ep=sh.E > 1, cps=tuple(cps))
    # variants: microbatches × remat × zero × (schedule, virtual stages)
    sv = [(s, v) for s in scs for v in vss if v == 1 or s == _pl.SCHEDULE_CODE["interleaved"]]
    var = np.array([(m, r, z, s, v) for m in mbs for r in rc for z in zs for (s, v) in sv],
                   dtype=np.int64)
    nb, nv = len(base), len(var)
    ib = np.repeat(np.arange(nb), nv)
    iv = np.tile(np.arange(nv), nb)
    dp, fsdp, tp, pp, ep, cp = (base[ib, i] for i in range(6))
    mb, rm, zz, sc, vs = (var[iv, i] for i in range(5))
    # microbatches and schedules only matter with a pipeline; ZeRO stages only with an FSDP axis
    one_f1b = _pl.SCHEDULE_CODE["1f1b"]
    first_sc = scs[0]
    keep = (((mb == 1) & (sc == first_sc) & (vs == 1)) | (pp > 1)) & \
        ((zz == zs.max()) | (fsdp > 1))
    if uneven_stages:
        stage_ok = pp <= sh.L
    else:
        stage_ok = None
    arrs = [a[keep] for a in (dp, fsdp, tp, pp, ep, cp, mb, rm, zz, sc, vs)]
    dp, fsdp, tp, pp, ep, cp, mb, rm, zz, sc, vs = arrs
    if stage_ok is not None:
        stage_ok = stage_ok[keep]
    n_cand = len(dp)
    deg = {"data": dp, "fsdp": fsdp, "tensor": tp, "pipe": pp, "expert": ep, "context": cp}
    fails = _reasons(sh, system, B, T, deg, mb, stage_ok, whole_sequences)
    structural = np.zeros(n_cand, dtype=bool)
    rejected = {}
    for k, m in fails.items():          # first failing reason wins, in table order
        new = m & ~structural
        rejected[k] = int(new.sum())
        structural |= m
    ok = ~structural
    sel = np.nonzero(ok)[0]
    imb = np.ones(len(sel))
    if uneven_stages:
        ps = pp[sel].astype(float)
        imb = np.ceil(sh.L / ps) / (sh.L / ps)
    res = step_arrays(sh, system, B, T, {a: v[sel] for a, v in deg.items()}, mb[sel], rm[sel],
                      zz[sel], sc[sel], vs[sel], precision, sp=sp, order=order,
                      ep_node_limit=ep_node_limit, stage_imbalance=imb,
                      param_bytes=param_bytes, opt_bytes=opt_bytes, grad_bytes=grad_bytes,
                      attention=attention, combine=combine, convention=convention)
    hbm = system.chip.hbm_bytes
    fits = res["mem_total"] <= hbm
    rejected["memory"] = int((~fits).sum())
    min_mem = float(res["mem_total"].min()) if ok.any() else math.inf
    comm_total = sum(res["t_" + c] for c in ("tp", "cp", "fsdp", "pp", "ep", "dp", "dcn"))
    step_key = np.round(np.log(res["step"]) / np.log1p(1e-3))   # equal within 0.1%
    order_ = np.lexsort((res["mem_total"], comm_total, step_key))
    order_ = order_[fits[order_]]
    if distinct:   # keep the best variant of each degree tuple
        dv = _divisors(system.n_chips)
        key = np.zeros(len(order_), dtype=np.int64)
        for a in (dp, fsdp, tp, pp, ep, cp):
            key = key * 64 + np.searchsorted(dv, a[sel][order_])
        _, first = np.unique(key, return_index=True)
        order_ = order_[np.sort(first)]
    names = {c: s for s, c in _pl.SCHEDULE_CODE.items()}
    results = []
    for j in order_[:top]:
        i = sel[j]
        p_ = int(pp[i])
        s = Strategy(int(dp[i]), int(fsdp[i]), int(tp[i]), p_, int(ep[i]), int(mb[i]),
                     _mem.REMAT_POLICIES[int(rm[i])], int(zz[i]), names[int(sc[i])] if p_ > 1
                     else "1f1b", cp=int(cp[i]), virtual_stages=int(vs[i]) if p_ > 1 else 1,
                     stage_layers=(_pl.even_stage_layers(sh.L, p_) if uneven_stages and
                                   sh.L % p_ else None),
                     precision=precision, sp=sp, ep_node_limit=ep_node_limit, order=order)
        results.append(_result(s, system, B, T, res, j))
    rej = MappingProxyType({k: rejected.get(k, 0) for k in FAIL_REASONS})
    dt = time.perf_counter() - t0
    out = PlanResult(system, B, T, tuple(results), n_cand, int(fits.sum()), rej, min_mem, dt)
    if not results and raise_if_none:
        if ok.any():
            raise Infeasible(
                f"no strategy fits: even the most frugal valid one needs {fmt_bytes(min_mem)} per "
                f"chip but {system.chip.name} has {fmt_bytes(hbm)} (the model does not fit even "
                f"fully sharded; add chips, rematerialise or shrink the batch). Rejected: "
                f"{out.reasons_text()}", min_mem, hbm)
        raise Infeasible(f"no strategy tiles {system} for this model and batch; rejected: "
                         f"{out.reasons_text()}", math.inf, hbm)
    return out
