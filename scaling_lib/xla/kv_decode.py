"""A real KV-cache decoder on the book's small JAX model: prefill, cached decode loop, the naive
recompute-everything loop it replaces, decode-step timing against batch, and greedy speculative
decoding.

Units: seconds, tokens. Book: chapter 7 (sec-07-real-decoder, sec-07-memory, sec-07-spec).
Builds on ``scaling_lib.jax_model`` (its ``forward`` with ``kv_cache``/``pos``, ``prefill``,
``decode_step``): one parameter pytree serves every path here. Imports jax; notebooks call
``scaling_lib.devices.setup()`` first. Timings are wall-clock medians and vary by machine.
Ignores: sampling other than greedy, batching of ragged prompts (all prompts have one length),
int8 kernels (weights are f32 on CPU, as XLA computes bf16 dots in f32 there anyway).
"""
from __future__ import annotations

import functools

import numpy as np

from . import jax_model
from ..transformer import TransformerConfig

__all__ = ["tiny_config", "generate_naive", "generate_cached", "max_logit_diff",
           "per_token_times", "filled_cache", "unstack_params", "decode_step_fn",
           "decode_step_sweep", "predicted_step_times", "step_kernels", "calibrated_step_times",
           "served_from_config", "generate_speculative", "perturbed_params"]


def _jax():
    import jax
    import jax.numpy as jnp
    return jax, jnp


def tiny_config(d_model=256, n_layers=4, n_heads=4, n_kv_heads=2, d_ff=1024, vocab=512,
                name="tiny decoder") -> TransformerConfig:
    """The chapter's demo model (spec 07 demo 1: D = 256, L = 4, N = 4, K = 2)."""
    return TransformerConfig(d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                             n_kv_heads=n_kv_heads, d_ff=d_ff, vocab=vocab, name=name)


def _check_prompt(prompt, cfg):
    _, jnp = _jax()
    p = np.asarray(prompt)                      # checks on the host: no eager device ops
    if p.ndim != 2 or p.dtype.kind not in "iu" or p.shape[1] < 1:
        raise ValueError(f"prompt must be an integer array [batch, T >= 1], got "
                         f"{p.dtype}{list(p.shape)}")
    if int(p.max()) >= cfg.vocab or int(p.min()) < 0:
        raise ValueError(f"prompt token ids must be in [0, {cfg.vocab}), got "
                         f"[{int(p.min())}, {int(p.max())}]")
    return jnp.asarray(p.astype(np.int32))


def _check_n(name, n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{name} must be a positive int, got {n!r}")
    return int(n)


@functools.lru_cache(maxsize=16)
def _naive_step(cfg: TransformerConfig):
    """One jitted naive step: run the whole fixed-size buffer, read the logits at ``i - 1``,
    write the greedy token at ``i``."""
    jax, jnp = _jax()

    def step(params, buf, i):
        lg = jax_model.forward(params, buf, cfg)
        lg = jax.lax.dynamic_index_in_dim(lg, i - 1, axis=1, keepdims=False)
        tok = jnp.argmax(lg, axis=-1).astype(buf.dtype)
        buf = jax.lax.dynamic_update_index_in_dim(buf, tok[:, None], i, axis=1)
        return buf, tok, lg
    return jax.jit(step)


def generate_naive(params, prompt, cfg, n_new):
    """Greedy decoding that re-runs the model over the whole prefix for every new token (no KV
    cache). The prefix lives in a fixed [B, T + n_new] buffer, so one compiled forward serves
    every step; the causal mask keeps the padding out. Returns (tokens [B, n_new], logits
    [B, n_new, V]): logits[:, i] predicted token i."""
    jax, jnp = _jax()
    p = _check_prompt(prompt, cfg)
    n = _check_n("n_new", n_new)
    B, T = p.shape
    host = np.zeros((B, T + n), np.int32)
    host[:, :T] = np.asarray(p)
    buf = jnp.asarray(host)
    step = _naive_step(cfg)
    toks, logits = [], []
    for i in range(n):
        buf, t, lg = step(params, buf, np.int32(T + i))
        toks.append(np.asarray(t))
        logits.append(np.asarray(lg))
    return np.stack(toks, axis=1), np.stack(logits, axis=1)


@functools.lru_cache(maxsize=16)
def _decode_loop(cfg: TransformerConfig, n: int):
    """A jitted loop of ``n`` cached greedy decode steps (lax.scan, compiled once per n)."""
    jax, jnp = _jax()

    def loop(params, cache, tok, pos):
        def body(carry, _):
            cache, tok, pos = carry
            lg, cache = jax_model.decode_step(params, tok, cfg, cache, pos)
            nxt = jnp.argmax(lg, axis=-1).astype(tok.dtype)
            return (cache, nxt, pos + 1), (nxt, lg)
        (cache, _, _), (toks, lgs) = jax.lax.scan(body, (cache, tok, pos), None, length=n)
        return toks.T, jnp.swapaxes(lgs, 0, 1), cache
    return jax.jit(loop)


def generate_cached(params, prompt, cfg, n_new, max_len=None):
    """Greedy decoding with a KV cache: prefill the prompt once (writing K/V for every prompt
    position), then ``n_new - 1`` one-token decode steps that append to the cache. Returns
    (tokens [B, n_new], logits [B, n_new, V]), the same contract as ``generate_naive``."""
    jax, jnp = _jax()
    p = _check_prompt(prompt, cfg)
    n = _check_n("n_new", n_new)
    T = p.shape[1]
    max_len = T + n if max_len is None else _check_n("max_len", max_len)
    if max_len < T + n - 1:
        raise ValueError(f"max_len={max_len} is too short for {T} prompt + {n} new tokens")
    first_lg, tok, cache = _prefill_fn(cfg, max_len)(params, p)
    first_lg, tok0 = np.asarray(first_lg)[:, None], np.asarray(tok)[:, None]
    if n == 1:
        return tok0, first_lg
    toks, lgs, _ = _decode_loop(cfg, n - 1)(params, cache, tok, np.int32(T))
    return (np.concatenate([tok0, np.asarray(toks)], axis=1),
            np.concatenate([first_lg, np.asarray(lgs)], axis=1))


@functools.lru_cache(maxsize=16)
def _prefill_fn(cfg: TransformerConfig, max_len: int):
    """Jitted prefill returning (last logits [B, V], greedy token [B], cache)."""
    jax, jnp = _jax()

    def f(params, prompt):
        lg, cache = jax_model.prefill(params, prompt, cfg, max_len)
        last = lg[:, -1]
        return last, jnp.argmax(last, axis=-1).astype(prompt.dtype), cache
    return jax.jit(f)


def max_logit_diff(params, prompt, cfg, n_new) -> dict:
    """Cached vs recomputed decoding on the same prompt: max |Δlogit|, the logit scale and
    whether the greedy tokens agree."""
    t_a, l_a = generate_naive(params, prompt, cfg, n_new)
    t_b, l_b = generate_cached(params, prompt, cfg, n_new)
    return {"max_abs_diff": float(np.max(np.abs(l_a - l_b))),
            "logit_scale": float(np.max(np.abs(l_a))),
            "same_tokens": bool(np.array_equal(np.asarray(t_a), np.asarray(t_b)))}


def per_token_times(params, cfg, positions=(32, 128, 256, 512), batch=1, n_iter=5,
                    seed=0) -> dict:
    """Wall-clock seconds to produce the token at each of ``positions``: naive (re-run the whole
    prefix of that length; one compile per length) vs cached (one decode step against a cache
    filled up to that position; one compile). Medians of ``n_iter`` runs after warm-up."""
    jax, jnp = _jax()
    from .measure import time_fn
    pos = [_check_n("position", int(p)) for p in positions]
    b = _check_n("batch", batch)
    rng = np.random.default_rng(seed)
    fwd = jax.jit(lambda prm, toks: jax_model.forward(prm, toks, cfg)[:, -1])
    step = jax.jit(lambda prm, c, t, p: jax_model.decode_step(prm, t, cfg, c, p)[0])
    cache = filled_cache(cfg, b, max(pos), seed=seed)
    tok = jnp.asarray(np.zeros((b,), np.int32))
    naive, cached = [], []
    for p in pos:
        toks = jnp.asarray(rng.integers(0, cfg.vocab, (b, p)), jnp.int32)
        naive.append(time_fn(fwd, params, toks, n_warmup=1, n_iter=n_iter))
        cached.append(time_fn(step, params, cache, tok, jnp.asarray(p - 1), n_warmup=1,
                              n_iter=n_iter))
    return {"position": np.asarray(pos), "naive_s": np.asarray(naive),
            "cached_s": np.asarray(cached)}


def filled_cache(cfg, batch, seq_len, dtype=None, seed=0):
    """A KV cache [L, B, seq_len + 1, K, H] filled with random numbers (its contents do not
    change the time of a decode step, only its size does)."""
    jax, jnp = _jax()
    dtype = dtype or jnp.float32
    shape = (cfg.n_layers, _check_n("batch", batch), _check_n("seq_len", seq_len) + 1,
             cfg.n_kv_heads, cfg.d_head)
    rng = np.random.default_rng(seed)
    return {"k": jnp.asarray(rng.standard_normal(shape, dtype=np.float32), dtype=dtype),
            "v": jnp.asarray(rng.standard_normal(shape, dtype=np.float32), dtype=dtype)}


def unstack_params(params, cfg) -> dict:
    """The params pytree with per-layer weights as a list of separate arrays. XLA on CPU emits a
    slow dot when a slice of a stacked [L, ...] weight is fused into it, so timing runs use this
    layout; the numbers are the same weights."""
    jax, jnp = _jax()
    out = {k: v for k, v in params.items() if k != "layers"}
    host = {k: np.asarray(v) for k, v in params["layers"].items()}   # slice on the host (no compiles)
    out["layers"] = [{k: jnp.asarray(v[i]) for k, v in host.items()} for i in range(cfg.n_layers)]
    return out


@functools.lru_cache(maxsize=16)
def decode_step_fn(cfg: TransformerConfig):
    """A jitted cached decode step on ``unstack_params`` weights and a per-layer cache
    (lists of [B, S_max, K, H]): (params, k_list, v_list, token [B], pos) → (logits [B, V],
    k_list, v_list). Built from ``jax_model.layer_forward``, so it is the same model."""
    jax, jnp = _jax()

    def step(p, ks, vs, tok, pos):
        x = p["embed"][tok][:, None]
        positions = pos + jnp.arange(1)
        nk, nv = [], []
        for lp, k, v in zip(p["layers"], ks, vs):
            x, k, v = jax_model.layer_forward(lp, x, cfg, positions, k, v, pos)
            nk.append(k)
            nv.append(v)
        if cfg.final_norm:
            x = jax_model.rms_norm(x, p["final_norm"])
        w_out = p["embed"].T if cfg.tied_embeddings else p["unembed"]
        return jnp.einsum("btd,dv->btv", x, w_out)[:, 0], nk, nv
    return jax.jit(step)


def decode_step_sweep(params, cfg, batches, seq_len, n_iter=5, device=None, dtype=None,
                      stat="median") -> list:
    """Median (``stat='min'``: fastest of ``n_iter``, as chapter 1's calibration times) wall-clock
    time of one cached decode step (B sequences, each with ``seq_len`` cached tokens) for each B.
    One dict per batch: batch, seq_len, t (s), tok_s."""
    jax, jnp = _jax()
    from .measure import time_fn
    device = device or jax.devices()[0]
    step = decode_step_fn(cfg)
    p = jax.device_put(unstack_params(params, cfg), device)
    out = []
    for b in batches:
        b = _check_n("batch", b)
        c = filled_cache(cfg, b, seq_len, dtype=dtype)
        kc, vc = np.asarray(c["k"]), np.asarray(c["v"])   # per-layer slices on the host: an eager
        ks = jax.device_put([kc[i] for i in range(cfg.n_layers)], device)   # slice compiles
        vs = jax.device_put([vc[i] for i in range(cfg.n_layers)], device)
        tok = jax.device_put(np.zeros((b,), np.int32), device)
        t = time_fn(step, p, ks, vs, tok, jnp.asarray(seq_len), n_warmup=1, n_iter=n_iter,
                    stat=stat)
        out.append({"batch": b, "seq_len": int(seq_len), "t": t, "tok_s": b / t})
    return out


def served_from_config(cfg: TransformerConfig):
    """The ``inference.ServedModel`` of a small config, counting the weights a decode step
    actually streams (matmul weights incl. the unembedding; the embedding is a B-row gather)."""
    from ..inference import ServedModel
    p = float(cfg.matmul_params())
    return ServedModel(name=cfg.name or "model", params=p,
                       kv_elems_per_token=float(cfg.kv_elems_per_token()), d_model=cfg.d_model,
                       d_ff=cfg.d_ff, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                       n_kv_heads=cfg.n_kv_heads, d_head=cfg.d_head)


def predicted_step_times(cfg, batches, seq_len, chip, dtype="f32", compute="bf16") -> dict:
    """The library's decode-step estimate (eq-07-step) for the same model, batches and context
    on ``chip`` (e.g. ``hardware.measured_cpu_chip(...)`` or the detected accelerator). Memory
    capacity is not checked (the chip record may not know it)."""
    from .. import inference
    m = served_from_config(cfg)
    b = np.asarray(batches, dtype=float)
    st = inference.decode_step_time(m, b, seq_len, 1, chip, dtype, dtype, compute=compute,
                                    check_memory=False)
    return {"batch": b, "total_s": np.asarray(st.total_s), "kv_s": np.asarray(st.kv_s),
            "param_s": np.broadcast_to(st.param_s, b.shape).astype(float),
            "flops_s": np.asarray(st.flops_s)}


def step_kernels(cfg, batch, seq_len, dtype="f32"):
    """(flops, nbytes) of each kernel of one ``decode_step_fn`` step on B = ``batch`` sequences
    with ``seq_len`` cached tokens, as two 1-D arrays: per layer the weight matmuls (Q, K, V, O,
    gate, up, down: ``roofline.matmul_flops``/``matmul_bytes``), the two attention contractions
    (each reads one cache of ``seq_len + 1`` rows) and the two cache updates (the jitted step
    returns new caches, so each is copied: read + write); then the unembedding. Norms, RoPE and
    softmax are elementwise and left out (they move B·D-sized vectors)."""
    from ..roofline import matmul_bytes, matmul_flops
    from ..units import dtype_bytes
    b = _check_n("batch", batch)
    S = _check_n("seq_len", seq_len) + 1
    D, F, N, K, H = cfg.d_model, cfg.d_ff, cfg.n_heads, cfg.n_kv_heads, cfg.d_head
    mm = [(D, N * H), (D, K * H), (D, K * H), (N * H, D)] + [(D, F)] * (2 if cfg.gated_mlp else 1) \
        + [(F, D)]
    e = dtype_bytes(dtype)
    cache = b * S * K * H * e
    fl, by = [], []
    for _ in range(cfg.n_layers):
        for d, f in mm:
            fl.append(float(matmul_flops(b, d, f)))
            by.append(float(matmul_bytes(b, d, f, dtype, dtype, dtype)))
        fl += [2.0 * b * N * S * H] * 2                     # q·K and probs·V
        by += [cache + 2.0 * b * N * H * e] * 2
        fl += [0.0, 0.0]                                   # the two cache copies: no math
        by += [2.0 * cache] * 2
    fl.append(float(matmul_flops(b, D, cfg.vocab)))
    by.append(float(matmul_bytes(b, D, cfg.vocab, dtype, dtype, dtype)))
    return np.array(fl), np.array(by)


def calibrated_step_times(cfg, batches, seq_len, fit, dtype="f32") -> dict:
    """The forecast of one decode step from a fitted roofline-with-overhead (``fit``: an
    ``efficiency.CpuRoofline``, e.g. ``efficiency.own_roofline(measure.matmul_sweep).fit``):
    the fixed per-call overhead t0 once (one jitted call per step, as each timed matmul of the
    calibration was one call) plus, for each kernel of ``step_kernels``, the fitted
    ``overlap(flops/peak, bytes/bandwidth, f)``. Also ``bound_s``: the clean roofline of the
    same fit (no overhead, max of the two clocks per kernel), and the step's total flops and
    bytes; ``critical_batch``: where the weight matmuls cross over with the fitted peak and
    bandwidth, C·b_w/(2W) (eq-07-bcrit)."""
    from ..efficiency import overlap
    from ..units import dtype_bytes
    for nm in ("peak", "bandwidth", "overhead", "overlap"):
        if not hasattr(fit, nm):
            raise TypeError(f"fit must be an efficiency.CpuRoofline (has peak, bandwidth, overhead, "
                            f"overlap), got {type(fit).__name__}")
    bs = [_check_n("batch", b) for b in batches]
    tot, bnd, fls, bys = [], [], [], []
    for b in bs:
        fl, by = step_kernels(cfg, b, seq_len, dtype)
        tm, tb = fl / fit.peak, by / fit.bandwidth
        tot.append(fit.overhead + float(np.sum(overlap(tm, tb, fit.overlap))))
        bnd.append(float(np.sum(np.maximum(tm, tb))))
        fls.append(float(fl.sum()))
        bys.append(float(by.sum()))
    return {"batch": np.array(bs, float), "total_s": np.array(tot), "bound_s": np.array(bnd),
            "flops": np.array(fls), "nbytes": np.array(bys),
            "critical_batch": float(fit.peak * dtype_bytes(dtype) / (2 * fit.bandwidth))}


def perturbed_params(params, scale, seed=0):
    """A draft model for speculative decoding: the target's weights plus relative Gaussian
    noise of size ``scale`` (0 = identical model, larger = more disagreement)."""
    jax, jnp = _jax()
    if not (isinstance(scale, (int, float)) and scale >= 0):
        raise ValueError(f"scale must be a number >= 0, got {scale!r}")
    leaves, tree = jax.tree_util.tree_flatten(params)
    rng = np.random.default_rng(seed)          # numpy: no per-shape compilation of eager ops
    new = []
    for x in leaves:
        a = np.asarray(x, dtype=np.float32)
        a = a + scale * a.std() * rng.standard_normal(a.shape, dtype=np.float32)
        new.append(jnp.asarray(a, dtype=x.dtype))
    return jax.tree_util.tree_unflatten(tree, new)


@functools.lru_cache(maxsize=16)
def _greedy_all(cfg: TransformerConfig):
    """Jitted greedy next token at every position of a batch-1 buffer."""
    jax, jnp = _jax()
    return jax.jit(lambda prm, b: jnp.argmax(jax_model.forward(prm, b, cfg)[0], axis=-1))


def generate_speculative(target_params, draft_params, prompt, cfg, n_new, gamma,
                         draft_cfg=None) -> dict:
    """Greedy speculative decoding: the draft proposes ``gamma`` tokens one by one, the target
    scores all of them in one pass and keeps the longest prefix it agrees with plus its own next
    token. The output equals the target's greedy output. Batch 1. Returns tokens [n_new],
    target passes, accepted drafts per pass, and the per-token acceptance rate a."""
    jax, jnp = _jax()
    p = _check_prompt(prompt, cfg)
    if p.shape[0] != 1:
        raise ValueError(f"speculative decoding here runs batch 1, got batch {p.shape[0]}")
    n = _check_n("n_new", n_new)
    g = _check_n("gamma", gamma)
    dcfg = draft_cfg or cfg
    T = p.shape[1]
    L = T + n + g + 1
    buf = np.zeros((1, L), np.int32)
    buf[0, :T] = np.asarray(p[0])
    f_t = _greedy_all(cfg)
    f_d = _greedy_all(dcfg)
    length, passes, accepted = T, 0, []
    while length < T + n:
        d = buf.copy()
        for j in range(g):                                   # draft γ tokens
            d[0, length + j] = np.asarray(f_d(draft_params, jnp.asarray(d)))[length + j - 1]
        tgt = np.asarray(f_t(target_params, jnp.asarray(d)))  # one target pass over all of them
        passes += 1
        k = 0
        while k < g and d[0, length + k] == tgt[length + k - 1]:
            k += 1
        accepted.append(k)
        new = list(d[0, length:length + k]) + [tgt[length + k - 1]]
        buf[0, length:length + len(new)] = new
        length += len(new)
    toks = buf[0, T:T + n].copy()
    acc = np.asarray(accepted)
    return {"tokens": toks, "passes": passes, "accepted": acc,
            "tokens_per_pass": n / passes,
            # per-token acceptance: accepted drafts / drafts the target actually compared
            "accept_rate": float(acc.sum() / (acc.sum() + np.sum(acc < g)))}


# ---- sharded decode on a ('batch', 'model') mesh (sec-07-sharding) ----------------------------

def decode_block_params(B, S, D, F, N, K, H, seed=0) -> dict:
    """Random weights, a filled KV cache and one token's activations for ``decode_block``:
    x [B, D], wq [D, N, H], wo [N, H, D], w_in [D, F], w_out [F, D], k/v [B, S, K, H]."""
    rng = np.random.default_rng(seed)

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)
    return {"x": r(B, D), "wq": r(D, N, H, scale=D ** -0.5), "wo": r(N, H, D, scale=(N * H) ** -0.5),
            "w_in": r(D, F, scale=D ** -0.5), "w_out": r(F, D, scale=F ** -0.5),
            "k": r(B, S, K, H), "v": r(B, S, K, H)}


def decode_block(p):
    """Unsharded reference: one decode token per sequence through attention over the cache
    (GQA, G = N/K query heads per KV head) and a Megatron-style MLP; returns [B, D]."""
    _, jnp = _jax()
    import jax
    B, S, K, H = p["k"].shape
    N = p["wq"].shape[1]
    q = jnp.einsum("bd,dnh->bnh", p["x"], p["wq"]).reshape(B, K, N // K, H)
    s = jnp.einsum("bkgh,bskh->bkgs", q, p["k"]) / np.sqrt(H)
    o = jnp.einsum("bkgs,bskh->bkgh", jax.nn.softmax(s, axis=-1), p["v"]).reshape(B, N, H)
    y = p["x"] + jnp.einsum("bnh,nhd->bd", o, p["wo"])
    return y + jax.nn.gelu(y @ p["w_in"]) @ p["w_out"]


def sharded_decode_block(mesh, p, batch_axis="batch", model_axis="model"):
    """``decode_block`` with the book's decode sharding (spec 07, KV-sharding steps 1-6):
    KV cache [B_Z, S, K_Y, H] stays put; Q heads split over (Y, Z); an AllToAll over Z turns
    head-sharding into batch-sharding for the local attention and another turns it back; the
    W_O and MLP partial sums are AllReduced. Returns (out [B, D], jitted function, args)."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P
    Z, Y = batch_axis, model_axis
    B, S, K, H = p["k"].shape
    N = p["wq"].shape[1]
    nz, ny = mesh.shape[Z], mesh.shape[Y]
    if K % ny or B % nz or N % (ny * nz) or (N // ny) % nz:
        raise ValueError(f"need K % {ny} == 0, B % {nz} == 0 and N % {ny * nz} == 0; got "
                         f"K={K}, B={B}, N={N}")
    G = N // K
    specs = {"x": P(), "wq": P(None, (Y, Z), None), "wo": P((Y, Z), None, None),
             "w_in": P(None, (Y, Z)), "w_out": P((Y, Z), None),
             "k": P(Z, None, Y, None), "v": P(Z, None, Y, None)}
    names = list(specs)

    def local(x, wq, wo, w_in, w_out, k, v):
        jnp = jax.numpy
        q = jnp.einsum("bd,dnh->bnh", x, wq)                          # [B, N/(YZ), H]
        q = jax.lax.all_to_all(q, Z, 0, 1, tiled=True)                # [B/Z, N/Y, H]
        kl = k.shape[2]
        q = q.reshape(q.shape[0], kl, G, H)                           # [B/Z, K/Y, G, H]
        s = jnp.einsum("bkgh,bskh->bkgs", q, k) / np.sqrt(H)
        o = jnp.einsum("bkgs,bskh->bkgh", jax.nn.softmax(s, axis=-1), v)
        o = o.reshape(o.shape[0], kl * G, H)                          # [B/Z, N/Y, H]
        o = jax.lax.all_to_all(o, Z, 1, 0, tiled=True)                # [B, N/(YZ), H]
        y = x + jax.lax.psum(jnp.einsum("bnh,nhd->bd", o, wo), (Y, Z))
        h = jax.nn.gelu(y @ w_in)                                      # [B, F/(YZ)]
        return y + jax.lax.psum(h @ w_out, (Y, Z))

    fn = jax.jit(jax.shard_map(local, mesh=mesh, in_specs=tuple(specs[n] for n in names),
                               out_specs=P(), check_vma=False))
    args = [jax.device_put(p[n], NamedSharding(mesh, specs[n])) for n in names]
    with jax.set_mesh(mesh):
        out = fn(*args)
    return out, fn, args


# ---- KV-cache allocation: contiguous slots vs pages (drawn by diagrams.kv_paging_figure) ------

def paged_allocation(seq_lens, max_len: int, block_size: int = 16) -> dict:
    """How much KV-cache memory ``len(seq_lens)`` sequences take when each reserves a contiguous
    ``max_len`` slot (the simple engine) versus when the cache is cut into pages of ``block_size``
    tokens handed out on demand (PagedAttention). Counts in tokens of cache:

    - ``contiguous``: B·max_len reserved; ``used`` = Σ len; the rest is waste.
    - ``paged``: Σ ⌈len/block⌉·block reserved; the waste is only each sequence's last, partly
      filled page (< block tokens per sequence).
    - ``block_table``: for sequence i, the physical page of each of its logical pages (pages are
      handed out round-robin as the sequences grow one token at a time, so a sequence's pages are
      scattered — which is why attention has to follow the table).
    """
    lens = [int(x) for x in np.asarray(seq_lens).ravel()]
    if not lens or any(x < 1 for x in lens):
        raise ValueError(f"seq_lens must be positive token counts, got {list(seq_lens)!r}")
    _check_n("max_len", max_len)
    _check_n("block_size", block_size)
    if max(lens) > max_len:
        raise ValueError(f"a sequence of {max(lens)} tokens does not fit max_len={max_len}")
    pages = [-(-n // block_size) for n in lens]
    table = [[] for _ in lens]
    nxt = 0
    for t in range(max(lens)):                       # tokens arrive one step at a time
        for i, n in enumerate(lens):
            if t < n and t % block_size == 0:        # sequence i needs a new page
                table[i].append(nxt)
                nxt += 1
    used = sum(lens)
    return {"used": used, "contiguous": len(lens) * max_len, "paged": sum(pages) * block_size,
            "contiguous_waste": 1 - used / (len(lens) * max_len),
            "paged_waste": 1 - used / (sum(pages) * block_size),
            "block_table": [tuple(r) for r in table], "n_pages": nxt, "block_size": block_size,
            "max_len": max_len, "lens": tuple(lens)}
__all__ += ["paged_allocation"]
