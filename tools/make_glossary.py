"""Generate appendix/glossary.md (术语表) from the project glossary and the chapter sources.

    python tools/make_glossary.py [--glossary ../shared/spec/GLOSSARY.md]

For each term of the glossary's master table (§5) it finds where the book teaches it: the first
occurrence of the Chinese term in the chapter the glossary names (else in any chapter, in reading
order), and links the section label that precedes it. The output is committed; rerun this after
chapters change (tests/test_foundation.py checks that every linked label still exists).
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rows(glossary: Path):
    text = glossary.read_text(encoding="utf-8")
    table = text[text.index("## 5."):]
    for line in table.splitlines():
        if not line.startswith("| ") or line.startswith("| English") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4:
            yield cells[0], cells[1], cells[2], cells[3]


def chapter_sources():
    return {int(p.name[:2]): p for p in sorted((ROOT / "src" / "chapters").glob("[0-9][0-9]_*.md"))}


def where(term_zh: str, chapter: str, sources) -> tuple[str | None, int | None]:
    """(label, chapter number) of the section where ``term_zh`` first appears."""
    probe = re.split(r"\s*[/／（(]\s*", term_zh)[0].strip()
    if not probe:
        return None, None
    order = []
    if chapter.isdigit() and int(chapter) in sources:
        order.append(int(chapter))
    order += [n for n in sorted(sources) if n not in order]
    # prefer the place where the term is introduced with its English name: 术语（English）
    for needle in (probe + "（", probe):
        hit = _first(needle, order, sources)
        if hit:
            return hit
    return None, None


def _first(needle, order, sources):
    for n in order:
        text = sources[n].read_text(encoding="utf-8")
        pos = text.find(needle)
        if pos < 0:
            continue
        labels = list(re.finditer(r"^\((sec-[\w-]+)\)=", text[:pos], re.M))
        if labels:
            return labels[-1].group(1), n
        first = re.search(r"^\((sec-[\w-]+)\)=", text, re.M)
        return (first.group(1) if first else None), n
    return None


def clean(note: str) -> str:
    """Drop remarks about our internal drafts (specs, seed) that mean nothing to a reader."""
    note = re.sub(r"（[^（）]*(spec|seed|d2l|CANON)[^（）]*）", "", note)
    note = re.sub(r"^(seed|d2l-zh 用法)[；。，]?\s*", "", note)
    note = re.sub(r"[^；。]*\bspec\b[^；。]*[；。]?", "", note)
    return note.strip(" ；。")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--glossary", default=str(ROOT.parent / "shared" / "spec" / "GLOSSARY.md"))
    a = ap.parse_args(argv)
    src = chapter_sources()
    out = ["(sec-appendix-glossary)=", "# 术语表", "",
           "全书每个概念只用一种写法。下表按英文排序；“在哪里讲”链接到书里第一次认真讲这个词的那一节。"
           "保留英文的词（AllGather、FLOPs、MFU……）在中文一栏也写英文。", "",
           "| English | 中文 | 在哪里讲 | 说明 |", "|---|---|---|---|"]
    n_linked = 0
    for en, zh, chap, note in rows(Path(a.glossary)):
        label, n = where(zh, chap, src)
        if label:
            link = f"{{ref}}`第{n}章 <{label}>`"
            n_linked += 1
        else:
            link = f"第{chap}章" if chap.isdigit() else "—"
        note = clean(note).replace("|", "\\|")
        out.append(f"| {en} | {zh} | {link} | {note} |")
    (ROOT / "appendix" / "glossary.md").write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"wrote appendix/glossary.md: {len(out) - 8} terms, {n_linked} linked to a section")


if __name__ == "__main__":
    main()
