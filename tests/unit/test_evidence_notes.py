"""A row whose evidence was cut says so wherever the row is shown."""

from __future__ import annotations

import io
import json

from rich.console import Console

from flipgate.model import Evidence
from flipgate.output import comment as render
from flipgate.output.report import to_dict
from flipgate.output.terminal import print_summary

from support.factories import make_report, make_row

NOTE = "evidence cut at 20,000 characters"


def cut_row():
    row = make_row("long", category="policy", before=5, after=2, rescore=1)
    row.evidence = Evidence(unsupported_figures=("$12",), notes=(NOTE,))
    return row


def test_the_comment_the_terminal_and_the_report_carry_the_note() -> None:
    report = make_report([cut_row()])
    out = io.StringIO()
    print_summary(report, Console(file=out, width=240, color_system=None, force_terminal=False))

    assert NOTE in render.render_comment(report, max_chars=60_000)
    assert f"not in context: $12 ({NOTE})" in out.getvalue()
    [row] = json.loads(json.dumps(to_dict(report)))["rows"]
    assert row["candidate"]["notes"] == [NOTE] and "notes" not in row["baseline"]


def test_a_row_without_a_cut_has_no_note() -> None:
    report = make_report([make_row("short", category="policy", before=5, after=2, rescore=1)])
    assert "evidence cut" not in render.render_comment(report, max_chars=60_000)
    [row] = to_dict(report)["rows"]
    assert "notes" not in row["candidate"]
