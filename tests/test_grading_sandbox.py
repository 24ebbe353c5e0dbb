"""What a graded submission's sandbox contains and what the grader tells the teacher about it (issue 18,
items 1 and 2), plus Ctrl-C during a run (item 4). The sandbox's content is checked from the
outside (cheap); the e2e tests check the same thing from the inside with hostile submissions."""
from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

from scaling_lib.grading import _sandbox  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sandbox():
    sb = _sandbox.Sandbox(_sandbox.detect("auto"), memory_mb=1024, timeout_notebook=60,
                          avoid=[ROOT / "exercises"])
    yield sb
    sb.close()


def test_the_sanitised_library_holds_no_answer_key_and_no_judge(sandbox):
    lib = sandbox.tree / "lib" / "scaling_lib"
    assert (lib / "roofline.py").exists() and (lib / "hardware.py").exists()
    assert not (lib / "exercises").exists()
    grading = sorted(p.name for p in (lib / "grading").iterdir() if p.suffix in (".py", ".json"))
    assert grading == ["__init__.py", "_defaults.json", "_view.py"]
    for p in lib.rglob("*"):
        if p.is_file() and p.suffix in (".py", ".json", ".csv"):
            text = p.read_text(encoding="utf-8", errors="replace")
            assert "EXERCISES = [" not in text and "BEGIN SOLUTION" not in text, p
            assert "def judge_function" not in text and "def _judge_number" not in text, p
    assert sorted(p.name for p in (sandbox.tree / "bin").iterdir()) == ["extract.py", "kernel.py", "launch.py",
                                                                         "runner.py"]


def test_the_stub_check_records_and_variant_gives_the_books_numbers(sandbox):
    code = ("import scaling_lib.grading as g\n"
            "g.check('1.2', 240.0); g.check(' 3.2 ', [1, 2])\n"
            "P = g.variant(1)\n"
            "print(sorted(g._RECORDED.items()), P.flops, P.B5, hasattr(g, 'evaluate') if False else 'ok')\n"
            "try:\n    g.evaluate\nexcept AttributeError as e:\n    print('no evaluate:', e)\n")
    env = dict(os.environ, PYTHONPATH=str(sandbox.tree / "lib"))
    r = subprocess.run([sys.executable, "-s", "-c", code], capture_output=True, text=True, env=env, cwd="/")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "（批改中：答案已记下，由评分程序判分）"
    assert "[('1.2', 240.0), ('3.2', [1, 2])] 500000000000000.0 384 ok" in r.stdout
    assert "no evaluate: 批改时的 scaling_lib.grading 只有 check 和 variant" in r.stdout


def test_bwrap_binds_only_the_system_python_and_the_sanitised_tree(sandbox):
    if sandbox.iso.kind != "bwrap":
        pytest.skip(f"no bubblewrap here: {sandbox.iso.reason}")
    argv = sandbox._bwrap_argv()
    assert argv[argv.index("--uid") + 1] == "65534" and "--unshare-all" in argv and "--die-with-parent" in argv
    sources = [argv[i + 1] for i, a in enumerate(argv) if a in ("--ro-bind", "--bind", "--ro-bind-try")]
    assert "--bind" not in argv  # nothing of the host is writable
    venv = Path(sys.prefix).resolve()
    for s in sources:
        p = Path(s).resolve() if os.path.exists(s) else Path(s)
        for forbidden in (ROOT, Path.home().resolve(), Path.cwd().resolve(), ROOT / "exercises"):
            assert p != forbidden and p not in forbidden.parents, (s, forbidden)  # not the folder nor above it
        if ROOT in p.parents:  # inside the repository: only the virtual environment
            assert p == venv or venv in p.parents, s
    assert "/etc/shadow" not in sources and "/etc" not in sources and "/" not in sources
    assert str(sandbox.tree / "lib") in sources


def test_self_test_passes_where_bubblewrap_works(sandbox):
    if sandbox.iso.kind != "bwrap":
        pytest.skip(f"no bubblewrap here: {sandbox.iso.reason}")
    assert sandbox.self_test() is None


def test_the_teacher_is_told_what_is_enforced():
    strong = _sandbox.Isolation("bwrap", "v1", ("memory", "pids", "cpu"))
    lines = "\n".join(strong.describe(2048, 300, 256))
    assert "bubblewrap 沙箱" in lines and "整棵进程树 2048 MB" in lines and "进程数上限：256" in lines
    weak = _sandbox.Isolation("process", None, (), reason="macOS 没有 bubblewrap")
    lines = "\n".join(weak.describe(2048, 300, 256))
    assert lines.startswith("警告：这次批改没有沙箱（macOS 没有 bubblewrap）")
    assert "能读写你这个用户能读写的所有文件" in lines and "仍然保证的是" in lines
    assert "每个进程 2048 MB（RLIMIT_DATA" in lines
    assert _sandbox.detect("process").kind == "process"
    with pytest.raises(ValueError, match="isolation"):
        _sandbox.detect("docker")


def _tiny(cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def test_ctrl_c_keeps_the_sheet_and_leaves_no_process(tmp_path):
    """Interrupted after the first submission: exit 130, every row written, none left running."""
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(_tiny(["i_crit_ici = 10222.2  # check('1.2', i_crit_ici)"]), subs / "a_01_roofline.ipynb")
    for name in ("b", "c", "d"):
        nbformat.write(_tiny(["import time\ntime.sleep(60)  # check('1.2', i_crit_ici)"]), subs / f"{name}_01_roofline.ipynb")
    out = tmp_path / "scores.csv"
    proc = subprocess.Popen([sys.executable, "-m", "scaling_lib.grading", "grade", str(subs), "--out", str(out),
                             "--jobs", "1", "--timeout-cell", "100", "--timeout-notebook", "100"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
                            # a teacher's terminal: Ctrl-C is not ignored. A test run started in the
                            # background (`cmd &`, nohup) inherits SIGINT ignored, and Python then
                            # never raises KeyboardInterrupt: restore the default in the grader
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    t0 = time.monotonic()
    while time.monotonic() - t0 < 300:   # generous: a loaded CI machine starts kernels slowly
        if out.exists() and "a_01_roofline" in out.read_text(encoding="utf-8-sig") and ",完成," in \
                out.read_text(encoding="utf-8-sig"):
            break
        time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("the first submission was not graded within 300 s; the interrupt was never tested")
    time.sleep(2)  # b is running now
    proc.send_signal(signal.SIGINT)
    try:
        text, _ = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        proc.kill()
        text, _ = proc.communicate()
        pytest.fail(f"the grader did not stop within 180 s of Ctrl-C; it printed:\n{text[-3000:]}")
    assert proc.returncode == 130, text
    assert "已中断" in text and "[1/4] 已评分" in text
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8-sig"))))
    status = {Path(r[0]).stem: r[-2] for r in rows[1:]}
    assert status["a_01_roofline"] == "完成"
    assert status["b_01_roofline"] == status["c_01_roofline"] == status["d_01_roofline"] == "未评分（已中断）"
    time.sleep(1)
    # every sandbox of the run was killed and its cgroup removed (named after the grader's pid)
    left = [str(d) for d in Path("/sys/fs/cgroup").glob(f"*/**/scaling-grade-{proc.pid}-*")]
    assert left == []


def test_without_bubblewrap_the_grader_warns_and_still_reaps_everything(tmp_path, capsys):
    """--isolation process (what macOS or a Linux without user namespaces gets): a Chinese warning,
    honest answers graded, and a detached background process (setsid + double fork) does not
    outlive its submission (the launcher is a child subreaper on Linux)."""
    from scaling_lib import grading
    marker = f"REAP_ME_{os.getpid()}"
    daemon = ("import os, sys, time\n"
              "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
              f"        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(120)', {marker!r}])\n"
              "    os._exit(0)\n"
              "i_crit_ici = 10222.2  # check('1.2', i_crit_ici)")
    nbformat.write(_tiny([daemon]), tmp_path / "a_01_roofline.ipynb")
    res = grading.grade([tmp_path / "a_01_roofline.ipynb"], tmp_path / "s.csv", isolation="process",
                        timeout_cell=30, timeout_notebook=60, memory_mb=1024, feedback=None)
    out = capsys.readouterr().out
    assert out.startswith("警告：这次批改没有沙箱（按要求用 --isolation process 关掉了沙箱）")
    assert res[0].scores["1.2"] == 1 and res[0].status == "完成"
    time.sleep(1)
    alive = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline_has(p, marker)]
    assert alive == []
    with pytest.raises(RuntimeError, match="没有可用的沙箱"):
        grading.grade([tmp_path / "a_01_roofline.ipynb"], tmp_path / "s.csv", isolation="process",
                      require_sandbox=True, quiet=True)


def _cmdline_has(pid: str, text: str) -> bool:
    try:
        return text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
