"""The comment read two ways: as GitHub renders it (raw HTML through its tag filter) and as
a renderer that drops raw HTML does (cmark-gfm's safe mode: a mail client, a chat preview).

Every mark is Markdown or text, so the second shows every word of the first, parted the same
way; only the `<summary>` lines go, and each evidence block names its row in its first label.
And each style has one meaning: bold for labels, a code span for a claim the context does not
support, strike / slant for the word diff, a glyph for each kind of context passage.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.model import Case, Statement, StatementLabel, Statements
from flipgate.output.comment import render_comment
from flipgate.verdict import gate
from flipgate.verdict.evidence import find_unsupported

from support.factories import make_report, make_side
from support.gfm import Page, github_html, read_html, safe_html, visible_words

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cards"
RENDERERS = {"github": github_html, "safe": safe_html}


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    out = tmp_path_factory.mktemp("example")
    result = CliRunner().invoke(cli, [
        "gate", "--cases", str(EXAMPLE / "cases.jsonl"),
        "--baseline", str(EXAMPLE / "baseline.jsonl"),
        "--candidate", str(EXAMPLE / "candidate.jsonl"),
        "--config", str(EXAMPLE / ".flipgate.yml"), "--judge", "offline",
        "--out", str(out), "--no-cache"])
    assert result.exit_code == 1, result.output
    return (out / "comment.md").read_text(), json.loads((out / "report.json").read_text())


def page_of(markdown: str, renderer: str) -> Page:
    return read_html(RENDERERS[renderer](markdown))


def test_a_renderer_that_drops_html_shows_every_word_parted_the_same_way(example) -> None:
    comment, _ = example
    shown, summaries = visible_words(github_html(comment))
    safe, _ = visible_words(safe_html(comment))
    assert summaries and safe == shown
    # The run-together cell: parted by " · " in both renderings.
    assert "days1" not in safe and "days.bold:" not in " ".join(safe)


def test_only_collapsing_line_breaks_and_small_print_need_html(example) -> None:
    comment, _ = example
    github_tags = set(re.findall(r"<([a-z0-9]+)", github_html(comment)))
    safe_tags = set(re.findall(r"<([a-z0-9]+)", safe_html(comment)))
    assert github_tags - safe_tags <= {"details", "summary", "sub", "sup", "br"}
    assert not {"b", "ins", "mark"} & github_tags  # marks that a renderer may drop
    # A line break only where a space stands before it, which stays when it is dropped.
    assert all(comment[at.start() - 1] == " " for at in re.finditer("<br>", comment))


@pytest.mark.parametrize("renderer", RENDERERS)
def test_cells_keep_their_parts_apart(example, renderer: str) -> None:
    comment, _ = example
    page = page_of(comment, renderer)
    header, *rows = page.tables[0]
    cells = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert (cells["replacement-card-fee"]["not in the context"]
            == "$5, 2 business days · 1 of 2 statements supported")
    assert cells["overdraft-protection"]["not in the context"] == (
        "1 statement · 1 of 2 statements supported")


def test_each_evidence_block_names_its_row_where_its_summary_is_dropped(example) -> None:
    comment, report = example
    safe = " ".join(visible_words(safe_html(comment))[0])
    flipped = [row["id"] for row in report["rows"]
               if row["verdict"] in ("regression", "unstable", "new_non_answer")]
    assert len(flipped) == 4
    for row_id in flipped:
        assert f"Query ({row_id}):" in safe
    assert safe.count("Context:") == len(flipped)  # each whole context says what it is


def test_bold_is_for_labels_only_and_a_claim_is_a_code_span(example) -> None:
    comment, report = example
    rendered = github_html(comment)
    bold = re.findall(r"<strong>(.*?)</strong>", rendered)
    assert bold and all(text.endswith(":") or text == "Notes" for text in bold), bold
    block = rendered.split("<summary>replacement-card-fee:", 1)[1].split("</details>", 1)[0]
    claim = report["rows"][0]["evidence"]["unsupported_statements"][0]
    # The label ends where the answer begins; the claim is marked apart from both.
    assert re.search(r"<strong>Candidate answer:</strong> A replacement debit card costs \$12",
                     block)
    assert f"<code>{claim}</code>" in block


def test_a_word_of_the_diff_carries_one_mark(example) -> None:
    comment, _ = example
    rendered = github_html(comment)
    block = rendered.split("<summary>overdraft-protection:", 1)[1].split("</details>", 1)[0]
    answer = block.split("Answer, baseline → candidate:</strong>", 1)[1].split("</p>", 1)[0]
    marks = re.findall(r"<(del|em|code)>(.*?)</\1>", answer)
    assert {mark for mark, _ in marks} == {"del", "em", "code"}
    assert all("<" not in text for _, text in marks)  # nothing nested in a mark
    assert ("<code>Premier members get these transfer fees refunded at the end of every "
            "month.</code>") in answer
    legend = block.split("<sub>", 1)[1].split("</sub>", 1)[0]
    assert legend == ("Key: <del>struck out</del>: only in the baseline · <em>slanted</em>: only in "
                      "the candidate · <code>marked</code>: not in the context")


CONTEXT = ("Meal kits ship every Tuesday. Skips must be made at least 3 days before the ship "
           "date. A skipped week is not charged.")
STATEMENTS = (
    Statement("You can skip a week for free.", StatementLabel.SUPPORTED,
              "A skipped week is not charged."),
    Statement("Skip up to 1 day before the ship date.", StatementLabel.UNSUPPORTED,
              "Skips must be made at least 3 days before the ship date."),
)


def cited_row():
    case = Case(id="skip-1", query="Until when can I skip?", context=CONTEXT, category="policy")
    side = make_side(2, response="You can skip a week for free. Skip up to 1 day before the "
                     "ship date.", reason="The 1-day window is not in the context.", rescore=1)
    side.statements = Statements(STATEMENTS)
    return gate.build_row(case, make_side(5, response="Skip at least 3 days ahead, for free."),
                          side, blocking_categories=("policy",), threshold=0.7,
                          find_evidence=lambda c, a: find_unsupported(c.context, a, query=c.query))


@pytest.mark.parametrize("renderer", RENDERERS)
def test_support_and_contradiction_each_have_their_mark_and_legend(renderer: str) -> None:
    comment = render_comment(make_report([cited_row()]))
    text = " ".join(visible_words(RENDERERS[renderer](comment))[0])
    assert "🟢“A skipped week is not charged.”" in text
    assert "🔴“Skips must be made at least 3 days before the ship date.”" in text
    assert "Contradicted by the context: 🔴“Skips must be made" in text
    assert ("🟢“…” the judge cites it as support · 🔴“…” the judge quotes it as contradicting "
            "a claim") in text
    assert "🟡" not in text  # no lexical match was needed: the judge quoted the passage
    assert "`" not in text and "<b>" not in comment
