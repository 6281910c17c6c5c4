"""Small input checks: duplicate YAML keys, and generator parameters of the wrong kind."""

from __future__ import annotations

import pytest

from flipgate.config.schema import parse_config
from flipgate.errors import InputError
from flipgate.generator.endpoint_lock import lock
from flipgate.prompts import parse_prompty
from flipgate.settings import Settings

OPENAI = "    type: openai\n    model: gpt-4o-mini\n"


def generator(parameters: str, *, ref: str = "base", extra_front: str = ""):
    text = ("---\n" + extra_front + "model:\n  configuration:\n" + OPENAI + "  parameters:\n"
            + parameters + "---\nuser:\n{{ query }}\n")
    return parse_prompty(text, path="prompts/a.prompty", source=f"prompts/a.prompty@{ref}")


def test_a_key_given_twice_in_the_configuration_is_an_error_at_its_second_line() -> None:
    text = "version: 1\ncases: a.jsonl\njudge:\n  provider: offline\n  provider: openai\n"
    with pytest.raises(InputError) as caught:
        parse_config(text, source=".flipgate.yml", directory=".")
    assert [str(p) for p in caught.value.problems] == [
        ".flipgate.yml:5: invalid YAML: duplicate key 'provider' (first given on line 4)"]


def test_a_key_given_twice_in_a_prompty_front_matter_is_an_error_with_its_file_line() -> None:
    with pytest.raises(InputError) as caught:
        generator("    temperature: 0.2\n    temperature: 0.9\n")
    [problem] = caught.value.problems
    assert str(problem).startswith("prompts/a.prompty@base:8: invalid YAML front matter: "
                                   "duplicate key 'temperature' (first given on line 7)")


def test_yaml_merge_keys_and_aliases_are_not_duplicates() -> None:
    text = ("version: 1\ncases: a.jsonl\njudge: &j\n  provider: offline\n"
            "relevance:\n  <<: {threshold: 0.5}\n  embedding_model: e\n")
    assert parse_config(text, source=".flipgate.yml", directory=".").relevance.threshold == 0.5


@pytest.mark.parametrize(("parameters", "message"), [
    ("    temperature: hot\n", 'model.parameters.temperature must be a number from 0 to 2, not "hot"'),
    ("    temperature: 3\n", "model.parameters.temperature must be a number from 0 to 2, not 3"),
    ("    max_tokens: 0\n", "model.parameters.max_tokens must be a whole number, 1 or more, not 0"),
    ("    max_tokens: 12.5\n", "model.parameters.max_tokens must be a whole number, 1 or more"),
    ("    top_p: true\n", "model.parameters.top_p must be a number from 0 to 1, not true"),
    ("    stop: [a, b, c, d, e]\n", "model.parameters.stop must be a string or a list of up to 4"),
    ("    seed: '42'\n", 'model.parameters.seed must be a whole number, not "42"'),
])
def test_a_parameter_of_the_wrong_kind_is_bad_input_naming_the_field(parameters: str,
                                                                     message: str) -> None:
    head = generator(parameters, ref="head")
    with pytest.raises(InputError) as caught:
        lock(generator("    temperature: 0.2\n"), head, settings=Settings())
    [problem] = caught.value.problems
    assert str(problem).startswith("prompts/a.prompty@head:7: ") and message in str(problem)


def test_well_typed_parameters_pass() -> None:
    head = generator("    temperature: 0\n    top_p: 0.9\n    max_tokens: 300\n    stop: ['\\n']\n"
                     "    seed: 7\n    response_format: {type: text}\n", ref="head")
    pair = lock(generator("    temperature: 0.2\n"), head, settings=Settings())
    assert pair.candidate.parameters["max_tokens"] == 300
