"""Grading a whole class in one run, honest and hostile submissions mixed (issue 18).

One ``grade`` run over a folder holding the reference notebook of every chapter (each must score
full marks), honest variations (BOM + CRLF, nbformat 3, a blank copy, one absurd answer, a huge
output) and one submission per attack class of the issue: reading the answer key, reading a
classmate, a symlink to a classmate or to /dev/zero, a named pipe in the folder and in place of
the runner's files, rewriting the grader's files, planting a ``.pth`` file, a background process
that edits the score sheet after the grader exits, killing other kernels. The grader must give no
unearned mark, keep every honest mark and write every row. A second, small run checks the limits
(time, memory, processes, kernel death, fakes) on tiny notebooks, and a third per-student
variants with a roster and the exports.

The submissions, honest and hostile, and what each honestly earns are built by
``tools/demo_class.py`` (``build_class``), which also runs the measured demonstration of the issue.
The attacks that need the sandbox to be harmless run only when bubblewrap works here (``make test``
installs it as root); without it those tests are skipped with the grader's own warning as reason.
Each run is computed once per test session, also under pytest-xdist (a file lock).
"""
from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

from scaling_lib import grading  # noqa: E402
from scaling_lib.exercises import chapter_params, draw, for_chapter  # noqa: E402
from scaling_lib.grading import _sandbox  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import demo_class  # noqa: E402  (the class and its attacks: one place, shared with the demonstration)
REFS = sorted((ROOT / "exercises").glob("*.ipynb"))
MAX = {c: int(sum(e.points for e in for_chapter(c))) for c in range(13)}
MARKER = "EVIL_DAEMON_" + uuid.uuid4().hex[:8]


def _iso():
    iso = _sandbox.detect("auto")
    if not iso.strong:
        return iso, iso.reason
    sb = _sandbox.Sandbox(iso, memory_mb=2048, timeout_notebook=60)
    try:
        why = sb.self_test()
    finally:
        sb.close()
    return iso, why


ISO, WEAK = _iso()
needs_sandbox = pytest.mark.skipif(WEAK is not None, reason=f"no working bubblewrap sandbox here: {WEAK}")


def _shared(tmp_path_factory, name, compute):
    """``compute(folder)`` once per session, even with several xdist workers; its JSON result."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / name
    result = base / f"{name}.json"
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result.exists():
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir()
            data = compute(folder)
            result.write_text(json.dumps(data), encoding="utf-8")
        return json.loads(result.read_text(encoding="utf-8"))


def _class_run(folder: Path) -> dict:
    subs = folder / "class"
    out = folder / "gradebook" / "scores.csv"
    # the hostile ones only inside a working sandbox: FIFO_EVERYWHERE alone replaces every file in /tmp/* and ~
    expect = demo_class.build_class(subs, out, MARKER, hostile=WEAK is None, partials=False)
    before = demo_class.sources_hash()
    # the teacher's way: a fresh process (the expected values of chapter 10 need JAX set up first)
    code = ("import json, resource, sys, time\n"
            "from scaling_lib import grading\nfrom scaling_lib.grading import _batch\n"
            "_batch._devices_for_expected_values()\n"
            "rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "t0 = time.monotonic()\n"
            "res = grading.grade([sys.argv[1]], sys.argv[2], timeout_cell=60, timeout_notebook=150, jobs=2,"
            " seed=5, quiet=True)\n"
            "took = time.monotonic() - t0\n"
            "rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "print(json.dumps({'took': took, 'rss_growth_mb': (rss1 - rss0) / 1024,"
            " 'results': {r.file.rsplit('/', 1)[-1]: r.as_dict() for r in res}}))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(subs), str(out)], capture_output=True, text=True,
                          timeout=1500, cwd=folder)
    assert proc.returncode == 0, proc.stderr[-3000:]
    graded = json.loads(proc.stdout.strip().splitlines()[-1])
    sheet = out.read_bytes()
    time.sleep(4)  # a daemon that survived would write to the sheet now
    after = demo_class.aftermath(MARKER, out, sheet, before)
    return {**graded, **after, "log": proc.stderr[-4000:], "sheet": sheet.decode("utf-8-sig"),
            "expected": expect, "files": sorted(p.name for p in subs.iterdir()),
            "feedback": sorted(p.name for p in (out.parent / "feedback").iterdir())}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return _shared(tmp_path_factory, "grader_class_run", _class_run)


def _r(run, name):
    return run["results"][f"{name}.ipynb"]


# ---- honest marks are kept ---------------------------------------------------------------------------

@pytest.mark.parametrize("ref", REFS, ids=[p.stem for p in REFS])
def test_every_reference_notebook_scores_full_marks(run, ref):
    s = _r(run, f"honest{ref.stem[:2]}_{ref.stem}")
    assert s["total"] == s["max"] == MAX[int(ref.stem[:2])], {k: v["message"] for k, v in s["exercises"].items()
                                                                if not v["correct"]}
    assert all(v["source"] == "check" for v in s["exercises"].values())  # each at its own check()


def test_bom_crlf_and_nbformat3_are_graded_like_the_original(run):
    for name in ("bomcrlf_01_roofline", "nbv3_01_roofline"):
        s = _r(run, name)
        assert s["total"] == MAX[1] and s["status"] == "完成", (name, s["notes"])


def test_one_absurd_answer_costs_that_question_only(run):
    s = _r(run, "tinyanswer_01_roofline")
    assert s["total"] == MAX[1] - 1 and s["status"] == "完成"
    assert s["exercises"]["1.2"]["message"].startswith("❌ 差了大约")


def test_blank_copy_scores_zero_with_messages(run):
    s = _r(run, "blank_01_roofline")
    assert s["status"] == "完成" and s["total"] == 0 and s["max"] == MAX[1]
    assert "❌ 还没作答：把 `...` 换成你的结果再运行。" in [e["message"] for e in s["exercises"].values()]


def test_huge_output_costs_nothing_and_grader_memory_stays_small(run):
    s = _r(run, "bigoutput_01_roofline")
    assert s["total"] == MAX[1], s["notes"]
    assert run["rss_growth_mb"] < 200, run["rss_growth_mb"]  # 400 MB of output went through


@needs_sandbox
def test_fifos_in_place_of_the_runners_files_do_not_hang_anything(run):
    s = _r(run, "fifolog_01_roofline")
    assert s["total"] == MAX[1], s["notes"]  # its honest answers were read at each check()
    assert s["seconds"] < 150


# ---- every row is written, files that are not notebooks get a reason ----------------------------------

def test_every_row_is_what_that_submission_honestly_earns(run):
    assert demo_class.compare(run["expected"], list(run["results"].values())) == []


def test_every_submission_has_a_row_and_a_feedback_file(run):
    rows = list(csv.reader(io.StringIO(run["sheet"])))
    names = {Path(r[0]).name for r in rows[1:]}
    assert names == set(run["files"])
    assert len(run["feedback"]) == len(run["files"])
    for row in rows[1:]:
        for cell in row:
            assert not cell.lstrip().startswith(("=", "+", "@")) and not cell.startswith("-"), cell


def test_links_and_pipes_in_the_folder_are_refused_with_a_reason(run):
    assert "符号链接" in _r(run, "a8symlink_01_roofline")["notes"][0]
    assert "符号链接" in _r(run, "a9zero_01_roofline")["notes"][0]
    assert "命名管道" in _r(run, "b0fifo_01_roofline")["notes"][0]
    for name in ("a8symlink_01_roofline", "a9zero_01_roofline", "b0fifo_01_roofline"):
        s = _r(run, name)
        assert s["total"] == 0 and s["max"] == MAX[1] and s["status"] == "无效文件"


# ---- no unearned mark, and nobody hurts anybody else ---------------------------------------------------

HOSTILE = demo_class.HOSTILE


@needs_sandbox
@pytest.mark.parametrize("name", HOSTILE)
def test_attacks_earn_nothing(run, name):
    s = _r(run, name)
    assert s["total"] == 0, {k: v["message"] for k, v in s["exercises"].items() if v["correct"]}
    assert s["max"] == MAX[1]


def test_no_submission_stops_or_kills_another(run):
    """Every notebook ran to its end: the killer (SIGKILL to every kernel and runner it can see, for
    25 s, while the next submissions run beside it: jobs=2) sees none outside its own PID namespace,
    and no FIFO, link, memory bomb or flood of output stopped anything."""
    for name, e in run["expected"].items():
        if not e["kind"].startswith("invalid"):
            assert run["results"][name]["status"] == "完成", (name, run["results"][name]["notes"])


@needs_sandbox
def test_no_attack_changed_the_grader_the_key_or_the_sheet(run):
    assert run["sources_same"], "a submission rewrote the grader's files or the reference notebooks"
    assert run["planted"] == [], "a .pth file survived the grading run"
    assert run["alive"] == [], "a process started by a submission outlived the grading run"
    assert run["sheet_same"] and "HYPERLINK" not in run["sheet"]


@needs_sandbox
def test_a_memory_bomb_through_dev_zero_is_contained(run):
    s = _r(run, "a7devzero_01_roofline")
    assert any("内存" in n or "MemoryError" in n for n in s["notes"]), s["notes"]


def test_the_run_fits_in_a_class_sized_time(run):
    assert run["took"] < 600


# ---- limits, fakes and crashes on tiny notebooks (a second, short run) ---------------------------------

FAKE_CHECK = """\
import scaling_lib.grading as G
G.check = lambda *a, **k: print("✅ 对了。")
def check(ex_id, answer):
    print("✅ 对了。")
i_crit_ici = 1.0
check("1.2", i_crit_ici)
"""
MONKEYPATCH = """\
import scaling_lib.roofline as R, scaling_lib.hardware as H
R.critical_batch = lambda *a, **k: 1.0
H.critical_intensity = lambda *a, **k: 1.0
i_crit_ici = H.critical_intensity("v6e")  # check("1.2", i_crit_ici)
b_crit_w8_h100 = R.critical_batch("H100")
"""
FORK_BOMB = """\
import os, time
def bomb(deadline):
    while time.time() < deadline:
        try:
            if os.fork() == 0:
                bomb(deadline)
                os._exit(0)
        except OSError:
            time.sleep(0.05)
bomb(time.time() + 6)
fp8_intensity_rule = 'B'
"""
TREE_HOG = """\
import subprocess, sys
fill = "b = bytearray(450 << 20)\\nfor i in range(0, len(b), 4096):\\n    b[i] = 1\\nimport time; time.sleep(4)"
hogs = [subprocess.Popen([sys.executable, "-c", fill]) for _ in range(3)]
codes = [h.wait() for h in hogs]
print(codes)
fp8_intensity_rule = 'B'
"""
LIMIT_SUBS = {
    "slow": ["i_crit_ici = 10222.2  # check('1.2', i_crit_ici)", "import time\ntime.sleep(8)", "time.sleep(8)",
             "time.sleep(8)", "time.sleep(8)", "two_chip_bound = 'B'"],
    "dies": ["i_crit_ici = 10222.2  # check('1.2', i_crit_ici)", "import os\nos._exit(1)", "two_chip_bound = 'B'"],
    "hog": ["i_crit_ici = 10222.2  # check('1.2', i_crit_ici)", "import numpy as np\nbig = np.ones(2**28)\nfp8_intensity_rule = 'B'",
            "two_chip_bound = 'B'"],
    "loop": ["i_crit_ici = 10222.2  # check('1.2', i_crit_ici)", "while True:\n    pass", "two_chip_bound = 'B'"],
    "forkbomb": ["i_crit_ici = 10222.2  # check('1.2', i_crit_ici)", FORK_BOMB, "two_chip_bound = 'B'"],
    "fakecheck": [FAKE_CHECK],
    "monkey": [MONKEYPATCH],
    "raises": ["raise RuntimeError('oops')\ni_crit_ici = 10222.2  # check('1.2', i_crit_ici)", "two_chip_bound = 'B'"],
    "treehog": ["i_crit_ici = 10222.2  # check('1.2', i_crit_ici)", TREE_HOG, "two_chip_bound = 'B'"],
    "bigfile": ["i_crit_ici = 10222.2  # check('1.2', i_crit_ici)",
                "import os\nwith open(os.path.join(os.environ.get('TMPDIR', '/tmp'), 'big'), 'wb') as f:\n"
                "    for _ in range(100):\n        f.write(b'x' * (1 << 20))", "two_chip_bound = 'B'"],
}
TREE_MEMORY = "memory" in ISO.controllers and ISO.cgroup is not None


def _limits_run(folder: Path) -> dict:
    files = []
    for name, cells in LIMIT_SUBS.items():
        if name == "forkbomb" and WEAK is not None:
            continue  # without the sandbox nothing caps the processes of one submission
        if name == "treehog" and not TREE_MEMORY:
            continue  # without a memory cgroup the limit is per process (RLIMIT_DATA)
        p = folder / f"{name}_01_roofline.ipynb"
        nbformat.write(demo_class.tiny(cells), p)
        files.append(p)
    out = folder / "s.csv"
    t0 = time.monotonic()
    res = grading.grade(files, out, timeout_cell=10, timeout_notebook=30, memory_mb=1024, jobs=2,
                        seed=1, quiet=True, feedback=None)
    return {"results": {r.student: r.as_dict() for r in res}, "took": time.monotonic() - t0}


@pytest.fixture(scope="module")
def limits(tmp_path_factory):
    return _shared(tmp_path_factory, "grader_limits_run", _limits_run)


def _pts(s):
    return {i: e["points"] for i, e in s["exercises"].items()}


def test_notebook_time_limit_keeps_what_was_read(limits):
    s = limits["results"]["slow"]
    assert s["status"] == "超时" and _pts(s)["1.2"] == 1 and _pts(s)["1.5b"] == 0
    said = [n for n in s["notes"] if "时间上限" in n]  # once, at the first cell that did not finish
    assert len(said) == 1 and said[0].startswith("超过整本 notebook 的时间上限（30 秒）：第 "), said


def test_kernel_death_keeps_earlier_answers(limits):
    s = limits["results"]["dies"]
    assert s["status"] == "内核崩溃" and s["total"] == 1 and _pts(s)["1.2"] == 1


def test_memory_limit_is_a_memory_error_in_that_cell_only(limits):
    s = limits["results"]["hog"]  # 2 GiB > 1 GiB
    assert _pts(s)["1.2"] == 1 and _pts(s)["1.5b"] == 1 and _pts(s)["1.4b"] == 0
    assert any("MemoryError" in n for n in s["notes"])


@pytest.mark.skipif(not TREE_MEMORY, reason="no memory cgroup here: the memory limit is per process")
def test_memory_limit_covers_the_whole_process_tree(limits):
    """Three child processes of 450 MB each (each below the kernel's own limit, 1.35 GB together):
    the tree's limit (1024 MB) holds, the grader says so, what was answered before counts."""
    s = limits["results"]["treehog"]
    assert any("超出了内存上限（1024 MB）" in n for n in s["notes"]), s["notes"]
    assert s["peak_mb"] is not None and s["peak_mb"] <= 1024 + 1, s["peak_mb"]
    assert _pts(s)["1.2"] == 1 and s["max"] == MAX[1]


def test_file_size_limit_is_an_error_in_that_cell_only(limits):
    s = limits["results"]["bigfile"]  # 100 MB > the 64 MB RLIMIT_FSIZE of every process of the sandbox
    assert "第 2 个（OSError）" in "；".join(s["notes"]), s["notes"]
    assert _pts(s)["1.2"] == 1 and _pts(s)["1.5b"] == 1 and s["status"] == "完成"


def test_endless_loop_costs_its_cell_only(limits):
    s = limits["results"]["loop"]
    assert s["status"] == "部分超时" and _pts(s)["1.2"] == 1 and _pts(s)["1.5b"] == 1


@needs_sandbox
def test_fork_bomb_is_contained(limits):
    """Processes are capped per submission (cgroup pids or RLIMIT_NPROC in the sandbox's user
    namespace): the bomb ends within the limits, what it answered before counts, and the other
    submissions of the same run (the tests above and below) are untouched."""
    s = limits["results"]["forkbomb"]
    assert _pts(s)["1.2"] == 1 and s["max"] == MAX[1] and s["seconds"] < 30 + 60, s["notes"]


def test_fake_check_and_monkeypatching_earn_nothing(limits):
    assert limits["results"]["fakecheck"]["total"] == 0
    m = limits["results"]["monkey"]
    assert m["total"] == 0 and _pts(m)["1.2"] == 0


def test_a_raising_cell_costs_only_what_it_did_not_define(limits):
    s = limits["results"]["raises"]
    assert _pts(s)["1.2"] == 0 and _pts(s)["1.5b"] == 1 and "RuntimeError" in "；".join(s["notes"])


# ---- per-student variants, roster and exports (a third, short run) ------------------------------------

SECRET = b"e2e-variant-secret-0123456789abcdef"


def _variant_run(folder: Path) -> dict:
    secret = folder / "course.key"
    secret.write_bytes(SECRET)
    hand = folder / "hand"
    grading.make_variants(SECRET, ["s001", "s002"], ROOT / "exercises", hand, names=["1"], with_solutions=True)
    subs = folder / "subs"
    subs.mkdir()
    shutil.copy(hand / "s001" / "01_roofline.ipynb", subs / "upload_1001.ipynb")   # s001's own work
    shutil.copy(hand / "s001" / "01_roofline.ipynb", subs / "upload_1002.ipynb")   # s002 copies s001
    roster = folder / "roster.csv"
    roster.write_text("student,name,email,file\ns001,张三,a@x.cn,upload_1001.ipynb\n"
                      "s002,李四,b@x.cn,upload_1002.ipynb\ns003,王五,c@x.cn,\n", encoding="utf-8")
    out = folder / "book" / "scores.csv"
    res = grading.grade([subs], out, secret=secret, roster=roster, export=("lms", "gradescope"),
                        timeout_cell=60, timeout_notebook=150, seed=3, quiet=True)
    return {"results": {r.student: r.as_dict() for r in res},
            "lms": (out.parent / "scores_lms.csv").read_bytes().decode("utf-8-sig"),
            "gradescope": sorted(p.parent.name for p in (out.parent / "gradescope").glob("*/results.json")),
            "feedback": (out.parent / "feedback" / "s002.md").read_text(encoding="utf-8")}


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    return _shared(tmp_path_factory, "grader_variant_run", _variant_run)


def test_own_variant_scores_full_marks(variants):
    s = variants["results"]["s001"]
    assert s["total"] == MAX[1] and s["variant"] and s["name"] == "张三"


def test_a_copied_variant_loses_every_per_student_question(variants):
    s = variants["results"]["s002"]
    lost = {i for i, e in s["exercises"].items() if not e["correct"]}
    own = draw(chapter_params(1), SECRET, "s002", 1)
    other = draw(chapter_params(1), SECRET, "s001", 1)
    differing = {e.id for e in for_chapter(1) if e.params and any(own[k] != other[k] for k in e.params)
                 and e.kind != "choice"}
    assert differing and differing <= lost
    assert any("属于学生 s001" in n for n in s["notes"])
    assert "属于学生 s001" in variants["feedback"]


def test_roster_student_without_submission_gets_a_row(variants):
    s = variants["results"]["s003"]
    assert s["status"] == "未提交" and s["total"] == 0 and s["max"] == MAX[1]


def test_exports_for_an_lms_and_gradescope(variants):
    rows = list(csv.reader(io.StringIO(variants["lms"])))
    assert rows[0] == ["SID", "Name", "Email", "Score", "Max Score", "Status"]
    assert [r[0] for r in rows[1:]] == ["s001", "s002", "s003"] and rows[1][3] == str(MAX[1])
    assert variants["gradescope"] == ["s001", "s002", "s003"]
