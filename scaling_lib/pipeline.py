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
fewer layers with ``stage_layers``, as LLaMA 3 405B does).

DualPipe is also generated pass by pass (``dualpipe_order``: the per-device order of forwards,
backwards, weight gradients and overlapped F&B pairs; ``dualpipe_events``: that order timed), so
the closed form above is checked against a schedule rather than taken on trust; ``bubble_time``
gives Table 2's idle time per device for 1F1B, ZB-H1 and DualPipe with unequal F, B, W.
Every schedule timed pass by pass in the library (DualPipe here, GPipe/1F1B/ZB-H1 in
``diagrams``, interleaved 1F1B in ``training``) goes through one list scheduler,
``schedule_ops``: per-worker orders, dependencies and durations in, start and end times out.
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


# ---- one list scheduler: every pipeline timing in the library ---------------------------------------

def schedule_ops(orders, needs, duration, *, provides=None, transfer=0.0) -> list:
    """Time a pipeline given each worker's order of ops: every op starts as early as its worker
    and its inputs allow (list scheduling with a fixed order per worker, no preemption). This is
    the one timing loop behind ``dualpipe_events`` and ``diagrams.pipeline_events`` /
    ``diagrams.zero_bubble_events``; they differ only in the orders, the dependencies and the
    durations they pass.

    ``orders``: one sequence of ops per worker (a stage or a device), run in that order; an op is
    any value. ``needs(worker, op)``: the keys the op waits for. ``provides(worker, op)``: the
    keys it completes at its end (default: the op itself, so ``needs`` names other ops; the op
    must then be hashable). Every key is provided by exactly one op. ``duration``: a mapping
    op → time or a callable ``(worker, op)`` → time, finite and >= 0. ``transfer``: the delay
    before a key completed on one worker can be used on another — a number >= 0 or a callable
    ``(src_worker, dst_worker)`` → delay; transfers occupy the link, not the worker, and
    overlap freely.

    An op starts at max(end of its worker's previous op, end of each key it needs + the
    transfer delay if that key was completed on another worker). Returns
    ``[(worker, op, start, end)]`` in the order the ops are placed: the workers are swept
    0, 1, …, each running as far as its inputs allow, until every op is placed. Raises
    TypeError/ValueError for malformed arguments, a needed key that no op provides, a key
    provided twice, a bad duration, and when the orders deadlock (every worker's next op waits
    for a key that can only come later; the message names each stuck op and what it waits for).
    """
    import math
    from collections.abc import Mapping

    if isinstance(orders, (str, bytes, Mapping)) or not hasattr(orders, "__iter__"):
        raise TypeError(f"orders must be a sequence with one sequence of ops per worker, got "
                        f"{type(orders).__name__}")
    rows = []
    for w, order in enumerate(orders):
        if isinstance(order, (str, bytes)) or not hasattr(order, "__iter__"):
            raise TypeError(f"orders[{w}] must be a sequence of ops, got {type(order).__name__} "
                            f"{order!r}")
        rows.append(list(order))
    if not callable(needs):
        raise TypeError(f"needs must be a callable (worker, op) -> keys, got {needs!r}")
    if provides is None:
        provides = lambda w, op: (op,)  # noqa: E731
    elif not callable(provides):
        raise TypeError(f"provides must be None or a callable (worker, op) -> keys, got "
                        f"{provides!r}")
    if isinstance(duration, Mapping):
        table = duration

        def duration(w, op):
            try:
                return table[op]
            except KeyError:
                raise ValueError(f"duration has no entry for op {op!r} of worker {w}") from None
    elif not callable(duration):
        raise TypeError(f"duration must be a mapping op -> time or a callable (worker, op) -> "
                        f"time, got {type(duration).__name__}")
    if callable(transfer):
        lag = transfer
    else:
        from .units import check_nonneg
        tx = float(check_nonneg("transfer", transfer, allow_array=False))
        lag = lambda src, dst: tx if src != dst else 0.0  # noqa: E731

    producer, plan = {}, []                  # key -> (worker, op); per worker (op, needs, keys, dt)
    for w, row in enumerate(rows):
        planned = []
        for op in row:
            dt = duration(w, op)
            if isinstance(dt, bool) or not isinstance(dt, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(dt) or dt < 0:
                raise ValueError(f"the duration of op {op!r} of worker {w} must be a finite number "
                                 f">= 0, got {dt!r}")
            keys = tuple(provides(w, op))
            for k in keys:
                if k in producer:
                    raise ValueError(f"key {k!r} is provided twice: by op {producer[k][1]!r} of "
                                     f"worker {producer[k][0]} and by op {op!r} of worker {w}")
                producer[k] = (w, op)
            planned.append((op, tuple(needs(w, op)), keys, float(dt)))
        plan.append(planned)
    for w, planned in enumerate(plan):
        for op, need, _, _ in planned:
            for k in need:
                if k not in producer:
                    raise ValueError(f"op {op!r} of worker {w} needs {k!r}, which no op provides")

    n_workers = len(plan)
    pos, free, end, out = [0] * n_workers, [0.0] * n_workers, {}, []
    left = sum(len(p) for p in plan)
    while left:
        progressed = False
        for w in range(n_workers):
            planned = plan[w]
            while pos[w] < len(planned):
                op, need, keys, dt = planned[pos[w]]
                if any(k not in end for k in need):
                    break
                start = max([free[w]] + [end[k] + lag(producer[k][0], w) for k in need])
                stop = free[w] = start + dt
                for k in keys:
                    end[k] = stop
                out.append((w, op, start, stop))
                pos[w] += 1
                left -= 1
                progressed = True
        if not progressed:
            stuck = [f"worker {w}: {plan[w][pos[w]][0]!r} waits for "
                     + ", ".join(repr(k) for k in plan[w][pos[w]][1] if k not in end)
                     for w in range(n_workers) if pos[w] < len(plan[w])]
            raise ValueError("the per-worker orders deadlock (each next op waits for a key that "
                             "comes later in some order): " + "; ".join(stuck))
    return out


__all__ += ["schedule_ops"]


# ---- DualPipe: the schedule itself, pass by pass ---------------------------------------------------
#
# DeepSeek-AI, "DeepSeek-V3 Technical Report" (arXiv:2412.19437, 2024), §3.2.1 and Figure 5,
# Table 2; the per-rank phase counts follow the report's reference implementation
# (github.com/deepseek-ai/DualPipe, ``DualPipe.step``), re-expressed here as an order of passes.
#
# P devices (P even) and N microbatches (N even, N >= 2P), N/2 fed at device 0 (direction 0,
# flowing 0 → P−1) and N/2 fed at device P−1 (direction 1, flowing P−1 → 0). Device r holds
# stage r of direction 0 and stage P−1−r of direction 1 (two copies of the parameters, both
# trained). A pass is (kind, direction, microbatch) with kind "F" (forward), "BW" (a whole
# backward), "B" (the backward's input gradient only, its "W" (weight gradient) deferred to a
# FIFO queue as in ZB-H1). An op is a tuple of one pass, or of two: a forward of one direction
# and a whole backward of the other overlapped (F&B), so that each one's communication (the
# MoE AllToAll dispatch/combine and the pipeline sends) runs while the other computes.

DUALPIPE_SOURCE = ("DeepSeek-AI, DeepSeek-V3 Technical Report, arXiv:2412.19437 (2024), §3.2.1, "
                   "Fig. 5 and Table 2; github.com/deepseek-ai/DualPipe")


def _check_dualpipe(n_stages, n_micro) -> tuple:
    P = check_int("n_stages", n_stages, 2)
    N = check_int("n_micro", n_micro, 1)
    if P % 2:
        raise ValueError(f"DualPipe pairs device r with device P−1−r: n_stages must be even, got {P}")
    if N % 2:
        raise ValueError(f"DualPipe feeds half the microbatches from each end: n_micro must be even, "
                         f"got {N}")
    if N < 2 * P:
        raise ValueError(f"DualPipe needs n_micro >= 2·n_stages = {2 * P} microbatches (N/2 >= P per "
                         f"direction to reach its steady F&B phase), got {N}")
    return P, N


def dualpipe_stage(n_stages: int, rank: int, direction: int) -> int:
    """The pipeline stage that device ``rank`` runs for ``direction`` (0: fed at device 0, 1: fed at
    device n_stages − 1): ``rank`` or ``n_stages − 1 − rank``."""
    P = check_int("n_stages", n_stages, 2)
    r = check_int("rank", rank, 0)
    if r >= P:
        raise ValueError(f"rank must be < n_stages = {P}, got {rank}")
    if direction not in (0, 1):
        raise ValueError(f"direction must be 0 or 1, got {direction!r}")
    return r if direction == 0 else P - 1 - r


def dualpipe_order(n_stages: int, n_micro: int, rank: int) -> list:
    """The order in which device ``rank`` runs its passes in DualPipe: a list of ops, each a tuple
    of one pass or of two overlapped passes (F of one direction with BW of the other); a pass is
    (kind, direction, microbatch), kind "F", "B", "W" or "BW" (see the section comment).

    With h = min(rank, P−1−rank) (its distance from the nearer end), H = P/2, "near" the direction
    in which the device is stage h and "far" the other one, the device runs eight phases:
    2(H−h−1) near forwards; h+1 rounds of (near F, far F); H−h−1 rounds of (far B, W, far F);
    N/2−P+h+1 rounds of (near F & far BW, far F & near BW) — the steady state, where every op is
    an overlapped pair (the two middle devices run their very first pair one after the other);
    H−h−1 rounds of (far BW, far F & near BW); h+1 rounds of (far backward, near backward), the
    later half split into B and deferred W; H−h−1 rounds of (W, near B); h+1 deferred W.
    Every microbatch of each direction gets exactly one F, one backward and (if split) one W on
    the device, in microbatch order (tested). Source: ``DUALPIPE_SOURCE``."""
    from collections import deque

    P, N = _check_dualpipe(n_stages, n_micro)
    r = check_int("rank", rank, 0)
    if r >= P:
        raise ValueError(f"rank must be < n_stages = {P}, got {rank}")
    H, h = P // 2, min(r, P - 1 - r)
    near = 0 if r < H else 1
    far = 1 - near
    nf, nb, wq, ops = [0, 0], [0, 0], deque(), []

    def fwd(d):
        nf[d] += 1
        return ("F", d, nf[d] - 1)

    def bwd(d, split):
        nb[d] += 1
        if split:
            wq.append((d, nb[d] - 1))
            return ("B", d, nb[d] - 1)
        return ("BW", d, nb[d] - 1)

    def wgt():
        d, m = wq.popleft()
        return ("W", d, m)

    for _ in range(2 * (H - h - 1)):
        ops.append((fwd(near),))
    for _ in range(h + 1):
        ops += [(fwd(near),), (fwd(far),)]
    for _ in range(H - h - 1):                      # zero-bubble: B, then its W, then F
        ops += [(bwd(far, True),), (wgt(),), (fwd(far),)]
    for i in range(N // 2 - P + h + 1):             # steady state: F&B pairs
        if i == 0 and h == H - 1:
            ops += [(fwd(near),), (bwd(far, False),)]
        else:
            ops.append((fwd(near), bwd(far, False)))
        ops.append((fwd(far), bwd(near, False)))
    for _ in range(H - h - 1):
        ops.append((bwd(far, False),))
        ops.append((fwd(far), bwd(near, False)))
    split = False
    for i in range(h + 1):                          # drain; the later half defers its W
        if i == (h + 1) // 2 and h % 2 == 1:
            split = True
        ops.append((bwd(far, split),))
        if i == (h + 1) // 2 and h % 2 == 0:
            split = True
        ops.append((bwd(near, split),))
    for _ in range(H - h - 1):
        ops += [(wgt(),), (bwd(near, True),)]
    for _ in range(h + 1):
        ops.append((wgt(),))
    assert not wq and nf == [N // 2] * 2 and nb == [N // 2] * 2, "DualPipe order is incomplete"
    return ops


def dualpipe_events(n_stages: int = 8, n_micro: int = 20, t_fwd=1.0, t_bgrad=1.0, t_wgrad=1.0,
                    t_fb=None) -> list:
    """DualPipe in time: ``[(device, kind, direction, microbatch, start, end, overlapped)]``, one
    row per pass of ``dualpipe_order``, each op started as early as its inputs allow
    (``schedule_ops``):
    F on stage s after F on stage s−1 (the previous device of its direction), a backward (B or BW)
    after its F and after the backward on stage s+1, W after its B. Durations: F ``t_fwd``,
    B ``t_bgrad``, W ``t_wgrad``, BW = t_bgrad + t_wgrad, and an overlapped F&B pair ``t_fb``
    (both passes of a pair get the pair's start and end). ``t_fb`` defaults to
    t_fwd + t_bgrad + t_wgrad: the overlap hides the pair's communication, not its compute; a
    smaller t_fb models a pair that also overlaps compute. Point-to-point time is not modelled.

    What it reproduces (tested): with F = B = W (the input-gradient and weight-gradient halves of
    the backward each as long as the forward, the cost ratio ``bubble_fraction`` uses) and
    F&B = F + B_whole, every device idles exactly the report's Table 2 bubble
    (P/2 − 1)(F&B + B_whole − 3W) = (P − 2)·F (``bubble_time("dualpipe", …)``), against
    (P − 1)(F + B_whole) for 1F1B and (P − 1)(F + B_whole − 2W) for ZB-H1; the idle share is
    ``bubble_fraction(P, N, "dualpipe")``. With other ratios this as-early-as-possible timing of
    the same order drifts from the table's expression (the report does not say which timing
    its expression assumes), so it is not asserted there. Source: ``DUALPIPE_SOURCE``."""
    from .units import check_positive

    P, N = _check_dualpipe(n_stages, n_micro)
    tf = float(check_positive("t_fwd", t_fwd, allow_array=False))
    tb = float(check_positive("t_bgrad", t_bgrad, allow_array=False))
    tw = float(check_positive("t_wgrad", t_wgrad, allow_array=False))
    tfb = tf + tb + tw if t_fb is None else float(check_positive("t_fb", t_fb, allow_array=False))
    dur = {"F": tf, "B": tb, "W": tw, "BW": tb + tw}
    orders = [dualpipe_order(P, N, r) for r in range(P)]
    stage = lambda r, d: r if d == 0 else P - 1 - r  # noqa: E731
    done_key = {"F": "F", "B": "G", "BW": "G", "W": "W"}   # what a pass completes; G: input grad

    def deps(r, kind, d, m):
        s = stage(r, d)
        if kind == "F":
            return [("F", d, s - 1, m)] if s > 0 else []
        if kind == "W":
            return [("G", d, s, m)]
        return [("F", d, s, m)] + ([("G", d, s + 1, m)] if s < P - 1 else [])

    placed = schedule_ops(
        orders, lambda r, op: [k for (kind, d, m) in op for k in deps(r, kind, d, m)],
        lambda r, op: tfb if len(op) == 2 else dur[op[0][0]],
        provides=lambda r, op: [(done_key[kind], d, stage(r, d), m) for kind, d, m in op])
    ev = [(r, kind, d, m, start, end, len(op) == 2)
          for r, op, start, end in placed for kind, d, m in op]
    return sorted(ev, key=lambda e: (e[4], e[0], e[1]))


def dualpipe_idle(events, n_stages: int) -> list:
    """Idle time of each device in ``dualpipe_events``: the step (end of the last pass) minus the
    time the device spends in ops (an overlapped pair counted once)."""
    total = max(e[5] for e in events)
    busy = [0.0] * int(n_stages)
    seen = set()
    for r, kind, d, m, a, b, pair in events:
        if pair:
            if (r, a) in seen:
                continue
            seen.add((r, a))
        busy[r] += b - a
    return [total - x for x in busy]


def bubble_time(schedule, n_stages, t_fwd=1.0, t_bgrad=1.0, t_wgrad=1.0, t_fb=None):
    """Idle time per device in one step, DeepSeek-V3 Table 2's expressions with F a forward, B a
    whole backward (= t_bgrad + t_wgrad), W its weight-gradient part, F&B an overlapped pair
    (default F + B): "1f1b" (P−1)(F+B), "zb" (ZB-H1) (P−1)(F+B−2W), "dualpipe"
    (P/2−1)(F&B+B−3W). With F = B/2 = W = 1 these are ``_idle_units`` (3(P−1), P−1, 2(P/2−1)).
    Vectorised over ``n_stages``."""
    k = schedule_name(schedule)
    if k not in ("1f1b", "gpipe", "zb", "dualpipe"):
        raise ValueError(f"bubble_time knows '1f1b', 'gpipe', 'zb' and 'dualpipe', got {schedule!r}")
    p = np.asarray(n_stages, dtype=float)
    if np.any(p < 1):
        raise ValueError(f"n_stages must be >= 1, got {n_stages!r}")
    F, W = float(t_fwd), float(t_wgrad)
    B = float(t_bgrad) + W
    FB = F + B if t_fb is None else float(t_fb)
    if min(F, float(t_bgrad), W, FB) <= 0:
        raise ValueError("t_fwd, t_bgrad, t_wgrad and t_fb must be > 0")
    if k == "dualpipe":
        if np.any(p % 2):
            raise ValueError(f"DualPipe needs an even number of stages, got {n_stages!r}")
        return _arr((p / 2 - 1) * (FB + B - 3 * W))
    return _arr((p - 1) * (F + B - (2 * W if k == "zb" else 0.0)))


def dualpipe_in_flight(n_stages: int, n_micro: int) -> list:
    """Per device, the most microbatch-chunks whose forward has run and whose backward (B or BW)
    has not, over ``dualpipe_order`` (an overlapped pair counted as holding both): P + 1 on the
    two middle devices, the report's "PP + 1" activations (tested)."""
    P, N = _check_dualpipe(n_stages, n_micro)
    out = []
    for r in range(P):
        live = peak = 0
        for op in dualpipe_order(P, N, r):
            for kind, _, _ in op:
                live += 1 if kind == "F" else (-1 if kind in ("B", "BW") else 0)
            peak = max(peak, live)
        out.append(peak)
    return out


__all__ += ["DUALPIPE_SOURCE", "dualpipe_stage", "dualpipe_order", "dualpipe_events",
            "dualpipe_idle", "dualpipe_in_flight", "bubble_time"]
