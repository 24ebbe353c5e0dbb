"""The published measurements behind the validation appendix: schema, sources, inputs the model
needs, and the loader's errors."""
import json
from collections import Counter

import pytest

from scaling_lib import data, hardware, models
from scaling_lib.transformer import TransformerConfig

RECS = data.load()


def test_at_least_forty_records_in_every_category():
    assert len(RECS) >= 40
    counts = data.categories()
    assert set(counts) == set(data.CATEGORIES)
    assert all(n >= 3 for n in counts.values()), counts
    # the named kinds of evidence are all present
    assert counts["training"] >= 20 and counts["serving"] >= 10 and counts["gemm"] >= 10
    assert counts["collective"] + counts["alltoall"] >= 10


def test_every_record_names_its_source_and_unit():
    for m in RECS:
        assert m.source["url"].startswith("https://"), m.id
        assert m.source["title"] and m.source["where"], m.id
        assert m.unit == data.METRICS[m.metric], m.id
        assert m.value > 0, m.id
        assert m.cite().startswith(m.source["title"])


def test_chips_and_presets_resolve():
    for m in RECS:
        chip = hardware.get(m.chip)
        assert chip.hbm_bw > 0, m.id
        model = m.inputs.get("model")
        if isinstance(model, str):
            assert models.get(model).params() > 0, m.id
        elif model is not None:
            assert TransformerConfig(name=m.id, **dict(model)).params() > 0, m.id


def test_training_records_carry_layout_batch_and_sequence():
    for m in data.load("training"):
        lay = m.inputs["layout"]
        deg = 1
        for k in ("dp", "fsdp", "tp", "pp", "ep", "cp"):
            deg *= int(lay.get(k, 1))
        assert deg == m.n_chips, (m.id, deg, m.n_chips)
        assert "seq_len" in m.inputs and ("batch_tokens" in m.inputs or
                                          "batch_sequences" in m.inputs), m.id
        assert lay["precision"] in ("bf16", "fp8"), m.id
        if not isinstance(m.inputs["model"], str):
            w = m.inputs["model"]
            assert w["d_model"] % w["n_heads"] == 0, m.id


def test_serving_gemm_collective_inputs():
    for m in data.load("serving"):
        i = m.inputs
        assert i["tp"] == m.n_chips and i["batch"] >= 1 and i["input_len"] >= 1, m.id
    for m in data.load("gemm"):
        assert all(m.inputs[k] >= 1 for k in "MNK"), m.id
    for m in data.load("collective"):
        assert m.inputs["n"] == m.n_chips and m.inputs["bytes"] > 0, m.id
    for m in data.load("alltoall"):
        assert m.inputs["ep"] == m.n_chips and m.inputs["op"] in ("dispatch", "combine"), m.id


def test_the_four_flagship_runs_are_present_and_held_out():
    flag = [m for m in RECS if m.flagship]
    assert len(flag) == 4, [m.id for m in flag]
    assert {m.id for m in flag} == {"llama3-405b-8k-16384", "deepseek-v3", "palm-540b",
                                    "megatron-gpt-1008b"}
    assert all(m.split == "holdout" for m in flag)


def test_split_is_stratified_and_deterministic():
    by = Counter((m.category, m.split) for m in RECS)
    for c in data.CATEGORIES:
        cal, hold = by[(c, "calibrate")], by[(c, "holdout")]
        assert cal >= 1 and hold >= 1, c
        assert abs(cal - hold) <= 1 + sum(m.flagship for m in data.load(c)), (c, cal, hold)
    assert [m.split for m in RECS] == [data.split(m) for m in data.load()]


def test_get_and_unknown_ids():
    assert data.get("deepseek-v3").chip == "H800"
    with pytest.raises(KeyError, match="did you mean"):
        data.get("deepseek-v4")
    with pytest.raises(ValueError, match="unknown category"):
        data.load("inference")


def _write(tmp_path, records):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"schema": 1, "records": records}), encoding="utf-8")
    return p


def _good():
    return {"id": "x", "category": "gemm", "title": "t",
            "source": {"title": "s", "where": "w", "url": "https://example.org"},
            "hardware": {"chip": "H100", "n_chips": 1}, "inputs": {"M": 1, "N": 1, "K": 1},
            "metric": "tflops", "value": 1.0, "unit": "TFLOP/s"}


@pytest.mark.parametrize("change, msg", [
    (lambda r: r.pop("source"), "missing field"),
    (lambda r: r.update(unit="GFLOP/s"), "unit"),
    (lambda r: r.update(value=0), "positive"),
    (lambda r: r.update(category="cooking"), "category"),
    (lambda r: r["source"].update(url="http://example.org"), "https"),
    (lambda r: r["hardware"].update(n_chips=0), "n_chips"),
])
def test_loader_rejects_bad_records(tmp_path, change, msg):
    r = _good()
    change(r)
    with pytest.raises(ValueError, match=msg):
        data.load(path=_write(tmp_path, [r]))


def test_loader_rejects_duplicate_ids(tmp_path):
    with pytest.raises(ValueError, match="duplicate"):
        data.load(path=_write(tmp_path, [_good(), _good()]))
    assert len(data.load(path=_write(tmp_path, [_good()]))) == 1


def test_widths_reproduce_the_published_parameter_counts():
    # where a source prints the parameter count (MPT's NumParams), the widths we recorded give it
    checked = 0
    for m in data.load("training"):
        npar = m.inputs.get("published_params")
        if npar:
            cfg = TransformerConfig(name=m.id, **dict(m.inputs["model"]))
            assert cfg.params() == pytest.approx(npar, rel=5e-3), (m.id, cfg.params(), npar)
            checked += 1
    assert checked >= 10
