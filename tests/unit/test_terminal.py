"""The terminal summary: rows that matter first, counts, conclusion, and inert text."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from flipgate.model import Conclusion
from flipgate.output.terminal import MAX_ROWS, print_summary

from support.factories import make_judge, make_report, make_row, one_of_each


def printed(report, width: int = 220) -> str:
    out = io.StringIO()
    print_summary(report, Console(file=out, width=width, color_system=None, force_terminal=False))
    return out.getvalue()


def table_lines(text: str) -> list[list[str]]:
    """Cells of each body row of the rich table (box-drawing │ separates cells)."""
    return [[cell.strip() for cell in line.strip().strip("│").split("│")]
            for line in text.splitlines() if line.startswith("│")]


@pytest.mark.parametrize("row, label", [
    (make_row(category="policy", before=5, after=2, rescore=1), "BLOCKING"),
    (make_row(category="chat", before=5, after=2, rescore=1), "review"),
    (make_row(before=5, after=None), "judge error"),
    (make_row(before=5, after=3), "non-answer"),
    (make_row(before=5, after=2, rescore=5), "unstable"),
    (make_row(before=5, after=5, relevance=(0.9, 0.2)), "relevance drop"),
    (make_row(before=4, after=5, relevance=(0.9, 0.2)), "relevance drop"),
    (make_row(before=4, after=5), "moved"),
    (make_row(before=1, after=2), "still ungrounded"),
])
def test_a_row_is_labelled_by_its_most_important_kind(row, label) -> None:
    assert [cells[0] for cells in table_lines(printed(make_report([row])))] == [label]


def test_rows_nobody_needs_to_read_stay_out() -> None:
    assert table_lines(printed(make_report([make_row(before=5, after=5)]))) == []


def test_rows_come_most_important_first_and_unchanged_rows_stay_out() -> None:
    rows = list(reversed(one_of_each(other_category="chat")))
    body = table_lines(printed(make_report(rows)))
    assert [(cells[0], cells[1]) for cells in body] == [
        ("BLOCKING", "blocking"), ("judge error", "error"), ("review", "review"),
        ("non-answer", "non-answer"), ("unstable", "unstable"), ("relevance drop", "relevance"),
        ("moved", "moved"), ("still ungrounded", "still"),
    ]


def test_a_row_shows_movement_relevance_and_why() -> None:
    row = make_row("fee", before=5, after=2, rescore=1, relevance=(0.91, 0.88),
                   figures=("$12", "7 days"), finish_reason="length")
    cells = table_lines(printed(make_report([row])))[0]
    assert cells == ["BLOCKING", "fee", "policy", "grounded (5) → ungrounded (2) (truncated)",
                     "0.91 → 0.88", "not in context: $12, 7 days"]


def test_judge_errors_say_what_failed() -> None:
    row = make_row("broken", before=5, after=None, error="reply was not JSON")
    cells = table_lines(printed(make_report([row])))[0]
    assert cells[3] == "grounded (5) → no score"
    assert cells[5] == "candidate: reply was not JSON"


@pytest.mark.parametrize("text", [
    "[bold red]shout[/bold red]",
    "[link=https://evil.example]click[/link]",
    "\\[escaped] [/]",
    ":warning: [blink]x",
])
def test_untrusted_text_is_printed_literally(text: str) -> None:
    row = make_row(text, category=text, before=5, after=2, rescore=1, figures=(), statements=(),
                   reason=text)
    report = make_report([row], judge=make_judge(model=text),
                         conclusion=Conclusion.FAILURE)
    out = printed(report, width=400)
    cells = table_lines(out)[0]
    assert cells[1] == text and cells[5] == text
    assert f"judge: openai · {text}" in out


@pytest.mark.parametrize("text, expected", [
    ("clear\x1b[2Jscreen", "clear[2Jscreen"),
    ("bell\x07 and \x9b31m", "bell and 31m"),
    ("two\nlines\r\nhere", "two lines here"),
    ("right\u202eto left", "rightto left"),
])
def test_control_characters_never_reach_the_terminal(text: str, expected: str) -> None:
    out = printed(make_report([make_row(text, before=5, after=2, rescore=1)]))
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert table_lines(out)[0][1] == expected


@pytest.mark.parametrize("rows, conclusion, line", [
    ([make_row(before=5, after=5)], None, "✅ passed: no blocking regression"),
    ([make_row(before=5, after=2, rescore=1)] * 2, None, "❌ blocked: 2 blocking regressions"),
    ([make_row(before=5, after=None)], None, "could not finish: judge errors on 1 row"),
    ([make_row(before=None, after=5), make_row(before=5, after=2, rescore=1)], None,
     "judge errors on 1 row (and 1 confirmed blocking regression)"),
    ([], Conclusion.SKIPPED, "skipped: no prompt or model change"),
])
def test_the_conclusion_is_the_last_line(rows, conclusion, line) -> None:
    out = printed(make_report(rows, conclusion=conclusion))
    assert line in out.rstrip().splitlines()[-1]


def test_counts_line() -> None:
    out = printed(make_report(one_of_each()))
    assert ("9 cases · 1 blocking regression · 1 judge error · 1 to review · "
            "1 new non-answer · 1 unstable · 1 relevance drop · 1 moved · "
            "1 still ungrounded") in out  # a kind with no row is not counted
    quiet = printed(make_report([make_row("a", before=4, after=5), make_row("b")]))
    assert "2 cases · 1 blocking regression · 1 moved" in quiet and " 0 " not in quiet


def test_offline_judge_is_named_as_lexical() -> None:
    report = make_report([make_row(before=5, after=5)], judge=make_judge("offline", "lexical"))
    out = printed(report)
    assert "offline lexical judge (word and figure overlap, not an LLM)" in out


def test_a_skipped_run_prints_no_table() -> None:
    out = printed(make_report([], conclusion=Conclusion.SKIPPED))
    assert table_lines(out) == [] and "judge" not in out


def test_long_lists_are_capped_and_say_so() -> None:
    rows = ([make_row(f"moved-{n}", before=4, after=5) for n in range(100)]
            + [make_row("fee", before=5, after=2, rescore=1)])
    out = printed(make_report(rows))
    body = table_lines(out)
    assert len(body) == MAX_ROWS and body[0][1] == "fee"
    assert f"… and {101 - MAX_ROWS} more rows in report.html and report.json" in out


def test_a_narrow_console_gives_each_row_a_second_line_with_its_evidence() -> None:
    row = make_row("replacement-card-fee", before=5, after=3, figures=("$12",))
    narrow, wide = printed(make_report([row]), width=80), printed(make_report([row]), width=160)
    lines = table_lines(narrow)
    assert lines[0][0] == "non-answer"
    assert lines[0][1].startswith("replacement-card-fee · policy · grounded (5) → non-answer")
    assert ["", "not in context: $12"] in lines[1:]  # the evidence, on a line of its own
    assert table_lines(wide)[0][-1] == "not in context: $12"
    assert all(len(line) <= 80 for line in narrow.splitlines())


@pytest.mark.parametrize("width", [80, 100, 160])
def test_ids_are_never_broken_across_lines(width: int) -> None:
    rows = [make_row("overdraft-protection-for-premier-members", before=5, after=2, rescore=1,
                     category="a-rather-long-category-name"),
            make_row("contactless-limit", before=4, after=5)]
    out = printed(make_report(rows), width=width)
    for row_id in ("overdraft-protection-for-premier-members", "contactless-limit"):
        assert row_id in out
