"""Lines and rows that would only say zero are left out."""

from __future__ import annotations

from flipgate.commands.run import usage_line
from flipgate.output.comment import render_comment
from flipgate.output.comment_view import usage_table
from flipgate.output.progress import Phase, status_line

from support.factories import make_report, make_row


def test_the_usage_line_leaves_out_purposes_and_a_cache_that_saw_nothing() -> None:
    usage = {"judge": {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0},
             "candidate": {"requests": 3, "prompt_tokens": 1_200, "completion_tokens": 30}}
    assert usage_line(usage, {"hits": 0, "misses": 0}) == "usage: candidate 3 requests, 1,230 tokens"
    assert usage_line({"judge": {"requests": 0}}, None) == "usage: no model requests"
    assert usage_line({}, {"hits": 2, "misses": 1}).endswith("| cache: 2 hits, 1 misses")


def test_the_comment_has_no_zero_usage_rows_and_no_empty_cache_line() -> None:
    report = make_report([make_row("same", before=5, after=5)],
                         usage={"judge": {"requests": 0, "prompt_tokens": 0}},
                         cache={"hits": 0, "misses": 0})
    comment = render_comment(report)
    assert "### Usage" not in comment and "Cache:" not in comment
    columns, rows = usage_table({"judge": {"requests": 0}, "candidate": {"requests": 2}})
    assert [row[0] for row in rows] == ["candidate"]


def test_a_progress_line_without_requests_does_not_count_them() -> None:
    phases = [Phase("judging", total=30, done=30, started=0.0)]
    assert status_line(phases, requests=0, tokens=0, elapsed=1, now=1.0) == \
        "flipgate: judging 30/30 · 1s elapsed · done"
