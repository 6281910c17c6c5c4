"""Real judge replies from public recordings (tests/fixtures/judge-replies/README.md):
each reads to the score a person reads in it, or is a judge error. None is misread."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from flipgate.judges.replies import JudgeReplyError, read_score

FIXTURES = Path(__file__).parent.parent / "fixtures" / "judge-replies"


def _lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines()
            if line.strip()]


REAL = _lines("replies.jsonl")
WRITTEN = _lines("written.jsonl")


def _reading(reply: str) -> int | str:
    try:
        return read_score(reply).value or "no value"
    except JudgeReplyError as exc:
        return f"judge error: {exc}"


def test_the_corpus_holds_at_least_50_real_replies_each_with_its_source() -> None:
    assert len(REAL) >= 50
    for row in REAL:
        assert isinstance(row["reply"], str) and row["reply"]
        assert row["source"]["repo"] and row["source"]["path"] and row["source"]["commit"]
        assert row["person_reads"] is None or row["person_reads"] in range(1, 6)
        assert row["shape"] in ("integer", "tags", "prose")


@pytest.mark.parametrize("row", REAL, ids=lambda row: f"{row['metric']}-{row['shape']}")
def test_a_real_reply_reads_to_the_persons_score_or_is_a_judge_error(row: dict[str, Any]) -> None:
    reading = _reading(row["reply"])
    if row["shape"] in ("integer", "tags"):
        # Shapes the rule reads: they must read, and to what the person reads.
        assert reading == row["person_reads"]
    else:
        assert isinstance(reading, str) and reading.startswith("judge error")


def test_the_tally_of_the_real_corpus() -> None:
    tally = Counter((row["shape"], "read" if isinstance(_reading(row["reply"]), int) else "error")
                    for row in REAL)
    assert tally == {("integer", "read"): 95, ("tags", "read"): 6, ("prose", "error"): 15}
    assert not [row for row in REAL if isinstance(_reading(row["reply"]), int)
                and _reading(row["reply"]) != row["person_reads"]]


@pytest.mark.parametrize("row", WRITTEN, ids=lambda row: row["why"][:40])
def test_written_hostile_and_ambiguous_replies_are_never_misread(row: dict[str, Any]) -> None:
    reading = _reading(row["reply"])
    if row["rule"] == "reads":
        assert row["person_reads"] is not None and reading == row["person_reads"], row["why"]
    else:
        assert isinstance(reading, str) and reading.startswith("judge error"), row["why"]
