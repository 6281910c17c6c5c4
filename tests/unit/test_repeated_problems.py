"""A cause repeated on many lines is one line with a count and the first line numbers."""

from __future__ import annotations

import json

import pytest

from flipgate.config.cases import parse_responses
from flipgate.errors import InputError, Problem


def test_a_responses_file_that_says_answer_is_one_line_naming_the_fix() -> None:
    data = "".join(json.dumps({"id": f"case-{i}", "answer": "Take 2 tablets."}) + "\n"
                   for i in range(23)).encode()
    with pytest.raises(InputError) as raised:
        parse_responses(data, source="candidate.jsonl")
    assert [str(problem) for problem in raised.value.problems] == [
        "candidate.jsonl:1: missing required field 'response' (the line has 'answer'; rename it "
        "to 'response') (on 23 lines: 1, 2, 3, 4, 5, …)"]


def test_different_causes_stay_apart_and_two_repeats_stay_as_they_are() -> None:
    problems = [Problem("a.jsonl", 1, "bad"), Problem("a.jsonl", 2, "bad"),
                Problem("a.jsonl", 3, "other"), Problem("b.jsonl", 4, "bad"),
                Problem("a.jsonl", 5, "bad"), Problem("a.jsonl", 6, "other")]
    assert [str(problem) for problem in InputError(problems).problems] == [
        "a.jsonl:1: bad (on 3 lines: 1, 2, 5)", "a.jsonl:3: other", "b.jsonl:4: bad",
        "a.jsonl:6: other"]
