"""An answer the offline judge cannot weigh, gated through the real CLI: its row is "not judged
offline" in report.json, the comment, report.html and the terminal, counted in the summary, and
neither a flip nor a pass. The sentences are written for this test."""

from __future__ import annotations

import json
from pathlib import Path

from support.runs import gate_offline

CONTEXT = ("The river festival in Calder draws 40,000 visitors each summer. Mayor Ines Varga said "
           "the town campaigned for the listing for nine years. Boat builders from the valley open "
           "their workshops to visitors during the festival.")
FAITHFUL = ("The river festival in Calder draws 40,000 visitors each summer. Mayor Ines Varga said "
            "the town campaigned for the listing for nine years. Boat builders from the valley "
            "open their workshops to visitors during the festival.")
IN_OTHER_WORDS = ("A beloved summer gathering has earned worldwide acclaim. Craftspeople welcome "
                  "curious guests into their sheds. Local leaders lobbied patiently for recognition.")


def test_a_set_aside_answer_is_shown_as_not_judged_offline_everywhere(tmp_path: Path) -> None:
    result, out = gate_offline(
        tmp_path, {"festival": ("news", "Summarize the news:", CONTEXT, FAITHFUL, IN_OTHER_WORDS)},
        "version: 1\ncases: cases.jsonl\njudge:\n  provider: offline\n"
        "gate:\n  blocking_categories: [news]\n  strict: true\n")
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    [row] = report["rows"]
    assert row["verdict"] == "not_judged" and row["blocking"] is False and "errors" not in row
    assert row["candidate"]["not_judged"] is True and row["candidate"]["groundedness"] is None
    assert row["candidate"]["reason"].startswith("not judged offline: too little overlap")
    assert "not_judged" not in row["baseline"]
    assert report["counts"]["not_judged"] == 1 and report["counts"]["errors"] == 0
    comment = (out / "comment.md").read_text()
    assert "not judged offline" in comment and "no score" not in comment
    assert "not judged offline" in (out / "report.html").read_text()
    assert "1 not judged offline" in result.output
    # A pass that judged nothing is no green tick: the headline, terminal and page say what
    # was set aside, after a warning mark.
    assert "## ⚠️ flipgate passed, but 1 answer not judged offline" in comment
    assert "✅" not in comment.split("\n", 2)[1]
    assert "⚠️  passed, but 1 answer not judged offline" in result.output
    assert "passed, but 1 answer not judged offline" in (out / "report.html").read_text()
