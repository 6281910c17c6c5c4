"""The whole context in the comment: collapsed, its evidence marked, inert under cmark-gfm,
and what a blocking row keeps when the comment must shrink."""

from __future__ import annotations

import html
import re
from dataclasses import replace

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from flipgate.config.schema import GITHUB_COMMENT_LIMIT
from flipgate.model import Case, Evidence, Statement, StatementLabel, Statements
from flipgate.output.comment import MARKER, render_comment
from flipgate.output.review import review
from flipgate.output.review_md import context_md
from flipgate.verdict import gate
from flipgate.verdict.evidence import find_unsupported, lexical_statements

from support.factories import make_report, make_side
from support.gfm import MENTION

CONTEXT = ("Meal kits ship every Tuesday. Skips must be made at least 3 days before the ship "
           "date. A skipped week is not charged.")
BASELINE = "You can skip a week for free if you skip at least 3 days before the ship date."
CANDIDATE = "You can skip a week for free. Skip up to 1 day before the ship date."


def github_html(markdown: str) -> str:
    """What GitHub's renderer makes of it (its sanitizer comes after, and only removes)."""
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def skip_row(*, statements: tuple[Statement, ...] | None, context: str = CONTEXT,
             candidate: str = CANDIDATE, id: str = "skip-1", query: str = "Until when can I skip?"):
    case = Case(id=id, query=query, context=context, category="policy")
    side = make_side(2, response=candidate, reason="The 1-day window is not in the context.",
                     rescore=1)
    side.statements = Statements(statements) if statements is not None else None
    return gate.build_row(case, make_side(5, response=BASELINE), side,
                          blocking_categories=("policy",), threshold=0.7,
                          find_evidence=lambda c, a: find_unsupported(c.context, a, query=c.query))


def context_block(comment: str) -> str:
    """The visible text of the first whole-context block, as GitHub renders it."""
    rendered = github_html(comment)
    block = rendered.split("<summary>The whole context", 1)[1].split("</details>", 1)[0]
    return block


JUDGE_STATEMENTS = (
    Statement("You can skip a week for free.", StatementLabel.SUPPORTED,
              "A skipped week is not charged."),
    Statement("Skip up to 1 day before the ship date.", StatementLabel.UNSUPPORTED,
              "Skips must be made at least 3 days before the ship date."),
)


def test_the_whole_context_is_collapsed_with_the_judges_spans_marked() -> None:
    comment = render_comment(make_report([skip_row(statements=JUDGE_STATEMENTS)]))
    assert "<details><summary>The whole context (2 passages marked)</summary>" in comment
    block = context_block(comment)
    assert "Meal kits ship every Tuesday." in block  # unmarked text is there too
    assert "🟢“A skipped week is not charged.”" in block
    assert "🔴“Skips must be made at least 3 days before the ship date.”" in block
    # The row's evidence says the same passage contradicts the claim, as the judge said.
    assert ("**Contradicted by the context:** 🔴“Skips must be made at least 3 days before the "
            "ship date.”") in comment


def test_without_the_judges_span_the_lexically_closest_sentence_is_marked() -> None:
    statements = (replace(JUDGE_STATEMENTS[0]),
                  replace(JUDGE_STATEMENTS[1], span=None))
    comment = render_comment(make_report([skip_row(statements=statements)]))
    block = context_block(comment)
    assert "🟡“Skips must be made at least 3 days before the ship date.”" in block
    assert "**Closest in the context:** 🟡“Skips must be made" in comment


def test_the_offline_judges_statements_mark_its_supporting_sentences() -> None:
    candidate = "Meal kits ship every Tuesday. Skip up to 1 day before the ship date."
    statements = lexical_statements(CONTEXT, candidate, query="Until when can I skip?")
    assert statements[0].span == "Meal kits ship every Tuesday."
    comment = render_comment(make_report([skip_row(statements=statements, candidate=candidate)]))
    assert "🟢“Meal kits ship every Tuesday.”" in context_block(comment)


def test_several_claims_get_their_numbers_on_the_passages() -> None:
    found = review(context="Fees are $5. Delivery takes 3 days.", baseline="",
                   candidate="Fees are $7. Delivery takes 9 days.",
                   evidence=Evidence(unsupported_statements=("Fees are $7.", "Delivery takes 9 days.")))
    markdown = context_md(found, 1_000)
    assert markdown == ("🟡“Fees are $5.”<sup>\\[1\\]</sup> "
                        "🟡“Delivery takes 3 days.”<sup>\\[2\\]</sup>")


def test_a_long_context_keeps_its_marked_passages_and_says_where_the_rest_is() -> None:
    filler = " ".join(f"Filler sentence number {n} about nothing in particular." for n in range(400))
    context = f"{filler} Skips must be made at least 3 days before the ship date. {filler}"
    found = review(context=context, baseline=BASELINE, candidate=CANDIDATE,
                   evidence=Evidence(unsupported_statements=("Skip up to 1 day before the ship date.",)))
    markdown = context_md(found, 1_000)
    assert "🟡“Skips must be made at least 3 days before the ship date.”" in markdown
    assert len(markdown) < 2_000
    assert f"The context is cut here from {len(context):,} characters" in markdown
    assert "report.html" in markdown


HOSTILE = [
    "<details><summary>x</summary>",
    "</details></details></details>",
    "<script>alert(1)</script><img src=x onerror=alert(1)>",
    "ping @someone and @org/team",
    "[click](https://evil.example) ![i](https://evil.example/x.png) <https://evil.example>",
    "```\nfenced\n```\n~~~\nmore\n~~~",
    "# heading\n\n- list\n1. ordered\n> quote\n---\n===",
    "| a | b |\n|---|---|",
    "<!-- flipgate --> <!--",
    "    indented code\n\n\ttabbed",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_context_stays_inert_text(text: str) -> None:
    context = f"{text}\n\nSkips must be made at least 3 days before the ship date.\n\n{text}"
    spans = (replace(JUDGE_STATEMENTS[1], span="Skips must be made at least 3 days before the ship date."),)
    comment = render_comment(make_report([skip_row(statements=spans, context=context,
                                                   query=text, candidate=CANDIDATE)]))
    rendered = github_html(comment)
    tags = set(re.findall(r"<([a-z0-9]+)", rendered))
    assert tags <= {"h2", "h3", "p", "ul", "li", "strong", "table", "thead", "tbody", "tr", "th",
                    "td", "details", "summary", "code", "sup", "sub", "br", "em", "del"}, tags
    assert rendered.count("<details>") == rendered.count("</details>") == 2
    assert "<a " not in rendered and "<img" not in rendered and "<pre" not in rendered
    assert comment.count(MARKER) == 1 and comment.count("<!--") == 1
    assert not MENTION.search(html.unescape(re.sub(r"<[^>]+>", "", rendered)))
    # The hostile text reads back, flattened to words, inside the context block.
    block = html.unescape(re.sub(r"<[^>]+>", " ", context_block(comment)))
    for word in re.findall(r"[a-z]{4,}", text):
        assert word in block


def many_skip_rows(total: int, blocking: int):
    rows = []
    for n in range(total):
        flipped = n < blocking
        candidate = (f"You can skip a week for free up to 1 day before the ship date, and get a "
                     f"${n % 9 + 1} credit." if flipped else BASELINE)
        case = Case(id=f"case-{n:04d}", query=f"Can I skip next week's box {n}, and until when?",
                    context=CONTEXT, category="policy" if n % 2 else "pricing")
        side = make_side(2 if flipped else 5, response=candidate, rescore=1 if flipped else False,
                         reason="The 1-day window and the credit are not in the context.")
        side.statements = (Statements(lexical_statements(CONTEXT, candidate, query=case.query))
                           if flipped else None)
        rows.append(gate.build_row(case, make_side(5, response=BASELINE), side,
                                   blocking_categories=("policy", "pricing"), threshold=0.7,
                                   find_evidence=lambda c, a: find_unsupported(c.context, a)))
    return rows


def test_the_issues_case_every_one_of_400_blocking_rows_keeps_its_query_claim_and_context() -> None:
    """400 blocking regressions in 2,000 cases: the comment fits, and each blocking row
    still shows its query, the claim the context lacks and the closest passage."""
    comment = render_comment(make_report(many_skip_rows(2_000, 400)))
    assert len(comment.encode("utf-8")) <= GITHUB_COMMENT_LIMIT
    rendered = github_html(comment)
    table = rendered.split("Blocking regressions (400)", 1)[1].split("</table>", 1)[0]
    header = re.findall(r"<th>(.*?)</th>", table)
    assert header == ["id", "category", "query", "not in the context", "closest in the context"]
    lines = re.findall(r"<tr>\s*<td>(.*?)</td>\s*<td>.*?</td>\s*<td>(.*?)</td>\s*<td>(.*?)</td>"
                       r"\s*<td>(.*?)</td>", table, re.S)
    named = re.search(r"… and ([\d,]+) more blocking regressions, not shown to fit GitHub's size "
                      r"limit: (.*?)\. Every row, with its context, is in report.html", comment)
    left_out = named.group(2).split(", ") if named else []
    assert len(lines) + len(left_out) == 400
    assert len(lines) == 400  # here all of them fit
    for _row_id, query, claim, closest in lines:
        assert query.startswith("Can I skip next week")
        assert claim.startswith("1 day, $")  # the figures the context lacks come first
        assert closest.startswith("“Skips must be made at least 3 days")


def test_blocking_rows_that_no_longer_fit_are_named_with_a_pointer_to_the_page() -> None:
    rows = [replace(row, case=replace(row.case, id=f"{row.case.id}-{'x' * 24}"))
            for row in many_skip_rows(1_200, 600)]
    comment = render_comment(make_report(rows))
    assert len(comment.encode("utf-8")) <= GITHUB_COMMENT_LIMIT
    named = re.search(r"… and ([\d,]+) more blocking regressions, not shown to fit GitHub's size "
                      r"limit: (.*?)\. Every row, with its context, is in report.html", comment)
    assert named is not None
    shown = len(re.findall(r"^\| case-\d{4}-x+…? \| p", comment, re.MULTILINE))
    assert shown + int(named.group(1).replace(",", "")) == 600
    assert shown > 250


def test_a_small_run_keeps_every_evidence_block_with_its_context() -> None:
    rows = many_skip_rows(20, 5)
    comment = render_comment(make_report(rows))
    assert comment.count("<summary>The whole context") == 5
    assert "not shown to fit" not in comment
