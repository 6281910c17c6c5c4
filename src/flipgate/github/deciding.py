"""The steps of a review (`gate.review: required`): the record a run awaiting review
leaves in the gate's comment, and the maintainers' `/flipgate label` and `/flipgate
accept` that decide it. The rules are github/awaiting.py's; here are the reads and writes:
who may decide (as for `/flipgate run`), which head the command approved (pinning.py),
the comment's record and the commit statuses it makes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from flipgate.errors import EXIT_PASS
from flipgate.github import awaiting
from flipgate.github import texts as messages
from flipgate.github.api import RepoAPI
from flipgate.github.commanding import pin_command, react, status_setter
from flipgate.github.event import AcceptCommand, LabelCommand, PullRequest, may_command
from flipgate.github.inputs import Settings
from flipgate.github.labels import HumanLabel, valid_login
from flipgate.github.outcome import Outcome
from flipgate.github.pinning import Unpinned
from flipgate.github.sticky import find_comment
from flipgate.github.workflow import Workflow
from flipgate.model import Conclusion


def decided(api: RepoAPI, outcome: Outcome, *, settings: Settings, pull: PullRequest,
            login: str) -> Outcome:
    """A run awaiting review, as the decisions kept for its head make it (none on a new
    head): its status, `conclusion`, exit code, and the comment with the record. Any other
    outcome as it is."""
    report = outcome.report
    if report is None or report.conclusion is not Conclusion.AWAITING_REVIEW:
        return outcome
    previous = None
    if login:
        comment, _ = find_comment(api, number=pull.number, login=login,
                                  context=settings.status_context)
        previous = awaiting.read_block(comment.body) if comment is not None else None
    record = awaiting.fitted(awaiting.carried(previous, head=pull.head_sha,
                                          held=awaiting.held_rows(report),
                                          per_suite=report.per_suite_status))
    status = awaiting.status_of(record)
    suites = {name: one for name, one in awaiting.suite_statuses(record) if one.state != "pending"}
    # Undecided, the report's own words say which categories held the flips back.
    undecided = not record.decisions and record.accepted_by is None
    description = outcome.description if undecided else status.description
    return replace(outcome, state=status.state, description=description,
                   headline=outcome.headline if undecided else status.description,
                   conclusion=status.conclusion, exit_code=status.exit_code,
                   comment=awaiting.with_review(outcome.comment, record),
                   fingerprint=messages.fingerprint_of_text(outcome.fingerprint + awaiting.block(record)),
                   suite_statuses=tuple(
                       (name, suites[name].state, suites[name].description) if name in suites
                       else (name, state, text) for name, state, text in outcome.suite_statuses))


def _refusal(settings: Settings, api: RepoAPI, pull: PullRequest,
             command: LabelCommand | AcceptCommand, record: awaiting.Review) -> str | None:
    """Why this command may not decide the record, or None: it must be pinned, as
    `/flipgate run` is, to the head the record is of."""
    pin = pin_command(settings, api, pull, command=command)
    if isinstance(pin, Unpinned):
        return pin.why
    return awaiting.other_head(record, pin.sha)


def _post(settings: Settings, api: RepoAPI, pull: PullRequest, record: awaiting.Review) -> None:
    """The statuses the record makes: each suite's (under `status: per-suite`), then the run's."""
    set_status = status_setter(settings, api, pull)
    for suite, status in awaiting.suite_statuses(record):
        set_status(status.state, status.description, suite=suite)
    status = awaiting.status_of(record)
    set_status(status.state, status.description)


def label_decisions(settings: Settings, api: RepoAPI, workflow: Workflow, command: LabelCommand,
                    *, pull: PullRequest, comment_id: int, body: str,
                    labels: Sequence[HumanLabel]) -> None:
    """Edit the gate's comment to `body` (with the labels just recorded). A label on a
    held-back row of the comment's review decides that row too, when the command is pinned
    to the head the review is of; the comment and the statuses then say so, else a reply
    says why nothing was decided."""
    record = awaiting.read_block(body)
    updated, made = awaiting.with_labels(record, labels) if record is not None else (None, [])
    if record is None or updated is None or not made:
        api.edit_comment(command.number, comment_id, body)
        return
    why = _refusal(settings, api, pull, command, record)
    if why is not None:
        api.edit_comment(command.number, comment_id, body)
        api.create_comment(command.number, awaiting.not_decided_reply(why))
        workflow.notice(f"/flipgate label from {command.author}: review not decided: {why}")
        return
    api.edit_comment(command.number, comment_id, awaiting.with_review(body, updated))
    _post(settings, api, pull, updated)
    workflow.info(f"flipgate: review on {updated.head}: {awaiting.status_of(updated).description}")


def accept(settings: Settings, api: RepoAPI, workflow: Workflow, command: AcceptCommand) -> int:
    """`/flipgate accept`: from someone who may command, pinned to the head the gate's
    review is of, every held-back row still undecided is cleared; the comment records it
    and the statuses follow."""
    permission = api.permission(command.author)
    if not may_command(permission) or not valid_login(command.author):
        api.create_comment(command.number, messages.refusal_reply(
            author=command.author, permission=permission, command="accept"))
        react(api, workflow, command, "-1")
        workflow.notice(f"/flipgate accept from {command.author} ({permission} access) refused")
        return EXIT_PASS

    def refuse(reply: str, why: str) -> int:
        api.create_comment(command.number, reply)
        react(api, workflow, command, "confused")
        workflow.notice(f"/flipgate accept from {command.author}: nothing accepted: {why}")
        return EXIT_PASS

    pull = api.pull(command.number)
    comment, _ = find_comment(api, number=command.number, login=api.own_login(),
                              context=settings.status_context)
    record = awaiting.read_block(comment.body) if comment is not None else None
    if comment is None or record is None:
        return refuse(awaiting.NOTHING_AWAITS, "no review in the comment")
    why = _refusal(settings, api, pull, command, record)
    if why is not None:
        return refuse(awaiting.not_decided_reply(why), why)
    updated, cleared = awaiting.accepted(record, by=command.author)
    if not cleared:
        return refuse(awaiting.all_decided_reply(record), "every flip already decided")
    api.edit_comment(command.number, comment.id, awaiting.with_review(comment.body, updated))
    _post(settings, api, pull, updated)
    react(api, workflow, command, "+1")
    status = awaiting.status_of(updated)
    workflow.info(f"flipgate: /flipgate accept from {command.author} ({permission}) on "
                  f"{updated.head}: {cleared} held-back flip(s) cleared; {status.description}")
    workflow.append_summary(f"`/flipgate accept` by @{command.author}: {status.description}\n")
    return EXIT_PASS
