"""The ledger of glued numbers (docs/ledger.tsv) matches what the executed notebooks glue, so a change
that moves a number in the book shows in review as a one-line diff (regenerate: `make ledger`)."""
import pytest
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import ledger  # noqa: E402


def test_ledger_is_up_to_date():
    diff = ledger.check()
    assert not diff, "docs/ledger.tsv is stale (run `make ledger`):\n" + "\n".join(diff[:60])


def test_display_follows_the_format_spec_the_prose_uses():
    assert ledger.glue_display("1970000000000000.0", ".3g") == "1.97e+15"
    assert ledger.glue_display("240.5", ".0f") == "240"
    assert ledger.glue_display("'8.2e11'", "") == "8.2e11"          # a glued string shows without quotes
    assert ledger.glue_display("0.4", ".0%") == "40%"
    assert ledger.glue_display("'abc'", ".1f") == "abc（格式 .1f 不适用）"
    with pytest.raises(ValueError, match="stored text"):
        ledger.glue_display(0.4, "")


def test_one_display_rule_for_ledger_and_exercise_audit():
    """The exercise audit reads glued numbers with the ledger's rule (one function, in book)."""
    from scaling_lib import book
    from scaling_lib.exercises import audit
    assert ledger.glue_display is book.glue_display is audit.glue_display
    assert ledger.glue_records is audit.glue_records
    assert audit._with_glue("x {glue:text}`k:.1f` GB", {"k": "2.25"}) == "x 2.2 GB"


def test_roles_are_found_with_their_format_and_page(tmp_path):
    md = tmp_path / "chapters" / "05_x.md"
    md.parent.mkdir()
    md.write_text("a {glue:text}`k1:.1f` b {glue}`k2` c {glue:text}`../chapters/01_y.ipynb::k3:.0f`",
                  encoding="utf-8")
    assert ledger._uses(md) == [("chapters/05_x", "k1", ".1f"), ("chapters/05_x", "k2", ""),
                                ("chapters/01_y", "k3", ".0f")]


def test_claims_are_counted_per_notebook():
    counts = ledger.claims()
    assert set(counts) == {f"{p.parent.name}/{p.stem}" for p in ledger.notebooks()}
    assert sum(counts.values()) > 0
