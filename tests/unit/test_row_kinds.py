"""gate.KINDS is the one table of row kinds: a kind added there alone shows up in the
comment, the terminal summary, the commit status and report.json."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from flipgate.github.texts import status_description
from flipgate.model import Verdict
from flipgate.output.comment import render_comment
from flipgate.output.report import to_dict
from flipgate.output.terminal import print_summary
from flipgate.verdict import gate

from support.factories import make_report, make_row
from support.gfm import read

CUT_OFF = gate.Kind(
    name="cut_off", holds=lambda row: row.candidate.finish_reason == "length",
    count_field="cut_off_answers", status=gate.Phrase("cut-off answer"),
    label="CUT OFF", style="", title="✂️ Cut-off answers",
    about="The generator stopped these answers at its token limit.", layout="brief",
    nouns="cut-off answers", one_row="cut-off answer", tier=gate.Tier.WORTH_READING)


@pytest.fixture
def with_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gate, "KINDS", (*gate.KINDS, CUT_OFF))


def terminal(report) -> str:
    out = io.StringIO()
    print_summary(report, Console(file=out, width=200, color_system=None))
    return out.getvalue()


def test_a_kind_added_to_the_table_shows_everywhere(with_cut_off: None) -> None:
    row = make_row("long-answer", before=5, after=5, finish_reason="length")
    assert row.verdict is Verdict.UNCHANGED  # nothing else would list this row
    report = make_report([row])

    assert report.counts.cut_off_answers == 1
    page = read(render_comment(report))
    assert ("h3", "✂️ Cut-off answers (1)") in page.headings
    assert "The generator stopped these answers at its token limit." in page.text
    assert page.table_after("Cut-off answers")[1][0] == "long-answer"
    assert "1 case: 1 cut-off answer." in page.text  # the counts sentence

    printed = terminal(report)
    assert any(line.startswith("│ CUT OFF") and "long-answer" in line for line in printed.splitlines())
    assert "1 cut-off answer" in printed

    assert status_description(report) == "passed: 1 case; 1 cut-off answer"
    assert to_dict(report)["counts"]["cut_off_answers"] == 1


def test_without_it_the_row_is_not_listed() -> None:
    report = make_report([make_row("long-answer", before=5, after=5, finish_reason="length")])
    assert "Cut-off" not in render_comment(report) and "CUT OFF" not in terminal(report)
    assert status_description(report) == "passed: 1 case; no regressions"


def test_every_kind_has_its_own_count_field_and_section() -> None:
    for attribute in ("name", "count_field", "label", "title"):
        values = [getattr(kind, attribute) for kind in gate.KINDS]
        assert len(set(values)) == len(values), attribute


@pytest.mark.parametrize(("row", "kinds"), [
    (make_row(category="policy", before=5, after=2, rescore=1), ["blocking"]),
    (make_row(category="chat", before=5, after=2, rescore=1), ["review"]),
    (make_row(before=5, after=None), ["errors"]),
    (make_row(before=5, after=3), ["non_answers"]),
    (make_row(before=5, after=2, rescore=5), ["unstable"]),
    (make_row(before=4, after=5, relevance=(0.9, 0.2)), ["relevance", "moved"]),
    (make_row(before=1, after=2), ["still_ungrounded"]),
    (make_row(before=5, after=5), []),
])
def test_the_kinds_a_row_belongs_to(row, kinds) -> None:
    assert [kind.name for kind in gate.kinds_of(row)] == kinds
