"""Transformer arithmetic: parameters, FLOPs, KV cache and memory of a decoder-only model.

Units: SI (FLOPs as counts, bytes, seconds, FLOPs/s, bytes/s).
Book: chapter 4 (chapters/04_transformers.ipynb, sec-04-*), used by chapters 5-8 and 11-12.

What it models. A decoder-only Transformer described by ``TransformerConfig``: dense or
mixture-of-experts MLPs (routed experts, shared experts, top-k routing, leading dense layers),
multi-head / grouped-query / multi-query attention, DeepSeek-style multi-head latent attention
(MLA, counted in its non-absorbed form), gated (SwiGLU, 3 matrices) or plain (2 matrices) MLPs,
tied or untied embeddings, and a head dimension independent of d_model. The book's letters:

    B batch, T query length, S key/value length, D d_model, F d_ff, L layers,
    N query heads, K KV heads, G = N/K, H head dim, V vocab, E experts, k top-k.

FLOP counting rule (sec-04-contractions): a contraction costs 2 x the product of all distinct
dimensions (shared dimensions counted once); a purely elementwise product has no factor 2.
Forward FLOPs of a weight matmul are 2 x (weights) x (tokens); backward is twice that.

Ignores: FLOPs of norms, activations, softmax, residual adds and the router softmax (O(BTD),
O(BTF), O(BT^2 N)); the input embedding gather (0 FLOPs); communication; the MTP head of
DeepSeek-V3; padding and kernel efficiency. Activation memory uses the book's "c arrays of B·T·D
per layer" model (flash attention assumed: no T^2 score matrices are kept).
"""
from __future__ import annotations

import math
import numbers
from collections import OrderedDict
from dataclasses import dataclass, field, fields

import numpy as np

from . import hardware, memory as _memory
from .units import check_nonneg, check_positive, dtype_bytes, fmt_bytes, fmt_num

__all__ = [
    "TransformerConfig", "TrainingMemory", "InferenceMemory",
    "contraction_flops", "matmul_train_flops", "param_breakdown", "param_count", "moe_params",
    "layer_train_flops", "train_flops", "flops_6nd", "attention_to_matmul_ratio",
    "qkvo_equals_attention_seq_len", "attention_crossover_seq_len", "kv_cache_bytes",
    "attention_arithmetic_intensity", "prefill_compute_bound_seq_len", "attention_bytes",
    "attention_time", "mlp_time", "activation_bytes", "REMAT_POLICIES", "saved_arrays_per_layer",
    "remat_flops_multiplier", "remat_extra_fraction", "mfu", "sharded_matmul_flops",
]


# ---- small validators ---------------------------------------------------------------------

from .units import check_int as _check_int, as_float_or_array as _arr  # noqa: E402


def _check_bool(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


#: Rematerialisation policies: saved B·T·D-sized arrays per layer (book estimates, sec-04-remat),
#: under chapter 4's names; ``memory`` holds the counts under the library's canonical names
#: (none / selective / full).
REMAT_POLICIES: dict[str, float] = {"none": _memory.CH4_SAVED_ARRAYS["none"],
                                    "dots": _memory.CH4_SAVED_ARRAYS["selective"],
                                    "block": _memory.CH4_SAVED_ARRAYS["full"]}
_REMAT_ALIASES = {"everything_saveable": "none", "no": "none", "off": "none",
                  "dots_with_no_batch_dims_saveable": "dots", "big_matmuls": "dots",
                  "save_dots": "dots", "nothing_saveable": "block", "full": "block",
                  "layer": "block"}
#: Optimizer state bytes per parameter (fp32 states).
_OPTIMIZERS = {"adam": 8.0, "adamw": 8.0, "adam_master": 12.0, "momentum": 4.0, "sgd": 0.0}


def _remat_key(policy: str) -> str:
    if not isinstance(policy, str):
        raise TypeError(f"remat policy must be a string, got {type(policy).__name__} {policy!r}")
    key = policy.strip().lower()
    key = _REMAT_ALIASES.get(key, key)
    if key not in REMAT_POLICIES:
        raise ValueError(f"unknown remat policy {policy!r}; allowed: {', '.join(REMAT_POLICIES)} "
                         f"(aliases: {', '.join(_REMAT_ALIASES)})")
    return key


# ---- the config ----------------------------------------------------------------------------

@dataclass(frozen=True)
class TransformerConfig:
    """Hyperparameters of a decoder-only Transformer (book letters in brackets).

    d_model [D], n_layers [L], n_heads [N], n_kv_heads [K], d_ff [F] (the dense MLP width),
    vocab [V], d_head [H] (default D // N; for MLA the value head dim).
    gated_mlp: True = SwiGLU/GeGLU (3 matrices D×F), False = plain MLP (2 matrices).
    n_experts [E] (1 = dense), top_k [k], n_shared_experts (always-on experts),
    d_ff_expert (width of one expert, default d_ff), n_dense_layers (leading layers that keep a
    dense MLP of width d_ff in an MoE model, as in DeepSeek-V3).
    MLA (DeepSeek): kv_lora_rank > 0 switches it on; q_lora_rank (0 = full-rank Q),
    rope_head_dim (decoupled RoPE key/query dim).
    norms_per_layer (RMSNorm/LayerNorm vectors per layer; Gemma-2 has 4), norm_bias (LayerNorm
    with a bias), linear_bias (biases on every projection, GPT-style), pos_emb_len (rows of a
    learned absolute position embedding, 0 = RoPE), final_norm (a norm before the unembedding).
    parallel_block: attention and MLP read the same normalised input and their outputs are
    added (PaLM, GPT-J): the same parameters and FLOPs, but under tensor parallelism one
    gather of the input and one reduction of the summed output per layer instead of two each.
    """

    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    vocab: int
    d_head: int | None = None
    gated_mlp: bool = True
    n_experts: int = 1
    top_k: int = 1
    n_shared_experts: int = 0
    d_ff_expert: int | None = None
    tied_embeddings: bool = False
    name: str = ""
    n_dense_layers: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    rope_head_dim: int = 0
    norms_per_layer: int = 2
    norm_bias: bool = False
    linear_bias: bool = False
    pos_emb_len: int = 0
    final_norm: bool = True
    parallel_block: bool = False
    source: str = field(default="", compare=False)

    def __post_init__(self):
        for nm in ("d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff", "vocab", "n_experts",
                   "top_k"):
            _check_int(nm, getattr(self, nm), 1)
        for nm in ("n_shared_experts", "n_dense_layers", "q_lora_rank", "kv_lora_rank",
                   "rope_head_dim", "norms_per_layer", "pos_emb_len"):
            _check_int(nm, getattr(self, nm), 0)
        for nm in ("gated_mlp", "tied_embeddings", "norm_bias", "linear_bias", "final_norm",
                   "parallel_block"):
            _check_bool(nm, getattr(self, nm))
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__}")
        if self.d_head is None:
            if self.d_model % self.n_heads:
                raise ValueError(
                    f"n_heads={self.n_heads} must divide d_model={self.d_model} when d_head is "
                    f"not given (d_head defaults to d_model // n_heads); pass d_head explicitly")
            object.__setattr__(self, "d_head", self.d_model // self.n_heads)
        else:
            _check_int("d_head", self.d_head, 1)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads={self.n_kv_heads} must divide n_heads={self.n_heads} "
                             f"(each KV head serves G = n_heads / n_kv_heads query heads)")
        if self.top_k > self.n_experts:
            raise ValueError(f"top_k={self.top_k} must be <= n_experts={self.n_experts}")
        if self.n_experts == 1:
            if self.n_shared_experts:
                raise ValueError("n_shared_experts needs n_experts > 1 (a dense model has no "
                                 "shared experts)")
            if self.n_dense_layers:
                raise ValueError("n_dense_layers needs n_experts > 1 (in a dense model every "
                                 "layer is dense)")
        if self.n_dense_layers > self.n_layers:
            raise ValueError(f"n_dense_layers={self.n_dense_layers} must be <= "
                             f"n_layers={self.n_layers}")
        if self.d_ff_expert is None:
            object.__setattr__(self, "d_ff_expert", self.d_ff)
        else:
            _check_int("d_ff_expert", self.d_ff_expert, 1)
        if self.kv_lora_rank == 0 and (self.q_lora_rank or self.rope_head_dim):
            raise ValueError("q_lora_rank and rope_head_dim are MLA settings: they need "
                             "kv_lora_rank > 0")

    # -- derived sizes ------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def group_size(self) -> int:
        """G = N / K, query heads per KV head."""
        return self.n_heads // self.n_kv_heads

    @property
    def attention_kind(self) -> str:
        """'MLA', 'MHA' (K = N), 'MQA' (K = 1) or 'GQA'."""
        if self.is_mla:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    @property
    def n_moe_layers(self) -> int:
        return self.n_layers - self.n_dense_layers if self.is_moe else 0

    @property
    def label(self) -> str:
        return self.name or (f"D={self.d_model}, L={self.n_layers}, N={self.n_heads}, "
                             f"K={self.n_kv_heads}")

    def replace(self, **changes) -> "TransformerConfig":
        """A modified copy (what-if studies). d_head is re-derived unless given."""
        allowed = {f.name for f in fields(self)}
        bad = set(changes) - allowed
        if bad:
            raise ValueError(f"unknown TransformerConfig field(s) {sorted(bad)}; "
                             f"allowed: {sorted(allowed)}")
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        if ("d_model" in changes or "n_heads" in changes) and "d_head" not in changes \
                and self.d_head == self.d_model // self.n_heads and not self.is_mla:
            kw["d_head"] = None
        if "d_ff" in changes and "d_ff_expert" not in changes and self.d_ff_expert == self.d_ff:
            kw["d_ff_expert"] = None
        kw.update(changes)
        return TransformerConfig(**kw)

    # -- per-layer pieces ---------------------------------------------------------------
    def _attn_mats(self) -> dict[str, int]:
        """Weights of the attention projections of one layer, by role."""
        D, N, K, H = self.d_model, self.n_heads, self.n_kv_heads, self.d_head
        if not self.is_mla:
            return {"attn_q": D * N * H, "attn_k": D * K * H, "attn_v": D * K * H,
                    "attn_o": N * H * D}
        R, rq, rkv = self.rope_head_dim, self.q_lora_rank, self.kv_lora_rank
        q = D * rq + rq * N * (H + R) if rq else D * N * (H + R)
        # kv_a maps D -> latent (rkv) plus the shared RoPE key (R); kv_b expands the latent
        # into per-head no-RoPE keys (H) and values (H).
        return {"attn_q": q, "attn_k": D * (rkv + R) + rkv * N * H, "attn_v": rkv * N * H,
                "attn_o": N * H * D}

    def _attn_bias(self) -> int:
        if not self.linear_bias or self.is_mla:
            return 0
        return (self.n_heads + 2 * self.n_kv_heads) * self.d_head + self.d_model

    def _mlp_mats(self, width: int) -> int:
        return (3 if self.gated_mlp else 2) * self.d_model * width

    def _mlp_bias(self, width: int) -> int:
        if not self.linear_bias:
            return 0
        return (2 if self.gated_mlp else 1) * width + self.d_model

    def _norm_vec(self) -> int:
        return 2 if self.norm_bias else 1

    # -- parameters ---------------------------------------------------------------------
    def params_by_part(self) -> "OrderedDict[str, int]":
        """Total parameters by part (all layers summed), in model order.

        Keys (always present, possibly 0): embedding, pos_embedding, attn_q, attn_k, attn_v,
        attn_o, mlp (dense MLPs + all experts), router, norms, biases, unembedding.
        """
        L, D = self.n_layers, self.d_model
        out: OrderedDict[str, int] = OrderedDict()
        out["embedding"] = self.vocab * D
        out["pos_embedding"] = self.pos_emb_len * D
        for k, v in self._attn_mats().items():
            out[k] = L * v
        n_dense = L - self.n_moe_layers
        mlp = n_dense * self._mlp_mats(self.d_ff)
        mlp_bias = n_dense * self._mlp_bias(self.d_ff)
        router = 0
        if self.is_moe:
            n_exp = self.n_experts + self.n_shared_experts
            mlp += self.n_moe_layers * n_exp * self._mlp_mats(self.d_ff_expert)
            mlp_bias += self.n_moe_layers * n_exp * self._mlp_bias(self.d_ff_expert)
            router = self.n_moe_layers * D * self.n_experts
        out["mlp"] = mlp
        out["router"] = router
        per_norm = self._norm_vec()
        norms = L * self.norms_per_layer * D * per_norm
        if self.final_norm:
            norms += D * per_norm
        if self.is_mla:  # RMSNorms on the compressed latents
            norms += L * (self.q_lora_rank + self.kv_lora_rank) * per_norm
        out["norms"] = norms
        out["biases"] = L * self._attn_bias() + mlp_bias
        out["unembedding"] = 0 if self.tied_embeddings else self.vocab * D
        return out

    def params(self) -> int:
        """Total parameter count."""
        return int(sum(self.params_by_part().values()))

    def active_params(self) -> int:
        """Parameters used by one token (MoE: only k routed + shared experts). Dense: params()."""
        p = self.params_by_part()
        if not self.is_moe:
            return self.params()
        per_expert = self._mlp_mats(self.d_ff_expert) + self._mlp_bias(self.d_ff_expert)
        unused = self.n_moe_layers * (self.n_experts - self.top_k) * per_expert
        return int(sum(p.values()) - unused)

    def matmul_params(self, active: bool = True) -> int:
        """Weights that take part in matmuls (attention projections, MLPs, router, unembedding
        — the unembedding counts even when tied); excludes the embedding gather, norms, biases.
        ``active=True`` counts only the experts one token uses."""
        _check_bool("active", active)
        p = self.params_by_part()
        n = sum(p[k] for k in ("attn_q", "attn_k", "attn_v", "attn_o", "mlp", "router"))
        n += self.vocab * self.d_model
        if active and self.is_moe:
            n -= self.n_moe_layers * (self.n_experts - self.top_k) * self._mlp_mats(self.d_ff_expert)
        return int(n)

    def param_bytes(self, dtype: str = "bf16") -> float:
        """Bytes of all parameters stored in ``dtype``."""
        return self.params() * dtype_bytes(dtype)

    # -- FLOPs --------------------------------------------------------------------------
    def attention_flops_per_token(self, seq_len, causal: bool = True):
        """Forward FLOPs of the dot-product attention core (QK^T and PV), per token, all layers.

        A token at position t attends to S_eff keys: S_eff = seq_len without a mask (the book's
        count, 4·N·H·S per layer), or the mean (seq_len + 1) / 2 with causal block skipping.
        Accepts an array of seq_len.
        """
        t = check_positive("seq_len", seq_len)
        _check_bool("causal", causal)
        s_eff = (t + 1) / 2 if causal else t
        N, H, R = self.n_heads, self.d_head, self.rope_head_dim
        per_key = 2 * N * (H + R) + 2 * N * H  # QK^T over (H+R) dims, PV over H dims
        return _arr(self.n_layers * per_key * s_eff)

    def flops_by_part(self, seq_len, causal: bool = True) -> "OrderedDict[str, float]":
        """Forward FLOPs per token, by part: attn_qkvo, attn_core, mlp, router, unembed."""
        p = self.params_by_part()
        mlp = p["mlp"]
        if self.is_moe:
            mlp -= self.n_moe_layers * (self.n_experts - self.top_k) * self._mlp_mats(self.d_ff_expert)
        out: OrderedDict[str, float] = OrderedDict()
        out["attn_qkvo"] = 2.0 * sum(p[k] for k in ("attn_q", "attn_k", "attn_v", "attn_o"))
        out["attn_core"] = self.attention_flops_per_token(seq_len, causal)
        out["mlp"] = 2.0 * mlp
        out["router"] = 2.0 * p["router"]
        out["unembed"] = 2.0 * self.vocab * self.d_model
        return out

    def flops_per_token(self, seq_len, causal: bool = True, backward: bool = False):
        """FLOPs per token: forward, or forward + backward (= 3 × forward) with backward=True."""
        _check_bool("backward", backward)
        parts = self.flops_by_part(seq_len, causal)
        total = sum(parts.values())
        return _arr((3 if backward else 1) * np.asarray(total))

    def forward_flops(self, batch_tokens, seq_len, causal: bool = True):
        """Forward FLOPs for ``batch_tokens`` tokens in sequences of ``seq_len``."""
        n = check_positive("batch_tokens", batch_tokens)
        return _arr(n * np.asarray(self.flops_per_token(seq_len, causal)))

    def train_flops(self, batch_tokens, seq_len, causal: bool = True):
        """Forward + backward FLOPs: ≈ 6·P_matmul·tokens + 3 × the attention core."""
        n = check_positive("batch_tokens", batch_tokens)
        return _arr(n * np.asarray(self.flops_per_token(seq_len, causal, backward=True)))

    # -- KV cache and memory ------------------------------------------------------------
    def kv_elems_per_token(self) -> int:
        """Cached elements per token, all layers: 2·L·K·H (MLA: L·(latent + RoPE dim))."""
        if self.is_mla:
            return self.n_layers * (self.kv_lora_rank + self.rope_head_dim)
        return 2 * self.n_layers * self.n_kv_heads * self.d_head

    def kv_bytes_per_token(self, dtype: str = "bf16") -> float:
        """KV-cache bytes per token: 2·L·K·H·b."""
        return self.kv_elems_per_token() * dtype_bytes(dtype)

    def kv_cache_bytes(self, batch, seq_len, dtype: str = "bf16"):
        """KV-cache bytes of ``batch`` sequences of ``seq_len`` tokens: 2·B·S·L·K·H·b."""
        b = check_positive("batch", batch)
        s = check_positive("seq_len", seq_len)
        return _arr(b * s * self.kv_bytes_per_token(dtype))

    def training_memory(self, batch_tokens, seq_len=None, param_dtype: str = "bf16",
                        optimizer: str = "adam", remat: str = "none",
                        grad_dtype: str | None = None, act_dtype: str = "bf16"):
        """Memory of one un-sharded training replica, by part (see ``TrainingMemory``).

        optimizer: 'adam' (2 fp32 states, 8 B/param), 'adam_master' (+ fp32 master copy,
        12 B/param), 'momentum' (4), 'sgd' (0). remat: 'none' (≈20 saved B·T·D arrays per
        layer), 'dots' (≈7, big matmul outputs only), 'block' (1, the layer input).
        ``seq_len`` is accepted for symmetry; the activation model does not depend on it.
        """
        n_tok = check_positive("batch_tokens", batch_tokens, allow_array=False)
        if seq_len is not None:
            check_positive("seq_len", seq_len, allow_array=False)
        if not isinstance(optimizer, str) or optimizer.lower() not in _OPTIMIZERS:
            raise ValueError(f"unknown optimizer {optimizer!r}; allowed: {', '.join(_OPTIMIZERS)}")
        policy = _remat_key(remat)
        st = _memory.state_bytes(self.params(), dtype_bytes(param_dtype),
                                 dtype_bytes(grad_dtype or param_dtype),
                                 _OPTIMIZERS[optimizer.lower()])
        width = _memory.saved_width(policy, self.d_model, activation_model="ch4")
        return TrainingMemory(
            params=st["params"], grads=st["grads"], optimizer=st["optimizer"],
            activations=_memory.activation_bytes(n_tok, width, self.n_layers,
                                                 dtype_bytes(act_dtype)),
            remat=policy, optimizer_name=optimizer.lower())

    def inference_memory(self, batch, seq_len, param_dtype: str = "bf16", kv_dtype: str = "bf16"):
        """Weights + KV cache for ``batch`` sequences of ``seq_len`` tokens."""
        return InferenceMemory(params=self.param_bytes(param_dtype),
                               kv_cache=float(self.kv_cache_bytes(batch, seq_len, kv_dtype)))

    def summary(self) -> dict:
        """A one-row dict for tables (Chinese-free keys)."""
        return {"name": self.label, "L": self.n_layers, "D": self.d_model, "F": self.d_ff,
                "N": self.n_heads, "K": self.n_kv_heads, "H": self.d_head, "V": self.vocab,
                "E": self.n_experts, "k": self.top_k, "params": self.params(),
                "active": self.active_params(), "kv_per_token_bf16": self.kv_bytes_per_token()}


# ---- result dataclasses ---------------------------------------------------------------------

@dataclass(frozen=True)
class TrainingMemory:
    """Bytes of one training replica by part (no sharding)."""

    params: float
    grads: float
    optimizer: float
    activations: float
    remat: str = "none"
    optimizer_name: str = "adam"

    @property
    def total(self) -> float:
        return self.params + self.grads + self.optimizer + self.activations

    def as_dict(self) -> "OrderedDict[str, float]":
        return OrderedDict([("params", self.params), ("grads", self.grads),
                            ("optimizer", self.optimizer), ("activations", self.activations),
                            ("total", self.total)])

    def _rows(self):
        return [("参数", self.params), ("梯度", self.grads),
                (f"优化器状态（{self.optimizer_name}）", self.optimizer),
                (f"激活值（重计算策略 {self.remat}）", self.activations), ("合计", self.total)]

    def __str__(self):
        return "\n".join(f"{k:<24}{fmt_bytes(v)}" for k, v in self._rows())

    __repr__ = __str__

    def _repr_html_(self):
        rows = "".join(f"<tr><td>{k}</td><td>{fmt_bytes(v)}</td></tr>" for k, v in self._rows())
        return f"<table><caption>每个副本的训练内存</caption>{rows}</table>"


@dataclass(frozen=True)
class InferenceMemory:
    """Bytes needed to serve: weights and KV cache."""

    params: float
    kv_cache: float

    @property
    def total(self) -> float:
        return self.params + self.kv_cache

    def as_dict(self):
        return OrderedDict([("params", self.params), ("kv_cache", self.kv_cache),
                            ("total", self.total)])

    def __str__(self):
        return (f"参数 {fmt_bytes(self.params)} + KV 缓存 {fmt_bytes(self.kv_cache)} = "
                f"{fmt_bytes(self.total)}")

    __repr__ = __str__


# ---- module-level functions (the spec's API) ---------------------------------------------

#: name → TransformerConfig resolver, registered by ``scaling_lib.models`` when it is imported
#: (the presets sit above this module: models imports transformer, never the other way round)
_PRESET_RESOLVER = None


def register_presets(resolver) -> None:
    """Let the module-level functions accept preset names (``models`` calls this)."""
    global _PRESET_RESOLVER
    if not callable(resolver):
        raise TypeError("resolver must be callable (name -> TransformerConfig)")
    _PRESET_RESOLVER = resolver


def _cfg(cfg) -> TransformerConfig:
    if isinstance(cfg, TransformerConfig):
        return cfg
    if isinstance(cfg, str):
        if _PRESET_RESOLVER is None:
            raise TypeError(f"cfg {cfg!r} is a preset name: import scaling_lib.models (or pass "
                            f"models.get({cfg!r}))")
        return _PRESET_RESOLVER(cfg)
    raise TypeError(f"cfg must be a TransformerConfig or a preset name, got "
                    f"{type(cfg).__name__} {cfg!r}")


def _parse_spec(spec: str):
    if not isinstance(spec, str) or "->" not in spec:
        raise ValueError(f"spec must be an einsum string like 'np,pm->nm', got {spec!r}")
    lhs, out = spec.replace(" ", "").split("->")
    ops = lhs.split(",")
    if len(ops) != 2 or not all(ops):
        raise ValueError(f"spec must have exactly two operands, got {spec!r}")
    for s in ops + [out]:
        if not s.isalpha() and s != "":
            raise ValueError(f"einsum dims must be letters, got {s!r} in {spec!r}")
        if len(set(s)) != len(s):
            raise ValueError(f"repeated dim in operand {s!r} of {spec!r} (traces not supported)")
    bad = set(out) - set(ops[0]) - set(ops[1])
    if bad:
        raise ValueError(f"output dims {sorted(bad)} appear in no operand of {spec!r}")
    return ops[0], ops[1], out


def contraction_flops(spec: str, sizes: dict) -> float:
    """FLOPs of the two-operand einsum ``spec`` with dimension ``sizes``.

    2 × the product of all distinct dims (each shared dim once); no factor 2 when nothing is
    contracted (a purely elementwise/outer product). Book: eq-04-contraction.
    """
    a, b, out = _parse_spec(spec)
    if not isinstance(sizes, dict):
        raise TypeError(f"sizes must be a dict of dim -> size, got {type(sizes).__name__}")
    dims = set(a) | set(b)
    missing = dims - set(sizes)
    if missing:
        raise KeyError(f"sizes lacks dims {sorted(missing)} used by {spec!r}")
    prod = 1.0
    for d in dims:
        _check_int(f"sizes[{d!r}]", sizes[d], 1)
        prod *= sizes[d]
    contracted = (set(a) | set(b)) - set(out)
    return float(2 * prod if contracted else prod)


def matmul_train_flops(n, p, m):
    """(forward, backward, total) FLOPs of C[N,M] = A[N,P]·W[P,M] in training:
    (2NPM, 4NPM, 6NPM). Book: eq-04-fwd-bwd."""
    n, p, m = (check_positive(nm, v) for nm, v in (("n", n), ("p", p), ("m", m)))
    f = 2 * np.asarray(n) * p * m
    return _arr(f), _arr(2 * f), _arr(3 * f)


def sharded_matmul_flops(batch, d_model, d_ff, mesh: dict, sharded_axes=("X", "Y")):
    """P4.2: (total executed, per chip) FLOPs of A[B_X, D_Y]·W[D_Y, F] on ``mesh``.

    Axes not in ``sharded_axes`` replicate the work: total = 2BDF × (product of unused axes);
    per chip = 2BDF / (product of used axes).
    """
    b, d, f = (check_positive(nm, v, allow_array=False)
               for nm, v in (("batch", batch), ("d_model", d_model), ("d_ff", d_ff)))
    if not isinstance(mesh, dict) or not mesh:
        raise TypeError("mesh must be a non-empty dict of axis name -> size, e.g. {'X': 4}")
    for k, v in mesh.items():
        _check_int(f"mesh[{k!r}]", v, 1)
    unknown = set(sharded_axes) - set(mesh)
    if unknown:
        raise KeyError(f"sharded axes {sorted(unknown)} are not mesh axes {list(mesh)}")
    ideal = 2 * b * d * f
    used = math.prod(mesh[a] for a in sharded_axes)
    unused = math.prod(v for a, v in mesh.items() if a not in sharded_axes)
    return ideal * unused, ideal / used


def param_breakdown(cfg) -> dict:
    """Parameters by the spec's coarse parts: mlp, attn, norm, embed, unembed (sum = total)."""
    p = _cfg(cfg).params_by_part()
    c = _cfg(cfg)
    attn_bias = c.n_layers * c._attn_bias()
    return {"mlp": p["mlp"] + p["router"] + p["biases"] - attn_bias,
            "attn": p["attn_q"] + p["attn_k"] + p["attn_v"] + p["attn_o"] + attn_bias,
            "norm": p["norms"], "embed": p["embedding"] + p["pos_embedding"],
            "unembed": p["unembedding"]}


def param_count(cfg, active_only: bool = False) -> int:
    """Total (or, with ``active_only``, per-token active) parameters."""
    c = _cfg(cfg)
    return c.active_params() if _check_bool("active_only", active_only) else c.params()


def moe_params(cfg) -> tuple:
    """(total, active) parameters."""
    c = _cfg(cfg)
    return c.params(), c.active_params()


def layer_train_flops(cfg, batch, seq, kv_seq=None) -> dict:
    """Training FLOPs (forward × 3) of ONE average layer for ``batch`` sequences of ``seq``
    queries attending to ``kv_seq`` keys (default seq; no causal saving, as in the book).
    Keys: mlp, qkvo, attention, total."""
    c = _cfg(cfg)
    b = check_positive("batch", batch)
    t = check_positive("seq", seq)
    s = t if kv_seq is None else check_positive("kv_seq", kv_seq)
    parts = c.flops_by_part(1)
    tok = b * t
    mlp = 3 * tok * (parts["mlp"] + parts["router"]) / c.n_layers
    qkvo = 3 * tok * parts["attn_qkvo"] / c.n_layers
    attn = 3 * tok * c.attention_flops_per_token(s, causal=False) / c.n_layers
    return {"mlp": _arr(mlp), "qkvo": _arr(qkvo), "attention": _arr(attn),
            "total": _arr(mlp + qkvo + attn)}


def train_flops(cfg, n_tokens, seq_len=None, include_attention: bool = True,
                include_unembed: bool = True, causal: bool = False):
    """Training FLOPs for ``n_tokens`` tokens: 6·P_matmul(active)·n_tokens (+ attention core,
    3 × 4·N·H·S per token per layer, needs ``seq_len``). Book counts attention without the
    causal saving (causal=False)."""
    c = _cfg(cfg)
    n = check_positive("n_tokens", n_tokens)
    _check_bool("include_attention", include_attention)
    _check_bool("include_unembed", include_unembed)
    p = c.matmul_params(active=True)
    if not include_unembed:
        p -= c.vocab * c.d_model
    total = 6.0 * p * np.asarray(n)
    if include_attention:
        if seq_len is None:
            raise ValueError("include_attention=True needs seq_len (or pass "
                             "include_attention=False for the pure 6·P·tokens rule)")
        total = total + 3 * np.asarray(n) * c.attention_flops_per_token(seq_len, causal)
    return _arr(total)


def flops_6nd(n_params, n_tokens):
    """The rule of thumb 6 · P · n_tokens."""
    return _arr(6 * check_positive("n_params", n_params) * check_positive("n_tokens", n_tokens))


def attention_to_matmul_ratio(seq_len, cfg):
    """Attention-core FLOPs / (QKVO + MLP) FLOPs per layer, no causal saving.
    Exactly T/(8D) for an MHA gated model with F = 4D and N·H = D. Accepts arrays of seq_len."""
    c = _cfg(cfg)
    parts = c.flops_by_part(1)
    matmul = parts["attn_qkvo"] + parts["mlp"] + parts["router"]
    return _arr(c.attention_flops_per_token(seq_len, causal=False) / matmul)


def attention_crossover_seq_len(cfg) -> float:
    """Context length at which attention FLOPs equal the layer's matmul FLOPs (≈ 8D)."""
    c = _cfg(cfg)
    return float(1.0 / attention_to_matmul_ratio(1.0, c))


def qkvo_equals_attention_seq_len(d_model):
    """T at which the attention core equals the QKVO projections (MHA, N·H = D): 2D."""
    return _arr(2 * check_positive("d_model", d_model))


def kv_cache_bytes(cfg, seq_len, batch=1, bytes_per_elem=2):
    """KV cache bytes 2·B·S·L·K·H·b (``bytes_per_elem`` a number or a dtype name)."""
    c = _cfg(cfg)
    b = dtype_bytes(bytes_per_elem) if isinstance(bytes_per_elem, str) else \
        check_positive("bytes_per_elem", bytes_per_elem, allow_array=False)
    return _arr(check_positive("batch", batch) * check_positive("seq_len", seq_len)
                * c.kv_elems_per_token() * b)


def attention_arithmetic_intensity(t, s, g=1):
    """FLOPs per byte of the attention core in bf16: T·S·G / (T·G + S). Book: eq-04-attn-ai."""
    t, s, g = check_positive("t", t), check_positive("s", s), check_positive("g", g)
    return _arr(t * s * g / (t * g + s))


def prefill_compute_bound_seq_len(chip, g=1, dtype: str = "bf16"):
    """Smallest T (= S) for which prefill attention is compute-bound: (G+1)/G · C/W_hbm."""
    g = check_positive("g", g)
    return _arr((g + 1) / g * hardware.critical_intensity(chip, dtype=dtype))


def attention_bytes(cfg, batch, t, s, bytes_per_elem=2):
    """HBM bytes of one layer's attention core: read Q, write O (B·T·N·H each), read K and V
    (B·S·K·H each)."""
    c = _cfg(cfg)
    b, t, s = check_positive("batch", batch), check_positive("t", t), check_positive("s", s)
    e = check_positive("bytes_per_elem", bytes_per_elem, allow_array=False)
    H = c.d_head
    return _arr(e * (2 * b * t * c.n_heads * H + 2 * b * s * c.n_kv_heads * H))


def attention_time(cfg, batch, t, s, chip, dtype: str = "bf16"):
    """Roofline time max(FLOPs/C, bytes/W_hbm) of one layer's attention core (4·B·T·S·N·H)."""
    c = _cfg(cfg)
    chip = hardware.get(chip)
    b, tt, ss = check_positive("batch", batch), check_positive("t", t), check_positive("s", s)
    flops = 4 * b * tt * ss * c.n_heads * c.d_head
    nbytes = attention_bytes(c, b, tt, ss, dtype_bytes(dtype))
    return _arr(np.maximum(flops / chip.peak(dtype), nbytes / chip.hbm_bw))


def mlp_time(cfg, batch_tokens, chip, dtype: str = "bf16"):
    """Roofline time of one layer's MLP block for ``batch_tokens`` tokens: FLOPs 2·BT·(MLP
    weights); bytes = weights + input and output activations (B·T·D each)."""
    c = _cfg(cfg)
    chip = hardware.get(chip)
    n = check_positive("batch_tokens", batch_tokens)
    e = dtype_bytes(dtype)
    if c.is_moe:
        per = c._mlp_mats(c.d_ff_expert)
        used = np.minimum(c.n_experts, n * c.top_k)   # distinct experts touched
        w = (used + c.n_shared_experts) * per
        flops = 2 * n * (c.top_k + c.n_shared_experts) * per
    else:
        w = c._mlp_mats(c.d_ff)
        flops = 2 * n * w
    nbytes = e * (w + 2 * n * c.d_model)
    return _arr(np.maximum(flops / chip.peak(dtype), nbytes / chip.hbm_bw))


def activation_bytes(n_tokens, d_model, n_layers, saved_per_layer=20.0, bytes_per_elem=2.0):
    """Saved activations for the backward pass: c · B·T · D · L · b (book: c ≈ 20 / 7 / 1);
    ``memory.activation_bytes`` with a width of c·D."""
    width = check_positive("saved_per_layer", saved_per_layer) * check_positive("d_model", d_model)
    return _memory.activation_bytes(check_positive("n_tokens", n_tokens), width,
                                    check_positive("n_layers", n_layers),
                                    check_positive("bytes_per_elem", bytes_per_elem))


def saved_arrays_per_layer(policy: str) -> float:
    """The book's count of saved B·T·D arrays per layer for a remat policy."""
    return REMAT_POLICIES[_remat_key(policy)]


def remat_extra_fraction(cfg, seq_len):
    """Extra training FLOPs of the 'dots' policy (recompute the attention core forward,
    4·N·H·T per token per layer) as a fraction of the layer's training FLOPs. Equals
    4T / (96D + 12T) for F = 4D, N·H = D (P4.6)."""
    c = _cfg(cfg)
    parts = c.flops_by_part(seq_len, causal=False)
    layer = parts["attn_qkvo"] + parts["attn_core"] + parts["mlp"] + parts["router"]
    return _arr(np.asarray(parts["attn_core"]) / (3 * np.asarray(layer)))


def remat_flops_multiplier(policy: str, cfg=None, seq_len=None):
    """Training-FLOPs multiplier of a remat policy: 'none' 1, 'block' 8/6 (one extra forward),
    'dots' 1 + remat_extra_fraction(cfg, seq_len) (needs both)."""
    key = _remat_key(policy)
    if key == "none":
        return 1.0
    if key == "block":
        return 8.0 / 6.0
    if cfg is None or seq_len is None:
        raise ValueError("policy 'dots' recomputes the attention core, so its cost depends on "
                         "the model and context: pass cfg= and seq_len=")
    return _arr(1.0 + remat_extra_fraction(cfg, seq_len))


def mfu(model_flops, seconds, n_chips, peak_flops):
    """Model FLOPs utilisation: model FLOPs / (chips × seconds × peak FLOPs/s)."""
    return _arr(check_nonneg("model_flops", model_flops)
                / (check_positive("seconds", seconds) * check_positive("n_chips", n_chips)
                   * check_positive("peak_flops", peak_flops)))
