"""The end-to-end section of the comment: drift rows with their diffs, inert, within GitHub's limit."""

from __future__ import annotations

from flipgate.model import E2EReport, E2ERow, Verdict
from flipgate.output.comment import GITHUB_COMMENT_LIMIT, render_comment
from flipgate.output.report import to_dict

from support.factories import make_report, make_row
from support.gfm import outside_fences, to_html

DIFF = "--- frozen context\n+++ live context\n-old {i}\n+new {i}\n"


def e2e_row(i: int, *, drift: bool = True, diff: str | None = None) -> E2ERow:
    return E2ERow(id=f"case-{i}", category="pricing", query=f"q{i}",
                  frozen_verdict=Verdict.UNCHANGED,
                  e2e_verdict=Verdict.REGRESSION if drift else Verdict.UNCHANGED, drift=drift,
                  live_context=f"live {i}", context_changed=True,
                  context_diff=diff if diff is not None else DIFF.format(i=i))


def report_with(e2e: E2EReport):
    report = make_report([make_row("case-0", before=5, after=5)])
    report.e2e = e2e
    return report


def test_drift_rows_are_tabled_with_their_diff_and_the_advice() -> None:
    hostile = "--- frozen\n+++ live\n-a\n+```\n+@admin <!-- flipgate --> | pipe\n"
    e2e = E2EReport(rows=[e2e_row(1, diff=hostile), e2e_row(2, drift=False)], date="2026-11-30",
                    retrieval="command `python retrieve.py`")
    text = render_comment(report_with(e2e))
    section = text[text.index("### End-to-end run"):]
    assert "1 row of retrieval drift" in section and "look at retrieval first" in section
    assert "| case-1 | pricing | unchanged | regression |" in section
    assert "case-2 |" not in section
    assert text.count("<!-- flipgate -->") == 1
    assert "@admin" not in outside_fences(text)  # inside the fence it is inert and copies whole
    html = to_html(text)
    assert "<details>" in html and "<table>" in html


def test_no_drift_says_so_and_a_stopped_run_says_why() -> None:
    calm = render_comment(report_with(E2EReport(rows=[e2e_row(1, drift=False)], date="d", retrieval="r")))
    assert "No retrieval drift" in calm
    stopped = render_comment(report_with(E2EReport(rows=[], date="d", retrieval="r",
                                                   stopped="live retrieval could not start: boom")))
    assert "could not finish: live retrieval could not start: boom" in stopped
    assert "No retrieval drift" not in stopped


def test_thousands_of_drift_rows_still_fit_one_comment() -> None:
    lines = "".join(f"-old line {n}\n+new line {n}\n" for n in range(300))
    long_diff = "--- frozen context\n+++ live context\n" + lines
    e2e = E2EReport(rows=[e2e_row(i, diff=long_diff) for i in range(2000)], date="d", retrieval="r")
    text = render_comment(report_with(e2e))
    assert len(text.encode()) <= GITHUB_COMMENT_LIMIT
    assert "2,000 rows of retrieval drift" in text and "more rows of retrieval drift; see report.json" in text


def test_report_json_carries_the_e2e_section() -> None:
    e2e = E2EReport(rows=[e2e_row(1)], date="2026-11-30", retrieval="r", notes=["n"])
    out = to_dict(report_with(e2e))["e2e"]
    assert out["counts"] == {"cases": 1, "drift": 1, "changed_contexts": 1, "retrieval_errors": 0}
    assert out["rows"][0] == {"id": "case-1", "category": "pricing", "query": "q1",
                                   "frozen_verdict": "unchanged", "e2e_verdict": "regression", "drift": True,
                                   "live_context": "live 1", "context_changed": True,
                                   "context_diff": e2e.rows[0].context_diff}
    assert out["notes"] == ["n"] and out["date"] == "2026-11-30"
    assert "e2e" not in to_dict(make_report([]))
