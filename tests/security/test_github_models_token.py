"""Attacks on where the GitHub token goes when GitHub Models is the provider.

The base's `.flipgate.yml` names `provider: github` (its `base_url` the loopback server,
as a test's must); the token is GITHUB_TOKEN. A pull request tries to send that token to
a server of its own: through its `.flipgate.yml`, its generator file, or the generator
endpoint of the configuration that adopts flipgate. The attacker's server must see
nothing, and the token must never go with a request that is not GitHub Models'.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

TOKEN = "ghs_models-read-token"
CASES = "".join(json.dumps(c) + "\n" for c in [
    {"id": "refund-007", "category": "policy", "query": "How long do refunds take?",
     "context": "Refunds are issued within 30 days of the request."},
])
PROMPT = """---
model:
  configuration:
    model: openai/gpt-4o-mini
---
system:
{system}
user:
{{{{ query }}}}
Context: {{{{ context }}}}
"""
CONFIG = """version: 1
cases: eval/cases.jsonl
generator:
  path: prompts/answer.prompty
  endpoint: {{provider: github, base_url: {generator_url}}}
judge:
  provider: github
  model: openai/gpt-4.1-mini
  base_url: {judge_url}
  max_retries: 0
relevance:
  embedding_model: openai/text-embedding-3-small
gate:
  blocking_categories: [policy]
"""


@pytest.fixture
def models(openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    """The loopback server stands in for GitHub Models; GITHUB_TOKEN is the token."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    return openai_server


@pytest.fixture
def attacker() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def run(repo: GitRepo, tmp_path: Path) -> tuple[int, str, dict | None]:
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--out", str(out), "--no-cache"])
    report = out / "report.json"
    return (result.exit_code, result.output + (result.stderr or ""),
            json.loads(report.read_text()) if report.exists() else None)


def config(url: str, *, judge_url: str | None = None) -> str:
    return CONFIG.format(generator_url=url, judge_url=judge_url or url)


def adopted_repo(tmp_path: Path, files: dict[str, str]) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"README.md": "# bank bot\n"})
    repo.branch("base", "HEAD")
    repo.commit({"eval/cases.jsonl": CASES, **files})
    return repo


def gated_repo(tmp_path: Path, models: FakeOpenAI) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": config(models.base_url), "eval/cases.jsonl": CASES,
                 "prompts/answer.prompty": PROMPT.format(system="Answer only from the context.")})
    repo.branch("base", "HEAD")
    return repo


def test_the_token_goes_to_the_base_named_endpoint_for_every_request_and_nowhere_else(
        models: FakeOpenAI, attacker: FakeOpenAI, tmp_path: Path) -> None:
    """The control: the base's own configuration; a head that changes only the prompt
    and, in its own `.flipgate.yml`, points the judge at the attacker (not read)."""
    repo = gated_repo(tmp_path, models)
    repo.commit({"prompts/answer.prompty": PROMPT.format(system="Be generous."),
                 ".flipgate.yml": config(attacker.base_url)})
    code, output, report = run(repo, tmp_path)
    assert code == 0, output
    assert report is not None and report["judge"]["provider"] == "github"
    kinds = {r.kind for r in models.requests}
    assert {"generation", "groundedness", "embeddings"} <= kinds
    assert {r.headers.get("Authorization") for r in models.requests} == {f"Bearer {TOKEN}"}
    assert {r.model for r in models.chat_requests("generation")} == {"openai/gpt-4o-mini"}
    assert {r.model for r in models.chat_requests("groundedness")} == {"openai/gpt-4.1-mini"}
    assert {r.model for r in models.embedding_requests()} == {"openai/text-embedding-3-small"}
    assert attacker.requests == []


def test_a_head_generator_that_names_its_own_base_url_is_refused_before_any_request(
        models: FakeOpenAI, attacker: FakeOpenAI, tmp_path: Path) -> None:
    repo = gated_repo(tmp_path, models)
    redirected = PROMPT.format(system="Be generous.").replace(
        "model: openai/gpt-4o-mini", f"model: openai/gpt-4o-mini\n    base_url: {attacker.base_url}")
    repo.commit({"prompts/answer.prompty": redirected})
    code, output, report = run(repo, tmp_path)
    assert code == 2, output
    assert "changes model.configuration.base_url" in output
    assert models.requests == [] and attacker.requests == [] and report is None


@pytest.mark.parametrize("where", ["judge", "second-opinion", "generator-endpoint"])
def test_a_pr_that_adopts_flipgate_cannot_point_the_github_provider_at_its_own_server(
        models: FakeOpenAI, attacker: FakeOpenAI, tmp_path: Path, where: str) -> None:
    text = config(models.base_url, judge_url=models.base_url)
    if where == "judge":
        text = text.replace(f"base_url: {models.base_url}\n  max_retries",
                            f"base_url: {attacker.base_url}\n  max_retries")
    elif where == "second-opinion":
        text = text.replace("  max_retries: 0\n", "  max_retries: 0\n  second_opinion: {provider: github, "
                            f"model: openai/gpt-4o, base_url: {attacker.base_url}}}\n")
    else:
        text = text.replace(f"endpoint: {{provider: github, base_url: {models.base_url}}}",
                            f"endpoint: {{provider: github, base_url: {attacker.base_url}}}")
    repo = adopted_repo(tmp_path, {".flipgate.yml": text,
                                   "prompts/answer.prompty": PROMPT.format(system="Answer.")})
    code, output, report = run(repo, tmp_path)
    assert code == 2, output
    assert "is refused" in output and "base_url" in output
    assert attacker.requests == [] and models.requests == [] and report is None
    assert TOKEN not in output


def test_the_github_token_never_rides_with_an_openai_generator_or_openai_base_url(
        models: FakeOpenAI, attacker: FakeOpenAI, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge is GitHub Models; the generator an OpenAI endpoint (OPENAI_BASE_URL,
    OPENAI_API_KEY): each request carries its own provider's key only."""
    monkeypatch.setenv("OPENAI_BASE_URL", attacker.base_url)
    repo = GitRepo.create(tmp_path / "repo")
    openai_generator = config(models.base_url).replace(
        f"  endpoint: {{provider: github, base_url: {models.base_url}}}\n", "  endpoint: {provider: openai}\n")
    repo.commit({".flipgate.yml": openai_generator, "eval/cases.jsonl": CASES,
                 "prompts/answer.prompty": PROMPT.format(system="Answer only from the context.")})
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.format(system="Be generous.")})
    code, output, _ = run(repo, tmp_path)
    assert code == 0, output
    assert attacker.chat_requests("generation") and models.chat_requests("groundedness")
    assert {r.headers.get("Authorization") for r in attacker.requests} == {"Bearer test-key"}
    assert {r.headers.get("Authorization") for r in models.requests} == {f"Bearer {TOKEN}"}
