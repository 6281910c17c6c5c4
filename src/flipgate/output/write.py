"""Writing a run's results: report.json, answers.jsonl, comment.md, report.html and the
terminal summary."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from flipgate.config.schema import GITHUB_COMMENT_LIMIT
from flipgate.model import Report
from flipgate.output.answers import ANSWERS_FILE, write_answers
from flipgate.output.comment import render_comment
from flipgate.output.html import HTML_FILE, write_html
from flipgate.output.links import NO_LINKS, Links
from flipgate.output.page import Labels
from flipgate.output.report import write_json

if TYPE_CHECKING:
    from rich.console import Console


def write_outputs(report: Report, out_dir: str | Path, *, console: Console | None = None,
                  comment_limit: int = GITHUB_COMMENT_LIMIT, labels: Labels | None = None,
                  links: Links = NO_LINKS) -> str:
    """Write report.json, answers.jsonl, comment.md and report.html (every row, `labels`
    beside them) into `out_dir`, print the summary table, return the comment Markdown
    (`links`: where it links the run and report.html).

    The comment is rendered once, within `comment_limit` (what its consumer takes:
    the action's sticky comment leaves room for its markers), so the comment
    posted is the comment.md written."""
    from flipgate.output.terminal import print_summary

    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    write_json(report, directory / "report.json")
    write_answers(report, directory / ANSWERS_FILE)
    markdown = render_comment(report, max_chars=comment_limit, labels=labels, links=links)
    (directory / "comment.md").write_text(markdown, encoding="utf-8")
    write_html(report, directory / HTML_FILE, labels=labels)
    if console is not None:
        print_summary(report, console)
    return markdown
