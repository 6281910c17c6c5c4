"""Writing a run's results: report.json, comment.md and the terminal summary."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from flipgate.model import Report
from flipgate.report import write_json

if TYPE_CHECKING:
    from rich.console import Console

DEFAULT_OUT_DIR = "flipgate-out"


def write_outputs(report: Report, out_dir: str | Path, *, console: Console | None = None) -> str:
    """Write both files into `out_dir`, print the summary table, return the comment Markdown."""
    from flipgate.render import render_comment
    from flipgate.terminal import print_summary

    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    write_json(report, directory / "report.json")
    markdown = render_comment(report)
    (directory / "comment.md").write_text(markdown, encoding="utf-8")
    if console is not None:
        print_summary(report, console)
    return markdown
