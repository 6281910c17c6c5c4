"""A judge's score is read exactly, never through a binary float: a fraction however close
to a whole level (`2.99999999999999999`, `3.0000000000000001`), in JSON, in `<S2>` tags or
bare, is a judge error, so a regression cannot be rounded into a pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.judges.replies import JudgeReplyError, read_score

FACT = "Refunds are issued within 30 days of the request."
WRONG = "Refunds are issued within 90 days, and a $25 fee applies."
THOUGHTS = "<S0>Let's think step by step: the fee is not in the context.</S0><S1>Adds a fee.</S1>"
NEAR = ["2.99999999999999999", "3.0000000000000001", "2.9999999999999999999999999999999999999",
        "4.99999999999999999999", "1.00000000000000000001", "3.000000000000000000000000000000000001",
        "29999999999999999999e-19"]


@pytest.mark.parametrize("literal", NEAR)
@pytest.mark.parametrize("shape", ['{{"reason": "r", "score": {0}, "status": "completed"}}',
                                   "```json\n{{\"score\": {0}}}\n```",
                                   THOUGHTS + "<S2>{0}</S2>", "{0}"])
def test_a_fraction_next_to_a_level_is_a_judge_error(shape: str, literal: str) -> None:
    with pytest.raises(JudgeReplyError, match="must be a whole number 1-5, got "):
        read_score(shape.format(literal))


@pytest.mark.parametrize("prose", ["Score: 2.99999999999999999", "I'd rate it 2.99999999999999999/5"])
def test_prose_naming_a_near_level_beside_the_object_is_two_scores(prose: str) -> None:
    with pytest.raises(JudgeReplyError, match="two scores"):
        read_score(prose + '\n{"score": 3}')


@pytest.mark.parametrize(("literal", "level"), [("3", 3), ("3.0", 3), ("3e0", 3), ("3.000", 3),
                                                ("30e-1", 3), ("0.5e1", 5)])
def test_control_a_literal_that_is_exactly_a_level_is_read(literal: str, level: int) -> None:
    for shape in ('{{"score": {0}}}', THOUGHTS + "<S2>{0}</S2>", "{0}"):
        assert read_score(shape.format(literal)).value == level


def _gate(tmp_path: Path, openai_server, candidate_reply: str):
    openai_server.on_groundedness(
        lambda query, context, response, call_index: 5 if response == FACT else candidate_reply)
    (tmp_path / "cases.jsonl").write_text(json.dumps(
        {"id": "refund-1", "query": "How long do refunds take?", "context": FACT,
         "category": "pricing"}) + "\n")
    (tmp_path / "base.jsonl").write_text(json.dumps({"id": "refund-1", "response": FACT}) + "\n")
    (tmp_path / "cand.jsonl").write_text(json.dumps({"id": "refund-1", "response": WRONG}) + "\n")
    (tmp_path / "flipgate.yml").write_text(
        "version: 1\ncases: cases.jsonl\njudge:\n  provider: openai\n  model: judge-pinned\n"
        "  max_retries: 0\ngate:\n  blocking_categories: [pricing]\n  strict: true\n")
    result = CliRunner().invoke(cli, [
        "gate", "--cases", str(tmp_path / "cases.jsonl"), "--baseline", str(tmp_path / "base.jsonl"),
        "--candidate", str(tmp_path / "cand.jsonl"), "--config", str(tmp_path / "flipgate.yml"),
        "--out", str(tmp_path / "out"), "--no-cache"])
    return result, json.loads((tmp_path / "out" / "report.json").read_text())


def test_a_regression_scored_2_99999999999999999_does_not_pass(tmp_path: Path, openai_server) -> None:
    result, report = _gate(tmp_path, openai_server,
                           '{"reason": "adds a fee", "score": 2.99999999999999999, "status": "completed"}')
    [row] = report["rows"]
    assert row["candidate"]["groundedness"] is None and row["verdict"] == "error"
    [error] = row["errors"]
    assert "must be a whole number 1-5, got 2.99999999999999999" in error
    assert result.exit_code != 0 and report["conclusion"] != "success", result.output


def test_control_the_same_regression_scored_2_blocks(tmp_path: Path, openai_server) -> None:
    result, report = _gate(tmp_path, openai_server,
                           '{"reason": "adds a fee", "score": 2, "status": "completed"}')
    [row] = report["rows"]
    assert row["candidate"]["groundedness"] == 2 and row["blocking"] is True
    assert result.exit_code == 1 and report["conclusion"] == "failure", result.output
