"""`flipgate action` running the real pipeline against the loopback OpenAI and GitHub
servers, and the console script as the container runs it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flipgate.github import action
from flipgate.github.messages import NO_CHANGE, STATUS_LIMIT
from flipgate.github.sticky import sha_marker

from support.action_harness import BLOCKED, COULD_NOT_FINISH, PR, Harness
from support.gitrepo import GitRepo

CONFIG = """\
version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
gate:
  blocking_categories: [policy]
relevance:
  threshold: 0.7
  embedding_model: text-embedding-3-small
"""
PROMPTY = """\
---
name: answer
model:
  api: chat
  configuration:
    type: openai
    model: gen-1
  parameters:
    temperature: 0
---
system:
{system}

user:
Context: {{{{context}}}}
Question: {{{{query}}}}
"""
CASES = "\n".join(json.dumps(case) for case in [
    {"id": "refund-007", "category": "policy", "query": "How long do refunds take?",
     "context": "Refunds are issued within 30 days of the request."},
    {"id": "card-002", "category": "cards", "query": "Is a replacement card free?",
     "context": "One replacement card a year is free of charge."},
]) + "\n"
CAREFUL = "Answer only from the context."
GENEROUS = "Be helpful and complete; add whatever the customer may need."


def scripted_generation(body: dict[str, Any]) -> str:
    """Answers with the context, except that the generous prompt invents a fee for refunds."""
    system = body["messages"][0]["content"]
    context = body["messages"][-1]["content"].split("Context: ", 1)[1].split("\n", 1)[0]
    invents = "helpful" in system and "Refunds" in context
    return context + (" A $12 processing fee applies." if invents else "")


@dataclass
class Pipeline:
    harness: Harness
    openai: Any
    monkeypatch: pytest.MonkeyPatch

    def run(self) -> int:
        """`flipgate action` in the real process environment, as the container runs it."""
        for name, value in self.harness.env.items():
            self.monkeypatch.setenv(name, value)
        return action.main(stream=self.harness.log)


@pytest.fixture
def pipeline(harness: Harness, openai_server: Any, monkeypatch: pytest.MonkeyPatch,
             tmp_path: Path) -> Pipeline:
    """A repository the real pipeline can check: the head's prompt invents a fee."""
    repo = GitRepo.create(tmp_path / "service")
    harness.base = repo.commit({".flipgate.yml": CONFIG, "eval/cases.jsonl": CASES,
                                "prompts/answer.prompty": PROMPTY.format(system=CAREFUL)})
    harness.head = repo.commit({"prompts/answer.prompty": PROMPTY.format(system=GENEROUS)})
    harness.repo = repo
    harness.server.add_pull(PR, base_sha=harness.base, head_sha=harness.head)
    harness.env["GITHUB_WORKSPACE"] = str(repo.path)
    harness.env["INPUT_OPENAI-API-KEY"] = "sk-from-the-input"
    monkeypatch.delenv("OPENAI_API_KEY")  # the key arrives as the action input only
    openai_server.on_generation(scripted_generation)
    openai_server.on_groundedness(lambda query, context, response, call_index:
                                  1 if "$12" in (response or "") else 5)
    return Pipeline(harness, openai_server, monkeypatch)


def test_end_to_end_a_blocking_regression(pipeline: Pipeline) -> None:
    harness, openai = pipeline.harness, pipeline.openai
    harness.pull_event()

    assert pipeline.run() == 1, harness.log.getvalue()[-3000:]

    [comment] = harness.own_comments()
    assert BLOCKED in comment["body"] and "refund-007" in comment["body"]
    final = harness.final_status()
    assert final["state"] == "failure" and "1 blocking regression" in final["description"]
    assert [s["state"] for s in harness.server.statuses_for(harness.head)] == ["pending",
                                                                              "failure"]
    assert {r.model for r in openai.chat_requests("groundedness")} == {"judge-pinned"}
    assert {r.model for r in openai.chat_requests("generation")} == {"gen-1"}
    assert {r.headers.get("Authorization") for r in openai.requests} == {
        "Bearer sk-from-the-input"}
    assert harness.outputs() == {"conclusion": "failure", "regressions": "1",
                                 "report": "flipgate-out/report.json"}
    report = json.loads((harness.repo.path / "flipgate-out/report.json").read_text())
    assert report["counts"]["blocking_regressions"] == 1
    written = (harness.repo.path / "flipgate-out/comment.md").read_text(encoding="utf-8")
    assert comment["body"].replace(sha_marker(harness.head), "", 1) == written
    assert BLOCKED in harness.summary()
    assert "::add-mask::sk-from-the-input" in harness.log.getvalue()


def test_end_to_end_no_change_makes_no_model_call(pipeline: Pipeline) -> None:
    harness = pipeline.harness
    harness.repo.checkout(harness.base)  # a PR that touches only the docs
    harness.head = harness.repo.commit({"README.md": "docs only\n"})
    harness.server.push(PR, harness.head)
    harness.pull_event()

    assert pipeline.run() == 0

    assert pipeline.openai.requests == [] and harness.own_comments() == []
    assert harness.final_status()["description"] == NO_CHANGE


def test_end_to_end_judge_failure_is_an_error_status_and_comment(pipeline: Pipeline) -> None:
    harness = pipeline.harness
    pipeline.openai.on_groundedness(lambda query, context, response, call_index:
                                    "the judge rambles instead of answering JSON")
    harness.pull_event()

    assert pipeline.run() == 3

    final = harness.final_status()
    assert final["state"] == "error" and "judge error" in final["description"]
    assert COULD_NOT_FINISH in harness.own_comments()[0]["body"]


def test_end_to_end_a_readers_command_makes_no_model_call(pipeline: Pipeline) -> None:
    harness = pipeline.harness
    harness.server.grant("visitor", "triage")
    harness.comment_event("/flipgate run", author="visitor")

    assert pipeline.run() == 0

    assert pipeline.openai.requests == [] and harness.server.statuses == []
    assert "Nothing was run" in harness.replies()[0]


def test_end_to_end_a_writers_command_reruns(pipeline: Pipeline) -> None:
    harness = pipeline.harness
    harness.comment_event("/flipgate run")

    assert pipeline.run() == 1, harness.log.getvalue()[-3000:]

    assert harness.final_status()["state"] == "failure"
    assert pipeline.openai.chat_requests("generation")


def test_end_to_end_an_api_that_keeps_failing_is_an_error_that_says_why(
        pipeline: Pipeline) -> None:
    harness = pipeline.harness
    pipeline.openai.fail("generation", status=500, times=1000)
    harness.pull_event()

    assert pipeline.run() == 3

    final = harness.final_status()
    assert final["state"] == "error" and final["description"].startswith("could not finish: ")
    assert len(final["description"]) <= STATUS_LIMIT
    assert COULD_NOT_FINISH in harness.own_comments()[0]["body"]
    assert harness.outputs()["conclusion"] == "error"


def test_the_console_script_is_the_action_and_reads_hyphenated_inputs(harness: Harness) -> None:
    """`flipgate action` in its own process, as the image's ENTRYPOINT runs it."""
    import os
    import subprocess
    import sys

    harness.server.grant("visitor", "read")
    harness.comment_event("/flipgate run", author="visitor")
    script = Path(sys.executable).with_name("flipgate")
    env = {"PATH": os.environ["PATH"], "HOME": str(harness.tmp), **harness.env}

    done = subprocess.run([str(script), "action"], env=env, capture_output=True, text=True,
                          timeout=60, check=False)

    assert done.returncode == 0, done.stderr
    assert f"::add-mask::{harness.server.token}" in done.stdout
    assert "refused" in done.stdout and done.stderr == ""
    assert "Nothing was run" in harness.replies()[0]
