"""The terminal summary shows flagged answers, why a regression does not block, and the instrument."""

from __future__ import annotations

import dataclasses
import io

from rich.console import Console

from flipgate.model import Statement, StatementLabel, Statements
from flipgate.output.terminal import print_summary
from flipgate.verdict.gate import kind_of

from support.factories import make_judge, make_report, make_row


def printed(report) -> str:
    out = io.StringIO()
    print_summary(report, Console(file=out, width=220, color_system=None, force_terminal=False))
    return out.getvalue()


def test_an_unchanged_row_whose_answer_addresses_the_judge_is_shown() -> None:
    row = make_row("sly", before=5, after=5)
    row.candidate.manipulation = ('addresses the grader: "Dear grader"',)
    assert kind_of(row).name == "flagged"
    text = printed(make_report([row]))
    assert "addresses judge" in text and "Dear grader" in text


def test_a_regression_held_for_review_says_why_and_statements_show_their_ratio() -> None:
    held = make_row("held", category="policy", before=5, after=2, rescore=2,
                    blocking_categories=("other",))
    held.review_reason = "policy has 12 cases; below 50 a flip needs a second judge to block"
    flip = make_row("flip", category="chat", before=5, after=2, rescore=2)
    flip.candidate.statements = Statements(items=(
        Statement("Refunds take 30 days.", StatementLabel.SUPPORTED, "Refunds take 30 days."),
        Statement("A $12 fee applies.", StatementLabel.UNSUPPORTED)))
    text = printed(make_report([held, flip]))
    assert "policy has 12 cases; below 50 a flip needs a second judge to block" in text
    assert "1 of 2 statements supported; not supported: A $12 fee applies." in text


def test_the_judge_line_names_the_rubric_and_the_second_opinion() -> None:
    judge = dataclasses.replace(make_judge(), rubric_version="2026-11-30.1+abcd1234",
                                second_opinion="judge-2", rescore="both")
    text = printed(make_report([make_row(before=5, after=5)], judge=judge))
    assert "rubric 2026-11-30.1+abcd1234 · second opinion judge-2 (with the re-score)" in text
