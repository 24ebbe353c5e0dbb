"""Chapter 10 programs on 8 simulated devices: collective matmuls (numerics against the plain
matmul and the collectives in their compiled HLO), shard_map warm-ups and the toy MoE."""
from scaling_lib import devices

devices.setup(8)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

from scaling_lib import profiling as pr  # noqa: E402
from scaling_lib.exercises import ch10  # noqa: E402

RNG = np.random.default_rng(1)


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("B,D,F", [(8, 16, 32), (16, 32, 64), (4, 64, 16)])
def test_ag_collective_matmul_equals_matmul(B, D, F):
    a, w = _rand(B, D), _rand(D, F)
    np.testing.assert_allclose(ch10.ag_collective_matmul(a, w), a @ w, rtol=1e-4, atol=1e-4)


def test_chunk_index_depends_on_device():
    """spec P10.4 pitfall: using chunk k instead of (j + k) mod n gives a wrong answer."""
    from scaling_lib.exercises.ch10 import _mesh, _put, MESH_XY

    def buggy(a, w):
        n = jax.lax.axis_size("Y")
        dc = a.shape[1]
        acc = a @ w[:dc]
        for k in range(1, n):
            a = jax.lax.ppermute(a, "Y", [(s, (s - 1) % n) for s in range(n)])
            acc = acc + a @ w[k * dc:(k + 1) * dc]
        return acc
    mesh = _mesh(*MESH_XY)
    f = jax.jit(jax.shard_map(buggy, mesh=mesh, in_specs=(P("X", "Y"), P(None, "Y")),
                              out_specs=P("X", "Y")))
    a, w = _rand(8, 16), _rand(16, 32)
    got = np.asarray(f(_put(a, mesh, "X", "Y"), _put(w, mesh, None, "Y")))
    assert not np.allclose(got, a @ w, atol=1e-3)


def test_collective_matmul_hlo_has_permutes_not_allgather():
    f, mesh = ch10._compiled("ag")
    a = ch10._put(_rand(8, 16), mesh, "X", "Y")
    w = ch10._put(_rand(16, 32), mesh, None, "Y")
    cm = pr.collective_counts(f.lower(a, w).compile().as_text())
    assert cm["collective-permute"] == 3 and cm["all-gather"] == 0
    with jax.set_mesh(mesh):
        ref = jax.jit(lambda a, w: jnp.dot(a, w, out_sharding=P("X", "Y")))
        plain = pr.collective_counts(ref.lower(a, w).compile().as_text())
    assert plain["all-gather"] == 1 and plain["collective-permute"] == 0


def test_rs_ar_bidir_ffn_numerics():
    a, w = _rand(8, 16), _rand(16, 32)
    np.testing.assert_allclose(ch10.ar_tiled_matmul(a, w), a @ w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ch10.bidirectional_ag_matmul(a, w), a @ w, rtol=1e-4, atol=1e-4)
    t, w2 = _rand(8, 32), _rand(32, 16)
    np.testing.assert_allclose(ch10.rs_collective_matmul(t, w2), t @ w2, rtol=1e-4, atol=1e-4)
    w_in, w_out = _rand(16, 32) / 4, _rand(32, 16) / 4
    ref = np.asarray(jax.nn.gelu(a @ w_in)) @ w_out
    np.testing.assert_allclose(ch10.ffn_block(a, w_in, w_out), ref, rtol=1e-4, atol=1e-4)


def test_rs_and_bidir_hlo():
    f, mesh = ch10._compiled("rs")
    t = ch10._put(_rand(8, 32), mesh, "X", "Y")
    w2 = ch10._put(_rand(32, 16), mesh, "Y", None)
    c = pr.collective_counts(f.lower(t, w2).compile().as_text())
    assert c["collective-permute"] == 3 and c["all-reduce"] == 0 and c["reduce-scatter"] == 0
    f, mesh = ch10._compiled("bidir")
    a = ch10._put(_rand(8, 16), mesh, "X", "Y")
    w = ch10._put(_rand(16, 32), mesh, None, "Y")
    perms = [x for x in pr.collectives(f.lower(a, w).compile().as_text()) if x.kind == "collective-permute"]
    assert len(perms) == 6
    assert {x.bytes for x in perms} == {2 * 4 * 4}     # half of the [4, 4] f32 block each way


def test_slice_and_average_p103():
    assert ch10.slice_and_average().tolist() == [224.0, 225.0, 226.0, 227.0]


def test_per_shard_mean_and_roll_p105():
    a = _rand(16, 8)
    np.testing.assert_allclose(ch10.per_shard_mean(a), a.reshape(4, 4, 2, 4).mean(axis=(1, 3)),
                               rtol=1e-5, atol=1e-6)
    ref = (np.roll(a.reshape(4, 4, 8), 3, axis=1) - a.reshape(4, 4, 8)).reshape(16, 8)
    np.testing.assert_allclose(ch10.roll_in_shard(a, 3), ref, atol=1e-6)


def test_moe_versions_agree_p106():
    a, w = _rand(16, 8), _rand(8, 8, 4)
    r = RNG.integers(0, 8, 16)
    ref = ch10.moe_reference(a, w, r)
    np.testing.assert_allclose(ch10.moe_dense_buffer(a, w, r), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ch10.moe_allgather(a, w, r), ref, rtol=1e-4, atol=1e-4)
    r2 = RNG.integers(0, 8, (16, 2))
    np.testing.assert_allclose(ch10.moe_topk(a, w, r2),
                               (ch10.moe_reference(a, w, r2[:, 0]) + ch10.moe_reference(a, w, r2[:, 1])) / 2)


def test_bad_inputs():
    with pytest.raises(ValueError, match="divisible"):
        ch10.ag_collective_matmul(_rand(7, 16), _rand(16, 32))
    with pytest.raises(ValueError, match="route"):
        ch10.moe_reference(_rand(4, 2), _rand(2, 2, 2), [0, 1, 2, 0])


# ---- issue 13 item 5 / review ch10-12 M3: the exercises check the reader's compiled program ----

from scaling_lib.exercises import get  # noqa: E402
from scaling_lib.exercises.hlo_check import Program, found_text  # noqa: E402
from scaling_lib.grading import evaluate  # noqa: E402
from scaling_lib.xla.checks import shard_map_program  # noqa: E402

PROGRAM_IDS = ("10.4", "10.7", "10.7b", "10.7c", "10.8")

# each slip body (the JAX a reader would write) against the numpy model of the same mistake
SLIP_MODELS = [
    ("10.4", ch10._ag_slip_local, ch10._ag_local_only),
    ("10.4", ch10._ag_slip_chunk, ch10._ag_wrong_chunk),
    ("10.8", ch10._bidir_slip_chunk, ch10._bidir_same_chunk),
    ("10.8", ch10._ag_slip_local, ch10._ag_local_only),
    ("10.7", ch10._ar_slip_no_psum, ch10._ar_no_psum),
    ("10.7", ch10._ar_slip_pmean, lambda a, w: ch10.ar_tiled_matmul(a, w) / 4),
    ("10.7b", ch10._rs_slip_local, ch10._rs_local_only),
    ("10.7b", ch10._rs_slip_start, ch10._rs_off_by_one),
    ("10.7c", ch10._ffn_slip_no_gelu, ch10._ffn_no_gelu),
    ("10.7c", ch10._ffn_slip_relu, ch10._ffn_relu),
]


def test_program_exercises_are_the_collective_matmuls():
    assert {e.id for e in ch10.EXERCISES if e.program is not None} == set(PROGRAM_IDS)
    for i in PROGRAM_IDS:
        ex = get(i)
        assert ex.reference() is ex.program.body
        assert {s.answer for s in ex.slips} <= {b for _, b, _ in SLIP_MODELS}


@pytest.mark.parametrize("ex_id,body,model", SLIP_MODELS, ids=[f"{i}-{b.__name__}" for i, b, _ in SLIP_MODELS])
def test_slip_body_is_its_numpy_model(ex_id, body, model):
    ex = get(ex_id)
    kw = {k: np.asarray(v, np.float32) for k, v in ex.sampler(np.random.default_rng(3)).items()}
    got, _ = ex.program.runner(body)(**kw)
    np.testing.assert_allclose(got, model(**kw), rtol=1e-4, atol=1e-4)
    assert not np.allclose(got, ex.expected(**kw), atol=1e-2), "the slip must change the numbers"


def test_harness_runs_the_reference_body_and_reads_its_hlo():
    run = shard_map_program(ch10._ag_body, ch10.MESH_XY, {"a": ("X", "Y"), "w": (None, "Y")}, ("X", "Y"))
    a, w = _rand(8, 16), _rand(16, 32)
    out, facts = run(a=a, w=w)
    np.testing.assert_allclose(out, a @ w, rtol=1e-4, atol=1e-4)
    assert facts["collectives"]["collective-permute"] == 3
    assert facts["collectives"]["all-gather"] == 0
    assert len(facts["permutes"]) == 1 and len(facts["permutes"][0]) == 8   # one shift, every device
    # the same wrapper on the plain AllGather body: the gather is there, no permute
    _, plain = shard_map_program(ch10._ag_wrong_gather, ch10.MESH_XY,
                                 {"a": ("X", "Y"), "w": (None, "Y")}, ("X", "Y"))(a=a, w=w)
    assert plain["collectives"]["all-gather"] == 1 and plain["collectives"]["collective-permute"] == 0
    import json
    json.dumps(facts)                       # plain data: it travels out of the grader's sandbox


def test_harness_bad_input():
    with pytest.raises(TypeError, match="function"):
        shard_map_program(3, ch10.MESH_XY, {"a": ("X", "Y")}, ("X", "Y"))
    with pytest.raises(ValueError, match="mesh axis"):
        shard_map_program(ch10._ag_body, ch10.MESH_XY, {"a": ("Z",)}, ("X", "Y"))
    run = shard_map_program(lambda a, w: np.asarray(a) @ w, ch10.MESH_XY,
                            {"a": ("X", "Y"), "w": (None, "Y")}, ("X", "Y"))
    with pytest.raises(TypeError, match="每个设备上执行的函数体"):
        run(a=_rand(8, 16), w=_rand(16, 32))
    with pytest.raises(TypeError, match="missing"):
        run(a=_rand(8, 16))


def test_program_judge_names_what_it_found():
    p = ch10.PROGRAM_AG
    zero = {k: 0 for k in ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")}
    ok, msg = p.judge({"collectives": {**zero, "collective-permute": 3}, "permutes": []})
    assert ok and msg.startswith("编译出的 HLO 里有 3 个 collective-permute，没有 all-gather")
    ok, msg = p.judge({"collectives": {**zero, "all-gather": 1}, "permutes": []})
    assert not ok and msg.startswith("你的程序里有 all-gather：编译出的 HLO 里有 1 个 all-gather。")
    ok, msg = p.judge({"collectives": zero, "permutes": []})
    assert not ok and msg.startswith("你的程序里没有 collective-permute：编译出的 HLO 里没有任何集合通信。")
    for bad in (None, {}, {"collectives": "x"}, {"collectives": {"all-gather": "many"}}):
        ok, msg = p.judge(bad)
        assert not ok and "HLO" in msg
    # 10.8: permutes one way round the ring (device j -> j - 1 along Y) are not a bidirectional ring
    one_way = [[[s, (s // 4) * 4 + (s % 4 - 1) % 4] for s in range(8)]]
    both = one_way + [[[s, (s // 4) * 4 + (s % 4 + 1) % 4] for s in range(8)]]
    facts = {"collectives": {**zero, "collective-permute": 3}}
    assert not ch10.PROGRAM_BIDIR.judge({**facts, "permutes": one_way})[0]
    assert ch10.PROGRAM_BIDIR.judge({**facts, "permutes": both})[0]
    assert found_text({"all-gather": 2, "collective-permute": 1}) == "编译出的 HLO 里有 2 个 all-gather、1 个 collective-permute"
    with pytest.raises(ValueError, match="unknown collective"):
        Program(body=ch10._ag_body, mesh=ch10.MESH_XY, in_specs={"a": ("X", "Y")}, out_spec=("X", "Y"),
                forbid={"all-gathers": "?"})


def test_plain_allgather_answer_fails_on_hlo_and_wrong_ring_on_values():
    """The defect issue 13 names: a plain all-gather + matmul used to pass 10.4."""
    ex = get("10.4")
    r = evaluate(ex, ch10._ag_wrong_gather)
    assert not r.correct
    assert r.message.startswith("❌ 数值都对，但你的程序里有 all-gather：编译出的 HLO 里有 1 个 all-gather。")
    r = evaluate(ex, ch10._ag_slip_chunk)        # a ppermute ring with the wrong W block: numbers
    assert not r.correct and "W 的行块选反了" in r.message and "数值都对" not in r.message
    r = evaluate(ex, ch10._ag_slip_local)        # wrong numbers and no ring: both said
    assert not r.correct and "只乘了本地那一块" in r.message
    assert "另外，你的程序里没有 collective-permute" in r.message
    r = evaluate(ex, ch10._ag_body)
    assert r.correct and "编译出的 HLO 里有 3 个 collective-permute，没有 all-gather" in r.message


def test_grader_plumbing_judges_the_kernels_report():
    """What the batch grader does with a program exercise, without the sandbox: the spec it sends
    carries the harness arguments, the kernel's extractor (``_extract._call_all`` + ``_program``)
    returns per-input results and HLO facts as plain JSON, and ``_judge_item`` judges both."""
    import json
    from scaling_lib.grading import _batch, _extract
    ex = get("10.4")
    specs, inputs = _batch._job_exercises([ex], seed=5)
    spec = json.loads(json.dumps(specs[0]))
    assert spec["program"] == {"mesh": [[2, 4], ["X", "Y"]], "in_specs": {"a": ["X", "Y"], "w": [None, "Y"]},
                               "out_spec": ["X", "Y"]}

    def report(body):
        cases = _extract._call_all(_extract._program(body, spec["program"]), spec["inputs"], 60.0, True)
        return json.loads(json.dumps({"id": ex.id, "cases": cases}))

    good = report(ch10._ag_body)
    assert all("hlo" in c for c in good["cases"])
    assert _batch._judge_item(ex, good, inputs[ex.id], None).correct
    r = _batch._judge_item(ex, report(ch10._ag_wrong_gather), inputs[ex.id], None)
    assert not r.correct and "你的程序里有 all-gather" in r.message
    no_facts = {"id": ex.id, "cases": [{"ok": c["ok"]} for c in good["cases"]]}   # a kernel that hides its HLO
    r = _batch._judge_item(ex, no_facts, inputs[ex.id], None)
    assert not r.correct and "没能读到你的程序编译出的 HLO" in r.message
    bad = report(lambda a, w: np.asarray(a))                                    # not a per-device body
    r = _batch._judge_item(ex, bad, inputs[ex.id], None)
    assert not r.correct and "函数体" in r.message


def test_student_stub_says_not_answered():
    """The student copy's stub (`def collective_matmul(a, w): ...`) returns None: one plain line."""
    def collective_matmul(a, w):
        ...
    r = evaluate(get("10.4"), collective_matmul)
    assert not r.correct and "返回了 None" in r.message and "HLO" not in r.message


_GRADE_SCRIPT = r'''
import json, sys
from pathlib import Path
import nbformat
from scaling_lib.grading import grade
tmp = Path(sys.argv[1])
setup = "from scaling_lib import devices\ndevices.setup(8)"
head = ("from scaling_lib.grading import check\nfrom scaling_lib import devices\nimport jax\n"
        "mesh_xy = devices.mesh((2, 4), ('X', 'Y'))")
plain = ("def collective_matmul(a, w):\n"
         "    return jax.lax.all_gather(a, 'Y', axis=1, tiled=True) @ w\n"
         "check('10.4', collective_matmul)\ncheck('10.3', [448.0, 449.0, 450.0, 451.0])")
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in (setup, head, plain)])
nbformat.write(nb, tmp / "10_plain.ipynb")
res = grade([tmp / "10_plain.ipynb"], out=tmp / "scores.csv", chapter=10, jobs=1, quiet=True,
            feedback=None, progress=False)
r = res[0]
print(json.dumps({"status": r.status, "scores": r.scores, "messages": r.messages}, ensure_ascii=False))
'''


def test_real_grader_rejects_a_plain_allgather_submission(tmp_path):
    """End to end, in a fresh process (jax not yet imported) and the grader's own sandbox: the
    expected values of chapter 10 are computable (the devices are set up before any of them, also
    the ones expected_form computes), 10.3 scores, and a plain all-gather 10.4 gets 0 points with
    the HLO message."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env["PYTHONPATH"] = str(root)      # (this process's devices.setup put the 8 devices in XLA_FLAGS)
    p = subprocess.run([sys.executable, "-c", _GRADE_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                       timeout=600, cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["scores"]["10.3"] == 1.0, out["messages"]["10.3"]
    assert out["scores"]["10.4"] == 0.0
    assert out["messages"]["10.4"].startswith("❌ 数值都对，但你的程序里有 all-gather：编译出的 HLO 里有 1 个 all-gather。")
    assert not any("算不出这道题的标准答案" in m for m in out["messages"].values()), out["messages"]
