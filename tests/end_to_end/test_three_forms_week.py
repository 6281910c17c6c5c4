"""Three teams' days from the README's adopt steps (issue 37): a Jinja2 template with the model
in code, a LangChain-style string constant, a GitHub Models `.prompt.yml` with no key. Each:
`flipgate init` (its guesses said, `--model` taken), the first case's request previewed with
no model call, a run that skips, then a prompt change gated. The loopback model server stands
in for the provider (GitHub Models' `base_url` pointed at it, as docs/configuration.md allows)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

CASES = [{"id": f"q{i}", "query": f"What is the fee for item {i}?", "context": f"The fee for item {i} is ${i}.",
          "category": "general"} for i in range(3)]
TEMPLATE = "SYSTEMContext: {{ context }}\nQuestion: {{ question }}\n"
CONSTANT = 'QA_PROMPT = """SYSTEMContext: {context_str}\nQuestion: {query_str}\n"""\n'
PROMPT_YML = ("model: openai/gpt-4.1-mini\nmessages:\n  - role: user\n"
              "    content: 'SYSTEMContext: {{context}}\\nQuestion: {{question}}'\n"
              "testData:\n" + "".join(f"  - question: {c['query']}\n    context: {c['context']}\n"
                                      for c in CASES))
TEAMS = {
    "template": ("prompts/answer.j2", TEMPLATE,
                 ["--generator", "prompts/answer.j2", "--model", "gpt-4o-mini"], "gpt-4o-mini"),
    "constant": ("app/chain.py", CONSTANT, ["--generator", "app/chain.py:QA_PROMPT", "--model",
                                            "gpt-4o-mini"], "gpt-4o-mini"),
    "prompt.yml": ("prompts/answer.prompt.yml", PROMPT_YML, ["--provider", "github"],
                   "openai/gpt-4.1-mini"),
}


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.output


@pytest.mark.parametrize("team", sorted(TEAMS))
def test_a_teams_first_day_reaches_a_verdict_with_only_the_steps_the_docs_name(
        team: str, openai_server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_workflow_token")
    openai_server.on_generation(
        lambda body: ("The fee is $99." if "from memory" in json.dumps(body)
                      else body["messages"][-1]["content"].split("Context: ")[1].split("\n")[0]))
    path, text, flags, model = TEAMS[team]
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({path: text.replace("SYSTEM", "")}, message="the app")

    code, _, said = invoke("init", "--repo", str(repo.path), *flags)
    assert code == 0, said
    assert "guess: " in said and "next:" in said
    assert ("guessed model" in said) is ("--model" not in flags and team != "prompt.yml")
    config = (repo.path / ".flipgate.yml").read_text()
    # The team's own choices: cases, an offline judge, a strict small suite; GitHub Models
    # through the loopback server.
    config = (config.replace("provider: github\n  model: openai/gpt-4.1-mini", "provider: offline")
              .replace("provider: openai\n  model: gpt-4.1-mini", "provider: offline")
              .replace("strict: false", "strict: true")
              .replace("{provider: github}", f"{{provider: github, base_url: '{openai_server.base_url}'}}"))
    files = {".flipgate.yml": config, "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)}
    if team == "prompt.yml":      # its testData are its first cases already
        written = [json.loads(line) for line in (repo.path / "eval/cases.jsonl").read_text().splitlines()]
        assert [(c["query"], c["context"]) for c in written] == [(c["query"], c["context"]) for c in CASES]
        files["eval/cases.jsonl"] = (repo.path / "eval/cases.jsonl").read_text()
    repo.commit(files, message="flipgate")
    repo.branch("base", "HEAD")

    code, shown, said = invoke("replay", "--sample", "--repo", str(repo.path))
    assert code == 0, said
    request = json.loads(shown)
    assert request["model"] == model and "What is the fee for item 0?" in json.dumps(request)
    assert openai_server.requests == []

    out = str(tmp_path / "out")
    code, _, said = invoke("run", "--repo", str(repo.path), "--base", "HEAD", "--head", "HEAD",
                           "--out", out, "--no-cache")
    assert code == 0 and openai_server.requests == [], said

    repo.commit({path: text.replace("SYSTEM", "Quote the price list from memory. ")},
                message="memory")
    code, _, said = invoke("run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                           "--out", out, "--no-cache")
    assert code == 1, said
    report = json.loads(Path(out, "report.json").read_text())
    assert {row["verdict"] for row in report["rows"]} == {"regression"}
    assert {r.body["model"] for r in openai_server.chat_requests("generation")} == {model}
