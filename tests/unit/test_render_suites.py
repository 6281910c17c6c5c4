"""A several-suite report: one comment (the aggregate, then a section per evaluated suite)
and report.json's `suites` beside the unchanged top-level schema."""

from __future__ import annotations

from flipgate.config.schema import GITHUB_COMMENT_LIMIT
from flipgate.model import Conclusion, Report, SuiteReport
from flipgate.output.anchors import row_anchor
from flipgate.output.comment import MARKER, render_comment
from flipgate.output.links import Links
from flipgate.output.report import to_dict
from flipgate.verdict import gate

from support.factories import make_judge, make_report, make_row
from support.gfm import consistent_tables, read

LONG = "A long answer that goes on about refunds and fees and the 30 days. " * 4


def several(*parts: tuple[str, Report]) -> Report:
    suites = [SuiteReport(name, report) for name, report in parts]
    return Report(conclusion=gate.worst(part.report.conclusion for part in suites),
                  judge=make_judge(), counts=gate.add_counts(p.report.counts for p in suites),
                  rows=[row for part in suites for row in part.report.rows], suites=suites,
                  head_sha="f" * 40)


def skipped() -> Report:
    return make_report([], conclusion=Conclusion.SKIPPED)


def test_the_comment_names_the_suites_that_were_not_evaluated() -> None:
    report = several(("support", make_report([make_row("refund-007", before=5, after=2,
                                                       rescore=1)])),
                     ("billing", skipped()), ("docs", skipped()))
    comment = render_comment(report)
    assert comment.startswith(MARKER + "\n## ❌ flipgate blocked this change: 1 blocking regression")
    assert comment.count(MARKER) == 1
    [line] = [line for line in comment.splitlines() if line.startswith("- **Not evaluated")]
    assert line.endswith("billing, docs")
    assert "- **Suites evaluated:** support (failure)" in comment
    assert "## Suite support · ❌ flipgate blocked this change" in comment
    assert "Suite billing" not in comment and "refund-007" in comment
    assert consistent_tables(read(comment))


def test_when_no_suite_changed_the_comment_says_so() -> None:
    comment = render_comment(several(("support", skipped()), ("billing", skipped())))
    assert "## ⏭️ flipgate skipped: no suite's prompt or model changed" in comment
    assert "support, billing" in comment and "## Suite" not in comment


def test_two_large_suites_share_one_comment_and_a_small_one_keeps_every_row() -> None:
    def rows(prefix: str, n: int):
        return [make_row(f"{prefix}-{i}", before=5, after=2, rescore=1, answer=f"{i} {LONG}",
                         reason=LONG) for i in range(n)]
    report = several(("big", make_report(rows("big", 2000))), ("small", make_report(rows("small", 3))),
                     ("other", make_report(rows("other", 2000))))
    comment = render_comment(report)
    assert len(comment.encode("utf-8")) <= GITHUB_COMMENT_LIMIT
    page = read(comment)
    assert consistent_tables(page) and page.count("details") == page.count("/details")
    for name in ("big", "small", "other"):
        assert f"## Suite {name} · ❌ flipgate blocked" in comment
    assert all(f"small-{i}" in comment for i in range(3))
    assert "big-0" in comment and "other-0" in comment  # each large suite shows its first rows


def test_report_json_keeps_the_top_level_schema_and_adds_each_suite() -> None:
    support = make_report([make_row("refund-007", before=5, after=2, rescore=1),
                           make_row("card-002", category="cards", before=5, after=5)])
    report = several(("support", support), ("billing", skipped()))
    out = to_dict(report)
    single = to_dict(support)
    assert set(single) <= set(out)  # every top-level key of one suite is still there
    assert out["conclusion"] == "failure" and out["counts"]["blocking_regressions"] == 1
    assert out["counts"]["cases"] == 2
    assert [(row["id"], row["suite"]) for row in out["rows"]] == [("refund-007", "support"),
                                                                  ("card-002", "support")]
    assert list(out["suites"]) == ["support", "billing"]
    assert out["suites"]["support"]["evaluated"] is True
    assert out["suites"]["support"]["counts"] == single["counts"]
    assert out["suites"]["support"]["rows"] == single["rows"]
    assert out["suites"]["billing"]["evaluated"] is False
    assert out["suites"]["billing"]["conclusion"] == "skipped"
    assert "judge" not in out["suites"]["support"]  # the run's, once, on top
    assert "suites" not in single and "suite" not in single["rows"][0]


def test_the_terminal_says_each_suites_conclusion() -> None:
    from flipgate.output.terminal import suite_lines

    report = several(("support", make_report([make_row("refund-007", before=5, after=2,
                                                       rescore=1)])), ("billing", skipped()))
    assert suite_lines(report) == ["suite support: ❌ blocked: 1 blocking regression",
                                   "suite billing: not evaluated, nothing of its changed"]
    assert suite_lines(make_report([])) == []


def test_a_suites_rows_link_to_their_suites_anchor_and_the_page_is_named_once() -> None:
    page = "https://pages.example/pr-7/report.html"
    report = several(("support", make_report([make_row("q1", before=5, after=2, rescore=1)])),
                     ("billing", make_report([make_row("q1", before=5, after=2, rescore=1)])))
    comment = render_comment(report, links=Links(report=page))
    assert f"]({page}#{row_anchor('support', 'q1')})" in comment
    assert f"]({page}#{row_anchor('billing', 'q1')})" in comment
    assert comment.count("📄 Every row") == 1
