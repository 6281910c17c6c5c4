"""One head, two pull requests (issue 28, item 1).

main's configuration trusts `release/*`; `release/1`'s `.flipgate.yml` is weaker (no
blocking category). A commit status belongs to the commit, not to the pull request, so:
PR #42 proposes head H to main and gets `failure`; PR #43 proposes the same H to
`release/1`, whose gate lets it pass. If #43's `success` landed on the context main's
rule requires, #42 would read `success` with nothing having decided it again.

The real pipeline runs against the loopback OpenAI and GitHub servers, on a real
repository; "#42's required check" is what GitHub shows a rule requiring `flipgate`:
the newest status of that context on the head.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flipgate.github import action

from support.action_harness import Harness
from support.gitrepo import GitRepo
from support.prompts import WITH_SYSTEM, fee_when_helpful

MAIN_PR, RELEASE_PR = 42, 43
CONFIG = """\
version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
gate:
  blocking_categories: [{blocking}]
  strict: true
{extra}"""
CASES = json.dumps({"id": "refund-007", "category": "policy", "query": "How long do refunds take?",
                    "context": "Refunds are issued within 30 days of the request."}) + "\n"
CAREFUL, GENEROUS = "Answer only from the context.", "Be helpful; add whatever may help."


@dataclass
class Repo:
    harness: Harness
    monkeypatch: pytest.MonkeyPatch
    branches: dict[str, str]

    @property
    def head(self) -> str:
        return self.harness.head

    def run(self) -> int:
        for name, value in self.harness.env.items():
            self.monkeypatch.setenv(name, value)
        return action.main(os.environ, stream=self.harness.log)

    def open(self, number: int, base_ref: str) -> None:
        """PR `number` proposes the head to `base_ref`; its `opened` delivery is next."""
        self.harness.server.add_pull(number, base_sha=self.branches[base_ref],
                                     head_sha=self.head, fork=True, base_ref=base_ref)
        self.harness.pull_event(event_name="pull_request_target", action_name="opened",
                                fork=True, base=self.branches[base_ref], base_ref=base_ref,
                                number=number)

    def command(self, number: int, body: str = "/flipgate run") -> None:
        """A maintainer's comment on PR `number`; its `issue_comment` delivery is next."""
        self.harness.comment_event(body, number=number)

    def required_check(self, context: str = "flipgate") -> str | None:
        """What a branch rule requiring `context` reads on the head: its newest status."""
        states = [s["state"] for s in self.harness.server.statuses_for(self.head)
                  if s["context"] == context]
        return states[-1] if states else None

    def log(self) -> str:
        return self.harness.log.getvalue()[-3000:]


@pytest.fixture
def repo(harness: Harness, openai_server: Any, monkeypatch: pytest.MonkeyPatch,
         tmp_path: Path) -> Repo:
    """main (blocks `policy`, trusts release/*) and release/1 (blocks nothing); the head,
    on main, loosens the prompt so that main's gate blocks it."""
    git = GitRepo.create(tmp_path / "service")
    git.commit({"prompts/answer.prompty": WITH_SYSTEM.format(system=CAREFUL),
                "eval/cases.jsonl": CASES})
    main = git.commit({".flipgate.yml": CONFIG.format(
        blocking="policy", extra='  base_branches: [main, "release/*"]\n')})
    release = git.commit({".flipgate.yml": CONFIG.format(blocking="", extra="")})
    git.checkout(main)
    harness.head = git.commit({"prompts/answer.prompty": WITH_SYSTEM.format(system=GENEROUS)})
    harness.repo, harness.base = git, main
    harness.env.update({"GITHUB_WORKSPACE": str(git.path),
                        "INPUT_OPENAI-API-KEY": "sk-from-the-input", "INPUT_FORK-POLICY": "run"})
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    branches = {"main": main, "release/1": release}
    harness.server.branches.update(branches)
    openai_server.on_generation(fee_when_helpful)
    openai_server.on_groundedness(lambda query, context, response, call_index:
                                  1 if "$12" in (response or "") else 5)
    return Repo(harness, monkeypatch, branches)


def test_control_each_pull_request_alone_gets_its_bases_verdict(repo: Repo) -> None:
    repo.open(MAIN_PR, "main")
    assert repo.run() == 1, repo.log()
    assert repo.required_check() == "failure"

    repo.open(RELEASE_PR, "release/1")
    assert repo.run() == 0, repo.log()  # release/1's own gate blocks nothing: it passes there


def test_a_release_branchs_pass_never_reads_as_mains(repo: Repo) -> None:
    repo.open(MAIN_PR, "main")
    assert repo.run() == 1, repo.log()
    repo.open(RELEASE_PR, "release/1")
    assert repo.run() == 0, repo.log()

    assert repo.required_check() == "failure"  # #42's required check
    # The pass is recorded, for release/1's own rule, under a context of its own.
    [release] = {s["context"] for s in repo.harness.server.statuses_for(repo.head)} - {"flipgate"}
    assert repo.required_check(release) == "success" and "release/1" in release


def test_the_release_pass_landing_last_after_a_command_still_leaves_main_failing(
        repo: Repo) -> None:
    """The same with `/flipgate run`: under require-command both PRs wait; a maintainer
    runs #42 (failure), then #43 (success); #43's verdict lands last."""
    repo.harness.env["INPUT_FORK-POLICY"] = "require-command"
    repo.open(MAIN_PR, "main")
    assert repo.run() == 0, repo.log()   # waiting for a command, head recorded
    repo.open(RELEASE_PR, "release/1")
    assert repo.run() == 0, repo.log()
    # The waiting notice names the context that stays pending: release/1's own.
    assert "The `flipgate@release/1` status stays pending" in repo.log()
    repo.command(MAIN_PR)
    assert repo.run() == 1, repo.log()
    repo.command(RELEASE_PR)
    assert repo.run() == 0, repo.log()   # the command on #43 ran and passed

    assert repo.required_check() == "failure"


def test_a_release_pass_first_cannot_stand_for_main_either(repo: Repo) -> None:
    """#43 is judged first; #42, opened after, must not inherit its `success` while its
    own run has not decided (pending), nor after (failure)."""
    repo.harness.env["INPUT_FORK-POLICY"] = "require-command"
    repo.open(RELEASE_PR, "release/1")
    assert repo.run() == 0
    repo.command(RELEASE_PR)
    assert repo.run() == 0, repo.log()
    assert repo.required_check() != "success"

    repo.open(MAIN_PR, "main")
    assert repo.run() == 0
    assert repo.required_check() == "pending"
    repo.command(MAIN_PR)
    assert repo.run() == 1, repo.log()
    assert repo.required_check() == "failure"
