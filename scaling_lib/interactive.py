"""Kernel-free interactive figures for the website: plotly figures with precomputed slider steps.

Book: every chapter's main trade-off has a twin here, interactive in the static page without a
kernel (the ipywidgets explorers need one). Steps are computed by the library in the notebook;
plotly.js in the browser only switches which traces are visible. Labels are Chinese (rendered by
the browser's fonts); no LaTeX in labels (it would need MathJax SVG from a CDN).
"""
from __future__ import annotations

__all__ = ["slider_figure", "tidy", "SIG_DIGITS"]

#: significant digits kept in the numbers of a stored figure. Notebook outputs are compared by
#: nbval on other machines, and the last bits of a float depend on the CPU's SIMD paths (numpy's
#: AVX-512 ``log``/``pow``, XLA's kernels): six digits are far below what a reader can see on a
#: plot and far above that noise.
SIG_DIGITS = 6

_ARRAY_KEYS = ("x", "y", "z", "base", "width", "customdata", "r", "theta", "open", "high", "low",
               "close", "values", "parents_values", "lon", "lat", "u", "v", "w")


def _round(v, sig: int):
    """``v`` (number, array, nested list) as plain Python lists of numbers rounded to ``sig``
    significant digits; strings, ``None`` and other objects pass unchanged."""
    import numpy as np

    if isinstance(v, (bool, np.bool_)) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return float(f"{f:.{sig}g}") if np.isfinite(f) else None
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return [_round(x, sig) for x in v]
    return v


def tidy(fig, sig: int = SIG_DIGITS):
    """Round every numeric array of a plotly figure to ``sig`` significant digits, in place.

    Why: plotly stores numpy arrays as base64 binary whose last bits differ from CPU to CPU, so a
    stored figure would not compare equal on another machine; rounded plain lists do. Also makes
    the page lighter. Returns the figure, so ``tidy(fig).show()`` works. Non-finite numbers become
    ``None`` (a gap in the line), as plotly draws them anyway.
    """
    if not isinstance(sig, int) or isinstance(sig, bool) or not 2 <= sig <= 15:
        raise ValueError(f"sig must be an int in [2, 15] (significant digits), got {sig!r}")
    if not hasattr(fig, "data") or not hasattr(fig, "layout"):
        raise TypeError(f"tidy expects a plotly Figure, got {type(fig).__name__}")
    for tr in fig.data:
        for key in _ARRAY_KEYS:
            try:
                val = tr[key]
            except (KeyError, ValueError, AttributeError):
                continue
            if val is not None:
                tr[key] = _round(val, sig)
    for shape in fig.layout.shapes or ():
        for key in ("x0", "x1", "y0", "y1"):
            if isinstance(shape[key], (int, float)):
                shape[key] = _round(shape[key], sig)
    for ann in fig.layout.annotations or ():
        for key in ("x", "y"):
            if isinstance(ann[key], (int, float)):
                ann[key] = _round(ann[key], sig)
    return fig


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
    return tidy(fig)
