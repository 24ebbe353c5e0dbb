"""A minimal LLaMA-style decoder in plain JAX, to check the arithmetic of ``transformer``.

Units: none (arrays). Book: chapter 4 (sec-04-jax-model); the inference chapter reuses the
KV-cache path; the training chapter reuses ``loss_fn`` and the remat policies.

Only notebooks and tests import this module (``import scaling_lib`` never imports jax).

Model: token embedding → L × [RMSNorm → GQA attention with RoPE → residual, RMSNorm → gated
(SwiGLU) or plain (GELU) MLP → residual] → final RMSNorm → unembedding (tied or untied).
Supported configs: dense, standard attention (MHA/GQA/MQA), no biases, no learned positions,
``norms_per_layer == 2`` (MoE, MLA and GPT-style biases are counted by ``transformer`` but not
built here; ``check_supported`` says why).

Parameters are a plain dict pytree; per-layer weights are stacked on a leading layer axis:

    embed [V, D]            layers/attn_norm [L, D]   layers/wq [L, D, N, H]
    layers/wk [L, D, K, H]  layers/wv [L, D, K, H]   layers/wo [L, N, H, D]
    layers/mlp_norm [L, D]  layers/w_gate [L, D, F] (gated only)   layers/w_up [L, D, F]
    layers/w_down [L, F, D] final_norm [D] (if cfg.final_norm)     unembed [D, V] (untied)

so ``param_count(params) == cfg.params()`` exactly.

Public functions:

* ``init_params(cfg, key, dtype=jnp.float32)`` → params; ``param_struct(cfg)`` → the same tree
  of ``ShapeDtypeStruct`` (lower/cost-analyse without allocating).
* ``forward(params, tokens, cfg, kv_cache=None, pos=0, remat=None)`` → logits ``[B, T, V]``;
  with a ``kv_cache`` (from ``init_kv_cache``) it writes this call's keys/values at positions
  ``pos … pos+T-1`` and attends over the cache, returning ``(logits, new_cache)``. One code path
  serves training (no cache), prefill (cache, pos=0, T = prompt length) and decode (cache, T=1).
* ``prefill(params, tokens, cfg, max_len)`` → (logits, cache); ``decode_step(params, token,
  cfg, cache, pos)`` → (logits [B, V], cache); ``generate(params, prompt, cfg, n_new)`` greedy.
* Building blocks: ``rms_norm``, ``rope``, ``attention_block(lp, x, cfg, positions,
  k_cache=None, v_cache=None, cache_pos=0)`` → (out, k_cache, v_cache), ``mlp_block(lp, x, cfg)``,
  ``layer_forward``; ``layer_params(params, i)`` slices layer i.
* ``loss_fn(params, tokens, cfg, remat=None)``: mean next-token cross-entropy.
* ``remat`` is None/'none' (save everything), 'dots' (save matmul outputs:
  ``dots_with_no_batch_dims_saveable``), 'names' (save only the arrays tagged with
  ``checkpoint_name``: the attention output 'attn_out' and the FFN hidden 'ffn_hidden') or
  'block' (save nothing inside a layer: the layer input only), applied with ``jax.checkpoint``
  around each layer.
* ``xla_flops(f, *args)``: FLOPs that XLA's ``cost_analysis()`` reports for ``jax.jit(f)``.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from ..transformer import TransformerConfig

__all__ = ["check_supported", "init_params", "param_count", "param_shapes", "param_struct", "layer_params",
           "rms_norm", "rope", "attention_block", "mlp_block", "layer_forward", "forward",
           "loss_fn", "remat_policy", "init_kv_cache", "prefill", "decode_step", "generate", "xla_flops",
           "REMAT_POLICY_NAMES"]

ROPE_THETA = 10_000.0
NORM_EPS = 1e-6
REMAT_POLICY_NAMES = ("none", "dots", "names", "block")
#: arrays tagged with jax.ad_checkpoint.checkpoint_name; the 'names' policy saves exactly these
SAVED_NAMES = ("attn_out", "ffn_hidden")


def check_supported(cfg: TransformerConfig) -> TransformerConfig:
    """Raise ValueError if ``cfg`` uses a feature this small model does not build."""
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    problems = []
    if cfg.is_moe:
        problems.append("mixture of experts (n_experts > 1)")
    if cfg.is_mla:
        problems.append("multi-head latent attention (kv_lora_rank > 0)")
    if cfg.linear_bias or cfg.norm_bias:
        problems.append("biases (linear_bias / norm_bias)")
    if cfg.pos_emb_len:
        problems.append("learned position embeddings (pos_emb_len > 0)")
    if cfg.norms_per_layer != 2:
        problems.append(f"norms_per_layer={cfg.norms_per_layer} (this model has 2)")
    if problems:
        raise ValueError("jax_model builds dense LLaMA-style decoders only; unsupported: "
                         + "; ".join(problems))
    return cfg


def param_shapes(cfg: TransformerConfig) -> dict:
    """The params pytree as a dict of shapes (no arrays)."""
    check_supported(cfg)
    L, D, N, K, H, F, V = (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_head,
                           cfg.d_ff, cfg.vocab)
    layers = {"attn_norm": (L, D), "wq": (L, D, N, H), "wk": (L, D, K, H), "wv": (L, D, K, H),
              "wo": (L, N, H, D), "mlp_norm": (L, D)}
    if cfg.gated_mlp:
        layers["w_gate"] = (L, D, F)
    layers.update({"w_up": (L, D, F), "w_down": (L, F, D)})
    shapes = {"embed": (V, D), "layers": layers}
    if cfg.final_norm:
        shapes["final_norm"] = (D,)
    if not cfg.tied_embeddings:
        shapes["unembed"] = (D, V)
    return shapes


def init_params(cfg: TransformerConfig, key, dtype=jnp.float32) -> dict:
    """Random parameters: normal(0, 1/sqrt(fan_in)) for matrices, ones for norm scales.

    The numbers are drawn with numpy's generator seeded from ``key`` (deterministic, and much
    faster on CPU than compiling one threefry program per leaf shape).
    """
    import numpy as np

    shapes = param_shapes(cfg)
    if hasattr(key, "dtype") and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    rng = np.random.default_rng(np.asarray(key, dtype=np.uint32).ravel().tolist())
    is_shape = lambda s: isinstance(s, tuple)  # noqa: E731
    flat, treedef = jax.tree_util.tree_flatten(shapes, is_leaf=is_shape)
    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(shapes, is_leaf=is_shape)[0]]
    leaves = []
    for path, shape in zip(paths, flat):
        name = str(path[-1].key)
        if name.endswith("norm"):
            leaves.append(jnp.ones(shape, dtype))
            continue
        if name == "embed":
            fan_in = 1
        elif name == "wo":
            fan_in = shape[1] * shape[2]
        else:
            fan_in = shape[1] if len(shape) > 2 else shape[0]
        w = rng.standard_normal(shape, dtype=np.float32) / np.float32(math.sqrt(fan_in))
        leaves.append(jnp.asarray(w, dtype=dtype))
    return jax.tree_util.tree_unflatten(treedef, leaves)


def param_struct(cfg: TransformerConfig, dtype=jnp.float32) -> dict:
    """The params pytree as ``jax.ShapeDtypeStruct`` leaves (for ``jit(...).lower`` without data)."""
    return jax.tree_util.tree_map(lambda s: jax.ShapeDtypeStruct(s, dtype), param_shapes(cfg),
                                  is_leaf=lambda s: isinstance(s, tuple))


def param_count(params) -> int:
    """Number of scalars in the params pytree."""
    return int(sum(x.size for x in jax.tree_util.tree_leaves(params)))


def layer_params(params: dict, i: int) -> dict:
    """The weights of layer ``i`` (un-stacked)."""
    return {k: v[i] for k, v in params["layers"].items()}


# ---- building blocks ------------------------------------------------------------------------

def rms_norm(x, scale, eps: float = NORM_EPS):
    """RMSNorm over the last axis, computed in float32."""
    x32 = x.astype(jnp.float32)
    y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)
    return (y * scale.astype(jnp.float32)).astype(x.dtype)


def rope(x, positions, theta: float = ROPE_THETA):
    """Rotary position embedding of x[..., T, heads, H] at integer ``positions`` [T] or [B, T]."""
    h = x.shape[-1]
    if h % 2:
        raise ValueError(f"RoPE needs an even head dim, got {h}")
    freqs = theta ** (-jnp.arange(0, h // 2, dtype=jnp.float32) * 2.0 / h)
    ang = positions.astype(jnp.float32)[..., None] * freqs           # [..., T, H/2]
    cos, sin = jnp.cos(ang)[..., None, :], jnp.sin(ang)[..., None, :]  # broadcast over heads
    x1, x2 = jnp.split(x.astype(jnp.float32), 2, axis=-1)
    out = jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
    return out.astype(x.dtype)


def attention_block(lp: dict, x, cfg: TransformerConfig, positions, k_cache=None, v_cache=None,
                    cache_pos=0):
    """Self-attention of one layer (pre-norm input ``x`` [B, T, D], no residual).

    Without a cache, keys are this call's T tokens (causal mask). With ``k_cache``/``v_cache``
    [B, S_max, K, H], the new keys/values are written at ``cache_pos`` and queries attend to all
    cached positions <= their own. Returns (out [B, T, D], k_cache, v_cache).
    """
    B, T, _ = x.shape
    K, G, H = cfg.n_kv_heads, cfg.group_size, cfg.d_head
    q = jnp.einsum("btd,dnh->btnh", x, lp["wq"])
    k = jnp.einsum("btd,dkh->btkh", x, lp["wk"])
    v = jnp.einsum("btd,dkh->btkh", x, lp["wv"])
    q, k = rope(q, positions), rope(k, positions)
    if k_cache is not None:
        k_cache = jax.lax.dynamic_update_slice(k_cache, k.astype(k_cache.dtype),
                                               (0, cache_pos, 0, 0))
        v_cache = jax.lax.dynamic_update_slice(v_cache, v.astype(v_cache.dtype),
                                               (0, cache_pos, 0, 0))
        k_all, v_all = k_cache.astype(x.dtype), v_cache.astype(x.dtype)
        key_pos = jnp.arange(k_cache.shape[1])
    else:
        k_all, v_all, key_pos = k, v, positions
    qg = q.reshape(B, T, K, G, H)                       # N query heads = K groups of G
    logits = jnp.einsum("btkgh,bskh->bkgts", qg, k_all) / math.sqrt(H)
    mask = key_pos[None, :] <= positions[:, None]       # [T, S]: causal / filled-cache mask
    logits = jnp.where(mask, logits.astype(jnp.float32), -jnp.inf)
    probs = jax.nn.softmax(logits, axis=-1).astype(x.dtype)
    o = jnp.einsum("bkgts,bskh->btkgh", probs, v_all).reshape(B, T, K * G, H)
    out = jnp.einsum("btnh,nhd->btd", o, lp["wo"])
    return checkpoint_name(out, "attn_out"), k_cache, v_cache


def mlp_block(lp: dict, x, cfg: TransformerConfig):
    """The MLP of one layer: SwiGLU (3 matrices) or GELU (2 matrices)."""
    up = jnp.einsum("btd,df->btf", x, lp["w_up"])
    if cfg.gated_mlp:
        h = jax.nn.silu(jnp.einsum("btd,df->btf", x, lp["w_gate"])) * up
    else:
        h = jax.nn.gelu(up)
    h = checkpoint_name(h, "ffn_hidden")
    return jnp.einsum("btf,fd->btd", h, lp["w_down"])


def layer_forward(lp: dict, x, cfg: TransformerConfig, positions, k_cache=None, v_cache=None,
                  cache_pos=0):
    """One decoder layer with residuals. Returns (x, k_cache, v_cache)."""
    a, k_cache, v_cache = attention_block(lp, rms_norm(x, lp["attn_norm"]), cfg, positions,
                                          k_cache, v_cache, cache_pos)
    x = x + a
    x = x + mlp_block(lp, rms_norm(x, lp["mlp_norm"]), cfg)
    return x, k_cache, v_cache


def remat_policy(remat):
    """The jax.checkpoint policy for a remat name (None for 'none')."""
    if remat is None or remat == "none":
        return None
    if remat == "dots":
        return jax.checkpoint_policies.dots_with_no_batch_dims_saveable
    if remat == "names":
        return jax.checkpoint_policies.save_only_these_names(*SAVED_NAMES)
    if remat == "block":
        return jax.checkpoint_policies.nothing_saveable
    raise ValueError(f"remat must be one of {REMAT_POLICY_NAMES} or None, got {remat!r}")


def forward(params: dict, tokens, cfg: TransformerConfig, kv_cache=None, pos=0, remat=None):
    """Logits [B, T, V] for int tokens [B, T]; see the module docstring for ``kv_cache``/``pos``.

    With a cache returns ``(logits, new_cache)``; ``pos`` may be a traced integer.
    """
    check_supported(cfg)
    tokens = jnp.asarray(tokens)
    if tokens.ndim != 2 or not jnp.issubdtype(tokens.dtype, jnp.integer):
        raise ValueError(f"tokens must be an integer array [batch, seq], got "
                         f"{tokens.dtype}{list(tokens.shape)}")
    policy = remat_policy(remat)
    if kv_cache is not None and policy is not None:
        raise ValueError("remat applies to training; do not combine it with a kv_cache")
    T = tokens.shape[1]
    positions = pos + jnp.arange(T)
    x = params["embed"][tokens]
    new_k, new_v = [], []
    for i in range(cfg.n_layers):
        lp = layer_params(params, i)
        if kv_cache is None:
            if policy is None:
                x, _, _ = layer_forward(lp, x, cfg, positions)
            else:
                f = jax.checkpoint(lambda lp_, x_: layer_forward(lp_, x_, cfg, positions)[0],
                                   policy=policy)
                x = f(lp, x)
        else:
            x, kc, vc = layer_forward(lp, x, cfg, positions, kv_cache["k"][i], kv_cache["v"][i],
                                      pos)
            new_k.append(kc)
            new_v.append(vc)
    if cfg.final_norm:
        x = rms_norm(x, params["final_norm"])
    w_out = params["embed"].T if cfg.tied_embeddings else params["unembed"]
    logits = jnp.einsum("btd,dv->btv", x, w_out)
    if kv_cache is None:
        return logits
    return logits, {"k": jnp.stack(new_k), "v": jnp.stack(new_v)}


def loss_fn(params: dict, tokens, cfg: TransformerConfig, remat=None):
    """Mean next-token cross-entropy of ``tokens`` [B, T] (predicts tokens[:, 1:])."""
    logits = forward(params, tokens, cfg, remat=remat)[:, :-1].astype(jnp.float32)
    targets = jnp.asarray(tokens)[:, 1:]
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))


# ---- KV cache helpers ----------------------------------------------------------------------

def init_kv_cache(cfg: TransformerConfig, batch: int, max_len: int, dtype=jnp.float32) -> dict:
    """Zeroed cache {'k','v'} of shape [L, B, max_len, K, H] (its bytes = cfg.kv_cache_bytes)."""
    check_supported(cfg)
    for nm, v in (("batch", batch), ("max_len", max_len)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{nm} must be a positive int, got {v!r}")
    shape = (cfg.n_layers, batch, max_len, cfg.n_kv_heads, cfg.d_head)
    return {"k": jnp.zeros(shape, dtype), "v": jnp.zeros(shape, dtype)}


def prefill(params, tokens, cfg, max_len: int, cache_dtype=jnp.float32):
    """Run the prompt once, filling a fresh cache. Returns (logits [B, T, V], cache)."""
    tokens = jnp.asarray(tokens)
    if tokens.ndim != 2 or tokens.shape[1] > max_len:
        raise ValueError(f"tokens must be [batch, T] with T <= max_len={max_len}, "
                         f"got shape {tokens.shape}")
    cache = init_kv_cache(cfg, tokens.shape[0], max_len, cache_dtype)
    return forward(params, tokens, cfg, kv_cache=cache, pos=0)


def decode_step(params, token, cfg, cache, pos):
    """One generation step for ``token`` [B] at position ``pos``. Returns (logits [B, V], cache)."""
    logits, cache = forward(params, jnp.asarray(token)[:, None], cfg, kv_cache=cache, pos=pos)
    return logits[:, 0], cache


def generate(params, prompt, cfg, n_new: int, max_len: int | None = None):
    """Greedy decoding of ``n_new`` tokens after ``prompt`` [B, T] (prefill, then decode steps)."""
    prompt = jnp.asarray(prompt)
    T = prompt.shape[1]
    max_len = max_len or T + n_new
    logits, cache = prefill(params, prompt, cfg, max_len)
    tok = jnp.argmax(logits[:, -1], axis=-1)
    step = jax.jit(lambda c, t, p: decode_step(params, t, cfg, c, p))
    out = [tok]
    for i in range(n_new - 1):
        lg, cache = step(cache, tok, T + i)
        tok = jnp.argmax(lg, axis=-1)
        out.append(tok)
    return jnp.stack(out, axis=1)


# ---- XLA's FLOP count ----------------------------------------------------------------------

def xla_flops(f, *args) -> float:
    """FLOPs reported by ``jax.jit(f).lower(*args).compile().cost_analysis()``."""
    ca = jax.jit(f).lower(*args).compile().cost_analysis()
    if isinstance(ca, (list, tuple)):   # older JAX returned a one-element list
        ca = ca[0]
    return float(ca["flops"])
