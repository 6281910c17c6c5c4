"""Which commit a `/flipgate run` approved: pure rules, the API's answers passed in.

A maintainer's command approves what they saw: the PR's head when the
comment was written, or the commit they named (`/flipgate run SHA`). A push
after the comment, before the job reads the PR, must not ride on that
approval. So the head is pinned from records, in this order of trust:

1. **Named.** `/flipgate run SHA` evaluates that commit, if it is one of the
   PR's commits. Exact; nothing to infer.
2. **Recorded by GitHub.** Every run of flipgate on a head sets a commit
   status on it (pending first), and GitHub stamps each status with its own
   clock; a PR author cannot set statuses on the base repository. The newest
   commit of the PR whose first flipgate status is older than the comment
   was the head the maintainer saw (or a head before it).
3. **Committer dates**, only when no commit of the PR carries a flipgate
   status at all (flipgate runs on comments only). The author writes these
   dates and can forge them, so this is the weak case: the README says so,
   and recommends the named form for forks.

A head that arrived after the comment is never evaluated under it; the
reply says which commit was and that newer ones need a new command.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class PinnedBy(StrEnum):
    NAMED = "named in the command"
    RECORDED = "the head when the command was written (from flipgate's commit statuses)"
    COMMITTER_DATE = "the head when the command was written (from committer dates)"


@dataclass(frozen=True)
class Commit:
    sha: str
    committed_at: datetime | None  # as the author wrote it


@dataclass(frozen=True)
class Pinned:
    sha: str
    by: PinnedBy


@dataclass(frozen=True)
class Unpinned:
    """No commit may be evaluated under this command; `why` goes to the reply."""

    why: str


def pin_head(*, commits: Sequence[Commit], current_head: str, comment_at: datetime,
             named: str | None, first_status_at: Callable[[str], datetime | None]
             ) -> Pinned | Unpinned:
    """The commit a command written at `comment_at` approved.

    `commits` are the PR's commits, oldest first; `first_status_at(sha)` is
    when flipgate's status was first set on a commit (None: never).
    """
    history = [commit for commit in commits if commit.sha != current_head]
    history.append(next((c for c in commits if c.sha == current_head),
                        Commit(current_head, None)))
    if named is not None:
        return _named(history, named)
    newest_first = history[::-1]
    any_status = False
    for commit in newest_first:
        seen = first_status_at(commit.sha)
        if seen is None:
            continue
        any_status = True
        if seen <= comment_at:
            return Pinned(commit.sha, PinnedBy.RECORDED)
    if any_status:
        return Unpinned("none of the pull request's commits was recorded as its head before "
                        "the command was written")
    for commit in newest_first:
        if commit.committed_at is not None and commit.committed_at <= comment_at:
            return Pinned(commit.sha, PinnedBy.COMMITTER_DATE)
    return Unpinned("every commit of the pull request is dated after the command")


def _named(history: Sequence[Commit], named: str) -> Pinned | Unpinned:
    matches = [commit.sha for commit in history if commit.sha.startswith(named)]
    if len(matches) == 1:
        return Pinned(matches[0], PinnedBy.NAMED)
    if not matches:
        return Unpinned(f"{named} is not a commit of this pull request")
    return Unpinned(f"{named} names more than one commit of this pull request; "
                    "give more of the SHA")
