"""Sphinx hooks for the book's website (see ../shared/TOOLCHAIN.md and review/website-review.md).

Each hook says which review item it serves. Sibling modules: ``book_exercises`` (answers hidden
until asked for, exercise titles), ``book_assets`` (icons, lazy images, precompressed files) and
``book_search`` (the Chinese search index in linear time).
"""
from __future__ import annotations

import os
import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

#: plotly.js bundles served by the site, smallest first, with the trace types each one draws
#: (plotly.js's "basic" partial bundle; the full bundle draws everything).
PLOTLY_BUNDLES = [("offline/plotly-basic.min.js", {"scatter", "bar", "pie"}),
                  ("offline/plotly.min.js", None)]

#: scripts that only wire up behaviour after the page is parsed: loading them with ``defer``
#: takes them off the critical path (they all wait for DOMContentLoaded themselves).
DEFER = ("clipboard.min.js", "copybutton.js", "sphinx-book-theme.js", "togglebutton.js",
         "design-tabs.js", "sphinx_highlight.js", "doctools.js", "translations.js", "book.js")

#: what the widget manager needed; widgets are rendered at build time now (scaling_lib._mystnb)
WIDGET_MANAGER = ("offline/require.js", "offline/widgets-offline.js", "offline/html-manager/embed-amd.js")


def _abs_search_dict(app, config):
    opts = dict(config.html_search_options or {})
    d = opts.get("dict")
    if d and not os.path.isabs(d):
        opts["dict"] = os.path.join(app.srcdir, d)
        config.html_search_options = opts


def plotly_bundle(trace_types: set) -> str:
    """The smallest plotly.js bundle that draws every trace type in ``trace_types``."""
    for path, kinds in PLOTLY_BUNDLES:
        if kinds is None or trace_types <= kinds:
            return path
    raise AssertionError("unreachable: the last bundle draws everything")


def _plotly_js(app, pagename, templatename, context, doctree):
    """M8: plotly.js only on pages with a plotly figure, the light bundle when it suffices."""
    body = context.get("body", "")
    if "plotly-graph-div" not in body:
        return
    types = set()
    for m in re.finditer(r'data-plotly-types="([^"]*)"', body):
        types |= set(filter(None, m.group(1).split(",")))
    if not types:  # a figure drawn by some other path: be safe
        types = {"unknown"}
    app.add_js_file(plotly_bundle(types), priority=200, loading_method="defer")


def _tidy_scripts(app, pagename, templatename, context, doctree):
    """Dedupe (the THEBE_JS_URL SyntaxError, TOOLCHAIN §4), drop what static widgets do not
    need, and defer the scripts that only attach behaviour (M8: nothing blocks first paint)."""
    files = context.get("script_files")
    if not files:
        return
    seen, out = set(), []
    for js in files:
        name = getattr(js, "filename", None) or ""
        attrs = dict(getattr(js, "attributes", {}) or {})
        if attrs.get("type") == "application/vnd.jupyter.widget-state+json":
            continue
        if any(name.endswith(w) for w in WIDGET_MANAGER):
            continue
        key = (name, tuple(sorted(attrs.items())))
        if key in seen:
            continue
        seen.add(key)
        # search.html runs searchtools.js synchronously, which needs doctools.js already there
        if pagename != "search" and name and name.split("?")[0].rsplit("/", 1)[-1] in DEFER \
                and "async" not in attrs and "defer" not in attrs:
            from sphinx.builders.html._assets import _JavaScript
            attrs["defer"] = "defer"
            js = _JavaScript(name, priority=getattr(js, "priority", 500), **attrs)
        out.append(js)
    context["script_files"] = out


def _student_colab(app, pagename, templatename, context, doctree):
    """Exercise pages open the student copy (solutions stripped) in Colab."""
    def fix(buttons):
        for b in buttons or []:
            if isinstance(b, dict):
                url = b.get("url")
                if isinstance(url, str) and "colab" in url and "/exercises/" in url \
                        and "/exercises/student/" not in url:
                    b["url"] = url.replace("/exercises/", "/exercises/student/")
                fix(b.get("buttons"))
    fix(context.get("header_buttons"))


def _page_colab_url(context) -> str | None:
    """The Colab URL of the page's launch button (already the student copy on exercise pages)."""
    def find(buttons):
        for b in buttons or []:
            if isinstance(b, dict):
                url = b.get("url")
                if isinstance(url, str) and "colab.research.google.com" in url:
                    return url
                hit = find(b.get("buttons"))
                if hit:
                    return hit
        return None
    return find(context.get("header_buttons"))


def _colab_badges(app, pagename, templatename, context, doctree):
    """H3: the static widget previews link the page's own notebook in Colab."""
    from scaling_lib._mystnb import COLAB_PLACEHOLDER

    body = context.get("body", "")
    if COLAB_PLACEHOLDER in body:
        url = _page_colab_url(context)
        if url is None:
            raise RuntimeError(f"{pagename}: a static widget preview needs the page's Colab link "
                               "(launch_buttons.colab_url and repository.url in _config.yml)")
        context["body"] = body.replace(COLAB_PLACEHOLDER, url)


def _meta(app, pagename, templatename, context, doctree):
    """L13: a description (first paragraph of the page) for search engines and link previews."""
    if doctree is None:
        return
    for para in doctree.findall(nodes.paragraph):
        text = re.sub(r"\s+", " ", para.astext()).strip()
        if len(text) >= 20:
            context["book_meta_description"] = text[:140] + ("…" if len(text) > 140 else "")
            return


_CHAPTER = re.compile(r"^chapters/(\d+)_")


def _equation_numbers(app, env):
    """L15: equations numbered per chapter, (5.3) in chapter 5, like the exercises (练习 5.3)."""
    fignumbers = getattr(env, "toc_fignumbers", {})
    for docname, kinds in fignumbers.items():
        m = _CHAPTER.match(docname)
        eqs = kinds.get("displaymath")
        if not m or not eqs:
            continue
        chapter = int(m.group(1))
        ordered = sorted(eqs.items(), key=lambda kv: kv[1])
        kinds["displaymath"] = {node_id: (chapter, i) for i, (node_id, _) in enumerate(ordered, 1)}
    return []


def _alt_text(app, doctree, docname):
    """L9: images without alt text get one from their caption or their section's title."""
    for img in doctree.findall(nodes.image):
        if img.get("alt"):
            continue
        parent, label = img.parent, None
        while parent is not None and label is None:
            if isinstance(parent, nodes.figure):
                cap = next(iter(parent.findall(nodes.caption)), None)
                if cap is not None:
                    label = cap.astext()
            if isinstance(parent, nodes.section):
                title = next((c for c in parent.children if isinstance(c, nodes.title)), None)
                if title is not None:
                    label = f"图：{title.astext()}"
            parent = parent.parent
        img["alt"] = label or "图"


_TEST_MARKER = re.compile(r"^[ \t]*#\s*NBVAL_[A-Z_]+[^\n]*\n?", re.M)
_GLUE_ONLY = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n|[ \t]*glue\([^\n]*\)[ \t]*\n?)+")


class HideTestHarness(SphinxPostTransform):
    """L4: readers do not see nbval markers (``# NBVAL_IGNORE_OUTPUT``), and a code cell that
    only glues numbers for the prose (no output) is not shown at all."""

    default_priority = 30
    formats = ("html",)

    def run(self, **kwargs):
        for cell in list(self.document.findall(
                lambda n: isinstance(n, nodes.container) and n.get("nb_element") == "cell_code")):
            lit = next(iter(cell.findall(nodes.literal_block)), None)
            if lit is None:
                continue
            src = lit.astext()
            has_output = any(isinstance(c, nodes.container) and c.get("nb_element") == "cell_code_output"
                             and c.children for c in cell.children)
            if not has_output and "glue(" in src and _GLUE_ONLY.fullmatch(src + "\n"):
                cell.parent.remove(cell)
                continue
            new = _TEST_MARKER.sub("", src)
            if new != src:
                lit.children = [nodes.Text(new.strip("\n"))]
                lit.rawsource = new


def leading_aside(para) -> tuple | None:
    """(child index, offset) of the ``）`` that closes a paragraph's leading ``（……。）``, a whole
    sentence in parentheses before the paragraph's own text; None if the paragraph has none."""
    first = para.children[0] if para.children else None
    if not isinstance(first, nodes.Text) or not str(first).startswith("（"):
        return None
    depth = 0
    for i, child in enumerate(para.children):
        if not isinstance(child, nodes.Text):
            continue
        s = str(child)
        for j, ch in enumerate(s):
            if ch == "（":
                depth += 1
            elif ch == "）":
                depth -= 1
                if depth == 0:
                    return (i, j) if j > 0 and s[j - 1] == "。" else None
    return None


class AsidesToMargin(SphinxPostTransform):
    """Side notes for what the original book puts in footnotes: a paragraph that is one
    parenthetical aside (（……）, an erratum or a side remark), or a paragraph's leading
    parenthetical sentence (（……。）, a remark on what came before), becomes a side note in the
    right margin on wide screens (sphinx-book-theme's ``margin``), a small note beside the text on
    phones; the main line reads on without it."""

    default_priority = 31
    formats = ("html",)

    def run(self, **kwargs):
        for para in list(self.document.findall(nodes.paragraph)):
            if not isinstance(para.parent, nodes.section):
                continue
            text = para.astext().strip()
            if text.startswith("（") and text.endswith("）") and len(text) > 30 \
                    and text.count("（") == text.count("）"):
                side = nodes.sidebar(classes=["margin", "book-aside"])
                new = para.deepcopy()
                first = new.children[0]
                if isinstance(first, nodes.Text) and str(first).startswith("（"):
                    new.replace(first, nodes.Text(str(first)[1:]))
                last = new.children[-1]
                if isinstance(last, nodes.Text) and str(last).endswith("）"):
                    new.replace(last, nodes.Text(str(last)[:-1]))
                side += new
                para.replace_self(side)
                continue
            at = leading_aside(para)
            if at is None:
                continue
            i, j = at
            kids = list(para.children)
            s = str(kids[i])
            rest = [nodes.Text(s[j + 1:])] if s[j + 1:].strip() else []
            rest += [c.deepcopy() for c in kids[i + 1:]]
            if not "".join(c.astext() for c in rest).strip():
                continue  # the whole paragraph is the aside (and shorter than the rule above takes)
            inner = [nodes.Text(s[1:j])] if i == 0 else \
                [nodes.Text(str(kids[0])[1:])] + [c.deepcopy() for c in kids[1:i]] + [nodes.Text(s[:j])]
            side = nodes.sidebar(classes=["margin", "book-aside"])
            side += nodes.paragraph("", "", *inner)
            para.children = []
            para.extend(rest)
            para.parent.insert(para.parent.index(para), side)


def setup(app):
    app.setup_extension("book_exercises")
    app.setup_extension("book_assets")
    app.setup_extension("book_search")
    app.add_js_file("book.js", loading_method="defer")
    app.connect("config-inited", _abs_search_dict)
    app.add_post_transform(HideTestHarness)
    app.add_post_transform(AsidesToMargin)
    app.connect("env-get-updated", _equation_numbers, priority=900)
    app.connect("doctree-resolved", _alt_text)
    app.connect("html-page-context", _plotly_js)
    app.connect("html-page-context", _meta)
    app.connect("html-page-context", _student_colab, priority=600)
    app.connect("html-page-context", _colab_badges, priority=650)
    app.connect("html-page-context", _tidy_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
