"""Audit of the exercise registry against the book: is an answer printed in a chapter?

``python -m scaling_lib.exercises.audit`` prints, per chapter, the exercises whose expected value
the chapter shows (glued numbers from ``docs/ledger.tsv`` and the text outputs of the executed
``chapters/*.ipynb``), the declared slips and valid alternatives, and the share of reasoning
items. ``tests/test_exercises.py`` asserts the same things.

What "shows the answer" means here (issue #19 item 1): a number displayed in a chapter with
``s`` significant digits matches an expected value ``e`` when ``e`` (or ``e`` times a unit step
1e±3k, or ×100 for a percentage) rounded to ``s`` significant digits is that number, for
``s >= 3``; a number shown with one or two significant digits matches only when it *is* the
value (``e`` has no more digits than the page shows). Values in ``TRIVIAL`` never count.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Expected values that cannot be kept out of a chapter, each with its reason.
TRIVIAL = {
    0.0: "zero: an empty quantity (no communication, no bubble) is a conclusion, not a lookup",
    0.5: "one half: the limit of an intensity or a saving that the reader derives",
    1.0: "one: a degree or a ratio of equal things",
    2.0: "two: factors of two (FLOPs per MAC, bf16 bytes, both link directions) are everywhere",
    3.0: "three: a count of torus axes or fwd+bwd passes",
    4.0: "four: a count of chips on a small slice or a factor of four",
    8.0: "eight: chips per host, bits per byte",
    16.0: "sixteen: the side of a v5e pod",
}
# Small counts and powers of two: shapes, degrees and counts that every chapter uses as inputs.
SMALL_COUNT = 16


def trivial_reason(e: float) -> str | None:
    """Why an expected value cannot be a 'printed answer' (or None)."""
    if e in TRIVIAL:
        return TRIVIAL[e]
    if e == int(e) and 0 < abs(e) <= SMALL_COUNT:
        return f"a small count ({int(e)}): chips, hops, axes or shards, which chapters use as sizes"
    if e == int(e) and e > 0 and (int(e) & (int(e) - 1)) == 0:
        return (f"a power of two ({int(e)}): a degree or a size; chapters use these as inputs, and "
                "an exercise that asks for one tests the choice with slips and alternatives")
    return None


_NUM = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])"
                  r"|(?<![\w.])[-+]?\.\d+(?:[eE][-+]?\d+)?(?![\w])")
_TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Shown:
    """One number as a chapter shows it."""

    text: str      # as displayed ("6.98e-04", "240", "1,234")
    value: float
    sig: int       # significant digits displayed
    where: str     # "chapters/01_roofline: ledger ch01-dthr" or "...: cell 12 output"


def sig_digits(token: str) -> int:
    t = token.replace(",", "").lstrip("+-")
    mant = re.split(r"[eE]", t)[0]
    if "." in mant:
        digits = mant.replace(".", "").lstrip("0")
        return max(len(digits), 1)
    if re.search(r"[eE]", t):
        return max(len(mant.lstrip("0").rstrip("0")), 1)  # 1e9: one digit
    return max(len(mant.lstrip("0")), 1)  # an integer as printed ("240", "8192"): to the unit


def numbers_in(text: str, where: str) -> list[Shown]:
    out = []
    for m in _NUM.finditer(text):
        tok = m.group(0)
        try:
            v = float(tok.replace(",", ""))
        except ValueError:
            continue
        if not math.isfinite(v) or v == 0:
            continue
        out.append(Shown(tok, v, sig_digits(tok), where))
    return out


def _round_sig(x: float, s: int) -> float:
    if x == 0 or not math.isfinite(x):
        return x
    k = s - 1 - math.floor(math.log10(abs(x)))
    return round(x, k)


SCALES = (1.0, 1e3, 1e6, 1e9, 1e12, 1e-3, 1e-6, 1e-9, 1e-12, 100.0)
TIME_SCALES = (1.0, 1e3, 1e6, 1e9)  # s shown as ms, µs, ns
SIZE_SCALES = (1.0, 1e-3, 1e-6, 1e-9, 1e-12, 1e-15)  # bytes, FLOPs, tokens shown as k, M, G/B, T, P


def scales_for(unit: str) -> tuple:
    """Unit steps under which a chapter may show the same quantity: 1e±3k for quantities with SI
    prefixes (seconds, bytes, FLOPs, tokens), ×100 for fractions; intensities (per byte) and
    plain ratios are shown as they are."""
    u = (unit or "").strip()
    if "/字节" in u or "/byte" in u:
        return (1.0,)
    if u in ("", "倍") or any(w in u for w in ("比", "比例", "占比", "效率", "利用率", "MFU")):
        return (1.0, 100.0)
    if "秒" in u or re.search(r"(^|[^A-Za-z/])s($|[^A-Za-z])", u):
        return TIME_SCALES
    return SIZE_SCALES


def matches(e: float, shown: Shown, scales: tuple = SCALES) -> bool:
    """True if the chapter's number ``shown`` is the expected value ``e`` to the displayed precision."""
    if not math.isfinite(e) or e == 0:
        return False
    for u in scales:
        x = e * u
        if x == 0 or not math.isfinite(x):
            continue
        if shown.sig >= 3:
            if math.isclose(_round_sig(x, shown.sig), shown.value, rel_tol=1e-9):
                return True
        elif math.isclose(x, shown.value, rel_tol=1e-9):
            return True
    return False


@lru_cache(maxsize=None)
def _ledger() -> dict:
    """notebook stem -> [Shown] from docs/ledger.tsv (chapters and appendix only)."""
    out: dict = {}
    p = ROOT / "docs" / "ledger.tsv"
    if not p.exists():
        return out
    for line in p.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        key, nb, value = (line.split("\t") + ["", ""])[:3]
        if not nb.startswith(("chapters/", "appendix/")):
            continue
        out.setdefault(nb, []).extend(numbers_in(value, f"{nb}: glue {key}"))
    return out


@lru_cache(maxsize=None)
def _outputs(nb_path: str) -> tuple:
    nb = json.loads(Path(nb_path).read_text(encoding="utf-8"))
    stem = f"{Path(nb_path).parent.name}/{Path(nb_path).stem}"
    shown = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] not in ("code", "markdown"):
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        if "remove-cell" in tags or "remove-output" in tags:
            continue
        if cell["cell_type"] == "code" and ("NBVAL_IGNORE_OUTPUT" in "".join(cell["source"])
                                            or "nbval-ignore-output" in tags):
            continue  # measurements and widgets: different on every machine, not the chapter's numbers
        if cell["cell_type"] == "markdown":
            shown.extend(numbers_in(_prose("".join(cell["source"])), f"{stem}: cell {i} text"))
            continue
        for o in cell.get("outputs", []):
            texts = []
            if o.get("output_type") == "stream":
                texts.append(o.get("text", ""))
            data = o.get("data", {})
            if "application/papermill.record/text/plain" in data or o.get("metadata", {}).get("scrapbook"):
                continue  # glue records: in the ledger, as the prose displays them
            if "text/html" in data:
                texts.append(_TAG.sub(" ", "".join(data["text/html"])))
            elif "text/plain" in data:
                texts.append(data["text/plain"])
            for t in texts:
                t = "".join(t) if isinstance(t, list) else t
                if "<details" in t or "看代码" in t:
                    continue  # show_source: library code, not numbers of the chapter
                shown.extend(numbers_in(t, f"{stem}: cell {i} output"))
    return tuple(shown)


_ROLE = re.compile(r"\{(?:glue|eq|ref|numref|doc|cite|term|download)(?::\w+)?\}`[^`]*`")
_LABEL = re.compile(r"^\([\w-]+\)=\s*$|^:(?:label|name|class|tags):.*$", re.M)
_SCI = re.compile(r"(\d+(?:\.\d+)?)\s*\\times\s*10\^\{?(-?\d+)\}?")
_POW = re.compile(r"(?<![\d.])10\^\{?(-?\d+)\}?")


def _prose(text: str) -> str:
    """A markdown cell's numbers as the reader sees them: roles, labels and links removed (glued
    numbers are in the ledger), LaTeX ``1.97 \\times 10^{14}`` read as 1.97e14."""
    text = _ROLE.sub(" ", text)
    text = _LABEL.sub(" ", text)
    text = re.sub(r"\]\([^)]*\)", "] ", text)  # link targets (file names with digits)
    text = _SCI.sub(lambda m: f" {m.group(1)}e{m.group(2)} ", text)
    text = _POW.sub(lambda m: f" 1e{m.group(1)} ", text)
    return text


def chapter_notebooks(chapter: int) -> list[Path]:
    return sorted((ROOT / "chapters").glob(f"{chapter:02d}_*.ipynb"))


# Chapters a reader has in front of them for chapter N's exercises: its own, plus those whose
# tables the exercises point to (chapter 4's model arithmetic for 5-8).
READS = {5: (4,), 6: (4, 5), 7: (4,), 8: (4, 7), 12: ()}


def shown_numbers(chapter: int) -> list[Shown]:
    out: list = []
    for ch in (chapter, *READS.get(chapter, ())):
        for p in chapter_notebooks(ch):
            stem = f"chapters/{p.stem}"
            out.extend(_ledger().get(stem, []))
            out.extend(_outputs(str(p)))
    return out


def flat_values(v) -> list[float]:
    if isinstance(v, str):
        return []
    if isinstance(v, (list, tuple)):
        return [float(x) for x in v]
    try:
        return [float(v)]
    except (TypeError, ValueError):
        return []


def printed_answers(ex, values: dict | None = None, shown: list | None = None) -> list[tuple]:
    """[(expected entry, Shown)] for each expected number of ``ex`` that its chapter shows."""
    if ex.kind in ("function", "choice"):
        return []
    shown = shown_numbers(ex.chapter) if shown is None else shown
    scales = scales_for(ex.unit)
    hits = []
    for e in flat_values(ex.reference(values)):
        if trivial_reason(e) is not None:
            continue
        for s in shown:
            if matches(e, s, scales):
                hits.append((e, s))
                break
    return hits


def main() -> None:  # pragma: no cover - a report for people
    from .. import devices
    devices.setup(8)
    from . import for_chapter
    chapters = sorted({int(p.stem[:2]) for p in (ROOT / "exercises").glob("*.ipynb")})
    for ch in chapters:
        shown = shown_numbers(ch)
        exs = for_chapter(ch)
        hit = [(ex, printed_answers(ex, shown=shown)) for ex in exs]
        hit = [(ex, h) for ex, h in hit if h]
        print(f"chapter {ch}: {len(hit)} of {len(exs)} exercises print their answer")
        for ex, h in hit:
            print(f"   {ex.id}: " + "; ".join(f"{e:.6g} ~ {s.text} ({s.where})" for e, s in h))


if __name__ == "__main__":  # pragma: no cover
    main()
