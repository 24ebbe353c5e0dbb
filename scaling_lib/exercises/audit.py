"""Audit of the exercise registry against the book: is an answer printed in a chapter?

``python -m scaling_lib.exercises.audit`` prints, per chapter, the exercises whose expected value
the chapter shows (glued numbers from ``docs/ledger.tsv`` and the text outputs of the executed
``chapters/*.ipynb``), the declared slips and valid alternatives, and the share of reasoning
items. ``tests/test_exercises.py`` asserts the same things.

What "shows the answer" means here (issue #19 item 1): a number displayed in a chapter with
``s`` significant digits matches an expected value ``e`` when ``e``, read in the unit written
after the number (559 µs is 5.59e-4 s, 8.4 MB is 8.4e6 bytes, 18% is 0.18; a bare number is
read in the exercise's own unit), rounded to ``s`` significant digits is that number, for
``s >= 3``; a number shown with one or two significant digits matches only when it *is* the
value (``e`` has no more digits than the page shows). The chapter's numbers are its glued values
(docs/ledger.tsv, and the prose with each glued value in place, so its unit is read too), its
typed prose and its printed outputs; outputs of measurements and widgets (``NBVAL_IGNORE_OUTPUT``,
``nbval-ignore-output``) differ on every machine and are left out. Values in ``TRIVIAL`` (and
small counts and powers of two, ``trivial_reason``) never count.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..book import GLUE_ROLE, glue_display, glue_records

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


_NUM = re.compile(r"(?<![\w.])(?P<num>[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?"
                  r"|[-+]?\.\d+(?:[eE][-+]?\d+)?)(?![\w.]\d)"
                  r"(?:\s?(?P<unit>µs|μs|us|ms|ns|s|秒|毫秒|微秒|纳秒|KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB|PB|"
                  r"k|K|M|G|T|P|B|万|亿|%))?(?![A-Za-z])")
_TAG = re.compile(r"<[^>]+>")

# how a chapter may write a quantity with a prefix: the factor from the base unit to the display
TIME_UNITS = {"s": 1.0, "秒": 1.0, "ms": 1e3, "毫秒": 1e3, "µs": 1e6, "μs": 1e6, "us": 1e6, "微秒": 1e6,
              "ns": 1e9, "纳秒": 1e9}
SIZE_UNITS = {"k": 1e-3, "K": 1e-3, "kB": 1e-3, "KB": 1e-3, "M": 1e-6, "MB": 1e-6, "G": 1e-9, "GB": 1e-9,
              "T": 1e-12, "TB": 1e-12, "P": 1e-15, "PB": 1e-15, "万": 1e-4, "亿": 1e-8,
              "KiB": 2.0**-10, "MiB": 2.0**-20, "GiB": 2.0**-30, "TiB": 2.0**-40}


@dataclass(frozen=True)
class Shown:
    """One number as a chapter shows it."""

    text: str      # as displayed ("6.98e-04", "240", "1,234")
    value: float
    sig: int       # significant digits displayed
    where: str     # "chapters/01_roofline: ledger ch01-dthr" or "...: cell 12 output"
    unit: str = ""  # the unit written right after it ("µs", "MB", "%"), if any


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
        tok = m.group("num")
        try:
            v = float(tok.replace(",", ""))
        except ValueError:
            continue
        if not math.isfinite(v) or v == 0:
            continue
        out.append(Shown(tok, v, sig_digits(tok), where, m.group("unit") or ""))
    return out


def _round_sig(x: float, s: int) -> float:
    if x == 0 or not math.isfinite(x):
        return x
    k = s - 1 - math.floor(math.log10(abs(x)))
    return round(x, k)


def kind_of(unit: str) -> str:
    """What an exercise's unit measures, for reading prefixes: time, ratio, intensity or size."""
    u = (unit or "").strip()
    if "/字节" in u or "/byte" in u:
        return "intensity"
    if u in ("", "倍") or any(w in u for w in ("比", "比例", "占比", "效率", "利用率", "MFU")):
        return "ratio"
    if "秒" in u or re.search(r"(^|[^A-Za-z/])s($|[^A-Za-z])", u) and "/s" not in u:
        return "time"
    return "size"


def factors(shown: Shown, kind: str) -> tuple:
    """The factors f such that the chapter's number is (expected value) × f."""
    u = shown.unit
    if kind == "time" and u in TIME_UNITS:
        return (TIME_UNITS[u],)
    if kind == "size" and u in SIZE_UNITS:
        return (SIZE_UNITS[u], 1.0) if u in ("B", "k", "K") else (SIZE_UNITS[u],)
    if kind == "size" and u == "B":
        return (1.0, 1e-9)  # bytes, or billions (70B parameters)
    if kind == "ratio" and u == "%":
        return (100.0,)
    if u in TIME_UNITS or u in SIZE_UNITS or u in ("B", "%"):
        return ()  # a number with a unit of another kind (559 µs is not 559 bytes)
    return (1.0,)


def matches(e: float, shown: Shown, kind: str = "size") -> bool:
    """True if the chapter's number ``shown`` is the expected value ``e`` to the displayed
    precision, read with the unit written after it (559 µs is 5.59e-4 s; 16 chips are not 16 µs)."""
    if not math.isfinite(e) or e == 0:
        return False
    for f in factors(shown, kind):
        x = e * f
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


_GLUE = GLUE_ROLE


def _with_glue(text: str, records: dict) -> str:
    """Prose with each {glue:text}`key:spec` replaced by the value the page shows, so the unit
    written after it ("{glue:text}`ch03-x:.0f` µs") stays next to the number."""
    def one(m):
        target = m.group(2)
        if "::" in target:
            return " "  # a value glued in another notebook: in that notebook's ledger lines
        key, _, spec = target.partition(":")
        if key.strip() not in records:
            return " "
        return glue_display(records[key.strip()], spec.strip() if m.group(1) in ("text", None) else "")
    return _GLUE.sub(one, text)


@lru_cache(maxsize=None)
def _outputs(nb_path: str) -> tuple:
    nb = json.loads(Path(nb_path).read_text(encoding="utf-8"))
    stem = f"{Path(nb_path).parent.name}/{Path(nb_path).stem}"
    records = glue_records(nb)
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
            text = _with_glue("".join(cell["source"]), records)
            shown.extend(numbers_in(_prose(text), f"{stem}: cell {i} text"))
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
    """A markdown cell's numbers as the reader sees them (glued values already put in place by
    ``_with_glue``): other roles, labels and links removed, LaTeX ``1.97 \\times 10^{14}`` read
    as 1.97e14."""
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
    kind = kind_of(ex.unit)
    hits = []
    for e in flat_values(ex.reference(values)):
        if trivial_reason(e) is not None:
            continue
        for s in shown:
            if matches(e, s, kind):
                hits.append((e, s))
                break
    return hits


def main(argv: list | None = None) -> None:  # pragma: no cover - a report for people
    """``python -m scaling_lib.exercises.audit [N ...]``: per chapter (all by default), the
    exercises whose expected numbers the chapter shows, and where."""
    import sys
    from .. import devices
    devices.setup(8)
    from . import for_chapter
    args = sys.argv[1:] if argv is None else argv
    chapters = ([int(a) for a in args] if args else
                sorted({int(p.stem[:2]) for p in (ROOT / "exercises").glob("*.ipynb")}))
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
