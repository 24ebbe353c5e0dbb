"""Published measurements the library's forecasts are checked against (the validation appendix).

Units: SI in the inputs (bytes, seconds, tokens); each record's ``value`` in the ``unit`` it
states. Book: sec-appendix-validation. The records live in ``measurements.json`` next to this
file (shipped in the wheel): training MFU, throughput or GPU-hours of named runs on TPUs and
GPUs; serving throughput and first-token latency of a named stack; GEMM throughput against
shape; collective bus bandwidth and time against message size; MoE all-to-all bandwidth and
latency; attention-kernel throughput. Each record names its source (title, table or section,
URL), every input the model needs (model widths or a ``models`` preset name, chip, chip count,
layout, batch, sequence, precision) and what the source did not say (``assumptions``).

``load()`` validates every record against the schema below and raises ``ValueError`` naming the
record and the field; ``split(record)`` says whether a record calibrates the efficiency model or
is held out to score it (a fixed rule, not a choice per record: the flagship runs are held out;
the others of each category, ordered by sha1 of their id, alternate calibrate / holdout).
Ignores: nothing is computed here; forecasts are in ``scaling_lib.validation``.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

__all__ = ["Measurement", "load", "get", "categories", "split", "CATEGORIES", "METRICS", "PATH"]

PATH = Path(__file__).with_name("measurements.json")

#: category → what its records measure
CATEGORIES = MappingProxyType({
    "training": "step time of a named training run (as MFU, TFLOP/s, tokens/s or GPU-hours)",
    "serving": "throughput or first-token latency of a named serving stack",
    "gemm": "matrix-multiplication throughput against shape",
    "collective": "collective time or bus bandwidth against message size",
    "alltoall": "MoE dispatch/combine bandwidth or latency",
    "attention": "attention-kernel throughput",
})
#: metric → the unit its value must carry
METRICS = MappingProxyType({
    "mfu": "1", "tflops_per_chip": "TFLOP/s", "tflops_per_chip_megatron": "TFLOP/s",
    "tokens_per_s": "token/s", "tokens_per_s_per_chip": "token/s per GPU",
    "gpu_hours_per_trillion_tokens": "GPU·h per 10^12 tokens",
    "output_tokens_per_s_per_chip": "token/s per GPU", "first_token_latency_s": "s",
    "tflops": "TFLOP/s", "seconds": "s", "bus_bandwidth": "B/s", "bottleneck_bandwidth": "B/s",
    "achieved_bandwidth": "B/s", "achieved_flops": "FLOP/s",
})
_REQUIRED = ("id", "category", "title", "source", "hardware", "inputs", "metric", "value", "unit")
_SOURCE_KEYS = ("title", "where", "url")


@dataclass(frozen=True)
class Measurement:
    """One published measurement (see the module docstring)."""

    id: str
    category: str
    title: str
    source: MappingProxyType
    hardware: MappingProxyType
    inputs: MappingProxyType
    metric: str
    value: float
    unit: str
    notes: str = ""
    assumptions: str = ""
    flagship: bool = False
    extra: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    @property
    def chip(self) -> str:
        return self.hardware["chip"]

    @property
    def n_chips(self) -> int:
        return int(self.hardware["n_chips"])

    @property
    def split(self) -> str:
        return split(self)

    def cite(self) -> str:
        """'title, where' of the source (the URL is ``source['url']``)."""
        return f"{self.source['title']}, {self.source['where']}"


def _freeze(x):
    if isinstance(x, dict):
        return MappingProxyType({k: _freeze(v) for k, v in x.items()})
    if isinstance(x, list):
        return tuple(_freeze(v) for v in x)
    return x


def _check(rec: dict, i: int) -> Measurement:
    rid = rec.get("id", f"#{i}")
    missing = [k for k in _REQUIRED if k not in rec]
    if missing:
        raise ValueError(f"measurement {rid}: missing field(s) {', '.join(missing)}")
    if rec["category"] not in CATEGORIES:
        raise ValueError(f"measurement {rid}: category {rec['category']!r} is not one of "
                         f"{', '.join(CATEGORIES)}")
    if rec["metric"] not in METRICS:
        raise ValueError(f"measurement {rid}: metric {rec['metric']!r} is not one of "
                         f"{', '.join(METRICS)}")
    if rec["unit"] != METRICS[rec["metric"]]:
        raise ValueError(f"measurement {rid}: metric {rec['metric']} is in "
                         f"{METRICS[rec['metric']]!r}, got unit {rec['unit']!r}")
    v = rec["value"]
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
        raise ValueError(f"measurement {rid}: value must be a positive number, got {v!r}")
    src = rec["source"]
    if not isinstance(src, dict) or any(not isinstance(src.get(k), str) or not src.get(k)
                                        for k in _SOURCE_KEYS):
        raise ValueError(f"measurement {rid}: source needs non-empty {', '.join(_SOURCE_KEYS)}")
    if not src["url"].startswith("https://"):
        raise ValueError(f"measurement {rid}: source url must be https://…, got {src['url']!r}")
    hw = rec["hardware"]
    if not isinstance(hw, dict) or "chip" not in hw or "n_chips" not in hw:
        raise ValueError(f"measurement {rid}: hardware needs chip and n_chips")
    if not isinstance(hw["n_chips"], int) or hw["n_chips"] < 1:
        raise ValueError(f"measurement {rid}: n_chips must be a positive int, got {hw['n_chips']!r}")
    if not isinstance(rec["inputs"], dict) or not rec["inputs"]:
        raise ValueError(f"measurement {rid}: inputs must be a non-empty object")
    known = set(_REQUIRED) | {"notes", "assumptions", "flagship"}
    extra = {k: v for k, v in rec.items() if k not in known}
    return Measurement(rec["id"], rec["category"], rec["title"], _freeze(src), _freeze(hw),
                       _freeze(rec["inputs"]), rec["metric"], float(v), rec["unit"],
                       rec.get("notes", ""), rec.get("assumptions", ""),
                       bool(rec.get("flagship", False)), _freeze(extra))


@lru_cache(maxsize=4)
def _load(path: str) -> tuple:
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("schema") != 1 or not isinstance(doc.get("records"), list):
        raise ValueError(f"{path}: expected {{'schema': 1, 'records': [...]}}")
    out = tuple(_check(r, i) for i, r in enumerate(doc["records"]))
    ids = [m.id for m in out]
    dup = sorted({x for x in ids if ids.count(x) > 1})
    if dup:
        raise ValueError(f"{path}: duplicate id(s) {', '.join(dup)}")
    return out


def load(category: str | None = None, path=None) -> tuple:
    """All measurements (a tuple of ``Measurement``), or those of one ``category``."""
    recs = _load(str(path or PATH))
    if category is None:
        return recs
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}; allowed: {', '.join(CATEGORIES)}")
    return tuple(m for m in recs if m.category == category)


def get(mid: str) -> Measurement:
    """The measurement with id ``mid``."""
    for m in load():
        if m.id == mid:
            return m
    import difflib
    close = difflib.get_close_matches(str(mid), [m.id for m in load()], n=3, cutoff=0.4)
    raise KeyError(f"no measurement {mid!r}" + (f"; did you mean {', '.join(close)}?" if close else ""))


def categories() -> dict:
    """Count of records per category."""
    out = {c: 0 for c in CATEGORIES}
    for m in load():
        out[m.category] += 1
    return out


def split(m: Measurement) -> str:
    """'calibrate' or 'holdout': flagship runs are always held out; the other records of each
    category, ordered by the sha1 of their id, alternate calibrate, holdout, calibrate, … (a rule
    fixed before any fit, stratified so every category has both halves)."""
    got = _splits().get(m.id)
    if got is None:      # a record outside the shipped file: flagship or hash parity
        got = "holdout" if m.flagship or int(_h(m.id), 16) % 2 else "calibrate"
    return got


def _h(mid: str) -> str:
    return hashlib.sha1(mid.encode()).hexdigest()


@lru_cache(maxsize=1)
def _splits() -> dict:
    out = {}
    for c in CATEGORIES:
        rest = sorted((m for m in load(c) if not m.flagship), key=lambda m: _h(m.id))
        for i, m in enumerate(rest):
            out[m.id] = "calibrate" if i % 2 == 0 else "holdout"
        out.update({m.id: "holdout" for m in load(c) if m.flagship})
    return out
