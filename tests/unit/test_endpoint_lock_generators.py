"""The endpoint lock with generators that name no endpoint, `${env:}` kept by the head,
body fields, and `${file:}` parameters."""

from __future__ import annotations

import dataclasses
import json

import pytest

from flipgate.config.schema import EndpointConfig
from flipgate.errors import InputError, SecurityError
from flipgate.generator.endpoint_lock import lock
from flipgate.prompts import parse_prompty
from flipgate.settings import Settings

ENV = {"AZURE_OPENAI_DEPLOYMENT": "dep-env", "SECRET": "sk-secret", "AZ_URL": "https://res.openai.azure.com"}
SETTINGS_ENV = Settings.from_environ(ENV)
SETTINGS = EndpointConfig(provider="azure", azure_endpoint="${env:AZ_URL}", api_version="2024-10-21",
                          deployment="dep-config")


def generator(front: str, *, ref: str = "base"):
    return parse_prompty("---\n" + front + "---\nuser:\n{{ query }}\n", path="prompts/a.prompty",
                         source=f"prompts/a.prompty@{ref}")


EVALUATOR = "model:\n  api: chat\n  parameters:\n    temperature: 0.0\n"


def test_a_file_with_no_configuration_takes_the_endpoint_and_model_from_flipgate_yml() -> None:
    pair = lock(generator(EVALUATOR), generator(EVALUATOR.replace("0.0", "0.5"), ref="head"),
                settings=SETTINGS_ENV, endpoint=SETTINGS)
    assert pair.baseline.endpoint == pair.candidate.endpoint
    assert pair.candidate.endpoint.identity() == {
        "kind": "azure", "scheme": "https", "host": "res.openai.azure.com", "port": "443", "path": "",
        "api_version": "2024-10-21", "deployment": "dep-config"}
    assert dict(pair.candidate.parameters) == {"temperature": 0.5}


def test_a_v2_file_with_a_model_and_no_connection_keeps_its_model() -> None:
    pair = lock(generator("model: gpt-4o\n"), generator("model: gpt-4.1\n", ref="head"), settings=SETTINGS_ENV,
                endpoint=SETTINGS)
    assert (pair.baseline.model, pair.candidate.model) == ("gpt-4o", "gpt-4.1")
    assert pair.candidate.endpoint.deployment == "gpt-4.1"


@pytest.mark.parametrize("head", [
    EVALUATOR + "  configuration:\n    azure_endpoint: https://evil.example\n",
    EVALUATOR + "  configuration:\n    type: openai\n    base_url: https://evil.example/v1\n",
    "model:\n  id: m\n  connection:\n    endpoint: https://evil.example\n",
], ids=["v1-azure-endpoint", "v1-base-url", "v2-connection"])
def test_a_head_that_adds_an_endpoint_the_base_left_to_the_environment_is_refused(head: str) -> None:
    with pytest.raises(SecurityError) as caught:
        lock(generator(EVALUATOR), generator(head, ref="head"), settings=SETTINGS_ENV, endpoint=SETTINGS)
    assert "where requests and the API key go is the base's choice" in str(caught.value)
    assert "prompts/a.prompty@head" in str(caught.value)


def test_the_head_may_keep_the_bases_env_reference_and_it_expands_alike() -> None:
    front = "model:\n  configuration:\n    type: azure_openai\n    azure_deployment: ${env:AZURE_OPENAI_DEPLOYMENT}\n"
    pair = lock(generator(front), generator(front + "  parameters:\n    temperature: 1\n", ref="head"),
                settings=SETTINGS_ENV, endpoint=SETTINGS)
    assert pair.baseline.model == pair.candidate.model == "dep-env"


def test_a_head_env_reference_that_differs_from_the_bases_names_ref_field_and_why() -> None:
    base = "model:\n  configuration:\n    type: azure_openai\n    azure_deployment: ${env:AZURE_OPENAI_DEPLOYMENT}\n"
    with pytest.raises(SecurityError) as caught:
        lock(generator(base), generator(base.replace("AZURE_OPENAI_DEPLOYMENT", "SECRET"), ref="head"),
             settings=SETTINGS_ENV, endpoint=SETTINGS)
    assert str(caught.value) == (
        "prompts/a.prompty@head:5: model.configuration.azure_deployment uses ${...}; references are "
        "expanded only in the base's generator, and in the head's only where its raw text equals the base's")


@pytest.mark.parametrize("name, value", [
    ("tools", "[{type: function, function: {name: f}}]"), ("tool_choice", "auto"),
    ("parallel_tool_calls", "false"), ("user", "u1"), ("logit_bias", "{'50256': -100}"),
])
def test_body_fields_real_apps_use_pass(name: str, value: str) -> None:
    front = EVALUATOR + f"    {name}: {value}\n"
    pair = lock(generator(front), generator(front, ref="head"), settings=SETTINGS_ENV, endpoint=SETTINGS)
    assert name in pair.candidate.parameters


@pytest.mark.parametrize("name, why", [
    ("extra_headers", "as HTTP headers"), ("stream", "each answer whole"),
    ("timeout", "a client option"), ("n", "several answers per request"),
])
def test_client_side_options_are_refused_saying_why(name: str, why: str) -> None:
    head = generator(EVALUATOR + f"    {name}: 1\n", ref="head")
    with pytest.raises(SecurityError, match=why):
        lock(generator(EVALUATOR), head, settings=SETTINGS_ENV, endpoint=SETTINGS)


def test_a_file_reference_loads_json_from_the_same_ref() -> None:
    files = {"prompts/tools.json": json.dumps([{"type": "function", "function": {"name": "f"}}]).encode()}
    front = EVALUATOR + "    tools: ${file:tools.json}\n"
    pair = lock(generator(front), generator(front, ref="head"), settings=SETTINGS_ENV, endpoint=SETTINGS,
                read_base=files.get, read_head=files.get)
    assert pair.baseline.parameters["tools"] == [{"type": "function", "function": {"name": "f"}}]
    with pytest.raises(InputError, match="tools reads 'tools.json', which is not in this git ref"):
        lock(generator(front), generator(front, ref="head"), settings=SETTINGS_ENV, endpoint=SETTINGS,
             read_base=files.get, read_head={}.get)


@pytest.mark.parametrize("reference", ["../../secrets.json", "/etc/x.json", "../.git/config.json"])
def test_a_file_reference_may_not_leave_the_repository(reference: str) -> None:
    front = EVALUATOR + f"    response_format: ${{file:{reference}}}\n"
    with pytest.raises(SecurityError, match="outside the repository"):
        lock(generator(front), generator(front, ref="head"), settings=SETTINGS_ENV, endpoint=SETTINGS,
             read_base=lambda p: b"{}", read_head=lambda p: b"{}")


def test_a_generator_with_no_model_anywhere_says_where_to_put_one() -> None:
    with pytest.raises(InputError, match="add model.configuration.model to the file, or set "
                                         "generator.endpoint.model in .flipgate.yml"):
        lock(generator(EVALUATOR), generator(EVALUATOR, ref="head"), settings=SETTINGS_ENV,
             endpoint=EndpointConfig(provider="openai", base_url="http://127.0.0.1:9/v1"))


def test_azure_with_no_model_names_the_deployment_keys() -> None:
    azure = EndpointConfig(provider="azure", azure_endpoint="https://r.openai.azure.com",
                           api_version="2024-10-21")
    with pytest.raises(InputError, match="add model.configuration.azure_deployment to the file, "
                                         "or set generator.endpoint.deployment"):
        lock(generator(EVALUATOR), generator(EVALUATOR, ref="head"), settings=SETTINGS_ENV,
             endpoint=azure)


@pytest.mark.parametrize("form", ["template", "python"])
def test_a_template_or_constant_with_no_model_names_generator_model_only(form: str) -> None:
    """Its model comes only from .flipgate.yml: the advice names that key and that file."""
    text = dataclasses.replace(generator(EVALUATOR), form=form)
    with pytest.raises(InputError) as caught:
        lock(text, text, settings=SETTINGS_ENV, config_source=".flipgate.yml@base",
             endpoint=EndpointConfig(provider="openai", base_url="http://127.0.0.1:9/v1"))
    assert str(caught.value) == (".flipgate.yml@base: the generator (prompts/a.prompty) names no "
                                 "model: set generator.model")


def test_a_github_models_model_without_its_publisher_is_refused_before_any_request() -> None:
    front = "model:\n  api: chat\n  configuration:\n    type: openai\n    model: gpt-4.1-mini\n"
    with pytest.raises(InputError, match="GitHub Models names a model publisher/name: "
                                         "openai/gpt-4.1-mini, not gpt-4.1-mini"):
        lock(generator(front), generator(front, ref="head"), settings=SETTINGS_ENV,
             endpoint=EndpointConfig(provider="github"))
    pair = lock(generator(front.replace("gpt-4.1", "openai/gpt-4.1")), generator(
        front.replace("gpt-4.1", "openai/gpt-4.1"), ref="head"), settings=SETTINGS_ENV,
        endpoint=EndpointConfig(provider="github"))
    assert pair.baseline.model == "openai/gpt-4.1-mini"
