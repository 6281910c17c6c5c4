"""`judge.mode` and `api_version` as users write them (a YAML date)."""

from __future__ import annotations

import pytest

from flipgate.config.cases import parse_cases, require_queries
from flipgate.config.schema import parse_config
from flipgate.errors import InputError


def test_the_mode_defaults_to_with_query_and_the_second_opinion_shares_it() -> None:
    assert parse_config("cases: c.jsonl\n").judge.mode == "with_query"
    config = parse_config("cases: c.jsonl\njudge:\n  provider: openai\n  model: m\n  mode: without_query\n"
                          "  second_opinion:\n    model: other\n")
    assert config.judge.mode == "without_query"
    from flipgate.config.schema import second_judge

    second = second_judge(config.judge)
    assert second is not None and second.mode == "without_query"


def test_an_unknown_mode_names_the_line() -> None:
    with pytest.raises(InputError) as caught:
        parse_config("cases: c.jsonl\njudge:\n  provider: openai\n  model: m\n  mode: both\n")
    assert str(caught.value) == ".flipgate.yml:5: 'judge.mode' must be one of with_query, without_query"


DATED = """cases: c.jsonl
judge:
  provider: azure
  model: judge-deployment
  api_version: 2024-10-21
  second_opinion:
    provider: azure
    model: other
    api_version: 2024-06-01
generator:
  path: a.prompty
  endpoint:
    provider: azure
    api_version: 2024-10-21
suites:
  docs:
    generator:
      path: b.prompty
      endpoint: {provider: azure, api_version: 2025-01-01}
"""


def test_a_yaml_date_api_version_is_read_as_its_iso_text_wherever_it_is_accepted() -> None:
    config = parse_config(DATED)
    assert config.judge.api_version == "2024-10-21"
    assert config.judge.second_opinion is not None and config.judge.second_opinion.api_version == "2024-06-01"
    assert config.generator_options.endpoint is not None
    assert config.generator_options.endpoint.api_version == "2024-10-21"
    (suite,) = config.suites
    assert suite.generator_options.endpoint is not None
    assert suite.generator_options.endpoint.api_version == "2025-01-01"


def test_a_quoted_or_preview_api_version_stays_as_written_and_a_number_is_still_refused() -> None:
    assert parse_config('cases: c\njudge:\n  provider: azure\n  model: m\n  api_version: "2024-10-21"\n'
                        ).judge.api_version == "2024-10-21"
    assert parse_config("cases: c\njudge:\n  provider: azure\n  model: m\n  api_version: 2024-10-01-preview\n"
                        ).judge.api_version == "2024-10-01-preview"
    with pytest.raises(InputError, match=r"\.flipgate\.yml:5: 'judge\.api_version' must be a non-empty string"):
        parse_config("cases: c\njudge:\n  provider: azure\n  model: m\n  api_version: 2024\n")


CASES = (b'{"id": "a", "query": "q?", "context": "c"}\n{"id": "b", "query": "", "context": "c"}\n'
         b'{"id": "c", "query": " \\n", "context": "c"}\n')


def test_with_query_every_case_needs_a_query_each_problem_on_its_line() -> None:
    cases = parse_cases(CASES, source="eval/cases.jsonl")
    with pytest.raises(InputError) as caught:
        require_queries(cases, source="eval/cases.jsonl", mode="with_query")
    assert str(caught.value).splitlines() == [
        "eval/cases.jsonl:2: case 'b' has an empty 'query', but judge.mode is with_query "
        "(give it a query, or set judge.mode: without_query)",
        "eval/cases.jsonl:3: case 'c' has an empty 'query', but judge.mode is with_query "
        "(give it a query, or set judge.mode: without_query)",
    ]
    require_queries(cases, source="eval/cases.jsonl", mode="without_query")  # no query needed
