"""What a finished run amounts to on GitHub: the commit status, the comment, the outputs."""

from __future__ import annotations

from dataclasses import dataclass

from flipgate.model import Report


@dataclass(frozen=True)
class Outcome:
    state: str               # the commit status: success | failure | error | pending (review)
    description: str
    conclusion: str          # the `conclusion` output
    exit_code: int
    comment: str             # the sticky comment's body
    create_comment: bool     # False: only update a comment that already exists
    summary: str             # the step summary's Markdown
    fingerprint: str         # what the verdicts are, for `comment: on-change`
    regressions: int = 0
    held_back: int = 0       # counts.held_back: regressions the sample-size rule kept from blocking
    report_path: str = ""
    report: Report | None = None   # None: the check failed before it had one
    headline: str = ""       # the log's last line when the state is not success
    # status: per-suite: (suite, state, description), each set as `<context>/<suite>`
    # besides the run's own status (the worst across suites).
    suite_statuses: tuple[tuple[str, str, str], ...] = ()
