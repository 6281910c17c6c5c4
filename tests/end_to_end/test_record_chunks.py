"""`flipgate record --field context=retrieval.*.text`: a list of retrieved chunks is one context,
joined with a blank line; a record whose context comes out empty is a warning naming it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from flipgate.cli import cli

LOGS = [
    {"request": {"question": "How much ibuprofen can I take?"}, "topic": "dosage",
     "retrieval": [{"score": 0.91, "text": "Adults: 1 to 2 tablets every 4 to 6 hours."},
                   {"score": 0.84, "text": "Do not exceed 6 tablets in 24 hours."}]},
    {"request": {"question": "When do you open on Sunday?"}, "topic": "hours",
     "retrieval": [{"score": 0.88, "text": "Sunday: 10 am to 4 pm."}]},
    {"request": {"question": "Do you take my plan?"}, "topic": "insurance", "retrieval": []},
]
FIELDS = ["--field", "query=request.question", "--field", "context=retrieval.*.text",
          "--field", "category=topic"]


def test_chunks_are_joined_with_a_blank_line_and_an_empty_context_is_named(tmp_path: Path) -> None:
    logs = tmp_path / "logs.jsonl"
    logs.write_text("".join(json.dumps(record) + "\n" for record in LOGS))
    out = tmp_path / "cases.jsonl"

    result = CliRunner().invoke(cli, ["record", str(logs), "--out", str(out), *FIELDS])

    assert result.exit_code == 0, result.output
    cases = {case["category"]: case for case in map(json.loads, out.read_text().splitlines())}
    assert cases["dosage"]["context"] == ("Adults: 1 to 2 tablets every 4 to 6 hours.\n\n"
                                          "Do not exceed 6 tablets in 24 hours.")
    assert cases["hours"]["context"] == "Sunday: 10 am to 4 pm."
    assert cases["insurance"]["context"] == ""
    [warning] = [line for line in result.output.splitlines() if "empty context" in line]
    assert warning.startswith(f"flipgate: Warning: 1 case has an empty context ({cases['insurance']['id']})")


def test_a_chunk_that_is_not_text_is_bad_input_naming_the_line(tmp_path: Path) -> None:
    logs = tmp_path / "logs.jsonl"
    logs.write_text(json.dumps({**LOGS[0], "retrieval": [{"text": {"nested": 1}}]}) + "\n")
    result = CliRunner().invoke(cli, ["record", str(logs), "--out", str(tmp_path / "c.jsonl"), *FIELDS])
    assert result.exit_code == 2
    assert f"{logs}:1: field 'context' must be a string or a list of strings" in result.output
