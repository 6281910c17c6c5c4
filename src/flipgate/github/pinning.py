"""Which commit a `/flipgate run` approved: pure rules, the API's answers passed in.

A maintainer's command approves what they saw: the PR's head when the comment
was written, or the commit they named (`/flipgate run SHA`). Only a commit that
is the PR's head now, and provably was when the command was written, is run.
"It had a flipgate status once" proves nothing: a fork can push an evil C
(pending), then a benign child A, wait for the approval of A, and force-push C back.

The proof uses only records GitHub stamps with its own clock and a PR author
cannot write, all about this pull request:

- **head records**: the pending status flipgate sets, naming the PR (`#N: ...`),
  when it runs on the PR's `opened`/`synchronize` delivery (its head) or on a
  command; and a `head_ref_force_pushed` event whose `commit_id` is the new head;
- **rewrites**: every `head_ref_force_pushed`, `head_ref_deleted`,
  `head_ref_restored` and `reopened` event of the PR's timeline.

The rule: the newest head record before the comment names the current head, and
no rewrite and no record of another commit comes after that record. Without a
rewrite, the head only moves forward (each push adds descendants), so it cannot
leave a commit and come back to it: the head then stayed that commit from the
record, through the comment, until now. Timeline `committed` events carry only
the dates the author wrote and never count.

Named commits: a full SHA that is the head now is exactly what the maintainer
approved. A shortened one must also be unique among the PR's commits, with no
rewrite since the comment (a force-push could bring a commit ground to share the
prefix). Anything not proven is refused; `why` goes into the reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from flipgate.text.escaping import short

FULL_SHA = 40


class PinnedBy(StrEnum):
    NAMED = "named in the command"
    RECORDED = "the head when the command was written (from the pull request's history)"


@dataclass(frozen=True)
class HeadRecord:
    """What the pull request's history says happened to its head at `at` (GitHub's clock)."""

    at: datetime
    sha: str | None        # the head it records, when it names one
    rewrite: bool = False  # a force-push, a deleted or restored head branch, a reopening
    base_change: bool = False  # the PR moved to another base (`base_ref_changed`)
    what: str = ""         # for the reply: "a force-push", "flipgate's status"


@dataclass(frozen=True)
class Pinned:
    sha: str
    by: PinnedBy


@dataclass(frozen=True)
class Unpinned:
    """No commit may be evaluated under this command; `why` goes to the reply."""

    why: str


def pin_head(*, commits: Sequence[str], current_head: str, comment_at: datetime,
             named: str | None, records: Sequence[HeadRecord]) -> Pinned | Unpinned:
    """The commit a command written at `comment_at` approved, if it can be proven.

    `commits` are the PR's commit SHAs; `records` its head records, rewrites and base
    changes, any order. A command approves the base it was written against too: a base
    changed in the same second as the comment or after it refuses the command.
    """
    moved = sorted(record.at for record in records if record.base_change and record.at >= comment_at)
    if moved:
        return Unpinned(f"the pull request's base changed at {_when(moved[0])}, after the command; "
                        "a command approves the base it was written against, so nothing is run "
                        "under it")
    records = [record for record in records if not record.base_change]
    if named is not None:
        return _named(commits, current_head, named, comment_at, records)
    # A record stamped in the same second as the comment may be either side of it.
    before = [record for record in records if record.at < comment_at and record.sha]
    if not before:
        return Unpinned(f"nothing in the pull request's history shows that its head now, "
                        f"{short(current_head)}, was its head when the command was written")
    newest = max(record.at for record in before)
    latest = {record.sha for record in before if record.at == newest}
    if latest != {current_head}:
        seen = ", ".join(sorted(short(sha) for sha in latest if sha))
        return Unpinned(f"the head when the command was written was {seen}, and the head is now "
                        f"{short(current_head)}; a commit pushed after a command is not run "
                        "under it")
    for record in sorted(records, key=lambda r: r.at):
        if record.at < newest or (record.at == newest and record.sha):
            continue  # before the newest record, or one of them (all naming the head)
        if record.rewrite:
            return Unpinned(f"the pull request's history was rewritten "
                            f"({record.what or 'a force-push'} at {_when(record.at)}) after the head "
                            f"{short(current_head)} was recorded, so what the command approved "
                            "cannot be told")
        if record.sha != current_head:
            return Unpinned(f"the head was {short(record.sha or '')} at {_when(record.at)}, after "
                            "the command; a commit pushed after a command is not run under it")
    return Pinned(current_head, PinnedBy.RECORDED)


def _named(commits: Sequence[str], current_head: str, named: str, comment_at: datetime,
           records: Sequence[HeadRecord]) -> Pinned | Unpinned:
    matches = sorted({sha for sha in [*commits, current_head] if sha.startswith(named)})
    if not matches:
        return Unpinned(f"{named} is not a commit of this pull request")
    if len(matches) > 1:
        return Unpinned(f"{named} names more than one commit of this pull request; "
                        "give more of the SHA")
    if matches[0] != current_head:
        return Unpinned(f"{named} is not the pull request's head now ({short(current_head)}); "
                        "only the head is run")
    if len(named) < FULL_SHA:
        rewrites = [r for r in records if r.rewrite and r.at >= comment_at]
        if rewrites:
            return Unpinned(f"the pull request's history was rewritten "
                            f"({rewrites[0].what or 'a force-push'} at {_when(rewrites[0].at)}) "
                            f"after the command, so the shortened {named} may name another "
                            "commit; give the full SHA")
    return Pinned(current_head, PinnedBy.NAMED)


def _when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


def github_runs_head_code(*, event_name: str, fork: bool) -> bool:
    """Whether GitHub itself runs the head's code with this job's variables: a `pull_request`
    event, or a head of the same repository."""
    return event_name == "pull_request" or not fork


def head_code_refusal(*, event_name: str, fork: bool, pinned: str | None, head_sha: str,
                      head_now: str | None) -> str | None:
    """Why the head's own code (`generator.command`) may not run, or None when it may:
    only where GitHub itself would run that code with those variables
    (`github_runs_head_code`); a fork's head runs only when a maintainer pinned it
    (`/flipgate run`, or a dispatch) and it is still the head."""
    if github_runs_head_code(event_name=event_name, fork=fork):
        return None
    if pinned is None:
        return ("the head is a fork's, and generator.command would run its code with this "
                "repository's secrets under pull_request_target; a maintainer who has read it "
                "can pin it with `/flipgate run`")
    if head_now != pinned:
        now = short(head_now) if head_now else "unknown"
        return (f"a maintainer pinned {short(pinned)}, and the head is now {now}; a commit "
                "pushed after the pin is not run")
    if pinned != head_sha:
        return f"the commit to evaluate, {short(head_sha)}, is not the one pinned ({short(pinned)})"
    return None
