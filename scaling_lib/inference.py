"""Serving a Transformer: prefill and decode time, KV-cache limits, latency/throughput and cost.

Units: SI (seconds, bytes, FLOPs, FLOPs/s, bytes/s, USD). Book: chapter 7 (sec-07-*, the general
decode-step formula eq-07-step) derives it; chapter 8 (sec-08-*) applies it to LLaMA 3 on TPU v5e.

The decode step of ``B`` sequences with ``S`` cached tokens on ``n`` chips (eq-07-step):

    T_step = B·S·KV_tok/(n·W_hbm)  +  max(2·B·P/(n·C), P·b_w/(n·W_hbm))
             [attention: reads KV]     [MLPs: FLOPs or weight loading]

Prefill is compute-bound: 2·P·T/(n·C·MFU). Weights and KV cache are assumed sharded evenly over
the ``n`` chips (model parallelism for the weights, KV over heads then batch). Optionally an ICI
term for 1-D model parallelism (two AllReduces of [B, D] per layer, bandwidth- or latency-bound).
Ignores: attention FLOPs in decode (O(1) per KV byte), activation/working memory (use
``reserve_frac``), imperfect overlap, kernel launch costs: an optimistic lower bound
(sec-07-caveats). How far real servers land above it is a question for measurements
(``scaling_lib.data`` holds published serving runs); the original book's "maybe 1.5-2x" is a
guess with no source behind it, so the library does not repeat it.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from . import hardware
from .errors import Infeasible as _Infeasible
from .units import check_nonneg, check_positive, dtype_bytes, fmt_bytes, fmt_num, fmt_time

__all__ = [
    "Infeasible", "ServedModel", "served_model", "POP_QUIZ_30B", "BOOK_CH7_MODEL",
    "SERVING_DTYPES", "bytes_per_elem", "kv_bytes_per_token", "kv_bytes_per_seq",
    "serving_memory", "max_batch_size", "check_fits", "StepTime", "decode_step_time",
    "min_step_time", "prefill_time", "attention_intensity", "critical_batch",
    "exact_critical_batch", "moe_critical_batch", "kv_weight_balance_batch",
    "ici_time_1d", "slice_shape", "Frontier", "pareto_mask", "PARETO_RTOL", "pareto_frontier", "serving_grid",
    "max_model_parallelism", "max_model_parallelism_memory_bound", "matmul_comm_times",
    "collective_is_latency_bound", "latency_bound_bytes", "kv_shard_layout",
    "two_d_ws_comm_time", "one_d_mp_comm_time", "two_d_ws_optimum", "two_d_ws_crossover_chips",
    "spec_decode_expected_tokens", "spec_decode_time_per_token", "prefix_saving",
    "qps_per_chip", "cost_per_million_tokens", "kv_evictions_per_step", "prefill_decode_ratio",
    "V5E_SLICES", "V5E_SLICE_SHAPES", "smallest_slice", "min_chips", "best_config_under_latency",
    "simulate_batching", "quantization_table", "sampling_flops",
]

#: Storage dtypes allowed for weights and the KV cache.
SERVING_DTYPES = ("f32", "bf16", "fp8", "int8", "int4")
#: TPU v5e slice sizes (chips) and their shapes.
V5E_SLICES = (1, 4, 8, 16, 32, 64, 128, 256)
V5E_SLICE_SHAPES = {1: (1, 1), 4: (2, 2), 8: (2, 4), 16: (4, 4), 32: (4, 8), 64: (8, 8),
                    128: (8, 16), 256: (16, 16)}


#: the library's one "does not fit" error (also ``training.Infeasible``)
Infeasible = _Infeasible


from .units import check_int as _int, as_float_or_array as _arr  # noqa: E402


def bytes_per_elem(dtype) -> float:
    """Bytes per stored element of a serving dtype ('bf16' 2, 'int8' 1, 'int4' 0.5 ...)."""
    if not isinstance(dtype, str):
        raise TypeError(f"dtype must be a string such as 'bf16' or 'int8', got "
                        f"{type(dtype).__name__} {dtype!r}")
    key = dtype.strip().lower()
    key = {"bfloat16": "bf16", "float32": "f32", "fp32": "f32", "i8": "int8"}.get(key, key)
    if key not in SERVING_DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; allowed: {', '.join(SERVING_DTYPES)}")
    return dtype_bytes(key)


# ---- the model as the server sees it --------------------------------------------------------

@dataclass(frozen=True)
class ServedModel:
    """What serving arithmetic needs of a model: parameter count P, KV elements per token
    (2·L·K·H), and the shapes used by the sharding rules. ``active_params`` (MoE) is the count
    each token multiplies against; dense models have active_params == params.

    A thin view: when the model is a ``transformer.TransformerConfig`` (``served_model(cfg)``,
    ``from_dims``) every number is read from it and ``cfg`` keeps it; ``params`` may be
    overridden with the rounded count a problem states (``with_params``). Only the book's
    dimensionless examples (the pop-quiz 30B: P and KV bytes only) have ``cfg=None``.
    """

    name: str
    params: float
    kv_elems_per_token: float
    d_model: int = 0
    d_ff: int = 0
    n_layers: int = 0
    n_heads: int = 0
    n_kv_heads: int = 0
    d_head: int = 0
    active_params: float = 0.0
    cfg: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        check_positive(f"{self.name or 'model'} params", self.params, allow_array=False)
        check_positive(f"{self.name or 'model'} kv_elems_per_token", self.kv_elems_per_token,
                       allow_array=False)
        if not self.active_params:
            object.__setattr__(self, "active_params", float(self.params))

    @classmethod
    def from_dims(cls, name, L, D, F, N, K, H, V, tied=False, n_experts=1, top_k=1):
        """From the book's letters: a gated-MLP ``TransformerConfig`` without norms (the book's
        P = L(3DF·E + 2DH(N+K)) + (1 or 2)·V·D; an MoE also counts its router, L·D·E)."""
        for nm, v in (("L", L), ("D", D), ("F", F), ("N", N), ("K", K), ("H", H), ("V", V),
                      ("n_experts", n_experts), ("top_k", top_k)):
            _int(nm, v)
        from .transformer import TransformerConfig
        cfg = TransformerConfig(d_model=D, n_layers=L, n_heads=N, n_kv_heads=K, d_ff=F,
                                vocab=V, d_head=H, tied_embeddings=bool(tied),
                                n_experts=n_experts, top_k=top_k, norms_per_layer=0,
                                final_norm=False, name=name)
        return served_model(cfg)

    def with_params(self, params) -> "ServedModel":
        """The same model with the parameter count rounded as a problem states it (e.g. 70e9)."""
        p = float(check_positive("params", params, allow_array=False))
        scale = p / self.params
        return ServedModel(self.name, p, self.kv_elems_per_token, self.d_model, self.d_ff,
                           self.n_layers, self.n_heads, self.n_kv_heads, self.d_head,
                           self.active_params * scale, self.cfg)


def served_model(model, params=None) -> ServedModel:
    """A ``ServedModel`` from a ServedModel, a ``transformer.TransformerConfig`` or a preset name
    of ``scaling_lib.models`` ('llama3-70b' ...). ``params`` overrides the parameter count."""
    if isinstance(model, ServedModel):
        m = model
    elif isinstance(model, str):
        from . import models  # lazy: the presets live in models
        return served_model(models.get(model), params)
    elif hasattr(model, "kv_elems_per_token") and hasattr(model, "params"):
        cfg = model
        m = ServedModel(name=getattr(cfg, "name", "") or "model", params=float(cfg.params()),
                        kv_elems_per_token=float(cfg.kv_elems_per_token()),
                        d_model=cfg.d_model, d_ff=cfg.d_ff, n_layers=cfg.n_layers,
                        n_heads=cfg.n_heads, n_kv_heads=cfg.n_kv_heads,
                        d_head=cfg.d_head or cfg.d_model // cfg.n_heads,
                        active_params=float(cfg.active_params()), cfg=cfg)
    else:
        raise TypeError(f"model must be a ServedModel, a TransformerConfig or a preset name, got "
                        f"{type(model).__name__} {model!r}")
    return m.with_params(params) if params is not None else m


#: The chapter-7 pop-quiz model: 30e9 params, 100 kB/token of int8 KV (1e5 elements).
POP_QUIZ_30B = ServedModel("pop-quiz 30B", 30e9, 1e5)
#: The chapter-7 invented model (end-of-chapter questions): tied embeddings, H = 256.
BOOK_CH7_MODEL = ServedModel.from_dims("ch7 model", L=64, D=4096, F=16384, N=32, K=8, H=256,
                                       V=32128, tied=True)


# ---- memory ---------------------------------------------------------------------------------

def kv_bytes_per_token(model, kv="bf16") -> float:
    """KV-cache bytes per token, all layers: 2·L·K·H·b_kv. Book: eq-04-kv, sec-07-memory."""
    return served_model(model).kv_elems_per_token * bytes_per_elem(kv)


def kv_bytes_per_seq(model, seq_len, kv="bf16"):
    """KV-cache bytes of one sequence of ``seq_len`` tokens: S·2·L·K·H·b_kv."""
    return _arr(check_positive("seq_len", seq_len) * kv_bytes_per_token(model, kv))


def serving_memory(model, batch, seq_len, weights="bf16", kv="bf16") -> dict:
    """Bytes of weights, KV cache (B·S·KV_tok) and their total. Activations are ignored."""
    m = served_model(model)
    b = check_positive("batch", batch)
    p = m.params * bytes_per_elem(weights)
    k = np.asarray(b) * np.asarray(kv_bytes_per_seq(m, seq_len, kv))
    return {"params_bytes": p, "kv_bytes": _arr(k), "total_bytes": _arr(p + k)}


def _hbm_total(chip, n_chips, hbm_per_chip, reserve_frac):
    chip = hardware.get(chip)
    hbm = chip.hbm_bytes if hbm_per_chip is None else check_positive("hbm_per_chip", hbm_per_chip)
    r = float(check_nonneg("reserve_frac", reserve_frac, allow_array=False))
    if r >= 1:
        raise ValueError(f"reserve_frac must be in [0, 1), got {r}")
    return np.asarray(check_positive("n_chips", n_chips)) * hbm * (1 - r)


def max_batch_size(model, seq_len, n_chips, chip, weights="bf16", kv="bf16",
                   hbm_per_chip=None, reserve_frac=0.0):
    """Largest B with P·b_w + B·S·KV_tok <= n·HBM·(1 - reserve). Book: sec-07-memory.

    Raises ``Infeasible`` (a ValueError) if the weights alone do not fit (scalar inputs); with
    array inputs the result is 0 where nothing fits.
    """
    m = served_model(model)
    cap = _hbm_total(chip, n_chips, hbm_per_chip, reserve_frac)
    p = m.params * bytes_per_elem(weights)
    per_seq = np.asarray(kv_bytes_per_seq(m, seq_len, kv))
    b = np.floor(np.maximum(cap - p, 0) / per_seq + 1e-9)
    if b.ndim == 0:
        if cap < p:
            raise Infeasible(f"weights alone need {fmt_bytes(p)} but {float(n_chips):g} chips have "
                             f"{fmt_bytes(float(cap))}: use more chips or smaller weights",
                             needed=p, available=float(cap))
        return int(b)
    return b.astype(int)


def check_fits(model, batch, seq_len, n_chips, chip, weights="bf16", kv="bf16",
               hbm_per_chip=None, reserve_frac=0.0) -> dict:
    """Return ``serving_memory`` if it fits in n·HBM, else raise ``Infeasible`` saying
    'needs X, has Y'."""
    mem = serving_memory(model, batch, seq_len, weights, kv)
    cap = float(_hbm_total(chip, n_chips, hbm_per_chip, reserve_frac))
    need = float(np.max(mem["total_bytes"]))
    if need > cap * (1 + 1e-12):
        raise Infeasible(
            f"batch {np.max(batch):g} at context {np.max(seq_len):g} needs {fmt_bytes(need)} "
            f"(weights {fmt_bytes(mem['params_bytes'])} + KV {fmt_bytes(float(np.max(mem['kv_bytes'])))}"
            f"), has {fmt_bytes(cap)} on {float(n_chips):g} × {hardware.get(chip).name}",
            needed=need, available=cap)
    return mem


# ---- decode step ----------------------------------------------------------------------------

@dataclass(frozen=True)
class StepTime:
    """One decode step (one new token for each of ``batch`` sequences). Times in seconds; the
    fields are floats, or arrays when the inputs were arrays."""

    kv_s: object
    param_s: object
    flops_s: object
    ici_s: object
    total_s: object
    batch: object
    n_chips: object
    memory_bytes: object = 0.0
    hbm_bytes: float = 0.0
    chip: str = ""

    @property
    def compute_bound(self):
        """True where the MLP FLOPs exceed the weight-loading time (B above B_crit)."""
        return np.asarray(self.flops_s) > np.asarray(self.param_s)

    @property
    def tokens_per_s(self):
        return _arr(np.asarray(self.batch) / np.asarray(self.total_s))

    @property
    def tokens_per_s_per_chip(self):
        return _arr(np.asarray(self.tokens_per_s) / np.asarray(self.n_chips))

    @property
    def bottleneck(self) -> str:
        """Chinese label of the largest term (scalar steps only)."""
        parts = {"KV 缓存读取": float(self.kv_s), "权重读取": float(self.param_s),
                 "FFN 计算": float(self.flops_s), "ICI 通信": float(self.ici_s)}
        return max(parts, key=parts.get)

    def parts(self) -> dict:
        return {"KV 缓存读取": self.kv_s, "权重读取": self.param_s, "FFN 计算": self.flops_s,
                "ICI 通信": self.ici_s}

    def as_dict(self) -> dict:
        return {"kv_s": self.kv_s, "param_s": self.param_s, "flops_s": self.flops_s,
                "ici_s": self.ici_s, "total_s": self.total_s,
                "tokens_per_s": self.tokens_per_s, "tokens_per_s_per_chip": self.tokens_per_s_per_chip,
                "memory_bytes": self.memory_bytes}

    def _rows(self):
        rows = [("KV 缓存读取", fmt_time(float(self.kv_s))),
                ("权重读取", fmt_time(float(self.param_s))),
                ("FFN 计算", fmt_time(float(self.flops_s)))]
        if float(self.ici_s):
            rows.append(("ICI 通信", fmt_time(float(self.ici_s))))
        rows += [("每步耗时", fmt_time(float(self.total_s))),
                 ("吞吐量（每芯片）", f"{fmt_num(float(self.tokens_per_s_per_chip))} token/s"),
                 ("显存（全部芯片）", f"{fmt_bytes(float(self.memory_bytes))} / "
                                 f"{fmt_bytes(float(self.hbm_bytes))}")]
        return rows

    def __str__(self):
        if np.ndim(self.total_s):
            return f"StepTime（{np.size(self.total_s)} 个点）"
        head = f"解码一步：B = {float(self.batch):g}，{float(self.n_chips):g} × {self.chip}"
        lines = [head] + [f"  {k:<12}{v}" for k, v in self._rows()]
        lines.append(f"  瓶颈：{self.bottleneck}（{'计算受限' if self.compute_bound else '内存带宽受限'}）")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self):
        if np.ndim(self.total_s):
            return f"<p>{self}</p>"
        rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in self._rows())
        return (f"<table><caption>解码一步：B = {float(self.batch):g}，{float(self.n_chips):g} × "
                f"{self.chip}</caption>{rows}<tr><td><b>瓶颈</b></td><td><b>{self.bottleneck}"
                f"</b></td></tr></table>")


def slice_shape(chip, n: int) -> tuple:
    """The slice shape 1-D model parallelism over ``n`` chips runs on: a near-square 2-D grid on
    2-D-torus chips (v5e: 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16), a near-cube on 3-D ones
    (v5p: 2x2x2, 2x2x4, 2x4x4, 4x4x4 ...): powers of two shared out over the torus axes, the
    largest last. ``n`` must be a power of two (the slices TPUs come in)."""
    chip = hardware.get(chip)
    n = int(check_positive("n", n, allow_array=False))
    if n & (n - 1):
        raise ValueError(f"n = {n}: 1-D model parallelism here runs on a TPU slice, whose chip "
                         f"count is a power of two (1, 2, 4, 8, ...)")
    dims = chip.torus_dims or 2
    shape = [1] * dims
    k = n.bit_length() - 1
    for i in range(k):
        shape[i % dims] *= 2
    shape = sorted(shape)
    return tuple(shape) if dims == 3 else tuple(s for s in shape if s > 1) or (1,)


def _ag_time_1d(nbytes, n, chip, n_axes, t_hop, wrap):
    """One AllGather (= one ReduceScatter) of ``nbytes`` over the ``n`` chips of the slice
    ``slice_shape(chip, n)``, from ``collectives``: max(hops × t_hop, V / Σ axis bandwidth).
    ``wrap=None``: the slice's real wraparound links (``topology.wraparound``: a v5e axis wraps
    only at the full pod's 16, so 4x4 or 8x8 are grids of lines); ``wrap=True``: every axis a ring
    (the book's teaching assumption); ``False``: no axis wraps. With an explicit ``n_axes``:
    V/(n_axes·W_ici) against the same latency floor."""
    from . import collectives, topology
    shape = slice_shape(chip, n)
    if wrap is None:
        wraps = topology.wraparound(chip, shape) if len(shape) == (chip.torus_dims or 2) else \
            tuple(s <= 2 for s in shape)          # a 1-D line of 2 chips: its ends are neighbours
    else:
        wraps = tuple(bool(wrap) for _ in shape)
    torus = topology.Torus(shape=shape, wraps=wraps, link_bw_1way=chip.ici_link_bw_1way,
                           latency=t_hop)
    r = collectives.collective_time("all_gather", nbytes, torus, axes=torus.names)
    tb = np.asarray(r.t_bandwidth)
    if n_axes is not None:
        tb = np.asarray(nbytes) / (np.asarray(hardware.check_n_axes(chip, n_axes)) * chip.ici_bw_bidi)
    return np.maximum(tb, np.asarray(r.t_latency))


def ici_time_1d(model, batch, n_chips, chip, act_bytes=2.0, n_axes=None, t_hop=1e-6, wrap=None):
    """ICI time per decode step for 1-D model parallelism over ``n_chips``: per layer two
    AllReduces (attention and MLP outputs) of a [B, D] activation, each = ReduceScatter +
    AllGather, priced by ``collectives.collective_time`` on the slice ``slice_shape(chip, n)``:
    each costs max(latency floor t_hop·hops, bytes/bandwidth). ``wrap=None`` takes the slice's
    wraparound from ``topology`` (sub-pod v5e slices have none: about twice the hops and half the
    bandwidth of the book's rings); ``wrap=True`` is the book's all-rings assumption. Book:
    sec-07-sharding. Returns seconds per step (0 on one chip)."""
    m = served_model(model)
    if not m.d_model or not m.n_layers:
        raise ValueError(f"{m.name}: the ICI term needs d_model and n_layers")
    chip = hardware.get(chip)
    b = np.asarray(check_positive("batch", batch))
    n = np.asarray(check_positive("n_chips", n_chips))
    if not chip.ici_bw_bidi:
        raise ValueError(f"{chip.name} has no ICI bandwidth in the catalogue")
    if wrap not in (None, True, False):
        raise ValueError(f"wrap must be None (the slice's real links), True or False, got {wrap!r}")
    t_hop = float(check_positive("t_hop", t_hop, allow_array=False))
    nb = np.broadcast(b, n).shape
    b, n = np.broadcast_to(b, nb).astype(float), np.broadcast_to(n, nb).astype(float)
    t = np.zeros(nb)
    for nv in np.unique(n):
        if nv <= 1:
            continue
        sel = n == nv
        per = _ag_time_1d(act_bytes * b[sel] * m.d_model, int(round(nv)), chip, n_axes, t_hop, wrap)
        t[sel] = 4 * m.n_layers * per        # 2 AllReduces = 2 RS + 2 AG per layer
    return _arr(t)


def decode_step_time(model, batch, seq_len, n_chips, chip, weights="bf16", kv="bf16",
                     compute="bf16", params=None, ici=False, check_memory=True,
                     hbm_per_chip=None, wrap=None) -> StepTime:
    """The general decode-step estimate (eq-07-step):
    T = B·S·KV_tok/(nW) + max(2·B·P_act/(nC), P·b_w/(nW) [, T_ici]).

    ``compute`` is the dtype the MLP math runs in ('bf16' or 'int8'); ``params`` overrides P;
    ``ici=True`` adds the 1-D model-parallel ICI term inside the max (its bandwidth part overlaps;
    its latency floor is what it is; ``wrap`` as in ``ici_time_1d``). Vectorised over batch,
    seq_len, n_chips. With
    ``check_memory`` a configuration whose weights + KV exceed n·HBM raises ``Infeasible``.
    """
    m = served_model(model, params)
    chip = hardware.get(chip)
    b = check_positive("batch", batch)
    n = check_positive("n_chips", n_chips)
    c = chip.peak(compute)
    w = chip.hbm_bw
    mem = serving_memory(m, b, seq_len, weights, kv)
    cap = _hbm_total(chip, n, hbm_per_chip, 0.0)
    if check_memory:
        check_fits(m, b, seq_len, n, chip, weights, kv, hbm_per_chip) if np.ndim(cap) == 0 and \
            np.ndim(mem["total_bytes"]) == 0 else _check_all(mem, cap, chip)
    kv_s = np.asarray(mem["kv_bytes"]) / (np.asarray(n) * w)
    param_s = np.broadcast_to(mem["params_bytes"] / (np.asarray(n) * w), np.shape(kv_s)) \
        if np.ndim(kv_s) else mem["params_bytes"] / (np.asarray(n) * w)
    flops_s = 2 * np.asarray(b) * m.active_params / (np.asarray(n) * c)
    ici_s = ici_time_1d(m, b, n, chip, wrap=wrap) if ici else \
        np.zeros_like(np.asarray(flops_s, dtype=float))
    total = kv_s + np.maximum(np.maximum(flops_s, param_s), ici_s)
    return StepTime(kv_s=_arr(kv_s), param_s=_arr(param_s), flops_s=_arr(flops_s),
                    ici_s=_arr(ici_s), total_s=_arr(total), batch=_arr(b), n_chips=_arr(n),
                    memory_bytes=mem["total_bytes"], hbm_bytes=_arr(cap), chip=chip.name)


def _check_all(mem, cap, chip):
    over = np.asarray(mem["total_bytes"]) > np.asarray(cap) * (1 + 1e-12)
    if np.any(over):
        need = float(np.max(np.where(over, mem["total_bytes"], 0)))
        raise Infeasible(f"some points need up to {fmt_bytes(need)} but the chips have "
                         f"{fmt_bytes(float(np.min(cap)))} ({chip.name}); pass check_memory=False "
                         f"to sweep past the limit", needed=need, available=float(np.min(cap)))


def min_step_time(param_bytes, kv_bytes_per_seq, batch, n_chips, chip):
    """Memory-only lower bound (B·KV_seq + P·b_w)/(n·W_hbm): every byte read once per step."""
    chip = hardware.get(chip)
    p = check_nonneg("param_bytes", param_bytes)
    k = check_nonneg("kv_bytes_per_seq", kv_bytes_per_seq)
    b = check_positive("batch", batch)
    n = check_positive("n_chips", n_chips)
    return _arr((np.asarray(b) * k + p) / (np.asarray(n) * chip.hbm_bw))


def prefill_time(model, n_tokens, n_chips, chip, mfu=1.0, compute="bf16", params=None,
                 attention=False):
    """Prefill (time to first token) estimate: 2·P·T/(n·C·MFU), compute-bound; with
    ``attention=True`` adds the causal attention FLOPs 2·L·N·H·T² (needs the model's shapes)."""
    m = served_model(model, params)
    chip = hardware.get(chip)
    t = check_positive("n_tokens", n_tokens)
    n = check_positive("n_chips", n_chips)
    u = float(check_positive("mfu", mfu, allow_array=False))
    if u > 1:
        raise ValueError(f"mfu must be in (0, 1], got {u}")
    flops = 2 * m.active_params * np.asarray(t)
    if attention:
        if not m.n_heads:
            raise ValueError(f"{m.name}: attention FLOPs need n_layers, n_heads and d_head")
        flops = flops + 2 * m.n_layers * m.n_heads * m.d_head * np.asarray(t) ** 2
    return _arr(flops / (np.asarray(n) * chip.peak(compute) * u))


def sampling_flops(model, n_tokens, cached=True):
    """FLOPs of generating ``n_tokens`` one by one from scratch: with a KV cache each step
    processes one token (≈2P + attention over the prefix); without, step t re-runs all t tokens.
    Returns the total (O(n) matmul work cached vs O(n²) naive; attention O(n²) vs O(n³))."""
    m = served_model(model)
    n = _int("n_tokens", n_tokens)
    t = np.arange(1, n + 1, dtype=float)
    attn = 4 * m.n_layers * m.n_heads * m.d_head if m.n_heads else 0.0
    if cached:
        return float(np.sum(2 * m.active_params + attn * t))
    return float(np.sum(2 * m.active_params * t + attn * t * (t + 1) / 2))


# ---- intensities and critical batches -------------------------------------------------------

def attention_intensity(S, T, G=1):
    """FLOPs per byte of fused attention over S cached tokens for T queries, G query heads per KV
    head: S·T·G/(S + T·G). Prefill (S = T, G = 1) T/2; decode (T = 1) ≈ G. Book: eq-07-attn."""
    s, t, g = check_positive("S", S), check_positive("T", T), check_positive("G", G)
    return _arr(np.asarray(s) * t * g / (np.asarray(s) + np.asarray(t) * g))


def critical_batch(chip, weights="bf16", compute="bf16"):
    """B_crit = C_compute·b_w/(2·W_hbm): 240 / 120 / 240 on v5e. Book: eq-07-bcrit."""
    chip = hardware.get(chip)
    return chip.peak(compute) * bytes_per_elem(weights) / (2 * chip.hbm_bw)


def exact_critical_batch(D, F, chip, compute="bf16"):
    """Exact bf16 crossover of [B,D]·[D,F] counting activations: I·D·F/(D·F − I·(D+F))."""
    from .roofline import critical_batch as _cb
    return _cb(chip, w="bf16", compute=compute, D=D, F=F)


def moe_critical_batch(n_experts, top_k, chip, weights="bf16", compute="bf16"):
    """Each expert sees B·k/E tokens, so MLPs are compute-bound iff B >= B_crit·E/k."""
    e, k = _int("n_experts", n_experts), _int("top_k", top_k)
    if k > e:
        raise ValueError(f"top_k ({k}) cannot exceed n_experts ({e})")
    return critical_batch(chip, weights, compute) * e / k


def kv_weight_balance_batch(model, seq_len, weights="bf16", kv="bf16"):
    """Number of sequences whose KV cache weighs as much as the weights: P·b_w/KV_seq."""
    m = served_model(model)
    return _arr(m.params * bytes_per_elem(weights) / np.asarray(kv_bytes_per_seq(m, seq_len, kv)))


# ---- latency / throughput frontier ----------------------------------------------------------

@dataclass(frozen=True)
class Frontier:
    """A sweep of serving points and which of them are Pareto-optimal (lowest latency for their
    throughput per chip). Arrays are aligned; ``pareto`` is a boolean mask."""

    batch: np.ndarray
    n_chips: np.ndarray
    latency_s: np.ndarray
    tok_s_chip: np.ndarray
    kv_s: np.ndarray
    param_s: np.ndarray
    flops_s: np.ndarray
    ici_s: np.ndarray
    pareto: np.ndarray
    labels: dict = field(default_factory=dict)

    def __len__(self):
        return int(np.size(self.batch))

    def best_under(self, latency_budget_s) -> int:
        """Index of the point with the most tokens/s/chip whose latency is within the budget;
        throughputs equal within ``PARETO_RTOL`` count as a tie, won by the lowest latency (then
        the first such point). Raises Infeasible when no point meets the budget."""
        budget = float(check_positive("latency_budget_s", latency_budget_s, allow_array=False))
        ok = np.asarray(self.latency_s) <= budget
        if not ok.any():
            raise Infeasible(f"no point of this sweep has a step within {fmt_time(budget)}; the "
                             f"fastest takes {fmt_time(float(np.min(self.latency_s)))}")
        thr = np.asarray(self.tok_s_chip)
        top = np.max(thr[ok])
        tied = ok & (thr >= top * (1 - PARETO_RTOL))
        return int(np.argmin(np.where(tied, self.latency_s, np.inf)))

    def front(self) -> dict:
        """The Pareto points sorted by latency, as a dict of arrays."""
        idx = np.flatnonzero(self.pareto)
        idx = idx[np.argsort(self.latency_s[idx], kind="stable")]
        out = {k: getattr(self, k)[idx] for k in ("batch", "n_chips", "latency_s", "tok_s_chip")}
        for k, v in self.labels.items():
            out[k] = np.asarray(v)[idx]
        return out


#: Relative tolerance under which two throughputs (or latencies) count as equal: float noise in
#: a sum of terms (e.g. 425.9920843314365 vs 425.99208433143644 token/s) must not make a point
#: "better" (chapter 8's budget table once picked a dominated B = 80 over B = 61 this way).
PARETO_RTOL = 1e-9


def pareto_mask(latency, throughput, rtol: float = PARETO_RTOL) -> np.ndarray:
    """Boolean mask of points no other point beats on both lower latency and higher throughput.

    A point is on the front only if its throughput exceeds that of every point with lower (or
    equal) latency by more than the relative tolerance ``rtol``: of several points with the same
    throughput (within ``rtol``), only the lowest-latency one is kept. O(n log n): sort by
    latency, keep points above the running best throughput."""
    lat = np.asarray(latency, dtype=float).ravel()
    thr = np.asarray(throughput, dtype=float).ravel()
    if lat.shape != thr.shape:
        raise ValueError(f"latency and throughput must have the same size, got {lat.size} and "
                         f"{thr.size}")
    r = float(check_nonneg("rtol", rtol, allow_array=False))
    order = np.lexsort((-thr, lat))
    best = np.maximum.accumulate(thr[order])
    prev = np.concatenate(([-np.inf], best[:-1]))
    margin = np.where(np.isfinite(prev), r * np.abs(prev), 0.0)
    keep = thr[order] > prev + margin
    mask = np.zeros(lat.size, dtype=bool)
    mask[order[keep]] = True
    return mask


def pareto_frontier(model, seq_len, n_chips, chip, weights="int8", kv="int8", compute="bf16",
                    batch_sizes=None, params=None, hbm_per_chip=None, ici=False,
                    wrap=None) -> Frontier:
    """Latency and tokens/s/chip for every batch 1..B_max that fits (fixes the book code's
    stride-4 truncation), with the Pareto mask. Book: sec-07-explorer, sec-08-pareto."""
    m = served_model(model, params)
    bmax = max_batch_size(m, seq_len, n_chips, chip, weights, kv, hbm_per_chip)
    if bmax < 1:
        need = m.params * bytes_per_elem(weights) + float(kv_bytes_per_seq(m, seq_len, kv))
        raise Infeasible(f"not even one sequence of {seq_len} tokens fits: needs {fmt_bytes(need)}",
                         needed=need)
    if batch_sizes is None:
        b = np.arange(1, bmax + 1, dtype=float)
    else:
        b = np.asarray(check_positive("batch_sizes", batch_sizes), dtype=float).ravel()
        b = b[b <= bmax]
        if b.size == 0:
            raise Infeasible(f"no batch size in batch_sizes fits; the largest that fits is {bmax}")
    st = decode_step_time(m, b, seq_len, n_chips, chip, weights, kv, compute, ici=ici,
                          check_memory=False, hbm_per_chip=hbm_per_chip, wrap=wrap)
    n = np.full_like(b, float(n_chips))
    lat = np.asarray(st.total_s)
    thr = b / (n * lat)
    return Frontier(b, n, lat, thr, np.asarray(st.kv_s), np.broadcast_to(st.param_s, b.shape),
                    np.asarray(st.flops_s), np.broadcast_to(st.ici_s, b.shape),
                    pareto_mask(lat, thr))


def serving_grid(model, seq_len, chip, batches=None, chip_counts=V5E_SLICES,
                 weight_dtypes=("bf16", "int8", "int4"), kv_dtypes=("bf16", "int8"),
                 compute="bf16", params=None, ici=True, hbm_per_chip=None, wrap=None) -> Frontier:
    """All (batch, chips, weight dtype, KV dtype) serving points, vectorised, with the ICI term of
    1-D model parallelism over the chips; infeasible (out-of-memory) points are dropped. The
    Pareto front picks, for each latency, the best throughput per chip. Book: sec-07-explorer."""
    m = served_model(model, params)
    chip = hardware.get(chip)
    if batches is None:
        batches = np.arange(1, 1025)
    b = np.asarray(check_positive("batches", batches), dtype=float).ravel()
    nc = np.asarray(check_positive("chip_counts", chip_counts), dtype=float).ravel()
    wb = np.array([bytes_per_elem(d) for d in weight_dtypes])
    kb = np.array([bytes_per_elem(d) for d in kv_dtypes])
    B, N, WI, KI = np.meshgrid(b, nc, np.arange(wb.size), np.arange(kb.size), indexing="ij")
    B, N, WI, KI = B.ravel(), N.ravel(), WI.ravel(), KI.ravel()
    hbm = chip.hbm_bytes if hbm_per_chip is None else float(hbm_per_chip)
    w = chip.hbm_bw
    p_bytes = m.params * wb[WI]
    kv_seq = float(seq_len) * m.kv_elems_per_token * kb[KI]
    fits = p_bytes + B * kv_seq <= N * hbm
    B, N, WI, KI, p_bytes, kv_seq = (a[fits] for a in (B, N, WI, KI, p_bytes, kv_seq))
    kv_s = B * kv_seq / (N * w)
    param_s = p_bytes / (N * w)
    flops_s = 2 * B * m.active_params / (N * chip.peak(compute))
    ici_s = ici_time_1d(m, B, N, chip, wrap=wrap) if ici else np.zeros_like(B)
    lat = kv_s + np.maximum(np.maximum(flops_s, param_s), ici_s)
    thr = B / (N * lat)
    labels = {"weights": np.asarray(weight_dtypes)[WI], "kv": np.asarray(kv_dtypes)[KI]}
    return Frontier(B, N, lat, thr, kv_s, param_s, flops_s, np.asarray(ici_s),
                    pareto_mask(lat, thr), labels)


# ---- sharding for serving -------------------------------------------------------------------

def max_model_parallelism(F, chip, n_axes=1):
    """Largest model-parallel degree that stays compute-bound: n_axes·F/α, α = C/W_ici (v5e 2189)."""
    chip = hardware.get(chip)
    f = check_positive("F", F)
    a = check_positive("n_axes", n_axes)
    hardware.check_n_axes(chip, a)
    return _arr(np.asarray(a) * f / (chip.peak("bf16") / chip.ici_bw_bidi))


def max_model_parallelism_memory_bound(F, batch, chip=None, beta=None):
    """Decode (weight-loading-bound) limit: ICI dominates HBM once Y > F/(β·B), β = W_hbm/W_ici
    (v5e 9.1; the book rounds to 8 — pass ``beta`` to reproduce it)."""
    f = check_positive("F", F)
    b = check_positive("batch", batch)
    if beta is None:
        if chip is None:
            raise ValueError("give a chip (β = W_hbm/W_ici) or beta")
        chip = hardware.get(chip)
        beta = chip.hbm_bw / chip.ici_bw_bidi
    be = check_positive("beta", beta)
    return _arr(f / (np.asarray(be) * b))


def matmul_comm_times(B, D, F, Y, chip, weights="bf16", n_axes=1, compute="bf16") -> dict:
    """Per model-parallel matmul [B,D]·[D,F_Y] on Y chips: T_ici = 2BD/(n_axes·W_ici),
    T_hbm = D·F·b_w/(Y·W_hbm), T_math = 2BDF/(Y·C). Seconds."""
    chip = hardware.get(chip)
    b, d, f, y = (check_positive(n, v) for n, v in (("B", B), ("D", D), ("F", F), ("Y", Y)))
    a = check_positive("n_axes", n_axes)
    hardware.check_n_axes(chip, a)
    return {"t_ici": _arr(2 * np.asarray(b) * d / (np.asarray(a) * chip.ici_bw_bidi)),
            "t_hbm": _arr(np.asarray(d) * f * bytes_per_elem(weights) / (np.asarray(y) * chip.hbm_bw)),
            "t_math": _arr(2 * np.asarray(b) * d * f / (np.asarray(y) * chip.peak(compute)))}


def latency_bound_bytes(n_shards, chip, t_hop=1e-6):
    """Payload below which a collective over ``n_shards`` is latency-bound: n·W_ici,1way·t_hop."""
    chip = hardware.get(chip)
    n = check_positive("n_shards", n_shards)
    t = check_positive("t_hop", t_hop)
    return _arr(np.asarray(n) * chip.ici_link_bw_1way * t)


def collective_is_latency_bound(nbytes, n_shards, chip, t_hop=1e-6):
    """True if (bytes per shard)/W_ici,1way < t_hop (≈1 µs per hop). Book: sec-07-sharding."""
    nb = check_nonneg("nbytes", nbytes)
    return np.asarray(nb) < np.asarray(latency_bound_bytes(n_shards, chip, t_hop))


def kv_shard_layout(n_kv_heads, n_model, batch) -> dict:
    """Shard the KV cache over heads first (up to K ways), then over batch: KV[2, B_Z, S, K_Y, H].
    Returns heads_ways, batch_ways, heads_per_chip, seqs_per_chip."""
    k, y, b = _int("n_kv_heads", n_kv_heads), _int("n_model", n_model), _int("batch", batch)
    heads = math.gcd(k, y)
    rest = y // heads
    if b % rest:
        raise ValueError(f"batch {b} must be divisible by the {rest}-way batch sharding left over "
                         f"after {heads}-way head sharding of {y} chips")
    return {"heads_ways": heads, "batch_ways": rest, "heads_per_chip": k // heads,
            "seqs_per_chip": b // rest}


def two_d_ws_comm_time(B, D, F, X, YZ, chip):
    """2-D weight-stationary comms per MLP (bf16): 2BD/(X·W) + 4BF/(YZ·W), W = W_ici."""
    chip = hardware.get(chip)
    b, d, f, x, yz = (check_positive(n, v) for n, v in (("B", B), ("D", D), ("F", F), ("X", X),
                                                        ("YZ", YZ)))
    w = chip.ici_bw_bidi
    return _arr(2 * np.asarray(b) * d / (np.asarray(x) * w) + 4 * np.asarray(b) * f / (np.asarray(yz) * w))


def one_d_mp_comm_time(B, D, chip, n_axes=None):
    """1-D model parallel comms per MLP (bf16, AllGather + ReduceScatter of [B,D]): 4BD/(n_axes·W).

    ``n_axes=None``: every axis of the chip's torus (3 on v4p/v5p, 2 on v5e/v6e)."""
    chip = hardware.get(chip)
    b, d = check_positive("B", B), check_positive("D", D)
    a = check_positive("n_axes", hardware.network_axes(chip) if n_axes is None else n_axes)
    hardware.check_n_axes(chip, a)
    return _arr(4 * np.asarray(b) * d / (np.asarray(a) * chip.ici_bw_bidi))


def two_d_ws_optimum(D, F, N) -> dict:
    """Best split of N chips for 2-D weight-stationary: X² = D·N/(2F), YZ = N/X."""
    d, f, n = check_positive("D", D), check_positive("F", F), check_positive("N", N)
    x = np.sqrt(np.asarray(d) * n / (2 * np.asarray(f)))
    return {"X": _arr(x), "YZ": _arr(np.asarray(n) / x)}


def two_d_ws_crossover_chips(D, F):
    """2-D beats 1-D (3 axes) once N > 18·F/D (72 for F = 4D; the book prints 81)."""
    d, f = check_positive("D", D), check_positive("F", F)
    return _arr(18 * np.asarray(f) / np.asarray(d))


# ---- serving tricks -------------------------------------------------------------------------

def spec_decode_expected_tokens(accept_rate, gamma):
    """Expected tokens per target pass with γ drafted tokens, i.i.d. acceptance a:
    (1 − a^(γ+1))/(1 − a) (γ + 1 when a = 1)."""
    a = check_nonneg("accept_rate", accept_rate)
    if np.any(np.asarray(a) > 1):
        raise ValueError(f"accept_rate must be in [0, 1], got {accept_rate!r}")
    g = check_nonneg("gamma", gamma)
    a_, g_ = np.asarray(a, float), np.asarray(g, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.where(a_ < 1, (1 - a_ ** (g_ + 1)) / np.where(a_ < 1, 1 - a_, 1), g_ + 1)
    return _arr(e)


def spec_decode_time_per_token(accept_rate, gamma, t_draft, t_verify):
    """Time per generated token: (γ·t_draft + t_verify)/E(a, γ)."""
    td, tv = check_nonneg("t_draft", t_draft), check_positive("t_verify", t_verify)
    e = spec_decode_expected_tokens(accept_rate, gamma)
    return _arr((np.asarray(gamma) * td + tv) / np.asarray(e))


def prefix_saving(prompts, capacity_tokens=None) -> float:
    """Fraction of prefill tokens skipped by a prefix cache when ``prompts`` (lists of token ids)
    arrive in order: a trie of earlier prompts, LRU-evicted to ``capacity_tokens`` (None = no limit)."""
    if not isinstance(prompts, (list, tuple)) or not prompts:
        raise ValueError("prompts must be a non-empty list of token-id lists")
    if capacity_tokens is not None:
        _int("capacity_tokens", capacity_tokens, 0)
    from collections import OrderedDict
    cache: "OrderedDict[tuple, None]" = OrderedDict()   # prefix tuples, LRU order
    saved = total = 0
    for p in prompts:
        if not isinstance(p, (list, tuple)):
            raise TypeError(f"each prompt must be a list of tokens, got {type(p).__name__}")
        p = tuple(p)
        total += len(p)
        hit = 0
        for i in range(len(p), 0, -1):
            if p[:i] in cache:
                hit = i
                break
        saved += hit
        for i in range(1, len(p) + 1):
            cache[p[:i]] = None
            cache.move_to_end(p[:i])
        if capacity_tokens is not None:
            while len(cache) > capacity_tokens:
                cache.popitem(last=False)
    return saved / total if total else 0.0


def qps_per_chip(batch, step_s, decode_len, n_chips):
    """Queries per second per chip: B/(n·T_step·T_gen)."""
    b, t = check_positive("batch", batch), check_positive("step_s", step_s)
    g, n = check_positive("decode_len", decode_len), check_positive("n_chips", n_chips)
    return _arr(np.asarray(b) / (np.asarray(n) * t * g))


def cost_per_million_tokens(tok_per_s_per_chip, usd_per_chip_hour):
    """USD per 1e6 generated tokens: price/(3600·tok/s/chip)·1e6."""
    r = check_positive("tok_per_s_per_chip", tok_per_s_per_chip)
    p = check_nonneg("usd_per_chip_hour", usd_per_chip_hour)
    return _arr(np.asarray(p) / (3600 * np.asarray(r)) * 1e6)


def kv_evictions_per_step(batch, prompt_len, decode_len):
    """Tokens of KV freed per decode step: B/T_gen sequences finish, each T_prompt + T_gen long."""
    b, p, g = (check_positive(n, v) for n, v in (("batch", batch), ("prompt_len", prompt_len),
                                                 ("decode_len", decode_len)))
    return _arr(np.asarray(b) * (np.asarray(p) + g) / np.asarray(g))


def prefill_decode_ratio(prefill_s, decode_step_s, batch, decode_len):
    """Prefill servers per decode server so prefill keeps up: B·T_prefill/(T_step·T_gen)."""
    a, t = check_positive("prefill_s", prefill_s), check_positive("decode_step_s", decode_step_s)
    b, g = check_positive("batch", batch), check_positive("decode_len", decode_len)
    return _arr(np.asarray(b) * a / (np.asarray(t) * g))


# ---- slices and configuration search --------------------------------------------------------

def smallest_slice(n_chips, slices=V5E_SLICES) -> int:
    """Round a chip count up to an available slice size."""
    n = float(check_positive("n_chips", n_chips, allow_array=False))
    for s in sorted(slices):
        if s >= n - 1e-9:
            return int(s)
    raise Infeasible(f"{n:g} chips exceed the largest slice ({max(slices)})", needed=n,
                     available=max(slices))


def min_chips(model, weights="bf16", kv="bf16", batch=0, seq_len=1, chip="v5e",
              hbm_per_chip=None) -> float:
    """Chips needed to hold weights + B·S·KV_tok: (P·b_w + B·S·KV_tok)/HBM (not rounded)."""
    m = served_model(model)
    chip = hardware.get(chip)
    hbm = chip.hbm_bytes if hbm_per_chip is None else float(check_positive("hbm_per_chip", hbm_per_chip))
    extra = 0.0 if not batch else float(batch) * float(kv_bytes_per_seq(m, seq_len, kv))
    return (m.params * bytes_per_elem(weights) + extra) / hbm


def best_config_under_latency(model, chip, seq_len, latency_budget_s, slices=V5E_SLICES,
                              weights="int8", kv="int8", compute="bf16", params=None,
                              ici=False, wrap=None) -> dict:
    """Among slices and batches that fit, the one with the most tokens/s/chip whose decode step
    is within ``latency_budget_s`` (ties → fewer chips). ``ici=True`` counts the 1-D
    model-parallel ICI term (``ici_time_1d``, ``wrap`` as there). Raises Infeasible if none
    qualifies."""
    m = served_model(model, params)
    budget = float(check_positive("latency_budget_s", latency_budget_s, allow_array=False))
    best = None
    for n in sorted(slices):
        try:
            fr = pareto_frontier(m, seq_len, n, chip, weights, kv, compute, ici=ici, wrap=wrap)
        except Infeasible:
            continue
        ok = fr.latency_s <= budget
        if not ok.any():
            continue
        # the best throughput within the budget; among ties (float noise) the lowest latency
        top = np.max(np.where(ok, fr.tok_s_chip, -1))
        tied = ok & (fr.tok_s_chip >= top * (1 - PARETO_RTOL))
        i = int(np.argmin(np.where(tied, fr.latency_s, np.inf)))
        cand = {"n_chips": n, "batch": int(fr.batch[i]), "step_s": float(fr.latency_s[i]),
                "tok_s_chip": float(fr.tok_s_chip[i]), "tok_s": float(fr.tok_s_chip[i] * n)}
        if best is None or cand["tok_s_chip"] > best["tok_s_chip"] * (1 + 1e-9):
            best = cand
    if best is None:
        raise Infeasible(f"no slice in {tuple(slices)} serves {m.name} under {fmt_time(budget)} "
                         f"per step")
    return best


def quantization_table(model, seq_len, n_chips, chip, combos=(("bf16", "bf16"), ("int8", "bf16"),
                       ("int8", "int8"), ("int4", "int8")), batch=None, compute="bf16") -> list:
    """What int8/int4 weights and KV buy: per (weights, kv) the weight bytes, B_crit, the largest
    batch, and the step time / tokens/s/chip at ``batch`` (default: the largest that fits)."""
    rows = []
    m = served_model(model)
    for wd, kd in combos:
        bmax = max_batch_size(m, seq_len, n_chips, chip, wd, kd)
        b = bmax if batch is None else min(int(batch), bmax)
        row = {"weights": wd, "kv": kd, "params_bytes": m.params * bytes_per_elem(wd),
               "kv_bytes_per_seq": float(kv_bytes_per_seq(m, seq_len, kd)),
               "b_crit": critical_batch(chip, wd, compute), "max_batch": bmax, "batch": b}
        if b >= 1:
            st = decode_step_time(m, b, seq_len, n_chips, chip, wd, kd, compute)
            row.update(step_s=float(st.total_s), tok_s_chip=float(st.tokens_per_s_per_chip))
        rows.append(row)
    return rows


# ---- continuous vs static batching ----------------------------------------------------------

def simulate_batching(gen_lens, slots, mode="continuous", step_s=1.0) -> dict:
    """Decode ``gen_lens`` (tokens each request generates, all queued at t = 0) with ``slots``
    concurrent sequences. 'static': a batch starts only when all its sequences have finished;
    'continuous': a finished slot takes the next request at the next step. Prefill ignored.
    Returns steps, time, mean slot utilisation, per-step active counts, finish step per request."""
    if mode not in ("static", "continuous"):
        raise ValueError(f"mode must be 'static' or 'continuous', got {mode!r}")
    g = np.asarray(gen_lens)
    if g.ndim != 1 or g.size == 0 or g.dtype.kind not in "iu" or np.any(g < 1):
        raise ValueError("gen_lens must be a non-empty 1-D array of positive integers")
    s = _int("slots", slots)
    t = float(check_positive("step_s", step_s, allow_array=False))
    finish = np.zeros(g.size, dtype=int)
    active = []
    if mode == "static":
        step = 0
        for i in range(0, g.size, s):
            chunk = g[i:i + s]
            m = int(chunk.max())
            counts = (chunk[None, :] > np.arange(m)[:, None]).sum(axis=1)
            active.extend(counts.tolist())
            finish[i:i + s] = step + chunk
            step += m
    else:
        left = np.zeros(s, dtype=int)
        owner = -np.ones(s, dtype=int)
        nxt, step = 0, 0
        while nxt < g.size or (left > 0).any():
            for j in range(s):
                if left[j] == 0 and nxt < g.size:
                    left[j], owner[j] = g[nxt], nxt
                    nxt += 1
            busy = left > 0
            active.append(int(busy.sum()))
            left[busy] -= 1
            step += 1
            done = busy & (left == 0)
            finish[owner[done]] = step
    act = np.asarray(active)
    return {"steps": int(act.size), "time_s": act.size * t, "utilisation": float(act.mean() / s),
            "active": act, "finish_step": finish, "tokens": int(g.sum())}
