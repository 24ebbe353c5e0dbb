"""myst-nb mime renderer: plotly figures stored as JSON become a <div> on the website.

Registered as an entry point (pyproject.toml), so it is active when scaling_lib is pip-installed
into the build environment. plotly.js (4.8 MB) is served from the site itself and loaded with
``defer`` (see _ext/book_ext.py), so it never delays the first paint; each figure is drawn on
DOMContentLoaded, which fires after deferred scripts have run.
"""
from __future__ import annotations

import json


class PlotlyRenderer:
    mime_priority_overrides = [("html", "application/vnd.plotly.v1+json", 5)]

    @staticmethod
    def handle_mime(renderer, data, inline):
        if data.mime_type != "application/vnd.plotly.v1+json":
            return None
        from docutils import nodes

        fig = data.content if isinstance(data.content, dict) else json.loads(data.content)
        div_id = f"plotly-c{data.cell_index}-o{data.output_index}"
        layout = fig.get("layout", {})
        height = layout.get("height", 450)
        # frames (scaling_lib.diagrams' animations) travel with the figure: the play button and
        # the slider's "animate" steps look them up by name in the browser, no kernel involved
        payload = json.dumps([fig.get("data", []), layout, {"displaylogo": False, "responsive": True},
                              fig.get("frames", [])],
                             ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
        html = (f'<div id="{div_id}" class="plotly-graph-div" style="height:{height}px; width:100%;"></div>\n'
                f'<script type="text/javascript">document.addEventListener("DOMContentLoaded", function () {{'
                f' var a = {payload}; Plotly.newPlot("{div_id}", {{data: a[0], layout: a[1], config: a[2],'
                f' frames: a[3]}}); }});</script>')
        return [nodes.raw("", html, format="html", classes=["output", "text_html"])]
