"""Kernel-free interactive figures for the website: plotly figures with precomputed slider steps.

Book: every chapter's main trade-off has a twin here, interactive in the static page without a
kernel (the ipywidgets explorers need one). Steps are computed by the library in the notebook;
plotly.js in the browser only switches which traces are visible. Labels are Chinese (rendered by
the browser's fonts); no LaTeX in labels (it would need MathJax SVG from a CDN).
"""
from __future__ import annotations

__all__ = ["slider_figure"]


def slider_figure(steps: list, *, title: str, xaxis: dict, yaxis: dict, slider_label: str,
                  active: int = 0, height: int = 420, legend: bool = True):
    """A plotly Figure with one slider.

    ``steps`` is a list of ``(label, traces)``: ``label`` is the slider tick text, ``traces`` a list
    of dicts (``go.Scatter``/``go.Bar`` keyword arguments). All traces of all steps are added;
    the slider shows the traces of one step at a time. Axis dicts are plotly layout axis dicts
    (e.g. ``{"title": {"text": "算术强度（FLOPs/字节）"}, "type": "log"}``).
    """
    import plotly.graph_objects as go

    if not steps:
        raise ValueError("slider_figure needs at least one step")
    if not 0 <= active < len(steps):
        raise ValueError(f"active must be in [0, {len(steps) - 1}], got {active}")
    fig = go.Figure()
    owner = []
    for si, (_, traces) in enumerate(steps):
        for tr in traces:
            tr = dict(tr)
            kind = tr.pop("type", "scatter")
            cls = {"scatter": go.Scatter, "bar": go.Bar}[kind]
            fig.add_trace(cls(visible=(si == active), **tr))
            owner.append(si)
    slider_steps = []
    for si, (label, _) in enumerate(steps):
        vis = [o == si for o in owner]
        slider_steps.append({"method": "update", "label": str(label),
                             "args": [{"visible": vis}, {"title.text": f"{title}（{slider_label}：{label}）"}]})
    fig.update_layout(
        title={"text": f"{title}（{slider_label}：{steps[active][0]}）"},
        xaxis=xaxis, yaxis=yaxis, height=height, showlegend=legend,
        margin={"l": 60, "r": 20, "t": 60, "b": 60},
        font={"family": "Noto Sans CJK SC, Noto Sans CJK JP, Microsoft YaHei, PingFang SC, sans-serif"},
        sliders=[{"active": active, "currentvalue": {"prefix": f"{slider_label}："},
                  "pad": {"t": 40}, "steps": slider_steps}],
        template="plotly_white",
    )
    return fig
