"""`user: null` where real GitHub sends it (a deleted account): read as GitHub's ghost,
never a crash (issue 22, item 6). Comments, timeline events and statuses, through the
real PyGithub client, and the action on a command whose author is gone.
"""

from __future__ import annotations

import json
from pathlib import Path

from flipgate.github.api import RepoAPI, connect
from flipgate.github.event import GHOST

from support.action_harness import PR, Harness, RecordingCheck
from support.github_server import FakeGitHub

BASE, HEAD = "b" * 40, "c" * 40


def api_for(server: FakeGitHub) -> RepoAPI:
    server.add_pull(7, base_sha=BASE, head_sha=HEAD)
    return RepoAPI(connect(server.api_url, server.token, pause_between_calls=False),
                   server.repository)


def test_a_comment_by_a_deleted_account_is_the_ghosts(github_server: FakeGitHub) -> None:
    api = api_for(github_server)
    github_server.add_comment(7, "first")
    github_server.add_comment(7, "by someone since deleted")["user"] = None

    comments = api.matching_comments(7, lambda comment: True)

    assert [(c.author, c.body) for c in comments] == [("someone", "first"),
                                                       (GHOST, "by someone since deleted")]


def test_timeline_events_and_statuses_without_a_user_are_read(github_server: FakeGitHub) -> None:
    api = api_for(github_server)
    github_server.add_event(7, "head_ref_force_pushed", commit_id=HEAD)
    github_server.events[7][-1]["actor"] = None
    github_server.add_comment(7, "gone")["user"] = None  # the timeline lists it as well
    github_server.add_status(HEAD, state="pending", description="#7: evaluating…")
    github_server.statuses[-1]["creator"] = None

    [rewrite] = api.head_rewrites(7)
    assert rewrite.sha == HEAD and rewrite.rewrite
    assert api.head_statuses(HEAD, context="flipgate", number=7, login="github-actions[bot]") == []


def test_a_command_from_a_deleted_account_is_refused_with_a_reply(harness: Harness,
                                                                  check: RecordingCheck) -> None:
    comment = harness.comment_event("/flipgate run")
    comment["user"] = None
    event_path = Path(harness.env["GITHUB_EVENT_PATH"])
    event = json.loads(event_path.read_text())
    event["comment"]["user"] = None
    event_path.write_text(json.dumps(event))

    assert harness.run(check) == 0, harness.log.getvalue()

    assert check.calls == [] and harness.server.statuses == []
    [reply] = harness.replies()
    assert f"`{GHOST}`" in reply and "Nothing was run" in reply
    assert "Traceback" not in harness.log.getvalue()


def test_control_a_maintainers_command_runs(harness: Harness, check: RecordingCheck) -> None:
    harness.record_head()
    harness.comment_event("/flipgate run")

    assert harness.run(check) == 0
    assert len(check.calls) == 1 and harness.final_status()["state"] == "success"
    assert check.calls[0]["head"] == harness.head and harness.server.pulls[PR]["head_sha"] == harness.head
