"""`.flipgate.yml`'s `generator` section: a path, or a mapping with endpoint and strictness."""

from __future__ import annotations

import pytest

from flipgate.config.schema import EndpointConfig, parse_config
from flipgate.errors import InputError, SecurityError
from flipgate.generator.endpoint_lock import check_adopted_config

MAPPING = """cases: c.jsonl
generator:
  path: prompts/a.prompty
  endpoint:
    provider: azure
    azure_endpoint: ${env:AZURE_OPENAI_ENDPOINT}
    api_version: 2024-10-21
    deployment: gpt-4o-mini
  strict_undefined: true
"""


def test_the_short_form_is_the_path() -> None:
    config = parse_config("cases: c.jsonl\ngenerator: prompts/a.prompty\n")
    assert config.generator == "prompts/a.prompty"
    assert config.generator_options.endpoint is None and config.generator_options.strict_undefined


def test_strict_undefined_is_true_unless_turned_off() -> None:
    assert parse_config(MAPPING.replace("  strict_undefined: true\n", "")).generator_options.strict_undefined
    off = parse_config(MAPPING.replace("strict_undefined: true", "strict_undefined: false"))
    assert not off.generator_options.strict_undefined


def test_the_mapping_form() -> None:
    config = parse_config(MAPPING)
    assert config.generator == "prompts/a.prompty"
    assert config.generator_options.strict_undefined
    assert config.generator_options.endpoint == EndpointConfig(
        provider="azure", azure_endpoint="${env:AZURE_OPENAI_ENDPOINT}", api_version="2024-10-21",
        deployment="gpt-4o-mini")


@pytest.mark.parametrize("text, message", [
    (MAPPING.replace("provider: azure", "provider: anthropic"),
     ".flipgate.yml:5: 'generator.endpoint.provider' must be one of openai, azure"),
    (MAPPING.replace("  strict_undefined: true", "  strict: true"),
     ".flipgate.yml:9: unknown key 'generator.strict'"),
    (MAPPING.replace("    deployment:", "    api_key: x\n    deployment:"),
     ".flipgate.yml:8: unknown key 'generator.endpoint.api_key'"),
])
def test_mistakes_name_the_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_config(text)
    assert message in str(caught.value)


def test_an_adopting_configuration_may_not_choose_the_generators_endpoint() -> None:
    text = MAPPING.replace("${env:AZURE_OPENAI_ENDPOINT}", "https://evil.example")
    with pytest.raises(SecurityError, match="generator.endpoint.azure_endpoint is refused"):
        check_adopted_config(parse_config(text), text)
    safe = MAPPING.replace("    azure_endpoint: ${env:AZURE_OPENAI_ENDPOINT}\n", "")
    check_adopted_config(parse_config(safe), safe)
