"""The committed student notebooks (exercises/student/) match what `strip` makes from the
reference notebooks (DESIGN.md §5: "a test fails if it is stale"), and hold no solutions."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

from scaling_lib import grading  # noqa: E402
from scaling_lib.exercises import registry  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REFS = sorted((ROOT / "exercises").glob("*.ipynb"))


def test_there_are_reference_exercise_notebooks():
    assert REFS, "exercises/*.ipynb: no reference exercise notebooks"


def test_student_copies_are_fresh():
    stale = grading.strip("exercises", "exercises/student", check_only=True)
    assert stale == [], "\n".join(stale) + "\nrun: python -m scaling_lib.grading strip"


def test_strip_check_cli_agrees():
    r = subprocess.run([sys.executable, "-m", "scaling_lib.grading", "strip", "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("ref", REFS, ids=[p.stem for p in REFS])
def test_student_copy_has_no_solutions(ref):
    ref_nb = nbformat.read(ref, as_version=4)
    st_path = ROOT / "exercises" / "student" / ref.name
    assert st_path.exists(), f"{st_path.relative_to(ROOT)} missing: run python -m scaling_lib.grading strip"
    st = nbformat.read(st_path, as_version=4)
    assert st.metadata == ref_nb.metadata  # the Colab accelerator request travels along
    text = "\n".join(c.source for c in st.cells)
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert not re.search(r"\{solution(-start|-end)?\}", text)
    for c in st.cells:
        if c.cell_type == "code":
            assert c.outputs == [] and c.execution_count is None
    code = "\n".join(c.source for c in ref_nb.cells if c.cell_type == "code")
    ids = re.findall(r"""\bcheck\(\s*["']([^"']+)["']""", code)
    assert ids, f"{ref.name}: no check() calls"
    reg = registry()
    for i in ids:
        ex = reg[i]
        stub = f"def {ex.var}(" if ex.kind == "function" else f"{ex.var} = ...  # 在这里填入你的答案"
        assert stub in text, (ref.name, i, stub)
    # the same exercises, in the same order, as the reference
    st_code = "\n".join(c.source for c in st.cells if c.cell_type == "code")
    assert re.findall(r"""\bcheck\(\s*["']([^"']+)["']""", st_code) == ids
