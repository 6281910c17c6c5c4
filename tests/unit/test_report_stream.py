"""report.json is written a row at a time, and reads exactly as the one-shot dump would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flipgate.model import SuiteReport
from flipgate.output.report import to_dict, write_json

from support.factories import make_report, make_row, one_of_each


@pytest.mark.parametrize("rows", [[], [make_row()], one_of_each()], ids=["none", "one", "every-verdict"])
def test_the_streamed_report_is_byte_for_byte_the_plain_dump(tmp_path: Path, rows) -> None:
    report = make_report(rows)
    report.usage = {"judge": {"requests": 3}}
    report.budget = {"spent_tokens": 10, "refused_requests": 0}
    report.notes = ["a note with \u00e9 and \"quotes\"\nand a newline"]
    write_json(report, tmp_path / "report.json")
    text = (tmp_path / "report.json").read_text(encoding="utf-8")
    assert text == json.dumps(to_dict(report), indent=2, ensure_ascii=False) + "\n"


def test_a_report_of_suites_streams_each_suites_rows_and_reads_as_the_plain_dump(tmp_path: Path) -> None:
    first, second = make_report(one_of_each()), make_report(one_of_each(id_prefix="b-"))
    empty = make_report([])
    report = make_report(first.rows + second.rows)
    report.suites = [SuiteReport("support", first), SuiteReport("sales", second),
                     SuiteReport("none", empty)]
    write_json(report, tmp_path / "report.json")
    text = (tmp_path / "report.json").read_text(encoding="utf-8")
    assert text == json.dumps(to_dict(report), indent=2, ensure_ascii=False) + "\n"
    assert len(json.loads(text)["suites"]["sales"]["rows"]) == 9
