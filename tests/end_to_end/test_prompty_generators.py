"""Existing Prompty files gate end to end: a v2 file with no endpoint of its own and a
thread input, and a v1 file reading its deployment from the environment. Real git repos,
the real CLI and openai client, the loopback OpenAI-compatible server in Azure shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI
from support.runs import repo_with_base, run_base_head

CASES = [
    {"id": "refund-007", "query": "And how long for a refund?",
     "context": "Refunds are accepted within 30 days of purchase.", "category": "policy",
     "history": [{"role": "user", "content": "Hi, I bought a kettle."},
                 {"role": "assistant", "content": "Happy to help with your kettle."}]},
    {"id": "card-002", "query": "How do I freeze my card?",
     "context": "Freeze your card in the app under Card settings.", "category": "cards",
     "history": []},
]

V2_PROMPT = """---
name: answer
model:
  id: answer-model
  options:
    temperature: 0.2
inputs:
  - name: query
    kind: string
  - name: context
    kind: string
  - name: history
    kind: thread
template:
  format:
    kind: jinja2
---
system:
You answer bank questions from the context only.
Context: {{ context }}

{{ history }}

user:
{{ query }}
"""

V1_PROMPT = """---
name: answer
model:
  api: chat
  configuration:
    type: azure_openai
    azure_deployment: ${env:AZURE_OPENAI_DEPLOYMENT}
  parameters:
    temperature: 0.2
---
system:
You answer bank questions from the context only.
Context: {{ context }}
user:
{{ query }}
"""


def config(generator: str) -> str:
    # strict: a handful of cases may block on the same judge's re-score (see gate.min_cases_per_category)
    return (f"version: 1\ncases: eval/cases.jsonl\n{generator}judge:\n  provider: offline\n"
            "gate:\n  blocking_categories: [policy]\n  strict: true\n")


GENERATOR_ENDPOINT = """generator:
  path: prompts/answer.prompty
  endpoint:
    provider: azure
    azure_endpoint: ${env:AZURE_OPENAI_ENDPOINT}
    api_version: 2024-10-21
"""


def grounded(body: dict) -> str:
    """A stand-in model: repeats the context it was given, unless told to be creative."""
    system = body["messages"][0]["content"]
    context = system.split("Context: ", 1)[1].split("\n")[0]
    return "Refunds take 90 days and cost $15." if "creative" in system and "Refund" in context else context


@pytest.fixture
def azure(openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    openai_server.set_azure_env(monkeypatch)
    monkeypatch.delenv("OPENAI_BASE_URL")
    openai_server.on_generation(grounded)
    return openai_server


def make_repo(tmp_path: Path, files: dict[str, str]) -> GitRepo:
    return repo_with_base(tmp_path, CASES, files)


run = run_base_head


def test_a_v2_generator_with_no_endpoint_and_a_thread_input_gates_a_change(
        azure: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT", "unused")
    repo = make_repo(tmp_path, {".flipgate.yml": config(GENERATOR_ENDPOINT),
                                "prompts/answer.prompty": V2_PROMPT})
    repo.commit({"prompts/answer.prompty": V2_PROMPT.replace("context only.", "context only, creative.")})
    result, report = run(repo, tmp_path)
    assert result.exit_code == 1, result.output       # the creative head invents a refund policy
    verdicts = {row["id"]: row["verdict"] for row in report["rows"]}
    assert verdicts["refund-007"] == "regression" and verdicts["card-002"] == "unchanged"
    generation = azure.chat_requests()
    assert {r.deployment for r in generation} == {"answer-model"}   # the file's model, .flipgate.yml's endpoint
    refund = next(r.body for r in generation if "refund" in json.dumps(r.body))
    assert [m["role"] for m in refund["messages"]] == ["system", "user", "assistant", "user"]
    assert refund["messages"][1:3] == CASES[0]["history"]          # the thread, where the template put it
    assert refund["temperature"] == 0.2


def test_a_v1_generator_reading_its_deployment_from_the_environment_gates_a_change(
        azure: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT", "dep-from-env")
    repo = make_repo(tmp_path, {".flipgate.yml": config("generator: prompts/answer.prompty\n"),
                                "prompts/answer.prompty": V1_PROMPT})
    repo.commit({"prompts/answer.prompty": V1_PROMPT.replace("context only.", "context only, creative.")})
    result, report = run(repo, tmp_path)
    assert result.exit_code == 1, result.output
    assert report["change"]["model"] == {"old": "dep-from-env", "new": "dep-from-env"}
    assert {r.deployment for r in azure.chat_requests()} == {"dep-from-env"}


@pytest.mark.parametrize("head_change", [
    ("  id: answer-model\n", "  id: answer-model\n  connection:\n    endpoint: https://evil.example\n"),
    ("  id: answer-model\n", "  id: answer-model\n  provider: openai\n"),
    ("  id: answer-model\n", "  id: ${env:AZURE_OPENAI_API_KEY}\n"),
], ids=["adds-endpoint", "changes-provider", "model-from-a-secret"])
def test_a_head_cannot_choose_where_the_key_goes_when_the_base_names_no_endpoint(
        azure: FakeOpenAI, tmp_path: Path, head_change: tuple[str, str]) -> None:
    repo = make_repo(tmp_path, {".flipgate.yml": config(GENERATOR_ENDPOINT),
                                "prompts/answer.prompty": V2_PROMPT})
    repo.commit({"prompts/answer.prompty": V2_PROMPT.replace(*head_change)})
    result, _ = run(repo, tmp_path)
    assert result.exit_code == 2, result.output
    assert "security:" in result.stderr and "prompts/answer.prompty@" in result.stderr
    assert "test-azure-key" not in result.output
    assert azure.requests == []


def test_a_reply_that_calls_a_tool_is_recorded_as_the_call(openai_server: FakeOpenAI,
                                                           tmp_path: Path) -> None:
    prompt = ("---\nmodel:\n  api: chat\n  configuration:\n    type: openai\n    model: m\n"
              "  parameters:\n    tools:\n      - type: function\n        function:\n"
              "          name: lookup_policy\n          parameters: {type: object}\n    tool_choice: auto\n"
              "---\nuser:\n{{ query }}\n")
    repo = make_repo(tmp_path, {".flipgate.yml": config("generator: prompts/answer.prompty\n"),
                                "prompts/answer.prompty": prompt})
    openai_server.on_generation(lambda body: {"tool_calls": [("lookup_policy", {"topic": "refunds"})]})
    out = tmp_path / "answers.jsonl"
    result = CliRunner().invoke(cli, ["replay", "--repo", str(repo.path), "--ref", "base", "--out", str(out),
                                      "--no-cache"])
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in out.read_text().splitlines()]
    assert answers[0]["response"] == 'tool call: lookup_policy({"topic": "refunds"})'
    sent = openai_server.chat_requests()[0].body
    assert sent["tools"][0]["function"]["name"] == "lookup_policy" and sent["tool_choice"] == "auto"


@pytest.mark.parametrize("changed", ["prompts/tools.json", "prompts/base.prompty"])
def test_a_change_to_a_file_the_generator_reads_is_a_prompt_change(openai_server: FakeOpenAI,
                                                                   tmp_path: Path, changed: str) -> None:
    prompt = ("---\nbase: base.prompty\nmodel:\n  api: chat\n  configuration:\n    type: openai\n"
              "    model: m\n  parameters:\n    tools: ${file:tools.json}\n---\nuser:\n{{ query }}\n")
    base_prompty = "---\nmodel:\n  parameters:\n    temperature: 0.1\n---\nunused\n"
    tools = [{"type": "function", "function": {"name": "lookup"}}]
    repo = make_repo(tmp_path, {".flipgate.yml": config("generator: prompts/answer.prompty\n"),
                                "prompts/answer.prompty": prompt, "prompts/base.prompty": base_prompty,
                                "prompts/tools.json": json.dumps(tools)})
    new = {"prompts/tools.json": json.dumps([{"type": "function", "function": {"name": "lookup2"}}]),
           "prompts/base.prompty": base_prompty.replace("0.1", "0.9")}[changed]
    repo.commit({changed: new})
    result, report = run(repo, tmp_path)
    assert result.exit_code == 0, result.output
    assert report["conclusion"] == "success" and report["change"]["files"] == [changed]
    bodies = [r.body for r in openai_server.chat_requests()]
    assert {b["tools"][0]["function"]["name"] for b in bodies} == (
        {"lookup", "lookup2"} if changed.endswith(".json") else {"lookup"})
    assert {b["temperature"] for b in bodies} == ({0.1, 0.9} if changed.endswith(".prompty") else {0.1})
