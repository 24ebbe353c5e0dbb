"""myst-nb mime renderer: plotly figures stored as JSON become a <div> on the website.

Registered as an entry point (pyproject.toml), so it is active when scaling_lib is pip-installed
into the build environment. plotly.js itself is served from the site (see _ext/book_ext.py).
"""
from __future__ import annotations


class PlotlyRenderer:
    mime_priority_overrides = [("html", "application/vnd.plotly.v1+json", 5)]

    @staticmethod
    def handle_mime(renderer, data, inline):
        if data.mime_type != "application/vnd.plotly.v1+json":
            return None
        from docutils import nodes
        import plotly.io as pio

        html = pio.to_html(data.content, include_plotlyjs=False, include_mathjax=False,
                           full_html=False, validate=False,
                           div_id=f"plotly-c{data.cell_index}-o{data.output_index}",
                           config={"displaylogo": False})
        return [nodes.raw("", html, format="html", classes=["output", "text_html"])]
