"""From observations to cases: masking, categories, deduplication, ids, sampling."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from flipgate.errors import InputError
from flipgate.model import Case
from flipgate.recording.masking import Masking, luhn_ok
from flipgate.recording.select import hashed_id, parse_category_rules, select
from flipgate.recording.sources import (
    Observation,
    lookup,
    parse_field_options,
    parse_timestamp,
    read_jsonl,
    read_report,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def obs(query: str, context: str = "ctx", *, category: str | None = "policy", at: int | None = 0,
        id: str | None = None) -> Observation:
    return Observation(query=query, context=context, source="logs:1", category=category, id=id,
                       timestamp=None if at is None else T0 + timedelta(days=at))


@pytest.mark.parametrize("text, expected", [
    ("mail me at a.b+c@mail.example.co.uk now", "mail me at [email] now"),
    ("card 4111 1111 1111 1111 please", "card [card] please"),
    ("card 4111-1111-1111-1111", "card [card]"),
    ("order 4111 1111 1111 1112 is not a card", "order 4111 1111 1111 1112 is not a card"),  # Luhn fails
    ("call 555-0100", "call 555-0100"),
    ("trace ab4111111111111111cd", "trace ab4111111111111111cd"),  # inside an id, not a card
])
def test_built_in_masks(text: str, expected: str) -> None:
    assert Masking().apply(text) == expected


def test_luhn() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")


def test_masks_apply_before_ids_and_deduplication_and_drop_leaves_records_out() -> None:
    masking = Masking.from_options(mask=[r"ACC-\d+"], drop=[r"(?i)password"])
    outcome = select([obs("Balance of ACC-1 for x@y.com?"), obs("Balance of ACC-2 for z@w.org?"),
                      obs("reset my password")], [], masking=masking)
    (case,) = outcome.added
    assert case["query"] == "Balance of [masked] for [email]?"
    assert case["id"] == hashed_id("policy", case["query"], "ctx")
    assert outcome.masked == 2
    assert outcome.passed_over == {"dropped by a --drop pattern": 1,
                                   "duplicates (same query and context)": 1}


def test_bad_patterns_are_input_errors() -> None:
    with pytest.raises(InputError) as exc:
        Masking.from_options(mask=["("], drop=["[a-"])
    assert [p.path for p in exc.value.problems] == ["--mask", "--drop"]


def test_duplicates_keep_the_most_recent_and_recorded_cases_are_never_touched() -> None:
    existing = [Case(id="policy-1", query="recorded", context="ctx", category="policy"),
                Case(id="given-9", query="other", context="c", category="policy")]
    outcome = select([obs("new", at=1), obs("new", at=5), obs("recorded"),
                      obs("fresh text", id="given-9")], existing, masking=Masking())
    assert [(c["query"], c["timestamp"]) for c in outcome.added] == [("new", "2026-01-06T00:00:00Z")]
    assert outcome.passed_over == {
        "duplicates (same query and context)": 1,
        "already in the cases file": 1,
        "id already in the cases file (kept the recorded case)": 1,
    }
    assert outcome.categories["policy"].existing == 2 and outcome.categories["policy"].added == 1


def test_category_from_field_then_rules_then_default() -> None:
    rules = parse_category_rules("pricing: ['\\bfees?\\b', 'cost']\npolicy: refund\n", source="rules.yml")
    outcome = select([obs("What FEE applies?", category=None), obs("refund or fee?", category=None),
                      obs("refund please", category=None), obs("hello", category=None),
                      obs("refund", category="safety")], [], masking=Masking(), rules=rules)
    assert {c["query"]: c["category"] for c in outcome.added} == {
        "What FEE applies?": "pricing", "refund or fee?": "pricing", "refund please": "policy",
        "hello": "uncategorized", "refund": "safety"}


@pytest.mark.parametrize("text, message", [
    ("- a\n- b\n", "rules.yml:1: must map each category"),
    ("pricing: fee\npolicy: '('\n", "rules.yml:2: '(' is not a regular expression"),
    ("pricing: [fee, 3]\n", "rules.yml:1: 'pricing' must map to a pattern"),
])
def test_rules_file_problems_name_the_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_category_rules(text, source="rules.yml")
    assert str(exc.value.problems[0]).startswith(message)


def many(category: str, n: int, *, days: int = 0, repeat_every: int = 0) -> list[Observation]:
    out = []
    for i in range(n):
        question = f"{category} question {i % repeat_every if repeat_every else i}"
        out.append(obs(question, f"context {i}", category=category, at=days + i))
    return out


def test_sampling_is_per_category_up_to_the_target_and_seeded() -> None:
    observations = many("policy", 80) + many("pricing", 30) + many("cards", 60)
    first = select(observations, [], masking=Masking(), per_category=50, seed=1)
    again = select(list(reversed(observations)), [], masking=Masking(), per_category=50, seed=1)
    other = select(observations, [], masking=Masking(), per_category=50, seed=2)
    assert Counter(c["category"] for c in first.added) == {"policy": 50, "pricing": 30, "cards": 50}
    assert first.added == again.added                       # input order does not matter
    assert {c["id"] for c in first.added} != {c["id"] for c in other.added}
    assert first.passed_over == {"not sampled (over --per-category 50)": 40}


def test_the_target_counts_the_cases_already_recorded() -> None:
    existing = [Case(id=f"p{i}", query=f"old {i}", context="c", category="policy") for i in range(45)]
    outcome = select(many("policy", 20), existing, masking=Masking(), per_category=50)
    assert outcome.categories["policy"].added == 5 and outcome.categories["policy"].total == 50


def test_sampling_prefers_distinct_queries() -> None:
    # 40 records but only 10 distinct questions (each asked with 4 contexts).
    outcome = select(many("policy", 40, repeat_every=10), [], masking=Masking(), per_category=10)
    assert len({c["query"] for c in outcome.added}) == 10


def test_sampling_prefers_distinct_from_what_is_recorded() -> None:
    existing = [Case(id=f"e{i}", query=f"policy question {i}", context="old", category="policy")
                for i in range(5)]
    outcome = select(many("policy", 10), existing, masking=Masking(), per_category=10)
    assert {c["query"] for c in outcome.added} == {f"policy question {i}" for i in range(5, 10)}


def test_sampling_prefers_recent_records() -> None:
    old = many("policy", 100, days=0)
    recent = [obs(f"recent {i}", f"c{i}", at=1000 + i) for i in range(100)]
    outcome = select(old + recent, [], masking=Masking(), per_category=40, seed=3)
    picked = Counter("recent" if c["query"].startswith("recent") else "old" for c in outcome.added)
    assert picked["recent"] > 2 * picked["old"], picked


# --- sources -------------------------------------------------------------------------

def test_field_mapping_reads_nested_paths_and_dotted_keys() -> None:
    mapping = parse_field_options(["query=input.question", "context=retrieval.0.text",
                                   "category=meta.app.category", "timestamp=ts"])
    line = ('{"input": {"question": "Q?"}, "retrieval": [{"text": "C."}], '
            '"meta": {"app.category": "policy"}, "ts": 1767225600000}\n')
    (o,) = read_jsonl(line.encode(), source="l.jsonl", fields=mapping).observations
    assert (o.query, o.context, o.category, o.timestamp) == ("Q?", "C.", "policy", T0)


@pytest.mark.parametrize("options, message", [
    (["query"], "must read NAME=PATH"),
    (["answer=x"], "'answer' is not a field"),
])
def test_bad_field_options(options, message) -> None:
    with pytest.raises(InputError, match=message):
        parse_field_options(options)


@pytest.mark.parametrize("line, message", [
    ('{"query": "q"}', "l.jsonl:1: missing field 'context' (path 'context')"),
    ('{"query": 3, "context": "c"}', "l.jsonl:1: field 'query' must be a string, not int (path 'query')"),
    ('{"query": "q", "context": "c", "timestamp": "yesterday"}', "l.jsonl:1: field 'timestamp' is not a time"),
])
def test_bad_jsonl_records(line: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        read_jsonl(line.encode(), source="l.jsonl")
    assert str(exc.value.problems[0]).startswith(message)


@pytest.mark.parametrize("raw", ["2026-01-01T00:00:00Z", "2026-01-01T01:00:00+01:00", 1767225600,
                                 "1767225600", 1767225600000, 1767225600 * 10**9])
def test_timestamps(raw) -> None:
    assert parse_timestamp(raw) == T0


def test_lookup_misses_are_not_errors() -> None:
    assert lookup({"a": [1]}, "a.0") == 1
    assert not isinstance(lookup({"a": [1]}, "a.3"), int)


def test_report_input_takes_the_live_contexts_of_its_end_to_end_run() -> None:
    report = {"version": 1, "conclusion": "success", "rows": [{"id": "r1", "category": "policy"}],
              "e2e": {"date": "2026-01-01", "rows": [
                  {"id": "r1", "query": "Q", "category": "policy", "live_context": "Live.",
                   "frozen_verdict": "unchanged", "e2e_verdict": "regression", "drift": True}]}}
    import json
    reading = read_report(json.dumps(report).encode(), source="report.json")
    (o,) = reading.observations
    assert (o.query, o.context, o.category, o.timestamp) == ("Q", "Live.", "policy", T0)
    assert reading.skipped == {"report rows without their query and context": 1}
    with pytest.raises(InputError, match="report.json:1: not a flipgate report"):
        read_report(b"[]", source="report.json")
