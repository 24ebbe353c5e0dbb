"""The model meets reality: the library's bound and forecast beside every published measurement.

Units: seconds throughout (every measured value is turned into the time of the work it
measures). Book: sec-appendix-validation. For each record of ``scaling_lib.data``:

- **bound**: the book's clean model (roofline, collective V/W, whole-step bound): what the
  chapters teach; always at or below a real run if the model is right;
- **forecast**: the efficiency layer (``scaling_lib.efficiency``) over the bound, with the
  calibrated parameters;
- **measured**: the published value as a time (a rate r for work w is the time w/r);
- **ratio** = measured / forecast (1 = exact; > 1: reality is slower than the forecast).

``rows()`` computes all of them; ``summary()`` gives the median |ratio − 1| and the share within
±20 %, overall and on the held-out half (``scaling_lib.data.split``); ``calibrate()`` refits the
efficiency parameters on the calibration half only and writes them where
``efficiency.params()`` reads them. ``python -m scaling_lib.validation`` prints the report
(``make bench-model``); ``... calibrate`` refits first.
Ignores: records of a category whose model is not built yet (reported as such, never silently).
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

import numpy as np

from . import collectives, data, efficiency, hardware, topology
from .units import dtype_bytes

__all__ = ["Row", "rows", "summary", "calibrate", "terms", "forecast", "GOALS", "main",
           "FLAGSHIPS", "FLAGSHIP_GOAL", "FlagshipRank", "flagship_ranks", "stats", "pending"]

#: the issue's goals over the appendix's measurements
GOALS = MappingProxyType({"median_abs_error": 0.15, "within_20pct": 0.80})


@dataclass(frozen=True)
class Row:
    """One measurement against the model; times in seconds."""

    id: str
    category: str
    split: str
    title: str
    bound: float
    forecast: float
    measured: float

    @property
    def ratio(self) -> float:
        return self.measured / self.forecast

    @property
    def error(self) -> float:
        return abs(self.ratio - 1.0)

    @property
    def bound_ratio(self) -> float:
        """measured / bound (≥ 1 when the bound holds)."""
        return self.measured / self.bound


# =============================================================================================
# terms: everything that does not depend on the efficiency parameters, computed once per record
# =============================================================================================

def _gemm_terms(m):
    i = m.inputs
    t_meas = 2.0 * i["M"] * i["N"] * i["K"] / (m.value * 1e12)
    return {"kind": "gemm", "M": i["M"], "N": i["N"], "K": i["K"], "chip": m.chip,
            "a": i["a"], "b": i["b"], "out": i["out"], "measured": t_meas}


def _nvlink_node(chip, n, sharp=False):
    c = hardware.get(chip)
    return topology.NvlinkNode(c, n_gpus=n, gpu_bw=c.nvlink_bw_1way, sharp=sharp)


def _collective_terms(m):
    i = m.inputs
    kind, n, v = i["kind"], int(i["n"]), float(i["bytes"])
    c = hardware.get(m.chip)
    if i["tier"] == "scale_up":
        node = _nvlink_node(c, n, sharp=i["algorithm"] == "nvls")
        tb = float(collectives.collective_time(kind, v, node).t_bandwidth)
        tier = "nvlink"
    else:   # ring across nodes: each GPU's share crosses its own NIC (busBw = NIC bandwidth)
        factor = 2.0 if kind == "all_reduce" else 1.0
        tb = factor * v * (n - 1) / n / c.dcn_bw_1way
        tier = "nic"
    if m.metric == "seconds":
        meas = m.value
    else:   # bus bandwidth: busBw = factor·(n−1)/n·V / t (nccl-tests' definition)
        factor = 2.0 if kind == "all_reduce" else 1.0
        meas = factor * (n - 1) / n * v / m.value
    return {"kind": "collective", "coll": kind, "n": n, "t_bw": tb, "tier": tier,
            "algorithm": i["algorithm"], "measured": meas}


def _a2a_bytes(i):
    per = i["hidden"] + i["hidden"] / 128 * 4 if i["dtype"] == "fp8" else i["hidden"] * 2
    return i["tokens"] * i["top_k"] * per


def _alltoall_terms(m):
    i = m.inputs
    c = hardware.get(m.chip)
    v = _a2a_bytes(i)
    if i["mode"] == "normal":     # bandwidth of the bottleneck link for the same bytes
        nvl = i["ep"] <= c.chips_per_host
        w = c.nvlink_bw_1way if nvl else c.dcn_bw_1way
        return {"kind": "a2a_normal", "V": v, "W": w, "tier": "nvlink" if nvl else "nic",
                "measured": v / m.value}
    nodes = max(i["ep"] / c.chips_per_host, 1.0)
    remote = 1 - 1 / nodes
    bound = v * remote / c.dcn_bw_1way + v * (1 - remote) / c.nvlink_bw_1way
    return {"kind": "a2a_ll", "V": v, "ep": i["ep"], "gpn": c.chips_per_host,
            "nic": c.dcn_bw_1way, "bound": bound, "measured": m.value}


def _attention_terms(m):
    i = m.inputs
    c = hardware.get(m.chip)
    if m.metric == "seconds":
        fl = 4.0 * i["batch"] * i["seq_q"] * i["seq_k"] * i["n_heads"] * i["d_head"]
        if i["causal"]:
            fl /= 2
        return {"kind": "attn", "flops": fl, "chip": m.chip, "measured": m.value}
    if m.metric == "achieved_bandwidth":
        v = 1e9       # the time to stream a reference gigabyte
        return {"kind": "stream", "V": v, "chip": m.chip, "measured": v / m.value}
    fl = 1e12         # achieved_flops: the time for a reference TFLOP
    return {"kind": "attn", "flops": fl, "chip": m.chip, "measured": fl / m.value,
            "no_launch": True}


def _config(m):
    from . import models
    from .transformer import TransformerConfig
    mod = m.inputs["model"]
    if isinstance(mod, str):
        return models.get(mod)
    return TransformerConfig(name=m.id, **dict(mod))


def _system(m):
    c = hardware.get(m.chip)
    n = m.n_chips
    if c.family == "tpu":
        if c.name == "TPU v4p":
            return topology.System(c, n, shape=(12, 16, 16))
        return topology.System(c, n, shape=(16, 16))
    node = {"A100": "DGX A100", "H100": "DGX H100", "H800": "H800"}[m.chip]
    return topology.system(node, n, fabric=m.hardware.get("fabric", "infiniband"))


#: the mesh order of the GPU runs: TP innermost (NVLink), then context, experts, pipeline, and
#: the data-parallel axes outermost
_GPU_ORDER = ("tensor", "context", "expert", "pipe", "fsdp", "data")


def _strategy(m, cfg):
    from . import pipeline
    from .strategy import Strategy
    lay = dict(m.inputs["layout"])
    T = int(m.inputs["seq_len"])
    n_seq = (m.inputs["batch_sequences"] if "batch_sequences" in m.inputs
             else m.inputs["batch_tokens"] // T)
    dp, fsdp, ep = lay.get("dp", 1), lay.get("fsdp", 1), lay.get("ep", 1)
    pp, tp, cp = lay.get("pp", 1), lay.get("tp", 1), lay.get("cp", 1)
    ways = dp * fsdp * ep
    if "grad_accum" in lay:
        mb = lay["grad_accum"]
    elif pp > 1:
        mb = {"llama3": 16, "deepseek": 120}.get(m.id.split("-")[0], None) or \
            max(n_seq // ways // lay.get("microbatch_sequences", 1), 1)
    else:
        mb = 1
    sched = lay.get("schedule", "1f1b") if pp > 1 else "1f1b"
    vs = lay.get("virtual_stages", 2 if sched == "interleaved" else 1)
    if sched == "interleaved" and m.id.startswith("llama3"):
        vs = 4
    stage = None
    if pp > 1 and cfg.n_layers % pp:
        stage = pipeline.even_stage_layers(cfg.n_layers, pp)
    if pp > 1 and m.id.startswith("llama3"):
        stage = (7,) + (8,) * (pp - 2) + (7,)
    if sched == "interleaved" and stage is not None and not m.id.startswith("llama3"):
        stage = None if cfg.n_layers % pp == 0 else stage
    return Strategy(dp=dp, fsdp=fsdp, tp=tp, pp=pp, ep=ep, cp=cp, microbatches=mb,
                    remat=lay.get("remat", "selective"), zero=lay.get("zero", 1),
                    schedule=sched, virtual_stages=vs if sched == "interleaved" else 1,
                    stage_layers=stage, precision=lay.get("precision", "bf16"),
                    ep_node_limit=lay.get("ep_node_limit"),
                    cp_kind="allgather" if cp > 1 and m.id.startswith("llama3") else "ring",
                    order=_GPU_ORDER if hardware.get(m.chip).family == "gpu" else
                    ("tensor", "context", "expert", "fsdp", "pipe", "data"))


def _measured_step(m, cfg, r):
    """Seconds per step the published number implies."""
    from . import step
    n = m.n_chips
    B = r.batch_tokens
    v = m.value
    met = m.metric
    if met == "tokens_per_s":
        return B / v
    if met == "tokens_per_s_per_chip":
        return B / (v * n)
    if met == "gpu_hours_per_trillion_tokens":
        return B / 1e12 * v * 3600 / n
    if met == "tflops_per_chip_megatron":      # Megatron's eq. 3 (counts the recomputation)
        h, s_, l_, V = cfg.d_model, r.seq_len, cfg.n_layers, cfg.vocab
        hw = 96.0 * (B / s_) * s_ * l_ * h * h * (1 + s_ / (6 * h) + V / (16 * l_ * h))
        return hw / (n * v * 1e12)
    if met in ("mfu", "tflops_per_chip"):
        # a published FLOP rate is the paper's FLOP count over time: convert it with the
        # paper's own count (``inputs.flops_convention``, see step.FLOPS_CONVENTIONS)
        conv = m.inputs.get("flops_convention")
        if conv is None:
            raise ValueError(f"{m.id}: a published {met} needs inputs.flops_convention (how the "
                             f"paper counts model FLOPs): one of {step.FLOPS_CONVENTIONS}")
        fl = r.model_flops_as(conv)
        if met == "mfu":
            return fl / (n * hardware.get(m.chip).peak("bf16") * v)
        return fl / (n * v * 1e12)
    raise ValueError(f"{m.id}: no step time for metric {met!r}")


def _training_terms(m):
    from . import step
    cfg = _config(m)
    sysm = _system(m)
    strat = _strategy(m, cfg)
    T = int(m.inputs["seq_len"])
    B = m.inputs.get("batch_tokens") or m.inputs["batch_sequences"] * T
    st = (2.0, 12.0, 4.0) if m.id.startswith("megatron") else (2.0, 8.0, 2.0)
    r = step.evaluate(strat, cfg, sysm, B, T, param_bytes=st[0], opt_bytes=st[1],
                      grad_bytes=st[2], check_memory=False)
    return {"kind": "training", "result": r, "model": cfg,
            "comm_sms": int(m.inputs["layout"].get("comm_sms", 0)),
            "measured": _measured_step(m, cfg, r)}


def _serving_terms(m):
    from . import serving
    i = m.inputs
    dep = serving.Deployment(i["model"], m.chip, tp=i["tp"], weights=i["weights"], kv=i["kv"],
                             compute=i["compute"])
    if m.metric == "first_token_latency_s":
        meas = m.value
    else:                                # output tokens/s per GPU of a static batch
        meas = i["batch"] * i["output_len"] / (m.value * m.n_chips)
    return {"kind": "serving", "dep": dep, "batch": i["batch"], "input_len": i["input_len"],
            "output_len": i["output_len"], "measured": meas}


_TERMS = {"serving": _serving_terms, "gemm": _gemm_terms, "collective": _collective_terms, "alltoall": _alltoall_terms,
          "attention": _attention_terms, "training": _training_terms}


def _pending(category: str) -> str | None:
    """Why a category has no model yet (None when it has one)."""
    if category in _TERMS:
        return None
    return ("its forecast needs the step/serving types of issue #16 (step.evaluate, topology."
            "System), which are not in this version of the library")


@lru_cache(maxsize=1)
def _all_terms() -> tuple:
    out = []
    for m in data.load():
        if _pending(m.category) is None:
            out.append((m, MappingProxyType(_TERMS[m.category](m))))
    return tuple(out)


def terms(mid: str) -> dict:
    """The parameter-free terms of record ``mid`` (bounds, shapes, measured time)."""
    for m, t in _all_terms():
        if m.id == mid:
            return dict(t)
    m = data.get(mid)
    raise ValueError(f"{mid}: no model for category {m.category!r} yet: {_pending(m.category)}")


# =============================================================================================
# bound and forecast of one record's terms
# =============================================================================================

def _bound(t) -> float:
    k = t["kind"]
    if k == "gemm":
        c = hardware.get(t["chip"])
        fl = 2.0 * t["M"] * t["N"] * t["K"]
        by = (t["M"] * t["K"] * dtype_bytes(t["a"]) + t["K"] * t["N"] * dtype_bytes(t["b"])
              + t["M"] * t["N"] * dtype_bytes(t["out"]))
        return max(fl / c.peak(t["a"]), by / c.hbm_bw)
    if k == "collective":
        return t["t_bw"]
    if k == "a2a_normal":
        return t["V"] / t["W"]
    if k == "a2a_ll":
        return t["bound"]
    if k == "attn":
        return t["flops"] / hardware.get(t["chip"]).peak("bf16")
    if k == "stream":
        return t["V"] / hardware.get(t["chip"]).hbm_bw
    if k == "training":
        return t["result"].step_time
    if k == "serving":
        from . import serving
        return serving.static_batch(t["dep"], t["batch"], t["input_len"], t["output_len"],
                                    par=efficiency.prior_params()).bound
    raise AssertionError(k)


def forecast(t, par=None) -> float:
    """Forecast (seconds) of a record's terms with efficiency parameters ``par``."""
    par = efficiency.params() if par is None else par
    k = t["kind"]
    if k == "gemm":
        return float(efficiency.gemm_time(t["M"], t["N"], t["K"], t["chip"], a=t["a"], b=t["b"],
                                          out=t["out"], par=par).forecast)
    if k == "collective":
        return float(efficiency.collective_time(t["coll"], t["t_bw"], t["n"], t["tier"],
                                                t["algorithm"], par=par))
    if k == "a2a_normal":
        eff = par["nvlink.ring_eff"] if t["tier"] == "nvlink" else par["nic.eff"]
        return t["V"] / (eff * t["W"])
    if k == "a2a_ll":
        return float(efficiency.alltoall_lowlatency_time(t["V"], t["ep"], t["gpn"], t["nic"],
                                                         par=par))
    if k == "attn":
        return float(efficiency.attention_time(t["flops"], t["chip"], par=par,
                                               kernels=0 if t.get("no_launch") else 1))
    if k == "stream":
        fam = efficiency.family(t["chip"])
        return t["V"] / (par.of(fam, "hbm_eff") * hardware.get(t["chip"]).hbm_bw)
    if k == "training":
        return efficiency.training_forecast(t["result"], t["model"], par=par,
                                            comm_sms=t["comm_sms"]).forecast
    if k == "serving":
        from . import serving
        return serving.static_batch(t["dep"], t["batch"], t["input_len"], t["output_len"],
                                    par=par).forecast
    raise AssertionError(k)


def rows(par=None, split: str | None = None) -> list:
    """Every record with a model: bound, forecast, measured (seconds). ``split``: 'calibrate',
    'holdout' or None (all)."""
    if split not in (None, "calibrate", "holdout"):
        raise ValueError(f"split must be 'calibrate', 'holdout' or None, got {split!r}")
    out = []
    for m, t in _all_terms():
        if split is not None and m.split != split:
            continue
        out.append(Row(m.id, m.category, m.split, m.title, _bound(t), forecast(t, par),
                       t["measured"]))
    return out


def pending() -> dict:
    """Records without a model yet: id → reason."""
    return {m.id: _pending(m.category) for m in data.load() if _pending(m.category)}


def stats(rs) -> dict:
    """median |ratio − 1|, share within ±20 %, count, and the median ratio."""
    if not rs:
        return {"n": 0, "median_abs_error": math.nan, "within_20pct": math.nan,
                "median_ratio": math.nan}
    e = np.array([r.error for r in rs])
    q = np.array([r.ratio for r in rs])
    return {"n": len(rs), "median_abs_error": float(np.median(e)),
            "within_20pct": float(np.mean(e <= 0.20)), "median_ratio": float(np.median(q))}


def summary(par=None) -> dict:
    """Statistics overall, on each split and per category."""
    rs = rows(par)
    out = {"all": stats(rs), "calibrate": stats([r for r in rs if r.split == "calibrate"]),
           "holdout": stats([r for r in rs if r.split == "holdout"])}
    for c in data.CATEGORIES:
        out[c] = stats([r for r in rs if r.category == c])
    out["bound_all"] = {"median_bound_ratio": float(np.median([r.bound_ratio for r in rs]))
                        if rs else math.nan}
    return out


# =============================================================================================
# the flagship runs: where the planner puts the published layout
# =============================================================================================

#: the four flagship layouts of ``layouts`` (issue #16) and the measurement that holds each
#: run's published number (and the inputs the forecast needs beyond the layout: DeepSeek-V3's
#: 20 communication SMs)
FLAGSHIPS = MappingProxyType({"llama3-405b-8k": "llama3-405b-8k-16384",
                              "deepseek-v3": "deepseek-v3",
                              "megatron-1t": "megatron-gpt-1008b",
                              "palm-540b": "palm-540b"})
#: the issue's goal for them: the published layout among the forecast's best ``TOP`` of the
#: planner's space, with its forecast within ±20 % of the published step time, for at least 3
FLAGSHIP_GOAL = MappingProxyType({"top": 5, "tolerance": 0.20, "count": 3})


@dataclass(frozen=True)
class FlagshipRank:
    """A published layout inside the planner's search (``layouts.plan_contains``): its rank by
    the bound (how ``step.plan`` orders) and by the forecast, among ``n`` feasible candidates;
    times in seconds per step."""

    key: str
    title: str
    strategy: str
    published: float
    bound: float
    forecast: float
    rank_bound: int
    rank_forecast: int
    n: int
    best: str
    best_forecast: float

    @property
    def ratio(self) -> float:
        """published / forecast."""
        return self.published / self.forecast

    @property
    def meets_goal(self) -> bool:
        return (self.rank_forecast <= FLAGSHIP_GOAL["top"] and
                abs(self.ratio - 1) <= FLAGSHIP_GOAL["tolerance"])


def flagship_ranks(par=None) -> list:
    """For each flagship layout: the planner's space (``layouts.plan_contains``, every feasible
    candidate), each candidate's forecast, and where the published layout ranks by bound and by
    forecast (1 = fastest; candidates tied with it within 0.1 % rank with it)."""
    from . import layouts
    par = efficiency.params() if par is None else par
    out = []
    for key, mid in FLAGSHIPS.items():
        lay = layouts.get(key)
        sms = int(data.get(mid).inputs["layout"].get("comm_sms", 0))
        d = layouts.plan_contains(key)
        if d["rank"] is None:
            raise AssertionError(f"{key}: the planner's space does not hold the published layout")
        res = d["plan"].results
        fc = np.array([efficiency.training_forecast(r, lay.cfg, par=par, comm_sms=sms).forecast
                       for r in res])
        bd = np.array([r.step_time for r in res])
        i = d["rank"] - 1
        r0 = d["result"]
        j = int(np.argmin(fc))
        out.append(FlagshipRank(
            key, lay.title, str(lay.strategy),
            lay.published_step_time(r0.model_flops_as(lay.flops_convention)),
            float(bd[i]), float(fc[i]), int(np.sum(bd < bd[i] * (1 - 1e-3))) + 1,
            int(np.sum(fc < fc[i] * (1 - 1e-3))) + 1, len(res), str(res[j].strategy),
            float(fc[j])))
    return out


# =============================================================================================
# calibration on the calibration half
# =============================================================================================

#: weight of the pull towards each prior (in log units), so parameters the data do not reach
#: stay at their cited priors
PRIOR_WEIGHT = 0.25


def calibrate(write: bool = False, path=None) -> efficiency.FitResult:
    """Fit the efficiency parameters to the calibration half (log-ratio least squares plus a weak
    pull to the priors); with ``write`` store them where ``efficiency.params()`` reads them."""
    base = efficiency.prior_params()
    cal = [(m, t) for m, t in _all_terms() if m.split == "calibrate"]
    names = list(base)
    x0 = {k: base.info[k].prior for k in names}
    bounds = {k: (base.info[k].lo, base.info[k].hi) for k in names}

    def resid(v):
        par = base.replace(**{k.replace(".", "__"): x for k, x in v.items()})
        r = [math.log(t["measured"] / forecast(t, par)) for _, t in cal]
        reg = [PRIOR_WEIGHT * math.log(max(v[k], 1e-300) / max(x0[k], 1e-300))
               if x0[k] > 0 else PRIOR_WEIGHT * v[k] for k in names]
        return np.array(r + reg)

    # one restart: parameters whose prior sits on a bound (serve.gqa_reread, train.tp_overlap)
    # have no gradient there, and the first descent can leave them stuck
    res = efficiency.fit(resid, x0, bounds, restarts=1)
    if write:
        doc = {"schema": 1,
               "what": "efficiency parameters fitted by scaling_lib.validation.calibrate() on the "
                       "calibration half of scaling_lib/data/measurements.json",
               "calibrated_on": sorted(m.id for m, _ in cal),
               "values": {k: float(f"{res.values[k]:.6g}") for k in names}}
        p = path or efficiency.PARAMS_PATH
        with open(p, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
            f.write("\n")
        efficiency._load_params.cache_clear()
    return res


# =============================================================================================
# the benchmark command
# =============================================================================================

def _fmt(s: dict) -> str:
    return (f"n={s['n']:3d}  median |ratio-1| = {100 * s['median_abs_error']:5.1f} %  "
            f"within ±20 % = {100 * s['within_20pct']:5.1f} %  median ratio = "
            f"{s['median_ratio']:.3f}")


def report(par=None, flagships: bool = True) -> str:
    s = summary(par)
    lines = ["model vs published measurements (ratio = measured / forecast)",
             f"  all       {_fmt(s['all'])}", f"  calibrate {_fmt(s['calibrate'])}",
             f"  holdout   {_fmt(s['holdout'])}"]
    for c in data.CATEGORIES:
        if s[c]["n"]:
            lines.append(f"  {c:<9} {_fmt(s[c])}")
    lines.append(f"  the bound alone: median measured/bound = {s['bound_all']['median_bound_ratio']:.2f}")
    pend = pending()
    if pend:
        lines.append(f"  not modelled yet: {len(pend)} records ({', '.join(sorted({data.get(k).category for k in pend}))})")
    g = s["holdout"]
    ok = g["median_abs_error"] <= GOALS["median_abs_error"] and \
        g["within_20pct"] >= GOALS["within_20pct"]
    lines.append(f"  goals on the held-out half (median <= {100 * GOALS['median_abs_error']:.0f} %, "
                 f">= {100 * GOALS['within_20pct']:.0f} % within ±20 %): {'met' if ok else 'NOT met'}")
    if flagships:
        fr = flagship_ranks(par)
        lines.append("flagship runs: rank of the published layout in the planner's space "
                     "(by bound / by forecast), published / forecast")
        for f in fr:
            lines.append(f"  {f.key:<16} rank {f.rank_bound:3d} / {f.rank_forecast:3d} of "
                         f"{f.n:3d}  published/forecast = {f.ratio:.3f}  "
                         f"{'meets' if f.meets_goal else 'misses'} the goal")
        n_ok = sum(f.meets_goal for f in fr)
        lines.append(f"  goal (top {FLAGSHIP_GOAL['top']} by forecast and within "
                     f"±{100 * FLAGSHIP_GOAL['tolerance']:.0f} %, for >= {FLAGSHIP_GOAL['count']} "
                     f"of {len(fr)}): {n_ok} of {len(fr)}: "
                     f"{'met' if n_ok >= FLAGSHIP_GOAL['count'] else 'NOT met'}")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "calibrate":
        res = calibrate(write=True)
        print(f"calibrated {len(res.values)} parameters on the calibration half "
              f"({res.n_eval} evaluations, converged: {res.converged})")
    elif argv and argv[0] == "rows":
        for r in rows():
            print(f"{r.id:<44} {r.split:<9} bound {r.bound:.3e}  forecast {r.forecast:.3e}  "
                  f"measured {r.measured:.3e}  ratio {r.ratio:6.3f}")
        return 0
    elif argv:
        print("usage: python -m scaling_lib.validation [calibrate | rows]")
        return 2
    print(report())
    return 0


if __name__ == "__main__":   # pragma: no cover
    raise SystemExit(main())
