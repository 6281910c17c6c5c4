"""Attacks on the relink hand-back (issue 32): `flipgate action` with the `relink` input
edits the comment this run posted so that report.html, and each row id, open the page the
upload step stored (`actions/upload-artifact` v7, `archive: false`, its `artifact-url`).

It must never run the gate, never post a comment, never edit a comment another run (or a
person) wrote, and accept only a URL of this run's own artifacts: this server, this
repository, this run id. The loopback GitHub server holds the pull request and comments.
"""

from __future__ import annotations

import re

import pytest

from flipgate.output.anchors import row_anchor

from support.action_harness import PR, RUN_ID, Harness, RecordingCheck
from support.factories import make_report, make_row
from support.gfm import github_html

SERVER = "https://github.example.com"


def artifact(harness: Harness, *, run: str = RUN_ID, number: str = "4242") -> str:
    return f"{SERVER}/{harness.server.repository}/actions/runs/{run}/artifacts/{number}"


def hrefs(markdown: str) -> set[str]:
    return set(re.findall(r'<a href="([^"]*)"', github_html(markdown)))


def gate_then(harness: Harness, check: RecordingCheck) -> str:
    """The flipgate step: a blocked run that posts the comment. Returns its body."""
    check.outcome = make_report([make_row("refund-007", category="policy", before=5, after=2,
                                          rescore=1)])
    harness.pull_event()
    assert harness.run(check) == 1
    [comment] = harness.own_comments()
    return comment["body"]


def relink(harness: Harness, url: str) -> int:
    """The later step: the same job's environment, the page's URL as the `relink` input, and
    a check that fails the test if anything runs the gate."""
    def no_gate(**_: object) -> None:
        raise AssertionError("relink ran the gate")
    return harness.run(no_gate, **{"INPUT_RELINK": url})


def test_relink_points_report_html_and_each_row_at_the_page_and_does_nothing_else(
        harness: Harness, check: RecordingCheck) -> None:
    before = gate_then(harness, check)
    run = f"{SERVER}/{harness.server.repository}/actions/runs/{RUN_ID}"
    assert f"{run}#artifacts" in hrefs(before)
    statuses, comments = len(harness.server.statuses), len(harness.server.comments_on(PR))
    page = artifact(harness)

    assert relink(harness, page) == 0
    [comment] = harness.own_comments()
    links = hrefs(comment["body"])
    assert page in links and f"{page}#{row_anchor(None, 'refund-007')}" in links
    assert not any(href.startswith(f"{run}#") for href in links)
    assert run in links  # "this run" still links the run (the bundle is there)
    assert len(harness.server.comments_on(PR)) == comments
    assert len(harness.server.statuses) == statuses
    assert page in harness.summary()
    # Run again (a re-run of the step): nothing more changes.
    assert relink(harness, page) == 0
    assert harness.own_comments()[0]["body"] == comment["body"]


@pytest.mark.parametrize("url", [
    "{server}/someone/else/actions/runs/{run}/artifacts/4242",          # another repository
    "{server}/{repo}/actions/runs/999/artifacts/4242",                  # another run
    "https://evil.example/{repo}/actions/runs/{run}/artifacts/4242",    # another server
    "https://github.example.com.evil.example/{repo}/actions/runs/{run}/artifacts/4242",
    "https://user@github.example.com/{repo}/actions/runs/{run}/artifacts/4242",
    "http://github.example.com/{repo}/actions/runs/{run}/artifacts/4242",  # not the server's scheme
    "{server}/{repo}/actions/runs/{run}/artifacts/4242?redirect=https://evil.example",
    "{server}/{repo}/actions/runs/{run}/artifacts/4242#case-x",
    "{server}/{repo}/actions/runs/{run}/artifacts/../../999/artifacts/1",
    "{server}/{repo}/actions/runs/{run}/artifacts/4242/../../../../../evil",
    "{server}/{repo}/actions/runs/{run}/artifacts/x1",
    "{server}/{repo}/actions/runs/{run}/artifacts/4242%2F..",
    "javascript:alert(1)//{server}/{repo}/actions/runs/{run}/artifacts/1",
    "{server}/{repo}/actions/runs/{run}/artifacts/4242)[x](https://evil.example",
    "{server}/{repo}/actions/runs/{run}/artifacts/4242\n[x](https://evil.example)",
])
def test_only_a_url_of_this_runs_own_artifacts_is_accepted(harness: Harness, check: RecordingCheck,
                                                          url: str) -> None:
    before = gate_then(harness, check)
    given = url.format(server=SERVER, repo=harness.server.repository, run=RUN_ID)
    assert relink(harness, given) == 2
    log = harness.log.getvalue()
    assert "input relink" in log and "Traceback" not in log
    assert [c["body"] for c in harness.own_comments()] == [before]


def test_a_comment_another_run_wrote_is_left_as_it_is(harness: Harness, check: RecordingCheck) -> None:
    before = gate_then(harness, check)
    # A later push's run (another run id) wrote the comment since: this run may not touch it.
    newer = before.replace(f"/actions/runs/{RUN_ID}", "/actions/runs/777002")
    [comment] = harness.own_comments()
    comment["body"] = newer  # the loopback server's own record of the comment
    assert relink(harness, artifact(harness)) == 0
    assert [c["body"] for c in harness.own_comments()] == [newer]
    assert "not this run's" in harness.log.getvalue()


def test_without_a_comment_relink_posts_none(harness: Harness) -> None:
    harness.pull_event()
    assert relink(harness, artifact(harness)) == 0
    assert harness.server.comments_on(PR) == []


def test_a_persons_comment_carrying_the_marker_and_the_run_link_is_not_edited(
        harness: Harness) -> None:
    run = f"{SERVER}/{harness.server.repository}/actions/runs/{RUN_ID}"
    quoted = f"<!-- flipgate:flipgate -->\nsee [report.html]({run}#artifacts)"
    harness.server.add_comment(PR, quoted, user="someone")
    harness.pull_event()
    assert relink(harness, artifact(harness)) == 0
    assert [c["body"] for c in harness.server.comments_on(PR)] == [quoted]
