"""May a head's own code run (`generator.command`)? Only where GitHub itself would let that
code run with those variables: a `pull_request` event, a head of the same repository, or a
head a maintainer pinned with `/flipgate run` that is still the head. A fork under
`pull_request_target` with no pin, or a pin the author then force-pushes past, runs nothing."""

from __future__ import annotations

import pytest

from flipgate.github.pinning import head_code_refusal

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
