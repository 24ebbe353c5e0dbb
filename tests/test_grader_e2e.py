"""The batch grader end to end (DESIGN.md §5; issue 'The book's foundation', item 9).

Submissions are made in a temporary folder from the real reference notebook of chapter 1
(exercises/01_roofline.ipynb) and graded by the command line, the way an instructor runs it:
reference answers, a blank student copy, a cell that raises, an endless loop, a notebook that
fakes check(), one that monkeypatches the registry and the library, a text file and a truncated
notebook. Small time limits keep the whole file near a minute on 2 cores.
"""
from __future__ import annotations

import copy
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

from scaling_lib import grading  # noqa: E402
from scaling_lib.exercises import for_chapter  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "exercises" / "01_roofline.ipynb"
EX1 = [e.id for e in for_chapter(1)]
MAX1 = sum(e.points for e in for_chapter(1))
SEED = 7


def _cell_of(nb, ex_id: str) -> int:
    hits = [i for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and (f'check("{ex_id}"' in c.source or f"check('{ex_id}'" in c.source)]
    assert len(hits) == 1, f"exactly one answer cell for {ex_id} expected in {REF.name}"
    return hits[0]


def _import_cell(nb) -> int:
    return next(i for i, c in enumerate(nb.cells)
                if c.cell_type == "code" and "from scaling_lib.grading import check" in c.source)


def _clean(nb):
    nb = copy.deepcopy(nb)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    return nb


def _prefix(nb, ex_id, code):
    nb = _clean(nb)
    i = _cell_of(nb, ex_id)
    nb.cells[i].source = code + "\n" + nb.cells[i].source
    return nb


def _insert(nb, at, code):
    nb = _clean(nb)
    cell = nbformat.v4.new_code_cell(code)
    cell["id"] = f"inserted{at}"
    nb.cells.insert(at, cell)
    return nb


FAKE_CHECK = """\
import scaling_lib.grading as G
def check(ex_id, answer):
    print("✅ 对了。")
    return G.CheckResult(ex_id, True, "✅ 对了。")
G.check = check
G.evaluate = lambda ex, answer, **kw: G.CheckResult(ex.id, True, "✅ 对了。")
"""
FAKE_ANSWERS = """\
i_crit = 1.0
times = [1.0, 1.0]
two_chip_bound = "A"
def matmul_intensity(B, D, F):
    return 0.0
check("1.2", i_crit)
"""
MONKEYPATCH = """\
import dataclasses
import scaling_lib.exercises as E, scaling_lib.roofline as R, scaling_lib.hardware as H
reg = E.registry()
for k, ex in list(reg.items()):
    reg[k] = dataclasses.replace(ex, expected=lambda: 1.0, rtol=1e9) if ex.kind == "number" else ex
E.get = lambda i: reg[i]
R.critical_batch = lambda *a, **k: 1.0
H.critical_intensity = lambda *a, **k: 1.0
E._REGISTRY = reg
i_crit = H.critical_intensity("v5e")
b_crit = R.critical_batch("v5e")
dot_limit = 1.0
b_crit_h100 = 1.0
open("written_by_submission.txt", "w").write("the grader runs me in a scratch copy")
"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not REF.exists():
        pytest.fail(f"{REF.relative_to(ROOT)} is missing: the e2e grader tests need it")
    ref = nbformat.read(REF, as_version=4)
    d = tmp_path_factory.mktemp("submissions")
    subs = {
        "ref": _clean(ref),
        "blank": grading.strip_notebook(ref, REF.name),
        "raises": _prefix(ref, "1.2", 'raise RuntimeError("oops")'),
        "loop": _prefix(ref, "1.3b", "while True:\n    pass"),
        "fakecheck": _insert(_insert(ref, len(ref.cells), FAKE_ANSWERS), _import_cell(ref) + 1, FAKE_CHECK),
        "monkey": _insert(ref, len(ref.cells), MONKEYPATCH),
    }
    files = []
    for name, nb in subs.items():
        p = d / f"{name}_01_roofline.ipynb"
        nbformat.write(nb, p)
        files.append(p)
    (d / "x.ipynb").write_text("这不是 notebook，只是一段文字。\n", encoding="utf-8")
    (d / "trunc_01_roofline.ipynb").write_text(files[0].read_text(encoding="utf-8")[:3000], encoding="utf-8")
    files += [d / "x.ipynb", d / "trunc_01_roofline.ipynb"]
    out = d / "scores.csv"
    cmd = [sys.executable, "-m", "scaling_lib.grading", "grade", *map(str, files), "--out", str(out),
           "--timeout-cell", "10", "--timeout-notebook", "120", "--jobs", "2", "--seed", str(SEED)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=d)
    data = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    by_student = {s["student"]: s for s in data["submissions"]}
    with open(out, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    return {"proc": proc, "data": data, "s": by_student, "rows": rows, "dir": d}


def _points(sub):
    return {i: e["points"] for i, e in sub["exercises"].items()}


def test_cli_exits_zero_and_prints_summary(graded):
    p = graded["proc"]
    assert p.returncode == 0, p.stderr
    assert "学生" in p.stdout and "得分" in p.stdout and "共 8 份" in p.stdout


def test_reference_answers_get_full_marks(graded):
    s = graded["s"]["ref"]
    assert s["status"] == "完成", s["notes"]
    assert s["total"] == s["max"] == MAX1
    assert all(e["correct"] and e["message"].startswith("✅") for e in s["exercises"].values())


def test_grading_one_submission_takes_under_30_s(graded):
    assert graded["s"]["ref"]["seconds"] < 30


def test_blank_student_copy_scores_zero(graded):
    s = graded["s"]["blank"]
    assert s["status"] == "完成" and s["total"] == 0 and s["max"] == MAX1
    msgs = [e["message"] for e in s["exercises"].values()]
    assert all(m.startswith("❌") for m in msgs)
    assert "❌ 还没作答：把 `...` 换成你的结果再运行。" in msgs


def test_a_raising_cell_costs_only_its_question(graded):
    s = graded["s"]["raises"]
    pts = _points(s)
    assert pts["1.2"] == 0 and s["total"] == MAX1 - 1
    assert "RuntimeError" in "；".join(s["notes"])


def test_endless_loop_is_timed_out_and_the_rest_graded(graded):
    s = graded["s"]["loop"]
    pts = _points(s)
    assert pts["1.3b"] == 0 and s["total"] == MAX1 - 1
    assert s["status"] == "部分超时" and any("超时" in n for n in s["notes"])
    assert s["seconds"] < 60


def test_fake_check_earns_nothing_it_did_not_answer(graded):
    s = graded["s"]["fakecheck"]
    pts = _points(s)
    for i in ("1.1", "1.2", "1.4", "1.5b"):
        assert pts[i] == 0, i
    assert s["total"] == MAX1 - 4
    m = s["exercises"]["1.5b"]["message"]
    assert m.startswith("❌ 不是 A。")
    # the answer cell had the right value; a later cell changed it: the instructor is told
    assert "运行到 check(\"1.5b\") 那一格时 `two_chip_bound` 还是对的" in m
    assert "那一格时" not in s["exercises"]["1.2"]["message"]  # 1.2 was wrong at its check() too


def test_monkeypatching_the_library_earns_nothing(graded):
    s = graded["s"]["monkey"]
    pts = _points(s)
    for i in ("1.2", "1.3b", "1.4b", "1.10"):
        assert pts[i] == 0, i
    assert s["total"] == MAX1 - 4


def test_broken_files_score_zero_with_reason(graded):
    x, t = graded["s"]["x"], graded["s"]["trunc"]
    assert x["total"] == 0 and x["status"] == "无效文件" and "不是 notebook 文件" in x["notes"][0]
    assert t["total"] == 0 and t["status"] == "无效文件" and "JSON 解析失败" in t["notes"][0]
    assert x["max"] == t["max"] == MAX1  # same chapter as the rest of the run


def test_score_sheet_columns(graded):
    rows = graded["rows"]
    assert rows[0] == ["file", "student", "total", "max", *EX1, "status", "notes"]
    assert len(rows) == 1 + 8
    ref = next(r for r in rows if r[1] == "ref")
    assert ref[2] == ref[3] == grading._num(MAX1) and ref[4:4 + len(EX1)] == ["1"] * len(EX1)
    x = next(r for r in rows if r[1] == "x")
    assert x[2] == "0" and x[-2] == "无效文件" and x[-1]
    data = graded["data"]
    assert data["exercises"] == EX1 and data["settings"]["seed"] == SEED


def test_submissions_ran_in_scratch_copies(graded):
    leftovers = sorted(p.name for p in graded["dir"].iterdir())
    assert leftovers == sorted(["blank_01_roofline.ipynb", "fakecheck_01_roofline.ipynb",
                                "loop_01_roofline.ipynb", "monkey_01_roofline.ipynb",
                                "raises_01_roofline.ipynb", "ref_01_roofline.ipynb", "scores.csv",
                                "scores.json", "trunc_01_roofline.ipynb", "x.ipynb"])


# ---- limits on small synthetic notebooks (no JAX: fast) ---------------------------------------

def _tiny(cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def test_notebook_limit_kernel_death_and_memory_limit(tmp_path):
    subs = {
        "slow": ["i_crit = 240.2  # check('1.2', i_crit)", "import time\ntime.sleep(3)",
                 "time.sleep(3)", "time.sleep(3)", "time.sleep(3)", "two_chip_bound = 'B'"],
        "dies": ["i_crit = 240.2  # check('1.2', i_crit)", "import os\nos._exit(1)", "two_chip_bound = 'B'"],
        "hog": ["i_crit = 240.2  # check('1.2', i_crit)", "import numpy as np\nbig = np.ones(2**28)\nb_crit = 240.2",
                "two_chip_bound = 'B'"],
    }
    files = []
    for name, cells in subs.items():
        p = tmp_path / f"{name}_01_roofline.ipynb"
        nbformat.write(_tiny(cells), p)
        files.append(p)
    out = tmp_path / "s.csv"
    res = grading.grade(files, out, timeout_cell=5, timeout_notebook=8, memory_mb=1024, jobs=2,
                        seed=1, quiet=True)
    r = {x.student: x for x in res}
    assert r["slow"].status == "超时" and r["slow"].scores["1.2"] == 1 and r["slow"].scores["1.5b"] == 0
    assert any("时间上限" in n for n in r["slow"].notes)
    assert r["dies"].status == "内核崩溃" and r["dies"].total == 1 and r["dies"].scores["1.2"] == 1
    hog = r["hog"]  # 2 GiB > 1 GiB limit: MemoryError in that cell only
    assert hog.scores["1.2"] == 1 and hog.scores["1.5b"] == 1 and hog.scores["1.4b"] == 0
    assert any("MemoryError" in n for n in hog.notes)
    assert out.exists() and out.with_suffix(".json").exists()
