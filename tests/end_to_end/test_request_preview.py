"""`flipgate replay --sample [--case ID] [--ref REF]` (issue 37, point 2): for every form, the
request a case would send, printed without a model call, and exactly what `flipgate replay`
then sends for that case. Real git repositories, the real CLI, the loopback model server
(which must see nothing from a preview)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI
from support.runs import repo_with_base

CASES = [
    {"id": "refund-007", "query": "How long do I have to return a kettle?",
     "context": "Refunds are accepted within 30 days of purchase.", "category": "policy"},
    {"id": "card-002", "query": "How do I freeze my card?",
     "context": "Freeze your card in the app under Card settings.", "category": "cards"},
]
JUDGE = "judge:\n  provider: offline\n"


def config(generator: str) -> str:
    return f"version: 1\ncases: eval/cases.jsonl\n{generator}{JUDGE}"


PROMPTY = """---
name: answer
model:
  api: chat
  configuration: {type: openai, model: gpt-4o-mini}
  parameters: {temperature: 0, max_tokens: 200}
sample: {question: sample question, context: sample context}
---
system:
Answer only from the context.

user:
Context: {{context}}
Question: {{question}}
"""
PROMPT_YML = """name: Bank answers
model: openai/gpt-4.1-mini
modelParameters: {maxTokens: 300, temperature: 0.1}
messages:
  - role: system
    content: 'Answer from the context only. Context: {{context}}'
  - role: user
    content: '{{query}}'
"""
CONSTANT = 'QA = """Context: {context}\nQuestion: {question}\nAnswer briefly."""\n'

FORMS: dict[str, tuple[str, dict[str, str]]] = {
    "prompty": ("generator:\n  path: prompts/answer.prompty\n  variables: {question: query}\n",
                {"prompts/answer.prompty": PROMPTY}),
    "github": ("generator:\n  path: prompts/answer.prompt.yml\n  endpoint: {provider: github, "
               "base_url: BASE_URL}\n", {"prompts/answer.prompt.yml": PROMPT_YML}),
    "template": ("generator:\n  template: prompts/answer.j2\n  model: gpt-4.1-mini\n"
                 "  parameters: {temperature: 0}\n  variables: {question: query}\n",
                 {"prompts/answer.j2": "Context: {{ context }}\nQuestion: {{ question }}\n"}),
    "python": ("generator:\n  python: app/prompts.py:QA\n  model: gpt-4.1-nano\n"
               "  variables: {question: query}\n", {"app/prompts.py": CONSTANT}),
}


@pytest.fixture
def server(openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    monkeypatch.setenv("GITHUB_TOKEN", "test-github-token")
    openai_server.on_generation(lambda body: "An answer.")
    return openai_server


def make_repo(tmp_path: Path, form: str, server: FakeOpenAI) -> GitRepo:
    generator, files = FORMS[form]
    generator = generator.replace("BASE_URL", f"'{server.base_url}'")
    return repo_with_base(tmp_path, CASES, {".flipgate.yml": config(generator), **files})


def preview(repo: GitRepo, *args: str) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(cli, ["replay", "--sample", "--repo", str(repo.path), *args])
    return result.exit_code, json.loads(result.stdout) if result.exit_code == 0 else {}, result.output


@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_preview_is_what_replay_then_sends_and_it_sends_nothing(
        server: FakeOpenAI, tmp_path: Path, form: str) -> None:
    repo = make_repo(tmp_path, form, server)
    code, shown, output = preview(repo, "--case", "card-002")
    assert code == 0, output
    assert server.requests == []                       # no model call, not even a probe
    assert shown["case"] == "card-002"
    assert "How do I freeze my card?" in json.dumps(shown["messages"])

    out = tmp_path / "answers.jsonl"
    result = CliRunner().invoke(cli, ["replay", "--repo", str(repo.path), "--ref", "HEAD",
                                      "--out", str(out), "--no-cache"])
    assert result.exit_code == 0, result.output
    sent = next(r.body for r in server.chat_requests("generation")
                if "freeze" in json.dumps(r.body))
    assert sent["model"] == shown["model"]
    assert sent["messages"] == shown["messages"]
    assert {k: v for k, v in sent.items() if k not in ("model", "messages")} == shown["parameters"]


def test_without_case_it_takes_the_first_and_ref_picks_the_commit(
        server: FakeOpenAI, tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "template", server)
    repo.commit({"prompts/answer.j2": "Be brief.\nContext: {{ context }}\nQ: {{ question }}\n"})
    code, head, output = preview(repo)
    assert code == 0, output
    assert head["case"] == "refund-007" and head["messages"][0]["content"].startswith("Be brief.")
    code, base, output = preview(repo, "--ref", "base")
    assert code == 0, output
    assert base["messages"][0]["content"].startswith("Context: Refunds")
    assert base["model"] == "gpt-4.1-mini" and base["parameters"] == {"temperature": 0}
    assert server.requests == []


def test_an_unknown_case_is_one_line_naming_the_ids(server: FakeOpenAI, tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "python", server)
    code, _, output = preview(repo, "--case", "nope")
    assert code == 2
    assert "--case: no case 'nope' in eval/cases.jsonl (its ids: refund-007, card-002)" in output
    assert "Traceback" not in output and server.requests == []


def test_the_apps_own_code_shows_the_line_it_reads_and_says_why_no_request(
        server: FakeOpenAI, tmp_path: Path) -> None:
    generator = "generator:\n  command: python3 -m app.answer\n  watch: [app/**]\n"
    repo = repo_with_base(tmp_path, CASES, {".flipgate.yml": config(generator),
                                            "app/answer.py": "raise SystemExit('never run')\n"})
    code, shown, output = preview(repo, "--case", "card-002")
    assert code == 0, output
    assert shown["form"] == "command" and "cannot show it" in shown["note"]
    assert shown["stdin"]["id"] == "card-002" and shown["stdin"]["query"] == CASES[1]["query"]
    assert "never run" not in output and server.requests == []


def test_a_prompty_file_named_with_generator_still_renders_its_own_sample(
        server: FakeOpenAI, tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "prompty", server)
    code, shown, output = preview(repo, "--generator", "prompts/answer.prompty")
    assert code == 0, output
    assert "sample question" in shown["messages"][-1]["content"] and server.requests == []
