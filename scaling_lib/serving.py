"""Serving as GPUs and TPUs pay for it: decode and prefill steps with the costs the chapter-7
bound leaves out, static batches, and a request-level simulation with continuous batching and
chunked prefill.

Units: SI (seconds, bytes, tokens). Book: sec-07-batching (the decode-step bound this forecast
sits on), sec-appendix-validation (against TensorRT-LLM's published throughput and latency).

A serving **step** runs one forward pass over M tokens: the decode tokens of the running
sequences plus, with chunked prefill, a slice of some prompts. Its forecast adds, per layer:

- the layer's GEMMs at M rows (``efficiency.gemm_time``: the weight-read floor, tile/wave
  quantisation, launch; weight-only quantised GEMMs compute at ``serve.wq_compute_eff``);
- attention: reading each sequence's KV cache (decode; kernels that do not share a GQA group's
  KV cache among its query heads read it up to N/K times, ``serve.gqa_reread``) and the
  prompt's causal attention FLOPs (prefill), over ``hbm_eff`` and ``attn_eff``;
- tensor parallelism: two AllReduces of the [M, d_model] activations per layer, each a fixed
  latency (``serve.allreduce_latency_s``: custom one-shot kernels) plus bytes over NVLink;
- MoE expert parallelism: a dispatch and a combine per MoE layer (DeepEP-style low-latency
  all-to-all, ``efficiency.alltoall_lowlatency_time``);
- a few elementwise kernels (norms, rotary, residuals, activation) of ``launch_s`` each;

and, per step, the LM head and ``serve.step_overhead_s`` (scheduling, sampling). The **bound**
is chapter 7's (``inference.decode_step_time`` / ``prefill_time``): every byte read once and
every FLOP at peak, nothing else.

``simulate`` runs requests (arrival times, prompt and output lengths) through a continuous-
batching server that fills each step with the running decodes and up to ``chunk_tokens``
prompt tokens: it returns time to first token (TTFT) and inter-token latency (ITL)
distributions and the throughput.
Ignores: speculative decoding, prefix caching, KV offload, pipeline parallelism in serving,
preemption (a request admitted keeps its KV until it finishes), network time to the client.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import efficiency, hardware, inference
from .units import check_int, check_positive

__all__ = ["Deployment", "StepForecast", "step_time", "decode_step", "prefill", "static_batch",
           "StaticBatch", "Requests", "SimResult", "simulate", "ELEMENTWISE_KERNELS"]

#: elementwise kernels per layer besides GEMMs and attention (2 norms, rotary, 2 residual adds,
#: the MLP activation)
ELEMENTWISE_KERNELS = 6


@dataclass(frozen=True)
class Deployment:
    """A model served on ``tp`` chips (tensor parallel) × ``ep`` (expert parallel), with the
    dtypes of the stored weights, the KV cache and the matmul arithmetic."""

    model: object
    chip: object
    tp: int = 1
    ep: int = 1
    weights: str = "bf16"
    kv: str = "bf16"
    compute: str = "bf16"

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
    """One serving step: its bound and forecast (seconds) and the forecast's parts."""

    bound: float
    forecast: float
    parts: Mapping[str, float]


def _gemm_layer(dep, M, par):
    """Seconds of one layer's GEMMs at M token rows (dense layers; MoE layers add experts)."""
    sh = dep.shapes
    tp = dep.tp
    D = sh.D
    w = dep.weights
    a = dep.compute if dep.compute in ("fp8", "int8") else "bf16"
    shapes = [(sh.Q / tp, D), (D, sh.O / tp)]
    if sh.F > 0:
        shapes += [((sh.mats - 1) * sh.F / tp, D), (D, sh.F / tp)]
    Mv = np.maximum(M, 1.0)
    t = 0.0
    for N, K in shapes:
        t = t + efficiency.gemm_time(Mv, N, K, dep.chip, a=a, b=w, out="bf16",
                                     compute=dep.compute, par=par).forecast
    t_wq = 0.0
    if inference.bytes_per_elem(w) < inference.bytes_per_elem(dep.compute):
        # weight-only quantisation: dequantise in registers, compute at a lower rate
        fl = 2 * Mv * sum(N * K for N, K in shapes)
        t_wq = fl / (dep.chip.peak(dep.compute) * par["serve.wq_compute_eff"])
        t = np.maximum(t, t_wq)
    if sh.E > 1 and sh.moe_frac > 0:
        e_local = sh.E / dep.ep
        Me = np.maximum(Mv * sh.k * dep.ep / sh.E, 1.0)     # tokens per expert (balanced)
        te = 0.0
        for N, K in (((sh.mats - 1) * sh.F_e / tp, D), (D, sh.F_e / tp)):
            te = te + efficiency.gemm_time(Me, N, K, dep.chip, a=a, b=w, out="bf16",
                                           compute=dep.compute, par=par,
                                           count=e_local).forecast
        t = t + sh.moe_frac * te
    return t


def step_time(dep: Deployment, n_decode, decode_ctx_tokens, n_prefill_tokens=0,
              prefill_attn_flops=0.0, par=None) -> StepForecast:
    """Forecast of one serving step: ``n_decode`` sequences each adding a token (their KV caches
    hold ``decode_ctx_tokens`` tokens in all), plus ``n_prefill_tokens`` prompt tokens whose
    attention does ``prefill_attn_flops``. The bound is the chapter-7 one for the same work."""
    par = efficiency.params() if par is None else par
    sh = dep.shapes
    c = dep.chip
    fam = efficiency.family(c)
    nd = float(check_positive("n_decode", n_decode)) if n_decode else 0.0
    npf = float(n_prefill_tokens)
    M = nd + npf
    if M <= 0:
        raise ValueError("a step needs at least one decode sequence or prefill token")
    L = sh.L
    W = c.hbm_bw
    hbm = par.of(fam, "hbm_eff")
    launch = par.of(fam, "launch_s")
    t_gemm = float(_gemm_layer(dep, M, par)) * L
    kv_bytes = float(decode_ctx_tokens) * dep.kv_bytes_per_token / dep.tp
    group = sh.N / max(sh.K, 1)               # query heads per KV head (GQA)
    reread = 1.0 + (group - 1.0) * par["serve.gqa_reread"]
    t_kv = kv_bytes * reread / (hbm * W) + (L * launch if nd else 0.0)
    t_pfa = float(efficiency.attention_time(prefill_attn_flops / dep.tp, c, par=par,
                                            kernels=L)) if npf else 0.0
    t_ar = 0.0
    if dep.tp > 1:
        v = M * sh.D * 2.0
        tb = v * (dep.tp - 1) / dep.tp * 2 / c.nvlink_bw_1way     # ring AllReduce, bytes term
        t_ar = 2 * L * (par["serve.allreduce_latency_s"] + tb / par["nvlink.ring_eff"])
    t_a2a = 0.0
    if dep.ep > 1 and sh.moe_frac > 0:
        per = M / dep.ep * sh.k * sh.D
        t1 = efficiency.alltoall_lowlatency_time(per * 1.0, dep.ep, c.chips_per_host,
                                                 c.dcn_bw_1way, par=par)
        t2 = efficiency.alltoall_lowlatency_time(per * 2.0, dep.ep, c.chips_per_host,
                                                 c.dcn_bw_1way, par=par)
        t_a2a = float(t1 + t2) * L * sh.moe_frac
    t_el = L * ELEMENTWISE_KERNELS * launch + 4.0 * L * M * sh.D * 2.0 / dep.tp / (hbm * W)
    vocab = dep.model.vocab
    a = dep.compute if dep.compute in ("fp8", "int8") else "bf16"
    t_head = float(efficiency.gemm_time(max(nd, 1.0), vocab / dep.tp, sh.D, c, a="bf16",
                                        b="bf16", out="bf16", compute="bf16", par=par).forecast)
    fc = t_gemm + t_kv + t_pfa + t_ar + t_a2a + t_el + t_head + par["serve.step_overhead_s"]
    # ---- the chapter-7 bound for the same work ----
    C = c.peak(dep.compute)
    w_bytes = sh.P_total * inference.bytes_per_elem(dep.weights) / dep.n_chips
    flops = 2.0 * M * sh.P_active / dep.n_chips
    bound = kv_bytes / W + max(flops / C, w_bytes / W) + prefill_attn_flops / dep.tp / \
        c.peak("bf16")
    parts = {"gemm": t_gemm, "kv_read": t_kv, "prefill_attention": t_pfa, "allreduce": t_ar,
             "alltoall": t_a2a, "elementwise": t_el, "lm_head": t_head,
             "overhead": par["serve.step_overhead_s"]}
    return StepForecast(bound, fc, MappingProxyType(parts))


def decode_step(dep: Deployment, batch, ctx_len, par=None) -> StepForecast:
    """One decode step of ``batch`` sequences whose caches hold ``ctx_len`` tokens each."""
    b = check_positive("batch", batch, allow_array=False)
    s = check_positive("ctx_len", ctx_len, allow_array=False)
    return step_time(dep, b, b * s, par=par)


def _causal_flops(dep, n_seq, prompt_len, past=0):
    """Forward attention FLOPs of ``prompt_len`` new tokens over ``past`` cached ones + the causal
    triangle: 4·N·H per query-key pair (scores and values), for every layer."""
    sh = dep.shapes
    pairs = prompt_len * past + prompt_len * (prompt_len + 1) / 2
    return 4.0 * sh.L * sh.N * sh.H * pairs * n_seq


def prefill(dep: Deployment, batch, prompt_len, par=None) -> StepForecast:
    """Prefill of ``batch`` prompts of ``prompt_len`` tokens in one step (time to first token of
    a static batch): GEMMs at M = batch·prompt_len rows (at least one full read of the weights),
    causal attention, TP AllReduces of the whole activation."""
    b = check_positive("batch", batch, allow_array=False)
    t = check_positive("prompt_len", prompt_len, allow_array=False)
    return step_time(dep, 0, 0.0, n_prefill_tokens=b * t,
                     prefill_attn_flops=_causal_flops(dep, b, t), par=par)


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


def static_batch(dep: Deployment, batch, input_len, output_len, par=None,
                 n_samples: int = 16) -> StaticBatch:
    """Time of a static batch (TensorRT-LLM's gptSessionBenchmark). The decode steps' cost is
    linear in the context length, so it is integrated from ``n_samples`` evenly spaced steps."""
    b = int(check_positive("batch", batch, allow_array=False))
    i = int(check_positive("input_len", input_len, allow_array=False))
    o = int(check_positive("output_len", output_len, allow_array=False))
    pf = prefill(dep, b, i, par=par)
    if o == 1:
        return StaticBatch(pf.bound, pf.forecast, pf.forecast, 0.0, b, o, dep.n_chips)
    ctx = np.linspace(i + 1, i + o - 1, min(n_samples, o - 1))
    fc = [decode_step(dep, b, c, par=par) for c in ctx]
    n_dec = o - 1
    t_dec = float(np.mean([f.forecast for f in fc])) * n_dec
    b_dec = float(np.mean([f.bound for f in fc])) * n_dec
    return StaticBatch(pf.bound + b_dec, pf.forecast + t_dec, pf.forecast, t_dec, b, o,
                       dep.n_chips)


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
    """Per-request TTFT and end time, every inter-token gap, and the step log."""

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


def simulate(dep: Deployment, requests: Requests, max_batch: int = 256, chunk_tokens: int = 2048,
             par=None, max_steps: int = 200_000) -> SimResult:
    """Serve ``requests`` with continuous batching and chunked prefill: every step runs all
    running decodes plus up to ``chunk_tokens`` prompt tokens (the oldest waiting prompts
    first); a request joins when fewer than ``max_batch`` are running and its KV cache fits
    in the chips' HBM after the weights. Step times come from ``step_time``."""
    par = efficiency.params() if par is None else par
    max_batch = check_int("max_batch", max_batch)
    chunk = check_int("chunk_tokens", chunk_tokens)
    r = requests
    n = r.arrival.size
    kv_tok = dep.kv_bytes_per_token
    w_bytes = dep.shapes.P_total * inference.bytes_per_elem(dep.weights)
    cap = (dep.n_chips * dep.chip.hbm_bytes * 0.9 - w_bytes) / kv_tok
    if cap < r.prompt_len.max() + r.output_len.max():
        raise ValueError(f"the largest request ({int(r.prompt_len.max() + r.output_len.max())} "
                         f"tokens) does not fit in the KV space left after the weights "
                         f"({max(cap, 0):.0f} tokens)")
    done_pf = np.zeros(n, dtype=np.int64)       # prompt tokens prefilled
    gen = np.zeros(n, dtype=np.int64)           # tokens generated
    ttft = np.full(n, np.nan)
    last_tok = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    itl = []
    running: list = []
    nxt = 0
    t = 0.0
    steps = 0
    batch_sum = 0
    while np.isnan(finish).any():
        if steps >= max_steps:
            raise RuntimeError(f"simulation did not finish in {max_steps} steps")
        while nxt < n and r.arrival[nxt] <= t and len(running) < max_batch and \
                sum(int(r.prompt_len[j] + r.output_len[j]) for j in running) + \
                int(r.prompt_len[nxt] + r.output_len[nxt]) <= cap:
            running.append(nxt)
            nxt += 1
        if not running:
            t = max(t, float(r.arrival[nxt]))
            continue
        dec = [j for j in running if done_pf[j] == r.prompt_len[j]]
        budget = chunk
        pf_now = []
        for j in running:
            if done_pf[j] < r.prompt_len[j] and budget > 0:
                k = int(min(budget, r.prompt_len[j] - done_pf[j]))
                pf_now.append((j, k))
                budget -= k
        ctx = float(sum(done_pf[j] + gen[j] for j in dec))
        n_pf = sum(k for _, k in pf_now)
        fl = sum(_causal_flops(dep, 1, k, past=int(done_pf[j])) for j, k in pf_now)
        st = step_time(dep, len(dec), ctx, n_prefill_tokens=n_pf, prefill_attn_flops=fl,
                       par=par)
        t += st.forecast
        steps += 1
        batch_sum += len(dec) + len(pf_now)
        for j in dec:
            gen[j] += 1
            itl.append(t - last_tok[j])
            last_tok[j] = t
        for j, k in pf_now:
            done_pf[j] += k
            if done_pf[j] == r.prompt_len[j]:     # the prefill's last chunk emits token 1
                gen[j] += 1
                ttft[j] = t - r.arrival[j]
                last_tok[j] = t
        for j in list(running):
            if gen[j] >= r.output_len[j]:
                finish[j] = t
                running.remove(j)
    return SimResult(ttft, np.asarray(itl, dtype=float), finish - r.arrival,
                     float(np.nanmax(finish) - r.arrival[0]), int(r.output_len.sum()), steps,
                     batch_sum / max(steps, 1))
