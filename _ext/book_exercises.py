"""Exercise pages on the website: answers stay hidden until the reader asks for them.

What the reader of ``exercises/*.html`` sees for each question:

* the question (sphinx-exercise ``{exercise}``), titled with its own number ("练习 5.1"), not
  with sphinx-exercise's book-wide counter ("练习 85 (练习 5.1)");
* the cell a student fills in: the reference cell with each ``### BEGIN/END SOLUTION`` block
  replaced by the same stub the student notebooks get (``scaling_lib.grading.strip_notebook``),
  and no output;
* a closed ``<details>`` titled 解答 that holds the reference code (markers removed), its output
  (the ✓ line from ``check``) and the worked explanation.

``<details>`` is closed without JavaScript, so no answer flashes on screen while scripts load,
and the browser test can check that no solution code is visible. Runs as a post-transform on
every HTML page (chapters may use ``{solution}`` too); the notebooks themselves are unchanged.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

_BEGIN = re.compile(r"^[ \t]*###\s*BEGIN SOLUTION\s*$", re.M)
_MARKER = re.compile(r"^[ \t]*###\s*(BEGIN|END) SOLUTION\s*\n?", re.M)
SOLUTION_TITLE = "解答"
REFERENCE_CAPTION = "参考代码和它的输出："


class details(nodes.General, nodes.Element):
    """``<details>``: a box the reader opens; closed by default."""


class summary(nodes.General, nodes.TextElement):
    """The always-visible title line of a ``details`` box."""


def _visit_details(self, node):
    self.body.append(self.starttag(node, "details"))


def _depart_details(self, node):
    self.body.append("</details>\n")


def _visit_summary(self, node):
    self.body.append(self.starttag(node, "summary", suffix=""))


def _depart_summary(self, node):
    self.body.append("</summary>\n")


def _skip(self, node):
    pass


def _is_code_cell(node) -> bool:
    return isinstance(node, nodes.container) and node.get("nb_element") == "cell_code"


def _part(cell, element):
    for child in cell.children:
        if isinstance(child, nodes.container) and child.get("nb_element") == element:
            return child
    return None


def _set_code(literal: nodes.literal_block, code: str) -> None:
    literal.children = []
    literal += nodes.Text(code)
    literal.rawsource = code


def student_stub(source: str, where: str = "exercise cell") -> str:
    """The cell as the student copy has it: each solution block replaced by its stub."""
    import nbformat
    from scaling_lib.grading import strip_notebook

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    return strip_notebook(nb, where).cells[0].source


def _is_exercise(node) -> bool:
    from sphinx_exercise.nodes import is_exercise_node
    return is_exercise_node(node)


def _following_solution(cell):
    """The solution node after ``cell`` among its siblings, before the next exercise."""
    from sphinx_exercise.nodes import solution_node

    parent = cell.parent
    for sib in parent.children[parent.index(cell) + 1:]:
        if isinstance(sib, (solution_node, details)):
            return sib
        if _is_exercise(sib) or _is_code_cell(sib):
            return None
    return None


def _solution_box(title_text: str, body: list, ids=(), classes=()) -> details:
    box = details(classes=["solution", "book-solution", *classes], ids=list(ids))
    box += summary("", title_text)
    content = nodes.container(classes=["solution-content"])
    content.extend(body)
    box += content
    return box


class HideAnswers(SphinxPostTransform):
    """Exercise titles by their own number; reference cells and explanations in ``<details>``."""

    default_priority = 25  # after sphinx-exercise's title resolution (20, 21)
    formats = ("html",)

    def run(self, **kwargs):
        from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node, solution_node

        docname = self.env.docname
        # 1. the reference cells: stub on the page, the original into the solution box
        for cell in list(self.document.findall(_is_code_cell)):
            src_part = _part(cell, "cell_code_source")
            literal = next(iter(src_part.findall(nodes.literal_block)), None) if src_part else None
            if literal is None or not _BEGIN.search(literal.astext()):
                continue
            source = literal.astext()
            reference = cell.deepcopy()
            ref_literal = next(iter(reference.findall(nodes.literal_block)))
            _set_code(ref_literal, _MARKER.sub("", source).strip("\n"))
            reference["classes"] = [c for c in reference["classes"] if not c.startswith("tag_")] + ["reference-cell"]
            _set_code(literal, student_stub(source, f"{docname}, cell {cell.get('cell_index')}"))
            out = _part(cell, "cell_code_output")
            if out is not None:
                cell.remove(out)
            cell["classes"].append("student-cell")
            caption = nodes.paragraph("", REFERENCE_CAPTION, classes=["reference-caption"])
            sol = _following_solution(cell)
            if sol is None:
                box = _solution_box(SOLUTION_TITLE, [caption, reference])
                cell.parent.insert(cell.parent.index(cell) + 1, box)
            else:
                sol_section = next((c for c in sol.children if isinstance(c, (nodes.section, nodes.container))),
                                   None)
                target = sol_section if sol_section is not None else sol
                target.insert(0, reference)
                target.insert(0, caption)

        # 2. solution directives -> closed <details> titled 解答
        for sol in list(self.document.findall(solution_node)):
            body = []
            for child in sol.children:
                if isinstance(child, nodes.title):
                    continue
                if isinstance(child, nodes.section):  # sphinx-exercise's id="solution-content"
                    body.extend(child.children)
                else:
                    body.append(child)
            classes = [c for c in sol["classes"] if c not in ("solution", "dropdown", "admonition")]
            box = _solution_box(SOLUTION_TITLE, [c.deepcopy() for c in body], ids=sol["ids"], classes=classes)
            sol.replace_self(box)

        # 3. exercise titles: "练习 5.1", not "练习 85 (练习 5.1)"; no duplicate ids
        for ex in list(self.document.findall(_is_exercise)):
            title = ex.children[0] if ex.children and isinstance(ex.children[0], nodes.title) else None
            if title is not None:
                text = title.astext().strip()
                m = re.fullmatch(r"(?:\S+\s*)?\((.+)\)", text) if "(" in text else None
                if m:  # "练习 (练习 5.1)" or " (练习 5.1)" after numfig: keep the author's title
                    inner = [c for c in title.children]
                    new_title = nodes.title()
                    depth, started = 0, False
                    for c in inner:  # copy the children between the outer parentheses
                        if isinstance(c, nodes.Text):
                            s = str(c)
                            if not started and "(" in s:
                                s = s.split("(", 1)[1]
                                started = True
                            elif not started:
                                continue
                            if c is inner[-1] and s.rstrip().endswith(")"):
                                s = s.rstrip()[:-1]
                            if s:
                                new_title += nodes.Text(s)
                        elif started:
                            new_title += c.deepcopy()
                    title.replace_self(new_title)
            for sec in ex.findall(nodes.section):
                if "exercise-content" in sec["ids"]:
                    sec["ids"].remove("exercise-content")
            if isinstance(ex, exercise_enumerable_node):  # drop the book-wide number
                plain = exercise_node("", *ex.children, **ex.attributes)
                ex.replace_self(plain)


def setup(app):
    app.add_node(details, html=(_visit_details, _depart_details), latex=(_skip, _skip),
                 text=(_skip, _skip), man=(_skip, _skip), texinfo=(_skip, _skip))
    app.add_node(summary, html=(_visit_summary, _depart_summary), latex=(_skip, _skip),
                 text=(_skip, _skip), man=(_skip, _skip), texinfo=(_skip, _skip))
    app.add_post_transform(HideAnswers)
