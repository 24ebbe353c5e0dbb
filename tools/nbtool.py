"""Notebook tooling for the book: MyST-markdown sources -> executed .ipynb.

Sources live in ``src/chapters/*.md`` and ``src/exercises/*.md`` (jupytext MyST format, easy to
write and to review). ``build`` turns each into ``chapters/*.ipynb`` / ``exercises/*.ipynb`` with the
hidden setup cell prepended (generated from ``_config.yml``, so the repository URL lives in one
place) and normalised metadata; ``execute`` runs them in place with nbclient (storing outputs and
widget state, which the website and nbval use); ``check`` verifies that every notebook matches
its source and is fully executed.

    python tools/nbtool.py build   [NAMES...]     # sources -> notebooks (outputs kept if unchanged)
    python tools/nbtool.py execute [NAMES...]     # run notebooks in place; prints seconds per notebook
    python tools/nbtool.py check                  # stale or unexecuted notebooks -> exit 1
NAMES are stems like 01_roofline (chapters and exercises of that name) or paths.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("chapters", "exercises", "appendix")


def repo_info() -> tuple[str, str]:
    """(repository url, branch) from _config.yml: the one place they are set."""
    text = (ROOT / "_config.yml").read_text(encoding="utf-8")
    m = re.search(r"^repository:\s*\n((?:[ \t]+.*\n)+)", text, re.M)
    block = m.group(1) if m else ""
    url = re.search(r"url:\s*(\S+)", block)
    branch = re.search(r"branch:\s*(\S+)", block)
    if not url:
        raise SystemExit("_config.yml has no repository.url")
    return url.group(1), (branch.group(1) if branch else "main")


SETUP_TEMPLATE = '''\
# 准备单元（网页上隐藏）：在 Colab 里安装本书的库，然后设定设备和绘图风格。
import os, sys, subprocess
if "google.colab" in sys.modules:  # Colab: install scaling_lib only, keep Colab's jax/ipywidgets
    _spec = os.environ.get("SCALING_LIB_SPEC", "scaling_lib @ git+{url}@{branch}")
    _pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", _spec],
                          capture_output=True, text=True)
    if _pip.returncode != 0:
        _lines = [l for l in (_pip.stderr + _pip.stdout).splitlines() if l.strip() and "[notice]" not in l]
        _last = ([l for l in _lines if l.startswith("ERROR")] or _lines or ["（pip 没有输出）"])[-1]
        raise SystemExit(
            f"没能安装本书的库 scaling_lib（来源：{{_spec}}）。pip 的最后一行：{{_last}}\\n"
            "请检查：1) Colab 能否联网；2) 仓库地址和分支是否存在（{url}，分支 {branch}）。"
            "网络恢复后，选“运行时 → 重启会话”，再从第一格重新运行。")
from scaling_lib import devices, plots
devices.setup(8)  # 8 simulated CPU devices beside any TPU/GPU; must run before `import jax`
plots.set_style()'''


def setup_cell_source() -> str:
    url, branch = repo_info()
    return SETUP_TEMPLATE.format(url=url, branch=branch)


def sources(names=None):
    out = []
    for kind in KINDS:
        for p in sorted((ROOT / "src" / kind).glob("*.md")):
            if names and p.stem not in names and str(p) not in names:
                continue
            out.append((kind, p))
    return out


def target_of(kind: str, src: Path) -> Path:
    return ROOT / kind / (src.stem + ".ipynb")


def _cell_key(cell) -> tuple:
    src = cell.source if isinstance(cell.source, str) else "".join(cell.source)
    tags = tuple(cell.get("metadata", {}).get("tags", []))
    return (cell.cell_type, src, tags)


def render(kind: str, src: Path):
    """The notebook a source should produce (without outputs)."""
    import jupytext
    import nbformat

    nb = jupytext.read(src)
    setup = nbformat.v4.new_code_cell(setup_cell_source())
    setup.metadata["tags"] = ["remove-cell"]
    cells = [setup]
    for c in nb.cells:
        md = {k: v for k, v in c.get("metadata", {}).items() if k in ("tags",)}
        if c.cell_type == "code":
            new = nbformat.v4.new_code_cell(c.source)
        elif c.cell_type == "markdown":
            new = nbformat.v4.new_markdown_cell(c.source)
        else:
            new = nbformat.v4.new_raw_cell(c.source)
        if md:
            new.metadata.update(md)
        cells.append(new)
    out = nbformat.v4.new_notebook(cells=cells)
    out.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "accelerator": "TPU",
        "colab": {"gpuType": "V5E1", "provenance": []},
    }
    for i, c in enumerate(out.cells):  # stable ids: diffs stay quiet
        c["id"] = f"c{i:03d}"
    return out


def build(names=None) -> list[Path]:
    """Write notebooks whose source changed; keep outputs of unchanged ones. Returns changed."""
    import nbformat

    changed = []
    for kind, src in sources(names):
        new = render(kind, src)
        tgt = target_of(kind, src)
        if tgt.exists():
            old = nbformat.read(tgt, as_version=4)
            if [_cell_key(c) for c in old.cells] == [_cell_key(c) for c in new.cells] \
                    and old.metadata.get("kernelspec") == new.metadata["kernelspec"]:
                continue
        tgt.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(new, tgt)
        changed.append(tgt)
        print(f"built {tgt.relative_to(ROOT)}")
    return changed


def _env():
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def execute(paths, timeout: int = 300) -> dict:
    """Execute notebooks in place (fresh kernel each, cwd = notebook folder)."""
    import nbformat
    from nbclient import NotebookClient

    os.environ.update(_env())
    times = {}
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        t0 = time.perf_counter()
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(Path(p).parent)}},
                                store_widget_state=True)
        cpu = {"s": 0.0, "cells": []}

        def kernel_cpu(cell_index=None, **_):   # after every cell: CPU seconds of the kernel
            now = _kernel_cpu_seconds(client)
            cpu["cells"].append((cell_index, now - cpu["s"]))
            cpu["s"] = now
        client.on_cell_executed = kernel_cpu
        client.execute()
        dt = time.perf_counter() - t0
        for c in nb.cells:  # drop per-cell timing metadata: quiet diffs
            c.metadata.pop("execution", None)
        nbformat.write(nb, p)
        top = sorted(cpu["cells"], key=lambda c: -c[1])[:3]
        times[str(Path(p).relative_to(ROOT))] = {
            "wall_s": round(dt, 1), "kernel_cpu_s": round(cpu["s"], 1),
            "costliest_cells": [[i, round(c, 1)] for i, c in top]}
        print(f"executed {Path(p).relative_to(ROOT)} in {dt:.1f} s (kernel CPU time {cpu['s']:.1f} s; "
              f"costliest cells: {', '.join(f'#{i} {c:.1f} s' for i, c in top)})", flush=True)
    return times


def _kernel_cpu_seconds(client) -> float:
    """User + system CPU seconds the notebook's kernel (and any child it started) has used so
    far, summed over threads. Unlike wall time it does not grow when other jobs share the cores,
    so it bounds a notebook's time on an idle machine: a kernel that used c CPU seconds needs at
    most about c seconds of wall time once it has a core to itself (less where XLA compiles or
    BLAS runs on both cores)."""
    import psutil
    try:
        proc = psutil.Process(client.km.provisioner.process.pid)
        total = sum(proc.cpu_times()[:2])
        for ch in proc.children(recursive=True):
            try:
                total += sum(ch.cpu_times()[:2])
            except psutil.Error:
                pass
        return total
    except (AttributeError, psutil.Error):
        return float("nan")


def check() -> list[str]:
    """Problems: a notebook missing, stale against its source, or with unexecuted code cells."""
    import nbformat

    problems = []
    for kind, src in sources():
        tgt = target_of(kind, src)
        if not tgt.exists():
            problems.append(f"{tgt.relative_to(ROOT)}: missing (run make execute)")
            continue
        nb = nbformat.read(tgt, as_version=4)
        want = render(kind, src)
        if [_cell_key(c) for c in nb.cells] != [_cell_key(c) for c in want.cells]:
            problems.append(f"{tgt.relative_to(ROOT)}: stale against {src.relative_to(ROOT)} "
                            f"(run make execute)")
        for i, c in enumerate(nb.cells):
            if c.cell_type == "code" and c.source.strip() and c.get("execution_count") is None:
                problems.append(f"{tgt.relative_to(ROOT)}: cell {i} never executed")
                break
            if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.outputs):
                problems.append(f"{tgt.relative_to(ROOT)}: cell {i} has an error output")
                break
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=["build", "execute", "check"])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--all", action="store_true", help="execute all notebooks, not only changed ones")
    ap.add_argument("--timeout", type=int, default=300)
    a = ap.parse_args(argv)
    names = set(a.names) or None
    if a.cmd == "build":
        build(names)
    elif a.cmd == "execute":
        changed = build(names)
        if a.all or names:
            paths = [target_of(k, s) for k, s in sources(names)]
        else:
            paths = changed + [target_of(k, s) for k, s in sources()
                               if target_of(k, s) not in changed and _unexecuted(target_of(k, s))]
        times = execute(paths, a.timeout)
        if times:
            report = ROOT / "_build" / "exec_times.json"
            report.parent.mkdir(exist_ok=True)
            old = json.loads(report.read_text()) if report.exists() else {}
            old.update(times)
            report.write_text(json.dumps(old, indent=1, ensure_ascii=False))
    else:
        probs = check()
        for p in probs:
            print(p)
        if probs:
            sys.exit(1)
        print("all notebooks fresh and executed")


def _unexecuted(p: Path) -> bool:
    import nbformat
    nb = nbformat.read(p, as_version=4)
    return any(c.cell_type == "code" and c.source.strip() and c.get("execution_count") is None
               for c in nb.cells)


if __name__ == "__main__":
    main()
