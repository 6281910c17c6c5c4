"""A repository whose main moves on while branches are open: each branch is judged for
what it changes (merge base -> head), as it would land (the base with its changes),
through `flipgate run` and through the action.

main:  pre-adoption --- adoption --- prompt fix (rules: never add fees)
            \\              |\\ \\
           early         readme, generous (changes the prompt), clash (edits the rules too)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.github import action
from flipgate.github.texts import NO_CHANGE

from support.action_harness import PR, Harness
from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

CONFIG = """version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
  max_retries: 0
gate:
  blocking_categories: [policy]
  strict: true
"""
CASES = "".join(json.dumps(case) + "\n" for case in [
    {"id": "refund-007", "category": "policy", "query": "How long do refunds take?",
     "context": "Refunds are issued within 30 days of the request."},
    {"id": "card-002", "category": "cards", "query": "Is a replacement card free?",
     "context": "One replacement card a year is free of charge."},
])
PROMPT = """---
name: answer
model:
  api: chat
  configuration:
    type: openai
    model: gen-1
---
system:
You answer bank questions. {% include 'rules.j2' %}
user:
{{ query }}
Context: {{ context }}
"""
GENEROUS = PROMPT.replace("You answer bank questions.", "You answer bank questions generously.")
RULES = "Use only the context.\n"
FIXED_RULES = "Use only the context. Never add fees.\n"
CLASHING_RULES = "Use only the context. Be brief.\n"


def generation(body: dict[str, Any]) -> str:
    """The generous prompt invents a fee for refunds, unless the rules forbid fees."""
    system = body["messages"][0]["content"]
    context = body["messages"][-1]["content"].split("Context: ", 1)[1].split("\n", 1)[0]
    invents = "generously" in system and "Never add fees" not in system and "Refunds" in context
    return context + (" A $12 processing fee applies." if invents else "")


@dataclass
class Living:
    repo: GitRepo
    adoption: str
    main: str
    branches: dict[str, str]


def living_repository(path: Path) -> Living:
    """main adopts flipgate, branches are cut, then main fixes its prompt's rules."""
    repo = GitRepo.create(path)
    before = repo.commit({"prompts/answer.prompty": PROMPT, "prompts/rules.j2": RULES,
                          "README.md": "# bank bot\n"}, message="the bot, before flipgate")
    adoption = repo.commit({".flipgate.yml": CONFIG, "eval/cases.jsonl": CASES},
                           message="adopt flipgate")
    branches = {}
    for name, files, start in [
            ("early", {"README.md": "# bank bot\nHow to run it.\n"}, before),
            ("readme", {"README.md": "# bank bot\nNow with docs.\n"}, adoption),
            ("generous", {"prompts/answer.prompty": GENEROUS}, adoption),
            ("clash", {"prompts/rules.j2": CLASHING_RULES}, adoption)]:
        repo.checkout(start)
        branches[name] = repo.commit(files, message=name)
        repo.branch(name, branches[name])
    repo.checkout("main")
    main = repo.commit({"prompts/rules.j2": FIXED_RULES}, message="rules: never add fees")
    return Living(repo=repo, adoption=adoption, main=main, branches=branches)


@pytest.fixture
def living(tmp_path: Path) -> Living:
    return living_repository(tmp_path / "repo")


@pytest.fixture
def server(openai_server: FakeOpenAI) -> FakeOpenAI:
    openai_server.on_generation(generation)
    openai_server.on_groundedness(lambda query, context, response, call_index:
                                  1 if "$12" in (response or "") else 5)
    return openai_server


def run(living: Living, tmp_path: Path, branch: str) -> tuple[Any, dict[str, Any] | None]:
    out = tmp_path / f"out-{branch}"
    result = CliRunner().invoke(cli, ["run", "--repo", str(living.repo.path), "--base", "main",
                                      "--head", branch, "--out", str(out),
                                      "--cache", str(tmp_path / "cache")])
    report = out / "report.json"
    return result, json.loads(report.read_text()) if report.exists() else None


# --- flipgate run ---------------------------------------------------------------------

def test_a_readme_branch_cut_before_mains_fix_is_skipped_and_calls_no_model(
        server: FakeOpenAI, living: Living, tmp_path: Path) -> None:
    result, report = run(living, tmp_path, "readme")
    assert result.exit_code == 0, result.output
    assert report is not None and report["conclusion"] == "skipped"
    assert server.requests == []
    assert report["merge_base"] == living.adoption
    assert report["head_sha"] == living.branches["readme"]
    assert f"Merge base {living.adoption[:7]}" in result.stderr


def test_a_prompt_branch_is_judged_as_it_would_land_with_mains_fix(
        server: FakeOpenAI, living: Living, tmp_path: Path) -> None:
    result, report = run(living, tmp_path, "generous")
    # The branch's tip alone invents a fee (its rules predate the fix); merged, it does not.
    assert result.exit_code == 0, result.output
    assert report is not None and report["conclusion"] == "success"
    assert report["merge_base"] == living.adoption
    assert report["head_sha"] == living.branches["generous"]
    candidate = [r for r in server.chat_requests("generation")
                 if "generously" in r.body["messages"][0]["content"]]
    assert len(candidate) == 2
    assert all("Never add fees" in r.body["messages"][0]["content"] for r in candidate)
    # What changed is the PR's own diff: its prompt, not main's rules.
    assert report["change"]["files"] == ["prompts/answer.prompty"]
    assert "+You answer bank questions generously." in report["change"]["template_diff"]
    assert "rules.j2@" not in report["change"]["template_diff"]
    assert "Never add fees" not in report["change"]["template_diff"]
    assert "the candidate is the base with that change merged in" in result.stderr


def test_a_branch_cut_before_adoption_is_not_told_it_deletes_the_configuration(
        server: FakeOpenAI, living: Living, tmp_path: Path) -> None:
    result, report = run(living, tmp_path, "early")
    assert result.exit_code == 0, result.output
    assert report is not None and report["conclusion"] == "skipped"
    assert server.requests == []
    assert not any(".flipgate.yml" in note or "cases" in note for note in report["notes"]
                   if "changes" in note)
    comment = (tmp_path / "out-early" / "comment.md").read_text()
    assert "removed" not in comment and "changes .flipgate.yml" not in comment


def test_a_branch_whose_rules_conflict_with_main_is_exit_2_naming_the_file(
        server: FakeOpenAI, living: Living, tmp_path: Path) -> None:
    result, _ = run(living, tmp_path, "clash")
    assert result.exit_code == 2, result.output
    assert "prompts/rules.j2" in result.stderr and "resolve the conflict" in result.stderr
    assert "Traceback" not in result.output
    assert server.requests == []


def test_a_conflict_only_in_a_file_the_generator_does_not_read_is_no_error(
        server: FakeOpenAI, living: Living, tmp_path: Path) -> None:
    living.repo.commit({"README.md": "# bank bot\nmain's own docs.\n"})
    result, report = run(living, tmp_path, "readme")  # conflicts with main in README.md only
    assert result.exit_code == 0, result.output
    assert report is not None and report["conclusion"] == "skipped"
    assert server.requests == []


# --- the action -----------------------------------------------------------------------

@dataclass
class Action:
    harness: Harness
    branches: dict[str, str]
    monkeypatch: pytest.MonkeyPatch

    def pull(self, branch: str) -> int:
        """A pull request from `branch` into main, run as the container runs the action."""
        harness = self.harness
        harness.head = self.branches[branch]
        harness.server.add_pull(PR, base_sha=harness.base, head_sha=harness.head)
        harness.pull_event()
        for name, value in harness.env.items():
            self.monkeypatch.setenv(name, value)
        return action.main(os.environ, stream=harness.log)


@pytest.fixture
def workspace(harness: Harness, server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch,
              tmp_path: Path) -> Action:
    living = living_repository(tmp_path / "service")
    harness.repo, harness.base = living.repo, living.main
    harness.env["GITHUB_WORKSPACE"] = str(living.repo.path)
    harness.env["INPUT_OPENAI-API-KEY"] = "sk-from-the-input"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return Action(harness, living.branches, monkeypatch)


def test_the_action_skips_a_readme_branch_however_far_main_moved(
        workspace: Action, server: FakeOpenAI) -> None:
    harness = workspace.harness
    assert workspace.pull("readme") == 0, harness.log.getvalue()[-2000:]
    assert server.requests == []
    assert harness.final_status()["description"] == NO_CHANGE


def test_the_action_skips_a_branch_cut_before_adoption_without_calling_it_a_deletion(
        workspace: Action, server: FakeOpenAI) -> None:
    harness = workspace.harness
    assert workspace.pull("early") == 0, harness.log.getvalue()[-2000:]
    assert server.requests == [] and harness.own_comments() == []
    assert harness.final_status()["description"] == NO_CHANGE
    assert "changes .flipgate.yml" not in harness.log.getvalue()


def test_the_action_judges_a_prompt_branch_merged_and_sets_the_status_on_its_head(
        workspace: Action, server: FakeOpenAI) -> None:
    harness = workspace.harness
    assert workspace.pull("generous") == 0, harness.log.getvalue()[-2000:]
    final = harness.final_status(harness.head)
    assert final["state"] == "success"
    candidate = [r for r in server.chat_requests("generation")
                 if "generously" in r.body["messages"][0]["content"]]
    assert candidate and all("Never add fees" in r.body["messages"][0]["content"]
                             for r in candidate)
    report = json.loads((harness.repo.path / "flipgate-out/report.json").read_text())
    assert report["head_sha"] == harness.head and report["merge_base"]
    assert f"flipgate: Merge base {report['merge_base'][:7]}" in harness.log.getvalue()


def test_the_action_refuses_a_conflicting_branch_with_an_error_and_no_model_call(
        workspace: Action, server: FakeOpenAI) -> None:
    harness = workspace.harness
    assert workspace.pull("clash") == 2, harness.log.getvalue()[-2000:]
    assert server.requests == []
    final = harness.final_status()
    assert final["state"] == "error"
    [comment] = harness.own_comments()
    assert "resolve the conflict" in comment["body"] and "prompts/rules.j2" in comment["body"]


# --- nothing passes silently ----------------------------------------------------------

def test_a_watch_glob_that_matches_no_file_is_exit_2_naming_it(
        server: FakeOpenAI, living: Living, tmp_path: Path) -> None:
    living.repo.commit({".flipgate.yml": CONFIG + "watch: [src/prompt_code/**, prompts/**]\n"})
    result, _ = run(living, tmp_path, "readme")
    assert result.exit_code == 2, result.output
    assert "watch: 'src/prompt_code/**' matches no file" in result.stderr
    assert "prompts/**" not in result.stderr  # the pattern that matches is not named
    assert server.requests == []


@pytest.mark.parametrize(("suite", "said"), [
    ("    watch: [prompts/billing/**]\n",
     "watch (suite billing): 'prompts/billing/**' matches no file"),
    ("    generator: prompts/billing.prompty\n", "prompts/billing.prompty: not found at git ref"),
])
def test_a_suites_path_that_matches_no_file_is_exit_2_naming_it(
        server: FakeOpenAI, living: Living, tmp_path: Path, suite: str, said: str) -> None:
    living.repo.commit({".flipgate.yml": CONFIG + "suites:\n  - name: support\n"
                        "  - name: billing\n" + suite})
    result, _ = run(living, tmp_path, "generous")
    assert result.exit_code == 2, result.output
    assert said in result.stderr
    assert server.requests == []
