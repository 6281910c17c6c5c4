"""`flipgate gate` with hostile answers beside a real regression: the regression still
blocks (exit 1), with the offline judge and with the LLM judge on the loopback server.

Hostile answers are what a PR's prompt and `max_tokens` can produce: a 10,000-digit
number, a megabyte of "e.g. ", a megabyte of nested parentheses. Their rows keep a
verdict and say where their evidence was cut; none of them ends the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.verdict.evidence import cut_text

CONTEXT = "Refunds are issued within 30 days of the request."
FAITHFUL = "Refunds are issued within 30 days of the request."
HOSTILE = {
    "digits": "9" * 10_000,
    "e-g": "e.g. " * 200_000,
    "parens": "(" * 500_000 + ")" * 500_000,
}
BLOCKING = "refund-fee"  # a blocking category's answer that invents a fee


def write_inputs(directory: Path, provider: str) -> list[str]:
    rows = {BLOCKING: ("pricing", FAITHFUL + " A $25 processing fee applies."),
            **{name: ("general", answer) for name, answer in HOSTILE.items()}}
    with (directory / "cases.jsonl").open("w") as cases, \
            (directory / "base.jsonl").open("w") as base, \
            (directory / "cand.jsonl").open("w") as cand:
        for case_id, (category, answer) in rows.items():
            cases.write(json.dumps({"id": case_id, "query": "How long do refunds take?",
                                    "context": CONTEXT, "category": category}) + "\n")
            base.write(json.dumps({"id": case_id, "response": FAITHFUL}) + "\n")
            cand.write(json.dumps({"id": case_id, "response": answer}) + "\n")
    (directory / "flipgate.yml").write_text(
        f"version: 1\ncases: cases.jsonl\njudge:\n  provider: {provider}\n  model: judge-pinned\n"
        "  max_retries: 0\n  timeout: 30\ngate:\n  blocking_categories: [pricing]\n"
        "  strict: true\n")  # a handful of cases: the same-judge re-score may block
    return ["gate", "--cases", str(directory / "cases.jsonl"),
            "--baseline", str(directory / "base.jsonl"),
            "--candidate", str(directory / "cand.jsonl"),
            "--config", str(directory / "flipgate.yml"), "--out", str(directory / "out")]


def run_gate(directory: Path, provider: str) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(cli, write_inputs(directory, provider))
    report = json.loads((directory / "out" / "report.json").read_text())
    return result.exit_code, report, (directory / "out" / "comment.md").read_text()


def assert_blocked_with_cut_notes(exit_code: int, report: dict[str, Any], comment: str) -> None:
    rows = {row["id"]: row for row in report["rows"]}
    assert exit_code == 1 and report["conclusion"] == "failure"
    assert (rows[BLOCKING]["verdict"], rows[BLOCKING]["blocking"]) == ("regression", True)
    assert report["counts"]["blocking_regressions"] == 1 and report["counts"]["errors"] == 0
    for name, answer in HOSTILE.items():
        row = rows[name]
        assert row["verdict"] != "error" and "errors" not in row, name
        at = cut_text(answer)[1]
        if at is None:  # 10,000 digits are read whole: the invented number is named
            assert row["evidence"]["unsupported_figures"] == [answer]
        else:
            assert row["candidate"]["notes"] == [f"evidence cut at {at:,} characters"]
    assert "evidence cut at 20,000 characters" in comment


def test_offline_judge_hostile_answers_keep_verdicts_and_the_block(tmp_path: Path) -> None:
    exit_code, report, comment = run_gate(tmp_path, "offline")

    assert_blocked_with_cut_notes(exit_code, report, comment)
    rows = {row["id"]: row for row in report["rows"]}
    assert rows["digits"]["verdict"] == "regression"  # an invented figure
    assert rows["e-g"]["verdict"] == rows["parens"]["verdict"] == "new_non_answer"


def test_llm_judge_hostile_answers_keep_verdicts_and_the_block(openai_server,
                                                               tmp_path: Path) -> None:
    # The judge calls every hostile answer ungrounded, so each row's evidence is built.
    openai_server.on_groundedness(lambda query, context, response, call_index:
                                  5 if response == FAITHFUL else 1)

    exit_code, report, comment = run_gate(tmp_path, "openai")

    assert_blocked_with_cut_notes(exit_code, report, comment)
    rows = {row["id"]: row for row in report["rows"]}
    assert {rows[name]["verdict"] for name in HOSTILE} == {"regression"}
    # The judge saw every answer whole; only flipgate's own evidence was cut.
    judged = {r.inputs.response for r in openai_server.chat_requests("groundedness") if r.inputs}
    assert set(HOSTILE.values()) <= judged
