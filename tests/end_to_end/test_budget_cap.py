"""The budget is a hard cap (issue 9, item 4): a run with huge head prompts sends nothing
whose worst case would pass `budget.max_tokens`, and stops with exit 3 saying what it refused."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from flipgate.cli import cli

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

MAX_TOKENS = 1000
CONFIG = f"""version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
concurrency: 8
judge:
  provider: openai
  model: judge-pinned
budget:
  max_tokens: {MAX_TOKENS}
"""
PROMPT = """---
name: answer
model:
  api: chat
  configuration:
    type: openai
    model: gpt-4o-mini
  parameters:
    max_tokens: 20
---
system:
Answer briefly.{padding}
user:
{{{{ query }}}}
"""
CASES = [{"id": f"case-{i}", "query": f"Question {i}?", "context": f"Fact {i}.", "category": "general"}
         for i in range(16)]


def test_huge_head_prompts_never_reach_the_server_and_the_run_says_what_it_refused(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES),
                 "prompts/answer.prompty": PROMPT.format(padding="")}, message="base")
    repo.branch("base", "HEAD")
    # 400,000 words, rendered by a loop: the file stays under the generator size cap and
    # the rendering under the sandbox's 1,000,000-character output cap.
    repo.commit({"prompts/answer.prompty": PROMPT.format(
        padding="{% for i in range(400) %}{% for j in range(1000) %} a{% endfor %}{% endfor %}")})

    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                      "--out", str(tmp_path / "out"), "--no-cache"])

    assert result.exit_code == 3, result.output
    assert "budget.max_tokens (1000)" in result.stderr and "refused it" in result.stderr
    received = openai_server.chat_requests()
    assert all(len(r.text) < 1000 for r in received)  # no huge prompt was sent
    # What the server saw, at its worst (every byte a token, every reply at max_tokens),
    # fits in the budget.
    worst = sum(len(r.text.encode()) + r.body.get("max_tokens", 4096) for r in received)
    assert worst <= MAX_TOKENS
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["conclusion"] == "error"
    budget = report["budget"]
    assert budget["refused_requests"] >= 1 and budget["refused_tokens"] > 800_000
    assert budget["spent_tokens"] <= MAX_TOKENS and budget["reserved_tokens"] == 0
