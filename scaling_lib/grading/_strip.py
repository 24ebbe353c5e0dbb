"""Student copies: the reference notebooks without solutions, and one copy per student.

``python -m scaling_lib.grading strip`` turns ``exercises/*.ipynb`` into ``exercises/student/``
(solutions replaced by ``var = ...`` or a ``def`` stub, solution dropdowns and outputs removed).

``python -m scaling_lib.grading variants --secret-file course.key --students roster.csv`` writes
one copy per student (``OUT/<student id>/NN_name.ipynb``) in which the numbers of the
exercises that declare ``params`` are that student's (drawn from the secret and the id, see
``scaling_lib.exercises.draw``): the statements show them, and the ``P = variant(N)`` cell
becomes ``P = variant(N, "<id>", {...})`` so that ``check()`` compares with the expected values for
those numbers at home. The grader derives the numbers again from the secret; it never reads them
from a submission.
"""
from __future__ import annotations

import copy
import inspect
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_BEGIN = re.compile(r"^[ \t]*###\s*BEGIN SOLUTION\s*$", re.M)
_END = re.compile(r"^[ \t]*###\s*END SOLUTION\s*$", re.M)
_CHECK = re.compile(r"""\bcheck\(\s*["']([^"']+)["']""")
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|:{3,})\{(?P<name>solution|solution-start)\}.*$")
_SOLUTION_END = re.compile(r"^[ \t]*(`{3,}|:{3,})\{solution-end\}.*$")
STUDENT_PLACEHOLDER = "  # 在这里填入你的答案"
FUNCTION_PLACEHOLDER = "  # 在这里写出函数体"


class StripError(ValueError):
    """A reference notebook cannot be turned into a student copy (says which cell and why)."""


def _stub_for(ex, indent: str, solution: str) -> str:
    if ex.kind != "function":
        return f"{indent}{ex.var} = ...{STUDENT_PLACEHOLDER}"
    return f"{indent}def {ex.var}({_signature_text(ex, solution)}):\n{indent}    ...{FUNCTION_PLACEHOLDER}"


def _signature_text(ex, solution: str) -> str:
    """The reference function's parameters, written plainly (names and defaults, no annotations)."""
    try:
        sig = inspect.signature(ex.expected)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        parts, star_done = [], False
        params = list(sig.parameters.values())
        for i, p in enumerate(params):
            if p.kind is p.VAR_POSITIONAL:
                parts.append(f"*{p.name}")
                star_done = True
                continue
            if p.kind is p.VAR_KEYWORD:
                parts.append(f"**{p.name}")
                continue
            if p.kind is p.KEYWORD_ONLY and not star_done:
                parts.append("*")
                star_done = True
            s = p.name if p.default is p.empty else f"{p.name}={p.default!r}"
            parts.append(s)
            if p.kind is p.POSITIONAL_ONLY and (i + 1 == len(params)
                                                 or params[i + 1].kind is not p.POSITIONAL_ONLY):
                parts.append("/")
        return ", ".join(parts)
    m = re.search(rf"^\s*def\s+{re.escape(ex.var)}\s*\((.*?)\)\s*(->[^:]*)?:", solution, re.M | re.S)
    return m.group(1).strip() if m else ""


def _strip_code(source: str, where: str) -> str:
    from ..exercises import registry
    begins = list(_BEGIN.finditer(source))
    ends = list(_END.finditer(source))
    if not begins and not ends:
        return source
    if len(begins) != len(ends):
        raise StripError(f"{where}: {len(begins)} '### BEGIN SOLUTION' but {len(ends)} '### END SOLUTION'")
    ids = _CHECK.findall(source)
    if not ids:
        raise StripError(f"{where}: a solution block without check(\"N.M\", ...) in the same cell; "
                         "the grader cannot tell which variable to leave for the reader")
    reg = registry()
    unknown = [i for i in ids if i not in reg]
    if unknown:
        raise StripError(f"{where}: check() uses unknown exercise id(s) {', '.join(unknown)}")
    exs = [reg[i] for i in dict.fromkeys(ids)]
    if len(begins) == len(exs):
        groups = [[e] for e in exs]
    elif len(begins) == 1:
        groups = [exs]
    else:
        raise StripError(f"{where}: {len(begins)} solution blocks but {len(exs)} checked exercises; "
                         "use one block per check() or one block for all")
    out, pos = [], 0
    for b, e, group in zip(begins, ends, groups):
        if e.start() < b.end():
            raise StripError(f"{where}: '### END SOLUTION' before '### BEGIN SOLUTION'")
        indent = re.match(r"[ \t]*", source[b.start():b.end()]).group(0)
        solution = source[b.end():e.start()]
        out.append(source[pos:b.start()])
        out.append("\n".join(_stub_for(x, indent, solution) for x in group))
        pos = e.end()
    out.append(source[pos:])
    return "".join(out)


_THOUGHT = re.compile(r"^[ \t]*(?:`{3,}|:{3,})\{exercise\}[ \t]*思考题.*\n(?:[ \t]*:[A-Za-z-]+:.*\n)*?"
                      r"[ \t]*:label:[ \t]*(?P<label>\S+)", re.M)
_LINK_UP = re.compile(r"\]\(\.\./(chapters|appendix|exercises)/")
MODEL_ANSWER = "参考答案（先写下你自己的想法，再点开对照）"


def thought_labels(nb) -> set:
    """Labels of the 思考题 (free-text questions) of a notebook: their model answers stay in the
    student copy, folded, after the reader's own cell."""
    out = set()
    for c in nb.cells:
        if c.cell_type == "markdown":
            out |= {m.group("label") for m in _THOUGHT.finditer(c.source)}
    return out


def _model_answer(lines: list[str]) -> str:
    """A {solution} body as a folded HTML block that Jupyter and Colab render (options dropped)."""
    body = [ln for ln in lines if not re.match(r"^[ \t]*:[A-Za-z-]+:", ln)]
    text = "\n".join(body).strip("\n")
    return f"<details>\n<summary>{MODEL_ANSWER}</summary>\n\n{text}\n\n</details>"


def _student_links(source: str) -> str:
    """Links of a reference notebook (exercises/) as seen from exercises/student/: one folder deeper."""
    return _LINK_UP.sub(lambda m: f"](../../{m.group(1)}/", source)


def _strip_markdown(source: str, keep: set | frozenset = frozenset()) -> str:
    """Remove {solution} directive blocks (and {solution-start}...{solution-end} pairs); the
    model answers of the labels in ``keep`` (思考题) become folded ``<details>`` blocks."""
    if "{solution" not in source:
        return source
    lines = source.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        if m.group("name") == "solution-start":
            j = i + 1
            while j < len(lines) and not _SOLUTION_END.match(lines[j]):
                j += 1
            i = j + 1
            continue
        fence = m.group("fence")
        ch, n = fence[0], len(fence)
        close = re.compile(rf"^[ \t]*{re.escape(ch)}{{{n},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        label = lines[i].split("}", 1)[1].strip() if "}" in lines[i] else ""
        if label in keep:
            out.append(_model_answer(lines[i + 1:j]))
        i = j + 1
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n")


def strip_notebook(nb, name: str = "notebook"):
    """The student copy of a reference exercise notebook (an nbformat NotebookNode; not modified)."""
    import copy
    import nbformat

    new = copy.deepcopy(nb)
    keep = thought_labels(new)
    cells = []
    for i, c in enumerate(new.cells):
        where = f"{name}, cell {i}"
        c.metadata.pop("execution", None)
        if c.cell_type == "code":
            c.source = _strip_code(c.source, where)
            c.outputs = []
            c.execution_count = None
        elif c.cell_type == "markdown":
            c.source = _student_links(_strip_markdown(c.source, keep))
            if not c.source.strip():
                continue
        cells.append(c)
    new.cells = cells
    nbformat.validate(new)
    return new


def _write_text(nb) -> str:
    import nbformat
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def strip(src: str | Path = "exercises", out: str | Path = "exercises/student", *,
          check_only: bool = False) -> list[str]:
    """Write a student copy for every ``src/*.ipynb`` into ``out``.

    With ``check_only`` nothing is written; returns the stale or missing copies (and stray files
    in ``out`` without a reference notebook). Otherwise returns the files written.
    Relative paths are taken from the working directory, or from the repository root when the
    working directory has no such folder.
    """
    import nbformat

    src, out = Path(src), Path(out)
    if not src.is_absolute() and not src.is_dir() and (ROOT / src).is_dir():
        src, out = ROOT / src, (out if out.is_absolute() else ROOT / out)  # run from elsewhere
    if not src.is_dir():
        raise FileNotFoundError(f"no such folder of reference notebooks: {src}")
    refs = sorted(p for p in src.glob("*.ipynb"))
    result = []
    for p in refs:
        nb = nbformat.read(p, as_version=4)
        text = _write_text(strip_notebook(nb, name=p.name))
        target = out / p.name
        old = target.read_text(encoding="utf-8") if target.exists() else None
        if old == text:
            continue
        if check_only:
            result.append(f"{_rel_path(target)}: {'missing' if old is None else 'stale'} "
                          f"(run python -m scaling_lib.grading strip)")
        else:
            out.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            result.append(str(_rel_path(target)))
    if check_only and out.is_dir():
        names = {p.name for p in refs}
        for q in sorted(out.glob("*.ipynb")):
            if q.name not in names:
                result.append(f"{_rel_path(q)}: no reference notebook {q.name} in {_rel_path(src)}")
    return result


def _rel_path(p: Path):
    try:
        return p.relative_to(ROOT)
    except ValueError:
        return p




# ---- per-student variants ------------------------------------------------------------------

_EXERCISE_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|:{3,})\{exercise\}[ \t]*(?:练习[ \t]*)?"
                            r"(?P<id>\d{1,2}\.\d{1,2}[a-z]?)\b.*$")
_VARIANT_CALL = re.compile(r"\bvariant\(\s*(?P<chapter>\d{1,2})\s*\)")


def _token(text: str) -> re.Pattern:
    """``text`` as a whole number/word: not inside 5120, 0.512, x512 or 512_0 (ASCII bounds, so
    Chinese characters right next to it still count as a boundary)."""
    return re.compile(r"(?<![0-9A-Za-z_.])" + re.escape(text) + r"(?![0-9A-Za-z_]|\.[0-9])")


def _statement_blocks(source: str):
    """[(start, end, exercise id)] character spans of ``{exercise}`` blocks in a markdown cell."""
    lines = source.split("\n")
    offsets, pos = [], 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1
    out, i = [], 0
    while i < len(lines):
        m = _EXERCISE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group("fence")
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        end = offsets[j] if j < len(lines) else len(source)
        out.append((offsets[i + 1] if i + 1 < len(lines) else len(source), end, m.group("id")))
        i = j + 1
    return out


def _replace_in_statement(text: str, subs: list) -> tuple[str, set]:
    """Replace each (name, old text, new text) in ``text``, all at once (a new value that equals
    another parameter's old text is not replaced again), except on directive-option lines
    (``:label: ex-01-5``); returns the new text and the names found."""
    if not subs:
        return text, set()
    by_old = {old: (name, new) for name, old, new in subs}
    alts = "|".join(re.escape(o) for o in sorted(by_old, key=len, reverse=True))
    pat = re.compile(r"(?<![0-9A-Za-z_.])(?:" + alts + r")(?![0-9A-Za-z_]|\.[0-9])")
    found = set()

    def one(m):
        name, new = by_old[m.group(0)]
        found.add(name)
        return new

    out = [line if re.match(r"^[ \t]*:[A-Za-z-]+:", line) else pat.sub(one, line)
           for line in text.split("\n")]
    return "\n".join(out), found


def variant_notebook(nb, student: str, values: dict, name: str = "notebook"):
    """A copy of ``nb`` (a reference or student notebook) with ``student``'s numbers.

    ``values`` is {chapter: {param: value}} (from ``scaling_lib.exercises.draw``). Statements of
    exercises that declare a parameter show the student's value instead of the book's; the
    ``variant(N)`` call becomes ``variant(N, "<student>", {...})``; the notebook's metadata
    records the student id (``scaling_book.student``). Raises ``StripError`` when a parameter
    appears in no statement or the notebook has no ``variant(N)`` call for a chapter with
    parameters (the copy would silently show the book's numbers).
    """
    from ..exercises import chapter_params, number_text, registry

    reg = registry()
    new = copy.deepcopy(nb)
    found: dict = {ch: set() for ch in values}
    calls = set()
    for i, c in enumerate(new.cells):
        if c.cell_type == "markdown":
            src = c.source
            pieces, pos = [], 0
            for start, end, ex_id in _statement_blocks(src):
                ex = reg.get(ex_id)
                if ex is None or not ex.params or ex.chapter not in values:
                    continue
                subs = []
                texts = [p.text for p in ex.params.values()]
                if len(set(texts)) != len(texts):
                    raise StripError(f"{name}: exercise {ex_id} has two parameters written the same way "
                                     "(Param.text must differ within an exercise)")
                for pname, p in ex.params.items():
                    v = values[ex.chapter].get(pname, p.default)
                    if v != p.default:
                        subs.append((pname, p.text, number_text(v)))
                    elif _token(p.text).search(src[start:end]):
                        found[ex.chapter].add(pname)
                text, hit = _replace_in_statement(src[start:end], subs)
                found[ex.chapter] |= hit
                pieces += [src[pos:start], text]
                pos = end
            pieces.append(src[pos:])
            c.source = "".join(pieces)
        elif c.cell_type == "code":
            def call(m, cell=i):
                ch = int(m.group("chapter"))
                if ch not in values:
                    return m.group(0)
                calls.add(ch)
                vals = ", ".join(f"{json.dumps(k)}: " + (json.dumps(v, ensure_ascii=False) if isinstance(v, str)
                                                          else number_text(v))
                                 for k, v in sorted(values[ch].items()))
                return f"variant({ch}, {json.dumps(student, ensure_ascii=False)}, {{{vals}}})"
            c.source = _VARIANT_CALL.sub(call, c.source)
    for ch, vals in values.items():
        params = chapter_params(ch)
        if not params:
            continue
        if ch not in calls:
            raise StripError(f"{name}: chapter {ch} has exercise parameters but no `P = variant({ch})` "
                             "code cell; the student's copy would check against the book's numbers")
        missing = sorted(set(params) - found[ch])
        if missing:
            raise StripError(f"{name}: parameter(s) {', '.join(missing)} of chapter {ch} appear in no "
                             "exercise statement that declares them (Param.text must be written there)")
    meta = dict(new.metadata.get("scaling_book", {}))
    meta.update({"student": student, "chapters": sorted(values)})
    new.metadata["scaling_book"] = meta
    return new


def safe_name(student: str) -> str:
    """A file-name-safe form of a student id (letters, digits, CJK, ``._-``)."""
    s = re.sub(r"[^\w.-]+", "_", student.strip(), flags=re.UNICODE).strip("._")
    return s[:80] or "student"


def make_variants(secret: bytes, students, src: str | Path = "exercises", out: str | Path = "variants",
                  *, names=None, with_solutions: bool = False) -> list[Path]:
    """Write ``out/<student>/<notebook>`` for every student and reference notebook.

    ``students``: ids. ``names``: notebook stems or chapter numbers to include (default all).
    ``with_solutions`` keeps the reference solutions (for testing the grader: such a copy must
    score full marks for its own student and not for another).
    """
    import nbformat
    from ..exercises import chapter_params, draw, normalise_student

    src, out = Path(src), Path(out)
    if not src.is_absolute() and not src.is_dir() and (ROOT / src).is_dir():
        src = ROOT / src
    if not src.is_dir():
        raise FileNotFoundError(f"no such folder of reference notebooks: {src}")
    students = [s for s in students]
    if not students:
        raise ValueError("no students given")
    seen: dict = {}
    for s in students:
        key = normalise_student(s)
        folder = safe_name(s)
        if key in seen or folder.casefold() in {safe_name(t).casefold() for t in seen.values()}:
            raise ValueError(f"student id {s!r} appears twice (or maps to the same folder as another)")
        seen[key] = s
    refs = sorted(src.glob("*.ipynb"))
    if names:
        wanted = {str(n) for n in names}
        refs = [p for p in refs if p.stem in wanted or p.stem.split("_")[0].lstrip("0") in wanted
                or p.stem.split("_")[0] in wanted]
    if not refs:
        raise FileNotFoundError(f"no reference notebooks selected in {src}")
    written = []
    for p in refs:
        nb = nbformat.read(p, as_version=4)
        base = nb if with_solutions else strip_notebook(nb, name=p.name)
        chapters = sorted({int(m) for c in base.cells if c.cell_type == "code"
                           for m in _VARIANT_CALL.findall(c.source)} |
                          {int(x.split(".")[0]) for c in base.cells if c.cell_type == "code"
                           for x in _CHECK.findall(c.source)})
        for s in students:
            values = {ch: draw(chapter_params(ch), secret, s, ch) for ch in chapters if chapter_params(ch)}
            nb_s = variant_notebook(base, s.strip(), values, name=p.name) if values else copy.deepcopy(base)
            if not values:
                nb_s.metadata["scaling_book"] = {"student": s.strip(), "chapters": chapters}
            target = out / safe_name(s) / p.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_write_text(nb_s), encoding="utf-8")
            written.append(target)
    return written
