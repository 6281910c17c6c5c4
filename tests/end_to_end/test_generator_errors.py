"""A generator that fails is a row kind of its own (`generator_error`), never a judge error
and never a pass; when it fails, the model-client variables set here that `generator.env`
did not pass to it are named (names only)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.accounts import command_python
from support.gitrepo import GitRepo

CASES = [{"id": "fee-1", "query": "What is the fee?", "context": "The fee is $1.", "category": "pricing"},
         {"id": "ret-1", "query": "Can I return it?", "context": "Returns within 30 days.",
          "category": "policy"}]
CONFIG = f"""version: 1
cases: eval/cases.jsonl
generator:
  command: {command_python()} -m app.answer
  env: [OPENAI_API_KEY]
  timeout: 20
  watch: [app/**]
judge:
  provider: offline
gate:
  blocking_categories: [pricing]
  strict: true
"""
# The application's client needs OPENAI_BASE_URL (a local gateway); without it, its own
# connection error is all it says.
APP = """import json, os, sys
for line in sys.stdin:
    case = json.loads(line)
    if not os.environ.get("OPENAI_BASE_URL"):
        sys.exit("openai.APIConnectionError: Connection error.")
    print(json.dumps({"id": case["id"], "response": case["context"]}), flush=True)
"""
SECRET_URL = "http://127.0.0.1:9/v1-gateway-only-here"


def test_a_failing_application_is_a_generator_error_naming_the_variable_it_did_not_get(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", SECRET_URL)
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG, "app/__init__.py": "", "app/answer.py": APP,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)}, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"app/answer.py": APP + "# a change\n"}, message="head")

    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--out", str(out), "--no-cache"])

    assert result.exit_code == 3, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["conclusion"] == "error"
    assert report["counts"]["generator_errors"] == 2 and report["counts"]["errors"] == 0
    assert {row["verdict"] for row in report["rows"]} == {"error"}
    hint = "OPENAI_BASE_URL is set here but not passed to the command; add it to generator.env"
    assert all(any(hint in error for error in row["errors"]) for row in report["rows"])
    comment = (out / "comment.md").read_text()
    assert "Generator errors" in comment and "Judge errors" not in comment
    assert hint.replace("_", "\\_") in comment  # as Markdown escapes it
    assert "the generator gave no answer on 2 rows" in comment
    assert "the generator gave no answer on 2 rows" in result.output
    page = (out / "report.html").read_text()
    assert "2 generator errors" in page and "judge errors" not in page
    assert "generator error" in result.output and "judge error" not in result.output
    everything = result.output + comment + page + (out / "report.json").read_text()
    assert SECRET_URL not in everything


PROMPTY_CONFIG = """version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: offline
gate:
  blocking_categories: [pricing]
  strict: true
"""
PROMPTY = """---
name: answer
model:
  api: chat
  configuration:
    type: openai
    model: gen-1
---
system:
Answer from the context.
user:
{{ query }}QUEUE
Context: {{ context }}
"""


def test_a_case_the_candidates_template_cannot_render_is_a_generator_error_row(
        openai_server: Any, tmp_path: Path) -> None:
    openai_server.on_generation(lambda body: body["messages"][-1]["content"].split("Context: ")[1])
    cases = [{**CASES[0], "queue": 1}, {**CASES[1], "queue": "front desk"}]
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": PROMPTY_CONFIG, "prompts/answer.prompty": PROMPTY.replace("QUEUE", ""),
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in cases)}, message="base")
    repo.branch("base", "HEAD")
    # The head counts queues: a number for one case, text (a TypeError) for the other.
    repo.commit({"prompts/answer.prompty": PROMPTY.replace("QUEUE", " (queue {{ queue + 1 }})")})

    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--out", str(out), "--no-cache"])

    assert result.exit_code == 3, result.output
    report = json.loads((out / "report.json").read_text())
    assert (report["counts"]["generator_errors"], report["counts"]["errors"]) == (1, 0)
    rows = {row["id"]: row for row in report["rows"]}
    assert rows["fee-1"]["verdict"] == "unchanged"
    [error] = rows["ret-1"]["errors"]
    assert error.startswith("candidate generator: the template gave no answer: "
                            "prompts/answer.prompty:12: template error: TypeError")
    # Nothing was asked for the case the template could not render.
    asked = [r.body["messages"][-1]["content"] for r in openai_server.chat_requests("generation")]
    assert len(asked) == 2 and not any("Can I return it?" in text for text in asked)


def test_a_run_a_rate_limit_stops_keeps_a_template_failure_a_generator_error(
        openai_server: Any, tmp_path: Path) -> None:
    """The judge's limit is spent after the first row: the row the head's template could not
    render is still a generator error, the finished row is kept, the one left is not run."""
    openai_server.on_generation(lambda body: body["messages"][-1]["content"].split("Context: ")[1]
                                + (" Ask the desk." if "queue" in body["messages"][-1]["content"] else ""))
    cases = [{**CASES[0], "queue": 1}, {**CASES[1], "queue": "front desk"},
             {**CASES[0], "id": "fee-2", "context": "The fee is $2.", "queue": 2}]
    config = PROMPTY_CONFIG.replace("  provider: offline\n", "  provider: openai\n  model: judge-1\n"
                                    "  max_wait: 2\n") + "concurrency: 1\nrelevance: {questions: 1}\n"
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": config, "prompts/answer.prompty": PROMPTY.replace("QUEUE", ""),
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in cases)}, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPTY.replace("QUEUE", " (queue {{ queue + 1 }})")})
    # The probes, four answers, then the first row's two groundedness requests (the relevance
    # pass asks after them, one request at a time), and two to spare for the pacing's margin.
    openai_server.rate_limit(rate=0.0001, burst=2 + 4 + 2 + 2, retry_after=False)

    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--out", str(out), "--no-cache"])

    assert result.exit_code == 3, result.output
    report = json.loads((out / "report.json").read_text())
    verdicts = {row["id"]: row["verdict"] for row in report["rows"]}
    assert verdicts["ret-1"] == "error" and report["counts"]["generator_errors"] == 1, verdicts
    assert "not_run" in verdicts.values() and verdicts["fee-1"] != "error", verdicts
    assert report["counts"]["not_run"] == list(verdicts.values()).count("not_run")
