"""Serving as GPUs and TPUs pay for it: decode and prefill steps with the costs the chapter-7
bound leaves out, static batches, and a request-level simulation with continuous batching and
chunked prefill.

Units: SI (seconds, bytes, tokens). Book: sec-07-step (the decode-step bound this forecast
sits on), sec-07-continuous (continuous batching), sec-appendix-validation (against
TensorRT-LLM's published throughput and latency).

A serving **step** runs one forward pass over M tokens: the decode tokens of the running
sequences plus, with chunked prefill, a slice of some prompts. A ``Deployment`` is ``ep``
attention replicas of ``tp`` chips each (tensor parallel inside a replica; the routed experts
of an MoE spread over all tp·ep chips). Its forecast adds, per layer:

- the layer's GEMMs at M/ep rows (``efficiency.gemm_time``: the weight-read floor, tile/wave
  or MXU quantisation, launch); routed experts at M·k/E rows each; weight-only quantised
  weights read fewer bytes but compute at ``serve.wq_compute_eff`` of the 16-bit rate;
- attention: reading each sequence's KV cache (decode; kernels that do not share a GQA group's
  KV cache among its query heads read it up to N/K times, ``serve.gqa_reread``) and the
  prompt's causal attention FLOPs (prefill) at ``attn_eff``;
- tensor parallelism: two AllReduces of the [M/ep, d_model] activations per layer, each
  ``collectives.group_time`` for the TP group on the deployment's ``topology.System`` (the
  ring convention: NVLink switch on GPUs, NVLink SHARP if the system has ``nvls``, the ICI
  torus on TPUs, the scale-out tier if the group spans domains), each tier over its achieved
  fraction (``nvlink.ring_eff``/``nvlink.nvls_eff``, ``ici.eff``, ``nic.eff``/``dcn.eff``),
  plus a fixed latency: ``serve.allreduce_latency_s`` on GPUs (serving stacks use one-shot
  custom AllReduce kernels, not NCCL's ring steps), the topology's hop latency on TPUs;
- MoE expert parallelism: a dispatch and a combine per MoE layer (DeepEP-style low-latency
  all-to-all, ``efficiency.alltoall_lowlatency_time``, with the system's scale-up domain and
  scale-out bandwidth per chip);
- a few elementwise kernels (norms, rotary, residuals, activation) of ``launch_s`` each, and
  their passes over the residual stream;

and, per step, the LM head and ``serve.step_overhead_s`` (scheduling, sampling). The **bound**
is chapter 7's (``inference.decode_step_time`` for a pure decode step): every byte read once
and every FLOP at peak, nothing else. Everything is vectorised over the step's sizes.

``simulate`` runs requests (arrival times, prompt and output lengths) through a continuous-
batching server whose steps carry every running decode plus prompt tokens up to a token
budget (chunked prefill): it returns time to first token (TTFT) and inter-token latency (ITL)
distributions and the throughput.
Ignores: speculative decoding, prefix caching, KV offload, pipeline parallelism in serving,
preemption (a request admitted keeps its KV until it finishes), network time to the client.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import collectives, efficiency, hardware, inference, topology
from .units import check_int, check_nonneg, check_positive

__all__ = ["Deployment", "StepForecast", "step_time", "decode_step", "prefill", "causal_flops",
           "static_batch", "StaticBatch", "Requests", "SimResult", "simulate",
           "ELEMENTWISE_KERNELS", "ELEMENTWISE_PASSES"]

#: elementwise kernels per layer besides GEMMs and attention (2 norms, rotary, 2 residual adds,
#: the MLP activation)
ELEMENTWISE_KERNELS = 6
#: [rows, d_model] 16-bit arrays those kernels read or write per layer beyond what the GEMMs
#: stream (the residual stream in and out of the two norms), replicated on every TP rank
ELEMENTWISE_PASSES = 4


@dataclass(frozen=True)
class Deployment:
    """A model served on ``tp`` chips (tensor parallel) × ``ep`` (expert parallel), with the
    dtypes of the stored weights, the KV cache and the matmul arithmetic, on ``system`` (a
    ``topology.System`` of this chip with at least tp·ep chips; the TP groups are its innermost
    chips). Default: ``topology.System(chip, tp·ep)`` — one NVLink domain (or several, joined
    by the catalogue's NICs) on GPUs; on TPUs the book's placement on wrapped 16-chip axes
    (pass e.g. ``topology.System("v5e", 8, shape=(2, 4))`` for a real sub-slice)."""

    model: object
    chip: object
    tp: int = 1
    ep: int = 1
    weights: str = "bf16"
    kv: str = "bf16"
    compute: str = "bf16"
    system: object = None

    def __post_init__(self):
        from .step import model_shapes
        from .transformer import TransformerConfig
        m = self.model
        if isinstance(m, str):
            from . import models
            m = models.get(m)
        if not isinstance(m, TransformerConfig):
            raise TypeError(f"model must be a TransformerConfig or a preset name, got "
                            f"{type(m).__name__}")
        object.__setattr__(self, "model", m)
        c = hardware.get(self.chip)
        object.__setattr__(self, "chip", c)
        check_int("tp", self.tp)
        check_int("ep", self.ep)
        for nm in ("weights", "kv", "compute"):
            inference.bytes_per_elem(getattr(self, nm))
        c.peak(self.compute)                     # a chip without that arithmetic raises
        sh = model_shapes(m)
        if sh.N % self.tp:
            raise ValueError(f"tp={self.tp} must divide n_heads={sh.N}")
        if self.ep > 1 and (sh.E <= 1 or sh.E % self.ep):
            raise ValueError(f"ep={self.ep} must divide n_experts={sh.E} (an MoE)")
        object.__setattr__(self, "_sh", sh)
        n = self.tp * self.ep
        if self.system is None:
            object.__setattr__(self, "system", topology.System(c, n))
        elif not isinstance(self.system, topology.System):
            raise TypeError(f"system must be a topology.System, got {type(self.system).__name__}")
        elif self.system.chip.name != c.name or self.system.n_chips < n:
            raise ValueError(f"system ({self.system}) must hold at least tp·ep = {n} chips of "
                             f"{c.name}")

    @property
    def n_chips(self) -> int:
        return self.tp * self.ep

    @property
    def shapes(self):
        return self._sh

    @property
    def kv_bytes_per_token(self) -> float:
        return float(inference.kv_bytes_per_token(self.model, self.kv))


@dataclass(frozen=True)
class StepForecast:
    """Serving steps: their bound and forecast (seconds) and the forecast's parts. Floats for
    one step, arrays (of the broadcast shape of the inputs) for a sweep."""

    bound: object
    forecast: object
    parts: Mapping[str, object]


def _out(x, shape):
    x = np.broadcast_to(np.asarray(x, dtype=float), shape)
    return float(x) if x.ndim == 0 else np.array(x)


def _dense_rows_gemms(dep):
    """(N, K) of one layer's dense GEMMs on one chip: fused QKV, output, MLP in, MLP out."""
    sh, tp = dep.shapes, dep.tp
    shapes = [(sh.Q / tp, sh.D), (sh.D, sh.O / tp)]
    if sh.F > 0:
        shapes += [((sh.mats - 1) * sh.F / tp, sh.D), (sh.D, sh.F / tp)]
    return shapes


def _gemm_layer(dep, M, par):
    """Seconds of one (average) layer's GEMMs on one chip when the step holds M tokens in all:
    each of the ``ep`` attention replicas has M/ep rows for the dense GEMMs; each routed expert
    sees M·k/E rows (balanced routing) and a chip runs E/ep of them. Each GEMM is
    ``efficiency.gemm_time``. Weight-only quantised weights (stored narrower than the
    arithmetic, e.g. INT4 weights in a BF16 GEMM; Marlin-style kernels) read fewer bytes, tile
    M by 16 rows, and do their math at ``serve.wq_compute_eff`` of the rate the same GEMM
    reaches in 16 bits. Vectorised over M."""
    sh, c = dep.shapes, dep.chip
    w, a = dep.weights, dep.compute
    wq = inference.bytes_per_elem(w) < inference.bytes_per_elem(a)
    fam = efficiency.family(c)
    rate = par.of(fam, "mm_eff") * c.peak(a) * par["serve.wq_compute_eff"]
    launch = par.of(fam, "launch_s")

    def one(rows, N, K, count=1):
        g = efficiency.gemm_time(rows, N, K, c, a=a, b=w, out="bf16", compute=a, par=par,
                                 count=count)
        if not wq:
            return g.forecast
        tc = g.flops * (np.ceil(rows / 16) * 16 / rows) / rate
        return count * launch + np.maximum(tc, g.t_memory)

    Mr = np.maximum(np.asarray(M, dtype=float) / dep.ep, 1.0)
    t = sum(one(Mr, N, K) for N, K in _dense_rows_gemms(dep))
    if sh.E > 1 and sh.moe_frac > 0:
        Me = np.maximum(np.asarray(M, dtype=float) * sh.k / sh.E, 1.0)
        te = sum(one(Me, N, K, count=sh.E / dep.ep)
                 for N, K in (((sh.mats - 1) * sh.F_e / dep.tp, sh.D), (sh.D, sh.F_e / dep.tp)))
        t = t + sh.moe_frac * te
    return t


def _allreduce(dep, nbytes, par):
    """Forecast of one tensor-parallel AllReduce of ``nbytes`` (the book's V: the [rows, d_model]
    array each chip holds) in a serving step: ``collectives.group_time`` for the TP group (``tp``
    chips, innermost) on ``dep.system`` in the ring convention, each network tier over its
    achieved fraction (scale-up: ``nvlink.ring_eff``, ``nvlink.nvls_eff`` with NVLink SHARP,
    ``ici.eff``; scale-out: ``nic.eff``, ``dcn.eff``; GPU tiers overlap, TPU tiers add, as in
    ``group_time``), plus a fixed latency: ``serve.allreduce_latency_s`` on GPUs (one-shot custom
    kernels), the topology's hop latency on TPUs. Vectorised over nbytes."""
    v = np.asarray(nbytes, dtype=float)
    sysm, tp = dep.system, dep.tp
    if tp == 1:
        return np.zeros_like(v)
    up, out = collectives.group_time("all_reduce", v, sysm, tp, convention="ring", tiers=True)
    if sysm.family == "gpu":
        eff_up = par["nvlink.nvls_eff"] if sysm.nvls else par["nvlink.ring_eff"]
        t = np.maximum(up / eff_up, out / par["nic.eff"])
        lat = par["serve.allreduce_latency_s"] + (par["nic.latency_s"] if tp > sysm.pod_chips
                                                  else 0.0)
    else:
        t = up / par["ici.eff"] + out / par["dcn.eff"]
        lat = collectives.group_time("all_reduce", 1.0, sysm, tp, convention="ring",
                                     latency=True)[1]
    return t + lat


def _m_terms(dep, M, par):
    """The parts of a step that depend only on its token count M (vectorised over M): every
    layer's GEMMs, TP AllReduces, MoE dispatch/combine and elementwise kernels."""
    sh, c = dep.shapes, dep.chip
    fam = efficiency.family(c)
    L = sh.L
    W = c.hbm_bw * par.of(fam, "hbm_eff")
    M = np.asarray(M, dtype=float)
    out = {"gemm": _gemm_layer(dep, M, par) * L}
    act = M / dep.ep * sh.D * 2.0             # [rows, d_model] bf16 activations per replica
    out["allreduce"] = 2 * L * _allreduce(dep, act, par)
    out["alltoall"] = np.zeros_like(M)
    if dep.ep > 1 and sh.moe_frac > 0:
        per = M / dep.ep * sh.k * sh.D        # elements a chip dispatches
        ll = efficiency.alltoall_lowlatency_time
        gpn, nic = dep.system.pod_chips, dep.system.w_scale_out
        out["alltoall"] = (ll(per * 1.0, dep.ep, gpn, nic, par=par)
                           + ll(per * 2.0, dep.ep, gpn, nic, par=par)) \
            * L * sh.moe_frac                 # FP8 dispatch, BF16 combine
    out["elementwise"] = L * ELEMENTWISE_KERNELS * par.of(fam, "launch_s") + \
        ELEMENTWISE_PASSES * L * (M / dep.ep) * sh.D * 2.0 / W
    return out


def _kv_cost_per_byte(dep, par):
    """Seconds per KV-cache byte a decode step reads (GQA re-reads, achieved HBM bandwidth)."""
    sh = dep.shapes
    group = sh.N / max(sh.K, 1)               # query heads per KV head (GQA)
    reread = 1.0 + (group - 1.0) * par["serve.gqa_reread"]
    return reread / (par.of(efficiency.family(dep.chip), "hbm_eff") * dep.chip.hbm_bw)


def _lm_head(dep, nd, par):
    """The LM head over the decoding rows (at least one: the prefill's last token)."""
    return efficiency.gemm_time(np.maximum(np.asarray(nd, float) / dep.ep, 1.0),
                                dep.model.vocab / dep.tp, dep.shapes.D, dep.chip, a="bf16",
                                b="bf16", out="bf16", par=par).forecast


def step_time(dep: Deployment, n_decode, decode_ctx_tokens, n_prefill_tokens=0,
              prefill_attn_flops=0.0, par=None) -> StepForecast:
    """Forecast of serving steps: ``n_decode`` sequences each adding a token (their KV caches
    hold ``decode_ctx_tokens`` tokens in all), plus ``n_prefill_tokens`` prompt tokens whose
    attention does ``prefill_attn_flops`` (``causal_flops``). The bound is the chapter-7 one for
    the same work (``inference.decode_step_time`` for a pure decode step). Vectorised: the four
    arguments broadcast."""
    par = efficiency.params() if par is None else par
    sh = dep.shapes
    c = dep.chip
    fam = efficiency.family(c)
    nd = np.asarray(check_nonneg("n_decode", n_decode), dtype=float)
    ctx = np.asarray(check_nonneg("decode_ctx_tokens", decode_ctx_tokens), dtype=float)
    npf = np.asarray(check_nonneg("n_prefill_tokens", n_prefill_tokens), dtype=float)
    pfl = np.asarray(check_nonneg("prefill_attn_flops", prefill_attn_flops), dtype=float)
    shape = np.broadcast_shapes(nd.shape, ctx.shape, npf.shape, pfl.shape)
    M = nd + npf
    if np.any(M <= 0):
        raise ValueError("a step needs at least one decode sequence or prefill token "
                         "(n_decode + n_prefill_tokens > 0)")
    L = sh.L
    chips = dep.n_chips
    launch = par.of(fam, "launch_s")
    mt = _m_terms(dep, M, par)
    t_gemm, t_ar, t_a2a, t_el = mt["gemm"], mt["allreduce"], mt["alltoall"], mt["elementwise"]
    kv_bytes = ctx * dep.kv_bytes_per_token / chips
    t_kv = kv_bytes * _kv_cost_per_byte(dep, par) + np.where(nd > 0, L * launch, 0.0)
    t_pfa = np.where(npf > 0, efficiency.attention_time(pfl / chips, c, par=par, kernels=L), 0.0)
    t_head = _lm_head(dep, nd, par)
    over = par["serve.step_overhead_s"]
    fc = t_gemm + t_kv + t_pfa + t_ar + t_a2a + t_el + t_head + over
    # ---- the chapter-7 bound for the same work ----
    C = c.peak(dep.compute)
    w_bytes = sh.P_total * inference.bytes_per_elem(dep.weights) / chips
    flops = 2.0 * M * sh.P_active / chips
    W = c.hbm_bw
    bound = ctx * dep.kv_bytes_per_token / chips / W + np.maximum(flops / C, w_bytes / W) + \
        pfl / chips / c.peak("bf16")
    parts = {"gemm": t_gemm, "kv_read": t_kv, "prefill_attention": t_pfa, "allreduce": t_ar,
             "alltoall": t_a2a, "elementwise": t_el, "lm_head": t_head, "overhead": over}
    return StepForecast(_out(bound, shape), _out(fc, shape),
                        MappingProxyType({k: _out(v, shape) for k, v in parts.items()}))


def decode_step(dep: Deployment, batch, ctx_len, par=None) -> StepForecast:
    """Decode steps of ``batch`` sequences whose caches hold ``ctx_len`` tokens each
    (vectorised over both)."""
    b = check_positive("batch", batch)
    s = check_positive("ctx_len", ctx_len)
    return step_time(dep, b, np.asarray(b) * np.asarray(s), par=par)


def causal_flops(dep: Deployment, n_seq, new_tokens, past=0):
    """Forward attention FLOPs of ``new_tokens`` prompt tokens per sequence over ``past`` cached
    ones plus their causal triangle: 4·N·H per query-key pair (scores and values), every layer.
    Vectorised."""
    sh = dep.shapes
    t = np.asarray(new_tokens, dtype=float)
    pairs = t * np.asarray(past, dtype=float) + t * (t + 1) / 2
    return 4.0 * sh.L * sh.N * sh.H * pairs * np.asarray(n_seq, dtype=float)


def prefill(dep: Deployment, batch, prompt_len, par=None) -> StepForecast:
    """Prefill of ``batch`` prompts of ``prompt_len`` tokens in one step (the time to first token
    of a static batch): GEMMs at batch·prompt_len rows, never faster than one read of the
    weights (the weight-load floor), causal attention, the TP AllReduces of the whole
    activation. Vectorised over both."""
    b = np.asarray(check_positive("batch", batch), dtype=float)
    t = np.asarray(check_positive("prompt_len", prompt_len), dtype=float)
    return step_time(dep, 0, 0.0, n_prefill_tokens=b * t,
                     prefill_attn_flops=causal_flops(dep, b, t), par=par)


@dataclass(frozen=True)
class StaticBatch:
    """A static batch: prefill, then ``output_len − 1`` decode steps (the first token comes from
    the prefill). Times in seconds."""

    bound: float
    forecast: float
    prefill_forecast: float
    decode_forecast: float
    batch: int
    output_len: int
    n_chips: int

    @property
    def tokens_per_s_per_chip(self) -> float:
        return self.batch * self.output_len / self.forecast / self.n_chips

    @property
    def bound_tokens_per_s_per_chip(self) -> float:
        return self.batch * self.output_len / self.bound / self.n_chips


def static_batch(dep: Deployment, batch, input_len, output_len, par=None) -> StaticBatch:
    """Time of a static batch (TensorRT-LLM's gptSessionBenchmark): one prefill, then every
    decode step priced at its own context length (one vectorised call)."""
    b = check_int("batch", batch)
    i = check_int("input_len", input_len)
    o = check_int("output_len", output_len)
    pf = prefill(dep, b, i, par=par)
    if o == 1:
        return StaticBatch(pf.bound, pf.forecast, pf.forecast, 0.0, b, o, dep.n_chips)
    dec = decode_step(dep, b, np.arange(i + 1, i + o, dtype=float), par=par)
    t_dec = float(np.sum(dec.forecast))
    return StaticBatch(pf.bound + float(np.sum(dec.bound)), pf.forecast + t_dec, pf.forecast,
                       t_dec, b, o, dep.n_chips)


# =============================================================================================
# request-level simulation: continuous batching with chunked prefill
# =============================================================================================

@dataclass(frozen=True)
class Requests:
    """Arrival times (s), prompt lengths and output lengths (tokens) of a stream of requests."""

    arrival: np.ndarray
    prompt_len: np.ndarray
    output_len: np.ndarray

    def __post_init__(self):
        a = np.asarray(self.arrival, dtype=float)
        p = np.asarray(self.prompt_len, dtype=np.int64)
        o = np.asarray(self.output_len, dtype=np.int64)
        if not (a.shape == p.shape == o.shape) or a.ndim != 1 or a.size == 0:
            raise ValueError("arrival, prompt_len and output_len must be 1-D arrays of one length")
        if np.any(np.diff(a) < 0) or np.any(a < 0):
            raise ValueError("arrival times must be >= 0 and sorted")
        if np.any(p < 1) or np.any(o < 1):
            raise ValueError("prompt and output lengths must be >= 1 token")
        for k, v in (("arrival", a), ("prompt_len", p), ("output_len", o)):
            object.__setattr__(self, k, v)

    @classmethod
    def poisson(cls, n, rate_per_s, prompt_len, output_len, seed=0):
        """``n`` requests arriving as a Poisson process; lengths are drawn uniformly from the
        given arrays (a mix of prompt and output lengths)."""
        n = check_int("n", n)
        rate = float(check_positive("rate_per_s", rate_per_s, allow_array=False))
        rng = np.random.default_rng(seed)
        arr = np.cumsum(rng.exponential(1.0 / rate, n))
        p = rng.choice(np.asarray(prompt_len), n)
        o = rng.choice(np.asarray(output_len), n)
        return cls(arr, p, o)


@dataclass(frozen=True)
class SimResult:
    """Per-request time to first token and latency (arrival to last token), every inter-token
    gap, the number of steps and their mean number of sequences."""

    ttft: np.ndarray
    itl: np.ndarray
    finish: np.ndarray
    duration: float
    output_tokens: int
    n_steps: int
    mean_batch: float

    @property
    def throughput(self) -> float:
        """Output tokens per second over the whole run."""
        return self.output_tokens / self.duration

    def percentiles(self, q=(50, 90, 99)) -> dict:
        return {"ttft": {p: float(np.percentile(self.ttft, p)) for p in q},
                "itl": {p: float(np.percentile(self.itl, p)) for p in q} if self.itl.size else {}}


def simulate(dep: Deployment, requests: Requests, max_batch: int = 256,
             chunk_tokens: int = 2048, par=None, max_steps: int = 200_000) -> SimResult:
    """Serve ``requests`` with continuous batching and chunked prefill (vLLM's and Sarathi-Serve's
    scheduler): each step carries every running decode and fills the rest of a budget of
    ``chunk_tokens`` tokens with prompt tokens, oldest request first (a long prompt is cut into
    chunks over several steps). A waiting request is admitted, in arrival order, while fewer
    than ``max_batch`` run and the KV cache of its whole prompt + output fits in the HBM left
    after the weights (90 % of HBM usable). The prefill's last chunk emits the first token.
    Step times are ``step_time``'s forecast."""
    par = efficiency.params() if par is None else par
    if not isinstance(requests, Requests):
        raise TypeError(f"requests must be a serving.Requests, got {type(requests).__name__}")
    max_batch = check_int("max_batch", max_batch)
    chunk = check_int("chunk_tokens", chunk_tokens)
    if chunk <= max_batch:
        raise ValueError(f"chunk_tokens ({chunk}) must exceed max_batch ({max_batch}): the "
                         f"decodes come first in each step's token budget, so prompts would "
                         f"never be served")
    r = requests
    n = r.arrival.size
    P, O, A = r.prompt_len, r.output_len, r.arrival
    need = P + O
    kv_tok = dep.kv_bytes_per_token
    w_bytes = dep.shapes.P_total * inference.bytes_per_elem(dep.weights)
    cap = (dep.n_chips * dep.chip.hbm_bytes * 0.9 - w_bytes) / kv_tok
    if cap < need.max():
        raise ValueError(f"the largest request ({int(need.max())} tokens) does not fit in the "
                         f"KV space left after the weights ({max(cap, 0):.0f} tokens)")
    # step_time's terms as tables over the token count and the decode count (one vectorised
    # call each), so a step costs a few scalar operations
    fam = efficiency.family(dep.chip)
    L = dep.shapes.L
    launch = par.of(fam, "launch_s")
    over = par["serve.step_overhead_s"]
    m_tab = sum(_m_terms(dep, np.arange(1, max(chunk, max_batch) + 1), par).values())
    head_tab = _lm_head(dep, np.arange(0, max_batch + 1), par)
    kv_s = dep.kv_bytes_per_token / dep.n_chips * _kv_cost_per_byte(dep, par)
    attn_s = 1.0 / (dep.n_chips * par.of(fam, "attn_eff") * dep.chip.peak("bf16"))
    done = np.zeros(n, dtype=np.int64)          # prompt tokens prefilled
    gen = np.zeros(n, dtype=np.int64)           # tokens generated
    ttft = np.full(n, np.nan)
    last = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    itl = np.empty(int(np.sum(O - 1)))
    n_itl = 0
    running = np.zeros(n, dtype=bool)
    used = 0                                    # KV tokens reserved by running requests
    nxt = 0
    t = 0.0
    steps = 0
    batch_sum = 0
    n_left = n
    while n_left:
        if steps >= max_steps:
            raise RuntimeError(f"simulation did not finish in {max_steps} steps")
        n_run = int(running.sum())
        while nxt < n and A[nxt] <= t and n_run < max_batch and used + need[nxt] <= cap:
            running[nxt] = True
            used += int(need[nxt])
            n_run += 1
            nxt += 1
        if n_run == 0:
            t = max(t, float(A[nxt]))
            continue
        idx = np.nonzero(running)[0]            # admission order = arrival order
        left = P[idx] - done[idx]
        dec = idx[left == 0]
        pf = idx[left > 0]
        rem = left[left > 0]
        budget = chunk - dec.size
        take = np.clip(budget - (np.cumsum(rem) - rem), 0, rem)
        pf, take = pf[take > 0], take[take > 0]
        # the step's forecast, as step_time prices it, from the tables built above
        Mi = dec.size + int(take.sum())
        dt = m_tab[Mi - 1] + head_tab[dec.size] + over
        if dec.size:
            dt += float(np.sum(done[dec] + gen[dec])) * kv_s + L * launch
        if pf.size:
            dt += float(np.sum(causal_flops(dep, 1, take, past=done[pf]))) * attn_s + L * launch
        t += dt
        steps += 1
        batch_sum += dec.size + pf.size
        gen[dec] += 1
        itl[n_itl:n_itl + dec.size] = t - last[dec]
        n_itl += dec.size
        last[dec] = t
        done[pf] += take
        first = pf[done[pf] == P[pf]]          # the prefill's last chunk emits token 1
        gen[first] += 1
        ttft[first] = t - A[first]
        last[first] = t
        fin = idx[gen[idx] >= O[idx]]
        finish[fin] = t
        running[fin] = False
        used -= int(np.sum(need[fin]))
        n_left -= fin.size
    return SimResult(ttft, itl[:n_itl], finish - A, float(np.max(finish) - A[0]),
                     int(O.sum()), steps, batch_sum / max(steps, 1))
