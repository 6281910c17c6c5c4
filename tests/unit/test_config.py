"""`.flipgate.yml` validation: every message names the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from flipgate.config.schema import load_config, parse_config
from flipgate.errors import InputError

FULL = """\
version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
watch: [prompts/**]
judge:
  provider: openai
  model: gpt-4.1-mini
gate:
  blocking_categories: [policy, pricing, safety]
relevance:
  threshold: 0.7
  embedding_model: text-embedding-3-small
"""


def messages(text: str) -> list[str]:
    with pytest.raises(InputError) as caught:
        parse_config(text, source="cfg.yml")
    return [str(p) for p in caught.value.problems]


def test_the_contracts_example_parses() -> None:
    config = parse_config(FULL, directory="repo")
    assert config.cases == "eval/cases.jsonl"
    assert config.generator == "prompts/answer.prompty"
    assert config.watch == ("prompts/**",)
    assert (config.judge.provider, config.judge.model) == ("openai", "gpt-4.1-mini")
    assert config.gate.blocking_categories == ("policy", "pricing", "safety")
    assert config.relevance.threshold == 0.7
    assert config.path_of(config.cases) == "repo/eval/cases.jsonl"


@pytest.mark.parametrize(("text", "expected"), [
    ("cases: a\nfoo: 1\n", "cfg.yml:2: unknown key 'foo'"),
    ("cases: a\njudge:\n  provider: openai\n  model: m\n  temprature: 0\n",
     "cfg.yml:5: unknown key 'judge.temprature'"),
    ("cases: a\ngate:\n  blocking: [x]\n", "cfg.yml:3: unknown key 'gate.blocking'"),
    ("version: 2\ncases: a\n", "cfg.yml:1: 'version' must be 1"),
    ("judge:\n  provider: offline\n", "cfg.yml:1: missing required key 'cases'"),
    ("cases: a\njudge:\n  provider: gemini\n", "cfg.yml:3: 'judge.provider' must be one of"),
    ("cases: a\njudge:\n  provider: openai\n", "cfg.yml:2: 'judge.model' is required"),
    ("cases: a\nrelevance:\n  threshold: 1.5\n", "cfg.yml:3: 'relevance.threshold' must be a number from 0 to 1"),
    ("cases: a\nconcurrency: 0\n", "cfg.yml:2: 'concurrency' must be a whole number above 0"),
    ("cases: a\nwatch: prompts/**\n", "cfg.yml:2: 'watch' must be a list"),
    ("cases: a\njudge: openai\n", "cfg.yml:2: 'judge' must be a mapping"),
    ("cases: a\nbudget:\n  max_requests: -3\n", "cfg.yml:3: 'budget.max_requests' must be a whole number"),
    ("cases: [a\n", "cfg.yml:1: invalid YAML: the '[' opened on this line is never closed"),
    ("- a\n- b\n", "cfg.yml:1: must be a mapping"),
    ("cases: a\ngate:\n  review: always\n", "cfg.yml:3: 'gate.review' must be one of none, required"),
    ("cases: a\nsuites:\n  - {name: s, gate: {review: required}}\n", "cfg.yml:3: unknown key"),
])
def test_each_problem_names_file_and_line(text: str, expected: str) -> None:
    assert any(m.startswith(expected) for m in messages(text)), messages(text)


def test_all_problems_are_reported_at_once() -> None:
    found = messages("cases: a\nfoo: 1\nbar: 2\nconcurrency: -1\n")
    assert len(found) == 3


def test_yaml_tags_cannot_construct_python_objects() -> None:
    found = messages("cases: !!python/object/apply:os.system ['echo hi']\n")
    assert "invalid YAML" in found[0]


def test_load_config_reports_missing_and_bad_utf8(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="configuration file not found"):
        load_config(tmp_path / "nope.yml")
    bad = tmp_path / "bad.yml"
    bad.write_bytes(b"cases: a\njudge: \xff\n")
    with pytest.raises(InputError, match=r"bad.yml:2: not valid UTF-8"):
        load_config(bad)


def test_paths_are_relative_to_the_config_directory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    file = tmp_path / "sub" / ".flipgate.yml"
    file.write_text("cases: ../eval/cases.jsonl\n")
    config = load_config(file)
    assert Path(config.path_of(config.cases)) == (tmp_path / "eval" / "cases.jsonl")


def test_gate_review_is_none_unless_named_and_every_suite_has_the_runs() -> None:
    assert parse_config("cases: a\n").gate.review == "none"
    config = parse_config("cases: a\ngate:\n  review: required\n"
                          "suites:\n  - {name: s, cases: b}\n")
    assert config.gate.review == "required"
    assert [one.gate.review for one in config.suite_configs()] == ["required"]
