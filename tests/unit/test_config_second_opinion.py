"""`judge.second_opinion`, `gate.min_cases_per_category` and `gate.strict` in `.flipgate.yml`."""

from __future__ import annotations

import pytest

from flipgate.config.schema import DEFAULT_MIN_CASES_PER_CATEGORY, parse_config, second_judge
from flipgate.errors import InputError
from flipgate.judges import describe, rescore_mode

HEAD = "version: 1\ncases: c.jsonl\n"


def parse(text: str):
    return parse_config(HEAD + text, source="cfg.yml")


def problems(text: str) -> list[str]:
    with pytest.raises(InputError) as caught:
        parse(text)
    return [str(p) for p in caught.value.problems]


def test_defaults_need_fifty_cases_and_are_not_strict() -> None:
    config = parse("")
    assert config.gate.min_cases_per_category == DEFAULT_MIN_CASES_PER_CATEGORY == 50
    assert config.gate.strict is False and config.judge.second_opinion is None
    assert rescore_mode(config) == "same_judge"


def test_a_model_on_the_judges_endpoint() -> None:
    config = parse("judge:\n  provider: openai\n  model: judge-1\n  base_url: http://judge.local/v1\n"
                   "  second_opinion:\n    model: judge-2\n    mode: both\n"
                   "gate:\n  min_cases_per_category: 12\n  strict: true\n")
    second = second_judge(config.judge)
    assert (second.provider, second.model, second.base_url) == ("openai", "judge-2", "http://judge.local/v1")
    assert (config.gate.min_cases_per_category, config.gate.strict) == (12, True)
    info = describe(config)
    assert (info.rescore, info.second_opinion) == ("both", "judge-2")
    # `--judge offline` has no endpoint to share: no second opinion then.
    assert second_judge(config.judge, "offline") is None
    assert describe(config, "offline").rescore == "same_judge"


def test_an_azure_deployment_with_its_own_provider_section() -> None:
    config = parse("judge:\n  provider: openai\n  model: judge-1\n  second_opinion:\n"
                   "    provider: azure\n    deployment: grader-east\n"
                   "    azure_endpoint: https://east.example/\n    api_version: \"2024-10-21\"\n")
    second = second_judge(config.judge)
    assert (second.provider, second.model, second.azure_endpoint) == (
        "azure", "grader-east", "https://east.example/")
    assert rescore_mode(config) == "second_opinion"
    # `--judge offline` promises no request: the Azure second opinion is dropped then.
    assert second_judge(config.judge, "offline") is None


def test_a_lexical_second_opinion_survives_judge_offline_and_an_offline_config_may_name_an_llm() -> None:
    lexical = parse("judge:\n  provider: openai\n  model: j\n  second_opinion:\n    provider: offline\n")
    assert second_judge(lexical.judge, "offline").provider == "offline"
    configured = parse("judge:\n  provider: offline\n  second_opinion:\n    provider: openai\n"
                       "    model: judge-2\n")
    assert second_judge(configured.judge).model == "judge-2"  # the config asked for it


@pytest.mark.parametrize(("text", "message"), [
    ("judge:\n  provider: openai\n  model: j\n  second_opinion:\n    mode: both\n",
     "cfg.yml:6: 'judge.second_opinion' needs a model"),
    ("judge:\n  provider: openai\n  model: j\n  second_opinion:\n    model: j\n",
     "'judge.second_opinion' must be a different judge"),
    ("judge:\n  provider: openai\n  model: j\n  second_opinion:\n    model: k\n    mode: majority\n",
     "cfg.yml:8: 'judge.second_opinion.mode' must be one of replace, both"),
    ("judge:\n  provider: openai\n  model: j\n  second_opinion:\n    model: k\n    base_url: http://x\n",
     "'judge.second_opinion.base_url' needs its own 'judge.second_opinion.provider'"),
    ("judge:\n  provider: openai\n  model: j\n  second_opinion:\n    model: k\n    temperature: 1\n",
     "unknown key 'judge.second_opinion.temperature'"),
    ("gate:\n  min_cases_per_category: 0\n", "'gate.min_cases_per_category' must be a whole number above 0"),
    ("gate:\n  strict: yes please\n", "'gate.strict' must be true or false"),
])
def test_bad_settings_are_named_with_their_line(text: str, message: str) -> None:
    assert any(message in problem for problem in problems(text)), problems(text)
