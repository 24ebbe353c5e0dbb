"""Two facts about real training runs the planner's search must respect (issue #17, the flagship
layouts): a data shard holds whole sequences, and PaLM's parallel block shares its tensor-parallel
collectives between attention and MLP."""
import dataclasses

import pytest

from scaling_lib import efficiency, layouts, step, validation
from scaling_lib.strategy import Strategy, layer_comms


def test_parallel_block_pays_the_tp_activation_collectives_once():
    for zero in (1, 3):
        for sp in (True, False):
            seq = [it for it in layer_comms(zero, sp) if it.operand == "act" and "tensor" in it.axes]
            par = [it for it in layer_comms(zero, sp, True)
                   if it.operand == "act" and "tensor" in it.axes]
            assert len(seq) == 2 * len(par) > 0
            assert {it.matrix for it in par} == {"qkv", "o"}
            # nothing but the MLP's activation collectives over the tensor axis goes away
            rest = lambda items: [(it.pass_, it.kind, it.axes, it.matrix) for it in items  # noqa: E731
                                  if not (it.operand == "act" and "tensor" in it.axes)]
            assert rest(layer_comms(zero, sp)) == rest(layer_comms(zero, sp, True))
    with pytest.raises(TypeError, match="parallel_block"):
        layer_comms(3, True, "yes")


def test_palm_tp_traffic_is_half_of_the_same_model_in_sequence():
    lay = layouts.get("palm-540b")
    assert lay.cfg.parallel_block
    seq_cfg = dataclasses.replace(lay.cfg, parallel_block=False)
    pb, ob, gb = lay.state_bytes
    kw = dict(param_bytes=pb, opt_bytes=ob, grad_bytes=gb)
    r_par = step.evaluate(lay.strategy, lay.cfg, lay.system, lay.batch_tokens, lay.seq_len, **kw)
    r_seq = step.evaluate(lay.strategy, seq_cfg, lay.system, lay.batch_tokens, lay.seq_len, **kw)
    assert r_par.comms["tp"] == pytest.approx(r_seq.comms["tp"] / 2, rel=1e-12)
    assert r_par.comms["fsdp"] == pytest.approx(r_seq.comms["fsdp"], rel=1e-12)
    assert r_par.model_flops == r_seq.model_flops
    f_par = efficiency.training_forecast(r_par, lay.cfg)
    f_seq = efficiency.training_forecast(r_seq, seq_cfg)
    assert f_par.parts["tp_latency"] == pytest.approx(f_seq.parts["tp_latency"] / 2)
    with pytest.raises(TypeError, match="parallel_block"):
        dataclasses.replace(lay.cfg, parallel_block=1)


def test_whole_sequences_rejects_a_shard_that_holds_part_of_a_sequence():
    lay = layouts.get("llama3-405b-8k")
    n_seq = lay.batch_tokens // lay.seq_len
    assert n_seq == 2048
    # 512 data shards × 16 microbatches would need 8,192 sequences: the batch has 2,048
    s = Strategy(fsdp=512, tp=4, pp=8, zero=2, microbatches=16, schedule="interleaved",
                 virtual_stages=4, stage_layers=(16,) * 7 + (14,))
    pb, ob, gb = lay.state_bytes
    kw = dict(param_bytes=pb, opt_bytes=ob, grad_bytes=gb)
    r = step.evaluate(s, lay.cfg, lay.system, lay.batch_tokens, lay.seq_len, **kw)
    assert r.batch_tokens / 512 / 16 == 2048           # a quarter of one 8K sequence
    with pytest.raises(ValueError, match="whole sequences"):
        step.evaluate(s, lay.cfg, lay.system, lay.batch_tokens, lay.seq_len,
                      whole_sequences=True, **kw)
    # the published layout holds 16 sequences per shard, one per microbatch
    step.evaluate(lay.strategy, lay.cfg, lay.system, lay.batch_tokens, lay.seq_len,
                  whole_sequences=True, **kw)
    with pytest.raises(TypeError, match="whole_sequences"):
        step.plan(lay.cfg, lay.system, lay.batch_tokens, lay.seq_len, whole_sequences="yes")


def test_planner_search_for_published_layouts_keeps_whole_sequences():
    d = layouts.plan_contains("llama3-405b-8k")
    plan = d["plan"]
    assert plan.rejected["sequences"] > 0
    for r in plan.results:
        s = r.strategy
        ways = s.dp * s.fsdp * s.ep
        assert 2048 % (ways * s.microbatches) == 0, s
    for key in validation.FLAGSHIPS:
        d = layouts.plan_contains(key)
        lay = layouts.get(key)
        n_seq = lay.batch_tokens // lay.seq_len
        for r in d["plan"].results:
            s = r.strategy
            assert n_seq % (s.dp * s.fsdp * s.ep * s.microbatches) == 0, (key, s)

