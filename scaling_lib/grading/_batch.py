"""Grading a class: read each submission safely, run it in its own sandbox, judge it here.

``grade(files, out)`` is what ``python -m scaling_lib.grading grade`` runs. Trust model: the
submission controls everything inside its sandbox (its kernel, the runner beside it, what comes
back on the report pipe), so nothing from there is believed except as the submission's claim
about its own answers. This process:

1. reads each submission itself (regular files only, never through a symlink, at most
   ``MAX_FILE`` bytes; UTF-8 with or without BOM, UTF-16, CRLF, nbformat 3 and 4) and sends only
   the code cells' text into the sandbox;
2. takes the registry and computes every expected value here, for the numbers it derives itself
   from the teacher's secret and the student id (never from what the notebook says);
3. draws the inputs of function exercises here, from a per-run seed;
4. scores each exercise from the value read right after the cell that calls its ``check`` (the
   value at the end of the notebook only when that exercise was never checked), each in its own
   ``try``: a value that cannot be compared costs that question only;
5. writes the sheet after every submission (atomically), so an interrupted run keeps what was
   graded, with a row for every submission.
"""
from __future__ import annotations

import codecs
import csv
import errno
import hashlib
import json
import os
import re
import stat
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._judge import (MISSING, CheckResult, _describe, _fail, _Opaque, _type_message, evaluate,
                     _reference_calls, expected_form, judge_function, library_call_message,
                     sample_inputs)

ROOT = Path(__file__).resolve().parents[2]
MAX_FILE = 20 << 20        # bytes read from one submission
MAX_CODE = 4 << 20         # bytes of code sent into the sandbox
MAX_CELLS = 3000

STATUS_OK = "完成"
STATUS_PARTIAL_TIMEOUT = "部分超时"
STATUS_TIMEOUT = "超时"
STATUS_DEAD = "内核崩溃"
STATUS_INVALID = "无效文件"
STATUS_NO_CHAPTER = "无法判断章节"
STATUS_ERROR = "评分程序出错"
STATUS_MISSING = "未提交"
STATUS_INTERRUPTED = "未评分（已中断）"
_CHECK = re.compile(r"""\bcheck\(\s*["']\s*([0-9]{1,2}\.[0-9]{1,2}[a-z]?)\s*["']""")
_VARIANT_STUDENT = re.compile(r"""\bvariant\(\s*\d{1,2}\s*,\s*(?:student\s*=\s*)?["']([^"'\n]{1,80})["']""")


@dataclass
class SubmissionResult:
    """One graded submission (or one roster student without a submission)."""

    file: str
    student: str
    chapters: list = field(default_factory=list)
    scores: dict = field(default_factory=dict)      # id -> points earned
    max_points: dict = field(default_factory=dict)  # id -> points available
    messages: dict = field(default_factory=dict)    # id -> feedback line (Chinese)
    sources: dict = field(default_factory=dict)     # id -> "check" | "final" | "cell" | "none"
    forms: dict = field(default_factory=dict)       # id -> expected form (Chinese, no values)
    status: str = STATUS_OK
    notes: list = field(default_factory=list)
    seconds: float = 0.0
    peak_mb: float | None = None
    cpu_s: float | None = None
    name: str = ""
    email: str = ""
    variant: bool = False

    @property
    def total(self) -> float:
        return float(sum(self.scores.values()))

    @property
    def max(self) -> float:
        return float(sum(self.max_points.values()))

    def as_dict(self) -> dict:
        return {"file": self.file, "student": self.student, "name": self.name, "email": self.email,
                "chapters": self.chapters, "total": self.total, "max": self.max, "status": self.status,
                "notes": self.notes, "seconds": round(self.seconds, 2),
                "peak_mb": None if self.peak_mb is None else round(self.peak_mb, 1),
                "cpu_s": None if self.cpu_s is None else round(self.cpu_s, 2),
                "variant": self.variant,
                "exercises": {i: {"points": self.scores.get(i, 0.0), "max": self.max_points[i],
                                  "correct": self.scores.get(i, 0.0) > 0,
                                  "message": self.messages.get(i, ""),
                                  "form": self.forms.get(i, ""),
                                  "source": self.sources.get(i, "none")}
                              for i in self.max_points}}


# ---- finding and reading submissions -----------------------------------------------------------

def _expand(files) -> list[Path]:
    """Files as given; a folder stands for the ``*.ipynb`` entries inside it, of any type (a FIFO
    or a symlink named ``x.ipynb`` gets a row saying why it was not graded). Symlinked folders
    are not entered; checkpoints are skipped."""
    out = []
    for f in files:
        p = Path(f)
        if p.is_dir() and not p.is_symlink():
            found = []
            for d, dirs, names in os.walk(p, followlinks=False):
                dirs[:] = sorted(x for x in dirs if x != ".ipynb_checkpoints")
                found += [Path(d) / n for n in names if n.endswith(".ipynb")]
                found += [Path(d) / n for n in dirs if n.endswith(".ipynb")]
            out.extend(sorted(found))
        else:
            out.append(p)
    return out


def _read_bytes(path: Path) -> tuple[bytes | None, str | None]:
    """The bytes of a regular file (never through a symlink, never blocking on a FIFO), capped."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None, "文件不存在"
    except OSError as e:
        return None, f"无法读取文件（{errno.errorcode.get(e.errno, e.errno)}）"
    if stat.S_ISLNK(st.st_mode):
        return None, "这是一个符号链接，不是作业文件本身：只批改普通文件"
    if stat.S_ISDIR(st.st_mode):
        return None, "这是一个文件夹，不是 notebook"
    if not stat.S_ISREG(st.st_mode):
        kind = ("命名管道" if stat.S_ISFIFO(st.st_mode) else "设备文件" if stat.S_ISCHR(st.st_mode)
                or stat.S_ISBLK(st.st_mode) else "套接字" if stat.S_ISSOCK(st.st_mode) else "特殊文件")
        return None, f"这不是普通文件（是{kind}）：只批改普通文件"
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return None, "这是一个符号链接，不是作业文件本身：只批改普通文件"
        return None, f"无法读取文件（{errno.errorcode.get(e.errno, e.errno)}）"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between lstat and open
            return None, "这不是普通文件：只批改普通文件"
        if st.st_size > MAX_FILE:
            return None, f"文件太大（{st.st_size >> 20} MB，上限 {MAX_FILE >> 20} MB），不像是练习 notebook"
        chunks, total = [], 0
        while True:
            try:
                b = os.read(fd, 1 << 20)
            except BlockingIOError:
                return None, "文件读不出来（不是普通文件）"
            if not b:
                break
            total += len(b)
            if total > MAX_FILE:
                return None, f"文件太大（超过 {MAX_FILE >> 20} MB），不像是练习 notebook"
            chunks.append(b)
        return b"".join(chunks), None
    finally:
        os.close(fd)


def _decode_text(raw: bytes) -> tuple[str | None, str | None]:
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return raw.decode("utf-16"), None
        except UnicodeDecodeError:
            return None, "不是 notebook 文件：内容不是有效的 UTF-16 文本"
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        return None, "不是 notebook 文件：内容不是 UTF-8 文本"


def _source(v) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return "".join(v)
    return None


def _cells(data: dict) -> tuple[list | None, str | None]:
    """[(index, cell_type, source)] of an nbformat 4 or 3 notebook (raw JSON)."""
    major = data.get("nbformat")
    if "cells" in data and isinstance(data["cells"], list) and major in (None, 4, 5):
        raw = [(c.get("cell_type"), _source(c.get("source"))) for c in data["cells"] if isinstance(c, dict)]
    elif major == 3 or "worksheets" in data:
        ws = data.get("worksheets")
        if not isinstance(ws, list):
            return None, "不是有效的 notebook：nbformat 3 却没有 worksheets"
        raw = []
        for w in ws:
            for c in (w.get("cells") or []) if isinstance(w, dict) else []:
                if isinstance(c, dict):
                    t = c.get("cell_type")
                    raw.append(("code", _source(c.get("input"))) if t == "code" else (t, _source(c.get("source"))))
    elif "cells" in data:
        return None, f"不支持的 notebook 版本（nbformat {str(major)[:10]}）"
    else:
        return None, "不是 notebook 文件：JSON 里没有 cells 列表"
    if len(raw) > MAX_CELLS:
        return None, f"单元太多（{len(raw)} 个，上限 {MAX_CELLS}）"
    cells = [(i, t, s) for i, (t, s) in enumerate(raw, 1) if t in ("code", "markdown", "raw", "heading")
             and s is not None]
    if sum(len(s) for _, t, s in cells if t == "code") > MAX_CODE:
        return None, f"代码太多（超过 {MAX_CODE >> 20} MB）"
    return cells, None


def _read_submission(path: Path):
    """(cells, raw bytes, None) or (None, None, reason in Chinese)."""
    raw, why = _read_bytes(path)
    if raw is None:
        return None, None, why
    text, why = _decode_text(raw)
    if text is None:
        return None, None, why
    head = text.lstrip(" \t\r\n")
    if not head:
        return None, None, "文件是空的"
    if not head.startswith("{"):
        start = head[:20].replace("\n", " ").replace("\r", " ")
        return None, None, f"不是 notebook 文件：内容不是 JSON（开头是 \"{start}\"）"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        return None, None, f"不是有效的 notebook：JSON 解析失败（第 {e.lineno} 行：{e.msg}），文件可能被截断或损坏"
    except (ValueError, RecursionError):
        return None, None, "不是有效的 notebook：JSON 无法解析"
    if not isinstance(data, dict):
        return None, None, "不是 notebook 文件：JSON 里没有 cells 列表"
    cells, why = _cells(data)
    if cells is None:
        return None, None, why
    return cells, raw, None


# ---- who and which chapter -------------------------------------------------------------------

def _student_name(path: Path, ref_stems: set[str]) -> str:
    """'alice' from alice.ipynb, alice_01_roofline.ipynb, 01_roofline-alice.ipynb, alice/01_roofline.ipynb."""
    stem = path.stem
    for ref in sorted(ref_stems, key=len, reverse=True):
        if ref and ref in stem:
            stem = stem.replace(ref, "")
            break
    stem = re.sub(r"^[\s._-]+|[\s._-]+$", "", stem)
    if not stem:
        stem = path.parent.name or path.stem
    return stem


def _chapters_of(cells, path: Path, reg) -> list[int]:
    """The chapters a submission answers: from check("N.M") calls, ex-NN-M labels, then the name."""
    known = {e.chapter for e in reg.values()}
    found = []
    for _, _t, src in cells:
        for i in _CHECK.findall(src):
            if i in reg:
                found.append(reg[i].chapter)
        for m in re.finditer(r"\bex-(\d{1,2})-\d", src):
            found.append(int(m.group(1)))
    chaps = sorted({c for c in found if c in known})
    return chaps or _chapters_from_name(path, reg)


def _chapters_from_name(path: Path, reg) -> list[int]:
    known = {e.chapter for e in reg.values()}
    m = re.search(r"(?:^|[^0-9])(\d{2})_[A-Za-z]", path.name)
    if m and int(m.group(1)) in known:
        return [int(m.group(1))]
    return []


# ---- turning the sandbox's report into scores ------------------------------------------------

def _decode(v, depth=0):
    """Plain JSON data from the kernel -> the value evaluate() sees. Anything odd -> _Opaque."""
    if depth > 6:
        return _Opaque("嵌套太深的数据")
    if v is None or isinstance(v, (str, float)) or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    if isinstance(v, list):
        return [_decode(x, depth + 1) for x in v[:10000]]
    if isinstance(v, dict):
        tag = v.get("$")
        if tag == "ellipsis":
            return Ellipsis
        if tag == "missing":
            return MISSING
        if tag == "bool":
            return bool(v.get("v"))
        if tag == "callable":
            return _Opaque("callable")
        if tag == "array":
            shape = v.get("shape")
            try:
                shape = tuple(int(s) for s in shape) if isinstance(shape, list) and len(shape) <= 8 else None
            except (TypeError, ValueError):
                shape = None
            data = v.get("v")
            if data is None:
                return _Opaque("ndarray", shape=shape)
            try:
                arr = np.asarray(_decode(data, depth + 1))
                if arr.dtype.kind in "iufb" and (shape is None or arr.shape == shape):
                    return arr
            except Exception:
                pass
            return _Opaque("ndarray", shape=shape)
        if tag == "opaque":
            return _Opaque(_clean_text(str(v.get("type", "未知")), 60))
    return _Opaque("无法识别的数据")


def _clean_text(s: str, n: int) -> str:
    """Text from a submission, fit for a note: no control characters, at most ``n`` characters."""
    s = "".join(ch if ch.isprintable() else " " for ch in str(s))
    return s[:n]


def _present(item) -> bool:
    return isinstance(item, dict) and (isinstance(item.get("cases"), list) or
                                       ("value" in item and item.get("value") != {"$": "missing"}))


def _judge_item(ex, item, inputs, values) -> CheckResult:
    """Score one exercise from the sandbox's plain-data report (None: nothing was read)."""
    if not isinstance(item, dict):
        return _fail(ex, _type_message(ex, MISSING))
    if ex.kind == "function" and isinstance(item.get("cases"), list):
        calls = item.get("library_calls")
        if isinstance(calls, list) and calls and all(isinstance(c, str) for c in calls):
            return _fail(ex, library_call_message(calls))
        cases = []
        for kw, c in zip(inputs, item["cases"]):
            if not isinstance(c, dict):
                cases.append((kw, ("error", "无法识别的结果")))
            elif "ok" in c:
                cases.append((kw, ("ok", _decode(c["ok"]))))
            elif c.get("timeout"):
                cases.append((kw, ("timeout", None)))
            else:
                cases.append((kw, ("error", _clean_text(c.get("error", "未知错误"), 300))))
            if cases[-1][1][0] != "ok":
                break
        if len(item["cases"]) < len(inputs) and all(s == "ok" for _, (s, _v) in cases):
            return _fail(ex, "❌ 没能在所有输入上测试你的函数。")
        programs = None
        if ex.program is not None:  # the compiled program's collectives, as the kernel reported them
            programs = [_program_facts(c.get("hlo")) for c in item["cases"][:len(cases)]
                        if isinstance(c, dict) and "ok" in c]
        return judge_function(ex, cases, programs)
    value = _decode(item.get("value", {"$": "missing"}))
    if ex.kind == "function" and isinstance(value, _Opaque) and value.type_name == "callable":
        return _fail(ex, "❌ 没能测试你的函数（它不能按参数名调用）。")
    return evaluate(ex, value, values=values)


def _program_facts(v):
    """The kernel's report of one compiled program -> plain facts (None if malformed)."""
    if not isinstance(v, dict) or not isinstance(v.get("collectives"), dict):
        return None
    counts = {}
    for k, n in list(v["collectives"].items())[:16]:
        if isinstance(k, str) and isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 10**6:
            counts[k[:40]] = n
    perms = []
    for g in (v.get("permutes") if isinstance(v.get("permutes"), list) else [])[:64]:
        if isinstance(g, list):
            pairs = [p for p in g[:4096] if isinstance(p, list) and len(p) == 2
                     and all(isinstance(x, int) and not isinstance(x, bool) for x in p)]
            perms.append(pairs)
    return {"collectives": counts, "permutes": perms}


def _score(ex, items: dict, inputs, values) -> tuple[CheckResult, str]:
    """(result, source): the value read after the exercise's own check() cell counts; the value at
    the end of the notebook only if it was never checked; else the last value read after a cell."""
    chosen, source = None, "none"
    for src in ("check", "final", "cell"):
        if _present(items.get(src)):
            chosen, source = items[src], src
            break
    if chosen is None:
        chosen = items.get("check") or items.get("final") or items.get("cell")
    r = _judge_item(ex, chosen, inputs, values)
    if source == "check" and not r.correct:
        later = items.get("cell_after")
        if _present(later) and later != chosen and _judge_item(ex, later, inputs, values).correct:
            r = CheckResult(ex.id, False, r.message + f"（注意：后面的单元把 `{ex.var}` 改对了，"
                            f"但评分看的是运行 check(\"{ex.id}\") 那一格时的值：改完要重新运行那一格。）")
    return r, source


# ---- the run ------------------------------------------------------------------------------------

def default_jobs(memory_mb: int) -> int:
    """Cores - 1 (at least 1), and no more than the memory allows at ``memory_mb`` per job."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    jobs = max(1, cores - 1)
    avail = _available_mb()
    if avail and memory_mb > 0:
        jobs = max(1, min(jobs, avail // memory_mb))
    return jobs


def _available_mb() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _job_exercises(exs, seed: int) -> tuple[list[dict], dict]:
    specs, inputs = [], {}
    for ex in exs:
        ins = sample_inputs(ex, (seed + zlib.crc32(ex.id.encode())) % 2**32) if ex.kind == "function" else []
        json.dumps(ins)  # the sampler must give plain data
        inputs[ex.id] = ins
        spec = {"id": ex.id, "var": ex.var, "kind": ex.kind, "inputs": ins}
        if ex.kind == "function" and ex.program is not None:  # run the body as a compiled program
            spec["program"] = ex.program.harness_args()
            json.dumps(spec["program"])
        if ex.kind == "function":
            spec["banned"] = sorted(_reference_calls(ex))
        specs.append(spec)
    return specs, inputs


def _id_key(i: str):
    from ..exercises import _sort_key
    return _sort_key(i)


def _zero(res, exs, msg):
    for e in sorted(exs, key=lambda e: _id_key(e.id)):
        res.max_points[e.id] = float(e.points)
        res.scores[e.id] = 0.0
        res.messages[e.id] = msg
        res.forms[e.id] = expected_form(e)


_DEVICES_LOCK = threading.Lock()
_JAX_WORDS = re.compile(r"\b(jax|devices|jax_model|kv_decode|measure)\b")


def _needs_jax(chapters) -> bool:
    """Whether these chapters' exercise modules use JAX (importing it costs seconds: only then)."""
    import importlib
    for ch in chapters:
        try:
            mod = importlib.import_module(f"scaling_lib.exercises.ch{int(ch):02d}")
            if _JAX_WORDS.search(Path(mod.__file__).read_text(encoding="utf-8")):
                return True
        except (ImportError, OSError, TypeError, ValueError):
            return True
    return False


def _devices_for_expected_values() -> None:
    """Some expected values run JAX on a mesh: ask for the book's simulated devices first."""
    with _DEVICES_LOCK:
        if "jax" in sys.modules:
            return
        try:
            from .. import devices
            devices.setup()
        except Exception:
            pass


class _Grader:
    """One grading run: settings, the sandbox, and grading of one submission."""

    def __init__(self, reg, sandbox, *, chapter, seed, timeout_cell, timeout_notebook, secret, log):
        self.reg = reg
        self.sandbox = sandbox
        self.chapter = chapter
        self.seed = seed
        self.timeout_cell = timeout_cell
        self.timeout_notebook = timeout_notebook
        self.secret = secret
        self.log = log
        self.ref_stems = {p.stem for p in (ROOT / "exercises").glob("*.ipynb")}

    def values_for(self, student: str, chapters) -> dict:
        from ..exercises import chapter_params, draw
        if self.secret is None:
            return {}
        return {ch: draw(chapter_params(ch), self.secret, student, ch) for ch in chapters if chapter_params(ch)}

    def one(self, path: Path, student: str, cells) -> SubmissionResult:
        res = SubmissionResult(str(path), student)
        reg = self.reg
        chaps = [self.chapter] if self.chapter is not None else _chapters_of(cells, path, reg)
        res.chapters = chaps
        if not chaps:
            res.status = STATUS_NO_CHAPTER
            res.notes.append("找不到任何 check(\"N.M\", ...) 调用、练习标签或章节号文件名；用 --chapter 指定")
            return res
        exs = sorted((e for e in reg.values() if e.chapter in chaps), key=lambda e: _id_key(e.id))
        if _needs_jax(chaps):  # before any expected value that runs JAX (chapters 9, 10), and
            _devices_for_expected_values()   # expected_form (a list's length) computes some
        for e in exs:
            res.max_points[e.id] = float(e.points)
            res.forms[e.id] = expected_form(e)
        values = self.values_for(student, chaps)
        res.variant = bool(values)
        if values:
            claimed = {m for _, t, s in cells if t == "code" for m in _VARIANT_STUDENT.findall(s)}
            from ..exercises import normalise_student
            others = sorted(c for c in claimed if normalise_student(c) != normalise_student(student))
            if others:
                res.notes.append(f"这份作业里的题目参数属于学生 {_clean_text(others[0], 40)}，"
                                 f"不是 {student}：按 {student} 的题目评分")
        specs, inputs = _job_exercises(exs, self.seed)
        job = {"cells": [[i, s] for i, t, s in cells if t == "code"], "exercises": specs,
               "timeout_cell": self.timeout_cell, "timeout_notebook": self.timeout_notebook}
        outcome = self.sandbox.run(job, self.timeout_notebook + 60)
        res.peak_mb = None if outcome.peak_bytes is None else outcome.peak_bytes / 2**20
        res.cpu_s = outcome.cpu_s
        items: dict = {}
        timeouts, errors = [], []
        status, done = STATUS_OK, False
        valid_ids = {e.id for e in exs}
        for ev in outcome.events:
            kind = ev.get("ev")
            cell = ev.get("cell") if isinstance(ev.get("cell"), int) else 0
            if kind == "item" and ev.get("id") in valid_ids and isinstance(ev.get("item"), dict):
                src = ev.get("src")
                slot = items.setdefault(ev["id"], {})
                if src == "check":
                    slot["check"] = ev["item"]
                    slot.pop("cell_after", None)
                elif src == "cell":
                    slot["cell"] = ev["item"]
                    if "check" in slot:
                        slot["cell_after"] = ev["item"]
                elif src == "final":
                    slot["final"] = ev["item"]
                    if "check" in slot:
                        slot["cell_after"] = ev["item"]
            elif kind == "cell_timeout":
                timeouts.append(cell)
            elif kind == "cell_error":
                errors.append((cell, _clean_text(ev.get("ename", "Error"), 40)))
            elif kind == "notebook_timeout":
                if status != STATUS_TIMEOUT:  # said once, at the first cell that did not finish
                    res.notes.append(f"超过整本 notebook 的时间上限（{self.timeout_notebook:g} 秒）：第 {cell} 个单元起没有运行完")
                status = STATUS_TIMEOUT
            elif kind == "stuck":
                status = STATUS_TIMEOUT
                res.notes.append(f"第 {cell} 个单元超时且无法中断，后面的单元没有运行")
            elif kind == "dead":
                status = STATUS_DEAD
                res.notes.append("内核意外退出（可能超出内存上限或进程被终止）：只计入之前读到的答案")
            elif kind == "failed":
                status = STATUS_ERROR
                res.notes.append("运行 notebook 的进程出了问题：只计入之前读到的答案")
                self.log(f"{path}: runner failed: {_clean_text(ev.get('what', ''), 300)}")
            elif kind == "done":
                done = True
        if outcome.killed:
            status = STATUS_TIMEOUT
            res.notes.append(f"超过整本 notebook 的时间上限（{self.timeout_notebook:g} 秒），整组进程被结束；"
                             "只计入之前读到的答案")
        elif not done and status == STATUS_OK:
            status = STATUS_DEAD if outcome.events else STATUS_ERROR
            res.notes.append("运行 notebook 的进程提前退出（可能超出内存或进程数上限）：只计入之前读到的答案")
            if not outcome.events:
                self.log(f"{path}: sandbox exited with {outcome.returncode}; log tail:\n{outcome.log_tail[-2000:]}")
        if outcome.oom:
            res.notes.append(f"超出了内存上限（{self.sandbox.memory_mb} MB）")
        if outcome.report_overflow:
            res.notes.append("运行报告过大，多出的部分没有读")
        if timeouts:
            res.notes.insert(0, f"第 {'、'.join(map(str, sorted(set(timeouts))[:20]))} 个单元超时"
                                f"（单元上限 {self.timeout_cell:g} 秒）")
            if status == STATUS_OK:
                status = STATUS_PARTIAL_TIMEOUT
        if errors:
            shown = "、".join(f"第 {i} 个（{name}）" for i, name in errors[:10])
            res.notes.append(f"出错的单元：{shown}" + ("等" if len(errors) > 10 else ""))
        res.status = status
        for e in exs:
            try:
                r, source = _score(e, items.get(e.id, {}), inputs[e.id], values.get(e.chapter))
            except Exception as exc:  # a grader bug costs this question, never the submission
                self.log(f"{path}: scoring {e.id} failed: {type(exc).__name__}: {exc}")
                r, source = _fail(e, "❌ 评分程序没能判断这一题（已记录，请老师复核）。"), "none"
            res.scores[e.id] = float(e.points) if r.correct else 0.0
            res.messages[e.id] = r.message
            res.sources[e.id] = source
        no_ref = [i for i, m in res.messages.items() if "算不出这道题的标准答案" in m]
        if no_ref:  # the grader's environment, not the student: say so loudly
            res.status = STATUS_ERROR
            res.notes.append(f"评分程序算不出 {'、'.join(no_ref)} 的标准答案，这几题请复核")
            self.log(f"{path}: expected values failed for {', '.join(no_ref)} (is jax set up for 8 devices?)")
        return res


def _load_secret(secret) -> bytes | None:
    if secret is None:
        return None
    if isinstance(secret, (bytes, bytearray)):
        data = bytes(secret)
    else:
        p = Path(secret)
        raw, why = _read_bytes(p)
        if raw is None:
            raise ValueError(f"cannot read the secret file {p}: {why}")
        data = raw.strip()
    if len(data) < 16:
        raise ValueError("the secret must be at least 16 bytes (make one with: python -m scaling_lib.grading secret)")
    return data


def grade(files, out: str | Path | None = "scores.csv", *, timeout_cell: float = 30,
          timeout_notebook: float = 300, memory_mb: int = 2048, jobs: int | None = None,
          chapter: int | None = None, seed: int | None = None, quiet: bool = False,
          roster: str | Path | None = None, secret=None, feedback: str | Path | None = "default",
          export=(), isolation: str = "auto", require_sandbox: bool = False,
          progress: bool | None = None) -> list:
    """Grade submitted notebooks; write the gradebook beside ``out``; return the results.

    ``out``: the CSV sheet (UTF-8 with BOM, safe against spreadsheet formulas); ``.json`` beside
    it; ``feedback`` (default: a ``feedback/`` folder beside ``out``; None: none) gets one
    Chinese file per student; ``export`` may hold "lms" and/or "gradescope". ``roster``: a CSV
    mapping submission files to student ids (see ``_report.read_roster``). ``secret``: bytes or
    a file: per-student variants (the numbers are derived from it and each student id).
    ``jobs``: submissions at once (default: cores - 1, within memory). Each submission runs in
    its own sandbox (``isolation``: "auto", "bwrap", "process"; ``require_sandbox``: refuse to
    grade without bubblewrap). The sheet is rewritten after every submission; on Ctrl-C the
    running sandboxes are killed and the sheet keeps every row (unfinished ones marked).
    """
    from ..exercises import registry
    from . import _report, _sandbox

    if os.name == "nt":
        raise RuntimeError("Windows 上不能批改：请在 WSL（Windows 的 Linux 子系统）里运行，那里可以装 bubblewrap")
    if timeout_cell <= 0 or timeout_notebook <= 0:
        raise ValueError("timeouts must be > 0 seconds")
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise ValueError(f"jobs must be a positive int, got {jobs!r}")
    if not isinstance(memory_mb, int) or memory_mb < 0:
        raise ValueError(f"memory_mb must be an int >= 0 (0: no limit), got {memory_mb!r}")
    reg = dict(registry())  # taken before any submission runs
    if chapter is not None and chapter not in {e.chapter for e in reg.values()}:
        raise ValueError(f"no exercises registered for chapter {chapter}")
    bad_export = set(export) - {"lms", "gradescope"}
    if bad_export:
        raise ValueError(f"export must be 'lms' and/or 'gradescope', got {sorted(bad_export)}")
    secret_bytes = _load_secret(secret)
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little")
    roster_rows = _report.read_roster(roster) if roster is not None else None
    paths = _expand(files)
    jobs = jobs or default_jobs(memory_mb)
    progress = (not quiet) if progress is None else progress
    out = Path(out) if out is not None else None
    feedback_dir = (out.parent / "feedback" if out is not None else None) if feedback == "default" else (
        Path(feedback) if feedback is not None else None)
    log_lock = threading.Lock()

    def log(msg: str) -> None:
        with log_lock:
            print(msg, file=sys.stderr, flush=True)

    iso = _sandbox.detect(isolation)
    if require_sandbox and not iso.strong:
        raise RuntimeError(f"没有可用的沙箱（{iso.reason}），按 --require-sandbox 的要求不批改")
    avoid = [p.parent for p in paths] + ([out.parent] if out is not None else [])
    if feedback_dir is not None:
        avoid.append(feedback_dir)
    sandbox = _sandbox.Sandbox(iso, memory_mb=memory_mb, timeout_notebook=timeout_notebook, avoid=avoid)
    try:
        why = sandbox.self_test()
        if why:
            if require_sandbox or isolation == "bwrap":
                raise RuntimeError(f"沙箱不能用：{why}")
            sandbox.close()
            iso = _sandbox.Isolation("process", iso.cgroup, iso.controllers, reason=why)
            sandbox = _sandbox.Sandbox(iso, memory_mb=memory_mb, timeout_notebook=timeout_notebook, avoid=avoid)
        settings = dict(timeout_cell=timeout_cell, timeout_notebook=timeout_notebook, memory_mb=memory_mb,
                        seed=seed, jobs=jobs, isolation=iso.kind, cgroup=iso.cgroup,
                        limits=sandbox.describe(), variants=secret_bytes is not None)
        if not quiet:
            for line in sandbox.describe():
                print(line, flush=True)
            print(f"共 {len(paths)} 份作业，同时批改 {jobs} 份。", flush=True)
        grader = _Grader(reg, sandbox, chapter=chapter, seed=seed, timeout_cell=timeout_cell,
                         timeout_notebook=timeout_notebook, secret=secret_bytes, log=log)
        book = _report.Gradebook(out, settings, feedback_dir=feedback_dir, export=tuple(export))
        return _run_all(paths, grader, book, roster_rows, jobs, progress=progress, quiet=quiet)
    finally:
        sandbox.close()


def _identify(paths, roster_rows, ref_stems):
    """[(path, student id, roster row or None)] and the roster rows nobody submitted for."""
    from ._report import match_roster
    if roster_rows is None:
        return [(p, _student_name(p, ref_stems), None) for p in paths], []
    return match_roster(paths, roster_rows, lambda p: _student_name(p, ref_stems))


def _run_all(paths, grader, book, roster_rows, jobs, *, progress, quiet):
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
    from ._report import Progress

    who, absent = _identify(paths, roster_rows, grader.ref_stems)
    results: list = [None] * len(who)
    # every row exists from the start: unfinished rows say so if the run is interrupted
    for k, (p, student, row) in enumerate(who):
        r = SubmissionResult(str(p), student, status=STATUS_INTERRUPTED)
        if row is not None:
            r.name, r.email = row.get("name", ""), row.get("email", "")
        elif roster_rows is not None:
            r.notes.append("名单里没有这份作业")
        results[k] = r
    missing = []
    for row in absent:
        m = SubmissionResult("", row["student"], status=STATUS_MISSING, name=row.get("name", ""),
                             email=row.get("email", ""))
        m.notes.append("没有找到这位学生的作业")
        missing.append(m)

    reads = {}
    digests: dict = {}
    for k, (p, student, row) in enumerate(who):
        cells, raw, why = _read_submission(p)
        reads[k] = (cells, why)
        if raw is not None:
            digests.setdefault(hashlib.sha256(raw).hexdigest(), []).append(k)
    for ks in digests.values():
        if len(ks) > 1:
            for k in ks:
                others = "、".join(results[j].student for j in ks if j != k)
                results[k].notes.append(f"和 {others} 交的文件逐字节相同")

    bar = Progress(len(who), enabled=progress, quiet=quiet)
    lock = threading.Lock()

    def one(k):
        p, student, row = who[k]
        t0 = time.monotonic()
        cells, why = reads[k]
        prior_notes = list(results[k].notes)
        try:
            if cells is None:
                res = SubmissionResult(str(p), student, status=STATUS_INVALID)
                res.notes.append(why)
                chaps = [grader.chapter] if grader.chapter is not None else _chapters_from_name(p, grader.reg)
                if chaps:
                    res.chapters = chaps
                    _zero(res, [e for e in grader.reg.values() if e.chapter in chaps],
                          f"❌ 这份提交无法评分：{why}。")
            else:
                res = grader.one(p, student, cells)
        except Exception as e:  # a grader bug must not lose the other submissions
            grader.log(f"{p}: grading failed: {type(e).__name__}: {e}")
            res = SubmissionResult(str(p), student, status=STATUS_ERROR)
            res.notes.append(f"评分程序出错（{type(e).__name__}），请老师复核")
        if grader.sandbox.closed and cells is not None:  # Ctrl-C stopped it half-way
            res = SubmissionResult(str(p), student, status=STATUS_INTERRUPTED)
            res.notes.append("批改被中断，这一份没有批完")
        res.seconds = time.monotonic() - t0
        res.name, res.email = results[k].name, results[k].email
        res.notes = prior_notes + res.notes
        with lock:
            results[k] = res
            _fill_unknown_chapters(results, grader.reg)
            book.write(results + missing, final=False)
            bar.step(res)
        return res

    pool = ThreadPoolExecutor(max_workers=jobs)
    futures = [pool.submit(one, k) for k in range(len(who))]
    try:
        pending = set(futures)
        while pending:
            _done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
    except KeyboardInterrupt:
        for f in futures:
            f.cancel()
        grader.sandbox.stop_all()
        pool.shutdown(wait=True, cancel_futures=True)
        with lock:
            book.write(results + missing, final=True)
        bar.close()
        if not quiet:
            done = sum(1 for r in results if r.status != STATUS_INTERRUPTED)
            print(f"\n已中断：成绩表里有已经批完的 {done} 份，其余 {len(results) - done} 份标为“{STATUS_INTERRUPTED}”。",
                  flush=True)
        raise
    pool.shutdown(wait=True)
    bar.close()
    final = results + missing
    _fill_unknown_chapters(final, grader.reg)
    book.write(final, final=True)
    if not quiet:
        from ._report import summary_table
        print(summary_table(final))
        if book.out is not None:
            print(book.where())
    return final


def _fill_unknown_chapters(results, reg) -> None:
    """Unreadable submissions get the run's chapter (if all the others agree) with 0 points."""
    chaps = {tuple(r.chapters) for r in results if r.chapters}
    if len(chaps) != 1:
        return
    (only,) = chaps
    for r in results:
        if not r.max_points and r.status != STATUS_INTERRUPTED:
            r.chapters = list(only)
            _zero(r, [e for e in reg.values() if e.chapter in only],
                  "❌ 没有交作业。" if r.status == STATUS_MISSING else "❌ 这份提交无法评分：" + r.status + "。")
