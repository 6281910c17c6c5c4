"""Where the comment's links go: the workflow run, and report.html's rows. Pure.

Both URLs come from the edge (the runner's variables, an input or a flag), never from
the pull request; a run without them (the CLI on a laptop) writes no link. The comment
is posted before the workflow uploads the artifact, so its URL is not known yet: the
page is linked at `report` when it is served somewhere (`report-url`), else the run's
artifacts, where the `flipgate-report` artifact appears once uploaded.
"""

from __future__ import annotations

from dataclasses import dataclass

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
        """A row's own place in report.html, when the page has a URL."""
        if not self.report or not safe_url(self.report):
            return None
        return f"{self.report.split('#', 1)[0]}#{row_anchor(suite, case_id)}"


NO_LINKS = Links()


def run_url(server_url: str | None, repository: str | None, run_id: str | None) -> str | None:
    """The workflow run's page (GITHUB_SERVER_URL/GITHUB_REPOSITORY/actions/runs/GITHUB_RUN_ID),
    or None when a part is missing or the result is not an http(s) URL."""
    if not (server_url and repository and run_id):
        return None
    url = f"{server_url.rstrip('/')}/{repository}/actions/runs/{run_id}"
    return url if safe_url(url) else None
