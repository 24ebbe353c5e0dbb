"""Parallelism for training: DP, FSDP/ZeRO, tensor, pipeline and expert parallelism, and a planner.

Units: SI (seconds, bytes, FLOPs, FLOPs/s, bytes/s, USD).
Book: chapter 5 (chapters/05_training.ipynb) derives every formula here; chapter 6
(chapters/06_applied_training.ipynb) applies them to LLaMA 3 on TPU v5p.

Two levels of model, one set of conventions:

* The book's **simplified layer** (sec-05-layer): an ungated MLP In[B,D]·W_in[D,F]·W_out[F,D] in
  bf16. ``layer_costs`` gives, for DP, FSDP, TP and FSDP+TP, the same triple for every strategy:
  FLOPs per chip, bytes communicated per chip and their ratio (FLOPs per byte), forward and
  backward. The closed-form thresholds (``alpha``, ``dp_min_tokens_per_chip``, ``tp_max_degree``,
  ``mixed_min_tokens_per_chip``, ``optimal_fsdp``, ``dcn_min_tokens_per_pod``...) follow from it.
* A **whole transformer step** (sec-05-planner): ``Strategy`` (degrees dp/fsdp/tp/pp/ep,
  microbatches, rematerialisation, ZeRO stage) evaluated for a model, a cluster, a global batch and
  a sequence length by ``evaluate``; ``plan`` evaluates every strategy that tiles the cluster at
  once with numpy and ranks the feasible ones.

Conventions (chapter 5, "集合通信回顾"): a collective's cost is written as bytes ``V`` of the full
(gathered) array; AllGather and ReduceScatter move ``V``, AllReduce ``2V``, AllToAll ``V/4`` per
ring, and take ``bytes / (n_axes * W)`` where ``W`` is the bidirectional ICI bandwidth of one link
(TPU), the per-direction NVLink bandwidth per GPU, or the per-chip DCN/NIC bandwidth. "Bytes
communicated" below always means these V-equivalents, so ``time = bytes / (n_axes * W)``.
Forward and backward passes are timed separately, each as ``max(T_math, T_hbm, T_comms)``
(perfect overlap inside a pass; the book's per-pass comparison).

Ignores: latency-bound collectives (small arrays), attention's KV gathers under context
parallelism, optimizer-step time, load imbalance between experts, non-matmul FLOPs, and the
partial overlap real systems achieve (MFU absorbs all of that).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace as _dc_replace
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import hardware, topology, hlo as _hlo, pipeline as _pipeline, step as _step
from . import strategy as _strategy, memory as _memory
from .errors import Infeasible
from .step import StepResult, PlanResult, evaluate, plan
from .strategy import Strategy, STRATEGY_KINDS
from .units import check_positive, fmt_bytes, fmt_time, fmt_num, DAY, HOUR

__all__ = [
    # simplified layer (ch. 5)
    "alpha", "dp_min_tokens_per_chip", "tp_max_degree", "mixed_min_tokens_per_chip",
    "optimal_fsdp", "mixed_compute_comm_ratio", "dcn_min_tokens_per_pod", "mesh_axes_spanned",
    "torus_axes_owned",
    "layer_costs", "LayerCosts", "fsdp_tp_layer_times", "fsdp_tp_threshold", "max_params_pure_dp",
    "max_pure_dp", "ep_compute_comm_ratio", "ep_max_degree", "bubble_fraction", "pipeline_schedule",
    "checkpoint_bytes", "training_memory", "min_chips_for_memory", "zero_memory",
    "fsdp_step_comm_time",
    # whole step (ch. 5-6)
    "Strategy", "Cluster", "StepResult", "Infeasible", "evaluate", "plan", "PlanResult",
    "step_time", "train_time", "train_cost", "total_train_flops", "estimate_train_days",
    "expected_collectives", "STRATEGY_KINDS", "count_collectives", "sharded_step_check",
    "PROOF_MESHES", "PROOF_STRATEGIES", "toy_config", "REMAT", "SCHEDULES",
]



# =============================================================================================
# helpers
# =============================================================================================

def _chip(chip):
    return hardware.get(chip)


from .units import check_int as _pos_int, as_float_or_array as _arr  # noqa: E402


def _link_bw(chip) -> float:
    """W of the chip's scale-up network: TPU ICI bidirectional per link, GPU NVLink per direction."""
    chip = _chip(chip)
    if chip.family == "tpu":
        return chip.ici_bw_bidi
    if chip.family == "gpu":
        return chip.nvlink_bw_1way
    raise ValueError(f"{chip.name} has no inter-chip network in the catalogue (family {chip.family!r})")


# =============================================================================================
# Simplified layer: closed forms (ch. 5, sec-05-dp ... sec-05-mixed)
# =============================================================================================

def alpha(chip, dtype: str = "bf16") -> float:
    """ICI arithmetic intensity α = C / W_ici (FLOPs per byte; 2550 on TPU v5p). Book: eq-05-alpha.

    W_ici is the bidirectional bandwidth of one link (TPU); for a GPU the per-direction NVLink
    bandwidth per GPU (α_nvl, chapter 12).
    """
    chip = _chip(chip)
    return hardware.peak_flops(chip, dtype) / _link_bw(chip)


def dp_min_tokens_per_chip(chip, n_axes: int = 1, dtype: str = "bf16") -> float:
    """Per-chip batch (tokens) above which DP/FSDP is compute-bound: α / n_axes. Book: sec-05-critical-batch.

    TPU v5p: 2550 on one axis, 850 on three; TPU v5e (a 2-D torus) at most 2 axes: 1094.
    ``n_axes`` above the chip's torus dimension raises ValueError (``hardware.check_n_axes``).
    """
    n = _pos_int("n_axes", n_axes)
    hardware.check_n_axes(chip, n)
    return alpha(chip, dtype) / n


def tp_max_degree(d_ff, chip, n_axes: int = 1, dtype: str = "bf16"):
    """Largest tensor-parallel degree that stays compute-bound: Y < n F / α. Book: eq-05-tp-bound.

    Independent of batch and of dtype (int8 doubles C but halves the bytes). ``n_axes`` is
    checked against the chip's torus (``hardware.check_n_axes``).
    """
    f = check_positive("d_ff", d_ff)
    n = _pos_int("n_axes", n_axes)
    hardware.check_n_axes(chip, n)
    return _arr(n * f / alpha(chip, dtype if dtype != "int8" else "bf16"))


def _check_mx_my(chip, mx_my, name: str = "mx_my") -> int:
    """M_X·M_Y for ``chip``: None = the largest its torus allows (``hardware.max_mx_my``)."""
    best = hardware.max_mx_my(chip)
    if mx_my is None:
        return best
    m = _pos_int(name, mx_my)
    if m > best:
        c = _chip(chip)
        raise ValueError(f"{name}={m} is impossible on {c.name}: with {hardware.network_axes(c)} "
                         f"torus axes shared by FSDP (M_X) and TP (M_Y), M_X·M_Y is at most {best}")
    return m


def mixed_min_tokens_per_chip(d_ff, chip, mx_my: int | None = None, dtype: str = "bf16"):
    """Per-chip batch above which optimal FSDP+TP is compute-bound: 4α² / (M_X M_Y F).

    Book: eq-05-mixed-bound. On a 3D torus M_X M_Y = 2 (≈ 397 on v5p for F = 32,768; 453.6 for
    LLaMA-3-70B's F = 28,672); on a 2D torus 1 (585 on v5e for F = 32,768). ``mx_my=None`` takes
    the largest product the chip's torus allows; a larger one raises ValueError.
    """
    f = check_positive("d_ff", d_ff)
    m = _check_mx_my(chip, mx_my)
    a = alpha(chip, dtype)
    return _arr(4 * a * a / (m * f))


def optimal_fsdp(batch_tokens, n_chips, d_ff, m_x: int = 2, m_y: int = 1):
    """X_opt = sqrt((B/F)·(M_X/M_Y)·N), the FSDP degree minimising summed comms. Book: eq-05-xopt."""
    b = check_positive("batch_tokens", batch_tokens)
    n = check_positive("n_chips", n_chips)
    f = check_positive("d_ff", d_ff)
    _pos_int("m_x", m_x), _pos_int("m_y", m_y)
    return _arr(np.sqrt(b / f * m_x / m_y * n))


def mixed_compute_comm_ratio(batch_tokens, n_chips, d_ff, chip, mx_my: int | None = None):
    """T_math / T_comms of optimal FSDP+TP: sqrt(B F M_X M_Y) / (2 α sqrt(N)). Book: eq-05-mixed-ratio.

    Equals sqrt((B/N) / mixed_min_tokens_per_chip): below 1 the step is communication-bound and
    runs ≈ 1/ratio times slower than its FLOPs. ``mx_my=None``: the chip's best (2 on a 3-D torus).
    """
    b = check_positive("batch_tokens", batch_tokens)
    n = check_positive("n_chips", n_chips)
    f = check_positive("d_ff", d_ff)
    m = _check_mx_my(chip, mx_my)
    return _arr(np.sqrt(b * f * m) / (2 * alpha(chip) * np.sqrt(n)))


def dcn_min_tokens_per_pod(chip, dtype: str = "bf16") -> float:
    """Per-pod batch above which DP across pods over DCN is compute-bound: C_pod / W_dcn,pod.

    Both scale with the chips of a pod, so it equals C / W_dcn per chip: 73,440 tokens on v5p
    (CANON §1.4; the book rounds to ≈75k). Book: eq-05-dcn-bound.
    """
    chip = _chip(chip)
    if not chip.dcn_bw_1way:
        raise ValueError(f"{chip.name} has no DCN bandwidth in the catalogue")
    return hardware.peak_flops(chip, dtype) / chip.dcn_bw_1way


def mesh_axes_spanned(group_size, axis_len: int = 16, max_axes: int = 3) -> int:
    """Number of torus axes a group of ``group_size`` chips spans (the chart's M convention).

    1 for groups up to one axis (16), 2 up to 256, 3 beyond; capped at ``max_axes`` (3 on a 3D
    torus, 2 on v5e/v6e). A group of 1 uses no axis but counts as 1 (it never communicates).
    Each group is counted on its own, which is the interactive chart's convention (P5.15): two
    nested groups can then claim more axes than the torus has (FSDP 512 → 3 plus TP 8 → 1 on a
    3-axis torus). The planner uses ``torus_axes_owned``, which counts every axis once.
    """
    g = _pos_int("group_size", group_size)
    a = _pos_int("axis_len", axis_len, 2)
    m = _pos_int("max_axes", max_axes)
    if g == 1:
        return 1
    return int(min(m, max(1, math.ceil(math.log(g) / math.log(a) - 1e-9))))


@dataclass(frozen=True)
class LayerCosts:
    """Per-chip cost of one simplified layer (fwd and bwd): FLOPs, bytes communicated, ratio."""

    kind: str
    flops_fwd: float
    flops_bwd: float
    bytes_fwd: float
    bytes_bwd: float

    @property
    def flops(self) -> float:
        return self.flops_fwd + self.flops_bwd

    @property
    def nbytes(self) -> float:
        return self.bytes_fwd + self.bytes_bwd

    @property
    def ratio(self) -> float:
        """FLOPs per byte communicated (∞ when nothing is communicated); compare with α·n_axes."""
        return self.flops / self.nbytes if self.nbytes else math.inf

    def as_row(self) -> dict:
        return {"策略": self.kind, "FLOPs/芯片": self.flops, "通信字节/芯片": self.nbytes,
                "FLOPs/字节": self.ratio}


def layer_costs(kind: str, batch_tokens, d_model, d_ff, x: int = 1, y: int = 1) -> LayerCosts:
    """The summary table of chapter 5 (sec-05-summary) for one simplified bf16 MLP layer.

    ``kind`` in STRATEGY_KINDS; ``x`` = DP/FSDP degree, ``y`` = TP degree. Bytes are the
    V-equivalents of the collectives a chip takes part in (AllReduce counts 2V):

    * DP: fwd 0, bwd 2 AllReduces of the weight gradients = 8DF.
    * FSDP: fwd 2 AllGathers (4DF), bwd 2 AllGathers + 2 ReduceScatters (8DF).
    * TP: fwd AllGather In + ReduceScatter Out (4BD), bwd AllGather dOut + ReduceScatter dIn (4BD).
    * FSDP+TP: fwd 4BD/X + 4DF/Y; bwd 4BD/X + 8DF/Y (our derivation from the backward matmuls;
      the book's table prints 8BD/X, chapter 5 errata 8).
    """
    if kind not in STRATEGY_KINDS:
        raise ValueError(f"unknown strategy kind {kind!r}; allowed: {', '.join(STRATEGY_KINDS)}")
    B = check_positive("batch_tokens", batch_tokens, allow_array=False)
    D = check_positive("d_model", d_model, allow_array=False)
    F = check_positive("d_ff", d_ff, allow_array=False)
    x = _pos_int("x", x)
    y = _pos_int("y", y)
    if kind in ("dp", "fsdp") and y != 1:
        raise ValueError(f"{kind} uses only x (the data axis); got y={y}")
    if kind == "tp" and x != 1:
        raise ValueError(f"tp uses only y (the model axis); got x={x}")
    n = x * y
    f_fwd, f_bwd = 4 * B * D * F / n, 8 * B * D * F / n
    if kind == "dp":
        b_fwd, b_bwd = 0.0, (8 * D * F if x > 1 else 0.0)
    elif kind == "fsdp":
        b_fwd, b_bwd = (4 * D * F, 8 * D * F) if x > 1 else (0.0, 0.0)
    elif kind == "tp":
        b_fwd, b_bwd = (4 * B * D, 4 * B * D) if y > 1 else (0.0, 0.0)
    else:
        act = 4 * B * D / x if y > 1 else 0.0
        w_f = 4 * D * F / y if x > 1 else 0.0
        b_fwd, b_bwd = act + w_f, act + 2 * w_f
    return LayerCosts(kind, f_fwd, f_bwd, b_fwd, b_bwd)


def fsdp_tp_layer_times(batch_tokens, d_model, d_ff, n_fsdp, n_tp, chip, m_x: int = 1,
                        m_y: int = 1, combine: str = "sum") -> dict:
    """Forward-pass times of the FSDP(X)×TP(Y) simplified layer, vectorised over ``batch_tokens``.

    T_math = 4BDF/(NC); T_fsdp = 4DF/(Y W M_X) (0 if X = 1); T_tp = 4BD/(X W M_Y) (0 if Y = 1);
    T_comms = T_fsdp + T_tp (``combine='sum'``, the book's model) or their max ('max', the
    interactive chart's model). Book: eq-05-mixed-times.
    """
    if combine not in ("sum", "max"):
        raise ValueError(f"combine must be 'sum' or 'max', got {combine!r}")
    B = check_positive("batch_tokens", batch_tokens)
    D = check_positive("d_model", d_model, allow_array=False)
    F = check_positive("d_ff", d_ff, allow_array=False)
    X, Y = _pos_int("n_fsdp", n_fsdp), _pos_int("n_tp", n_tp)
    mx, my = _pos_int("m_x", m_x), _pos_int("m_y", m_y)
    chip = _chip(chip)
    hardware.check_n_axes(chip, mx, "m_x")
    hardware.check_n_axes(chip, my, "m_y")
    C, W = hardware.peak_flops(chip), _link_bw(chip)
    N = X * Y
    t_math = 4 * np.asarray(B) * D * F / (N * C)
    t_fsdp = np.zeros_like(t_math) + (4 * D * F / (Y * W * mx) if X > 1 else 0.0)
    t_tp = 4 * np.asarray(B) * D / (X * W * my) if Y > 1 else np.zeros_like(t_math)
    t_comms = t_fsdp + t_tp if combine == "sum" else np.maximum(t_fsdp, t_tp)
    return {"t_math": _arr(t_math), "t_fsdp": _arr(t_fsdp), "t_tp": _arr(t_tp),
            "t_comms": _arr(t_comms), "t_layer": _arr(np.maximum(t_math, t_comms))}


def fsdp_tp_threshold(n_fsdp, n_tp, m_x, m_y, d_ff, chip) -> float:
    """Batch B* (tokens) below which FSDP(X)×TP(Y) is comms-bound under the 'max' model.

    B* = N α / (Y M_X) from the FSDP term (0 when X = 1); ∞ when the TP term alone is
    comms-bound, i.e. Y ≥ M_Y F / α. D cancels. Book: P5.15.
    """
    X, Y = _pos_int("n_fsdp", n_fsdp), _pos_int("n_tp", n_tp)
    mx, my = _pos_int("m_x", m_x), _pos_int("m_y", m_y)
    hardware.check_n_axes(chip, mx, "m_x")
    hardware.check_n_axes(chip, my, "m_y")
    F = check_positive("d_ff", d_ff, allow_array=False)
    a = alpha(chip)
    if Y > 1 and Y * a / (my * F) >= 1.0:
        return math.inf
    if X == 1:
        return 0.0
    return X * Y * a / (Y * mx)


def max_params_pure_dp(chip, bytes_per_param: float = 10.0) -> float:
    """Largest model pure DP can hold: HBM / (bytes per param) (9.6e9 on v5p with Adam's 10 B)."""
    b = check_positive("bytes_per_param", bytes_per_param, allow_array=False)
    return _chip(chip).hbm_bytes / b


def max_pure_dp(batch_tokens, seq_len) -> int:
    """How many ways plain data parallelism can split a batch without cutting sequences: B / T."""
    b = check_positive("batch_tokens", batch_tokens, allow_array=False)
    t = check_positive("seq_len", seq_len, allow_array=False)
    if b < t:
        raise ValueError(f"batch_tokens ({b:g}) is smaller than one sequence (seq_len {t:g})")
    return int(b // t)


def ep_compute_comm_ratio(d_ff_expert, n_experts_axis, chip, gated: bool = False):
    """[ext] T_math / T_comms of an expert-parallel layer: 4F_e/(α E) (gated 6F_e/(α E)).

    E-way expert sharding on one ring axis; two AllToAlls each moving 2bkD bytes per chip at
    E/(4W) per byte. Our derivation (chapter 5, sec-05-ep), not the book's.
    """
    f = check_positive("d_ff_expert", d_ff_expert)
    e = check_positive("n_experts_axis", n_experts_axis)
    k = 6 if gated else 4
    return _arr(k * f / (alpha(chip) * e))


def ep_max_degree(d_ff_expert, chip, gated: bool = False):
    """[ext] Largest compute-bound expert-parallel ring: E < 4F_e/α (gated 6F_e/α)."""
    return _arr(np.asarray(ep_compute_comm_ratio(d_ff_expert, 1, chip, gated)))


def bubble_fraction(n_stages, n_micro):
    """Idle fraction of a GPipe / 1F1B pipeline: (Z-1)/(M+Z-1). Book: eq-05-bubble ([ext])."""
    check_positive("n_stages", n_stages)
    check_positive("n_micro", n_micro)
    return _pipeline.bubble_fraction(n_stages, n_micro, "1f1b")


def pipeline_schedule(kind: str, n_stages: int, n_micro: int) -> np.ndarray:
    """A device × time grid of a pipeline schedule: +m+1 = forward of microbatch m, -(m+1) = its
    backward (one time unit each, backward = dX and dW together), 0 = idle.

    ``kind`` 'gpipe' (all forwards, then all backwards) or '1f1b' (one forward, one backward in
    the steady state, at most Z microbatches in flight). Both take 2(M+Z-1) units, so their
    bubble is the same; 1F1B holds fewer activations.
    """
    if kind not in ("gpipe", "1f1b"):
        raise ValueError(f"kind must be 'gpipe' or '1f1b', got {kind!r}")
    Z = _pos_int("n_stages", n_stages)
    M = _pos_int("n_micro", n_micro)
    # event-driven list scheduling; each stage runs one op per time unit
    T = 2 * (M + Z - 1)
    fwd_done = np.full((Z, M), -1)
    bwd_done = np.full((Z, M), -1)
    grid = np.zeros((Z, T + 4 * Z), dtype=int)
    next_f = [0] * Z
    next_b = [0] * Z
    for t in range(grid.shape[1]):
        for s in range(Z):
            can_f = next_f[s] < M and (s == 0 or 0 <= fwd_done[s - 1, next_f[s]] < t)
            mb = next_b[s]
            can_b = mb < M and 0 <= fwd_done[s, mb] < t and (
                s == Z - 1 or 0 <= bwd_done[s + 1, mb] < t)
            if kind == "1f1b":
                in_flight = next_f[s] - next_b[s]
                if can_f and in_flight >= Z - s:
                    can_f = False          # 1F1B: at most Z - s microbatches in flight
                do_b = can_b
            else:
                do_b = can_b and next_f[s] == M   # GPipe: backwards only after all forwards
            if do_b:
                grid[s, t] = -(mb + 1)
                bwd_done[s, mb] = t
                next_b[s] += 1
            elif can_f:
                grid[s, t] = next_f[s] + 1
                fwd_done[s, next_f[s]] = t
                next_f[s] += 1
    used = np.nonzero(grid.any(axis=0))[0]
    return grid[:, : used[-1] + 1]


# ---- memory ---------------------------------------------------------------------------------

def checkpoint_bytes(batch_tokens, d_model, n_layers, d_ff=None, saves=("D", "D", "D", "D"),
                     bytes_per_elem: float = 2.0):
    """Bytes of saved activations: Σ_saves width × B × L × bytes.

    ``saves`` lists the width of each tensor saved per layer: 'D' or 'F' (or a number).
    Chapter 6 saves four [B, D] tensors per layer; chapter 5 saves ('F', 'F', 'D'), i.e.
    2LB(D + 2F) bytes in bf16.
    """
    B = check_positive("batch_tokens", batch_tokens)
    D = check_positive("d_model", d_model, allow_array=False)
    L = check_positive("n_layers", n_layers, allow_array=False)
    width = 0.0
    for s in saves:
        if s == "D":
            width += D
        elif s == "F":
            if d_ff is None:
                raise ValueError("saves mention 'F' but d_ff was not given")
            width += check_positive("d_ff", d_ff, allow_array=False)
        else:
            width += check_positive("save width", s, allow_array=False)
    return _memory.activation_bytes(B, width, L, check_positive("bytes_per_elem", bytes_per_elem,
                                                               allow_array=False))


def training_memory(n_params, batch_tokens, d_model, n_layers, d_ff=None,
                    saves=("D", "D", "D", "D"), param_bytes: float = 2.0, opt_bytes: float = 8.0,
                    grad_bytes: float = 0.0, act_bytes: float = 2.0) -> dict:
    """Total training HBM (bytes), unsharded: params, optimizer state, gradients, checkpoints.

    The book's accounting: bf16 params (2 B) + fp32 Adam moments (8 B) = 10 B/param; gradients
    and an fp32 master copy are left out (set ``grad_bytes`` to add them).
    """
    P = check_positive("n_params", n_params, allow_array=False)
    for nm, v in (("param_bytes", param_bytes), ("opt_bytes", opt_bytes),
                  ("grad_bytes", grad_bytes), ("act_bytes", act_bytes)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ValueError(f"{nm} must be a number >= 0, got {v!r}")
    ck = checkpoint_bytes(batch_tokens, d_model, n_layers, d_ff, saves, act_bytes)
    st = _memory.state_bytes(P, param_bytes, grad_bytes, opt_bytes)
    out = {"params": st["params"], "optimizer": st["optimizer"], "grads": st["grads"],
           "checkpoints": ck}
    out["total"] = out["params"] + out["optimizer"] + out["grads"] + ck
    return out


def zero_memory(n_params, n_devices, stage: int, param_bytes: float = 2.0,
                grad_bytes: float = 2.0, opt_bytes: float = 12.0) -> float:
    """Bytes per device of params + grads + optimizer state under ZeRO ``stage`` (0 = plain DP).

    Stage 1 shards the optimizer state, 2 also the gradients, 3 also the parameters, over
    ``n_devices``. The defaults are the ZeRO paper's mixed-precision Adam (fp16 params and grads,
    K = 12 bytes of fp32 master weights and moments): 7.5e9 params on 64 devices give
    120 / 31.4 / 16.6 / 1.9 GB (chapter 5, appendix A).
    """
    P = check_positive("n_params", n_params)
    n = _pos_int("n_devices", n_devices)
    if stage not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, got {stage!r}")
    for nm, v in (("param_bytes", param_bytes), ("grad_bytes", grad_bytes), ("opt_bytes", opt_bytes)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ValueError(f"{nm} must be a number >= 0, got {v!r}")
    return _memory.state_bytes(P, param_bytes, grad_bytes, opt_bytes, stage, n)["total"]


def fsdp_step_comm_time(n_params, chip, n_axes: int = 1, param_bytes: float = 2.0):
    """FSDP's communication per training step, all layers: 3 × (bytes of params) / (n W).

    Gather the weights for the forward pass, again for the backward pass, ReduceScatter the
    gradients. Independent of batch and of chip count (sec-05-fsdp).
    """
    P = check_positive("n_params", n_params)
    n = _pos_int("n_axes", n_axes)
    hardware.check_n_axes(chip, n)
    b = check_positive("param_bytes", param_bytes, allow_array=False)
    return _arr(3 * np.asarray(P) * b / (n * _link_bw(chip)))


def min_chips_for_memory(total_bytes, chip) -> int:
    """Fewest chips whose HBM holds ``total_bytes`` (everything perfectly sharded)."""
    t = check_positive("total_bytes", total_bytes, allow_array=False)
    return int(math.ceil(t / _chip(chip).hbm_bytes))


# =============================================================================================
# time and money (ch. 6)
# =============================================================================================

def total_train_flops(n_params, n_tokens, flops_per_param_token: float = 6.0) -> float:
    """6 P n_tok: training FLOPs (forward 2P + backward 4P per token). Book: sec-06-flops."""
    P = check_positive("n_params", n_params)
    n = check_positive("n_tokens", n_tokens)
    return _arr(flops_per_param_token * np.asarray(P) * n)


def step_time(n_params, batch_tokens, n_chips, chip, mfu: float = 1.0, dtype: str = "bf16"):
    """Compute-bound step time 6PB / (N C MFU) in seconds. Book: eq-06-wall."""
    P = check_positive("n_params", n_params)
    B = check_positive("batch_tokens", batch_tokens)
    N = check_positive("n_chips", n_chips)
    _check_mfu(mfu)
    return _arr(6 * np.asarray(P) * B / (N * hardware.peak_flops(chip, dtype) * mfu))


def _check_mfu(mfu):
    if isinstance(mfu, bool) or not isinstance(mfu, (int, float, np.floating)) or not 0 < mfu <= 1:
        raise ValueError(f"mfu must be a fraction in (0, 1], got {mfu!r}")


def train_time(total_flops, chip, n_chips, mfu: float = 0.4, dtype: str = "bf16"):
    """Wall-clock seconds for ``total_flops`` on ``n_chips`` at ``mfu``: F / (N C MFU)."""
    F = check_positive("total_flops", total_flops)
    N = check_positive("n_chips", n_chips)
    _check_mfu(mfu)
    return _arr(np.asarray(F) / (N * hardware.peak_flops(chip, dtype) * mfu))


def train_cost(seconds, n_chips, chip=None, usd_per_chip_hour=None):
    """USD for ``n_chips`` busy for ``seconds``: chip-hours × price (the chip's catalogue price
    if ``usd_per_chip_hour`` is not given; Feb-2025 on-demand list prices, dated)."""
    s = check_positive("seconds", seconds)
    n = check_positive("n_chips", n_chips)
    if usd_per_chip_hour is None:
        if chip is None:
            raise ValueError("give usd_per_chip_hour or a chip with a catalogue price")
        c = _chip(chip)
        if c.price_per_hour is None:
            raise ValueError(f"{c.name} has no price in the catalogue; pass usd_per_chip_hour")
        usd_per_chip_hour = c.price_per_hour
    p = check_positive("usd_per_chip_hour", usd_per_chip_hour, allow_array=False)
    return _arr(np.asarray(s) / HOUR * n * p)


# =============================================================================================
# Whole-step model: the one Strategy / System / evaluate / plan (scaling_lib.strategy, .step)
# =============================================================================================

def torus_axes_owned(group, inner, axis_len: int = 16, torus_dims: int = 3):
    """Effective torus axes M of a group of ``group`` chips laid out after ``inner`` chips of
    inner groups (innermost first), on a torus of ``torus_dims`` axes of ``axis_len`` chips:
    ``topology.group_axes`` with the book's 16-chip axes. Nested groups never own more axes than
    the torus has (FSDP 512 × TP 8 on 16×16×16: M_Y = 1, M_X = 2, the book's M_X + M_Y = 3;
    review ch04-06 M1); a group on the rest of an axis an inner group started gets 1/stride of
    it. Vectorised. Book: sec-05-mixed (M_X, M_Y).
    """
    a = _pos_int("axis_len", axis_len, 2)
    dims = _pos_int("torus_dims", torus_dims)
    return topology.group_axes(group, inner, (a,) * dims)[0]


REMAT = MappingProxyType({"none": "不重计算", "selective": "选择性重计算", "full": "整层重计算"})
SCHEDULES = _pipeline.SCHEDULES
#: chapter 5's name for a system of chips: the same class as ``topology.System``
Cluster = topology.System
_LABELS = _step.LABELS
_MEM_LABELS = _step.MEM_LABELS
_FAIL_REASONS = _step.FAIL_TEXT


# =============================================================================================
# ch. 6: putting it together
# =============================================================================================

def estimate_train_days(model, n_tokens, batch_tokens, chip, n_chips, *, n_pods: int = 1,
                        mfu: float = 0.4, m_x: int | None = None, m_y: int = 1,
                        seq_len=None) -> dict:
    """Chapter 6's estimate for a dense model trained with FSDP×TP inside pods and DP across pods.

    Returns compute-bound days (6 P n_tok / (N C MFU)), the ICI lower bound T_math/ratio
    ('days_ici', with the optimal FSDP+TP ratio, meaningful when ratio < 1), the comms-aware days
    max(T_math/MFU, T_math/ratio), the verdict, tokens per
    chip, the bounds (sequences, α/3, 2α²/F, DCN per pod) and the suggested X and Y per pod.
    """
    d = _step.model_shapes(model)
    n = check_positive("n_tokens", n_tokens, allow_array=False)
    B = check_positive("batch_tokens", batch_tokens, allow_array=False)
    N = _pos_int("n_chips", n_chips)
    pods = _pos_int("n_pods", n_pods)
    if N % pods:
        raise ValueError(f"n_chips ({N}) must be a multiple of n_pods ({pods})")
    _check_mfu(mfu)
    chip = _chip(chip)
    three_d = len(chip.pod_shape) == 3
    if m_x is None:
        m_x = 2 if three_d else 1          # a 3D torus gives FSDP 2 axes and TP 1; a 2D one 1 and 1
    P = d.P_total
    flops = total_train_flops(P, n)
    t_ideal = train_time(flops, chip, N, mfu=1.0)
    t_compute = t_ideal / mfu
    ratio = float(mixed_compute_comm_ratio(B, N, d.F, chip, m_x * m_y))
    t_comms = t_ideal / ratio
    per_pod = B / pods
    x_opt = float(optimal_fsdp(per_pod, N // pods, d.F, m_x, m_y))
    fsdp_bound = dp_min_tokens_per_chip(chip, 3 if three_d else 2)
    mixed = float(mixed_min_tokens_per_chip(d.F, chip, m_x * m_y))
    dcn = dcn_min_tokens_per_pod(chip) if pods > 1 else 0.0
    tpc = B / N
    if pods > 1 and per_pod < dcn:
        verdict = "dcn"
    elif tpc >= fsdp_bound:
        verdict = "compute (FSDP alone)"
    elif tpc >= mixed:
        verdict = "compute (FSDP+TP)"
    else:
        verdict = "ici"
    return {"params": P, "flops": flops, "days_compute": t_compute / DAY,
            "days_ici": t_comms / DAY, "days_comms_bound": max(t_compute, t_comms) / DAY,
            "ratio": ratio,
            "tokens_per_chip": tpc, "n_seq": (int(B // seq_len) if seq_len else None),
            "fsdp_bound": fsdp_bound, "mixed_bound": mixed, "dcn_bound": dcn,
            "x_opt": x_opt, "y_opt": (N // pods) / x_opt, "verdict": verdict}


# =============================================================================================
# What the library says each strategy's compiled train step must contain (for the HLO proof)
# =============================================================================================

def expected_collectives(kind: str, n_weight_matrices: int | None = None) -> dict:
    """Collectives XLA must insert in a sharded train step, as {kind: (min_count, max_count)}.

    Read off the same sharding table the cost model uses (``strategy.expected_hlo`` of
    ``PROOF_STRATEGIES[kind]``, sec-05-proof): DP needs a gradient all-reduce (XLA combines them
    into one) and nothing else; FSDP gathers each sharded weight before use (forward and
    backward, so ≥ one all-gather per weight) and reduces gradients (the CPU partitioner writes
    a reduce-scatter as all-reduce + dynamic-slice); TP (Megatron, no sequence parallelism)
    needs activation all-reduces and no gather; FSDP+TP needs both. ``None`` = unbounded.
    """
    if kind not in STRATEGY_KINDS:
        raise ValueError(f"unknown strategy kind {kind!r}; allowed: {', '.join(STRATEGY_KINDS)}")
    nw = n_weight_matrices
    if nw is not None:
        _pos_int("n_weight_matrices", nw)
    return _strategy.expected_hlo(PROOF_STRATEGIES[kind], "cpu", nw)


# =============================================================================================
# The proof on a device mesh (chapter 5, sec-05-proof): imports jax lazily
# =============================================================================================

#: one collective counter for the whole library (``hlo.count_collectives``)
count_collectives = _hlo.count_collectives


def _toy_config():
    from .transformer import TransformerConfig
    return TransformerConfig(d_model=32, n_layers=1, n_heads=8, n_kv_heads=8, d_ff=64, vocab=64,
                             name="ch05 toy")


#: chapter 5's toy transformer for the proof (public name; ``_toy_config`` is kept for notebooks)
toy_config = _toy_config

PROOF_MESHES = MappingProxyType({"dp": ((8,), ("X",)), "fsdp": ((8,), ("X",)),
                                 "tp": ((8,), ("Y",)), "fsdp_tp": ((4, 2), ("X", "Y"))})
#: the four layouts of the proof as sharding tables (Megatron TP without sequence parallelism)
PROOF_STRATEGIES = MappingProxyType({
    "dp": Strategy(dp=8, sp=False), "fsdp": Strategy(fsdp=8, sp=False),
    "tp": Strategy(tp=8, sp=False), "fsdp_tp": Strategy(fsdp=4, tp=2, sp=False)})
#: roles → the proof meshes' axis names (data and FSDP both on X, tensor on Y)
PROOF_AXIS_NAMES = MappingProxyType({"data": "X", "fsdp": "X", "tensor": "Y", "expert": "E",
                                     "context": "C", "pipe": "Z"})


def sharded_step_check(kinds=STRATEGY_KINDS, cfg=None, batch: int = 16, seq_len: int = 8,
                       seed: int = 0, fast_compile: bool = True) -> list:
    """One training step of a small jax_model transformer under each strategy of
    ``PROOF_STRATEGIES`` on an 8-device mesh, compared with the unsharded step, with the
    collectives XLA inserted checked against ``expected_collectives`` (sec-05-proof). Runs in
    ``scaling_lib.xla`` (``xla.checks.sharded_step_check``); this module never imports JAX."""
    from . import hooks
    return hooks.call("sharded_step_check", kinds, cfg, batch, seq_len, seed, fast_compile)


# ---- interleaved pipeline schedule (drawn by diagrams.pipeline_figure) ------------------------

def interleaved_schedule(n_stages: int, n_micro: int, virtual_stages: int = 2):
    """Interleaved 1F1B (Megatron-LM's virtual pipeline) as two stage × time grids.

    Each of the Z devices holds ``virtual_stages`` = v chunks of layers (virtual stage j = chunk
    j // Z on device j % Z), so a microbatch goes round the devices v times. A time unit is
    1/v of a full stage's forward (or backward, which takes as long here, as in
    ``pipeline_schedule``). Each device runs its ops in Megatron's order — forwards grouped Z
    microbatches at a time per chunk, (Z − d − 1)·2 + (v − 1)·Z warm-up forwards, then one
    forward one backward, then the remaining backwards — each as soon as its input has arrived
    (``pipeline.schedule_ops`` with one time unit per op).
    Returns ``(grid, chunk)``: ``grid`` as ``pipeline_schedule`` (+m+1 forward of microbatch m,
    −(m+1) backward, 0 idle), ``chunk`` the chunk index of each busy cell (−1 idle). The idle
    share is (Z − 1)/(v·M + Z − 1): v times less bubble than 1F1B for the same M. ``n_micro``
    must be a multiple of ``n_stages`` (Megatron's requirement).
    """
    Z = _pos_int("n_stages", n_stages)
    M = _pos_int("n_micro", n_micro)
    v = _pos_int("virtual_stages", virtual_stages)
    if M % Z:
        raise ValueError(f"n_micro ({M}) must be a multiple of n_stages ({Z}) for the "
                         f"interleaved schedule")
    n_ops = M * v

    def f_op(k):          # k-th forward on a device -> (microbatch, chunk)
        return (k // (Z * v)) * Z + k % Z, (k // Z) % v

    def b_op(k):
        return (k // (Z * v)) * Z + k % Z, v - 1 - (k // Z) % v

    orders = []
    for d in range(Z):
        warm = n_ops if Z == 1 else min(n_ops, (Z - d - 1) * 2 + (v - 1) * Z if v > 1 else Z - d - 1)
        seq = [("F", k) for k in range(warm)]
        kf, kb = warm, 0
        while kf < n_ops:
            seq += [("F", kf), ("B", kb)]
            kf += 1
            kb += 1
        seq += [("B", k) for k in range(kb, n_ops)]
        orders.append(seq)
    ops = []                                  # per device: (kind, microbatch, virtual stage)
    for d, seq in enumerate(orders):
        row = []
        for kind, k in seq:
            m, c = f_op(k) if kind == "F" else b_op(k)
            row.append((kind, m, c * Z + d))   # chunk c of device d is virtual stage c·Z + d
        ops.append(row)
    last = Z * v - 1

    def needs(d, op):                          # F after the previous virtual stage's F; B after
        kind, m, j = op                        # its F and the next virtual stage's B
        if kind == "F":
            return [("F", m, j - 1)] if j > 0 else []
        return [("F", m, j)] + ([("B", m, j + 1)] if j < last else [])

    placed = _pipeline.schedule_ops(ops, needs, lambda d, op: 1)     # one time unit per op
    T = int(max(e[3] for e in placed))
    grid = np.zeros((Z, T), dtype=int)
    chunk = -np.ones((Z, T), dtype=int)
    for d, (kind, m, j), start, _ in placed:
        grid[d, int(start)] = m + 1 if kind == "F" else -(m + 1)
        chunk[d, int(start)] = j // Z
    return grid, chunk


__all__ += ["interleaved_schedule"]
