"""The head may change the model and its parameters, never where requests and the key go."""

from __future__ import annotations

import pytest

from flipgate.errors import InputError, Problem, SecurityError
from flipgate.generator.endpoint_lock import expand, lock
from flipgate.prompts import parse_prompty
from flipgate.settings import Settings

ENV = {"GEN_URL": "http://127.0.0.1:9/v1", "SECRET": "sk-secret", "MODEL": "gpt-base"}


def generator(configuration: str, parameters: str = "    temperature: 0.2\n", *,
              ref: str = "base"):
    text = ("---\nmodel:\n  configuration:\n" + configuration + "  parameters:\n" + parameters
            + "---\nuser:\n{{ query }}\n")
    return parse_prompty(text, path="prompts/a.prompty", source=f"prompts/a.prompty@{ref}")


OPENAI = "    type: openai\n    model: gpt-4o-mini\n    base_url: ${env:GEN_URL}\n"
AZURE = ("    type: azure_openai\n    azure_deployment: dep-a\n"
         "    azure_endpoint: https://res.openai.azure.com\n    api_version: 2024-10-21\n")


def test_model_and_parameters_may_change_and_the_endpoint_stays_the_base_one() -> None:
    base = generator(OPENAI)
    head = generator(OPENAI.replace("gpt-4o-mini", "gpt-4.1"),
                     "    temperature: 0.7\n    max_tokens: 50\n", ref="head")
    pair = lock(base, head, settings=Settings(ENV))
    assert (pair.baseline.model, dict(pair.baseline.parameters)) == ("gpt-4o-mini", {"temperature": 0.2})
    assert (pair.candidate.model, dict(pair.candidate.parameters)) == (
        "gpt-4.1", {"temperature": 0.7, "max_tokens": 50})
    assert pair.baseline.endpoint == pair.candidate.endpoint
    assert pair.baseline.endpoint.identity() == {
        "kind": "openai", "scheme": "http", "host": "127.0.0.1", "port": "9", "path": "/v1"}
    assert pair.notes == [] and not pair.adopted


def test_azure_identity_carries_endpoint_deployment_and_api_version() -> None:
    base = generator(AZURE)
    head = generator(AZURE.replace("dep-a", "dep-b"), ref="head")
    pair = lock(base, head, settings=Settings())
    assert pair.baseline.endpoint.identity()["deployment"] == "dep-a"
    assert pair.candidate.endpoint.identity() == {
        "kind": "azure", "scheme": "https", "host": "res.openai.azure.com", "port": "443",
        "path": "", "api_version": "2024-10-21", "deployment": "dep-b"}
    assert pair.candidate.model == "dep-b"


@pytest.mark.parametrize("deployment", [
    "..", "../../admin", "dep/../../other", "dep?api-version=1", "dep#", "dep%2F..", "dep b", ".hidden",
])
def test_an_azure_deployment_that_could_leave_its_url_path_segment_is_refused(deployment: str) -> None:
    # The deployment name goes into the URL path (/openai/deployments/<name>/...), where the
    # head could otherwise reach other routes of the base's endpoint with the key.
    head = generator(AZURE.replace("dep-a", f"'{deployment}'"), ref="head")
    with pytest.raises(SecurityError) as caught:
        lock(generator(AZURE), head, settings=Settings())
    problem = caught.value.problems[0]
    assert isinstance(problem, Problem)
    assert (problem.path, problem.line) == ("prompts/a.prompty@head", 5)
    assert "is not an Azure deployment name" in problem.message


@pytest.mark.parametrize("deployment", ["dep-b", "gpt-4.1-mini", "My_Deployment2"])
def test_ordinary_azure_deployment_names_pass(deployment: str) -> None:
    pair = lock(generator(AZURE), generator(AZURE.replace("dep-a", deployment), ref="head"), settings=Settings())
    assert pair.candidate.endpoint.deployment == deployment


@pytest.mark.parametrize("head_configuration, field", [
    (OPENAI.replace("${env:GEN_URL}", "https://evil.example/v1"), "base_url"),
    (OPENAI.replace("${env:GEN_URL}", "${env:OTHER_URL}"), "base_url"),
    (OPENAI.replace("    base_url: ${env:GEN_URL}\n", ""), "base_url"),     # removing it redirects too
    (OPENAI + "    api_key: ${env:OPENAI_API_KEY}\n", "api_key"),
    (OPENAI.replace("type: openai", "type: azure_openai") + "    azure_endpoint: https://e\n", "azure_endpoint"),
])
def test_a_head_that_moves_the_endpoint_is_refused(head_configuration: str, field: str) -> None:
    with pytest.raises(SecurityError) as caught:
        lock(generator(OPENAI), generator(head_configuration, ref="head"), settings=Settings(ENV))
    messages = [p.message for p in caught.value.problems if isinstance(p, Problem)]
    assert any(f"changes model.configuration.{field}" in m for m in messages), messages
    assert all(p.path == "prompts/a.prompty@head" for p in caught.value.problems)


@pytest.mark.parametrize("head_configuration, head_parameters", [
    (OPENAI.replace("gpt-4o-mini", "${env:SECRET}"), "    temperature: 0.2\n"),
    (OPENAI, "    stop: ['${env:SECRET}']\n"),
])
def test_the_head_never_expands_environment_references(head_configuration: str, head_parameters: str) -> None:
    with pytest.raises(SecurityError, match="expanded only in the base's generator"):
        lock(generator(OPENAI), generator(head_configuration, head_parameters, ref="head"), settings=Settings(ENV))


def test_the_base_expands_its_own_references() -> None:
    base = generator(OPENAI.replace("gpt-4o-mini", "${env:MODEL}"))
    pair = lock(base, generator(OPENAI, ref="head"), settings=Settings(ENV))
    assert pair.baseline.model == "gpt-base"
    assert pair.candidate.model == "gpt-4o-mini"


@pytest.mark.parametrize("name", [
    "base_url", "api_key", "extra_headers", "extra_query", "extra_body", "timeout", "stream",
    "azure_endpoint", "tools", "n", "default_headers",
])
def test_parameters_that_the_client_would_obey_are_refused(name: str) -> None:
    head = generator(OPENAI, f"    {name}: x\n", ref="head")
    with pytest.raises(SecurityError) as caught:
        lock(generator(OPENAI), head, settings=Settings(ENV))
    problem = caught.value.problems[0]
    assert isinstance(problem, Problem)
    assert (problem.path, problem.line) == ("prompts/a.prompty@head", 8)
    assert f"model.parameters.{name} is not a chat-completion body field" in problem.message


@pytest.mark.parametrize("name, value", [
    ("temperature", "0"), ("top_p", "0.9"), ("max_tokens", "10"), ("max_completion_tokens", "10"),
    ("seed", "7"), ("stop", "['\\n']"), ("response_format", "{type: text}"),
    ("presence_penalty", "0.1"), ("frequency_penalty", "0.1"), ("reasoning_effort", "low"),
])
def test_known_body_parameters_pass(name: str, value: str) -> None:
    pair = lock(generator(OPENAI), generator(OPENAI, f"    {name}: {value}\n", ref="head"), settings=Settings(ENV))
    assert name in pair.candidate.parameters


def test_adoption_replays_the_heads_generator_where_the_environment_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    head = generator("    type: openai\n    model: gpt-4o-mini\n    api_key: ${env:OPENAI_API_KEY}\n",
                     ref="head")
    pair = lock(None, head, settings=Settings({**ENV, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}))
    assert pair.adopted
    assert pair.baseline.model == pair.candidate.model == "gpt-4o-mini"
    assert pair.candidate.endpoint.base_url == "http://127.0.0.1:9/v1"
    assert "base has no generator" in pair.notes[0]


@pytest.mark.parametrize("configuration, parameters, refused", [
    (OPENAI, "    temperature: 0.2\n", "model.configuration.base_url is refused"),
    (OPENAI.replace("${env:GEN_URL}", "https://evil.example/v1"), "    temperature: 0.2\n",
     "model.configuration.base_url is refused"),
    (AZURE.replace("https://res.openai.azure.com", "https://evil.example"), "    temperature: 0.2\n",
     "model.configuration.azure_endpoint is refused"),
    ("    type: openai\n    model: ${env:SECRET}\n", "    temperature: 0.2\n",
     "model.configuration.model uses ${...}"),
    ("    type: azure_openai\n    azure_deployment: d\n    api_version: ${env:SECRET}\n",
     "    temperature: 0.2\n", "model.configuration.api_version uses ${...}"),
    ("    type: openai\n    model: m\n", "    stop: ['${env:SECRET}']\n",
     "model.parameters.stop uses ${...}"),
], ids=["env-base-url", "literal-base-url", "azure-endpoint", "env-model", "env-api-version",
        "env-parameter"])
def test_a_head_that_adopts_flipgate_still_cannot_choose_the_endpoint_or_read_the_environment(
        configuration: str, parameters: str, refused: str) -> None:
    # With no generator at the base, the head's is replayed, but it stays untrusted:
    # otherwise a stranger's first PR could send the key anywhere, or print a secret.
    with pytest.raises(SecurityError) as caught:
        lock(None, generator(configuration, parameters, ref="head"), settings=Settings(ENV))
    assert refused in str(caught.value)
    assert "sk-secret" not in str(caught.value)


@pytest.mark.parametrize("api_key, ok", [
    ("${env:OPENAI_API_KEY}", True),
    ("${env:SECRET}", False),
    ("sk-literal", False),
])
def test_the_key_comes_only_from_the_clients_own_variable(api_key: str, ok: bool) -> None:
    configuration = OPENAI + f"    api_key: {api_key}\n"
    call = lambda: lock(generator(configuration), generator(configuration, ref="head"), settings=Settings(ENV))  # noqa: E731
    if ok:
        call()
    else:
        with pytest.raises(InputError, match="reads the API key only from OPENAI_API_KEY"):
            call()


@pytest.mark.parametrize("value, environ, expected", [
    ("${env:A}", {"A": "1"}, "1"),
    ("x-${env:A}-y", {"A": "1"}, "x-1-y"),
    ("${env:A:fallback}", {}, "fallback"),
    ("${env:A}", {}, None),
    ("plain", {}, "plain"),
])
def test_expand(value: str, environ: dict[str, str], expected: str | None) -> None:
    assert expand(value, environ=environ, source="s", line=1) == expected


def test_other_references_are_not_expanded() -> None:
    with pytest.raises(InputError, match=r"unsupported reference '\$\{file:key.txt\}'"):
        expand("${file:key.txt}", environ={}, source="s", line=1)


def test_a_base_model_from_an_unset_variable_is_bad_input() -> None:
    base = generator(OPENAI.replace("gpt-4o-mini", "${env:NOT_SET}"))
    with pytest.raises(InputError, match="unset environment variable"):
        lock(base, generator(OPENAI, ref="head"), settings=Settings(ENV))
