"""Stored outputs must not depend on the CPU that produced them (nbval compares them on other machines,
and `make test-other-cpu` on other SIMD paths): plotly figures carry rounded plain lists, never base64
float arrays whose last bits vary."""
import json
from pathlib import Path

import numpy as np
import pytest

from scaling_lib.interactive import slider_figure, tidy

ROOT = Path(__file__).resolve().parents[1]
PLOTLY = "application/vnd.plotly.v1+json"


def _notebooks():
    return [p for k in ("chapters", "exercises", "appendix") for p in sorted((ROOT / k).glob("*.ipynb"))]


def test_no_stored_figure_holds_binary_arrays():
    bad = []
    for p in _notebooks():
        nb = json.loads(p.read_text(encoding="utf-8"))
        for i, cell in enumerate(nb["cells"]):
            for o in cell.get("outputs", []):
                if PLOTLY in o.get("data", {}) and '"bdata"' in json.dumps(o["data"][PLOTLY]):
                    bad.append(f"{p.relative_to(ROOT)} cell {i}")
    assert not bad, "plotly figures stored with base64 arrays (pass them through interactive.tidy): " + ", ".join(bad)


def test_tidy_rounds_every_number_to_six_digits_as_plain_lists():
    import plotly.graph_objects as go
    fig = go.Figure(go.Scatter(x=np.logspace(0, 3, 4), y=np.array([1 / 3, np.nan, 2.0, 1e-300]),
                               marker={"color": np.array([1, 2, 3, 4], np.int8)}),
                    frames=[go.Frame(data=[go.Heatmap(z=np.arange(6.0).reshape(2, 3) / 7)])])
    spec = tidy(fig).to_plotly_json()
    tr = spec["data"][0]
    assert tr["x"] == [1.0, 10.0, 100.0, 1000.0]
    assert tr["y"] == [0.333333, None, 2.0, 1e-300]          # NaN becomes a gap
    assert tr["marker"]["color"] == [1, 2, 3, 4]
    assert spec["frames"][0]["data"][0]["z"] == [[0.0, 0.142857, 0.285714], [0.428571, 0.571429, 0.714286]]
    assert "bdata" not in json.dumps(spec)


def test_tidy_hides_last_bit_noise():
    a = np.linspace(0.1, 1, 50)
    b = a * (1 + 2.2e-16)                                   # what another CPU's SIMD path may give
    fa = tidy(slider_figure([("s", [{"x": a, "y": a}])], title="t", xaxis={}, yaxis={}, slider_label="l"))
    fb = tidy(slider_figure([("s", [{"x": b, "y": b}])], title="t", xaxis={}, yaxis={}, slider_label="l"))
    assert fa.to_plotly_json() == fb.to_plotly_json()


@pytest.mark.parametrize("sig", [1, 16, 2.5, True])
def test_tidy_rejects_bad_precision(sig):
    import plotly.graph_objects as go
    with pytest.raises(ValueError, match="significant digits"):
        tidy(go.Figure(), sig=sig)


def test_tidy_rejects_what_is_not_a_figure():
    with pytest.raises(TypeError, match="plotly Figure"):
        tidy({"data": []})
