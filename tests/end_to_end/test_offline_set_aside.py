"""An answer the offline judge cannot weigh, gated through the real CLI: its row is "not judged
offline" in report.json, the comment, report.html and the terminal, counted in the summary, and
neither a flip nor a pass. The sentences are written for this test."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from flipgate.cli import cli

CONTEXT = ("The river festival in Calder draws 40,000 visitors each summer. Mayor Ines Varga said "
           "the town campaigned for the listing for nine years. Boat builders from the valley open "
           "their workshops to visitors during the festival.")
FAITHFUL = ("The river festival in Calder draws 40,000 visitors each summer. Mayor Ines Varga said "
            "the town campaigned for the listing for nine years. Boat builders from the valley "
            "open their workshops to visitors during the festival.")
IN_OTHER_WORDS = ("A beloved summer gathering has earned worldwide acclaim. Craftspeople welcome "
                  "curious guests into their sheds. Local leaders lobbied patiently for recognition.")


def test_a_set_aside_answer_is_shown_as_not_judged_offline_everywhere(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(json.dumps(
        {"id": "festival", "query": "Summarize the news:", "context": CONTEXT,
         "category": "news"}) + "\n")
    (tmp_path / "base.jsonl").write_text(json.dumps({"id": "festival", "response": FAITHFUL}) + "\n")
    (tmp_path / "cand.jsonl").write_text(
        json.dumps({"id": "festival", "response": IN_OTHER_WORDS}) + "\n")
    (tmp_path / "flipgate.yml").write_text(
        "version: 1\ncases: cases.jsonl\njudge:\n  provider: offline\n"
        "gate:\n  blocking_categories: [news]\n  strict: true\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, [
        "gate", "--cases", str(tmp_path / "cases.jsonl"), "--baseline", str(tmp_path / "base.jsonl"),
        "--candidate", str(tmp_path / "cand.jsonl"), "--config", str(tmp_path / "flipgate.yml"),
        "--out", str(out), "--no-cache"])
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
