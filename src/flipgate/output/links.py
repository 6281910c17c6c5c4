"""Where the comment's links go: the workflow run, and report.html's rows. Pure.

Both URLs come from the edge (the runner's variables, an input or a flag), never from
the pull request; a run without them (the CLI on a laptop) writes no link. The comment
is posted before the workflow uploads the artifact, so its URL is not known yet: the
page is linked at `report` when it is served somewhere (`report-url`), else the run's
artifacts, where the `flipgate-report` artifact appears once uploaded, and each row id
at the run with the row's anchor. A later step that uploaded the page alone hands its
`artifact-url` back (`relink`): `artifact_page` accepts only this run's own artifact, and
`relinked` moves the comment's run links onto it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from flipgate.output.anchors import row_anchor
from flipgate.text.escaping import safe_url


@dataclass(frozen=True)
class Links:
    run: str | None = None      # the workflow run's page
    report: str | None = None   # report.html itself, where it is served (a Pages site)

    @property
    def page(self) -> str | None:
        """Where "report.html" in the comment points: the page, else the run's artifacts."""
        if self.report and safe_url(self.report):
            return self.report
        return f"{self.run}#artifacts" if self.run and safe_url(self.run) else None

    def row(self, suite: str | None, case_id: str) -> str | None:
        """A row's own place in report.html, when the page has a URL; else, in a workflow
        run, the run with the row's anchor (`relinked` turns it into the page's)."""
        if self.report and safe_url(self.report):
            return f"{self.report.split('#', 1)[0]}#{row_anchor(suite, case_id)}"
        return f"{self.run}#{row_anchor(suite, case_id)}" if self.run and safe_url(self.run) else None


NO_LINKS = Links()


def run_url(server_url: str | None, repository: str | None, run_id: str | None) -> str | None:
    """The workflow run's page (GITHUB_SERVER_URL/GITHUB_REPOSITORY/actions/runs/GITHUB_RUN_ID),
    or None when a part is missing or the result is not an http(s) URL."""
    if not (server_url and repository and run_id):
        return None
    url = f"{server_url.rstrip('/')}/{repository}/actions/runs/{run_id}"
    return url if safe_url(url) else None


_ARTIFACT_ID = re.compile(r"[1-9][0-9]{0,19}")


def artifact_page(url: str, *, run: str | None) -> str | None:
    """`url` when it is exactly an artifact of the run at `run` (`…/actions/runs/ID`):
    the same scheme, host and port, the path `…/actions/runs/ID/artifacts/N` with nothing
    around it (no credentials, query, fragment, dot segments or escapes); else None."""
    if not run or safe_url(url) != url or safe_url(run) != run:
        return None
    given, own = urlsplit(url), urlsplit(run)
    prefix = f"{own.path.rstrip('/')}/artifacts/"
    if (given.scheme, given.netloc, given.query, given.fragment) != (own.scheme, own.netloc, "", "") \
            or given.username is not None or not given.path.startswith(prefix):
        return None
    return url if _ARTIFACT_ID.fullmatch(given.path[len(prefix):]) else None


def relinked(body: str, *, run: str, page: str, rows: bool = True) -> str:
    """The comment with its links into the run's artifacts moved onto `page`: report.html
    (`run#artifacts`) to the page, each row (`run#case-…`) to its place on the page
    (`rows=False` leaves the rows). Only link destinations change, never other text."""
    body = body.replace(f"]({run}#artifacts)", f"]({page})")
    return body.replace(f"]({run}#case-", f"]({page}#case-") if rows else body


def links_run(body: str, run: str) -> bool:
    """Whether the comment links into the run at `run` (so that run wrote it)."""
    return f"]({run}#" in body
