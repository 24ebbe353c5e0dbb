"""Helpers for the book's notebooks that must work on the website build *and* in Colab.

``glue`` stores a value for the text of the page (myst-nb's glue). Colab does not have myst-nb;
there the call does nothing visible (the numbers are printed by the cells anyway), instead of
failing with an ImportError.
"""
from __future__ import annotations

__all__ = ["glue", "table", "Table"]


def glue(name: str, value, display: bool = False):
    """myst-nb ``glue`` when available; a no-op (or a plain display) otherwise."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"glue key must be a non-empty string, got {name!r}")
    try:
        from myst_nb import glue as _glue
    except ImportError:  # Colab, plain Jupyter
        if display:
            from IPython.display import display as _display
            _display(value)
        return None
    return _glue(name, value, display=display)


# ---- library code in view --------------------------------------------------------------------

class SourceBlock:
    """The source of one library function, shown as a collapsed block (see ``show_source``).

    No line numbers are shown: they would change the stored output whenever code *above* the
    function moves. ``_repr_html_`` is a ``<details>`` dropdown with the code highlighted by pygments using inline
    styles, so it looks the same on the website, in JupyterLab and in Colab, none of which needs
    a stylesheet of ours; ``__repr__`` is one deterministic line (nbval compares both).
    """

    def __init__(self, obj, summary: str | None = None, open: bool = False):
        import inspect
        import os

        target = obj.fget if isinstance(obj, property) else obj
        target = getattr(target, "__wrapped__", target)
        if not (inspect.isfunction(target) or inspect.ismethod(target) or inspect.isclass(target)):
            raise TypeError(f"show_source shows functions, methods, properties and classes of "
                            f"scaling_lib; got {type(obj).__name__} {obj!r}")
        try:
            lines, first = inspect.getsourcelines(target)
        except (OSError, TypeError) as e:
            raise TypeError(f"no Python source for {obj!r} ({e})") from None
        mod = inspect.getmodule(target)
        modname = mod.__name__ if mod else "?"
        if not modname.startswith("scaling_lib"):
            raise ValueError(f"show_source is for the book's library; {target.__qualname__} is "
                             f"from {modname}")
        path = inspect.getsourcefile(target) or ""
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.path = os.path.relpath(path, root).replace(os.sep, "/") if path else modname
        self.first = first
        self.last = first + len(lines) - 1
        self.name = f"{modname}.{target.__qualname__}"
        import textwrap
        self.code = textwrap.dedent("".join(lines)).rstrip()
        self.summary = summary or f"看代码：{self.name}"
        self.open = bool(open)

    def __repr__(self) -> str:
        return f"{self.summary}（{self.path}）"

    def _repr_html_(self) -> str:
        import html as _html
        try:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import PythonLexer
            body = highlight(self.code, PythonLexer(),
                             HtmlFormatter(noclasses=True, style="friendly", nowrap=True))
        except ImportError:  # pragma: no cover - pygments ships with IPython
            body = _html.escape(self.code)
        return (f'<details class="sl-source"{" open" if self.open else ""} style="border:1px solid '
                f'#d0d7de;border-left:4px solid #0072B2;border-radius:4px;margin:0.6em 0;'
                f'padding:0.2em 0.8em;background:#f6f8fa">'
                f'<summary style="cursor:pointer;font-weight:600;padding:0.3em 0">'
                f'{_html.escape(self.summary)}'
                f'<span style="font-weight:400;color:#57606a;font-size:0.85em">'
                f'（{_html.escape(self.path)}）</span></summary>'
                f'<pre style="margin:0.4em 0 0.6em;overflow-x:auto;font-size:0.85em;line-height:1.45;'
                f'background:transparent;border:0;padding:0"><code>{body}</code></pre></details>')


def show_source(obj, summary: str | None = None, open: bool = False) -> SourceBlock:
    """Show the source of a ``scaling_lib`` function next to the prose that derives its formula.

    The code is read from the installed library when the notebook runs (``inspect``), never copied
    by hand, so the book and the library cannot drift apart: a change to the function changes the
    stored output, and nbval then asks for the notebook to be re-executed. Collapsed by default
    (``open=True`` to unfold). Use as the last line of a cell::

        from scaling_lib.book import show_source
        show_source(roofline.matmul_time, "看代码：Roofline 时间怎么算")
    """
    if summary is not None and (not isinstance(summary, str) or not summary.strip()):
        raise ValueError(f"summary must be a non-empty string or None, got {summary!r}")
    return SourceBlock(obj, summary, open)


__all__ += ["show_source", "SourceBlock"]


# ---- glued values as the page shows them (tools/ledger.py and exercises.audit read them) -------

#: a glue role in MyST source: {glue}`k`, {glue:text}`k:.1f`, {glue:text}`../chapters/x.ipynb::k:.0f`
GLUE_ROLE = __import__("re").compile(r"\{glue(?::(\w+))?\}`([^`]+)`")


def glue_records(nb: dict) -> dict:
    """key -> the stored text/plain of every glue record of an executed notebook (its JSON as a
    dict); a glued figure or HTML, which has no text, is recorded as ``"(非文本)"``."""
    if not isinstance(nb, dict) or "cells" not in nb:
        raise ValueError("glue_records needs an executed notebook's JSON as a dict with 'cells'")
    out = {}
    for cell in nb["cells"]:
        for o in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            meta = o.get("metadata", {}).get("scrapbook")
            if not meta:
                continue
            text = o.get("data", {}).get("application/papermill.record/text/plain")
            if text is None:
                text = "(非文本)"
            out[meta["name"]] = "".join(text) if isinstance(text, list) else text
    return out


def glue_display(text: str, spec: str = "") -> str:
    """The text myst-nb puts in the page for a glue record's stored text and a format spec
    (``{glue:text}`key:.1f```): the stored repr parsed back, then formatted."""
    import ast
    if not isinstance(text, str):
        raise ValueError(f"glue_display needs the record's stored text (a str), got {type(text).__name__}")
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = text
    if spec:
        try:
            return format(float(value) if not isinstance(value, str) else value, spec)
        except (TypeError, ValueError):
            try:
                return format(float(value), spec)
            except (TypeError, ValueError):
                return f"{value}（格式 {spec} 不适用）"
    return value if isinstance(value, str) else str(value)


__all__ += ["GLUE_ROLE", "glue_records", "glue_display"]


def _width(s: str) -> int:
    """Columns ``s`` takes in a monospace font: CJK and full-width characters count two."""
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in s)


def _pad(s: str, width: int, right: bool) -> str:
    gap = " " * max(0, width - _width(s))
    return gap + s if right else s + gap


class Table:
    """Rows shown as an HTML table (website, Jupyter, Colab) and, as plain text, padded by
    display width so that Chinese and ASCII columns line up (website-review M1, M6).

    ``align``: one letter per column, "l" or "r"; default: first column left, the rest right.
    Cells are shown with ``str``; format numbers before passing them.
    """

    def __init__(self, rows, header=None, align: str | None = None):
        self.rows = [[str(c) for c in r] for r in rows]
        self.header = [str(h) for h in header] if header is not None else None
        ncols = {len(r) for r in self.rows} | ({len(self.header)} if self.header else set())
        if len(ncols) > 1:
            raise ValueError(f"every row (and the header) needs the same number of cells, got {sorted(ncols)}")
        n = ncols.pop() if ncols else 0
        align = align or ("l" + "r" * max(0, n - 1))
        if len(align) != n or set(align) - {"l", "r"}:
            raise ValueError(f"align needs one of 'l'/'r' per column ({n}), got {align!r}")
        self.align = align

    def __repr__(self) -> str:
        lines = ([self.header] if self.header else []) + self.rows
        if not lines:
            return ""
        widths = [max(_width(r[i]) for r in lines) for i in range(len(self.align))]
        out = ["  ".join(_pad(c, w, a == "r") for c, w, a in zip(r, widths, self.align)).rstrip()
               for r in lines]
        if self.header:
            out.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(out)

    def _repr_html_(self) -> str:
        import html as _h
        style = lambda a: ' style="text-align:right"' if a == "r" else ' style="text-align:left"'
        head = ("<thead><tr>" + "".join(f"<th{style(a)}>{_h.escape(c)}</th>" for c, a in zip(self.header, self.align))
                + "</tr></thead>") if self.header else ""
        body = "".join("<tr>" + "".join(f"<td{style(a)}>{_h.escape(c)}</td>" for c, a in zip(r, self.align))
                       + "</tr>" for r in self.rows)
        return f'<table class="book-table">{head}<tbody>{body}</tbody></table>'


def table(rows, header=None, align: str | None = None) -> Table:
    """A ``Table`` of ``rows`` (end a cell with it, or ``display`` it)."""
    return Table(rows, header, align)
