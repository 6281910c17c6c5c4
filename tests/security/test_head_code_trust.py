"""May a head's own code run (`generator.command`)? Only where GitHub itself would let that
code run with those variables: a `pull_request` event, a head of the same repository, or a
head a maintainer pinned with `/flipgate run` that is still the head. A fork under
`pull_request_target` with no pin, or a pin the author then force-pushes past, runs nothing."""

from __future__ import annotations

import pytest

from flipgate.github.pinning import head_code_refusal

from support.action_harness import PR, Harness, RecordingCheck

HEAD, OTHER = "a" * 40, "b" * 40


@pytest.mark.parametrize(("event", "fork", "pinned", "head_now", "allowed"), [
    ("pull_request", False, None, HEAD, True),             # GitHub runs the PR's code here anyway
    ("pull_request_target", False, None, HEAD, True),      # a branch of the same repository
    ("pull_request_target", True, HEAD, HEAD, True),       # a maintainer pinned this head
    ("issue_comment", True, HEAD, HEAD, True),             # /flipgate run on a fork
    ("workflow_dispatch", True, HEAD, HEAD, True),         # started by hand: write access
    ("pull_request_target", True, None, HEAD, False),      # a fork, nobody pinned it
    ("issue_comment", True, HEAD, OTHER, False),           # pinned, then force-pushed past
    ("pull_request_target", True, HEAD, None, False),      # the head now is unknown
], ids=["pull_request", "same-repo", "pinned", "command", "dispatch", "fork-unpinned",
        "pin-pushed-past", "head-unknown"])
def test_a_heads_code_runs_only_where_github_would_run_it(
        event: str, fork: bool, pinned: str | None, head_now: str | None, allowed: bool) -> None:
    why = head_code_refusal(event_name=event, fork=fork, pinned=pinned, head_sha=HEAD,
                            head_now=head_now)
    assert (why is None) is allowed


def test_the_refusals_say_why() -> None:
    unpinned = head_code_refusal(event_name="pull_request_target", fork=True, pinned=None,
                                 head_sha=HEAD, head_now=HEAD)
    assert unpinned is not None and "/flipgate run" in unpinned and "fork" in unpinned
    moved = head_code_refusal(event_name="issue_comment", fork=True, pinned=HEAD, head_sha=HEAD,
                              head_now=OTHER)
    assert moved is not None and "aaaaaaaaaaaa" in moved and "bbbbbbbbbbbb" in moved


# -- through the action: a fork's head under pull_request_target -------------------------------

COMMAND_CONFIG = """version: 1
cases: eval/cases.jsonl
generator:
  command: python -m app.answer
  watch: [app/**]
judge:
  provider: offline
"""


def command_pull(harness: Harness) -> str:
    base = harness.repo.commit({".flipgate.yml": COMMAND_CONFIG, "app/answer.py": "v1\n",
                                "eval/cases.jsonl": '{"id": "a", "query": "q", "context": "c"}\n'},
                               message="base: the app answers")
    head = harness.repo.commit({"app/answer.py": "import os  # reads the secrets\n"},
                               message="fork: evil head")
    harness.server.add_pull(PR, base_sha=base, head_sha=head, fork=True)
    harness.pull_event(event_name="pull_request_target", fork=True, base=base, head=head)
    harness.head = head
    return head


def test_a_forks_head_under_pull_request_target_with_no_pin_runs_nothing(
        harness: Harness, check: RecordingCheck) -> None:
    head = command_pull(harness)
    code = harness.run(check, **{"INPUT_FORK-POLICY": "run"})
    assert code == 3
    assert check.calls == []   # nothing started: no code, no model
    status = harness.final_status(head)
    assert status["state"] == "error" and "not run" in status["description"]
    comment = harness.own_comments()[-1]["body"]
    assert "did not run this pull request's code" in comment and "/flipgate run" in comment


def test_a_forks_head_pinned_by_a_maintainer_runs(harness: Harness, check: RecordingCheck) -> None:
    head = command_pull(harness)
    harness.comment_event(f"/flipgate run {head}")
    assert harness.run(check, **{"INPUT_FORK-POLICY": "run"}) == 0
    assert [call["head"] for call in check.calls] == [head]


def test_a_same_repository_head_runs_without_a_pin(harness: Harness, check: RecordingCheck) -> None:
    head = command_pull(harness)
    harness.server.add_pull(PR, base_sha=harness.repo.git("rev-parse", "HEAD~1"), head_sha=head)
    harness.pull_event(event_name="pull_request_target", fork=False,
                       base=harness.repo.git("rev-parse", "HEAD~1"), head=head)
    assert harness.run(check) == 0
    assert [call["head"] for call in check.calls] == [head]
