"""myst-nb mime renderer for the website: plotly figures and static previews of ipywidgets.

Registered as an entry point (pyproject.toml), so it is active when scaling_lib is pip-installed
into the build environment.

* ``application/vnd.plotly.v1+json`` becomes a ``<div>`` drawn by plotly.js, which the site serves
  itself (``_ext/book_ext.py`` picks the smallest bundle that draws the page's trace types, from
  ``data-plotly-types``) with ``defer``, so it never delays the first paint. ``bookPlotly`` in
  ``_assets/book.js`` lays the figure out for the screen it lands on (phones: legend on top, no
  mode bar) before drawing it.
* ``application/vnd.jupyter.widget-view+json`` (an ipywidgets explorer) becomes a *static preview*
  built from the widget state the notebook stored: the controls as they were, disabled; the
  output the explorer drew (its figure, its text); and a badge linking the page's Colab notebook,
  where the controls work. No widget manager is loaded: without a Python kernel the controls
  could only move while the figure stayed put (website-review H3). A widget model this renderer
  does not know is a build warning (the book builds with -W), never a silently empty box.
"""
from __future__ import annotations

import html
import json
import math

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: replaced by the page's Colab URL in _ext/book_ext.py (the renderer does not know the config)
COLAB_PLACEHOLDER = "#book-colab-url"
BADGE = "静态预览 · 在 Colab 中运行可交互"

_LAYOUT_ONLY = {"LayoutModel", "DescriptionStyleModel", "SliderStyleModel", "ToggleButtonsStyleModel",
                "TextStyleModel", "ButtonStyleModel", "CheckboxStyleModel", "ProgressStyleModel",
                "HTMLStyleModel", "LabelStyleModel"}


def _fmt(value, spec: str | None) -> str:
    if spec:
        try:
            return format(value, spec)
        except (ValueError, TypeError):
            pass
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _label(desc: str) -> str:
    return f'<span class="book-label">{html.escape(desc)}</span>' if desc else ""


def _range(lo, hi, step, value, shown, desc) -> str:
    return (f'<label class="book-control">{_label(desc)}'
            f'<input type="range" disabled min="{lo}" max="{hi}" step="{step}" value="{value}" '
            f'aria-label="{html.escape(desc or "滑块")}">'
            f'<span class="book-value">{html.escape(shown)}</span></label>')


def control_html(model: dict) -> str | None:
    """HTML of one input widget, disabled; None when ``model`` is not an input widget."""
    name, s = model["model_name"], model["state"]
    desc = s.get("description", "") or ""
    if name in ("IntSliderModel", "FloatSliderModel"):
        return _range(s["min"], s["max"], s.get("step", 1), s["value"],
                      _fmt(s["value"], s.get("readout_format")), desc)
    if name == "FloatLogSliderModel":
        base = s.get("base", 10)
        exp = math.log(s["value"], base) if s["value"] > 0 else s["min"]
        return _range(s["min"], s["max"], s.get("step", 0.1), round(exp, 6),
                      _fmt(s["value"], s.get("readout_format")), desc)
    if name in ("IntRangeSliderModel", "FloatRangeSliderModel"):
        lo, hi = s["value"]
        return (f'<label class="book-control">{_label(desc)}<span class="book-value">'
                f'{html.escape(_fmt(lo, s.get("readout_format")))} – '
                f'{html.escape(_fmt(hi, s.get("readout_format")))}</span></label>')
    if name == "SelectionSliderModel":
        labels, i = s.get("_options_labels", []), s.get("index", 0)
        shown = labels[i] if 0 <= i < len(labels) else ""
        return _range(0, max(len(labels) - 1, 0), 1, i, shown, desc)
    if name in ("DropdownModel", "SelectModel"):
        labels, i = s.get("_options_labels", []), s.get("index")
        opts = "".join(f'<option{" selected" if k == i else ""}>{html.escape(str(t))}</option>'
                       for k, t in enumerate(labels))
        return (f'<label class="book-control">{_label(desc)}<select disabled '
                f'aria-label="{html.escape(desc or "选项")}">{opts}</select></label>')
    if name in ("ToggleButtonsModel", "RadioButtonsModel"):
        labels, i = s.get("_options_labels", []), s.get("index")
        buttons = "".join(f'<span class="book-toggle{" selected" if k == i else ""}">{html.escape(str(t))}</span>'
                          for k, t in enumerate(labels))
        return f'<span class="book-control">{_label(desc)}{buttons}</span>'
    if name in ("CheckboxModel", "ToggleButtonModel"):
        checked = " checked" if s.get("value") else ""
        return (f'<label class="book-control"><input type="checkbox" disabled{checked}>'
                f'{html.escape(desc or s.get("description", ""))}</label>')
    if name in ("TextModel", "TextareaModel", "IntTextModel", "FloatTextModel", "BoundedIntTextModel",
                "BoundedFloatTextModel"):
        return (f'<label class="book-control">{_label(desc)}<input type="text" disabled '
                f'value="{html.escape(str(s.get("value", "")))}"></label>')
    if name in ("LabelModel", "HTMLModel", "HTMLMathModel"):
        v = s.get("value", "")
        return f'<span class="book-control">{v if name != "LabelModel" else html.escape(v)}</span>'
    if name == "ButtonModel":
        return f'<span class="book-control"><button disabled>{html.escape(desc)}</button></span>'
    return None


class UnknownWidget(ValueError):
    pass


def walk(model_id: str, state: dict, controls: list, outputs: list) -> None:
    """Collect the controls (HTML) and Output-widget outputs under ``model_id``, in page order."""
    model = state.get(model_id)
    if model is None:
        raise UnknownWidget(f"widget {model_id} is not in the notebook's stored widget state")
    name = model["model_name"]
    if name in ("VBoxModel", "HBoxModel", "BoxModel", "GridBoxModel", "AccordionModel", "TabModel"):
        for child in model["state"].get("children", []):
            walk(child.replace("IPY_MODEL_", ""), state, controls, outputs)
        return
    if name == "OutputModel":
        outputs.extend(model["state"].get("outputs", []))
        return
    if name in _LAYOUT_ONLY:
        return
    piece = control_html(model)
    if piece is None:
        raise UnknownWidget(f"no static preview for widget model {name} ({model_id}); "
                            "add it to scaling_lib/_mystnb.py:control_html")
    controls.append(piece)


def _plotly_html(fig: dict, div_id: str) -> str:
    """The figure's div and the script that draws it. Frames (scaling_lib.diagrams' animations)
    travel with the figure: the play button and "animate" slider steps look them up by name in the
    browser, no kernel involved."""
    layout = fig.get("layout", {})
    height = layout.get("height", 450)
    frames = fig.get("frames", [])
    traces = list(fig.get("data", [])) + [t for f in frames for t in f.get("data", [])]
    types = sorted({t.get("type", "scatter") for t in traces})
    payload = json.dumps([fig.get("data", []), layout, {"displaylogo": False, "responsive": True}, frames],
                         ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    return (f'<div id="{div_id}" class="plotly-graph-div" data-plotly-types="{",".join(types)}" '
            f'style="height:{height}px; width:100%;"></div>\n'
            f'<script type="text/javascript">document.addEventListener("DOMContentLoaded", function () {{'
            f' var a = {payload}; window.bookPlotly("{div_id}", a[0], a[1], a[2], a[3]); }});'
            f'</script>')


class PlotlyRenderer:
    """Plotly JSON and widget views (see the module docstring); the name is the entry point's."""

    mime_priority_overrides = [("html", "application/vnd.plotly.v1+json", 5),
                               ("html", WIDGET_VIEW, 4)]

    @staticmethod
    def handle_mime(renderer, data, inline):
        if data.mime_type == "application/vnd.plotly.v1+json":
            return PlotlyRenderer._plotly(renderer, data)
        if data.mime_type == WIDGET_VIEW:
            return PlotlyRenderer._widget(renderer, data)
        return None

    @staticmethod
    def _plotly(renderer, data):
        from docutils import nodes

        fig = data.content if isinstance(data.content, dict) else json.loads(data.content)
        html_text = _plotly_html(fig, f"plotly-c{data.cell_index}-o{data.output_index}")
        return [nodes.raw("", html_text, format="html", classes=["output", "text_html"])]

    @staticmethod
    def _widget(renderer, data):
        from docutils import nodes
        from myst_nb.core.render import MimeData

        view = data.content if isinstance(data.content, dict) else json.loads(data.content)
        try:
            meta = renderer.renderer.nb_client.nb_metadata
        except AttributeError:
            meta = {}
        state = ((meta.get("widgets") or {}).get(WIDGET_STATE) or {}).get("state") or {}
        controls, outputs = [], []
        try:
            walk(view["model_id"], state, controls, outputs)
        except UnknownWidget as e:
            renderer.logger.warning(f"static widget preview: {e}", subtype="widget", line=data.line)
            return []
        box = nodes.container(classes=["book-widget-preview"])
        head = (f'<a class="book-preview-badge" href="{COLAB_PLACEHOLDER}" target="_blank" rel="noopener" '
                f'title="网页上没有 Python：控件是静态的。在 Colab 里运行本页，拖动控件图会跟着变。">{BADGE}</a>'
                f'<div class="book-controls">{"".join(controls)}</div>')
        box += nodes.raw("", head, format="html")
        for k, out in enumerate(outputs):
            kind = out.get("output_type")
            if kind == "stream":
                text = out.get("text", "")
                text = "".join(text) if isinstance(text, list) else text
                box += nodes.literal_block(text, text, language="none", classes=["output", "stream"])
            elif kind in ("display_data", "execute_result"):
                bundle, md = out.get("data", {}), out.get("metadata", {})
                for mime in ("image/png", "image/jpeg", "image/svg+xml"):
                    if mime in bundle:
                        content = bundle[mime]
                        content = "".join(content) if isinstance(content, list) else content
                        md_data = MimeData(mime, content, cell_metadata=data.cell_metadata,
                                           output_metadata=md, cell_index=data.cell_index,
                                           output_index=data.output_index, line=data.line)
                        box.extend(renderer.render_image(md_data))
                        break
                else:
                    if "text/html" in bundle:
                        t = bundle["text/html"]
                        box += nodes.raw("", "".join(t) if isinstance(t, list) else t, format="html")
                    elif "text/plain" in bundle:
                        t = bundle["text/plain"]
                        t = "".join(t) if isinstance(t, list) else t
                        box += nodes.literal_block(t, t, language="none")
        return [box]
