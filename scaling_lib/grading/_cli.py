"""``python -m scaling_lib.grading`` (also ``scaling-grade``): strip | secret | variants | grade."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scaling_lib.grading",
                                 description="Student copies, per-student variants and batch grading "
                                             "for 如何扩展你的模型.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("strip", help="exercises/*.ipynb -> exercises/student/*.ipynb")
    s.add_argument("--src", default="exercises")
    s.add_argument("--out", default="exercises/student")
    s.add_argument("--check", action="store_true", help="write nothing; exit 1 if a copy is stale")

    k = sub.add_parser("secret", help="write a new random course secret (for per-student variants)")
    k.add_argument("file", help="where to write it (must not exist)")

    v = sub.add_parser("variants", help="one copy of the exercises per student, with that student's numbers")
    v.add_argument("--secret-file", required=True, help="the course secret (see: secret)")
    v.add_argument("--students", required=True,
                   help="a roster CSV (student id column: student/id/sid/学号) or a text file, one id per line")
    v.add_argument("--out", default="variants", help="folder: OUT/<student id>/NN_name.ipynb")
    v.add_argument("--src", default="exercises", help="reference notebooks")
    v.add_argument("--chapter", nargs="*", default=None, help="chapters or notebook names (default: all)")
    v.add_argument("--with-solutions", action="store_true", help=argparse.SUPPRESS)

    c = sub.add_parser("copies", help="per varied exercise: how often a classmate's answer passes")
    c.add_argument("--chapter", type=int, nargs="*", default=None, help="chapters (default: all)")
    c.add_argument("--pairs", type=int, default=300, help="pairs of students sampled per exercise")

    g = sub.add_parser("grade", help="grade submitted notebooks -> gradebook (CSV, JSON, feedback)")
    g.add_argument("files", nargs="+", help="submitted notebooks (a folder: the notebooks in it)")
    g.add_argument("--out", default="scores.csv", help="CSV score sheet; the JSON and feedback/ go beside it")
    g.add_argument("--timeout-cell", type=float, default=30, help="seconds per cell (default 30)")
    g.add_argument("--timeout-notebook", type=float, default=300, help="seconds per submission (default 300)")
    g.add_argument("--memory-mb", type=int, default=2048,
                   help="memory limit of each submission's process tree (default 2048; 0 = none)")
    g.add_argument("--jobs", type=int, default=None, help="submissions graded at once (default: cores - 1)")
    g.add_argument("--chapter", type=int, default=None,
                   help="grade against this chapter's exercises (default: from the notebook)")
    g.add_argument("--seed", type=int, default=None, help="seed for function-exercise inputs")
    g.add_argument("--roster", default=None, help="CSV mapping submissions to student ids (and names, emails)")
    g.add_argument("--secret-file", default=None, help="course secret: grade per-student variants")
    g.add_argument("--no-feedback", action="store_true", help="do not write feedback/<student>.md")
    g.add_argument("--export", nargs="*", choices=("lms", "gradescope"), default=[],
                   help="also write OUT_lms.csv and/or gradescope/<student>/results.json")
    g.add_argument("--isolation", choices=("auto", "bwrap", "process"), default="auto",
                   help="sandbox per submission (default auto: bubblewrap when it works)")
    g.add_argument("--require-sandbox", action="store_true", help="refuse to grade without bubblewrap")
    g.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)

    if a.cmd == "strip":
        from ._strip import StripError, strip
        try:
            res = strip(a.src, a.out, check_only=a.check)
        except (StripError, FileNotFoundError) as e:
            print(f"错误：{e}", file=sys.stderr)
            return 2
        for line in res:
            print(line if a.check else f"已生成 {line}")
        if a.check and res:
            return 1
        if not res:
            print("学生版 notebook 都是最新的。")
        return 0

    if a.cmd == "secret":
        p = Path(a.file)
        if p.exists():
            print(f"错误：{p} 已经存在；不覆盖（换掉密钥，每位学生的题目都会变）", file=sys.stderr)
            return 2
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        print(f"已生成课程密钥 {p}（只有你能读；发作业和批改都要用同一个，别放进作业文件夹）")
        return 0

    if a.cmd == "variants":
        from ._batch import _load_secret
        from ._report import read_roster
        from ._strip import StripError, make_variants
        try:
            secret = _load_secret(a.secret_file)
            text = Path(a.students).read_bytes().decode("utf-8-sig")
            if "," in text.splitlines()[0] if text.strip() else False:
                students = [r["student"] for r in read_roster(a.students)]
            else:
                students = [line.strip() for line in text.splitlines() if line.strip()]
            written = make_variants(secret, students, a.src, a.out, names=a.chapter,
                                    with_solutions=a.with_solutions)
        except (StripError, ValueError, FileNotFoundError) as e:
            print(f"错误：{e}", file=sys.stderr)
            return 2
        print(f"已为 {len(students)} 位学生生成 {len(written)} 份作业：{a.out}/<学号>/")
        return 0

    if a.cmd == "copies":
        from ._copies import report
        try:
            print(report(a.chapter, pairs=a.pairs))
        except (TypeError, ValueError) as e:
            print(f"错误：{e}", file=sys.stderr)
            return 2
        return 0

    if a.timeout_cell <= 0 or a.timeout_notebook <= 0 or (a.jobs is not None and a.jobs < 1) or a.memory_mb < 0:
        ap.error("--jobs, --timeout-cell and --timeout-notebook must be positive, --memory-mb >= 0")
    from ._batch import grade
    try:
        grade(a.files, a.out, timeout_cell=a.timeout_cell, timeout_notebook=a.timeout_notebook,
              memory_mb=a.memory_mb, jobs=a.jobs, chapter=a.chapter, seed=a.seed, quiet=a.quiet,
              roster=a.roster, secret=a.secret_file, feedback=None if a.no_feedback else "default",
              export=a.export, isolation=a.isolation, require_sandbox=a.require_sandbox)
    except KeyboardInterrupt:
        return 130
    except (RuntimeError, ValueError) as e:
        print(f"错误：{e}", file=sys.stderr)
        return 2
    return 0
