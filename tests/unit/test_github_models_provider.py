"""`provider: github` (GitHub Models): accepted wherever openai and azure are, its endpoint
GitHub's own unless the base names one, its token the GitHub one and nothing else."""

from __future__ import annotations

import pytest

from flipgate.config.schema import EndpointConfig, parse_config
from flipgate.errors import InputError
from flipgate.generator.endpoint_lock import lock
from flipgate.llm.endpoints import LazyClient, github_endpoint
from flipgate.prompts import parse_prompty
from flipgate.settings import Settings

CONFIG = """\
version: 1
cases: eval/cases.jsonl
generator:
  path: prompts/answer.prompty
  endpoint: {provider: github}
judge:
  provider: github
  model: openai/gpt-4.1-mini
  second_opinion: {provider: github, model: openai/gpt-4o}
relevance:
  embedding_model: openai/text-embedding-3-small
"""


def prompt(model: str, ref: str):
    text = f"---\nmodel:\n  configuration:\n    model: {model}\n---\nuser:\n{{{{ query }}}}\n"
    return parse_prompty(text, path="prompts/answer.prompty", source=f"prompts/answer.prompty@{ref}")


def test_github_is_a_provider_of_the_judge_the_second_opinion_and_the_generator() -> None:
    config = parse_config(CONFIG, source="cfg.yml")
    assert config.judge.provider == "github" and config.judge.model == "openai/gpt-4.1-mini"
    assert config.judge.second_opinion is not None and config.judge.second_opinion.provider == "github"
    assert config.generator_options.endpoint == EndpointConfig(provider="github")


def test_the_github_judge_must_be_pinned_like_the_others() -> None:
    with pytest.raises(InputError) as caught:
        parse_config(CONFIG.replace("  model: openai/gpt-4.1-mini\n", ""), source="cfg.yml")
    assert "cfg.yml:6: 'judge.model' is required for provider github" in str(caught.value)


def test_the_endpoint_is_github_models_and_never_openai_base_url() -> None:
    settings = Settings({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "GITHUB_TOKEN": "t"})
    pair = lock(prompt("openai/gpt-4o-mini", "base"), prompt("meta/Llama-4-Scout", "head"),
                settings=settings, endpoint=EndpointConfig(provider="github"))
    assert pair.baseline.endpoint == pair.candidate.endpoint == github_endpoint(None)
    assert pair.baseline.endpoint.base_url == "https://models.github.ai/inference"
    assert (pair.baseline.model, pair.candidate.model) == ("openai/gpt-4o-mini", "meta/Llama-4-Scout")


def test_the_base_may_point_github_at_another_url_for_its_tests() -> None:
    pair = lock(prompt("openai/gpt-4o-mini", "base"), prompt("openai/gpt-4o-mini", "head"),
                settings=Settings({"GITHUB_TOKEN": "t"}),
                endpoint=EndpointConfig(provider="github", base_url="http://127.0.0.1:9/v1"))
    assert pair.candidate.endpoint.identity()["kind"] == "github"
    assert pair.candidate.endpoint.base_url == "http://127.0.0.1:9/v1"


def test_the_token_is_the_actions_input_first_then_github_token() -> None:
    both = Settings({"INPUT_GITHUB-TOKEN": "from-input", "GITHUB_TOKEN": "from-env"})
    assert both.github_models_token == "from-input"
    assert Settings({"GITHUB_TOKEN": "from-env"}).github_models_token == "from-env"
    assert "from-input" not in repr(both)


def test_without_a_token_the_github_provider_is_bad_input_naming_what_to_set() -> None:
    with pytest.raises(InputError) as caught:
        LazyClient(github_endpoint(None), settings=Settings({"OPENAI_API_KEY": "sk-not-this"}))
    assert "github-token" in str(caught.value) and "models: read" in str(caught.value)


def test_an_openai_type_file_without_an_endpoint_goes_to_github_models_an_azure_one_does_not() -> None:
    def typed(kind: str, ref: str):
        text = (f"---\nmodel:\n  configuration:\n    type: {kind}\n    model: openai/gpt-4o-mini\n"
                "---\nuser:\n{{ query }}\n")
        return parse_prompty(text, path="p.prompty", source=f"p.prompty@{ref}")

    settings = Settings({"GITHUB_TOKEN": "t", "AZURE_OPENAI_API_KEY": "k", "OPENAI_API_VERSION": "v",
                         "AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com"})
    github = EndpointConfig(provider="github")
    assert lock(typed("openai", "base"), typed("openai", "head"), settings=settings,
                endpoint=github).candidate.endpoint.kind == "github"
    with pytest.raises(InputError):  # "openai/gpt-4o-mini" is no Azure deployment name
        lock(typed("azure_openai", "base"), typed("azure_openai", "head"), settings=settings,
             endpoint=github)
