"""A review's decisions as an attack surface (`gate.review: required`): who may clear a
held-back flip, which lines of a comment are commands, and which head a decision is for.

A flip the sample-size rule held back keeps the status `pending` until a maintainer
decides. Clearing it lets the pull request merge, so a decision is taken only as
`/flipgate run` is: from someone with write access, from a line they show as their own,
for the head they saw when they wrote it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from flipgate.github import awaiting
from flipgate.github.event import AcceptCommand, Ignore, UsageCommand, decide
from flipgate.model import Conclusion

from support.action_harness import PR, Harness, RecordingCheck
from support.factories import make_report, make_row

CONFIG = "version: 1\ncases: eval/cases.jsonl\ngenerator: prompts/answer.prompty\n"
CASES = "".join(json.dumps({"id": f"q{i}", "query": f"q {i}?", "context": f"c {i}.",
                            "category": "safety"}) + "\n" for i in range(1, 4))


def held(case_id: str):
    """A confirmed regression in a blocking category that the sample-size rule held back."""
    return replace(make_row(case_id, category="safety", before=5, after=2), blocking=False,
                   review_reason="safety has 3 cases; below 50 a flip needs a second judge to block")


@pytest.fixture
def awaiting_review(harness: Harness, check: RecordingCheck) -> Harness:
    """A PR whose run held q1 and q2 back under `gate.review: required`: status pending."""
    base = harness.repo.commit({".flipgate.yml": CONFIG, "eval/cases.jsonl": CASES,
                                "prompts/answer.prompty": "v1\n"}, message="cases")
    head = harness.repo.commit({"prompts/answer.prompty": "v3\n"}, message="head")
    harness.base, harness.head = base, head
    harness.server.add_pull(PR, base_sha=base, head_sha=head)
    check.outcome = make_report([held("q1"), held("q2"), make_row("q3", before=5, after=5)],
                                conclusion=Conclusion.AWAITING_REVIEW)
    harness.pull_event()
    assert harness.run(check) == 0
    assert harness.final_status()["state"] == "pending"
    return harness


def _record(harness: Harness) -> awaiting.Review:
    [comment] = harness.own_comments()
    found = awaiting.read_block(comment["body"])
    assert found is not None
    return found


def test_a_readers_accept_clears_nothing(awaiting_review: Harness) -> None:
    harness = awaiting_review
    harness.server.grant("reader", "read")
    before = len(harness.server.statuses)
    command = harness.comment_event("/flipgate accept", author="reader")

    assert harness.run(None) == 0

    assert harness.final_status()["state"] == "pending" and len(harness.server.statuses) == before
    assert harness.server.reactions_on(command["id"]) == ["-1"]
    assert any("`/flipgate accept` needs `write`" in reply for reply in harness.replies())
    assert _record(harness).decisions == ()


def test_a_strangers_label_on_a_held_back_row_decides_nothing(awaiting_review: Harness) -> None:
    harness = awaiting_review
    harness.comment_event("/flipgate label q1 grounded", author="passer-by")

    assert harness.run(None) == 0

    assert harness.final_status()["state"] == "pending"
    assert _record(harness).decisions == ()


@pytest.mark.parametrize("body", [
    "> /flipgate accept",                       # a quote of someone's words
    "<!-- /flipgate accept -->",                # a hidden line
    "```\n/flipgate accept\n```",               # code
    "<details>\n/flipgate accept\n</details>",  # inside raw HTML
    "- /flipgate accept",                       # a list item
    "/flipgate accept now please",              # not the command's words
])
def test_an_accept_the_writer_does_not_show_as_their_own_is_no_accept(
        awaiting_review: Harness, body: str) -> None:
    harness = awaiting_review
    activity = decide("issue_comment", {
        "action": "created", "issue": {"number": PR, "pull_request": {"url": "u"}},
        "comment": {"id": 1, "body": body, "user": {"login": "maintainer"},
                    "created_at": "2024-05-01T12:00:00Z"}})
    assert not isinstance(activity, AcceptCommand)
    before = len(harness.server.statuses)
    harness.comment_event(body)

    assert harness.run(None) == 0

    assert len(harness.server.statuses) == before and _record(harness).decisions == ()
    assert isinstance(activity, Ignore | UsageCommand)


def test_an_accept_written_before_a_push_clears_nothing_on_the_new_head(
        awaiting_review: Harness, check: RecordingCheck) -> None:
    """The maintainer read the first head; the author pushed a second, whose run also holds
    flips back, before the accept's job ran. The accept is not the second head's."""
    harness = awaiting_review
    first = harness.head
    harness.comment_event("/flipgate accept")
    second = harness.repo.commit({"prompts/answer.prompty": "v4\n"}, message="after the accept")
    harness.server.push(PR, second)
    harness.head = second
    harness.pull_event(head=second)
    assert harness.run(check) == 0
    assert harness.final_status(second)["state"] == "pending"
    assert _record(harness).head == second
    # The accept's job runs late: its event is the comment written before the push.
    harness.env.update(GITHUB_EVENT_NAME="issue_comment",
                       GITHUB_EVENT_PATH=str(harness.tmp / "issue_comment.json"))
    before = len(harness.server.statuses)

    assert harness.run(None) == 0

    assert len(harness.server.statuses) == before
    assert harness.final_status(second)["state"] == "pending"
    assert harness.final_status(first)["state"] == "pending"
    assert _record(harness).decisions == ()
    assert any(reply.startswith("Nothing was decided in the review:") for reply in harness.replies())


def test_a_label_written_before_a_push_is_kept_but_decides_nothing(
        awaiting_review: Harness, check: RecordingCheck) -> None:
    harness = awaiting_review
    harness.comment_event("/flipgate label q1 grounded")
    second = harness.repo.commit({"prompts/answer.prompty": "v4\n"}, message="after the label")
    harness.server.push(PR, second)

    assert harness.run(None) == 0

    assert len(harness.server.statuses_for(second)) == 0
    assert harness.final_status()["state"] == "pending"
    record = _record(harness)
    assert record.head == harness.head and record.decisions == ()
    assert any(reply.startswith("Nothing was decided in the review:") for reply in harness.replies())
