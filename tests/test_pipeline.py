"""pipeline.schedule_ops, the one list scheduler behind every pipeline timing in the library
(diagrams.pipeline_events / zero_bubble_events, pipeline.dualpipe_events,
training.interleaved_schedule), and a pin that its callers still give the events the four
separate loops they replaced gave."""
import hashlib

import pytest

from scaling_lib import diagrams as G
from scaling_lib import pipeline as pl
from scaling_lib import training
from scaling_lib.pipeline import schedule_ops


def _digest(x) -> str:
    return hashlib.sha256(repr(x).encode()).hexdigest()[:16]


# ---- old == new ---------------------------------------------------------------------------------
# (digest of repr(events), number of events, step, idle) computed by the code before the
# scheduler was shared (commit add8d62: three copies of the loop in diagrams.pipeline_events,
# diagrams.zero_bubble_events and pipeline.dualpipe_events, a time-stepped fourth in
# training.interleaved_schedule). The digest pins every event, times included, exactly.
PINNED = {
    "1f1b_4x8": (lambda: G.pipeline_events("1f1b", 4, 8, 1.0, 2.0),
                 "fbca6a0c267bda5e", 64, 33.0, 0.2727272727272727),
    "gpipe_4x8": (lambda: G.pipeline_events("gpipe", 4, 8, 1.0, 2.0),
                  "e03e537ccc0117f8", 64, 33.0, 0.2727272727272727),
    "gpipe_2x2_transfer_allreduce": (lambda: G.pipeline_events("gpipe", 2, 2, 1.0, 2.0, 0.5, 3.0),
                                     "fd58fa9516c176a7", 14, 13.0, 0.5384615384615384),
    "1f1b_4x6_uneven": (lambda: G.pipeline_events("1f1b", 4, 6, 1.3, 2.1, 0.4, 1.5),
                        "68cba9b83280d2e2", 88, 36.9, 0.44715447154471544),
    "1f1b_1x3": (lambda: G.pipeline_events("1f1b", 1, 3, 1.0, 2.0, 0.5, 1.0),
                 "77ce12c2e8474229", 7, 10.0, 0.09999999999999998),
    "zb_4x8": (lambda: G.zero_bubble_events(4, 8),
               "a7f4736e4f85e83d", 96, 27.0, 0.11111111111111116),
    "zb_4x8_uneven": (lambda: G.zero_bubble_events(4, 8, 1.1, 0.9, 0.7),
                      "389160555281db03", 96, 25.499999999999996, 0.15294117647058847),
    "zb_3x2": (lambda: G.zero_bubble_events(3, 2, 1.0, 2.0, 0.5),
               "ddc09d50f0f38ced", 18, 12.5, 0.43999999999999995),
    "dualpipe_8x20": (lambda: pl.dualpipe_events(8, 20),
                      "441cb3a60d7af421", 364, 66.0, [6.0] * 8),
    "dualpipe_4x8_uneven": (lambda: pl.dualpipe_events(4, 8, 1.2, 0.8, 0.6, 2.3),
                            "0464f6d8abd068c3", 74, 22.200000000000003,
                            [2.299999999999997, 2.3000000000000007, 2.3000000000000007,
                             2.299999999999997]),
    "dualpipe_8x20_slow_pair": (lambda: pl.dualpipe_events(8, 20, t_fb=3.5),
                                "224bcf7980068ed8", 364, 73.0,
                                [8.5, 8.0, 7.5, 7.5, 7.5, 7.5, 8.0, 8.5]),
    "dualpipe_2x4": (lambda: pl.dualpipe_events(2, 4), "c6131002400c56fd", 18, 12.0, [0.0, 0.0]),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_events_are_those_of_the_old_loops(name):
    make, digest, n, step, idle = PINNED[name]
    ev = make()
    if name.startswith("dualpipe"):
        P = int(name.split("_")[1].split("x")[0])
        assert max(e[5] for e in ev) == step, name
        assert pl.dualpipe_idle(ev, P) == idle, name
    else:
        Z = int(name.split("_")[1].split("x")[0])
        assert max(e[4] for e in ev) == step, name
        assert G.pipeline_idle(ev, Z) == idle, name
    assert len(ev) == n, name
    assert _digest(ev) == digest, f"{name}: the events moved"


def test_small_schedule_pinned_event_by_event():
    # GPipe, 2 stages × 2 microbatches, F = 1, B = 2, transfers 0.5, AllReduce 3 (old code's output)
    assert G.pipeline_events("gpipe", 2, 2, 1.0, 2.0, 0.5, 3.0) == [
        (0, "F", 0, 0.0, 1.0), (0, "F", 1, 1.0, 2.0), (0, "XF", 0, 1.0, 1.5),
        (1, "F", 0, 1.5, 2.5), (0, "XF", 1, 2.0, 2.5), (1, "F", 1, 2.5, 3.5),
        (1, "B", 0, 3.5, 5.5), (1, "B", 1, 5.5, 7.5), (1, "XB", 0, 5.5, 6.0),
        (0, "B", 0, 6.0, 8.0), (1, "G", -1, 7.5, 10.5), (1, "XB", 1, 7.5, 8.0),
        (0, "B", 1, 8.0, 10.0), (0, "G", -1, 10.0, 13.0)]


def test_interleaved_grid_is_the_old_one():
    grid, chunk = training.interleaved_schedule(4, 8, 2)
    assert _digest((grid.tolist(), chunk.tolist())) == "de8ec46c630f587e"
    grid, chunk = training.interleaved_schedule(2, 4, 2)
    assert grid.tolist() == [[1, 2, 1, 2, 3, -1, 4, -2, 3, -1, 4, -2, 0, -3, 0, -4, -3, -4],
                             [0, 1, 2, 1, -1, 2, -2, 3, -1, 4, -2, 3, -3, 4, -4, -3, -4, 0]]
    assert chunk.tolist() == [[0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, -1, 1, -1, 1, 0, 0],
                              [-1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, -1]]
    # the bubble the docstring states: (Z − 1)/(v·M + Z − 1) of each device's time
    grid, _ = training.interleaved_schedule(4, 8, 2)
    assert (grid == 0).mean() == pytest.approx(3 / (2 * 8 + 3))


# ---- the scheduler itself -----------------------------------------------------------------------

def _chain_needs(w, op):            # op = (stage, microbatch): after the previous stage's op
    s, m = op
    return [(s - 1, m)] if s > 0 else []


def test_schedule_ops_by_hand():
    # two stages, three microbatches, stage 0 takes 1, stage 1 takes 2: stage 1 is the
    # bottleneck, so it runs back to back from t = 1 and the step ends at 1 + 3·2 = 7
    orders = [[(0, m) for m in range(3)], [(1, m) for m in range(3)]]
    out = schedule_ops(orders, _chain_needs, lambda w, op: 1.0 if w == 0 else 2.0)
    assert sorted(out, key=lambda e: (e[2], e[0])) == [
        (0, (0, 0), 0.0, 1.0), (0, (0, 1), 1.0, 2.0), (1, (1, 0), 1.0, 3.0),
        (0, (0, 2), 2.0, 3.0), (1, (1, 1), 3.0, 5.0), (1, (1, 2), 5.0, 7.0)]
    # a transfer delays only what crosses workers; a mapping gives the durations
    dur = {op: 1.0 for row in orders for op in row}
    out = schedule_ops(orders, _chain_needs, dur, transfer=0.5)
    assert max(e[3] for e in out) == 1.0 + 0.5 + 3 * 1.0
    out = schedule_ops(orders, _chain_needs, dur, transfer=lambda src, dst: 0.25 * (dst - src))
    assert max(e[3] for e in out) == 1.0 + 0.25 + 3 * 1.0
    # with ``provides`` the ops need not be unique (nor hashable as keys): here they complete
    # nothing and just run one after the other
    out = schedule_ops([["x", "x"]], lambda w, op: [], lambda w, op: 1,
                       provides=lambda w, op: [])
    assert [e[2:] for e in out] == [(0.0, 1.0), (1.0, 2.0)]
    assert schedule_ops([], _chain_needs, {}) == []


def test_schedule_ops_rejects_bad_arguments():
    ok = [[(0, 0)], [(1, 0)]]
    with pytest.raises(TypeError, match="orders must be a sequence"):
        schedule_ops("ab", _chain_needs, lambda w, op: 1)
    with pytest.raises(TypeError, match=r"orders\[1\] must be a sequence of ops"):
        schedule_ops([[(0, 0)], 5], _chain_needs, lambda w, op: 1)
    with pytest.raises(TypeError, match="needs must be a callable"):
        schedule_ops(ok, None, lambda w, op: 1)
    with pytest.raises(TypeError, match="provides must be None or a callable"):
        schedule_ops(ok, _chain_needs, lambda w, op: 1, provides=[])
    with pytest.raises(TypeError, match="duration must be a mapping"):
        schedule_ops(ok, _chain_needs, 1.0)
    with pytest.raises(ValueError, match=r"duration has no entry for op \(1, 0\) of worker 1"):
        schedule_ops(ok, _chain_needs, {(0, 0): 1.0})
    for bad in (-1.0, float("nan"), float("inf"), "1", True):
        with pytest.raises(ValueError, match=r"duration of op \(0, 0\) of worker 0 must be"):
            schedule_ops(ok, _chain_needs, lambda w, op: bad)
    with pytest.raises(ValueError, match="transfer must be >= 0"):
        schedule_ops(ok, _chain_needs, lambda w, op: 1, transfer=-0.5)
    with pytest.raises(ValueError, match=r"key \(0, 0\) is provided twice: by op \(0, 0\) of "
                                         r"worker 0 and by op \(0, 0\) of worker 1"):
        schedule_ops([[(0, 0)], [(0, 0)]], lambda w, op: [], lambda w, op: 1)
    with pytest.raises(ValueError, match=r"op \(1, 0\) of worker 1 needs \(0, 0\), which no op "
                                         r"provides"):
        schedule_ops([[], [(1, 0)]], _chain_needs, lambda w, op: 1)


def test_schedule_ops_names_a_deadlock():
    # worker 0 runs a then b, worker 1 runs c then d; a needs d and c needs b: a circle
    need = {"a": ["d"], "b": [], "c": ["b"], "d": []}
    orders = [["a", "b"], ["c", "d"]]
    with pytest.raises(ValueError, match=r"deadlock.*worker 0: 'a' waits for 'd'; "
                                         r"worker 1: 'c' waits for 'b'"):
        schedule_ops(orders, lambda w, op: need[op], lambda w, op: 1)
    # the same ops in a feasible order: b before a, d before c
    out = schedule_ops([["b", "a"], ["d", "c"]], lambda w, op: need[op], lambda w, op: 1)
    assert {op: (a, b) for _, op, a, b in out} == {"b": (0, 1), "d": (0, 1), "a": (1, 2),
                                                   "c": (1, 2)}


def test_callers_share_the_scheduler(monkeypatch):
    # every pipeline timing goes through pipeline.schedule_ops: replace it and they all fail
    def boom(*a, **k):
        raise RuntimeError("shared scheduler called")
    monkeypatch.setattr(pl, "schedule_ops", boom)
    for call in (lambda: pl.dualpipe_events(4, 8), lambda: G.pipeline_events("1f1b", 2, 2),
                 lambda: G.zero_bubble_events(2, 2),
                 lambda: training.interleaved_schedule(2, 2, 2)):
        with pytest.raises(RuntimeError, match="shared scheduler called"):
            call()
