"""The grader's own-process pieces, without running any submission (fast): reading submission files
safely, turning a (hostile) report into scores, the gradebook (CSV, feedback, exports, roster) and
per-student variants of the exercise notebooks (issue 18, items 2-4)."""
from __future__ import annotations

import codecs
import csv
import io
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest

nbformat = pytest.importorskip("nbformat")

from scaling_lib.exercises import chapter_params, draw, for_chapter, get, registry  # noqa: E402
from scaling_lib.grading import _batch, _judge, _report, _strip  # noqa: E402
from scaling_lib.grading import variant_notebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REF1 = ROOT / "exercises" / "01_roofline.ipynb"
REF3 = ROOT / "exercises" / "03_sharding.ipynb"


def _reference(chapter):
    """The reference exercise notebook of a chapter (exercises/NN_name.ipynb)."""
    found = sorted((ROOT / "exercises").glob(f"{chapter:02d}_*.ipynb"))
    assert len(found) == 1, (chapter, found)
    return found[0]


# every chapter whose exercises declare per-student numbers (found, never listed by hand)
VARIANT_CHAPTERS = [ch for ch in sorted({int(p.stem[:2]) for p in (ROOT / "exercises").glob("*.ipynb")})
                    if chapter_params(ch)]
SECRET = b"test-secret-for-variants-0123456789"


# ---- reading submissions: regular files only, capped, tolerant of encodings and versions ---------

def _ref_bytes(path=REF1) -> bytes:
    return path.read_bytes()


def test_bom_crlf_utf16_and_nbformat3_are_read(tmp_path):
    want = [(i, t, s) for i, t, s in _batch._read_submission(REF1)[0]]
    text = _ref_bytes().decode("utf-8")
    variants = {
        "bom": codecs.BOM_UTF8 + text.encode("utf-8"),
        "crlf": text.replace("\n", "\r\n").encode("utf-8"),
        "bom_crlf": codecs.BOM_UTF8 + text.replace("\n", "\r\n").encode("utf-8"),
        "utf16": text.encode("utf-16"),
    }
    for name, raw in variants.items():
        p = tmp_path / f"{name}.ipynb"
        p.write_bytes(raw)
        cells, got_raw, why = _batch._read_submission(p)
        assert why is None, (name, why)
        code = [s.replace("\r\n", "\n") for _, t, s in cells if t == "code"]
        assert code == [s for _, t, s in want if t == "code"], name
    nb3 = nbformat.convert(nbformat.read(REF1, as_version=4), 3)
    p = tmp_path / "v3.ipynb"
    p.write_text(nbformat.writes(nb3, version=3), encoding="utf-8")
    cells, _, why = _batch._read_submission(p)
    assert why is None
    assert [s for _, t, s in cells if t == "code"] == [s for _, t, s in want if t == "code"]
    # an nbformat 4.0 notebook without cell ids (and with list-of-lines sources) is fine too
    d = json.loads(text)
    d["nbformat_minor"] = 0
    for c in d["cells"]:
        c.pop("id", None)
        c["source"] = c["source"].splitlines(keepends=True) if isinstance(c["source"], str) else c["source"]
    p = tmp_path / "v40.ipynb"
    p.write_text(json.dumps(d), encoding="utf-8")
    assert _batch._read_submission(p)[2] is None


def test_only_regular_files_are_read(tmp_path):
    fifo = tmp_path / "fifo.ipynb"
    os.mkfifo(fifo)
    assert "命名管道" in _batch._read_submission(fifo)[2]  # and it returns at once: no blocking open
    link = tmp_path / "link.ipynb"
    link.symlink_to(REF1)
    assert "符号链接" in _batch._read_submission(link)[2]
    zero = tmp_path / "zero.ipynb"
    zero.symlink_to("/dev/zero")
    assert "符号链接" in _batch._read_submission(zero)[2]
    big = tmp_path / "big.ipynb"
    with open(big, "wb") as f:
        f.truncate(_batch.MAX_FILE + 1)
    assert "文件太大" in _batch._read_submission(big)[2]
    d = tmp_path / "dir.ipynb"
    d.mkdir()
    assert "文件夹" in _batch._read_submission(d)[2]
    assert _batch._read_submission(tmp_path / "nope.ipynb")[2] == "文件不存在"


@pytest.mark.parametrize("content, reason", [
    (b"just some text\n", "不是 notebook 文件：内容不是 JSON"),
    (b'{"cells": [{"cell_type": "code", "sou', "JSON 解析失败"),
    (b'{"hello": 1}', "没有 cells"),
    (b"\xff\xfe\x00\xd8bin", "UTF-16"),
    (b"\x80\x81binary", "不是 UTF-8"),
    (b"", "文件是空的"),
    (b'{"nbformat": 9, "cells": []}', "不支持的 notebook 版本"),
    (b"[" * 100000 + b"]" * 100000, "JSON"),
])
def test_unreadable_files_have_a_reason(tmp_path, content, reason):
    p = tmp_path / "x.ipynb"
    p.write_bytes(content)
    cells, raw, why = _batch._read_submission(p)
    assert cells is None and reason in why


def test_folders_list_every_ipynb_entry_but_do_not_follow_links(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "01_roofline.ipynb").write_text("{}")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "b-checkpoint.ipynb").write_text("{}")
    (tmp_path / "notes.txt").write_text("")
    os.mkfifo(tmp_path / "pipe.ipynb")
    (tmp_path / "elsewhere").symlink_to(ROOT / "exercises", target_is_directory=True)
    got = _batch._expand([tmp_path, "x.ipynb"])
    assert got == [tmp_path / "alice" / "01_roofline.ipynb", tmp_path / "pipe.ipynb", Path("x.ipynb")]


def test_student_names():
    refs = {"01_roofline"}
    name = _batch._student_name
    assert name(Path("alice.ipynb"), refs) == "alice"
    assert name(Path("alice_01_roofline.ipynb"), refs) == "alice"
    assert name(Path("01_roofline-bob.ipynb"), refs) == "bob"
    assert name(Path("carol/01_roofline.ipynb"), refs) == "carol"


# ---- scores from the sandbox's report: the value at each exercise's own check() ------------------

EX = get("3.2")  # "answer" is reused by 3.3: the value at check("3.2") must count, not the last one


def _item(v):
    return {"id": "x", "value": v}


def test_the_value_at_check_counts_not_the_last_one():
    right = [float(x) for x in EX.reference()]
    items = {"check": _item(right), "cell": _item([1.0, 2.0]), "final": _item([1.0, 2.0])}
    r, src = _batch._score(EX, items, [], None)
    assert r.correct and src == "check"
    wrong_then_fixed = {"check": _item([1.0, 2.0]), "cell_after": _item(right), "final": _item(right)}
    r, src = _batch._score(EX, wrong_then_fixed, [], None)
    assert not r.correct and "重新运行那一格" in r.message
    never_checked = {"final": _item(right)}
    r, src = _batch._score(EX, never_checked, [], None)
    assert r.correct and src == "final"
    missing_at_check = {"check": _item({"$": "missing"}), "final": _item(right)}
    assert _batch._score(EX, missing_at_check, [], None)[0].correct
    r, src = _batch._score(EX, {}, [], None)
    assert not r.correct and "没有找到变量 `answer`" in r.message and src == "none"


def test_hostile_report_data_never_raises_and_earns_nothing():
    hostile = [{"$": "pickle", "v": "gASV"}, {"a": 1}, {"$": "array", "shape": "x", "v": [1]},
               [[[[[[[[[1]]]]]]]]], {"$": "array", "shape": [2], "v": ["a", "b"]},
               {"$": "array", "shape": [10**9] * 9, "v": [1]}, {"$": "opaque", "type": "=HYPERLINK(\"x\")\n"},
               "1" * 5000, 10**40, -1e308, 5e-324, float("nan"), float("inf"), None, True, [None, None]]
    for ex in (get("1.2"), get("1.5"), get("1.5b"), get("1.3")):
        for h in hostile:
            for items in ({"check": _item(h)}, {"check": {"id": ex.id, "cases": [{"ok": h}] * 3}},
                          {"check": {"id": ex.id, "cases": "x"}}, {"final": 7}):
                r, _ = _batch._score(ex, items, _batch.sample_inputs(ex, 1) if ex.kind == "function" else [],
                                     None)
                assert not r.correct and r.message.startswith("❌"), (ex.id, h, r.message)
                assert "\n" not in r.message


def test_decode_plain_data():
    d = _batch._decode
    assert d(3) == 3 and d(2.5) == 2.5 and d("B") == "B" and d(None) is None
    assert d({"$": "ellipsis"}) is Ellipsis and d({"$": "missing"}) is _judge.MISSING
    assert d({"$": "bool", "v": True}) is True
    arr = d({"$": "array", "shape": [2], "v": [1.0, 2.0]})
    assert isinstance(arr, np.ndarray) and arr.tolist() == [1.0, 2.0]
    assert "形状为 (100000,) 的数组" in _judge.evaluate(get("1.2"), d({"$": "array", "shape": [100000],
                                                                       "v": None})).message


def test_kernel_side_encoding_round_trip():
    """The extraction code (sent to the kernel as text) encodes answers as plain JSON data."""
    src = (ROOT / "scaling_lib" / "grading" / "_extract.py").read_text(encoding="utf-8")
    ns: dict = {"__name__": "__test__"}
    exec(compile(src, "<grader>", "exec"), ns)  # _SPEC is absent: defines the helpers only
    enc = ns["_enc"]
    cases = [(240.0, 240.0), (np.float32(1.5), 1.5), (np.int64(7), 7), (np.array(2.0), 2.0),
             ("B", "B"), (None, None), ([1, 2.5], [1, 2.5]), (True, {"$": "bool", "v": True}),
             (..., {"$": "ellipsis"})]
    for value, want in cases:
        assert json.loads(json.dumps(enc(value))) == want
    assert enc(np.ones(2))["$"] == "array" and enc(np.ones(20000))["v"] is None
    assert enc(object())["$"] == "opaque" and enc(print)["$"] == "callable"
    cases = ns["_call_all"](lambda N: N / 2, [{"N": 2}, {"M": 1}], 5.0)
    assert cases[0] == {"ok": 1.0} and cases[1]["error"].startswith("TypeError")
    slow = ns["_call_all"](lambda N: [0 for _ in iter(int, 1)], [{"N": 1}, {"N": 2}], 0.3)
    assert slow == [{"timeout": True}, {"timeout": True}]


def test_extraction_prefers_the_answer_given_to_check(tmp_path):
    """In the sandbox, check() records its argument; the read after that cell takes it (once)."""
    import sys
    import types
    src = (ROOT / "scaling_lib" / "grading" / "_extract.py").read_text(encoding="utf-8")
    stub = types.ModuleType("scaling_lib.grading")
    stub._RECORDED = {"3.2": [1.0, 2.0]}
    saved = sys.modules.get("scaling_lib.grading")
    sys.modules["scaling_lib.grading"] = stub
    try:
        out = tmp_path / "o.json"
        ns = {"answer": [9.0, 9.0]}
        spec = json.dumps({"id": "3.2", "var": "answer", "kind": "numbers", "inputs": [], "out": str(out),
                           "budget_s": 1, "recorded": True})
        exec(compile(src, "<grader>", "exec"), {"__builtins__": __builtins__, "_SPEC": spec, "_NS": ns})
        assert json.loads(out.read_text()) == {"id": "3.2", "value": [1.0, 2.0], "recorded": True}
        exec(compile(src, "<grader>", "exec"), {"__builtins__": __builtins__, "_SPEC": spec, "_NS": ns})
        assert json.loads(out.read_text()) == {"id": "3.2", "value": [9.0, 9.0]}  # taken once
    finally:
        sys.modules["scaling_lib.grading"] = saved


# ---- the gradebook --------------------------------------------------------------------------------

def _result(student="alice", **kw):
    r = _batch.SubmissionResult(f"{student}_01_roofline.ipynb", student, chapters=[1])
    for e in for_chapter(1):
        r.max_points[e.id] = 1.0
        r.scores[e.id] = 1.0 if e.id != "1.2" else 0.0
        r.messages[e.id] = "✅ 对了。" if e.id != "1.2" else "❌ 差了正好 2 倍（你的结果偏大）。"
        r.forms[e.id] = _judge.expected_form(e)
    for k, v in kw.items():
        setattr(r, k, v)
    return r


@pytest.mark.parametrize("text", ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1",
                                  "\r=1", "  =1+1", "＝1", "=cmd|' /C calc'!A0"])
def test_csv_cells_never_start_a_formula(text):
    out = _report.safe_cell(text)
    assert out.startswith("'") and "\n" not in out and "\r" not in out and "\t" not in out


def test_sheet_is_excel_friendly_and_formula_safe(tmp_path):
    evil = _result("=HYPERLINK(\"http://evil\",\"点我\")", status="=1+1", notes=["-2+3", "正常的说明\n第二行"])
    ok = _result("bob")
    book = _report.Gradebook(tmp_path / "scores.csv", {"seed": 1}, feedback_dir=tmp_path / "feedback",
                             export=("lms", "gradescope"))
    book.write([evil, ok], final=True)
    raw = (tmp_path / "scores.csv").read_bytes()
    assert raw.startswith(codecs.BOM_UTF8)  # Excel reads the Chinese as UTF-8
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
    ids = [e.id for e in for_chapter(1)]
    assert rows[0] == ["file", "student", "total", "max", *ids, "status", "notes"]
    for row in rows[1:]:
        for cell in row:
            assert not cell.lstrip().startswith(("=", "+", "-", "@")), cell
    assert rows[1][1].startswith("'=HYPERLINK") and rows[1][-2] == "'=1+1"
    assert rows[2][2] == "17" and rows[2][3] == "18"  # numbers stay numbers
    lms = list(csv.reader(io.StringIO((tmp_path / "scores_lms.csv").read_bytes().decode("utf-8-sig"))))
    assert lms[0] == ["SID", "Name", "Email", "Score", "Max Score", "Status"] and lms[2][:5] == ["bob", "", "", "17", "18"]
    gs = json.loads((tmp_path / "gradescope" / "bob" / "results.json").read_text(encoding="utf-8"))
    assert gs["score"] == 17 and len(gs["tests"]) == 18
    assert {"name", "number", "score", "max_score", "output"} <= set(gs["tests"][0])
    data = json.loads((tmp_path / "scores.json").read_text(encoding="utf-8"))
    assert data["complete"] and [s["student"] for s in data["submissions"]] == [evil.student, "bob"]


def test_feedback_file_per_student_without_expected_values(tmp_path):
    r = _result("bob")
    text = _report.feedback_text(r)
    assert text.startswith("# 第 1 章练习批改结果：bob")
    assert "- 总分：17 / 18" in text
    assert "## 练习 1.2：0 / 1 分 ❌" in text and "差了正好 2 倍" in text
    assert "要求的形式：一个数（单位：FLOPs/字节）" in text
    assert "要求的形式：一个含 3 个数的列表（[D 门槛, T_math 秒, T_comms 秒]）" in text
    for e in for_chapter(1):
        if e.kind in ("number", "numbers"):
            ref = e.reference()
            for v in (ref if isinstance(ref, list) else [ref]):
                if abs(v) >= 100 or abs(v) < 0.01:  # distinctive when written out
                    assert _judge._fmt(v) not in text, (e.id, v)
    # two submissions of one student (two chapters): two files, not one overwritten
    names = _report._file_names([_result("bob"), _result("bob"), _result("amy")])
    assert len(set(names)) == 3 and "amy" in names


def test_real_feedback_never_contains_the_expected_value():
    """Wrong answers of every numeric exercise of chapters 1 and 3, judged like the grader does: the
    message names the slip, never the expected value."""
    for ch in (1, 3):
        for e in for_chapter(ch):
            if e.kind not in ("number", "numbers"):
                continue
            ref = e.reference()
            refs = ref if isinstance(ref, list) else [ref]
            for factor in (1.7, 0.37, 11.0, 1e3):
                wrong = [x * factor for x in refs] if isinstance(ref, list) else ref * factor
                m = _judge.evaluate(e, wrong).message
                assert m.startswith("❌")
                for x in refs:
                    if abs(x) >= 100 or 0 < abs(x) < 0.01:  # distinctive when written out
                        assert _judge._fmt(x) not in m.replace(_judge._fmt(x * factor), ""), (e.id, factor, m)


def test_roster_maps_files_and_finds_the_absent(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_bytes(codecs.BOM_UTF8 + "学号,姓名,邮箱,文件\ns001,张三,a@x.cn,\ns002,李四,b@x.cn,hw1_upload_77.ipynb\n"
                       "s003,王五,c@x.cn,\n".encode("utf-8"))
    rows = _report.read_roster(roster)
    assert [r["student"] for r in rows] == ["s001", "s002", "s003"] and rows[0]["name"] == "张三"
    paths = [Path("subs/s001/01_roofline.ipynb"), Path("subs/hw1_upload_77.ipynb"), Path("subs/stranger.ipynb")]
    got, absent = _report.match_roster(paths, rows, lambda p: p.stem)
    assert [(str(p), s) for p, s, _ in got] == [("subs/s001/01_roofline.ipynb", "s001"),
                                                  ("subs/hw1_upload_77.ipynb", "s002"),
                                                  ("subs/stranger.ipynb", "stranger")]
    assert got[2][2] is None and [r["student"] for r in absent] == ["s003"]
    bad = tmp_path / "bad.csv"
    bad.write_text("name\nx\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no student id column"):
        _report.read_roster(bad)
    bad.write_text("sid\ns1\nS1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="appears twice"):
        _report.read_roster(bad)


def test_default_jobs_is_cores_minus_one_within_memory(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.setattr(_batch, "_available_mb", lambda: 64000)
    assert _batch.default_jobs(2048) == 7
    monkeypatch.setattr(_batch, "_available_mb", lambda: 5000)
    assert _batch.default_jobs(2048) == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert _batch.default_jobs(2048) == 1


def test_progress_bar_on_a_terminal_and_one_line_per_submission_elsewhere(monkeypatch, capsys):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    term = Tty()
    monkeypatch.setattr("sys.stderr", term)
    bar = _report.Progress(4, enabled=True, quiet=False)
    for _ in range(3):
        bar.step(_result("bob"))
    bar.close()
    last = term.getvalue().split("\r")[-1]
    assert last.startswith("批改中 [" + "#" * 18 + "." * 6 + "] 3/4") and "预计还要" in last
    assert capsys.readouterr().out == ""
    monkeypatch.setattr("sys.stderr", io.StringIO())  # a log file: no bar, one line per submission
    bar = _report.Progress(2, enabled=True, quiet=False)
    bar.step(_result("bob"))
    assert capsys.readouterr().out.startswith("[1/2] 已评分 bob_01_roofline.ipynb：17/18（完成，")
    quiet = _report.Progress(2, enabled=True, quiet=True)
    quiet.step(_result("bob"))
    assert capsys.readouterr().out == ""


# ---- per-student variants of the notebooks -------------------------------------------------------

@pytest.mark.parametrize("chapter", VARIANT_CHAPTERS)
def test_each_param_is_written_in_a_statement_that_declares_it(chapter):
    """Param.text occurs (as a whole number) in the statement of every exercise that declares it and
    shows numbers, so a student's copy shows that student's numbers; no other number of the statement
    is touched."""
    nb = nbformat.read(_reference(chapter), as_version=4)
    reg = registry()
    seen = set()
    for c in nb.cells:
        if c.cell_type != "markdown":
            continue
        for start, end, ex_id in _strip._statement_blocks(c.source):
            ex = reg.get(ex_id)
            if ex is None or not ex.params:
                continue
            block = c.source[start:end]
            for name, p in ex.params.items():
                n = len(_strip._token(p.text).findall(block))
                if n:
                    seen.add(name)
                    assert n <= 2, (ex_id, name, n)
    assert seen == set(chapter_params(chapter)), set(chapter_params(chapter)) - seen


def test_variant_notebook_shows_the_students_numbers():
    nb = nbformat.read(REF1, as_version=4)
    values = {1: draw(chapter_params(1), SECRET, "s007", 1)}
    v = values[1]
    out = variant_notebook(nb, "s007", values, "01_roofline.ipynb")
    text = "\n".join(c.source for c in out.cells)
    assert f"一个任务要做 {_strip_num(v['flops'])} 次浮点运算" in text
    assert f"$B={v['B5']}$、$D={v['D5']}$、$F={v['F5']}$" in text
    assert "一个任务要做 5e14 次" not in text and "$B=384$、$D=16384$" not in text
    assert ":label: ex-01-5" in text  # directive options untouched
    assert "9.89e14" in text and "9e10" in text  # chip numbers stay the book's
    call = re.search(r"P = variant\(1, \"s007\", \{([^}]*)\}\)", text)
    assert call and all(f'"{k}": ' in call.group(1) for k in v)
    assert out.metadata["scaling_book"] == {"student": "s007", "chapters": [1]}
    assert nb.metadata.get("scaling_book") is None  # the input is not modified


def _strip_num(v):
    from scaling_lib.exercises import number_text
    return number_text(v)


def test_variant_copy_checks_against_the_students_numbers(capsys):
    """Executing the variant() line of a student's copy makes check() expect that student's values."""
    nb = variant_notebook(nbformat.read(REF3, as_version=4), "s042", {3: draw(chapter_params(3), SECRET, "s042", 3)})
    line = next(ln for c in nb.cells for ln in c.source.splitlines() if ln.startswith("P = variant(3"))
    from scaling_lib.grading import check, variant
    ns = {"variant": variant}
    try:
        exec(line, ns)
        P = ns["P"]
        assert check("3.1", [P.r1 // 2, P.c1 // 2, P.r1 // 4, P.c1]).correct
        assert not check("3.1", [2, 64, 1, 128]).correct  # the book's numbers are not this student's
    finally:
        variant(3)
    capsys.readouterr()


def test_variant_notebook_refuses_a_copy_that_would_show_the_books_numbers():
    nb = nbformat.read(REF1, as_version=4)
    values = {1: draw(chapter_params(1), SECRET, "s1", 1)}
    no_call = nbformat.v4.new_notebook(cells=[c for c in nb.cells if "variant(1)" not in c.source])
    with pytest.raises(_strip.StripError, match="no `P = variant\\(1\\)`"):
        variant_notebook(no_call, "s1", values)
    no_text = nbformat.v4.new_notebook(cells=[c for c in nb.cells if "练习 1.1\n" not in c.source])
    with pytest.raises(_strip.StripError, match="flops"):
        variant_notebook(no_text, "s1", values)


def test_statement_replacement_is_simultaneous_and_whole_token():
    text, found = _strip._replace_in_statement(
        "B=512, D=1024, 5120, 0.512, x512, 512。\n:label: ex-512", [("B", "512", "1024"), ("D", "1024", "2048")])
    assert text == "B=1024, D=2048, 5120, 0.512, x512, 1024。\n:label: ex-512" and found == {"B", "D"}


def test_make_variants_writes_one_copy_per_student(tmp_path):
    written = _strip.make_variants(SECRET, ["s001", "王小明"], ROOT / "exercises", tmp_path, names=["1"])
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == \
        ["s001/01_roofline.ipynb", "王小明/01_roofline.ipynb"]
    st = nbformat.read(written[0], as_version=4)
    assert all("BEGIN SOLUTION" not in c.source for c in st.cells)  # student copies: no solutions
    with pytest.raises(ValueError, match="twice"):
        _strip.make_variants(SECRET, ["s001", "S001"], ROOT / "exercises", tmp_path, names=["1"])


@pytest.mark.parametrize("chapter", VARIANT_CHAPTERS)
def test_every_combination_of_numbers_has_a_finite_answer(chapter):
    import collections
    import itertools
    from scaling_lib.grading import evaluate
    for e in for_chapter(chapter):
        if not e.params:
            continue
        names = sorted(e.params)
        grid = [(e.params[n].default, *e.params[n].values) for n in names]
        answers = set()
        draws = collections.Counter()
        for combo in itertools.product(*[e.params[n].choices() for n in names]):
            ref = e.reference(dict(zip(names, combo)))
            draws[ref if isinstance(ref, str) else tuple(float(f"{float(x):.6g}") for x in
                                                        (ref if isinstance(ref, list) else [ref]))] += 1
        n = sum(draws.values())
        collide = sum(k * k for k in draws.values()) / n / n  # two students drawn at random share the answer
        if e.kind != "choice":
            assert collide < 0.15, (e.id, collide)
        for combo in itertools.product(*grid):
            values = dict(zip(names, combo))
            ref = e.reference(values)
            assert isinstance(e.explanation(values), str)
            if e.kind == "choice":
                answers.add(ref)
                assert ref in e.choices
            else:
                flat = ref if isinstance(ref, list) else [ref]
                assert all(math.isfinite(float(x)) and float(x) > 0 for x in flat), (e.id, values, ref)
                answers.add(tuple(round(float(x), 12) for x in flat))
            assert evaluate(e, ref, values=values).correct, (e.id, values)


@pytest.mark.parametrize("chapter", VARIANT_CHAPTERS)
def test_reference_solutions_score_full_marks_for_many_students(chapter):
    """The reference notebook's own solutions, run with the numbers of 60 students drawn from a secret
    (and the book's), pass every check: no student's numbers make an honest, book-method answer wrong
    (a near-tie in a choice, a size where latency takes over from bandwidth...)."""
    from scaling_lib.grading import evaluate
    from scaling_lib.grading._view import Variant
    path = _reference(chapter)
    nb = nbformat.read(path, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"
             and "devices." not in c.source and "import jax" not in c.source and "plots." not in c.source]
    params = chapter_params(chapter)
    students = [None] + [f"s{i:03d}" for i in range(60)]
    failures = []
    for sid in students:
        values = ({k: p.default for k, p in params.items()} if sid is None
                  else draw(params, SECRET, sid, chapter))
        got = {}
        ns = {"check": lambda i, a: got.__setitem__(i, a),
              "variant": lambda ch, *a, **k: Variant(ch, sid, values)}
        for src in cells:
            src = src.replace("from scaling_lib.grading import check, variant", "")
            exec(compile(src, f"<{path.name}>", "exec"), ns)
        for ex in for_chapter(chapter):
            if ex.id in got:
                r = evaluate(ex, got[ex.id], values=values)
                if not r.correct:
                    failures.append((sid, ex.id, {k: values[k] for k in ex.params}, r.message[:80]))
    assert failures == [], failures[:10]


# ---- how much a variant protects: the chance that a classmate's answer passes (README.md) ----------

def test_copy_rates_are_the_chance_of_drawing_the_same_numbers_for_a_sensitive_item():
    """1.1's answer is a different time for every value of its one parameter: a copy passes exactly
    when the two students drew the same value, 1/k for k choices (within the sampling error)."""
    from scaling_lib.grading._copies import copy_rates
    ex = get("1.1")
    (name, p), = ex.params.items()
    k = len(p.choices())
    r = next(r for r in copy_rates(1, pairs=2000) if r.exercise == "1.1")
    assert r.params == (name,)
    assert r.same == r.passes
    assert abs(r.passes - 1 / k) < 3 * math.sqrt((1 / k) * (1 - 1 / k) / 2000), (r.passes, 1 / k)
    assert copy_rates(1, pairs=50) == copy_rates(1, pairs=50)  # seeded: the same numbers every run


def test_copy_rates_reject_bad_arguments():
    from scaling_lib.grading._copies import copy_rates, report
    with pytest.raises(ValueError, match="pairs"):
        copy_rates(1, pairs=0)
    with pytest.raises(TypeError, match="chapter"):
        copy_rates("1")
    with pytest.raises(ValueError, match="没有练习"):
        report([11])


def test_copied_answers_rarely_pass_as_the_readme_says():
    """README.md (说清楚…): for every numeric item whose numbers vary, a classmate's answer passes
    in under a third of pairs, and in under 15 % for half of them; README names exactly the chapters
    whose exercises have per-student numbers."""
    import statistics
    from scaling_lib.grading._copies import copy_rates
    rates = [r for ch in VARIANT_CHAPTERS for r in copy_rates(ch) if r.kind != "choice"]
    worst = max(rates, key=lambda r: r.passes)
    assert worst.passes < 1 / 3, worst
    assert statistics.median(r.passes for r in rates) < 0.15
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"（第 ([0-9、]+) 章已经支持）", readme)
    assert m, "README.md no longer names the chapters with per-student numbers"
    assert [int(c) for c in m.group(1).split("、")] == VARIANT_CHAPTERS


def test_variant_demo_class_expects_every_copy_to_lose_marks(tmp_path):
    """tools/demo_class.py run --variants: every chapter with per-student numbers, three students'
    own copies (full marks) and one copied under another id, which must be expected to lose marks
    (the demonstration then checks the real grader's sheet against these expectations)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("demo_class", ROOT / "tools" / "demo_class.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    expect = demo.build_variant_class(tmp_path / "class", tmp_path)
    copies = {n: e for n, e in expect.items() if e["kind"] == "copied from a classmate"}
    own = {n: e for n, e in expect.items() if e["kind"] == "own variant"}
    assert len(copies) == len(VARIANT_CHAPTERS) and len(own) == 3 * len(VARIANT_CHAPTERS)
    assert all(e["total"] == e["max"] for e in own.values())
    assert all(e["total"] < e["max"] for e in copies.values()), copies
    assert sorted(p.name for p in (tmp_path / "class").iterdir()) == sorted(expect)
    assert (tmp_path / "roster.csv").read_text(encoding="utf-8").split() == ["student", "s01", "s02", "s03"]
