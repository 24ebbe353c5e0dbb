"""Import budget, notebook freshness, widget budgets, docstring book labels."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_is_cheap_and_jax_free():
    # CPU seconds of the import (wall time on a loaded machine measures the queue for the cores)
    code = ("import time, sys; t=time.process_time(); import scaling_lib; dt=time.process_time()-t;"
            "print(dt, 'jax' in sys.modules, 'ipywidgets' in sys.modules, 'nbclient' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert float(out[0]) < 0.5, f"import scaling_lib took {out[0]} s"
    assert out[1:] == ["False", "False", "False"], "import scaling_lib pulled in jax/ipywidgets/nbclient"


def test_notebooks_fresh_and_executed():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "nbtool.py"), "check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_notebook_has_outputs_and_no_errors():
    for nb_path in sorted((ROOT / "chapters").glob("*.ipynb")) + sorted((ROOT / "exercises").glob("*.ipynb")):
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        for c in nb["cells"]:
            if c["cell_type"] != "code" or not "".join(c["source"]).strip():
                continue
            assert c.get("execution_count") is not None, f"{nb_path.name}: unexecuted cell"
            for o in c.get("outputs", []):
                assert o.get("output_type") != "error", f"{nb_path.name}: error output"
                assert o.get("name") != "stderr", f"{nb_path.name}: stderr output {o.get('text', '')[:200]}"


def test_roofline_widget_updates_fast():
    from scaling_lib.widgets import roofline as rw, time_update
    assert time_update(rw.draw_roofline, chip="H100", B=512) < 0.1
    assert time_update(rw.draw_batch, chip="TPU v6e") < 0.1


def test_docstring_book_labels_exist():
    """Every 'Book: sec-..'/'eq-..'/'ex-..'/'fig-..' label named in a docstring is defined in a source."""
    labels = set()
    for src in (ROOT / "src").rglob("*.md"):
        text = src.read_text(encoding="utf-8")
        labels |= set(re.findall(r"^\((sec-[\w-]+)\)=", text, re.M))
        labels |= set(re.findall(r"\$\$ \((eq-[\w-]+)\)", text))
        labels |= set(re.findall(r":label: (ex-[\w-]+)", text))
        labels |= set(re.findall(r":(?:name|label): (fig-[\w-]+)", text))
    missing = []
    for py in (ROOT / "scaling_lib").rglob("*.py"):
        for m in re.finditer(r"Book: ([^\n]*)", py.read_text(encoding="utf-8")):
            for lab in re.findall(r"\b((?:sec|eq|ex|fig)-\d\d(?:-[a-z0-9]+)+)\b(?!-)", m.group(1)):
                if lab not in labels:
                    missing.append(f"{py.name}: {lab}")
    assert not missing, "docstrings name labels that no chapter defines: " + ", ".join(sorted(set(missing)))
