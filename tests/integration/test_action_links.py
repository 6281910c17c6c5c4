"""The action's comment and job summary link the workflow run, and with the `report-url`
input report.html's rows (issue 23, item 5). The run's URL is built from the runner's
GITHUB_SERVER_URL, GITHUB_REPOSITORY and GITHUB_RUN_ID, read once in github/inputs.py."""

from __future__ import annotations

import re

from flipgate.output.anchors import row_anchor

from support.action_harness import RUN_ID, Harness, RecordingCheck
from support.factories import make_report, make_row
from support.gfm import github_html

PAGE = "https://pages.example/repo/pr-42/report.html"


def hrefs(markdown: str) -> set[str]:
    return set(re.findall(r'<a href="([^"]*)"', github_html(markdown)))


def blocked(check: RecordingCheck) -> None:
    check.outcome = make_report([make_row("refund-007", category="policy", before=5, after=2,
                                          rescore=1)])


def test_the_comment_and_the_summary_link_the_runs_artifacts(harness: Harness,
                                                            check: RecordingCheck) -> None:
    blocked(check)
    harness.pull_event()
    assert harness.run(check) == 1
    run = f"https://github.example.com/{harness.server.repository}/actions/runs/{RUN_ID}"
    [call] = check.calls
    assert call["links"].run == run and call["links"].report is None
    [comment] = harness.own_comments()
    for markdown in (comment["body"], harness.summary()):
        # Each row id links the run (where the artifact is) with its anchor, which the
        # relink step moves onto the uploaded page.
        assert hrefs(markdown) == {f"{run}#artifacts", run, f"{run}#case-refund-007"}
        assert "flipgate-report artifact of [this run]" in markdown


def test_with_report_url_each_row_id_links_to_its_row(harness: Harness,
                                                     check: RecordingCheck) -> None:
    blocked(check)
    harness.pull_event()
    assert harness.run(check, **{"INPUT_REPORT-URL": PAGE}) == 1
    [comment] = harness.own_comments()
    for markdown in (comment["body"], harness.summary()):
        assert f"{PAGE}#{row_anchor(None, 'refund-007')}" in hrefs(markdown)
        assert PAGE in hrefs(markdown)


def test_a_report_url_that_is_not_http_is_bad_input(harness: Harness,
                                                   check: RecordingCheck) -> None:
    harness.pull_event()
    code = harness.run(check, **{"INPUT_REPORT-URL": "javascript:alert(1)"})
    assert code == 2 and check.calls == []
    log = harness.log.getvalue()
    assert "input report-url" in log and "http(s)" in log
    assert "Traceback" not in log


def test_without_a_run_id_nothing_is_linked(harness: Harness, check: RecordingCheck) -> None:
    blocked(check)
    harness.pull_event()
    harness.env.pop("GITHUB_RUN_ID")
    assert harness.run(check) == 1
    [comment] = harness.own_comments()
    assert hrefs(comment["body"]) == set() and "](" not in comment["body"]
