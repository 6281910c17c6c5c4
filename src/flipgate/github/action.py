"""`flipgate action`: the Docker action's entrypoint, a plain sequence of steps.

settings -> decide -> (command: permission, pin the head) -> pending status ->
fetch the SHAs if missing -> run the check -> hand what it wrote back to the
workspace's owner -> comment -> final status -> step summary and outputs -> exit code.

Everything with a side effect is passed in (`check`, `connect_api`, `git`,
the environment and the log stream), so tests run the real sequence against
loopback servers and a temporary repository.
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, TextIO
from urllib.parse import urlsplit

from flipgate.config.schema import DEFAULT_CACHE_DIR, DEFAULT_OUT_DIR
from flipgate.e2e.run import E2ERequest
from flipgate.errors import (
    EXIT_BAD_INPUT,
    EXIT_INCOMPLETE,
    EXIT_PASS,
    FlipgateError,
    InputError,
)
from flipgate.git.repository import Git
from flipgate.github import joblog
from flipgate.github import labels as human
from flipgate.github import texts as messages
from flipgate.github.api import GitHubError, RepoAPI, StatusUpdate, connect
from flipgate.github.bases import Refused, refuse_base, unconfigured
from flipgate.github.cancel import STATUS_BUDGET, Cancellation, handled, within
from flipgate.github.commanding import context_of, pin_command, react, status_setter
from flipgate.github.deciding import accept, decided, label_decisions
from flipgate.github.event import (
    LABELS_PER_COMMENT,
    AcceptCommand,
    AwaitCommand,
    CannotRunFork,
    Ignore,
    LabelCommand,
    PullRequest,
    RunCheck,
    RunCommand,
    RunDispatch,
    UsageCommand,
    decide,
    e2e_allowed,
    load_event,
    may_command,
)
from flipgate.github.history import ensure_commits, ensure_pull
from flipgate.github.inputs import Settings, export_model_keys
from flipgate.github.outcome import Outcome
from flipgate.github.ownership import hand_back
from flipgate.github.pinning import Unpinned, github_runs_head_code, head_code_refusal
from flipgate.github.relink import pull_number, relink
from flipgate.github.sticky import CommentMode, Published, body_limit, find_comment, publish
from flipgate.github.workflow import Workflow
from flipgate.github.workspace_guard import refuse_unsafe_places
from flipgate.model import Conclusion, Report, Row
from flipgate.output import comment as render
from flipgate.output.html import HTML_FILE
from flipgate.output.links import NO_LINKS, Links
from flipgate.output.page import Labels
from flipgate.output.progress import LOG_EVERY, PeriodicLines
from flipgate.run.pipeline import case_ids, merged_check, run_check
from flipgate.run.refs import Ref, Repo, read_config
from flipgate.run.shards import Shard
from flipgate.settings import Settings as RunSettings
from flipgate.text.escaping import short, shorten
from flipgate.verdict import gate

# Both inside the workspace: later steps can upload the outputs, actions/cache can keep the cache.
OUT_DIR = DEFAULT_OUT_DIR
CACHE_DIR = DEFAULT_CACHE_DIR


class CheckResult(Protocol):
    report: Report
    markdown: str        # comment.md as written, within the body limit it was given
    exit_code: int


CheckRunner = Callable[..., CheckResult]


def connect_api(settings: Settings) -> RepoAPI:
    # PyGithub's pauses between calls spare GitHub's rate limits; a loopback API has none.
    loopback = urlsplit(settings.api_url).hostname in ("127.0.0.1", "localhost", "::1")
    client = connect(settings.api_url, settings.token, pause_between_calls=not loopback)
    return RepoAPI(client, settings.repository)


@dataclass(frozen=True)
class CheckOptions:
    """What `flipgate action`'s own options change about the check."""

    progress_every: float = LOG_EVERY   # seconds between two progress lines in the log
    cache: Path | None = Path(CACHE_DIR)  # relative to the workspace; None: no cache
    concurrency: int | None = None      # None: the configuration's

    def cache_dir(self, workspace: Path) -> Path | None:
        return None if self.cache is None else workspace / self.cache


# -- what a finished run amounts to ------------------------------------------------

def outcome_of_report(report: Report, *, comment: str, exit_code: int, report_path: str,
                      summary_room: int, message: str | None = None,
                      page_path: str = "", links: Links = NO_LINKS) -> Outcome:
    """The status, comment and summary of a finished check (`comment`: the comment.md the
    check wrote; `message`: why it stopped early; `page_path`: the report.html it wrote,
    which the summary names; `links`: where it links the run and report.html)."""
    note = messages.page_note(page_path) if page_path else ""
    try:  # the summary gets the most detail that fits what is left of its 1 MiB
        summary = render.render_summary(report, max_chars=summary_room - len(note.encode()),
                                        links=links)
    except ValueError:
        summary = comment
    summary += note if len(summary.encode()) + len(note.encode()) <= summary_room else ""
    fingerprint = messages.verdicts_fingerprint(report, message=message)
    if report.conclusion is Conclusion.SKIPPED:
        return Outcome(state=gate.commit_state(report.conclusion), description=messages.NO_CHANGE,
                       conclusion="skipped",
                       exit_code=exit_code, comment=comment, create_comment=False,
                       summary=summary, fingerprint=fingerprint, report_path=report_path,
                       report=report, suite_statuses=suite_statuses(report))
    headline = f"could not finish: {message}" if message else messages.status_description(report)
    return Outcome(state=gate.commit_state(report.conclusion),
                   description=shorten(headline, messages.STATUS_LIMIT), headline=headline,
                   conclusion=report.conclusion.value, exit_code=exit_code, comment=comment,
                   create_comment=True, summary=summary, fingerprint=fingerprint, report=report,
                   regressions=gate.regressions(report.counts),
                   held_back=report.counts[gate.HELD_BACK], report_path=report_path,
                   suite_statuses=suite_statuses(report))


def suite_statuses(report: Report) -> tuple[tuple[str, str, str], ...]:
    """One commit status per suite when the configuration asks for them (`status: per-suite`)."""
    if not report.per_suite_status:
        return ()
    return tuple((part.name, gate.commit_state(part.report.conclusion),
                  messages.status_description(part.report) if part.evaluated
                  else messages.NO_CHANGE) for part in report.suites)


def outcome_of_failure(exc: BaseException, *, head_sha: str, about: str = "") -> Outcome:
    """`about`: what the run was doing, a line before the failure's own words."""
    if isinstance(exc, InputError):
        kind, exit_code = "bad input or configuration", exc.exit_code
        detail = "\n".join(str(problem) for problem in exc.problems)
    elif isinstance(exc, FlipgateError):
        kind, exit_code, detail = "it could not finish", exc.exit_code, str(exc)
    elif isinstance(exc, GitHubError):
        kind, exit_code, detail = "GitHub API", EXIT_INCOMPLETE, str(exc)
    else:
        kind, exit_code = "internal error", EXIT_INCOMPLETE
        detail = f"{type(exc).__name__}: {exc}"
    detail = f"{about}\n{detail}" if about else detail
    text = messages.could_not_run_comment(head_sha=head_sha, kind=kind, detail=detail)
    # The `conclusion` output is `error` exactly when the step exits 3; bad input
    # (exit 2) reached no conclusion, so it leaves the output unset.
    return Outcome(state="error", description=messages.failure_description(kind),
                   headline=f"could not run: {kind}: {detail}",
                   conclusion="error" if exit_code == EXIT_INCOMPLETE else "",
                   exit_code=exit_code, comment=text, create_comment=True, summary=text,
                   fingerprint=messages.fingerprint_of_text(text))


# -- steps ----------------------------------------------------------------------

def main(environ: MutableMapping[str, str], *, check: CheckRunner | None = None,
         api_factory: Callable[[Settings], RepoAPI] = connect_api,
         stream: TextIO | None = None, options: CheckOptions | None = None) -> int:
    """The action, start to end: `environ` is the process's environment, handed in by the
    edge (`commands/action.py`); the model keys' inputs are exported into it."""
    options = options or CheckOptions()
    workflow = Workflow.from_env(environ, stream=stream or sys.stdout)
    try:
        settings = Settings.from_env(environ)
        activity = decide(settings.event_name, load_event(settings.event_path),
                          fork_policy=settings.fork_policy, pr_number=settings.pr_number)
    except InputError as exc:
        for problem in exc.problems:
            workflow.error(str(problem))
        return EXIT_BAD_INPUT
    if settings.relink is not None:  # a later step: only relink this run's comment to the page
        return _relink(settings, activity, workflow, api_factory=api_factory)
    export_model_keys(settings, environ, mask=workflow.mask)
    # What the check takes from the environment, read once, with the model keys in it.
    run_settings = RunSettings.from_environ(environ)

    if isinstance(activity, Ignore):
        workflow.info(f"flipgate: nothing to do: {activity.reason}")
        return EXIT_PASS
    if isinstance(activity, CannotRunFork):
        workflow.warning(messages.fork_cannot_run(activity.pull))
        workflow.append_summary(messages.fork_cannot_run(activity.pull))
        return EXIT_PASS

    cancellation = Cancellation()
    with handled(cancellation):
        return _act(settings, run_settings, activity, workflow, api_factory=api_factory,
                    check=check, options=options, cancellation=cancellation)


def _relink(settings: Settings, activity: object, workflow: Workflow, *,
            api_factory: Callable[[Settings], RepoAPI]) -> int:
    workflow.mask(settings.token)
    try:
        relink(settings, api_factory(settings), workflow, number=pull_number(activity))
    except GitHubError as exc:
        workflow.error(f"GitHub API: {exc}")
        return EXIT_INCOMPLETE
    return EXIT_PASS


def _act(settings: Settings, run_settings: RunSettings, activity: object, workflow: Workflow, *,
         api_factory: Callable[[Settings], RepoAPI], check: CheckRunner | None,
         options: CheckOptions, cancellation: Cancellation) -> int:
    api = api_factory(settings)

    def fresh_api() -> RepoAPI:
        return api_factory(settings)
    try:
        if isinstance(activity, AwaitCommand):
            return await_command(settings, api, workflow, activity.pull)
        if isinstance(activity, UsageCommand):
            api.create_comment(activity.number, messages.usage_reply(activity.unknown))
            workflow.info(f"flipgate: answered {activity.author} with usage")
            return EXIT_PASS
        if isinstance(activity, LabelCommand):
            return record_label(settings, run_settings, api, workflow, activity)
        if isinstance(activity, AcceptCommand):
            return accept(settings, api, workflow, activity)
        if isinstance(activity, RunCommand):
            pull = obey(settings, api, workflow, activity)
            if pull is None:
                return EXIT_PASS
            exit_code = evaluate(settings, run_settings, api, workflow, pull, check=check,
                                 options=options, cancellation=cancellation, fresh_api=fresh_api,
                                 e2e=_e2e_request(settings, run_settings, pull, approved=True),
                                 pinned=pull.head_sha)
            react(api, workflow, activity, "rocket" if exit_code in (0, 1) else "confused")
            return exit_code
        if isinstance(activity, RunDispatch):
            pull = api.pull(activity.number)
            workflow.info(f"flipgate: workflow_dispatch by {activity.actor}: pull request "
                          f"#{pull.number}, head pinned at {pull.head_sha}")
            # Only someone with write access can dispatch a workflow: approved like a command.
            return evaluate(settings, run_settings, api, workflow, pull, check=check,
                            options=options, cancellation=cancellation, fresh_api=fresh_api,
                            e2e=_e2e_request(settings, run_settings, pull, approved=True),
                            pinned=pull.head_sha)
        assert isinstance(activity, RunCheck)
        return evaluate(settings, run_settings, api, workflow, activity.pull, check=check,
                        options=options, cancellation=cancellation, fresh_api=fresh_api,
                        records_head=is_head_now(api, activity.pull),
                        e2e=_e2e_request(settings, run_settings, activity.pull, approved=False))
    except GitHubError as exc:
        workflow.error(f"GitHub API: {exc}")
        workflow.set_output("conclusion", "error")  # exit 3: could not finish
        return EXIT_INCOMPLETE


def _e2e_request(settings: Settings, run_settings: RunSettings, pull: PullRequest, *,
                 approved: bool) -> E2ERequest | None:
    """The end-to-end run, asked for only when this pull request may have it; the pipeline
    then runs it only if the base's configuration enables it."""
    if not e2e_allowed(pull, approved=approved, fork_policy=settings.fork_policy):
        return None
    return E2ERequest(environ=run_settings.environ, date=datetime.now(UTC).date().isoformat(),
                      required=False)


def await_command(settings: Settings, api: RepoAPI, workflow: Workflow,
                  pull: PullRequest) -> int:
    """A fork's PR under require-command: pending, so a required check cannot pass unseen."""
    context = context_of(settings, pull)
    api.set_status(pull.head_sha, StatusUpdate(state="pending",
                                               description=messages.waiting_description(
                                                   pull, records_head=is_head_now(api, pull)),
                                               context=context, target_url=settings.run_url))
    workflow.notice(messages.await_command(pull, context))
    workflow.append_summary(messages.await_command(pull, context))
    return EXIT_PASS


def is_head_now(api: RepoAPI, pull: PullRequest) -> bool:
    """Whether a delivery's head is still the PR's head: a re-run of an old delivery's job
    must not record its head again (pinning.py trusts each record's time)."""
    try:
        return api.pull(pull.number).head_sha == pull.head_sha
    except GitHubError:
        return False  # unknown: no record, a later command needs another proof


def obey(settings: Settings, api: RepoAPI, workflow: Workflow,
         command: RunCommand) -> PullRequest | None:
    """Check who asked; if they may, pin the commit they approved (see pinning.py): the
    head now, when the PR's history proves it was the head when the comment was written
    (or the commit they named is the head now). Anything else is refused with a reply."""
    permission = api.permission(command.author)
    if not may_command(permission):
        api.create_comment(command.number, messages.refusal_reply(author=command.author,
                                                                  permission=permission))
        react(api, workflow, command, "-1")
        workflow.notice(f"/flipgate run from {command.author} ({permission} access) refused")
        return None
    react(api, workflow, command, "eyes")
    pull = api.pull(command.number)
    pin = pin_command(settings, api, pull, command=command, named=command.sha)
    if isinstance(pin, Unpinned):
        api.create_comment(command.number, messages.unpinned_reply(pin.why))
        react(api, workflow, command, "confused")
        workflow.notice(f"/flipgate run from {command.author}: nothing run: {pin.why}")
        return None
    workflow.info(f"flipgate: /flipgate run from {command.author} ({permission}); "
                  f"head pinned at {pin.sha} ({pin.by.value})")
    if pin.sha != pull.head_sha:
        api.create_comment(command.number, messages.pinned_reply(
            evaluated=pin.sha, by=pin.by.value, current_head=pull.head_sha))
        workflow.notice(f"evaluating {pin.sha}, not the newer head {pull.head_sha}")
    return replace(pull, head_sha=pin.sha)


def record_label(settings: Settings, run_settings: RunSettings, api: RepoAPI, workflow: Workflow,
                 command: LabelCommand) -> int:
    """A comment of `/flipgate label ID [SIDE] LABEL` lines: from someone who may command,
    each label on an answer of the run's cases is kept in the hidden block of the gate's own
    comment, listed there and written to labels.jsonl. One reply answers the comment: none
    when its one label was recorded (the 👍 says so), else what was recorded, what was
    refused and why."""
    permission = api.permission(command.author)
    if not may_command(permission) or not human.valid_login(command.author):
        api.create_comment(command.number, messages.refusal_reply(
            author=command.author, permission=permission, command="label"))
        react(api, workflow, command, "-1")
        workflow.notice(f"/flipgate label from {command.author} ({permission} access) refused")
        return EXIT_PASS

    def refuse(why: str) -> int:
        api.create_comment(command.number, messages.label_mistake_reply(why))
        react(api, workflow, command, "confused")
        workflow.notice(f"/flipgate label from {command.author}: nothing recorded: {why}")
        return EXIT_PASS

    batch = command.labels or (command.arguments,)
    if len(batch) == 1 and not command.set_aside:
        request = human.parse_label(batch[0])
        if isinstance(request, human.LabelMistake):
            return refuse(request.why)
    pull = api.pull(command.number)
    try:
        ensure_pull(settings.workspace, pull.base_sha, pull.head_sha,
                    git=Git(run_settings.git_environment()))
        cases = case_ids(repo=settings.workspace, base=pull.base_sha, head=pull.head_sha,
                         settings=run_settings, config_path=settings.config)
    except InputError as exc:
        return refuse(f"the run's cases could not be read ({shorten(str(exc), 300)})")
    recorded, refused = human.resolve_all(batch, cases, by=command.author)
    single = len(batch) == 1 and not command.set_aside and not command.unread
    if single and refused:
        return refuse(refused[0].why)
    comment, _ = find_comment(api, number=command.number, login=api.own_login(),
                              context=settings.status_context)
    if comment is None:
        api.create_comment(command.number, messages.label_no_comment_reply())
        react(api, workflow, command, "confused")
        return EXIT_PASS
    stored = human.read_block(comment.body)
    if stored.problem:
        workflow.warning(f"flipgate: the comment's labels were ignored: {stored.problem}")
    kept = human.latest([*stored.labels, *recorded])
    if recorded and not human.fits(kept):
        api.create_comment(command.number, messages.label_full_reply())
        react(api, workflow, command, "confused")
        return EXIT_PASS
    if recorded:
        label_decisions(settings, api, workflow, command, pull=pull, comment_id=comment.id,
                        body=human.with_labels(human.on_rows(comment.body, kept), kept), labels=recorded)
        write_labels(settings.workspace, kept, head_sha=pull.head_sha,
                     git=Git(run_settings.git_environment()), workflow=workflow,
                     readings=human.read_readings(comment.body))
        workflow.append_summary(messages.labels_summary(
            recorded=len(recorded), kept=len(kept), repository=settings.repository,
            run_id=settings.run_id))
    if not single:
        api.create_comment(command.number, messages.label_batch_reply(
            recorded=[human.listed(one) for one in recorded],
            refused=[(one.line, one.why) for one in refused], unread=command.unread,
            set_aside=[human.shown(line) for line in command.set_aside],
            limit=LABELS_PER_COMMENT))
    react(api, workflow, command, "+1" if recorded else "confused")
    for one in recorded:
        workflow.info(f"flipgate: {human.shown(one.id)} ({one.side}) {one.shown()}")
    if refused or command.unread:
        workflow.notice(f"/flipgate label from {command.author}: {len(recorded)} recorded, "
                        f"{len(refused) + command.unread} not")
    return EXIT_PASS


def stored_labels(api: RepoAPI, workflow: Workflow, *, number: int, login: str,
                  context: str, quiet: bool = False) -> tuple[human.HumanLabel, ...]:
    """The labels the gate's comment keeps (none when it has none, or keeps them badly,
    which is reported unless `quiet`)."""
    comment, _ = find_comment(api, number=number, login=login, context=context)
    if comment is None:
        return ()
    stored = human.read_block(comment.body)
    if stored.problem and not quiet:
        workflow.warning(f"flipgate: the comment's labels were ignored: {stored.problem}")
    return stored.labels


def of_the_run(labels: Sequence[human.HumanLabel],
               report: Report | None) -> Sequence[human.HumanLabel]:
    """The labels of answers this run has (so calibrate reads labels.jsonl beside its
    report.json as it is); all of them when the run has no rows to hold them to."""
    if report is None or not report.rows:
        return labels
    parts: list[tuple[str | None, list[Row]]] = (
        [(part.name, part.report.rows) for part in report.suites] or [(None, report.rows)])
    known = {(suite, row.id) for suite, rows in parts for row in rows}
    return [one for one in labels if (one.suite, one.id) in known]


def write_labels(workspace: Path, labels: Sequence[human.HumanLabel], *, head_sha: str,
                 git: Git, workflow: Workflow,
                 readings: Mapping[human.Key, human.Reading] | None = None) -> None:
    """flipgate-out/labels.jsonl: the labels format `flipgate calibrate --labels` reads,
    each with the judge's bucket and the row's category where `readings` has them.
    Never into an output place the pull request made a link or tracks."""
    try:
        refuse_unsafe_places(workspace, {"output": Path(OUT_DIR)}, head_sha=head_sha, git=git)
    except InputError as exc:
        workflow.warning(f"flipgate: {human.LABELS_FILE} not written: {exc}")
        return
    target = workspace / OUT_DIR / human.LABELS_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(human.jsonl(labels, readings), encoding="utf-8")


def evaluate(settings: Settings, run_settings: RunSettings, api: RepoAPI, workflow: Workflow,
             pull: PullRequest, *, check: CheckRunner | None,
             options: CheckOptions | None = None, e2e: E2ERequest | None = None,
             cancellation: Cancellation | None = None,
             fresh_api: Callable[[], RepoAPI] | None = None, records_head: bool = True,
             pinned: str | None = None) -> int:
    """`records_head`: the pending status records `pull.head_sha` as the PR's head (it is
    the head now; a re-run of an old delivery's job is not). `pinned`: the head a
    maintainer approved (`/flipgate run`, a dispatch), which a head's own code needs."""
    options = options or CheckOptions()
    refused = (untrusted_base(settings, run_settings, api, pull)
               or untrusted_head_code(settings, run_settings, api, pull, pinned=pinned))
    if settings.shard is not None:
        if refused is not None:
            workflow.error(f"flipgate: shard: {refused.headline}")
            return refused.exit_code
        return evaluate_shard(settings, run_settings, workflow, pull, check=check, options=options,
                              e2e=e2e)
    if settings.merge is not None:
        check = merged_check(settings.workspace / settings.merge)
        e2e = None  # the merge adds no end-to-end run: the shards' travel in their partials
    status = status_setter(settings, api, pull)
    try:
        # `comment: never` reads and writes no comment, so it needs no login either.
        login = api.own_login() if settings.comment_mode is not CommentMode.NEVER else ""
        kept = (stored_labels(api, workflow, number=pull.number, login=login,
                              context=settings.status_context) if login else ())
        status("pending", messages.pending_description(pull, records_head=records_head))
    except GitHubError as exc:
        return stopped_by_github(workflow, status, exc)
    if cancellation is not None:  # from now on a cancelled run must not stay pending
        cancellation.report = functools.partial(
            report_cancelled, settings=settings, fresh_api=fresh_api or (lambda: api),
            workflow=workflow, pull=pull, options=options)

    outcome = refused or run_check_safely(settings, run_settings, workflow, pull, check=check,
                                          options=options, e2e=e2e, labels=human.by_row(kept))
    if login:
        # Read again: a label given while the check ran must not be lost by this edit.
        try:
            kept = stored_labels(api, workflow, number=pull.number, login=login,
                                 context=settings.status_context, quiet=True)
            outcome = decided(api, outcome, settings=settings, pull=pull, login=login)
        except GitHubError as exc:
            give_workspace_back(settings.workspace, workflow, options)
            return stopped_by_github(workflow, status, exc)
    readings = human.readings_of(outcome.report)  # for labels.jsonl and the comment's block
    if kept:
        write_labels(settings.workspace, of_the_run(kept, outcome.report), head_sha=pull.head_sha,
                     git=Git(run_settings.git_environment()), workflow=workflow,
                     readings=readings)
    give_workspace_back(settings.workspace, workflow, options)
    if outcome.state in ("success", "failure", "pending"):  # a verdict, or one awaiting review
        try:
            outcome = still_the_base(api, pull, outcome)
        except GitHubError as exc:
            return stopped_by_github(workflow, status, exc)

    exit_code = outcome.exit_code
    try:
        published = publish(api, number=pull.number, login=login, head_sha=pull.head_sha,
                            body=human.with_readings(
                                human.with_labels(human.on_rows(outcome.comment, kept), kept)
                                if kept else outcome.comment, readings),
                            create=outcome.create_comment,
                            context=settings.status_context, fingerprint=outcome.fingerprint,
                            mode=settings.comment_mode)
        workflow.info(f"flipgate: comment {published.value}"
                      + messages.PUBLISHED_NOTES.get(published.value, ""))
        if published is Published.KEPT_NEWER:
            workflow.notice("the PR's comment describes a newer head; left it as it is")
    except GitHubError as exc:
        workflow.error(f"could not post the comment: {exc}")
        exit_code = EXIT_INCOMPLETE
    try:
        for suite, state, description in outcome.suite_statuses:
            status(state, description, suite=suite)
        status(outcome.state, outcome.description)
    except GitHubError as exc:
        workflow.error(f"could not set the commit status: {exc}")
        exit_code = EXIT_INCOMPLETE
    if cancellation is not None:
        cancellation.report = None  # the final status stands

    if outcome.report is not None:
        write_verdicts(workflow, outcome.report)
    workflow.append_summary(outcome.summary)
    if outcome.report is not None:
        workflow.append_summary(messages.download_note(
            repository=settings.repository, run_id=settings.run_id, labels=bool(kept)))
    # A comment or status GitHub refused makes the step exit 3, and so `error`.
    conclusion = "error" if exit_code == EXIT_INCOMPLETE else outcome.conclusion
    if conclusion:
        workflow.set_output("conclusion", conclusion)
    workflow.set_output("regressions", str(outcome.regressions))
    workflow.set_output("held-back", str(outcome.held_back))
    workflow.set_output("report", outcome.report_path)
    if outcome.state not in ("success", "pending"):
        workflow.error(f"flipgate: {outcome.headline or outcome.description}")
    elif outcome.held_back:  # held flips back (passed, or awaiting review): the last line says so
        workflow.warning(f"flipgate: {outcome.headline or outcome.description}")
    return exit_code


def stopped_by_github(workflow: Workflow, status: Callable[..., None], exc: GitHubError) -> int:
    """A GitHub call failed (a rate limit that does not lift within the bounded wait, an
    outage): `error` on the head naming it, if GitHub still takes a status, so no pending
    status is left behind; exit 3."""
    workflow.error(f"GitHub API: {exc}")
    try:
        status("error", messages.github_failure_description(str(exc)))
    except GitHubError as again:
        workflow.error(f"could not set the error status either: {again}")
    workflow.set_output("conclusion", "error")
    return EXIT_INCOMPLETE


def still_the_base(api: RepoAPI, pull: PullRequest, outcome: Outcome) -> Outcome:
    """The verdict, if the PR still targets the base it was judged against; else an
    `error` that leaves the decision to the run for the new base (a command's job runs
    beside the pull request's, so a retarget can land while it judges)."""
    now = api.pull(pull.number).base_ref
    if now == pull.base_ref:
        return outcome
    text = messages.base_moved_comment(head_sha=pull.head_sha, judged=pull.base_ref, now=now)
    return Outcome(state="error", description=messages.base_moved_description(pull.base_ref, now),
                   headline=f"no verdict: the base changed from {pull.base_ref} to {now} during "
                            "the run", conclusion="error", exit_code=EXIT_INCOMPLETE, comment=text,
                   create_comment=True, summary=text, fingerprint=messages.fingerprint_of_text(text))


def untrusted_base(settings: Settings, run_settings: RunSettings, api: RepoAPI,
                   pull: PullRequest) -> Outcome | None:
    """None when the PR's base is one the repository trusts (github/bases.py); else the
    outcome of a run that judged nothing: `error`, and no model call. The trusted list is
    read from the default branch's tip, as GitHub names it, never from the PR's base."""
    if pull.base_ref == pull.default_branch:
        return None
    try:
        git = Git(run_settings.git_environment())
        ensure_commits(settings.workspace, [pull.base_sha], git=git)
        repo = Repo(settings.workspace, git)
        base_has_config = repo.read(Ref(pull.base_ref, pull.base_sha), settings.config) is not None
        try:
            default = Ref(pull.default_branch, api.branch_sha(pull.default_branch))
        except GitHubError as exc:
            if not base_has_config:  # refused whatever the default branch says (bases.py)
                return outcome_of_refusal(unconfigured(pull.base_ref, settings.config),
                                          head_sha=pull.head_sha)
            return outcome_of_failure(exc, head_sha=pull.head_sha, about=(
                f"whether the base {pull.base_ref} is trusted is read from "
                f"{pull.default_branch}'s configuration, and GitHub did not name its commit"))
        ensure_commits(settings.workspace, [default.sha], git=git)
        trusted = read_config(repo, default, settings.config)
        refused = refuse_base(pull.base_ref, default_branch=pull.default_branch,
                              named=trusted.base_branches if trusted else None,
                              default_has_config=trusted is not None,
                              base_has_config=base_has_config, config_path=settings.config)
    except (FlipgateError, GitHubError) as exc:
        return outcome_of_failure(exc, head_sha=pull.head_sha)
    return None if refused is None else outcome_of_refusal(refused, head_sha=pull.head_sha)


def untrusted_head_code(settings: Settings, run_settings: RunSettings, api: RepoAPI,
                        pull: PullRequest, *, pinned: str | None) -> Outcome | None:
    """None unless the base's configuration runs the head's own code (`generator.command`)
    where GitHub would not (pinning.head_code_refusal); then `error`, and nothing starts."""
    if github_runs_head_code(event_name=settings.event_name, fork=pull.fork):
        return None   # GitHub runs this head's code here anyway: nothing to read
    try:
        git = Git(run_settings.git_environment())
        ensure_commits(settings.workspace, [pull.base_sha], git=git)
        config = read_config(Repo(settings.workspace, git), Ref(pull.base_ref, pull.base_sha),
                             settings.config)
        if config is None or not any(one.generator_options.command is not None
                                     for one in config.suite_configs()):
            return None
        head_now = api.pull(pull.number).head_sha if pinned is not None else None
        why = head_code_refusal(event_name=settings.event_name, fork=pull.fork, pinned=pinned,
                                head_sha=pull.head_sha, head_now=head_now)
    except (FlipgateError, GitHubError) as exc:
        return outcome_of_failure(exc, head_sha=pull.head_sha)
    if why is None:
        return None
    text = messages.head_code_refused_comment(head_sha=pull.head_sha, why=why)
    return Outcome(state="error", description=messages.head_code_refused_description(),
                   headline=f"no verdict: the head's code was not run: {why}", conclusion="error",
                   exit_code=EXIT_INCOMPLETE, comment=text, create_comment=True, summary=text,
                   fingerprint=messages.fingerprint_of_text(text))


def outcome_of_refusal(refused: Refused, *, head_sha: str) -> Outcome:
    """A base the repository does not trust: no verdict, `error`, exit 2 (the PR's input)."""
    text = messages.refused_base_comment(head_sha=head_sha, refused=refused)
    return Outcome(state="error", description=messages.refused_base_description(refused),
                   headline=f"no verdict: {refused.why}", conclusion="", exit_code=EXIT_BAD_INPUT,
                   comment=text, create_comment=True, summary=text,
                   fingerprint=messages.fingerprint_of_text(text))


def report_cancelled(signal_name: str, *, settings: Settings, fresh_api: Callable[[], RepoAPI],
                     workflow: Workflow, pull: PullRequest, options: CheckOptions) -> None:
    """The run was cancelled: `error` on the head (within cancel.STATUS_BUDGET), the summary,
    the outputs and the log say so, the workspace goes back to its owner."""
    description = messages.cancelled_description(signal_name)
    update = StatusUpdate(state="error", description=description,
                          context=context_of(settings, pull), target_url=settings.run_url)
    status_set = within(STATUS_BUDGET, lambda: fresh_api().set_status(pull.head_sha, update))
    steps: list[Callable[[], None]] = [
        lambda: workflow.set_output("conclusion", "error"),
        lambda: workflow.append_summary(messages.cancelled_summary(pull, signal_name)),
        lambda: workflow.error(f"flipgate: {description}" + (
            "" if status_set else "; GitHub did not take the error status in time")),
        lambda: give_workspace_back(settings.workspace, workflow, options)]
    for step in steps:
        try:
            step()
        except Exception:  # noqa: BLE001 - each is best effort; the exit comes regardless
            continue


def write_verdicts(workflow: Workflow, report: Report) -> None:
    """The verdict table in a collapsed group, then a line (or annotation) per row to read."""
    with workflow.group("flipgate: verdict table"):
        workflow.info(joblog.verdict_table(report))
    for entry in joblog.row_entries(report):
        {joblog.Level.INFO: workflow.info, joblog.Level.WARNING: workflow.warning,
         joblog.Level.ERROR: workflow.error}[entry.level](entry.text)


def give_workspace_back(workspace: Path, workflow: Workflow,
                        options: CheckOptions | None = None) -> None:
    """As root, hand the report, the cache (wherever `--cache` put it) and what git fetched
    to the workspace's owner."""
    cache = (options or CheckOptions()).cache_dir(workspace)
    # Only what lies inside the workspace changes hands.
    inside = [cache] if cache is not None and cache.resolve().is_relative_to(workspace.resolve()) else []
    try:
        hand_back(workspace, [workspace / OUT_DIR, *inside, workspace / ".git"],
                  euid=os.geteuid())
    except OSError as exc:  # the run's result stands; the runner may have to clean up
        workflow.warning(f"could not give the workspace's files back to its owner: {exc}")


def evaluate_shard(settings: Settings, run_settings: RunSettings, workflow: Workflow,
                   pull: PullRequest, *, check: CheckRunner | None,
                   options: CheckOptions | None = None, e2e: E2ERequest | None = None) -> int:
    """One part of a sharded run: write its partial for the merge job; no comment, no status.
    `e2e`: the end-to-end run of the shard's own cases, which the merge puts together."""
    from functools import partial

    shard = Shard.parse(settings.shard or "")
    if check is None:
        check = run_check
    outcome = run_check_safely(settings, run_settings, workflow, pull,
                               check=partial(check, shard=shard), options=options, e2e=e2e)
    give_workspace_back(settings.workspace, workflow, options)
    partial_file = settings.workspace / OUT_DIR / "partial.json"
    workflow.set_output("partial", f"{OUT_DIR}/partial.json" if partial_file.exists() else "")
    if outcome.exit_code != EXIT_PASS:
        workflow.error(f"flipgate: shard {shard}: {outcome.description}")
    else:
        workflow.info(f"flipgate: shard {shard} written to {OUT_DIR}/partial.json; the merge job "
                      "posts the comment and the status")
    return outcome.exit_code


def run_check_safely(settings: Settings, run_settings: RunSettings, workflow: Workflow,
                     pull: PullRequest, *, check: CheckRunner | None,
                     options: CheckOptions | None = None, e2e: E2ERequest | None = None,
                     labels: Labels | None = None) -> Outcome:
    """Fetch what is missing and run the check; any failure becomes an `error` outcome.

    The check prints a progress line every `options.progress_every` seconds,
    outside any group so the running job shows it.
    """
    options = options or CheckOptions()
    workspace = settings.workspace
    workflow.info(f"flipgate: evaluating #{pull.number} "
                  f"{short(pull.base_sha)}..{short(pull.head_sha)} ({context_of(settings, pull)})")
    progress = PeriodicLines(stream=workflow.stream, every=options.progress_every)
    try:
        git = Git(run_settings.git_environment())
        ensure_pull(workspace, pull.base_sha, pull.head_sha, git=git)
        refuse_unsafe_places(workspace, {"output": Path(OUT_DIR),
                                         **({"cache": options.cache} if options.cache else {})},
                             head_sha=pull.head_sha, git=git)
        if check is None:
            check = run_check
        # The check's log may echo text from the PR or the model: commands off meanwhile.
        with workflow.commands_off():
            try:
                result = check(repo=workspace, base=pull.base_sha, head=pull.head_sha,
                               settings=run_settings, config_path=settings.config,
                               out_dir=workspace / OUT_DIR, cache_dir=options.cache_dir(workspace),
                               comment_limit=body_limit(settings.status_context),
                               progress=progress, concurrency=options.concurrency, e2e=e2e,
                               labels=labels, links=settings.links)
            finally:
                progress.close()
    except Exception as exc:  # noqa: BLE001 - every failure must end in an error status
        if not isinstance(exc, FlipgateError):
            with workflow.group("flipgate: internal error (traceback)"):
                workflow.info(traceback.format_exc())
        return outcome_of_failure(exc, head_sha=pull.head_sha)
    config_from = getattr(result, "config_from", "")
    if config_from:  # where the gate's own settings came from: the base, never the head
        workflow.info(f"flipgate: configuration: {config_from}")
    if merge_base := getattr(result, "merge_base", ""):  # what was compared: the PR's own change
        workflow.info(f"flipgate: {merge_base}")
    report_file = workspace / OUT_DIR / "report.json"
    page_file = workspace / OUT_DIR / HTML_FILE
    return outcome_of_report(result.report, comment=result.markdown, exit_code=result.exit_code,
                             report_path=f"{OUT_DIR}/report.json" if report_file.exists() else "",
                             summary_room=workflow.summary_room(),
                             message=getattr(result, "message", None),
                             page_path=f"{OUT_DIR}/{HTML_FILE}" if page_file.exists() else "",
                             links=settings.links)
