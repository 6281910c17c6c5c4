"""One flipgate comment per pull request and gate: edited in place, never overwritten by an
older run.

A gate's comment is the oldest comment on the PR that carries the hidden
marker of its status context, `<!-- flipgate:CONTEXT -->`, *and* was
written by the token's own login (so a user quoting the marker cannot
hijack it). Two gates with different status contexts (a monorepo with two
assistants) therefore keep two comments. A comment from before contexts
were marked carries the bare `<!-- flipgate -->`; the first gate that finds
no comment of its own adopts it and re-marks it as its own.

The comment also carries the head SHA it describes, `<!-- flipgate:sha=... -->`
(a run for an older head leaves a newer comment alone), and a fingerprint of
its verdicts, `<!-- flipgate:verdicts=... -->`, which `comment: on-change`
compares to decide whether there is anything new to say.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from typing import Protocol

from flipgate.config.schema import GITHUB_COMMENT_LIMIT
from flipgate.github.api import IssueComment
from flipgate.github.awaiting import REVIEW_ROOM
from flipgate.github.event import PullRequest
from flipgate.github.labels import LABELS_ROOM
from flipgate.output.comment import MARKER

LEGACY_MARKER = MARKER  # `<!-- flipgate -->`: what the comment template writes first
_SHA_MARKER = re.compile(r"<!-- flipgate:sha=([0-9a-fA-F]{7,64}) -->")
_VERDICTS_MARKER = re.compile(r"<!-- flipgate:verdicts=([0-9a-f]{1,64}) -->")
# Status contexts are at most 255 characters on GitHub.
_CONTEXT_LIMIT = 255


class CommentMode(StrEnum):
    ALWAYS = "always"        # post or edit the comment on every run (the default)
    ON_CHANGE = "on-change"  # only when the verdicts differ from what the comment says
    NEVER = "never"          # no comment: step summary, status and outputs only


class Published(StrEnum):
    CREATED = "created"
    EDITED = "edited"
    MIGRATED = "migrated"        # an unmarked comment of an older flipgate, adopted and edited
    UNCHANGED = "unchanged"      # the comment already said exactly this
    SAME_VERDICTS = "same-verdicts"  # on-change: the verdicts are those the comment shows
    KEPT_NEWER = "kept-newer"    # the comment describes a newer head; left alone
    NOT_CREATED = "not-created"  # no comment yet, and none was wanted
    DISABLED = "disabled"        # comment: never


class CommentAPI(Protocol):
    def matching_comments(self, number: int,
                          matches: Callable[[IssueComment], bool]) -> list[IssueComment]: ...
    def create_comment(self, number: int, body: str) -> int: ...
    def edit_comment(self, number: int, comment_id: int, body: str) -> None: ...
    def pull(self, number: int) -> PullRequest: ...
    def commit_date(self, sha: str) -> object: ...


def context_marker(context: str) -> str:
    """The hidden marker of one gate's comment. A `--` or `>` in the context could end
    the HTML comment early, so they are spelled differently; nothing else changes."""
    safe = context[:_CONTEXT_LIMIT].replace("--", "-\u2010").replace(">", "\u203a")
    return f"<!-- flipgate:{safe} -->"


def sha_marker(sha: str) -> str:
    return f"<!-- flipgate:sha={sha} -->"


def verdicts_marker(fingerprint: str) -> str:
    return f"<!-- flipgate:verdicts={fingerprint} -->"


def marker_space(context: str) -> int:
    """The most `with_markers` may add to a body (a SHA-256 object name and fingerprint),
    with the room people's labels and a review's record may take (sections, hidden blocks)."""
    return (len(context_marker(context)) + len(sha_marker("0" * 64))
            + len(verdicts_marker("0" * 64)) + 1 + LABELS_ROOM + REVIEW_ROOM)


def body_limit(context: str) -> int:
    """The most a body handed to `publish` may hold, so that with its markers it fits GitHub."""
    return GITHUB_COMMENT_LIMIT - marker_space(context)


# The limit for the default gate (`status-context: flipgate`).
BODY_LIMIT = body_limit("flipgate")


def with_markers(body: str, *, context: str, head_sha: str, fingerprint: str | None = None) -> str:
    """`body` with its first line carrying the gate's marker, the SHA and the fingerprint."""
    body = _VERDICTS_MARKER.sub("", _SHA_MARKER.sub("", body))
    own = context_marker(context)
    body = body.replace(own, LEGACY_MARKER, 1)  # an already marked body keeps its slot
    markers = own + sha_marker(head_sha) + (verdicts_marker(fingerprint) if fingerprint else "")
    if LEGACY_MARKER in body:
        return body.replace(LEGACY_MARKER, markers, 1)
    return f"{markers}\n{body}"


def marked_sha(body: str) -> str | None:
    found = _SHA_MARKER.search(body)
    return found.group(1).lower() if found else None


def marked_fingerprint(body: str) -> str | None:
    found = _VERDICTS_MARKER.search(body)
    return found.group(1) if found else None


def is_own(comment: IssueComment, login: str, context: str) -> bool:
    return comment.author == login and context_marker(context) in comment.body


def is_legacy(comment: IssueComment, login: str) -> bool:
    """A comment of a flipgate from before contexts were marked."""
    return comment.author == login and LEGACY_MARKER in comment.body


def find_comment(api: CommentAPI, *, number: int, login: str,
                 context: str) -> tuple[IssueComment | None, bool]:
    """This gate's comment, else an unmarked legacy one to adopt: (comment, is_legacy)."""
    found = api.matching_comments(number, lambda c: is_own(c, login, context)
                                  or is_legacy(c, login))
    own = [comment for comment in found if is_own(comment, login, context)]
    if own:
        return own[0], False
    return (found[0], True) if found else (None, False)


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
            context: str = "flipgate", fingerprint: str | None = None,
            mode: CommentMode = CommentMode.ALWAYS, create: bool = True) -> Published:
    """Create or edit this gate's comment on PR `number` with `body` about `head_sha`.

    `create=False` only updates a comment that already exists (a skipped run).
    `fingerprint` says what the verdicts are; under `on-change` a comment that
    already shows the same verdicts is left as it is.
    """
    if mode is CommentMode.NEVER:
        return Published.DISABLED
    existing, legacy = find_comment(api, number=number, login=login, context=context)
    full_body = with_markers(body, context=context, head_sha=head_sha, fingerprint=fingerprint)
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
    if (mode is CommentMode.ON_CHANGE and not legacy and fingerprint is not None
            and marked_fingerprint(existing.body) == fingerprint):
        return Published.SAME_VERDICTS
    api.edit_comment(number, existing.id, full_body)
    return Published.MIGRATED if legacy else Published.EDITED
