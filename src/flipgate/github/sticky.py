"""The one flipgate comment per pull request: edited in place, never overwritten by an older run.

flipgate's comment is the oldest comment on the PR that carries the hidden
marker `<!-- flipgate -->` *and* was written by the token's own login (so a
user quoting the marker cannot hijack it). It also carries the head SHA it
describes, `<!-- flipgate:sha=... -->`. A run for an older head (a slow run
that finishes after a newer push was already evaluated) leaves it alone.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Protocol

from flipgate.config import GITHUB_COMMENT_LIMIT
from flipgate.github.api import IssueComment
from flipgate.github.event import PullRequest
from flipgate.render import MARKER

_SHA_MARKER = re.compile(r"<!-- flipgate:sha=([0-9a-fA-F]{7,64}) -->")


class Published(StrEnum):
    CREATED = "created"
    EDITED = "edited"
    UNCHANGED = "unchanged"      # the comment already said exactly this
    KEPT_NEWER = "kept-newer"    # the comment describes a newer head; left alone
    NOT_CREATED = "not-created"  # no comment yet, and none was wanted


class CommentAPI(Protocol):
    def first_comment(self, number: int, matches: object) -> IssueComment | None: ...
    def create_comment(self, number: int, body: str) -> int: ...
    def edit_comment(self, number: int, comment_id: int, body: str) -> None: ...
    def pull(self, number: int) -> PullRequest: ...
    def commit_date(self, sha: str) -> object: ...


def sha_marker(sha: str) -> str:
    return f"<!-- flipgate:sha={sha} -->"


def sha_marker_space() -> int:
    """What `with_markers` may add to a body (a SHA-256 object name at most)."""
    return len(MARKER) + len(sha_marker("0" * 64)) + 1


# The most a body handed to `publish` may hold, so that with its markers it fits GitHub.
BODY_LIMIT = GITHUB_COMMENT_LIMIT - sha_marker_space()


def with_markers(body: str, head_sha: str) -> str:
    """`body` carrying the flipgate marker, then the SHA marker, on its first line."""
    body = _SHA_MARKER.sub("", body)
    if MARKER in body:
        return body.replace(MARKER, MARKER + sha_marker(head_sha), 1)
    return f"{MARKER}{sha_marker(head_sha)}\n{body}"


def marked_sha(body: str) -> str | None:
    found = _SHA_MARKER.search(body)
    return found.group(1).lower() if found else None


def is_own(comment: IssueComment, login: str) -> bool:
    return comment.author == login and MARKER in comment.body


def newer_by_head(*, ours: str, theirs: str, current_head: str) -> bool | None:
    """Whether the comment's SHA is newer than ours, by the PR's head now; None: can't tell."""
    if theirs == ours or current_head == ours:
        return False
    if current_head == theirs:
        return True
    return None


def newer_by_date(*, our_date: object, their_date: object) -> bool:
    """Both runs are stale: the later commit wins. A commit GitHub forgot never wins."""
    if our_date is None or their_date is None:
        return False
    return their_date > our_date  # type: ignore[operator]


def comment_is_newer(api: CommentAPI, *, number: int, ours: str, theirs: str) -> bool:
    verdict = newer_by_head(ours=ours, theirs=theirs, current_head=api.pull(number).head_sha)
    if verdict is not None:
        return verdict
    return newer_by_date(our_date=api.commit_date(ours), their_date=api.commit_date(theirs))


def publish(api: CommentAPI, *, number: int, login: str, head_sha: str, body: str,
            create: bool = True) -> Published:
    """Create or edit flipgate's comment on PR `number` with `body` about `head_sha`."""
    existing = api.first_comment(number, lambda comment: is_own(comment, login))
    full_body = with_markers(body, head_sha)
    if existing is None:
        if not create:
            return Published.NOT_CREATED
        api.create_comment(number, full_body)
        return Published.CREATED
    theirs = marked_sha(existing.body)
    if theirs and theirs != head_sha.lower() and comment_is_newer(
            api, number=number, ours=head_sha.lower(), theirs=theirs):
        return Published.KEPT_NEWER
    if existing.body == full_body:
        return Published.UNCHANGED
    api.edit_comment(number, existing.id, full_body)
    return Published.EDITED
