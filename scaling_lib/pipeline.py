"""Pipeline schedules: bubbles, activations in flight and parameter copies, uneven stages.

Units: fractions, microbatch counts, layers. Book: sec-05-pipeline (GPipe and 1F1B, eq-05-bubble),
extended with the schedules real runs use: interleaved 1F1B (Megatron-LM, Narayanan et al.
2021), zero-bubble ZB-H1 (Qi et al. 2023) and DualPipe (DeepSeek-V3 report, Table 2).

In units of one microbatch's forward chunk F on one stage, with a full backward B = 2F split
into B_input and W (weight gradient) = F each, the idle time per device is (DeepSeek-V3 Table 2):

- GPipe, 1F1B:   (p − 1)(F + B)              = 3(p − 1)
- interleaved:   (p − 1)(F + B) / v           (v model chunks per device)
- ZB-H1:         (p − 1)(F + B − 2W)          = (p − 1)
- DualPipe:      (p/2 − 1)(F&B + B − 3W)      = 2(p/2 − 1)   (F&B: a forward and a backward
                 chunk overlapped, which hides their communication but not their compute)

against 3m of work for m microbatches, so the bubble fraction is idle / (3m + idle). Peak
activations (in microbatches held by the first stage): GPipe m, 1F1B/ZB-H1 min(m, p),
interleaved min(m, p)·(1 + (p − 1)/(p·v)), DualPipe p + 1; DualPipe keeps 2 copies of the
parameters. Uneven stages (``stage_layers``): the slowest stage sets the pace, so a step takes
max(layers per stage) / (L/p) times the even-split time.
Ignores: the p2p time inside the bubble, embedding/head cost on the first/last stage (give them
fewer layers with ``stage_layers``, as LLaMA 3 405B does), DualPipe's extra bidirectional
microbatch bookkeeping.
"""
from __future__ import annotations

import numpy as np

from .units import check_int, as_float_or_array as _arr

__all__ = ["SCHEDULES", "SCHEDULE_CODE", "bubble_fraction", "activations_in_flight",
           "param_copies", "check_stage_layers", "stage_imbalance", "even_stage_layers"]

#: schedule names (the code is what vectorised callers pass)
SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb", "dualpipe")
SCHEDULE_CODE = {s: i for i, s in enumerate(SCHEDULES)}
_ALIASES = {"zero-bubble": "zb", "zb-h1": "zb", "zbh1": "zb", "interleaved-1f1b": "interleaved",
            "dual-pipe": "dualpipe"}


def schedule_name(s) -> str:
    """Canonical schedule name (aliases: 'zero-bubble', 'zb-h1', 'interleaved-1f1b')."""
    if not isinstance(s, str):
        raise TypeError(f"schedule must be a name, got {type(s).__name__} {s!r}")
    k = _ALIASES.get(s.strip().lower(), s.strip().lower())
    if k not in SCHEDULES:
        raise ValueError(f"unknown pipeline schedule {s!r}; allowed: {', '.join(SCHEDULES)}")
    return k


def _idle_units(code, p, v):
    code = np.asarray(code)
    p = np.asarray(p, dtype=float)
    v = np.asarray(v, dtype=float)
    one = 3.0 * (p - 1)
    return np.select([code <= 1, code == 2, code == 3, code == 4],
                     [one, one / v, p - 1, 2.0 * np.maximum(p / 2 - 1, 0.0)], one)


def bubble_fraction(n_stages, n_micro, schedule="1f1b", virtual_stages=1):
    """Idle fraction of a pipelined step (see the module docstring). GPipe/1F1B:
    (p−1)/(m+p−1) (eq-05-bubble); 1 stage: 0. Vectorised; ``schedule`` may be a name or an
    array of ``SCHEDULE_CODE`` values."""
    p = np.asarray(n_stages, dtype=float)
    m = np.asarray(n_micro, dtype=float)
    if np.any(p < 1) or np.any(m < 1):
        raise ValueError("n_stages and n_micro must be >= 1")
    code = SCHEDULE_CODE[schedule_name(schedule)] if isinstance(schedule, str) else schedule
    idle = _idle_units(code, p, virtual_stages)
    return _arr(np.where(p > 1, idle / (3.0 * m + idle), 0.0))


def activations_in_flight(n_stages, n_micro, schedule="1f1b", virtual_stages=1):
    """Microbatches whose activations the busiest (first) stage holds at once."""
    p = np.asarray(n_stages, dtype=float)
    m = np.asarray(n_micro, dtype=float)
    v = np.asarray(virtual_stages, dtype=float)
    code = np.asarray(SCHEDULE_CODE[schedule_name(schedule)] if isinstance(schedule, str)
                      else schedule)
    one = np.minimum(m, p)
    out = np.select([code == 0, code == 1, code == 2, code == 3, code == 4],
                    [m, one, one * (1 + (p - 1) / (p * v)), one, np.minimum(m, p + 1)], one)
    return _arr(np.where(p > 1, out, 1.0))


def param_copies(schedule="1f1b"):
    """Copies of its stage's parameters a device keeps: 2 for DualPipe, else 1."""
    code = np.asarray(SCHEDULE_CODE[schedule_name(schedule)] if isinstance(schedule, str)
                      else schedule)
    return _arr(np.where(code == 4, 2.0, 1.0))


def even_stage_layers(n_layers: int, n_stages: int) -> tuple:
    """The most even split of ``n_layers`` over ``n_stages`` (the first stages get the extra)."""
    L = check_int("n_layers", n_layers)
    p = check_int("n_stages", n_stages)
    if p > L:
        raise ValueError(f"{p} pipeline stages for {L} layers: a stage needs at least one layer")
    q, r = divmod(L, p)
    return tuple(q + 1 if i < r else q for i in range(p))


def check_stage_layers(stage_layers, n_layers: int, n_stages: int) -> tuple:
    """Validate an uneven split: ``n_stages`` positive ints summing to ``n_layers``."""
    sl = tuple(stage_layers)
    if len(sl) != n_stages:
        raise ValueError(f"stage_layers has {len(sl)} entries but pp = {n_stages}")
    for x in sl:
        check_int("layers per stage", x, minimum=0)
    if sum(sl) != n_layers:
        raise ValueError(f"stage_layers {sl} sum to {sum(sl)}, not the model's {n_layers} layers")
    if max(sl) < 1:
        raise ValueError("every stage is empty")
    return sl


def stage_imbalance(stage_layers) -> float:
    """max(layers per stage) / mean: how much slower than an even split the slowest stage is."""
    sl = np.asarray(stage_layers, dtype=float)
    return float(sl.max() / sl.mean())
