"""The gradebook: score sheet (CSV + JSON), feedback files, LMS/Gradescope exports, roster, progress.

- ``scores.csv``: UTF-8 with a byte-order mark (Excel opens the Chinese correctly), one row per
  submission (and per roster student without one), one column per exercise. Every text cell
  that a spreadsheet could take for a formula (starting with ``= + - @``, a tab or a carriage
  return, also after spaces or in full-width form) is prefixed with ``'``; control characters
  and line breaks are replaced by spaces.
- ``scores.json``: the same plus each question's feedback, the run's settings and the limits.
- ``feedback/<student>.md``: for the student, in Chinese: per question the score, the feedback
  line (the hint) and the form the answer must have; never an expected value.
- exports: ``lms.csv`` (SID, Name, Email, Score, Max Score: the columns the CSV grade imports of
  Moodle, Blackboard and Gradescope's score upload can map) and ``gradescope/<student>/
  results.json`` (the result format of Gradescope's autograder: score, tests[name, number,
  score, max_score, output]).
Everything is written to a temporary file first and renamed, after every graded submission.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
import time
from pathlib import Path

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def safe_cell(v) -> str:
    """Text for one CSV cell that no spreadsheet runs as a formula."""
    s = "" if v is None else str(v)
    s = "".join(ch if ch.isprintable() or ch == " " else " " for ch in s)
    if s.lstrip(" ").startswith(_FORMULA_START) or s.startswith(_FORMULA_START):
        s = "'" + s
    return s


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def safe_name(student: str) -> str:
    s = re.sub(r"[^\w.-]+", "_", str(student).strip(), flags=re.UNICODE).strip("._")
    return s[:80] or "student"


# ---- roster --------------------------------------------------------------------------------------

_COLS = {"student": ("student", "student_id", "id", "sid", "学号", "学生", "学生编号"),
         "file": ("file", "filename", "submission", "文件", "文件名"),
         "name": ("name", "full name", "姓名", "名字"),
         "email": ("email", "e-mail", "邮箱", "电子邮件")}


def read_roster(path) -> list[dict]:
    """Rows {student, file, name, email} of a roster CSV (UTF-8, BOM or not; header required).

    The student id column is required (student / id / sid / 学号); file (file / 文件) maps a row
    to a submission by file name; name and email are carried into the exports.
    """
    p = Path(path)
    text = p.read_bytes().decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise ValueError(f"roster {p} is empty")
    header = [h.strip().casefold() for h in rows[0]]
    where = {}
    for key, names in _COLS.items():
        for n in names:
            if n in header:
                where[key] = header.index(n)
                break
    if "student" not in where:
        raise ValueError(f"roster {p}: no student id column (one of: {', '.join(_COLS['student'])}); "
                         f"header is {rows[0]}")
    out, seen = [], set()
    for i, r in enumerate(rows[1:], 2):
        if not any(c.strip() for c in r):
            continue
        get = lambda k: r[where[k]].strip() if k in where and where[k] < len(r) else ""  # noqa: E731
        sid = get("student")
        if not sid:
            raise ValueError(f"roster {p}, line {i}: empty student id")
        if sid.casefold() in seen:
            raise ValueError(f"roster {p}, line {i}: student id {sid!r} appears twice")
        seen.add(sid.casefold())
        out.append({"student": sid, "file": get("file"), "name": get("name"), "email": get("email")})
    return out


def match_roster(paths, rows, fallback):
    """[(path, student id, row or None)] for the submissions, and the rows without a submission.

    A row with a file name matches the submission of that name (or path ending); a row without
    one matches submissions whose path contains the id as a whole word.
    """
    claimed: dict = {}
    for k, p in enumerate(paths):
        s = str(p).replace(os.sep, "/")
        exact = [r for r in rows if r["file"] and (p.name == r["file"] or s == r["file"]
                                                    or s.endswith("/" + r["file"].lstrip("/")))]
        if exact:
            claimed[k] = exact
            continue
        by_id = [r for r in rows if not r["file"] and re.search(
            r"(?<![0-9A-Za-z])" + re.escape(r["student"]) + r"(?![0-9A-Za-z])", s, re.I)]
        if by_id:
            claimed[k] = by_id
    out, used = [], set()
    for k, p in enumerate(paths):
        rows_k = claimed.get(k, [])
        if len(rows_k) == 1:
            out.append((p, rows_k[0]["student"], rows_k[0]))
            used.add(rows_k[0]["student"])
        else:
            out.append((p, fallback(p), None))
    absent = [r for r in rows if r["student"] not in used]
    return out, absent


# ---- progress ------------------------------------------------------------------------------------

class Progress:
    """A progress bar on a terminal; one line per submission otherwise."""

    def __init__(self, n: int, *, enabled: bool, quiet: bool):
        self.n, self.k = n, 0
        self.enabled = enabled and not quiet
        self.tty = self.enabled and sys.stderr.isatty()
        self.t0 = time.monotonic()

    def step(self, res) -> None:
        self.k += 1
        if not self.enabled:
            return
        took = time.monotonic() - self.t0
        if self.tty:
            width = 24
            fill = int(width * self.k / max(self.n, 1))
            eta = took / self.k * (self.n - self.k)
            sys.stderr.write(f"\r批改中 [{'#' * fill}{'.' * (width - fill)}] {self.k}/{self.n}  "
                             f"已用 {_clock(took)}  预计还要 {_clock(eta)}  ")
            sys.stderr.flush()
        else:
            print(f"[{self.k}/{self.n}] 已评分 {res.file or res.student}：{_num(res.total)}/{_num(res.max)}"
                  f"（{res.status}，{res.seconds:.1f} 秒）", flush=True)

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _clock(s: float) -> str:
    s = int(s)
    return f"{s // 60}:{s % 60:02d}"


# ---- the sheet, feedback, exports ----------------------------------------------------------------

class Gradebook:
    def __init__(self, out, settings: dict, *, feedback_dir=None, export=()):
        self.out = Path(out) if out is not None else None
        self.settings = settings
        self.feedback_dir = Path(feedback_dir) if feedback_dir is not None else None
        self.export = tuple(export)
        self._written: dict = {}

    def where(self) -> str:
        parts = [f"成绩表：{self.out}（Excel 可直接打开）、{self.out.with_suffix('.json')}"]
        if self.feedback_dir is not None:
            parts.append(f"每位学生的反馈：{self.feedback_dir}/")
        if "lms" in self.export:
            parts.append(f"导入教学平台：{self.lms_path()}")
        if "gradescope" in self.export:
            parts.append(f"Gradescope 格式：{self.out.parent / 'gradescope'}/")
        return "\n".join(parts)

    def lms_path(self) -> Path:
        return self.out.with_name(self.out.stem + "_lms.csv")

    def write(self, results, *, final: bool) -> None:
        if self.out is None:
            return
        _atomic_write(self.out, sheet_csv(results).encode("utf-8-sig"))
        ids = _ids(results)
        data = {"settings": self.settings, "exercises": ids, "complete": final,
                "submissions": [r.as_dict() for r in results]}
        _atomic_write(self.out.with_suffix(".json"),
                      (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))
        names = _file_names(results)
        if self.feedback_dir is not None:
            for r, name in zip(results, names):
                if r.max_points or r.status != "未评分（已中断）":
                    self._once(self.feedback_dir / f"{name}.md", feedback_text(r))
        if "lms" in self.export:
            _atomic_write(self.lms_path(), lms_csv(results).encode("utf-8-sig"))
        if "gradescope" in self.export:
            for r, name in zip(results, names):
                if r.max_points:
                    self._once(self.out.parent / "gradescope" / name / "results.json",
                               json.dumps(gradescope_result(r), ensure_ascii=False, indent=1) + "\n")

    def _once(self, path: Path, text: str) -> None:
        if self._written.get(path) != text:
            _atomic_write(path, text.encode("utf-8"))
            self._written[path] = text


def _file_names(results) -> list[str]:
    """One file name per result: the student id, plus the submission's name when a student has
    several submissions (several chapters) in one run."""
    from collections import Counter
    count = Counter(safe_name(r.student).casefold() for r in results)
    out, used = [], set()
    for r in results:
        base = safe_name(r.student)
        name = base if count[base.casefold()] == 1 else f"{base}_{safe_name(Path(r.file).stem) if r.file else 'none'}"
        k, n = name, 2
        while k.casefold() in used:
            k, n = f"{name}_{n}", n + 1
        used.add(k.casefold())
        out.append(k)
    return out


def _ids(results) -> list:
    from ._batch import _id_key
    return sorted({i for r in results for i in r.max_points}, key=_id_key)


def sheet_csv(results) -> str:
    """file, student[, name, email], total, max, one column per exercise, status, notes."""
    ids = _ids(results)
    people = any(r.name or r.email for r in results)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["file", "student", *(["name", "email"] if people else []), "total", "max", *ids,
                "status", "notes"])
    for r in results:
        w.writerow([safe_cell(r.file), safe_cell(r.student),
                    *([safe_cell(r.name), safe_cell(r.email)] if people else []),
                    _num(r.total), _num(r.max),
                    *[_num(r.scores.get(i, 0.0)) if i in r.max_points else "" for i in ids],
                    safe_cell(r.status), safe_cell("；".join(r.notes))])
    return buf.getvalue()


def lms_csv(results) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["SID", "Name", "Email", "Score", "Max Score", "Status"])
    for r in results:
        w.writerow([safe_cell(r.student), safe_cell(r.name), safe_cell(r.email), _num(r.total),
                    _num(r.max), safe_cell(r.status)])
    return buf.getvalue()


def gradescope_result(r) -> dict:
    """Gradescope autograder results.json for one submission."""
    tests = [{"name": f"练习 {i}", "number": i, "score": r.scores.get(i, 0.0), "max_score": r.max_points[i],
              "output": f"{r.messages.get(i, '')}\n要求的形式：{r.forms.get(i, '')}".strip(),
              "visibility": "visible"} for i in _ids([r])]
    return {"score": r.total, "output": f"状态：{r.status}" + (f"；{'；'.join(r.notes)}" if r.notes else ""),
            "tests": tests}


def feedback_text(r) -> str:
    """The student's feedback file (Markdown, Chinese): per question the score, the hint and the
    expected form. Only the student's own results: no expected value, no other student."""
    chaps = "、".join(f"第 {c} 章" for c in r.chapters) or "练习"
    lines = [f"# {chaps}练习批改结果：{r.student}", "",
             f"- 总分：{_num(r.total)} / {_num(r.max)}", f"- 状态：{r.status}"]
    if r.notes:
        lines.append(f"- 说明：{'；'.join(r.notes)}")
    if r.variant:
        lines.append("- 你的作业用的是你自己的一组题目参数；评分按你的那组数计算。")
    lines.append("")
    for i in _ids([r]):
        mark = "✅" if r.scores.get(i, 0.0) > 0 else "❌"
        lines += [f"## 练习 {i}：{_num(r.scores.get(i, 0.0))} / {_num(r.max_points[i])} 分 {mark}", "",
                  f"反馈：{r.messages.get(i, '') or '（没有读到答案）'}", "",
                  f"要求的形式：{r.forms.get(i, '')}", ""]
        src = r.sources.get(i)
        if src == "final":
            lines += ["（这道题没有找到运行过的 check 那一格，按 notebook 最后的值评分。）", ""]
    return "\n".join(lines).rstrip() + "\n"


def summary_table(results) -> str:
    """A plain-text table in Chinese: student, score, status."""
    if not results:
        return "没有要评分的文件。"
    rows = [("学生", "得分", "状态", "说明")]
    for r in results:
        rows.append((r.student, f"{_num(r.total)}/{_num(r.max)}", r.status, "；".join(r.notes)[:60]))

    def width(s):
        return sum(2 if ord(ch) > 0x2E7F else 1 for ch in s)

    cols = [max(width(row[k]) for row in rows) for k in range(3)]
    lines = []
    for row in rows:
        cells = [row[k] + " " * (cols[k] - width(row[k])) for k in range(3)]
        lines.append("  ".join(cells + [row[3]]).rstrip())
    ok = sum(1 for r in results if r.status == "完成")
    lines.append(f"共 {len(results)} 份，{ok} 份顺利完成。")
    return "\n".join(lines)
