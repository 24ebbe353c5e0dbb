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

def _round(v, sig: int):
    """``v`` with every number rounded to ``sig`` significant digits and every array turned into a
    plain list, recursively through dicts and lists; strings, bools and ``None`` pass unchanged."""
    import numpy as np

    if v is None or isinstance(v, (str, bool, np.bool_)):
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
    if isinstance(v, dict):
        if "bdata" in v and "dtype" in v:  # plotly's base64 typed array (to_plotly_json makes them)
            return _round(_decode_typed_array(v), sig)
        return {k: _round(x, sig) for k, x in v.items()}
    return v


_PLOTLY_DTYPES = {"f8": "float64", "f4": "float32", "i1": "int8", "u1": "uint8", "i2": "int16",
                  "u2": "uint16", "i4": "int32", "u4": "uint32", "i8": "int64", "u8": "uint64"}


def _decode_typed_array(v: dict):
    import base64

    import numpy as np

    if v["dtype"] not in _PLOTLY_DTYPES:
        raise ValueError(f"unknown plotly typed-array dtype {v['dtype']!r}")
    arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=_PLOTLY_DTYPES[v["dtype"]])
    if v.get("shape"):
        arr = arr.reshape(tuple(int(n) for n in str(v["shape"]).split(",")))
    return arr


def tidy(fig, sig: int = SIG_DIGITS):
    """The figure with every number rounded to ``sig`` significant digits and every array stored as
    a plain list (data, nested properties such as ``marker.color``, and layout).

    Why: plotly stores numpy arrays as base64 binary whose last bits differ from CPU to CPU, so a
    stored figure would not compare equal on another machine; rounded plain lists do (nbval compares
    the stored JSON). Six digits are far below what a reader can see on a plot. Non-finite numbers
    become ``None`` (a gap in the line), as plotly draws them anyway. Returns a new Figure, so
    ``tidy(fig).show()`` works.
    """
    import plotly.graph_objects as go

    if not isinstance(sig, int) or isinstance(sig, bool) or not 2 <= sig <= 15:
        raise ValueError(f"sig must be an int in [2, 15] (significant digits), got {sig!r}")
    if not isinstance(fig, go.Figure):
        raise TypeError(f"tidy expects a plotly Figure, got {type(fig).__name__}")
    spec = fig.to_plotly_json()
    frames = spec.get("frames") or None
    return go.Figure(data=_round(spec.get("data", []), sig), layout=_round(spec.get("layout", {}), sig),
                     frames=_round(frames, sig) if frames else None)


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
