"""The validation appendix's numbers: the forecast beats the bound, the held-out error stays within
the issue's goals and never gets worse than recorded, and the shipped parameters are what the
calibration gives."""
import json

import numpy as np
import pytest

from scaling_lib import data, efficiency, validation

#: recorded on the held-out half (56 records: training and serving runs included) when these
#: tests were written; a change that makes the model worse than this fails (improve the model,
#: or explain and lower the bar in review). 0.092 -> 0.093 when serving's TP AllReduce moved onto
#: collectives.group_time (issue #16): the same times to within rounding, but the refit landed
#: elsewhere on a flat objective (held-out median 9.16 % -> 9.21 %, still 47 of 56 within ±20 %)
RECORDED_HOLDOUT = {"median_abs_error": 0.093, "within_20pct_count": 47}
#: recorded flagship ranks by forecast (1 = fastest) and how many flagships meet the goal
#: (DeepSeek-V3 20 -> 21 of 28 when model FLOPs stopped counting the embedding lookup, review
#: ch04-06 L8: 2.5 % fewer FLOPs per token shifts compute-bound candidates against EP-bound ones)
#: (PaLM 8 of 38 -> 9 of 40 when layouts.py took full recomputation, as HFU/MFU = 1.25 says:
#: its published/forecast went from 1.30 to 1.06)
#: (LLaMA 76 of 264 -> 1 of 159, DeepSeek-V3 21 of 28 -> 9 of 15 when layouts.py searched only
#: layouts whose data shards hold whole sequences, step.plan(whole_sequences=True); PaLM 9 -> 5
#: when its parallel attention/MLP block paid its TP collectives once, 1.06 -> 1.17)
RECORDED_FLAGSHIPS = {"llama3-405b-8k": 1, "deepseek-v3": 9, "megatron-1t": 1,
                      "palm-540b": 5}
RECORDED_FLAGSHIPS_MEETING_GOAL = 3


def test_every_modelled_row_has_bound_forecast_measured():
    rs = validation.rows()
    assert len(rs) >= 40
    for r in rs:
        assert r.bound > 0 and r.forecast > 0 and r.measured > 0, r.id
        assert r.split in ("calibrate", "holdout")
    ids = {r.id for r in rs} | set(validation.pending())
    assert ids == {m.id for m in data.load()}


def test_the_bound_is_a_bound():
    # the clean model is a lower bound for (nearly) every measurement
    rs = validation.rows()
    below = [r.id for r in rs if r.measured < 0.97 * r.bound]
    assert len(below) <= len(rs) // 10, below


def test_forecast_is_better_than_the_bound_on_held_out_rows():
    rs = validation.rows(split="holdout")
    e_fc = np.median([abs(r.measured / r.forecast - 1) for r in rs])
    e_bd = np.median([abs(r.measured / r.bound - 1) for r in rs])
    assert e_fc < 0.5 * e_bd, (e_fc, e_bd)


def test_held_out_error_meets_the_goals_and_does_not_regress():
    s = validation.summary()["holdout"]
    assert s["median_abs_error"] <= validation.GOALS["median_abs_error"]
    assert s["within_20pct"] >= validation.GOALS["within_20pct"]
    assert s["median_abs_error"] <= RECORDED_HOLDOUT["median_abs_error"], s
    assert round(s["within_20pct"] * s["n"]) >= RECORDED_HOLDOUT["within_20pct_count"], s


def test_flagship_layouts_rank_no_worse_than_recorded():
    fr = {f.key: f for f in validation.flagship_ranks()}
    assert set(fr) == set(validation.FLAGSHIPS)
    for k, rank in RECORDED_FLAGSHIPS.items():
        f = fr[k]
        assert f.rank_forecast <= rank, (k, f.rank_forecast)
        assert 1 <= f.rank_bound <= f.n and f.forecast > f.bound > 0, k
        assert f.best_forecast <= f.forecast, k
    assert sum(f.meets_goal for f in fr.values()) >= RECORDED_FLAGSHIPS_MEETING_GOAL
    # Megatron-LM's published layout is the forecast's best in its space, within 6 % (1.049
    # before the L8 FLOP count and its refit, 1.051 after)
    assert fr["megatron-1t"].rank_forecast == 1 and abs(fr["megatron-1t"].ratio - 1) < 0.06


def test_shipped_parameters_equal_a_fresh_calibration(tmp_path):
    res = validation.calibrate(write=True, path=tmp_path / "p.json")
    fresh = json.loads((tmp_path / "p.json").read_text())["values"]
    shipped = json.loads(efficiency.PARAMS_PATH.read_text())
    for k, v in fresh.items():
        assert shipped["values"][k] == pytest.approx(v, rel=2e-3), k
    assert res.converged
    assert sorted(shipped["calibrated_on"]) == sorted(m.id for m in data.load()
                                                      if m.split == "calibrate" and
                                                      m.id not in validation.pending())


def test_report_and_cli(capsys):
    assert validation.main([]) == 0
    out = capsys.readouterr().out
    assert "holdout" in out and "goals" in out
    assert validation.main(["nonsense"]) == 2
    with pytest.raises(ValueError, match="split"):
        validation.rows(split="train")
    with pytest.raises(ValueError, match="restarts must be an int >= 0"):
        efficiency.fit(lambda v: [v["a"]], {"a": 1.0}, {"a": (0.0, 2.0)}, restarts=-1)
    for mid in list(validation.pending())[:1]:
        with pytest.raises(ValueError, match="no model"):
            validation.terms(mid)
