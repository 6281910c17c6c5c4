"""Attacks on which base judges a pull request (issue 22, items 1 and 2).

`main` (the default branch) adopted flipgate with a blocking category; an older
branch `legacy` has no `.flipgate.yml`. A fork's head that blocks against main
carries its own `.flipgate.yml` with `blocking_categories: []` and targets
`legacy`, so that no trusted configuration judges it, then retargets to main.
The real pipeline runs against the loopback OpenAI and GitHub servers.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flipgate.github import action
from flipgate.run.pipeline import run_check

from support.action_harness import BLOCKED, PR, Harness
from support.gitrepo import GitRepo
from support.prompts import WITH_SYSTEM, fee_when_helpful

CONFIG = """\
version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
gate:
  blocking_categories: [policy]
  strict: true
{extra}"""
PROMPTY = WITH_SYSTEM
CASES = json.dumps({"id": "refund-007", "category": "policy", "query": "How long do refunds take?",
                    "context": "Refunds are issued within 30 days of the request."}) + "\n"
CAREFUL, GENEROUS = "Answer only from the context.", "Be helpful; add whatever may help."
# The head's own gate: nothing blocks.
LAX = CONFIG.format(extra="").replace("[policy]", "[]")


@dataclass
class Repo:
    harness: Harness
    openai: Any
    monkeypatch: pytest.MonkeyPatch
    commits: dict[str, str]

    def run(self, check: Any = None) -> int:
        for name, value in self.harness.env.items():
            self.monkeypatch.setenv(name, value)
        return action.main(os.environ, stream=self.harness.log, check=check)

    def pull(self, base_ref: str, *, fork: bool = True) -> None:
        self.harness.server.add_pull(PR, base_sha=self.commits[base_ref],
                                     head_sha=self.harness.head, fork=fork, base_ref=base_ref)

    def pull_event(self, base_ref: str, **kwargs: Any) -> None:
        self.harness.pull_event(event_name="pull_request_target", fork=True,
                                base=self.commits[base_ref], base_ref=base_ref, **kwargs)

    def statuses(self) -> list[str]:
        return [s["state"] for s in self.harness.server.statuses_for(self.harness.head)]


@pytest.fixture
def repo(harness: Harness, openai_server: Any, monkeypatch: pytest.MonkeyPatch,
         tmp_path: Path) -> Repo:
    """legacy (no configuration) <- main (adopted, blocks `policy`) <- release/1 (its own
    configuration) ; the fork's head, on main, loosens the prompt and its own gate."""
    git = GitRepo.create(tmp_path / "service")
    legacy = git.commit({"prompts/answer.prompty": PROMPTY.format(system=CAREFUL),
                         "eval/cases.jsonl": CASES})
    main = git.commit({".flipgate.yml": CONFIG.format(extra="  base_branches: [main, "
                                                              "\"release/*\"]\n")})
    release = git.commit({".flipgate.yml": CONFIG.format(extra="")})
    git.checkout(main)
    harness.head = git.commit({".flipgate.yml": LAX,
                               "prompts/answer.prompty": PROMPTY.format(system=GENEROUS)})
    harness.repo, harness.base = git, main
    harness.env["GITHUB_WORKSPACE"] = str(git.path)
    harness.env["INPUT_OPENAI-API-KEY"] = "sk-from-the-input"
    harness.env["INPUT_FORK-POLICY"] = "run"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    commits = {"main": main, "legacy": legacy, "release/1": release, "release/2": legacy}
    harness.server.branches.update(commits)
    openai_server.on_generation(fee_when_helpful)
    openai_server.on_groundedness(lambda query, context, response, call_index:
                                  1 if "$12" in (response or "") else 5)
    return Repo(harness, openai_server, monkeypatch, commits)


def refused(repo: Repo, base: str) -> None:
    """No verdict, no model call, `error` naming the base and the setting."""
    harness = repo.harness
    assert repo.openai.requests == []
    final = harness.final_status()
    assert final["state"] == "error" and base in final["description"], final
    [comment] = harness.own_comments()
    assert f"`{base}`" in comment["body"] and "`gate.base_branches`" in comment["body"]
    assert "success" not in repo.statuses()


def test_control_a_pr_to_main_blocks(repo: Repo) -> None:
    repo.pull("main")
    repo.pull_event("main")

    assert repo.run() == 1, repo.harness.log.getvalue()[-3000:]

    assert repo.harness.final_status()["state"] == "failure"
    assert BLOCKED in repo.harness.own_comments()[0]["body"]


def test_a_pr_to_an_unconfigured_branch_gets_no_verdict_from_its_own_gate(repo: Repo) -> None:
    repo.pull("legacy")
    repo.pull_event("legacy")

    assert repo.run() == 2, repo.harness.log.getvalue()[-3000:]

    refused(repo, "legacy")
    assert "is not in gate.base_branches" in repo.harness.final_status()["description"]
    assert "not a trusted base" in repo.harness.own_comments()[0]["body"]


def test_retargeted_to_main_the_pr_is_judged_by_main(repo: Repo) -> None:
    """The edit that moves the base re-evaluates: the error on legacy never becomes a
    success, and main's gate blocks."""
    repo.pull("legacy")
    repo.pull_event("legacy")
    assert repo.run() == 2
    repo.harness.server.retarget(PR, "main")
    repo.pull_event("main", action_name="edited",
                    changes={"base": {"ref": {"from": "legacy"},
                                      "sha": {"from": repo.commits["legacy"]}}})

    assert repo.run() == 1, repo.harness.log.getvalue()[-3000:]

    assert repo.statuses() == ["pending", "error", "pending", "failure"]


def test_a_trusted_release_branch_is_judged_by_its_own_configuration(repo: Repo) -> None:
    repo.pull("release/1")
    repo.pull_event("release/1")

    assert repo.run() == 1, repo.harness.log.getvalue()[-3000:]

    assert repo.harness.final_status()["state"] == "failure"
    assert {r.model for r in repo.openai.chat_requests("groundedness")} == {"judge-pinned"}


def test_a_trusted_pattern_without_a_configuration_never_reads_the_heads(repo: Repo) -> None:
    repo.pull("release/2")  # matches release/*, but its commit has no .flipgate.yml
    repo.pull_event("release/2")

    assert repo.run() == 2, repo.harness.log.getvalue()[-3000:]

    refused(repo, "release/2")
    assert "has no .flipgate.yml" in repo.harness.own_comments()[0]["body"]
    assert "has no configuration" in repo.harness.final_status()["description"]


def test_the_bases_own_list_cannot_trust_itself(repo: Repo) -> None:
    """A branch whose own configuration names itself is still not one main names."""
    git, harness = repo.harness.repo, repo.harness
    git.checkout(repo.commits["legacy"])
    repo.commits["stale"] = git.commit({".flipgate.yml": CONFIG.format(
        extra="  base_branches: [stale]\n").replace("[policy]", "[]")})
    harness.server.branches["stale"] = repo.commits["stale"]
    repo.pull("stale")
    repo.pull_event("stale")

    assert repo.run() == 2

    refused(repo, "stale")


# -- a command, then a retarget ---------------------------------------------------

def commanded(repo: Repo) -> str:
    """A fork's PR to main under require-command: the push records the head (pending), a
    maintainer comments `/flipgate run`; returns the command's event file."""
    harness = repo.harness
    harness.env["INPUT_FORK-POLICY"] = "require-command"
    repo.pull("main")
    repo.pull_event("main")
    assert repo.run() == 0
    harness.comment_event("/flipgate run")
    return harness.env["GITHUB_EVENT_PATH"]


def run_command(repo: Repo, event: str) -> int:
    repo.harness.env.update(GITHUB_EVENT_NAME="issue_comment", GITHUB_EVENT_PATH=event)
    return repo.run()


def test_control_a_maintainers_command_still_runs(repo: Repo) -> None:
    event = commanded(repo)

    assert run_command(repo, event) == 1, repo.harness.log.getvalue()[-3000:]

    assert repo.harness.final_status()["state"] == "failure"


def test_a_command_then_a_retarget_runs_nothing(repo: Repo) -> None:
    event = commanded(repo)
    repo.harness.server.retarget(PR, "legacy")

    assert run_command(repo, event) == 0

    assert repo.openai.requests == []
    assert "success" not in repo.statuses()
    [reply] = repo.harness.replies()
    assert "Nothing was run" in reply and "base changed" in reply


def test_a_retarget_away_and_back_after_the_command_still_runs_nothing(repo: Repo) -> None:
    event = commanded(repo)
    repo.harness.server.retarget(PR, "legacy")
    repo.harness.server.retarget(PR, "main")

    assert run_command(repo, event) == 0

    assert repo.openai.requests == [] and "success" not in repo.statuses()


def test_the_pending_record_names_the_base(repo: Repo) -> None:
    commanded(repo)

    [pending] = repo.harness.server.statuses_for(repo.harness.head)
    assert pending["description"].startswith(f"#{PR}: base main: ")


def test_a_retarget_while_the_command_runs_leaves_no_verdict(repo: Repo) -> None:
    """The command's job runs beside the pull request's: a base changed while it judges
    must not let its verdict land after the new base's."""
    event = commanded(repo)

    def retargeted_meanwhile(**kwargs: Any) -> Any:
        repo.harness.server.retarget(PR, "release/1")
        return run_check(**kwargs)

    repo.harness.env.update(GITHUB_EVENT_NAME="issue_comment", GITHUB_EVENT_PATH=event)
    assert repo.run(check=retargeted_meanwhile) == 3

    final = repo.harness.final_status()
    assert final["state"] == "error" and "base changed" in final["description"]
    assert "release/1" in repo.harness.own_comments()[0]["body"]


# -- a retarget to a branch with no configuration (issue 28) ----------------------

def retargeted(repo: Repo, base: str) -> None:
    """The PR to main was judged; its author moves it to `base`; the `edited` delivery."""
    repo.pull("main")
    repo.pull_event("main")
    assert repo.run() == 1
    repo.harness.server.retarget(PR, base)
    repo.pull_event(base, action_name="edited",
                    changes={"base": {"ref": {"from": "main"}, "sha": {"from": repo.commits["main"]}}})


@pytest.mark.parametrize("base", ["legacy", "release/2"])
def test_a_retarget_to_an_unconfigured_branch_is_refused_even_when_github_answers_nothing(
        repo: Repo, base: str) -> None:
    """A base other than the default branch that has no configuration is refused whatever
    the default branch says: GitHub failing to name the default branch's tip changes
    nothing, and nothing reads as an internal error."""
    retargeted(repo, base)
    repo.harness.server.fail("GET", "/branches/", 404, message="Branch not found", times=5)
    requests_before = len(repo.openai.requests)

    assert repo.run() == 2, repo.harness.log.getvalue()[-3000:]

    final = repo.harness.final_status()
    assert final["state"] == "error" and base in final["description"], final
    assert "internal error" not in final["description"]
    assert f"`{base}`" in repo.harness.own_comments()[0]["body"]
    assert len(repo.openai.requests) == requests_before


def test_a_configured_base_github_cannot_vouch_for_is_an_api_failure_not_an_internal_error(
        repo: Repo) -> None:
    retargeted(repo, "release/1")
    repo.harness.server.fail("GET", "/branches/", 404, message="Branch not found", times=5)

    assert repo.run() == 3, repo.harness.log.getvalue()[-3000:]

    final = repo.harness.final_status()
    assert final["state"] == "error" and "internal error" not in final["description"], final
    assert "GitHub" in final["description"]
    assert "release/1" in repo.harness.own_comments()[0]["body"]
