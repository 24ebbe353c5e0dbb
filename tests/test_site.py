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


# ---- website-review.md (issue #15): checks on the written HTML ------------------------------

def _chapter_pages(html_dir):
    return sorted((html_dir / "chapters").glob("*.html"))


def test_every_chapter_with_widgets_has_a_kernel_free_twin(site):
    """H3: a chapter whose explorers are static previews also has at least one plotly figure
    that responds without a kernel."""
    html_dir, _ = site
    lacking = [p.name for p in _chapter_pages(html_dir)
               if "book-widget-preview" in (t := p.read_text(encoding="utf-8")) and "plotly-graph-div" not in t]
    assert not lacking, f"chapters with widgets but no kernel-free figure: {lacking}"


def test_intro_lists_the_real_chapter_titles(site):
    """M12: the reading list in the introduction names each chapter by its title."""
    html_dir, _ = site
    intro = (html_dir / "chapters" / "00_intro.html").read_text(encoding="utf-8")
    links = re.findall(r'<a class="reference internal" href="(\d\d_[a-z_]+)\.html"><span class="doc">([^<]+)</span>'
                       r'|<a class="reference internal" href="(\d\d_[a-z_]+)\.html">([^<]+)</a>', intro)
    checked = 0
    for a, b, c, d in links:
        name, text = (a, b) if a else (c, d)
        if not text.startswith("第"):
            continue
        page = (html_dir / "chapters" / f"{name}.html").read_text(encoding="utf-8")
        title = re.sub(r"<[^>]+>", "", re.search(r"<h1>(.*?)</h1>", page, re.S).group(1)).replace("#", "").strip()
        assert text.strip() == title, f"intro says {text!r}, the chapter is {title!r}"
        checked += 1
    assert checked >= 12, f"only {checked} chapter links checked in the intro"


def test_glossary_defines_terms_without_writer_rules(site):
    """M11: the 说明 column says what a term means; style rules for writers are not there."""
    html_dir, _ = site
    page = (html_dir / "appendix" / "glossary.html").read_text(encoding="utf-8")
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.S)[1:]
    assert len(rows) > 250
    empty, rules = [], []
    for r in rows:
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
        if len(cells) != 4:
            continue
        if not cells[3]:
            empty.append(cells[0])
        if re.search(r"不用“|首注|保留英文|不写 |seed|CANON", cells[3]):
            rules.append(f"{cells[0]}: {cells[3][:40]}")
    assert not empty, f"terms without a definition: {empty[:10]}"
    assert not rules, f"writer rules in the glossary: {rules[:10]}"


def test_cheat_sheet_sources_are_for_readers(site):
    """M10: the hardware page ends with a Chinese sources table, no internal provenance IDs."""
    html_dir, _ = site
    page = (html_dir / "appendix" / "hardware.html").read_text(encoding="utf-8")
    assert "CANON" not in page and "book ch.2 table" not in page
    assert "数据从哪儿来" in page and page.count("原书") >= 5


def test_equations_are_numbered_per_chapter(site):
    """L15: chapter 5's equations read (5.1), (5.2), ... like its exercises."""
    html_dir, _ = site
    page = (html_dir / "chapters" / "05_training.html").read_text(encoding="utf-8")
    nums = re.findall(r'<span class="eqno">\((\d+(?:\.\d+)?)\)', page)
    assert nums, "no numbered equations in chapter 5"
    assert all(n.startswith("5.") for n in nums), nums[:5]
    assert nums[0] == "5.1"


def test_pages_have_footer_attribution_meta_and_chinese_ui(site):
    """L12 (who wrote what, licence), L13 (description for link previews), L3 (UI in Chinese),
    L11 (no duplicate ids from sphinx-exercise), L2 (no colour-emoji check marks): every page."""
    html_dir, _ = site
    bad = []
    pages = [p for p in _pages(html_dir) if p.name != "index.html"]  # index.html: a redirect stub
    assert len(pages) >= 25 and html_dir / "exercises" / "05_training.html" in pages
    for p in pages:
        # the glossary lists the English term "Solution" in a table cell: a term, not a UI string
        t = p.read_text(encoding="utf-8").replace("<td><p>Solution</p></td>", "<td><p>(term)</p></td>")
        if "How to Scale Your Model" not in t.split('<footer', 1)[-1] or "Apache-2.0" not in t:
            bad.append(f"{p.name}: footer lacks the attribution or the licence")
        if '<meta name="description"' not in t or 'property="og:title"' not in t:
            bad.append(f"{p.name}: no description/OpenGraph meta")
        for english in ("Toggle primary sidebar", "Launch interactive content", "Show code cell", ">Solution<",
                        "列印"):
            if english in t:
                bad.append(f"{p.name}: untranslated UI string {english!r}")
        if t.count('id="exercise-content"') or t.count('id="solution-content"'):
            bad.append(f"{p.name}: duplicate sphinx-exercise ids")
        if "✅" in t or "❌" in t:
            bad.append(f"{p.name}: colour emoji check marks")
    assert not bad, "\n".join(bad)


def test_precompressed_assets_and_light_scripts(site):
    """M8: every text asset has a precompressed twin; pages load no fontawesome.js, no widget
    manager, and the search scripts only on search.html."""
    html_dir, _ = site
    missing = [p.relative_to(html_dir).as_posix() for p in html_dir.rglob("*")
               if p.suffix in (".html", ".js", ".css") and p.stat().st_size > 1024
               and "_sources" not in p.parts and not p.with_name(p.name + ".gz").exists()]
    assert not missing, f"no .gz beside: {missing[:10]}"
    page = (html_dir / "chapters" / "02_tpus.html").read_text(encoding="utf-8")
    head = page.split("</head>")[0]
    for heavy in ("fontawesome.js", "searchindex.js", "searchtools.js", "embed-amd.js", "require.js"):
        assert heavy not in page, heavy
    sync = [s for s in re.findall(r"<script ([^>]*)src=\"([^\"]+)\"", head) if "defer" not in s[0] and "async" not in s[0]]
    assert [s[1] for s in sync] == [s[1] for s in sync if "documentation_options" in s[1]], \
        f"render-blocking scripts in <head>: {sync}"
    search = (html_dir / "search.html").read_text(encoding="utf-8")
    assert "searchindex.js" in search


_WIDE = re.compile(r"[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf"
                   r"\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]")


def _misaligned_blocks(text):
    """Runs of 3+ lines laid out as columns (cells split by 2+ spaces, the same count on every line)
    whose column edges line up by characters or by display width while the text before them holds
    a different number of Chinese (double-width) characters from line to line: on a web page such
    columns never line up (a CJK glyph is neither one nor exactly two monospace cells wide)."""
    import unicodedata

    def width(s):
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)

    def cells(line):
        if re.fullmatch(r"[-+|: ]*[+|][-+|: ]*", line):  # a pipe table's rule line: cells between + or |
            return [(m.start(), m.end()) for m in re.finditer(r"[^|+]+", line)]
        if "|" in line:  # a pipe table's row: cells between the bars
            return [(m.start(), m.end()) for m in re.finditer(r"[^|]+", line)]
        return [(m.start(), m.end()) for m in re.finditer(r"\S+(?: \S+)*", line)]

    rows = [l.rstrip() for l in text.splitlines() if l.strip()]
    out, i = [], 0
    while i < len(rows):
        n, j = len(cells(rows[i])), i
        while j < len(rows) and len(cells(rows[j])) == n:
            j += 1
        block = rows[i:j]
        spans = [cells(r) for r in block]
        if n >= 2 and len(block) >= 3:
            edges = [(k, e) for k in range(n) for e in (0, 1) if (k, e) != (0, 0)]
            for k, e in edges:
                pos = [s[k][e] for s in spans]
                aligned = len(set(pos)) == 1 or len({width(r[:p]) for r, p in zip(block, pos)}) == 1
                if aligned and len({len(_WIDE.findall(r[:p])) for r, p in zip(block, pos)}) > 1:
                    out.append(block)
                    break
        i = max(j, i + 1)
    return out


def test_misaligned_block_detector():
    ok = "\n".join(["dp       每设备输入   57,792 字节", "fsdp     每设备输入    7,616 字节", "tp       每设备输入   22,400 字节"])
    assert not _misaligned_blocks(ok)
    # what chapters 12 and 3 printed: padded by characters (Python's format), by display width
    chars = "\n".join(f"{a:12s}{b:>10s}" for a, b in [("节点类型", "每节点 GPU"), ("DGX H100", "8"), ("GB200 NVL72", "72")])
    assert _misaligned_blocks(chars)
    keys = "\n".join(f"{k:<9}  {v}" for k, v in [("矩阵乘法", "A"), ("情形", "B"), ("AllGather", "C")])
    assert _misaligned_blocks(keys)
    from scaling_lib.book import table
    by_width = repr(table([("节点类型", "每节点 GPU"), ("DGX H100", "8"), ("GB200 NVL72", "72")]))
    assert _misaligned_blocks(by_width)  # aligned in a terminal, not on a web page: use the HTML form
    pipes = "\n".join(["        | ICI 链路数 | PCIe 每芯片", "--------+---------+------------", "TPU v3  | 4       | 1.6e10",
                       "TPU v4p | 6       | 1.6e10"])   # hardware.SpecTable's text form, printed
    assert _misaligned_blocks(pipes)


def test_printed_tables_with_chinese_are_html_tables(site):
    """M6: a table whose rows mix Chinese and ASCII is an HTML table (scaling_lib.book.table or an
    object's _repr_html_), not print() columns padded by characters, which misalign on the page."""
    import html as _html
    html_dir, _ = site
    bad = []
    for p in _pages(html_dir):
        text = p.read_text(encoding="utf-8")
        for m in re.finditer(r"<pre[^>]*>(.*?)</pre>", text, re.S):
            before = text[:m.start()]
            if before.rfind('class="cell_output') <= before.rfind('class="cell_input'):
                continue  # code, not output
            for block in _misaligned_blocks(_html.unescape(re.sub(r"<[^>]+>", "", m.group(1)))):
                bad.append(f"{p.relative_to(html_dir)}:\n    " + "\n    ".join(block[:3]))
    assert not bad, "columns that will not line up:\n" + "\n".join(bad)
