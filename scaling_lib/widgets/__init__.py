"""ipywidgets explorers: shared machinery here, one module per chapter topic beside it.

Book: every chapter's main trade-off. An explorer is a set of controls plus a pure ``draw``
function (numpy + matplotlib, < 100 ms). ``explorer()`` wires them with ``interactive_output``;
the initial view is drawn at once, so the static website (which stores the widget state) shows a
real figure. Works with ipywidgets 7.7 (Colab) and 8.x. Cells that display an explorer carry the
``nbval-ignore-output`` tag (nbval cannot compare widget output areas).

On the website there is no kernel: explorers appear as static previews (scaling_lib._mystnb),
and the important ones also have a *twin*, a plotly figure whose slider works without Python.
Both forms come from one definition: a ``*_series(**controls)`` function returns the curves as
plotly-style trace dicts; the explorer draws them with matplotlib (``plot_traces``) and ``twin``
precomputes them for each value of one control.
"""
from __future__ import annotations

import time
from typing import Callable

__all__ = ["explorer", "time_update", "dropdown", "int_slider", "float_slider", "log_slider",
           "toggle", "plot_traces", "twin"]


def _w():
    import ipywidgets
    return ipywidgets


_STYLE = {"description_width": "initial"}


def dropdown(options, value=None, description=""):
    """A Dropdown; ``options`` is a list of values or (label, value) pairs."""
    w = _w()
    opts = list(options)
    if value is None:
        value = opts[0][1] if isinstance(opts[0], tuple) else opts[0]
    return w.Dropdown(options=opts, value=value, description=description, style=_STYLE)


def int_slider(value, min, max, step=1, description=""):
    w = _w()
    return w.IntSlider(value=value, min=min, max=max, step=step, description=description,
                       style=_STYLE, continuous_update=False, layout=w.Layout(width="420px"))


def float_slider(value, min, max, step, description="", fmt=".2f"):
    w = _w()
    return w.FloatSlider(value=value, min=min, max=max, step=step, description=description,
                         readout_format=fmt, style=_STYLE, continuous_update=False,
                         layout=w.Layout(width="420px"))


def log_slider(value, min_exp, max_exp, step=0.25, description="", base=10, fmt=".3g"):
    """A FloatLogSlider: value must equal base**(min_exp + k*step) to show exactly on the page."""
    w = _w()
    return w.FloatLogSlider(value=value, base=base, min=min_exp, max=max_exp, step=step,
                            description=description, readout_format=fmt, style=_STYLE,
                            continuous_update=False, layout=w.Layout(width="420px"))


def toggle(options, value=None, description=""):
    w = _w()
    opts = list(options)
    return w.ToggleButtons(options=opts, value=value if value is not None else
                           (opts[0][1] if isinstance(opts[0], tuple) else opts[0]),
                           description=description, style=_STYLE)


def explorer(controls: dict, draw: Callable, *, columns: int = 2):
    """Controls on top, output below; ``draw(**values)`` makes the figure/text for those values.

    ``draw`` should call ``plt.show()`` (or print) itself. A ValueError from the library is shown
    as a message in the output, never as a traceback: bad combinations are part of exploring.
    """
    w = _w()
    import matplotlib.pyplot as plt

    def safe(**kw):
        try:
            draw(**kw)
        except (ValueError, KeyError) as e:
            plt.close("all")
            print(f"⚠️ {e}")

    out = w.interactive_output(safe, controls)
    boxes = list(controls.values())
    rows = [w.HBox(boxes[i:i + columns]) for i in range(0, len(boxes), columns)]
    return w.VBox(rows + [out])


def time_update(draw: Callable, repeats: int = 5, **values) -> float:
    """Fastest of ``repeats`` timings of one ``draw(**values)`` with a non-interactive backend (for
    budgets), in CPU seconds of this process (``time.process_time``: all its threads, user +
    system). On a shared machine wall time measures the queue for the cores, not the update: a
    test asserting it failed under load however fast the code was. A widget update is
    single-threaded numpy and matplotlib, so on an idle core its wall time is its CPU time; the
    minimum of several runs strips what cache misses from other processes add."""
    import matplotlib
    import matplotlib.pyplot as plt

    backend = matplotlib.get_backend()
    ts = []
    try:
        plt.switch_backend("Agg")
        for _ in range(repeats):
            t0 = time.process_time()
            draw(**values)
            plt.close("all")
            ts.append(time.process_time() - t0)
    finally:
        plt.switch_backend(backend)
    return min(ts)


_DASH = {"solid": "-", "dash": "--", "dot": ":", "dashdot": "-."}


def plot_traces(ax, traces: list) -> None:
    """Draw plotly-style trace dicts (``x``, ``y``, ``name``, ``mode``, ``line``/``marker`` colour
    and dash; ``type`` "bar" with ``orientation`` "h" or "v") on matplotlib axes: the explorer
    side of a ``twin`` pair."""
    import numpy as np

    bars = [tr for tr in traces if tr.get("type") == "bar"]
    for i, tr in enumerate(bars):
        n, width = len(bars), 0.8 / max(len(bars), 1)
        cats = list(tr["y"] if tr.get("orientation") == "h" else tr["x"])
        vals = np.asarray(tr["x"] if tr.get("orientation") == "h" else tr["y"], dtype=float)
        pos = np.arange(len(cats)) + (i - (n - 1) / 2) * width
        color = (tr.get("marker") or {}).get("color")
        if tr.get("orientation") == "h":
            ax.barh(pos, vals, height=width, color=color, label=tr.get("name"))
            ax.set_yticks(np.arange(len(cats)))
            ax.set_yticklabels(cats)
        else:
            ax.bar(pos, vals, width=width, color=color, label=tr.get("name"))
            ax.set_xticks(np.arange(len(cats)))
            ax.set_xticklabels(cats)
    for tr in traces:
        if tr.get("type", "scatter") != "scatter":
            continue
        line, marker = tr.get("line") or {}, tr.get("marker") or {}
        mode = tr.get("mode", "lines")
        kw = {"label": tr.get("name"), "color": line.get("color") or marker.get("color")}
        if "lines" in mode:
            ax.plot(tr["x"], tr["y"], ls=_DASH.get(line.get("dash", "solid"), "-"),
                    lw=line.get("width", 2) * 0.75, marker="o" if "markers" in mode else None,
                    ms=marker.get("size", 6) * 0.8, **kw)
        else:
            ax.scatter(tr["x"], tr["y"], s=(marker.get("size", 8) ** 2) * 0.6, zorder=5, **kw)


def twin(series: Callable, sweep: str, values, *, labels=None, fixed: dict | None = None,
         title: str, xaxis: dict, yaxis: dict, slider_label: str, active: int = 0,
         height: int = 420, legend: bool = True):
    """The kernel-free plotly twin of an explorer: ``series(**fixed, sweep=value)`` for each of
    ``values`` (the same function whose traces the explorer draws with ``plot_traces``), one
    slider step each. ``labels``: the slider's tick texts (default ``str(value)``)."""
    from ..interactive import slider_figure

    values = list(values)
    if not values:
        raise ValueError("twin needs at least one value to sweep")
    labels = [str(v) for v in values] if labels is None else list(labels)
    if len(labels) != len(values):
        raise ValueError(f"{len(labels)} labels for {len(values)} values")
    fixed = dict(fixed or {})
    if sweep in fixed:
        raise ValueError(f"{sweep!r} is both swept and fixed")
    steps = [(lab, series(**fixed, **{sweep: v})) for lab, v in zip(labels, values)]
    return slider_figure(steps, title=title, xaxis=xaxis, yaxis=yaxis, slider_label=slider_label,
                         active=active, height=height, legend=legend)
