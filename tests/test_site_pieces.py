"""The website's build pieces, without building the site (fast; issue #15).

Static widget previews (scaling_lib._mystnb), the kernel-free twins (one definition, two forms:
scaling_lib.widgets.twin/plot_traces), and the Sphinx helpers in _ext/ (plotly bundle choice,
icons, equation numbers, the student stub shown on exercise pages).
"""
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))


# ---- static widget previews (H3) -------------------------------------------------------------

def _state():
    return {
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_row", "IPY_MODEL_out"]}},
        "row": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_dd", "IPY_MODEL_sl",
                                                                  "IPY_MODEL_log", "IPY_MODEL_tb"]}},
        "dd": {"model_name": "DropdownModel", "state": {"description": "芯片", "index": 1,
                                                        "_options_labels": ["TPU v5e", "TPU v5p"]}},
        "sl": {"model_name": "IntSliderModel", "state": {"description": "D", "min": 256, "max": 4096,
                                                         "step": 256, "value": 1024, "readout_format": "d"}},
        "log": {"model_name": "FloatLogSliderModel", "state": {"description": "字节", "min": 2, "max": 11,
                                                               "base": 10, "step": 0.25, "value": 1e8,
                                                               "readout_format": ".3g"}},
        "tb": {"model_name": "ToggleButtonsModel", "state": {"description": "", "index": 0,
                                                             "_options_labels": ["预填充", "解码"]}},
        "out": {"model_name": "OutputModel", "state": {"outputs": [
            {"output_type": "stream", "name": "stdout", "text": "结论：计算受限\n"}]}},
        "lay": {"model_name": "LayoutModel", "state": {}},
    }


def test_widget_preview_controls_are_disabled_and_show_their_values():
    from scaling_lib._mystnb import walk
    controls, outputs = [], []
    walk("box", _state(), controls, outputs)
    assert len(controls) == 4
    html = "".join(controls)
    assert html.count("disabled") == 3  # select, two ranges (toggle buttons are spans)
    assert "<option selected>TPU v5p</option>" in html
    assert 'value="1024"' in html and ">1024<" in html
    assert 'value="8.0"' in html and ">1e+08<" in html  # log slider: exponent on the rail, value shown
    assert 'book-toggle selected">预填充' in html
    assert outputs == [{"output_type": "stream", "name": "stdout", "text": "结论：计算受限\n"}]


def test_unknown_widget_model_is_an_error_not_an_empty_box():
    from scaling_lib._mystnb import UnknownWidget, walk
    state = _state()
    state["row"]["state"]["children"].append("IPY_MODEL_odd")
    state["odd"] = {"model_name": "ColorPickerModel", "state": {}}
    with pytest.raises(UnknownWidget, match="ColorPickerModel"):
        walk("box", state, [], [])
    with pytest.raises(UnknownWidget, match="not in the notebook"):
        walk("missing", state, [], [])


def test_plotly_div_names_its_trace_types_and_keeps_frames():
    from scaling_lib._mystnb import _plotly_html
    fig = {"data": [{"type": "scatter", "y": [1]}], "layout": {"height": 300},
           "frames": [{"name": "f1", "data": [{"type": "bar", "y": [2]}]}]}
    html = _plotly_html(fig, "d1")
    assert 'data-plotly-types="bar,scatter"' in html
    assert '"name":"f1"' in html and "bookPlotly(\"d1\"" in html
    assert "</script" not in html.split("<script", 1)[1].split("</script>")[0]


# ---- twins: one definition, two forms (H3) ---------------------------------------------------

TWINS = [
    ("roofline", "batch_series", "batch_twin", "chip", {"mode": "bf16（全部）", "D": 4096, "F": 4096, "B_max": 2048},
     ["TPU v5e", "TPU v5p", "TPU v6e", "H100", "B200"]),
    ("transformer", "context_series", "context_twin", "chip", {"group": 8, "phase": "prefill", "seq_len": 8192},
     ["TPU v5e", "TPU v5p", "TPU v6e", "H100", "B200"]),
    ("training", "llama_series", "llama_twin", "log2_batch", {"model": "LLaMA-3-70B", "chip": "TPU v5p"},
     list(range(18, 26))),
]


@pytest.mark.parametrize("module, series, twin_fn, sweep, fixed, values", TWINS)
def test_twin_steps_are_the_explorers_series(module, series, twin_fn, sweep, fixed, values):
    """Each slider step of the website's figure holds exactly the traces the explorer draws."""
    import importlib

    from scaling_lib.interactive import tidy
    import plotly.graph_objects as go

    mod = importlib.import_module(f"scaling_lib.widgets.{module}")
    kw = {"phase": fixed["phase"]} if module == "transformer" else {}
    fig = getattr(mod, twin_fn)(**kw)
    n_per_step = len(fig.data) // len(values)
    assert n_per_step * len(values) == len(fig.data)
    for i, v in enumerate(values):
        want = getattr(mod, series)(**fixed, **{sweep: v})
        ref = tidy(go.Figure([go.Scatter(**{k: t[k] for k in ("x", "y", "name")}) for t in want]))
        got = fig.data[i * n_per_step:(i + 1) * n_per_step]
        assert [t.name for t in got] == [t.name for t in ref.data]
        for g, r in zip(got, ref.data):
            np.testing.assert_allclose(np.asarray(g.y, float), np.asarray(r.y, float), rtol=1e-12)
        step = fig.layout.sliders[0].steps[i]
        assert [j for j, vis in enumerate(step.args[0]["visible"]) if vis] == \
            list(range(i * n_per_step, (i + 1) * n_per_step))


def test_explorer_draws_the_same_series():
    """draw_batch (the widget's figure) plots batch_series' curves, point for point."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scaling_lib.widgets import roofline as rw

    fig, ax = plt.subplots()
    rw.draw_batch("H100", D=8192, F=8192, ax=ax)
    want = rw.batch_series("H100", D=8192, F=8192)
    lines = {l.get_label(): l for l in ax.lines}
    for t in want:
        np.testing.assert_allclose(lines[t["name"]].get_ydata(), np.asarray(t["y"], float))
    plt.close(fig)


def test_cost_twin_marks_the_binding_clock():
    from scaling_lib.widgets import profiling as wp
    programs = {"FFN": (2e12, 1e9, 0.0)}
    tr = wp.cost_series("FFN", "TPU v5e", programs)[0]
    assert tr["type"] == "bar" and len(tr["x"]) == 3
    assert tr["marker"]["color"][int(np.argmax(tr["x"]))] == "#d62728"
    fig = wp.cost_twin(programs)
    assert len(fig.data) == len(wp.CHIPS)
    with pytest.raises(ValueError, match="unknown program"):
        wp.cost_series("nope", "TPU v5e", programs)


def test_twin_rejects_bad_arguments():
    from scaling_lib.widgets import twin
    from scaling_lib.widgets.roofline import batch_series
    kw = dict(title="t", xaxis={}, yaxis={}, slider_label="s")
    with pytest.raises(ValueError, match="at least one"):
        twin(batch_series, "chip", [], **kw)
    with pytest.raises(ValueError, match="labels"):
        twin(batch_series, "chip", ["H100"], labels=["a", "b"], **kw)
    with pytest.raises(ValueError, match="both swept and fixed"):
        twin(batch_series, "chip", ["H100"], fixed={"chip": "H100"}, **kw)


# ---- Sphinx helpers ---------------------------------------------------------------------------

def test_plotly_bundle_is_the_smallest_that_draws_the_page():
    import book_ext
    assert book_ext.plotly_bundle({"scatter", "bar"}).endswith("plotly-basic.min.js")
    assert book_ext.plotly_bundle({"scatter", "heatmap"}).endswith("plotly.min.js")
    assert book_ext.plotly_bundle({"unknown"}).endswith("plotly.min.js")


def test_icons_css_has_exactly_the_icons_used():
    import book_assets as ba
    table = ba.icon_table(ba.fontawesome_js().read_text(encoding="utf-8"))
    pages = ['<i class="fa-solid fa-bars"></i><i class="fab fa-github"></i>'
             '<i class="theme-switch fa-solid fa-sun fa-lg"></i>']
    used = ba.used_icons(pages)
    assert used == {("solid", "bars"), ("brands", "github"), ("solid", "sun")}
    css = ba.icons_css(used, table)
    assert css.count("--book-icon:url(") == 3 and "i.fab.fa-github" in css
    with pytest.raises(RuntimeError, match="no-such-icon"):
        ba.icons_css({("solid", "no-such-icon")}, table)


def test_icon_codepoints_skip_the_fa_table():
    import book_assets as ba
    css = ['.fa-bars:before{content:"\\f0c9"}', '.admonition-title:after{content:"\\f303"}',
           ':root{--pst-icon-bell:"\uf0f3"}']
    assert ba.icon_codepoints(css) == {0xF303, 0xF0F3}


def test_equation_numbers_are_per_chapter():
    import book_ext

    class Env:
        toc_fignumbers = {"chapters/05_training": {"displaymath": {"eq-a": (70,), "eq-b": (68,)}},
                          "appendix/notation": {"displaymath": {"eq-c": (3,)}}}
    book_ext._equation_numbers(None, Env)
    assert Env.toc_fignumbers["chapters/05_training"]["displaymath"] == {"eq-b": (5, 1), "eq-a": (5, 2)}
    assert Env.toc_fignumbers["appendix/notation"]["displaymath"] == {"eq-c": (3,)}


def test_exercise_page_shows_the_student_stub():
    import book_exercises
    # exercise 1.2 asks for v6e's ICI critical intensity into `i_crit_ici` (the student copy's stub)
    src = '### BEGIN SOLUTION\ni_crit_ici = 9.2e14 / 9e10\n### END SOLUTION\ncheck("1.2", i_crit_ici)\n'
    stub = book_exercises.student_stub(src)
    assert "9.2e14" not in stub and "BEGIN SOLUTION" not in stub
    assert "i_crit_ici = ..." in stub and 'check("1.2", i_crit_ici)' in stub


# ---- figures the review found misleading, in the chapter sources ---------------------------------

def _cell_with(src_name, marker):
    text = (ROOT / "src" / "chapters" / src_name).read_text(encoding="utf-8")
    cells = text.split("```{code-cell}")
    hits = [c.split("\n```", 1)[0] for c in cells[1:] if marker in c.split("\n```", 1)[0]]
    assert len(hits) == 1, f"{src_name}: {len(hits)} code cells draw {marker!r}"
    return hits[0]


def test_chapter4_critical_lines_are_named_in_the_legend():
    """L7: the v5e and H100 critical-intensity labels overlapped on their dashed lines; the lines
    are named in the legend instead (no text placed on them)."""
    cell = _cell_with("04_transformers.md", "强度跨过临界线")
    assert "a2.text(" not in cell and "label=f\"{chip} 临界强度" in cell


def test_chapter6_parameter_shares_on_a_linear_axis():
    """L10: stacked bars on a log axis understated attention and embeddings; the parts are 100 %
    bars on a linear axis."""
    cell = _cell_with("06_applied_training.md", "LLaMA 3 的参数都去哪了")
    assert 'set_xscale("log")' not in cell and "set_xscale('log')" not in cell
    assert "ax.set_xlim(0, 100)" in cell and "shares[key] * 100" in cell


def test_leading_aside_becomes_a_side_note():
    """Issue #15 item 5: a paragraph's leading （……。） goes to the margin, the paragraph reads on."""
    from docutils import nodes
    import book_ext

    sec = nodes.section()
    para = nodes.paragraph("", "", nodes.Text("（严格说是 "), nodes.math("", "BF(2D-1)"),
                           nodes.Text(" 次，差别可以忽略。）输出在 MXU 里累加。"))
    sec += para
    assert book_ext.leading_aside(para) == (2, 10)
    tr = book_ext.AsidesToMargin.__new__(book_ext.AsidesToMargin)
    tr.document = sec
    tr.run()
    side, rest = sec.children
    assert isinstance(side, nodes.sidebar) and "margin" in side["classes"]
    assert side.astext() == "严格说是 BF(2D-1) 次，差别可以忽略。"
    assert rest.astext() == "输出在 MXU 里累加。"
    # not an aside: parentheses that close a clause (no full stop inside), or no leading one
    assert book_ext.leading_aside(nodes.paragraph("", "（门控专家是 x）。后文")) is None
    assert book_ext.leading_aside(nodes.paragraph("", "正文（旁注。）")) is None


def test_legends_are_legible_on_a_phone():
    """website-review M2: every legend is at least 9 pt. The size is set once (plots.set_style's
    legend.fontsize); no legend call in the library or a chapter sets a smaller one."""
    import re
    import matplotlib as mpl
    from scaling_lib import plots
    plots.set_style()
    assert mpl.rcParams["legend.fontsize"] >= 9
    small = []
    for p in [*(ROOT / "scaling_lib").rglob("*.py"), *(ROOT / "src" / "chapters").glob("*.md")]:
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            m = re.search(r"legend\(.*fontsize\s*=\s*([0-9.]+)", line)
            if m and float(m.group(1)) < 9:
                small.append(f"{p.relative_to(ROOT)}:{i}")
    assert small == [], small


# Side notes placed for the original's footnotes (issue #15 item 5; /work/notes/ASIDE.md): the
# fewest each chapter must keep. A side note is a top-level paragraph of a chapter's source that
# AsidesToMargin moves to the margin: one whole parenthetical （……）, or a leading （……。）.
SIDE_NOTES = {"00_intro": 2, "01_roofline": 5, "02_tpus": 2, "07_inference": 5, "12_gpus": 3}


def _top_level_paragraphs(src):
    """Markdown paragraphs of a MyST source that sit directly in a section: outside code cells,
    fences and directives (``` or :::), and not list items, headings, tables, labels or equations."""
    import re
    paras, fence, block = [], None, []
    for line in src.split("\n") + [""]:
        s = line.strip()
        m = re.match(r"^(`{3,}|:{3,})", s)
        if fence:
            if m and s == m.group(1) and len(m.group(1)) >= len(fence) and m.group(1)[0] == fence[0]:
                fence = None
            continue
        if m:
            fence = m.group(1)
            block = []
            continue
        if not s:
            if block:
                paras.append(" ".join(block))
            block = []
            continue
        block.append(s)
    skip = re.compile(r"^(#|[-*+] |\d+\. |\||\$\$|\(.*\)=$|---|<)")
    return [p for p in paras if not skip.match(p)]


def _as_docutils_paragraph(text):
    """The paragraph as the transform sees it, near enough: roles ({glue:text}`k`, {ref}`x`) and
    inline code read as a short word, math as its source."""
    import re
    from docutils import nodes
    text = re.sub(r"\{[\w:-]+\}`[^`]*`", "X", text)
    text = re.sub(r"`[^`]*`", "X", text)
    return nodes.paragraph("", text)


def side_notes_in(chapter):
    from docutils import nodes
    import book_ext

    src = (ROOT / "src" / "chapters" / f"{chapter}.md").read_text(encoding="utf-8")
    sec = nodes.section()
    for p in _top_level_paragraphs(src):
        sec += _as_docutils_paragraph(p)
    tr = book_ext.AsidesToMargin.__new__(book_ext.AsidesToMargin)
    tr.document = sec
    tr.run()
    return [s.astext() for s in sec.children if isinstance(s, nodes.sidebar) and "book-aside" in s["classes"]]


@pytest.mark.parametrize("chapter", sorted(SIDE_NOTES))
def test_footnote_side_notes_stay(chapter):
    """Issue #15 item 5: what the original puts in footnotes reads as side notes in these chapters;
    a rewrite that folds one back into the main line (or drops it) fails here."""
    notes = side_notes_in(chapter)
    assert len(notes) >= SIDE_NOTES[chapter], \
        f"{chapter}: {len(notes)} side notes, expected at least {SIDE_NOTES[chapter]}: {notes}"


def test_side_note_counter_sees_what_the_transform_sees():
    """The counter above skips what is not a section-level paragraph (a parenthetical inside a
    list item or an admonition stays in the text on the website too)."""
    src = "\n".join(["# T", "", "（这是一整段的旁注，长度超过三十个字符，应该被挪到页边去，对吧。）", "",
                     "- （列表里的括号不算，哪怕它也很长很长很长很长很长很长很长很长。）", "",
                     ":::{note}", "（提示框里的也不算，哪怕它也很长很长很长很长很长很长很长很长。）", ":::", "",
                     "（前导旁注。）正文接着读。", "", "正文（中间的括号。）不算。"])
    paras = _top_level_paragraphs(src)
    assert len(paras) == 3
    from docutils import nodes
    import book_ext
    sec = nodes.section()
    for p in paras:
        sec += _as_docutils_paragraph(p)
    tr = book_ext.AsidesToMargin.__new__(book_ext.AsidesToMargin)
    tr.document = sec
    tr.run()
    assert sum(isinstance(s, nodes.sidebar) for s in sec.children) == 2
