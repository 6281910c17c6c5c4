"""Decide, purely, what an Actions event asks flipgate to do.

`decide(event_name, payload, fork_policy=...)` turns the webhook payload the
runner saved at `$GITHUB_EVENT_PATH` into exactly one activity. Nothing here
talks to the network or the disk, so every rule is a row in a test table.
The few decisions that need the API's answer (who may command, which PR a
command pins) are small pure functions too: `may_command`, `decide_pull`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from flipgate.errors import InputError, Problem
from flipgate.github.comment_lines import shown_lines
from flipgate.github.payload import Fields

PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
PULL_REQUEST_ACTIONS = ("opened", "synchronize", "reopened")
COMMAND_PREFIX = "/flipgate"
GHOST = "ghost"  # how GitHub shows a deleted account, which some payloads send as `user: null`
EVENT_SOURCE = "GITHUB_EVENT_PATH"  # what a problem in the event payload is located by
# `/flipgate run SHA`: a full or abbreviated commit name (git's shortest is 7).
_COMMAND_SHA = re.compile(r"[0-9a-fA-F]{7,64}")
# `/flipgate label ID [SIDE] LABEL`: at most this many words are read, each cut at a length.
_LABEL_WORDS, _WORD_LIMIT = 8, 256
# The collaborator-permission endpoint's `permission` values that may command.
COMMANDING_PERMISSIONS = frozenset({"admin", "maintain", "write"})


class ForkPolicy(StrEnum):
    REQUIRE_COMMAND = "require-command"  # a fork's PR runs only on a maintainer's /flipgate run
    RUN = "run"                          # a fork's PR runs on pull_request_target like any other


@dataclass(frozen=True)
class PullRequest:
    """The pull request a run evaluates, with its SHAs pinned."""

    number: int
    base_sha: str
    head_sha: str
    fork: bool
    base_ref: str = ""        # the base branch's name (`main`), which github/bases.py trusts or not
    default_branch: str = ""  # the repository's default branch, as GitHub names it


@dataclass(frozen=True)
class RunCheck:
    """Evaluate this pull request now."""

    pull: PullRequest


@dataclass(frozen=True)
class AwaitCommand:
    """A fork's PR under `require-command`: mark it pending, spend nothing, await a maintainer."""

    pull: PullRequest


@dataclass(frozen=True)
class CannotRunFork:
    """`pull_request` from a fork: the run has neither secrets nor a writable token."""

    pull: PullRequest


@dataclass(frozen=True)
class Command:
    """A `/flipgate ...` comment on a pull request, as typed (nothing checked yet)."""

    number: int
    comment_id: int
    author: str


@dataclass(frozen=True)
class RunCommand(Command):
    """`/flipgate run [SHA]`: run the check if the author may command it, on the head
    as it was when the comment was written, or on the commit it names."""

    created_at: datetime         # when GitHub recorded the comment
    sha: str | None = None       # as typed after `run` (lower-cased), if anything


@dataclass(frozen=True)
class LabelCommand(Command):
    """`/flipgate label ID [baseline|candidate] LABEL`, one line a label: record a person's
    labels on answers if the author may command; the words are checked by github/labels.py."""

    arguments: tuple[str, ...] = ()          # the first label line's words
    labels: tuple[tuple[str, ...], ...] = ()  # every label line's words (the first included)
    unread: int = 0                          # label lines past LABELS_PER_COMMENT
    set_aside: tuple[str, ...] = ()          # other command lines of the comment, not obeyed
    created_at: datetime | None = None       # when GitHub recorded it: a review decision pins


@dataclass(frozen=True)
class AcceptCommand(Command):
    """`/flipgate accept`: clear every held-back row still undecided in the review of the
    head as it was when the comment was written (github/awaiting.py), if the author may
    command; pinned as `/flipgate run` is."""

    created_at: datetime         # when GitHub recorded the comment


@dataclass(frozen=True)
class UsageCommand(Command):
    """`/flipgate`, `/flipgate help` or a subcommand we don't know: reply with usage."""

    unknown: str | None = None  # the words after /flipgate we did not understand, as typed


@dataclass(frozen=True)
class RunDispatch:
    """`workflow_dispatch`: evaluate the named pull request's head as it is now.

    Only someone with write access can start a workflow by hand, so there is
    no permission to check, and a fork's pull request is evaluated too.
    """

    number: int
    actor: str


@dataclass(frozen=True)
class Ignore:
    """Nothing to do; `reason` goes to the log."""

    reason: str


Activity = (RunCheck | AwaitCommand | CannotRunFork | RunCommand | LabelCommand | AcceptCommand
            | UsageCommand | RunDispatch | Ignore)


def load_event(path: str | Path) -> dict[str, Any]:
    """The payload at `$GITHUB_EVENT_PATH`; a missing or broken file is bad input."""
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(Problem(str(path), None, f"cannot read the event payload: {exc.strerror}")) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(Problem(str(path), None, f"the event payload is not JSON: {exc}")) from None
    if not isinstance(payload, dict):
        raise InputError(Problem(str(path), None, "the event payload is not a JSON object"))
    return payload


# -- commands ----------------------------------------------------------------

@dataclass(frozen=True)
class ParsedCommand:
    name: str                   # "run" | "label" | "accept" | "help"
    unknown: str | None = None  # set when the words were not a valid command: answer with usage
    sha: str | None = None      # `/flipgate run SHA`: the commit asked for
    arguments: tuple[str, ...] = ()  # `/flipgate label ...`: the first label line's words
    labels: tuple[tuple[str, ...], ...] = ()  # every label line's words, in order
    unread: int = 0             # label lines past LABELS_PER_COMMENT, not read
    set_aside: tuple[str, ...] = ()  # the comment's other command lines, not obeyed


# A comment records at most this many labels; the lines after are refused, in the reply.
LABELS_PER_COMMENT = 50


def command_lines(body: str | None) -> list[str]:
    """The comment's command lines, as written (leading spaces off): each line the writer
    shows as a line of a top-level paragraph (github/comment_lines.py) whose first word is
    `/flipgate`, after at most three spaces. Nothing quoted, listed, in code, in a footnote,
    an HTML comment or any other HTML is a command."""
    found = []
    for _, line in shown_lines(body or "", COMMAND_PREFIX):
        stripped = line.lstrip(" ")
        if len(line) - len(stripped) <= 3 and stripped.startswith(COMMAND_PREFIX) \
                and stripped.split()[0] == COMMAND_PREFIX:
            found.append(stripped.rstrip())
    return found


def parse_command(body: str | None) -> ParsedCommand | None:
    """The comment's command, or None when no line of it is one. Every label line counts
    (at most LABELS_PER_COMMENT); without one, the first command line decides. A comment
    with label lines obeys no other command line: `set_aside` lists them for the reply."""
    lines = command_lines(body)
    parsed = [_parse_line(line) for line in lines]
    if not parsed:
        return None  # "/flipgateway", "> /flipgate run", plain text: not for us
    labels = [one for one in parsed if one.name == "label"]
    if not labels:
        return parsed[0]
    others = tuple(line for line, one in zip(lines, parsed, strict=True)
                   if one.name != "label")
    read = labels[:LABELS_PER_COMMENT]
    return ParsedCommand("label", arguments=read[0].arguments,
                         labels=tuple(one.arguments for one in read),
                         unread=len(labels) - len(read), set_aside=others)


def _parse_line(line: str) -> ParsedCommand:
    arguments = line.split()[1:]
    if not arguments or arguments == ["help"]:
        return ParsedCommand("help")
    if arguments == ["run"]:
        return ParsedCommand("run")
    if arguments == ["accept"]:
        return ParsedCommand("accept")
    if len(arguments) == 2 and arguments[0] == "run" and _COMMAND_SHA.fullmatch(arguments[1]):
        return ParsedCommand("run", sha=arguments[1].lower())
    if arguments[0] == "label":
        # Past _LABEL_WORDS the line cannot be a label: its words are not kept.
        words = arguments[1:_LABEL_WORDS + 1]
        return ParsedCommand("label", arguments=tuple(word[:_WORD_LIMIT] for word in words))
    return ParsedCommand("help", unknown=" ".join(arguments)[:80])


def may_command(permission: str | None) -> bool:
    """Whether a repository permission lets its holder run flipgate by comment."""
    return permission in COMMANDING_PERMISSIONS


# -- pull requests -----------------------------------------------------------

def pull_from_payload(pull: Mapping[str, Any], *, source: str = EVENT_SOURCE,
                      path: str = "pull_request") -> PullRequest:
    """A `pull_request` object (webhook or REST shape) as the SHAs and fork flag we need.

    `source` and `path` say where it was read, for the message when a field is wrong.
    """
    fields = Fields({path: pull}, source)
    fields.object(path)
    number = fields.number(f"{path}.number")
    fields.object(f"{path}.head")
    head_sha = fields.sha(f"{path}.head.sha")
    head_repo = fields.object(f"{path}.head.repo", nullable=True)  # null: the fork was deleted
    head_name = fields.text(f"{path}.head.repo.full_name") if head_repo is not None else None
    fields.object(f"{path}.base")
    base_sha = fields.sha(f"{path}.base.sha")
    base_ref = fields.text(f"{path}.base.ref")
    fields.object(f"{path}.base.repo")
    base_name = fields.text(f"{path}.base.repo.full_name")
    return PullRequest(number=number, base_sha=base_sha, head_sha=head_sha,
                       fork=head_name != base_name, base_ref=base_ref,
                       default_branch=fields.text(f"{path}.base.repo.default_branch"))


def decide_pull(pull: PullRequest, *, event_name: str,
                fork_policy: ForkPolicy) -> RunCheck | AwaitCommand | CannotRunFork:
    """What a pull request event may do, given where its head lives."""
    if not pull.fork:
        return RunCheck(pull)
    if event_name == "pull_request":
        return CannotRunFork(pull)
    if fork_policy is ForkPolicy.RUN:
        return RunCheck(pull)
    return AwaitCommand(pull)


def e2e_allowed(pull: PullRequest, *, approved: bool, fork_policy: ForkPolicy) -> bool:
    """May this run include the end-to-end run (when the base configuration enables it)?
    It runs only base code, but spends money on retrieval and generation: a fork's head
    under `require-command` gets it only once a maintainer's `/flipgate run` approved it."""
    return not pull.fork or approved or fork_policy is ForkPolicy.RUN


# -- the decision ------------------------------------------------------------

def decide(event_name: str, payload: Mapping[str, Any], *,
           fork_policy: ForkPolicy = ForkPolicy.REQUIRE_COMMAND,
           pr_number: int | None = None) -> Activity:
    """The one activity an event asks for; a field it needs that is missing, null or
    of the wrong type is an InputError naming the field. `pr_number`: the `pr-number`
    input, which a `workflow_dispatch` run needs."""
    if event_name in PULL_REQUEST_EVENTS:
        return _decide_pull_request(event_name, Fields(payload, EVENT_SOURCE), fork_policy)
    if event_name == "issue_comment":
        return _decide_comment(Fields(payload, EVENT_SOURCE))
    if event_name == "workflow_dispatch":
        return _decide_dispatch(Fields(payload, EVENT_SOURCE), pr_number)
    return Ignore(f"flipgate does nothing on `{event_name}` events; it runs on pull_request, "
                  "pull_request_target, issue_comment and workflow_dispatch")


def _decide_dispatch(payload: Fields, pr_number: int | None) -> Activity:
    if pr_number is None:
        raise InputError(Problem("input pr-number", None,
                                 "a workflow_dispatch run needs the pull request to evaluate: "
                                 "pass `pr-number: ${{ inputs.pr-number }}`"))
    actor = payload.text("sender.login") if payload.has("sender.login") else "someone"
    return RunDispatch(number=pr_number, actor=actor)


def _decide_pull_request(event_name: str, payload: Fields,
                         fork_policy: ForkPolicy) -> Activity:
    action = payload.text("action")
    # A new base makes the last verdict about a base that is gone: decide again.
    retargeted = action == "edited" and payload.has("changes.base")
    if action not in PULL_REQUEST_ACTIONS and not retargeted:
        return Ignore(f"{event_name} `{action}`: only opened, synchronize, reopened and an edit "
                      "that changes the base are checked")
    pull = payload.object("pull_request")
    assert pull is not None
    return decide_pull(pull_from_payload(pull), event_name=event_name, fork_policy=fork_policy)


def commenter(payload: Fields) -> str:
    """The comment's author; `user: null` (a deleted account) is GitHub's ghost."""
    return GHOST if payload.object("comment.user", nullable=True) is None \
        else payload.text("comment.user.login")


def _decide_comment(payload: Fields) -> Activity:
    action = payload.text("action")
    if action != "created":
        return Ignore(f"issue_comment `{action}`: only new comments are read, "
                      "edits are ignored")
    payload.object("issue")
    payload.object("comment")
    parsed = parse_command(payload.string("comment.body", nullable=True))
    if parsed is None:
        return Ignore("the comment is not a /flipgate command")
    number = payload.number("issue.number")
    # A plain issue's `issue` has no `pull_request` key; a PR's has an object there.
    if not payload.has("issue.pull_request"):
        return Ignore(f"issue #{number} is not a pull request; "
                      "/flipgate commands work on pull requests only")
    payload.object("issue.pull_request")
    comment_id, author = payload.number("comment.id"), commenter(payload)
    if parsed.name == "run":
        return RunCommand(number=number, comment_id=comment_id, author=author,
                          created_at=payload.timestamp("comment.created_at"), sha=parsed.sha)
    if parsed.name == "accept":
        return AcceptCommand(number=number, comment_id=comment_id, author=author,
                             created_at=payload.timestamp("comment.created_at"))
    if parsed.name == "label":
        return LabelCommand(number=number, comment_id=comment_id, author=author,
                            arguments=parsed.arguments, labels=parsed.labels or (parsed.arguments,),
                            unread=parsed.unread, set_aside=parsed.set_aside,
                            created_at=payload.timestamp("comment.created_at"))
    return UsageCommand(number=number, comment_id=comment_id, author=author, unknown=parsed.unknown)
