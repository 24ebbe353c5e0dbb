"""Small Sphinx hooks for the book (see ../shared/TOOLCHAIN.md for why each exists)."""
from __future__ import annotations

import os


def _abs_search_dict(app, config):
    opts = dict(config.html_search_options or {})
    d = opts.get("dict")
    if d and not os.path.isabs(d):
        opts["dict"] = os.path.join(app.srcdir, d)
        config.html_search_options = opts


def _plotly_js(app, pagename, templatename, context, doctree):
    if "plotly-graph-div" in context.get("body", ""):
        app.add_js_file("offline/plotly.min.js", priority=200, loading_method="defer")


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    files = context.get("script_files")
    if not files:
        return
    seen, out = set(), []
    for js in files:
        key = (getattr(js, "filename", None) or "", tuple(sorted(getattr(js, "attributes", {}).items())))
        if key in seen:
            continue
        seen.add(key)
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


def setup(app):
    app.connect("config-inited", _abs_search_dict)
    app.connect("html-page-context", _plotly_js)
    app.connect("html-page-context", _student_colab, priority=600)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
