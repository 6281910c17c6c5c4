"""`generator.endpoint.auth: entra` with `flipgate run`: both sides' generations go to the
base's Azure endpoint with an Entra token, and a pull request that points the generator
elsewhere is refused before any token is asked for."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.entra import FakeManagedIdentity
from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

pytestmark = pytest.mark.skipif(importlib.util.find_spec("azure.identity") is None,
                                reason="azure-identity (flipgate[azure]) is not installed")

PROMPT = """---
name: answer
model:
  api: chat
  configuration:
    type: azure_openai
    azure_deployment: gen-a
---
system:
Answer from the context only.
user:
{{ query }}
Context: {{ context }}
"""
CASES = [{"id": "fee", "query": "Is there a fee?", "context": "No fee applies.", "category": "pricing"}]


@pytest.fixture
def services(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[FakeOpenAI, FakeManagedIdentity]]:
    model, identity = FakeOpenAI(), FakeManagedIdentity()
    model.start()
    identity.start()
    model.on_generation(lambda body: body["messages"][-1]["content"].split("Context: ", 1)[1])
    model.bearer_tokens = identity.issued
    for name in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                 "AZURE_CLIENT_ID", "AZURE_TENANT_ID", "ACTIONS_ID_TOKEN_REQUEST_URL"):
        monkeypatch.delenv(name, raising=False)
    identity.use(monkeypatch)
    try:
        yield model, identity
    finally:
        model.stop()
        identity.stop()


def make_repo(tmp_path: Path, model: FakeOpenAI) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({
        ".flipgate.yml": "version: 1\ncases: eval/cases.jsonl\ngenerator:\n  path: prompts/answer.prompty\n"
                         "  endpoint:\n    provider: azure\n"
                         f"    azure_endpoint: {model.azure_endpoint}\n"
                         "    api_version: '2024-10-21'\n    auth: entra\n",
        "eval/cases.jsonl": "".join(json.dumps(case) + "\n" for case in CASES),
        "prompts/answer.prompty": PROMPT,
    }, message="base")
    repo.branch("base", "HEAD")
    return repo


def run(repo: GitRepo, tmp_path: Path):
    return CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                    "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")])


def test_both_sides_generate_at_the_bases_endpoint_signed_in(services, tmp_path: Path) -> None:
    model, identity = services
    repo = make_repo(tmp_path, model)
    repo.commit({"prompts/answer.prompty": PROMPT.replace("gen-a", "gen-b")
                 .replace("context only.", "context only, briefly.")}, message="new deployment")
    result = run(repo, tmp_path)
    assert result.exit_code == 0, result.output
    generated = model.chat_requests("generation")
    assert sorted(r.deployment for r in generated) == ["gen-a", "gen-b"]
    for request in generated:
        assert request.headers["Authorization"][len("Bearer "):] in identity.issued
    written = [p for d in ("out", "cache") for p in (tmp_path / d).rglob("*") if p.is_file()]
    for token in identity.issued:
        assert token not in result.output
        assert all(token not in path.read_text(errors="replace") for path in written)


def test_a_pull_request_that_moves_the_endpoint_gets_no_token(services, tmp_path: Path) -> None:
    model, identity = services
    elsewhere = FakeOpenAI()
    elsewhere.start()
    try:
        repo = make_repo(tmp_path, model)
        repo.commit({"prompts/answer.prompty": PROMPT.replace(
            "    azure_deployment: gen-a\n",
            f"    azure_deployment: gen-a\n    azure_endpoint: {elsewhere.azure_endpoint}\n")},
            message="my own endpoint")
        result = run(repo, tmp_path)
        assert result.exit_code == 2, result.output
        assert "azure_endpoint" in result.output
        assert not elsewhere.requests and not model.requests and not identity.requests
    finally:
        elsewhere.stop()
