"""Cases and responses: every problem, with file and line, all at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flipgate.config.cases import load_answer_sets, parse_cases, parse_responses, write_responses
from flipgate.errors import InputError
from flipgate.model import Answer


def line(**fields: object) -> str:
    return json.dumps(fields)


GOOD = "\n".join([
    line(id="a", query="q1", context="c1", category="pricing", ground_truth="gt", locale="en"),
    "",
    line(id="b", query="q2", context="c2"),
]).encode()


def problems_of(data: bytes) -> list[str]:
    with pytest.raises(InputError) as caught:
        parse_cases(data, source="cases.jsonl")
    return [str(p) for p in caught.value.problems]


def test_cases_parse_with_defaults_and_extra_fields() -> None:
    a, b = parse_cases(GOOD, source="cases.jsonl")
    assert (a.id, a.category, a.ground_truth, dict(a.extra), a.line) == ("a", "pricing", "gt", {"locale": "en"}, 1)
    assert (b.category, b.line) == ("uncategorized", 3)
    assert a.template_vars()["locale"] == "en" and a.template_vars()["query"] == "q1"


@pytest.mark.parametrize(("data", "expected"), [
    (b"", "cases.jsonl: is empty"),
    (b"\n  \n", "cases.jsonl: is empty"),
    (b'{"id": "a", "query": "q"\n', "cases.jsonl:1: invalid JSON"),
    (b'["a"]\n', "cases.jsonl:1: each line must be a JSON object"),
    (line(id="a", query="q").encode(), "cases.jsonl:1: missing required field 'context'"),
    (line(query="q", context="c").encode(), "cases.jsonl:1: missing required field 'id'"),
    (line(id=7, query="q", context="c").encode(), "cases.jsonl:1: field 'id' must be a string, not int"),
    (line(id=" ", query="q", context="c").encode(), "cases.jsonl:1: field 'id' must not be empty"),
    ((line(id="a", query="q", context="c") + "\n" + line(id="a", query="q", context="c")).encode(),
     "cases.jsonl:2: duplicate id 'a' (first on line 1)"),
    (b'{"id": "a", "query": "q", "context": "caf\xe9"}\n', "cases.jsonl:1: not valid UTF-8"),
])
def test_case_problems(data: bytes, expected: str) -> None:
    assert any(p.startswith(expected) for p in problems_of(data)), problems_of(data)


def test_every_case_problem_is_reported_at_once() -> None:
    data = b"not json\n" + line(id="a").encode() + b"\n[1]\n"
    assert len(problems_of(data)) == 4  # bad JSON, two missing fields, not an object


def test_responses_parse() -> None:
    answers = parse_responses((line(id="a", response="r", finish_reason="length") + "\n").encode(),
                              source="r.jsonl")
    assert answers == {"a": Answer(response="r", finish_reason="length")}


@pytest.mark.parametrize(("data", "expected"), [
    (line(id="a").encode(), "r.jsonl:1: missing required field 'response'"),
    (line(id="a", response=None).encode(), "r.jsonl:1: field 'response' must be a string"),
    ((line(id="a", response="x") + "\n" + line(id="a", response="y")).encode(),
     "r.jsonl:2: duplicate id 'a'"),
])
def test_response_problems(data: bytes, expected: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_responses(data, source="r.jsonl")
    assert any(str(p).startswith(expected) for p in caught.value.problems)


def test_pairing_names_both_sides_of_every_mismatch(tmp_path: Path) -> None:
    cases = parse_cases(GOOD, source="cases.jsonl")
    baseline = tmp_path / "b.jsonl"
    candidate = tmp_path / "c.jsonl"
    baseline.write_text(line(id="a", response="x") + "\n" + line(id="zz", response="y") + "\n")
    candidate.write_text(line(id="a", response="x") + "\n" + line(id="b", response="y") + "\n")
    with pytest.raises(InputError) as caught:
        load_answer_sets(cases, "cases.jsonl", [baseline, candidate])
    found = [str(p) for p in caught.value.problems]
    assert f"{baseline}:2: response 'zz' has no case in cases.jsonl" in found
    assert f"cases.jsonl:3: case 'b' has no response in {baseline}" in found
    assert len(found) == 2


def test_missing_response_file_is_an_input_error(tmp_path: Path) -> None:
    cases = parse_cases(GOOD, source="cases.jsonl")
    with pytest.raises(InputError, match="file not found"):
        load_answer_sets(cases, "cases.jsonl", [tmp_path / "none.jsonl"])


def test_write_responses_round_trips(tmp_path: Path) -> None:
    answers = {"b": Answer("two|\n"), "a": Answer("one", finish_reason="stop")}
    out = tmp_path / "out" / "r.jsonl"
    write_responses(out, answers, order=["a", "b"])
    assert parse_responses(out.read_bytes(), source="r") == answers
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["a", "b"]
