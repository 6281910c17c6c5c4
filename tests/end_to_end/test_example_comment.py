"""The bundled example's comment, as a reviewer reads it (cmark-gfm's HTML, tags removed).

For each blocking row: the query, the claim the context does not support
(marked), the context sentence closest to it and the baseline answer, each
said once; the counts are one sentence, not a table wider than the page.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.verdict.evidence import split_statements

from support.gfm import details_text, read, to_html

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cards"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict, dict]:
    out = tmp_path_factory.mktemp("example")
    result = CliRunner().invoke(cli, [
        "gate", "--cases", str(EXAMPLE / "cases.jsonl"),
        "--baseline", str(EXAMPLE / "baseline.jsonl"),
        "--candidate", str(EXAMPLE / "candidate.jsonl"),
        "--config", str(EXAMPLE / ".flipgate.yml"), "--judge", "offline",
        "--out", str(out), "--no-cache"])
    assert result.exit_code == 1, result.output
    report = json.loads((out / "report.json").read_text())
    cases = {case["id"]: case for case in map(json.loads, (EXAMPLE / "cases.jsonl")
                                              .read_text().splitlines()) if case}
    baseline = {line["id"]: line["response"] for line in map(json.loads, (
        EXAMPLE / "baseline.jsonl").read_text().splitlines()) if line}
    return (out / "comment.md").read_text(), report, {"cases": cases, "baseline": baseline}


def raw_block(comment: str, row_id: str) -> str:
    """The HTML of the row's evidence block."""
    for block in to_html(comment).split("<details>")[1:]:
        if block.startswith(f"<summary>{row_id}:"):
            return block.split("</details>", 1)[0]
    raise AssertionError(f"no evidence block for {row_id}")


def words(text: str) -> list[str]:
    return html.unescape(re.sub(r"<[^>]+>", " ", text)).split()


def blocking_ids(report: dict) -> list[str]:
    return [row["id"] for row in report["rows"] if row["verdict"] == "regression"
            and row["blocking"]]


def test_each_blocking_row_shows_query_marked_claim_closest_sentence_and_baseline(
        example) -> None:
    comment, report, inputs = example
    assert blocking_ids(report) == ["replacement-card-fee", "overdraft-protection"]
    for row_id in blocking_ids(report):
        case, baseline = inputs["cases"][row_id], inputs["baseline"][row_id]
        block, raw = details_text(comment, f"{row_id}:"), raw_block(comment, row_id)
        assert f"Query ({row_id}): {case['query']}" in block
        evidence = next(row["evidence"] for row in report["rows"] if row["id"] == row_id)
        claims = [html.unescape(claim) for claim in re.findall(r"<code>(.*?)</code>", raw)
                  if claim != "marked"]  # the legend shows the mark too
        assert claims == evidence["unsupported_statements"]  # each marked, in the answer's order
        closest = re.search(r"Closest in the context: 🟡“(.*?)”", block)
        assert closest and closest.group(1) in split_statements(case["context"])
        if "Baseline answer:" in block:
            assert f"Baseline answer: {baseline}" in block
        else:  # the word diff: without what the candidate added, it reads as the baseline
            # (the example's claims are added words: a claim is one mark, its code span)
            without_insertions = re.sub(r"<em>.*?</em>|<code>.*?</code>", " ", raw, flags=re.S)
            shown = words(without_insertions.split("Answer, baseline → candidate:", 1)[1]
                          .split("<sub>", 1)[0])
            assert shown == baseline.split()


def test_no_sentence_is_said_twice_in_a_rows_visible_text(example) -> None:
    comment, report, _ = example
    flipped = [row["id"] for row in report["rows"]
               if row["verdict"] in ("regression", "unstable", "new_non_answer")]
    assert len(flipped) == 4
    for row_id in flipped:
        block = details_text(comment, f"{row_id}:")
        sentences = [s for line in block.splitlines() for s in split_statements(
            line.split(": ", 1)[-1]) if len(s.split()) > 3]
        assert len(sentences) == len(set(sentences)), (row_id, sentences)


def test_the_counts_are_one_sentence_and_no_table_is_wider_than_five_columns(example) -> None:
    comment, _, _ = example
    page = read(comment)
    assert "15 cases: 2 blocking regressions, 1 to review, 1 new non-answer, " \
           "2 relevance drops, 4 moved, 1 still ungrounded." in page.text
    assert max(len(table[0]) for table in page.tables) <= 5
