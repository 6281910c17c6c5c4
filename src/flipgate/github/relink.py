"""The relink hand-back: a later step of the same job gives `flipgate action` the URL of
report.html uploaded on its own (`actions/upload-artifact` v7, `archive: false`, its
`artifact-url`), and the comment this run posted is edited to link it.

It only edits: it never runs the gate, never sets a status, never posts a comment. The URL
was checked in github/inputs.py (`output.links.artifact_page`: this server, repository and
run). The comment edited is this gate's own (its marker, the token's login) and only while
it links into this run, so a comment a later run or a person wrote is left alone.
"""

from __future__ import annotations

from flipgate.config.schema import GITHUB_COMMENT_LIMIT
from flipgate.github.api import RepoAPI
from flipgate.github.event import LabelCommand, RunCheck, RunCommand, RunDispatch
from flipgate.github.inputs import Settings
from flipgate.github.sticky import find_comment
from flipgate.github.workflow import Workflow
from flipgate.output.links import links_run, relinked
from flipgate.text.escaping import link


def pull_number(activity: object) -> int | None:
    """The pull request the gate step of this job commented on, by the event."""
    if isinstance(activity, RunCheck):
        return activity.pull.number
    if isinstance(activity, RunCommand | LabelCommand | RunDispatch):
        return activity.number
    return None


def relink(settings: Settings, api: RepoAPI, workflow: Workflow, *, number: int | None) -> None:
    """Edit this run's comment on PR `number` so that it links `settings.relink`."""
    page, run = settings.relink, settings.run_url
    assert page is not None and run is not None  # inputs.py accepts relink only with both
    workflow.append_summary(f"📄 {link('report.html', page)}: every row of this run.\n")
    if number is None:
        workflow.info("flipgate relink: this event has no pull request comment to relink")
        return
    comment, _ = find_comment(api, number=number, login=api.own_login(),
                              context=settings.status_context)
    if comment is None or not links_run(comment.body, run):
        workflow.info(f"flipgate relink: the comment on #{number} is not this run's (none yet, "
                      "or a later run wrote it): left as it is")
        return
    body = relinked(comment.body, run=run, page=page)
    if len(body) > GITHUB_COMMENT_LIMIT:  # the page's URL is longer than the run's
        body = relinked(comment.body, run=run, page=page, rows=False)
    if body == comment.body or len(body) > GITHUB_COMMENT_LIMIT:
        workflow.info(f"flipgate relink: the comment on #{number} already links {page}"
                      if body == comment.body else
                      f"flipgate relink: #{number}'s comment would exceed GitHub's limit: left as it is")
        return
    api.edit_comment(number, comment.id, body)
    workflow.info(f"flipgate relink: the comment on #{number} now links report.html at {page}")
