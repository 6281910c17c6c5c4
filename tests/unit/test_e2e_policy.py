"""When the action may include the end-to-end run: a fork's head only once approved."""

from __future__ import annotations

import pytest

from flipgate.github.event import ForkPolicy, PullRequest, e2e_allowed

RC, RUN = ForkPolicy.REQUIRE_COMMAND, ForkPolicy.RUN


@pytest.mark.parametrize("fork, approved, policy, allowed", [
    (False, False, RC, True),    # the repository's own branch
    (True, False, RC, False),    # a stranger's head, not approved: never
    (True, True, RC, True),      # a maintainer's /flipgate run approved it
    (True, False, RUN, True),    # the maintainers chose to run every fork's PR
])
def test_e2e_allowed(fork: bool, approved: bool, policy: ForkPolicy, allowed: bool) -> None:
    pull = PullRequest(number=1, base_sha="a" * 40, head_sha="b" * 40, fork=fork)
    assert e2e_allowed(pull, approved=approved, fork_policy=policy) is allowed
