"""The full book build (warnings are errors) and checks of the produced HTML.

Runs `jupyter-book build` into a temporary folder, so it also proves that a build from a clean
state works. Marked slow; `make test` runs it last.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def test_build_has_no_sphinx_warnings(site):
    _, log = site
    warnings = [l for l in log.splitlines() if "WARNING" in l and "Kernel is running over TCP" not in l]
    assert not warnings, "\n".join(warnings[:20])


def _pages(html_dir):
    return [p for p in html_dir.rglob("*.html") if "_static" not in p.parts and p.name not in ("genindex.html", "search.html")]


def test_pages_exist(site):
    html_dir, _ = site
    for name in ["chapters/00_intro.html", "chapters/01_roofline.html", "exercises/01_roofline.html", "index.html"]:
        assert (html_dir / name).exists(), name


BAD = [
    (re.compile(r'class="[^"]*\btraceback\b'), "error traceback in output"),
    (re.compile(r'class="[^"]*output stderr'), "stderr output"),
    (re.compile(r"(User|Deprecation|Runtime|Future)Warning"), "Python warning in page"),
    (re.compile(r"Glyph \d+ .*missing from"), "missing-glyph warning"),
    (re.compile(r"No key .* found in glue"), "missing glue key"),
    (re.compile(r"Error displaying widget"), "widget error"),
]


def test_no_error_outputs_or_warnings_in_pages(site):
    html_dir, _ = site
    problems = []
    for p in _pages(html_dir):
        text = p.read_text(encoding="utf-8", errors="replace")
        for rx, what in BAD:
            if rx.search(text):
                problems.append(f"{p.relative_to(html_dir)}: {what}")
    assert not problems, "\n".join(problems)


def test_site_is_offline_and_chinese(site):
    html_dir, _ = site
    page = (html_dir / "chapters" / "01_roofline.html").read_text(encoding="utf-8")
    assert 'lang="zh-CN"' in page or "lang=\"zh_CN\"" in page
    assert "_static/offline/mathjax/tex-mml-chtml.js" in page
    # nothing the page loads comes from another host (links to GitHub/Colab are <a>, not loads;
    # sphinx-thebe names its CDN in a config string but loads it only if a reader launches it)
    loads = re.findall(r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="(https?://[^"]+)"', page)
    assert not loads, f"external resources: {loads}"
    assert (html_dir / "_static" / "offline" / "plotly.min.js").exists()
    assert "plotly-graph-div" in page, "the kernel-free roofline figure is missing"
    assert "book-widget-preview" in page, "the static widget previews are missing"
    assert "application/vnd.jupyter.widget-state+json" not in page, "widget state shipped to the page"
    assert "/_static/offline/" in page and "embed-amd.js" not in page and "searchindex.js" not in page


def _search_terms(html_dir):
    import json
    text = (html_dir / "searchindex.js").read_text(encoding="utf-8")
    data = json.loads(text[text.index("(") + 1:text.rindex(")")])
    return data["terms"]


def test_chinese_search_index(site):
    html_dir, _ = site
    terms = _search_terms(html_dir)
    for term in ["算术强度", "流水线并行", "强扩展", "批次大小"]:
        assert term in terms, f"search index lacks {term}"


def test_exercise_colab_button_points_at_student_copy(site):
    html_dir, _ = site
    page = (html_dir / "exercises" / "01_roofline.html").read_text(encoding="utf-8")
    assert "colab.research.google.com/github/" in page
    assert "/exercises/student/01_roofline.ipynb" in page
