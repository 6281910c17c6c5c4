"""Which commit a `/flipgate run` approved: the rules of pinning.py, one row per case."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from flipgate.github.pinning import Commit, Pinned, PinnedBy, Unpinned, pin_head

A, B, C = "a" * 40, "b" * 40, "c" * 40
COMMENT = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
BEFORE, AFTER = COMMENT - timedelta(minutes=5), COMMENT + timedelta(minutes=5)


def pin(commits: list[tuple[str, datetime | None]], *, head: str | None = None,
        statuses: dict[str, datetime] | None = None, named: str | None = None,
        asked: list[str] | None = None) -> Pinned | Unpinned:
    def first_status_at(sha: str) -> datetime | None:
        if asked is not None:
            asked.append(sha)
        return (statuses or {}).get(sha)

    return pin_head(commits=[Commit(sha, when) for sha, when in commits],
                    current_head=head or commits[-1][0], comment_at=COMMENT, named=named,
                    first_status_at=first_status_at)


@pytest.mark.parametrize(("commits", "statuses", "expected"), [
    # GitHub's status clock decides, whatever the committer dates say.
    ([(A, BEFORE), (B, BEFORE)], {A: BEFORE, B: AFTER}, Pinned(A, PinnedBy.RECORDED)),
    ([(A, AFTER), (B, AFTER)], {A: BEFORE}, Pinned(A, PinnedBy.RECORDED)),
    ([(A, BEFORE), (B, BEFORE)], {A: BEFORE, B: COMMENT}, Pinned(B, PinnedBy.RECORDED)),
    # A head with no status yet (its run still queued) is not trusted past one that has one.
    ([(A, BEFORE), (B, BEFORE), (C, BEFORE)], {A: BEFORE}, Pinned(A, PinnedBy.RECORDED)),
    # Statuses exist, but none from before the comment: nothing was approved.
    ([(A, BEFORE), (B, BEFORE)], {B: AFTER}, Unpinned(
        "none of the pull request's commits was recorded as its head before the command "
        "was written")),
    # No status anywhere (flipgate runs on comments only): committer dates, the weak case.
    ([(A, BEFORE), (B, AFTER)], {}, Pinned(A, PinnedBy.COMMITTER_DATE)),
    ([(A, BEFORE), (B, BEFORE)], {}, Pinned(B, PinnedBy.COMMITTER_DATE)),
    ([(A, AFTER)], {}, Unpinned("every commit of the pull request is dated after the command")),
])
def test_the_head_when_the_command_was_written(commits: list, statuses: dict,
                                               expected: Pinned | Unpinned) -> None:
    assert pin(commits, statuses=statuses) == expected


def test_a_head_missing_from_the_commit_list_is_still_a_candidate() -> None:
    # GitHub lists 250 commits at most; the head read from the PR is always considered.
    assert pin([(A, BEFORE)], head=B, statuses={B: BEFORE}) == Pinned(B, PinnedBy.RECORDED)


def test_the_walk_stops_at_the_first_recorded_head() -> None:
    asked: list[str] = []
    pin([(A, BEFORE), (B, BEFORE), (C, AFTER)], statuses={B: BEFORE, A: BEFORE}, asked=asked)
    assert asked == [C, B]


@pytest.mark.parametrize(("named", "expected"), [
    (A, Pinned(A, PinnedBy.NAMED)),
    (B[:7], Pinned(B, PinnedBy.NAMED)),
    ("f" * 7, Unpinned("fffffff is not a commit of this pull request")),
])
def test_a_named_commit_must_be_one_of_the_pull_requests(named: str,
                                                          expected: Pinned | Unpinned) -> None:
    # Named: no status or date is consulted, even one that would pick another commit.
    assert pin([(A, BEFORE), (B, AFTER)], statuses={A: BEFORE}, named=named) == expected


def test_an_ambiguous_abbreviation_is_refused() -> None:
    first, second = "abcdef1" + "0" * 33, "abcdef1" + "1" * 33
    result = pin([(first, BEFORE), (second, BEFORE)], named="abcdef1")
    assert isinstance(result, Unpinned) and "more than one commit" in result.why
