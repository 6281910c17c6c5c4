"""What the action's runs and commands share: the status context of a pull request's
verdict, setting a status on its head, a reaction to a command, and the head a command
approved (pinning.py's rules, with the pull request's history read from GitHub)."""

from __future__ import annotations

from collections.abc import Callable

from flipgate.github.api import GitHubError, RepoAPI, StatusUpdate
from flipgate.github.bases import status_context
from flipgate.github.event import AcceptCommand, LabelCommand, PullRequest, RunCommand
from flipgate.github.inputs import Settings
from flipgate.github.pinning import Pinned, Unpinned, pin_head
from flipgate.github.workflow import Workflow


def context_of(settings: Settings, pull: PullRequest, suite: str | None = None) -> str:
    """The status context of this pull request's verdict: its base's own (github/bases.py),
    so one head proposed to two bases never has one base's verdict read as the other's."""
    return status_context(settings.status_context, base=pull.base_ref,
                          default_branch=pull.default_branch, suite=suite)


def status_setter(settings: Settings, api: RepoAPI, pull: PullRequest) -> Callable[..., None]:
    def set_status(state: str, description: str, *, suite: str | None = None) -> None:
        api.set_status(pull.head_sha, StatusUpdate(state=state, description=description,
                                                   context=context_of(settings, pull, suite),
                                                   target_url=settings.run_url))
    return set_status


def react(api: RepoAPI, workflow: Workflow, command: RunCommand | LabelCommand | AcceptCommand,
          content: str) -> None:
    try:
        api.react(command.number, command.comment_id, content)
    except GitHubError as exc:  # a missing reaction is cosmetic: say so, carry on
        workflow.warning(f"could not add the {content} reaction: {exc}")


def pin_command(settings: Settings, api: RepoAPI, pull: PullRequest, *,
                command: RunCommand | LabelCommand | AcceptCommand,
                named: str | None = None) -> Pinned | Unpinned:
    """The commit a command approved (pinning.py): the head now, when the PR's history
    proves it was the head when the comment was written, or the commit it names."""
    if command.created_at is None:
        return Unpinned("GitHub did not say when the command was written")
    # What the PR's history proves about its head: the rewrites on its timeline, and the
    # pending statuses flipgate set on the current head for this PR.
    records = [*api.head_rewrites(pull.number),
               *api.head_statuses(pull.head_sha, context=context_of(settings, pull),
                                  number=pull.number, login=api.own_login())]
    return pin_head(commits=[c.sha for c in api.pull_commits(pull.number)],
                    current_head=pull.head_sha, comment_at=command.created_at, named=named,
                    records=records)
