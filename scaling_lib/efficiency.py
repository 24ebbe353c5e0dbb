"""The efficiency layer: what real kernels, collectives and steps take, on top of the book's bounds.

Units: SI (seconds, bytes, FLOPs, bytes/s). Book: sec-01-your-roofline (the overhead term on the
reader's own chip), sec-appendix-validation (every parameter against published measurements).

The chapters teach clean bounds: a matmul takes max(FLOPs/C, bytes/W), a collective V/W, a step the
max (or sum) of its parts. A bound is not a forecast. Real kernels lose time to effects the bounds
leave out, and this module adds them back with a few named parameters per chip family, each with
a prior from a cited measurement and a value calibrated on published measurements
(``scaling_lib.data``, the calibration half; ``scaling_lib.validation`` fits and scores them):

- **matmul efficiency against shape**: a large GEMM reaches ``mm_eff`` of peak; smaller ones lose
  more to *tile and wave quantisation* on GPUs (the output is cut into CTA tiles, one per SM at a
  time: a last, partial wave idles SMs; DeepGEMM's README shows the effect) and to *MXU padding* on
  TPUs (every dimension padded to the systolic array side);
- **a fixed per-kernel overhead** ``launch_s`` (launch, prologue, epilogue, synchronisation): it
  dominates small kernels (chapter 1's small-B points, a decode step's hundreds of kernels);
- **achieved HBM bandwidth** ``hbm_eff``;
- **collectives**: a per-step latency and an achieved fraction of the link bandwidth per tier
  (NVLink ring, NVLink SHARP, InfiniBand/RoCE NIC, TPU ICI, DCN);
- **MoE all-to-all** in decode (a fixed latency, a local and a remote bandwidth);
- **attention kernels** reach ``attn_eff`` of the 16-bit peak;
- **partial overlap**: ``overlap(t_a, t_b, f)`` lies between the max (f = 1) and the sum (f = 0).

``Params`` holds the values; ``params()`` loads the calibrated table shipped in
``scaling_lib/data/efficiency_params.json`` (written by ``python -m scaling_lib.validation
calibrate``; every entry names its prior, the evidence for it and the records that calibrated it).
``fit(residuals, ...)`` is the numpy Levenberg–Marquardt used for that calibration and for
chapter 1's fit on the reader's machine (``fit_cpu_roofline``).

Ignores: clock throttling, contention from other jobs, load imbalance between experts, kernels
fused differently from one framework to the next (absorbed into the calibrated values).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

import numpy as np

from . import hardware
from .units import check_nonneg, check_positive, dtype_bytes

__all__ = ["FAMILIES", "family", "Param", "Params", "PRIORS", "params", "PARAMS_PATH",
           "tile_factor", "mxu_factor", "gemm_time", "GemmForecast", "overlap",
           "collective_time", "alltoall_lowlatency_time", "attention_time", "fit", "FitResult",
           "fit_cpu_roofline", "CpuRoofline", "REMAT_RECOMPUTE", "OWN_ROOFLINE_SHAPES",
           "OwnRoofline", "own_roofline", "own_roofline_split"]

#: chip families with their own parameters (Blackwell borrows Hopper's until data exist)
FAMILIES = ("hopper", "ampere", "tpu", "cpu")
PARAMS_PATH = Path(__file__).with_name("data") / "efficiency_params.json"


def family(chip) -> str:
    """'hopper' (H100, H200, H800, and B200/GB200 with Hopper's values), 'ampere' (A100, V100),
    'tpu' or 'cpu'."""
    c = hardware.get(chip) if not isinstance(chip, hardware.Chip) else chip
    if c.family in ("tpu", "cpu"):
        return c.family
    return "ampere" if c.generation in ("Ampere", "Volta") else "hopper"


@dataclass(frozen=True)
class Param:
    """One named parameter: its value, the prior it started from, its allowed range, what it is
    and the evidence behind the prior."""

    name: str
    value: float
    prior: float
    lo: float
    hi: float
    what: str
    evidence: str
    calibrated_on: tuple = ()


# name: (prior, lo, hi, what, evidence for the prior)
_PRIOR_TABLE = {
    "hopper.mm_eff": (0.70, 0.4, 0.95, "fraction of dense peak a large GEMM reaches (Hopper)",
                      "DeepGEMM README: 1358 of 1979 TFLOP/s FP8 at 4096x7168x16384 on H800"),
    "hopper.hbm_eff": (0.90, 0.6, 0.98, "fraction of HBM bandwidth a streaming kernel reaches",
                       "FlashMLA README: 3000 of 3350 GB/s on H800"),
    "hopper.launch_s": (3e-6, 1e-7, 1e-4, "fixed time per kernel (launch, prologue, epilogue)",
                        "a few microseconds per CUDA kernel launch"),
    "hopper.attn_eff": (0.67, 0.3, 0.9, "fraction of the 16-bit peak an attention kernel reaches",
                        "FlashAttention-3 Table 2: 661 of 989 TFLOP/s"),
    "ampere.mm_eff": (0.80, 0.4, 0.95, "fraction of dense peak a large GEMM reaches (Ampere)",
                      "cuBLAS on A100 reaches about 250 of 312 TFLOP/s on large BF16 GEMMs"),
    "ampere.hbm_eff": (0.90, 0.6, 0.98, "fraction of HBM bandwidth a streaming kernel reaches",
                       "as Hopper"),
    "ampere.launch_s": (4e-6, 1e-7, 1e-4, "fixed time per kernel", "as Hopper"),
    "ampere.attn_eff": (0.60, 0.3, 0.9, "fraction of the 16-bit peak an attention kernel reaches",
                        "FlashAttention-2 paper: 50-73% of the A100 peak in the forward pass"),
    "tpu.mm_eff": (0.90, 0.4, 0.98, "fraction of the MXU peak a large matmul reaches",
                   "the book: TPU matmuls reach ~95% of peak (CANON §1.1)"),
    "tpu.hbm_eff": (0.90, 0.6, 0.98, "fraction of HBM bandwidth a streaming op reaches", "as GPUs"),
    "tpu.launch_s": (1e-6, 1e-8, 1e-4, "fixed time per XLA op", "XLA fuses ops; ~1 µs each"),
    "tpu.attn_eff": (0.60, 0.3, 0.9, "fraction of the peak an attention kernel reaches",
                     "Pallas flash attention, assumed as GPUs"),
    "cpu.mm_eff": (1.0, 0.3, 1.0, "CPUs: calibrated live (fit_cpu_roofline)", "chapter 1"),
    "cpu.hbm_eff": (1.0, 0.3, 1.0, "CPUs: calibrated live (fit_cpu_roofline)", "chapter 1"),
    "cpu.launch_s": (2e-5, 1e-7, 1e-2, "CPUs: dispatch time of one jitted call", "chapter 1"),
    "cpu.attn_eff": (0.5, 0.1, 1.0, "CPUs: not calibrated", "chapter 1"),
    "nvlink.ring_eff": (0.82, 0.5, 0.98, "fraction of NVLink bandwidth a ring collective reaches",
                        "nccl-tests #212: ~370 of 450 GB/s busBw on 8 H100"),
    "nvlink.nvls_eff": (0.61, 0.3, 0.98, "NVLink SHARP AllReduce: algbw / NVLink bandwidth",
                        "nccl-tests #212: algbw ~275 GB/s (busBw ~480 GB/s) on 8 H100"),
    "nvlink.step_latency_s": (2e-6, 1e-7, 5e-5, "latency per ring step inside an NVLink domain",
                              "NCCL small-message all-gather on 8 GPUs: ~15-20 µs"),
    "nic.eff": (0.94, 0.5, 1.0, "fraction of a 400 Gb/s NIC a collective reaches",
                "nccl-tests #290: 46-48 GB/s per NDR NIC"),
    "nic.latency_s": (1e-5, 1e-7, 1e-3, "latency of one collective across nodes",
                      "InfiniBand round trips, a few µs per ring step"),
    "ici.eff": (0.95, 0.6, 1.0, "fraction of TPU ICI bandwidth a collective reaches",
                "the book: measured TPU AllGather ~95% of link peak (CANON §1.1)"),
    "dcn.eff": (0.80, 0.4, 1.0, "fraction of DCN bandwidth a collective reaches",
                "assumed (no published DCN collective benchmark in the data)"),
    "a2a.latency_s": (5e-5, 1e-6, 1e-3, "fixed latency of a low-latency MoE dispatch/combine",
                      "DeepEP: 77 µs for EP 8 with 7.3 MB"),
    "a2a.local_bw": (1.5e11, 1e10, 1e12, "bytes/s of the node-local part of a low-latency all-to-all",
                     "DeepEP: ~98 GB/s 'RDMA bandwidth' for EP 8"),
    "train.elementwise_bytes": (60.0, 0.0, 600.0,
                                "HBM bytes per token per d_model per layer moved by non-matmul "
                                "kernels (norms, activations, residuals, dropout), forward + backward",
                                "each elementwise pass reads and writes a [tokens, d_model] array"),
    "train.attn_overhead": (1.0, 0.8, 3.0, "attention inside a training framework relative to the "
                                           "kernel alone (masks, position biases, layout changes)",
                            "the kernel benchmarks above time the kernel alone"),
    "train.overlap": (0.8, 0.0, 1.0, "share of data-parallel/FSDP/pipeline communication hidden "
                                     "behind compute", "frameworks overlap gradient and weight "
                                                       "collectives with the next layers"),
    "train.tp_overlap": (0.0, 0.0, 1.0, "share of tensor/context/expert-parallel communication "
                                        "hidden behind compute", "Megatron's TP all-reduces sit on "
                                                                 "the critical path"),
    "serve.allreduce_latency_s": (8e-6, 1e-6, 1e-4, "fixed time of one small tensor-parallel "
                                                    "AllReduce in a serving step (custom one-shot "
                                                    "kernels)",
                                  "sglang PR #2904 (H100, TP 8, 512 B): 5.9 µs custom, 10.1 µs "
                                  "vLLM's kernel"),
    "serve.wq_compute_eff": (0.7, 0.3, 1.0,
                             "compute rate of weight-only quantised GEMMs (dequantised in "
                             "registers) relative to the rate the same GEMM reaches in 16 bits",
                             "assumed; no published measurement in the data; Marlin's README: "
                             "near-ideal 4x over FP16 only up to 16-32 tokens; IST-DASLab/marlin"
                             "#2: at long sequences FP16xFP16 cuBLAS outperforms it on A100"),
    "serve.gqa_reread": (0.0, 0.0, 1.0, "share of the query heads of a GQA group that re-read the "
                                        "group's KV cache in a decode step (0: read once per "
                                        "group, as XQA/FlashInfer kernels do; 1: once per query "
                                        "head, as older multi-head kernels did)",
                         "a kernel property; TensorRT-LLM added its GQA kernel (XQA) after the "
                         "v0.6 release measured here"),
    "serve.step_overhead_s": (1e-4, 1e-6, 1e-2, "fixed time per serving step (scheduling, "
                                                "sampling, launches)", "TensorRT-LLM / vLLM step "
                                                                      "overheads of ~0.1 ms"),
}

PRIORS = MappingProxyType({k: v[0] for k, v in _PRIOR_TABLE.items()})


class Params(Mapping):
    """The efficiency parameters (a read-only mapping name → value, plus ``.info[name]``)."""

    def __init__(self, info: Mapping[str, Param]):
        missing = set(_PRIOR_TABLE) - set(info)
        if missing:
            raise ValueError(f"efficiency parameters missing: {', '.join(sorted(missing))}")
        for p in info.values():
            if not (p.lo <= p.value <= p.hi):
                raise ValueError(f"parameter {p.name} = {p.value:g} is outside its range "
                                 f"[{p.lo:g}, {p.hi:g}]")
        self.info = MappingProxyType(dict(info))

    def __getitem__(self, k):
        if k not in self.info:
            raise KeyError(f"unknown efficiency parameter {k!r}; known: {', '.join(self.info)}")
        return self.info[k].value

    def __iter__(self):
        return iter(self.info)

    def __len__(self):
        return len(self.info)

    def of(self, fam: str, what: str) -> float:
        return self[f"{fam}.{what}"]

    def replace(self, **values) -> "Params":
        """A copy with some values changed (keys with '.' written as '__': ``hopper__mm_eff=0.6``)."""
        info = dict(self.info)
        for k, v in values.items():
            name = k.replace("__", ".")
            if name not in info:
                raise KeyError(f"unknown efficiency parameter {name!r}")
            info[name] = _dc_replace(info[name], value=float(v))
        return Params(info)

    def with_values(self, values: Mapping[str, float], calibrated_on=()) -> "Params":
        info = dict(self.info)
        for k, v in values.items():
            info[k] = _dc_replace(info[k], value=float(v), calibrated_on=tuple(calibrated_on))
        return Params(info)

    def table(self) -> list:
        return [{"name": p.name, "value": p.value, "prior": p.prior, "what": p.what,
                 "evidence": p.evidence, "calibrated_on": len(p.calibrated_on)}
                for p in self.info.values()]


def _dc_replace(p: Param, **kw) -> Param:
    import dataclasses
    return dataclasses.replace(p, **kw)


def prior_params() -> Params:
    """The priors (the cited starting values, before any calibration)."""
    return Params({k: Param(k, v[0], v[0], v[1], v[2], v[3], v[4]) for k, v in
                   _PRIOR_TABLE.items()})


@lru_cache(maxsize=2)
def _load_params(path: str) -> Params:
    base = prior_params()
    p = Path(path)
    if not p.exists():
        return base
    doc = json.loads(p.read_text(encoding="utf-8"))
    vals = doc.get("values", {})
    unknown = set(vals) - set(base.info)
    if unknown:
        raise ValueError(f"{path}: unknown parameter(s) {', '.join(sorted(unknown))}")
    return base.with_values(vals, calibrated_on=doc.get("calibrated_on", ()))


def params(path=None) -> Params:
    """The calibrated parameters shipped with the library (priors where none is stored)."""
    return _load_params(str(path or PARAMS_PATH))


def _p(par):
    return params() if par is None else par


# =============================================================================================
# matmuls
# =============================================================================================

_TILE_N = np.arange(64, 257, 16)


def tile_factor(M, N, n_sm):
    """GPU tile and wave quantisation: time of an M×N output cut into CTA tiles (BLOCK_M 64 for
    M ≤ 64, else 128; BLOCK_N chosen from 64…256 in steps of 16, as DeepGEMM's 'unaligned block
    sizes' do, to fill the SMs) relative to perfectly divided work. ≥ 1; → 1 for large outputs.
    Vectorised over M and N."""
    M = np.asarray(M, dtype=float)
    N = np.asarray(N, dtype=float)
    tm = np.where(M <= 64, 64.0, 128.0)[..., None]
    tn = _TILE_N.astype(float)
    tiles = np.ceil(M[..., None] / tm) * np.ceil(N[..., None] / tn)
    waves = np.ceil(tiles / n_sm)
    work = waves * n_sm * tm * tn                 # tile-area × SM slots actually spent
    best = np.min(work, axis=-1)
    return best / (M * N)


def mxu_factor(M, N, K, mxu: int):
    """TPU MXU padding: (padded M·N·K) / (M·N·K), every dimension padded to the array side."""
    pad = lambda x: np.ceil(np.asarray(x, dtype=float) / mxu) * mxu  # noqa: E731
    return pad(M) * pad(N) * pad(K) / (np.asarray(M, float) * np.asarray(N, float) *
                                      np.asarray(K, float))


@dataclass(frozen=True)
class GemmForecast:
    """Bound (max(FLOPs/C, bytes/W)) and forecast of one matmul; times in seconds."""

    flops: object
    bytes: object
    bound: object
    forecast: object
    t_compute: object
    t_memory: object
    quantization: object

    @property
    def flops_per_s(self):
        return np.asarray(self.flops) / np.asarray(self.forecast)


def gemm_time(M, N, K, chip, a="bf16", b=None, out="bf16", compute=None, par=None,
              count=1) -> GemmForecast:
    """Forecast of ``count`` GEMMs [M,K]·[K,N] → [M,N] on ``chip`` (vectorised over M, N, K).

    forecast = launch + max(t_compute, t_read) + t_write, with t_compute = 2MNK/(mm_eff·C)
    × tile (GPU) or MXU (TPU) quantisation, t_read the inputs and t_write the output over
    hbm_eff·W (the output is written after the main loop, so it adds; the input stream overlaps).
    ``compute`` is the dtype of the arithmetic (default: ``a``).
    """
    chip = hardware.get(chip)
    par = _p(par)
    b = a if b is None else b
    compute = compute or a
    M = np.asarray(check_positive("M", M), dtype=float)
    N = np.asarray(check_positive("N", N), dtype=float)
    K = np.asarray(check_positive("K", K), dtype=float)
    fam = family(chip)
    C = chip.peak(compute)
    W = chip.hbm_bw
    flops = 2.0 * M * N * K * count
    rd = (M * K * dtype_bytes(a) + K * N * dtype_bytes(b)) * count
    wr = M * N * dtype_bytes(out) * count
    bound = np.maximum(flops / C, (rd + wr) / W)
    if fam in ("hopper", "ampere"):
        q = tile_factor(M, N, chip.n_sm)
    elif fam == "tpu":
        q = mxu_factor(M, N, K, chip.mxu_size or 128)
    else:
        q = np.ones_like(M * N)
    tc = flops * q / (par.of(fam, "mm_eff") * C)
    tr = rd / (par.of(fam, "hbm_eff") * W)
    tw = wr / (par.of(fam, "hbm_eff") * W)
    fc = count * par.of(fam, "launch_s") + np.maximum(tc, tr) + tw
    return GemmForecast(flops, rd + wr, bound, fc, tc, tr + tw, q)


def overlap(t_a, t_b, f):
    """Two activities that overlap partly: f = 1 → max(t_a, t_b) (perfect overlap, the
    chapters' bound), f = 0 → t_a + t_b; in between, max + (1 − f)·min."""
    a, b = np.asarray(t_a, dtype=float), np.asarray(t_b, dtype=float)
    f = np.asarray(f, dtype=float)
    if np.any((f < 0) | (f > 1)):
        raise ValueError(f"overlap fraction must be in [0, 1], got {f}")
    return np.maximum(a, b) + (1 - f) * np.minimum(a, b)


#: extra FLOPs of recomputation per remat policy, as a fraction of the forward pass of the part
#: recomputed ('selective' recomputes the attention core, FlashAttention-style; 'full' the whole
#: forward, which ``step`` already counts)
REMAT_RECOMPUTE = MappingProxyType({"none": 0.0, "selective": 1.0, "full": 1.0})


# =============================================================================================
# collectives
# =============================================================================================

_KIND_STEPS = {"all_gather": 1, "reduce_scatter": 1, "all_reduce": 2, "all_to_all": 1,
               "permute": 1}


def collective_time(kind, t_bandwidth, n, tier: str, algorithm: str = "ring", par=None):
    """Forecast of one collective from its bandwidth bound ``t_bandwidth`` (seconds, as
    ``collectives`` prices it with the exact ring factor (n−1)/n): bandwidth over the achieved
    fraction of the tier, plus latency. Tiers: 'nvlink' (ring steps of ``step_latency_s``; with
    ``algorithm='nvls'`` the SHARP AllReduce reaches ``nvls_eff`` of one pass), 'nic' (GPU
    scale-out), 'ici', 'dcn'. Vectorised over t_bandwidth and n."""
    par = _p(par)
    tb = np.asarray(check_nonneg("t_bandwidth", t_bandwidth), dtype=float)
    n = np.asarray(n, dtype=float)
    if kind not in _KIND_STEPS:
        raise ValueError(f"unknown collective {kind!r}; allowed: {', '.join(_KIND_STEPS)}")
    steps = _KIND_STEPS[kind] * np.maximum(n - 1, 0)
    if tier == "nvlink":
        if algorithm == "nvls":
            if kind != "all_reduce":
                raise ValueError("algorithm 'nvls' (NVLink SHARP) is an AllReduce")
            return tb / par["nvlink.nvls_eff"] + 2 * par["nvlink.step_latency_s"]
        if algorithm != "ring":
            raise ValueError(f"algorithm must be 'ring' or 'nvls', got {algorithm!r}")
        return tb / par["nvlink.ring_eff"] + steps * par["nvlink.step_latency_s"]
    if tier == "nic":
        return tb / par["nic.eff"] + par["nic.latency_s"] * np.where(n > 1, 1.0, 0.0)
    if tier == "ici":
        return tb / par["ici.eff"]
    if tier == "dcn":
        return tb / par["dcn.eff"]
    raise ValueError(f"tier must be 'nvlink', 'nic', 'ici' or 'dcn', got {tier!r}")


def alltoall_lowlatency_time(nbytes, ep, gpus_per_node, nic_bw, par=None):
    """A decode-time MoE dispatch or combine (DeepEP's low-latency kernels): each GPU sends
    ``nbytes`` (tokens × top_k × hidden × bytes/elem); the share bound for other nodes,
    1 − 1/nodes, crosses its NIC at ``nic.eff``·``nic_bw``, the rest stays in the node at
    ``a2a.local_bw``; plus a fixed ``a2a.latency_s``. Vectorised over nbytes and ep."""
    par = _p(par)
    v = np.asarray(check_nonneg("nbytes", nbytes), dtype=float)
    nodes = np.maximum(np.asarray(ep, dtype=float) / gpus_per_node, 1.0)
    remote = 1.0 - 1.0 / nodes
    return (par["a2a.latency_s"] + v * remote / (par["nic.eff"] * nic_bw)
            + v * (1 - remote) / par["a2a.local_bw"])


def attention_time(flops, chip, dtype="bf16", par=None, kernels=1):
    """Forecast of an attention kernel doing ``flops`` (as counted, e.g. 4·s²·d·h for a
    non-causal forward): FLOPs/(attn_eff·C_16bit) + launch."""
    chip = hardware.get(chip)
    par = _p(par)
    fam = family(chip)
    C = chip.peak(dtype if dtype in chip.flops_per_s else "bf16")
    return np.asarray(flops, dtype=float) / (par.of(fam, "attn_eff") * C) + \
        kernels * par.of(fam, "launch_s")


# =============================================================================================
# calibration: numpy Levenberg–Marquardt with box constraints
# =============================================================================================

@dataclass(frozen=True)
class FitResult:
    """Fitted values, the residuals at the optimum and how many evaluations it took."""

    values: Mapping[str, float]
    residuals: np.ndarray
    cost: float
    n_eval: int
    converged: bool

    def __getitem__(self, k):
        return self.values[k]


def _to_u(x, lo, hi, logscale):
    x = np.clip(x, lo + 1e-12 * abs(hi - lo), hi - 1e-12 * abs(hi - lo))
    if logscale:
        lx, llo, lhi = np.log(x), np.log(lo), np.log(hi)
        z = (lx - llo) / (lhi - llo)
    else:
        z = (x - lo) / (hi - lo)
    return np.log(z / (1 - z))


def _from_u(u, lo, hi, logscale):
    z = 1 / (1 + np.exp(-np.clip(u, -500, 500)))
    if logscale:
        return np.exp(np.log(lo) + z * (np.log(hi) - np.log(lo)))
    return lo + z * (hi - lo)


def fit(residuals, x0: Mapping[str, float], bounds: Mapping[str, tuple], *, max_iter: int = 200,
        tol: float = 1e-10, restarts: int = 0) -> FitResult:
    """Minimise Σ residuals(values)² over the named parameters in ``x0`` within ``bounds``
    (name → (lo, hi); positive ranges spanning more than a factor of 20 are searched in log
    space). ``residuals`` maps a dict of values to a 1-D array. Levenberg–Marquardt on
    unconstrained logit coordinates, numeric Jacobian. ``restarts``: run it again that many times
    from the best point so far with every coordinate pulled inside |logit| ≤ 6 (a parameter that
    reached a bound, or started on one, has no gradient there and would stay stuck) and keep the
    lowest cost: deterministic, it only ever lowers the cost."""
    names = list(x0)
    if not names:
        raise ValueError("fit needs at least one parameter")
    if isinstance(restarts, bool) or not isinstance(restarts, int) or restarts < 0:
        raise ValueError(f"restarts must be an int >= 0, got {restarts!r}")
    for k in names:
        lo, hi = bounds[k]
        if not lo < hi:
            raise ValueError(f"bounds of {k}: lo must be < hi, got {lo}, {hi}")
    logs = [bounds[k][0] > 0 and bounds[k][1] / bounds[k][0] > 20 for k in names]

    def vals(uu):
        return {k: float(_from_u(uu[i], *bounds[k], logs[i])) for i, k in enumerate(names)}

    def res(uu):
        r = np.asarray(residuals(vals(uu)), dtype=float)
        return np.where(np.isfinite(r), r, 1e6)

    def lm(u):
        n_eval = 1
        r = res(u)
        cost = float(r @ r)
        lam = 1e-2
        converged = False
        for _ in range(max_iter):
            J = np.empty((r.size, u.size))
            for j in range(u.size):
                du = 1e-5 * max(1.0, abs(u[j]))
                uj = u.copy()
                uj[j] += du
                J[:, j] = (res(uj) - r) / du
            n_eval += u.size
            g = J.T @ r
            H = J.T @ J
            improved = False
            for _ in range(12):
                step = np.linalg.solve(H + lam * (np.diag(np.diag(H)) + 1e-9 * np.eye(u.size)),
                                       -g)
                un = u + step
                rn = res(un)
                n_eval += 1
                cn = float(rn @ rn)
                if cn < cost:
                    improved = True
                    rel = (cost - cn) / max(cost, 1e-300)
                    u, r, cost = un, rn, cn
                    lam = max(lam / 3, 1e-9)
                    break
                lam *= 4
            if not improved or rel < tol:
                converged = True
                break
        return u, r, cost, n_eval, converged

    u0 = np.array([_to_u(x0[k], *bounds[k], lg) for k, lg in zip(names, logs)])
    u, r, cost, n_eval, converged = lm(u0)
    for _ in range(restarts):
        u2, r2, c2, n2, conv2 = lm(np.clip(u, -6.0, 6.0))
        n_eval += n2
        if c2 < cost:
            u, r, cost, converged = u2, r2, c2, conv2
    return FitResult(MappingProxyType(vals(u)), r, cost, n_eval, converged)


# =============================================================================================
# chapter 1: the reader's own roofline, with the overhead term
# =============================================================================================

@dataclass(frozen=True)
class CpuRoofline:
    """A roofline with an overhead term fitted to measured matmuls:
    t = t0 + overlap(F/peak, B/bandwidth, f) (f = 1: the clean max; f = 0: compute and memory
    traffic do not overlap at all)."""

    peak: float
    bandwidth: float
    overhead: float
    overlap: float
    n_points: int
    rms_log_error: float

    def time(self, flops, nbytes):
        return self.overhead + overlap(np.asarray(flops, float) / self.peak,
                                       np.asarray(nbytes, float) / self.bandwidth, self.overlap)

    def bound(self, flops, nbytes):
        """The clean roofline (no overhead, perfect overlap) with the fitted peak and bandwidth."""
        return np.maximum(np.asarray(flops, float) / self.peak,
                          np.asarray(nbytes, float) / self.bandwidth)


def fit_cpu_roofline(flops, nbytes, seconds, *, peak0=None, bw0=None) -> CpuRoofline:
    """Fit peak FLOPs/s, bandwidth, a fixed overhead and the overlap fraction to measured kernel
    times (least squares on log time, so every point counts by its relative error). Needs at
    least 4 points; the points it is scored on should be other shapes (chapter 1 holds half of
    its sweep back)."""
    F = np.asarray(flops, dtype=float).ravel()
    B = np.asarray(nbytes, dtype=float).ravel()
    T = np.asarray(seconds, dtype=float).ravel()
    if not (F.size == B.size == T.size) or F.size < 4:
        raise ValueError(f"fit_cpu_roofline needs >= 4 points of equal length, got {F.size}, "
                         f"{B.size}, {T.size}")
    if np.any(F <= 0) or np.any(B <= 0) or np.any(T <= 0):
        raise ValueError("flops, nbytes and seconds must all be positive")
    peak0 = peak0 or float(np.max(F / T))
    bw0 = bw0 or float(np.max(B / T))
    t00 = max(float(np.min(T)) * 0.3, 1e-7)

    def r(v):
        pred = v["t0"] + overlap(F / v["peak"], B / v["bw"], v["f"])
        return np.log(pred / T)

    best = None
    for f0 in (0.2, 0.8):          # two starts: the fit is not convex in f
        res = fit(r, {"peak": peak0, "bw": bw0, "t0": t00, "f": f0},
                  {"peak": (peak0 / 30, peak0 * 30), "bw": (bw0 / 30, bw0 * 30),
                   "t0": (1e-8, float(np.max(T))), "f": (0.0, 1.0)})
        if best is None or res.cost < best.cost:
            best = res
    rms = float(np.sqrt(np.mean(best.residuals ** 2)))
    return CpuRoofline(best["peak"], best["bw"], best["t0"], best["f"], int(F.size), rms)


#: chapter 1's sweep on a CPU: (D, F) groups × batch sizes B, from tiny (overhead-bound: the
#: 256 × 256 group) through memory-bound to compute-bound matmuls, f32 (≤ 1.2 GFLOP each, so
#: the sweep fits the notebook's budget on two cores)
OWN_ROOFLINE_SHAPES = MappingProxyType({(1024, 1024): (1, 4, 16, 64, 256, 512),
                                        (512, 2048): (2, 8, 32, 128, 384, 512),
                                        (2048, 512): (1, 4, 16, 64, 256, 512),
                                        (768, 768): (2, 8, 32, 128, 512, 1024),
                                        (256, 256): (1, 4, 16, 64, 256, 1024)})


@dataclass(frozen=True)
class OwnRoofline:
    """Chapter 1's roofline of the reader's device: a sweep timed ``repeats`` times (each point's
    fastest repeat counts: contention only ever adds time), a roofline-with-overhead fitted on
    the calibration shapes only, and each point's measured / predicted. Arrays are per point.

    ``spread``: the largest/smallest of each parameter when each repeat is fitted on its own
    (how far the calibration moves from run to run on this machine); ``repeat_noise``: the
    median |t₁/t₂ − 1| of the same shape timed in the first two repeats: no model can be scored
    closer than the machine repeats itself."""

    B: np.ndarray
    D: np.ndarray
    F: np.ndarray
    seconds: np.ndarray
    flops: np.ndarray
    nbytes: np.ndarray
    calibrate: np.ndarray
    fit: CpuRoofline
    spread: Mapping[str, float]
    repeats: int
    repeat_noise: float = float("nan")

    @property
    def predicted(self) -> np.ndarray:
        return self.fit.time(self.flops, self.nbytes)

    @property
    def bound(self) -> np.ndarray:
        """The clean roofline with the fitted peak and bandwidth (no overhead)."""
        return self.fit.bound(self.flops, self.nbytes)

    @property
    def ratio(self) -> np.ndarray:
        """measured / predicted."""
        return self.seconds / self.predicted

    @property
    def held_out_error(self) -> float:
        """median |measured/predicted − 1| on the shapes the fit never saw."""
        return float(np.median(np.abs(self.ratio[~self.calibrate] - 1)))

    @property
    def held_out_bound_error(self) -> float:
        """the same for the clean roofline (fitted peak and bandwidth, no overhead)."""
        q = self.seconds[~self.calibrate] / self.bound[~self.calibrate]
        return float(np.median(np.abs(q - 1)))


def own_roofline_split(shapes=OWN_ROOFLINE_SHAPES):
    """(B, D, F, calibrate?) of every point of a sweep: in each (D, F) group the batch sizes
    alternate calibrate / score, starting on the other foot in every other group, so both
    halves span the whole range of intensities and no scored shape is ever fitted."""
    out = []
    for g, ((D, F), Bs) in enumerate(shapes.items()):
        check_positive("D", D, allow_array=False)
        check_positive("F", F, allow_array=False)
        for i, b in enumerate(Bs):
            check_positive("B", b, allow_array=False)
            out.append((int(b), int(D), int(F), (i + g) % 2 == 0))
    return out


def own_roofline(sweep, shapes=OWN_ROOFLINE_SHAPES, *, dtype: str = "f32", repeats: int = 3,
                 n_iter: int = 15) -> OwnRoofline:
    """Chapter 1's calibration on the reader's own device. ``sweep(Bs, D, F, dtype=, n_iter=)``
    times X[B,D]·W[D,F] and returns dicts with 't' (``scaling_lib.xla.measure.matmul_sweep``;
    passed in so that this module needs no JAX; called with ``stat='min'``: the fastest of
    ``n_iter`` calls). Every group is timed ``repeats`` times, interleaved; each point keeps
    its fastest time (3 × 15 calls by default: on a shared machine more samples of the
    fastest time steady the fit, and they cost little: compiling each shape once dominates the
    sweep's time); ``fit_cpu_roofline`` fits peak, bandwidth,
    a fixed overhead and the overlap on the calibration half of ``own_roofline_split``."""
    repeats = int(repeats)
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if not callable(sweep):
        raise TypeError(f"sweep must be callable (measure.matmul_sweep), got {type(sweep).__name__}")
    pts = own_roofline_split(shapes)
    bpe = dtype_bytes(dtype)
    times = np.full((repeats, len(pts)), np.inf)
    for r in range(repeats):
        k = 0
        for (D, F), Bs in shapes.items():
            res = sweep(list(Bs), D, F, dtype=dtype, n_iter=n_iter, stat="min")
            if len(res) != len(Bs):
                raise ValueError(f"sweep returned {len(res)} points for {len(Bs)} batch sizes")
            for x in res:
                times[r, k] = float(x["t"])
                k += 1
    B = np.array([p[0] for p in pts], float)
    D = np.array([p[1] for p in pts], float)
    F = np.array([p[2] for p in pts], float)
    cal = np.array([p[3] for p in pts])
    flops = 2 * B * D * F
    nbytes = (B * D + D * F + B * F) * bpe
    t = times.min(axis=0)
    fit_ = fit_cpu_roofline(flops[cal], nbytes[cal], t[cal])
    spread = {}
    noise = float("nan")
    if repeats > 1:
        noise = float(np.median(np.abs(times[0] / times[1] - 1)))
        each = [fit_cpu_roofline(flops[cal], nbytes[cal], times[r, cal]) for r in range(repeats)]
        for nm in ("peak", "bandwidth", "overhead"):
            v = np.array([getattr(e, nm) for e in each])
            spread[nm] = float(v.max() / v.min())
    return OwnRoofline(B, D, F, t, flops, nbytes, cal, fit_, MappingProxyType(spread), repeats,
                       noise)


# =============================================================================================
# a training step: the forecast over step.evaluate's bound
# =============================================================================================

#: FlashAttention's backward pass recomputes the scores: 5 matmuls against the forward's 2, so
#: attention costs 1 + 2.5 forward passes, not the 1 + 2 the 6·L·T·N·H count assumes
#: (FlashAttention-3 paper, sec. 4.1)
ATTN_BACKWARD = 2.5

_EXPOSED = ("tp", "cp", "ep")
_HIDDEN = ("fsdp", "pp", "dp", "dcn")


@dataclass(frozen=True)
class TrainingForecast:
    """A training step forecast beside its bound; seconds per step. ``parts`` holds each term."""

    bound: float
    forecast: float
    parts: Mapping[str, float]

    @property
    def slowdown(self) -> float:
        """forecast / bound."""
        return self.forecast / self.bound


def _layer_gemms(sh, tokens, tp):
    """(M, N, K) of one layer's forward GEMMs on one device: QKV, output, MLP in (gate+up),
    MLP out; experts add their own with M = tokens·k/E per expert."""
    D = sh.D
    qkv_n = max(sh.Q / tp, 1.0)                   # fused Q/K/V width per device
    o_k = max(sh.O / tp, 1.0)
    g = [(tokens, qkv_n, D), (tokens, D, o_k)]
    if sh.F > 0:
        g += [(tokens, (sh.mats - 1) * sh.F / tp, D), (tokens, D, sh.F / tp)]
    return g


def _tp_collective_phases(strategy, parallel_block: bool) -> int:
    """Latency-paying phases of one layer's tensor-parallel activation collectives (forward and
    backward), read from ``strategy.layer_comms``: an AllGather or a ReduceScatter is one ring
    pass, an AllReduce two. 8 for a sequential block with or without sequence parallelism
    (4 AG/RS or 2 AR each way), 4 for a parallel block."""
    from .strategy import layer_comms
    items = layer_comms(3 if strategy.zero == 3 else 1, strategy.sp, parallel_block)
    return sum(_KIND_STEPS[it.kind] for it in items
               if it.operand == "act" and "tensor" in it.axes)


def training_forecast(result, model=None, par=None, comm_sms: int = 0) -> TrainingForecast:
    """Forecast of one training step from ``step.evaluate``'s ``StepResult`` (the bound):

    - matmuls: the bound's compute time, split into the layer GEMMs (each priced by
      ``gemm_time`` at its per-device shape: tile/wave or MXU quantisation, launch, memory) and
      attention (FlashAttention's extra backward recompute, ``attn_eff`` of the 16-bit peak even
      in FP8 runs); 'selective' remat recomputes the attention forward;
    - non-matmul kernels: ``train.elementwise_bytes`` per token per d_model per layer over HBM;
    - communication: each family of the bound over its tier's achieved fraction (NVLink ring,
      NIC, ICI, DCN) plus ring-step latency for the per-layer TP collectives; tensor/context/
      expert-parallel traffic overlaps compute by ``train.tp_overlap`` (DualPipe hides EP:
      it counts as overlappable), data/FSDP/pipeline traffic by ``train.overlap``;
    - the pipeline bubble of the bound's schedule, then the optimizer update (every state
      byte read and written once over HBM).

    ``comm_sms``: SMs a run reserves for communication kernels (DeepSeek-V3: 20 of 132); the
    others do the computing.
    """
    from . import step as _step
    par = _p(par)
    r = result
    s = r.strategy
    sysm = r.cluster
    chip = sysm.chip
    fam = family(chip)
    sh = _step.model_shapes(model if model is not None else _model_of(r))
    C_mm = hardware.peak_flops(chip, s.precision)
    C16 = chip.peak("bf16")
    W = chip.hbm_bw * par.of(fam, "hbm_eff")
    B, T = r.batch_tokens, r.seq_len
    ways = s.dp * s.fsdp * s.ep
    b = B / ways                                      # tokens per data shard per step
    mb = s.microbatches
    L_s = sh.L / s.pp
    if s.stage_layers is not None:
        L_s = max(s.stage_layers)
    # ---- compute: layer GEMMs and attention ----
    attn_tok = 6.0 * sh.L * T * sh.N * sh.H
    a = attn_tok / (6.0 * sh.P_matmul + attn_tok)     # attention share of the model FLOPs
    t_mm_bound = r.t_math * (1 - a)
    t_at_bound = r.t_math * a
    tok_mu = b / mb / s.cp                            # tokens in one microbatch GEMM per device
    gem = _layer_gemms(sh, tok_mu, s.tp)
    M = np.array([x[0] for x in gem], float)
    N = np.array([x[1] for x in gem], float)
    K = np.array([x[2] for x in gem], float)
    dt = s.precision
    g = gemm_time(M, N, K, chip, a=dt, b=dt, out="bf16", compute=dt, par=par)
    q_mm = float(np.sum(g.forecast) / np.sum(g.flops / C_mm))
    t_mm = t_mm_bound * q_mm
    extra_attn = (1 + ATTN_BACKWARD) / 3.0
    if s.remat == "selective":
        extra_attn += 1 / 3.0                         # the attention forward recomputed
    t_at = t_at_bound * (C_mm / C16) * extra_attn * par["train.attn_overhead"] / \
        par.of(fam, "attn_eff")
    tokens_dev = b / s.cp / (s.tp if s.sp else 1)
    t_el = par["train.elementwise_bytes"] * tokens_dev * sh.D * L_s / W
    sm_share = 1.0
    if comm_sms:
        if chip.family != "gpu" or not 0 <= comm_sms < chip.n_sm:
            raise ValueError(f"comm_sms must be in [0, {getattr(chip, 'cores', 0)}) SMs of a GPU, "
                             f"got {comm_sms}")
        sm_share = (chip.n_sm - comm_sms) / chip.n_sm
    t_comp = max((t_mm + t_at) / sm_share + t_el, r.t_hbm / par.of(fam, "hbm_eff"))
    # ---- communication ----
    gpn = chip.chips_per_host if chip.family == "gpu" else sysm.pod_chips

    def eff_of(cat, group):
        if chip.family == "tpu":
            return par["dcn.eff"] if cat == "dcn" else par["ici.eff"]
        return par["nvlink.ring_eff"] if group <= gpn else par["nic.eff"]

    groups = {"tp": s.tp, "cp": s.tp * s.cp, "ep": s.tp * s.cp * s.ep, "fsdp": r.strategy.n_chips,
              "dp": r.strategy.n_chips, "pp": r.strategy.n_chips, "dcn": r.strategy.n_chips}
    exposed = hidden = 0.0
    parts = {}
    for cat, t in r.comms.items():
        if t <= 0:
            continue
        tf = t / eff_of(cat, groups.get(cat, 1))
        parts["comm_" + cat] = tf
        if cat in _EXPOSED and not (cat == "ep" and s.schedule == "dualpipe"):
            exposed += tf
        else:
            hidden += tf
    if s.tp > 1:           # per layer, per microbatch: the TP collectives of the sharding table
        n_coll = _tp_collective_phases(s, sh.parallel) * L_s * mb
        if chip.family == "gpu" and s.tp > gpn:
            t_lat = n_coll * par["nic.latency_s"]
        elif chip.family == "gpu":
            t_lat = n_coll * (s.tp - 1) * par["nvlink.step_latency_s"]
        else:
            t_lat = n_coll * 1e-6 * s.tp / 2          # ICI: ~1 µs per hop (the book)
        exposed += t_lat
        parts["tp_latency"] = t_lat
    core = t_comp + (1 - par["train.tp_overlap"]) * exposed
    t_pass = float(overlap(core, hidden, par["train.overlap"]))
    step_t = t_pass / (1 - r.bubble)
    state = sum(r.memory[k] for k in ("params", "grads", "optimizer"))
    t_opt = 2 * state / W
    fc = step_t + t_opt
    parts.update({"matmul": t_mm, "attention": t_at, "elementwise": t_el, "compute": t_comp,
                  "exposed_comm": exposed, "hidden_comm": hidden, "bubble": step_t - t_pass,
                  "optimizer": t_opt, "matmul_shape_factor": q_mm})
    return TrainingForecast(r.step_time, fc, MappingProxyType(parts))


def _model_of(result):
    raise ValueError("training_forecast needs the model (a TransformerConfig or preset name): "
                     "StepResult does not carry it")


__all__ += ["training_forecast", "TrainingForecast", "ATTN_BACKWARD"]
