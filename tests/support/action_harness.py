"""The action's test harness: a real temporary git repository as the workspace, real
webhook payloads, the runner's output files, and a recording check runner that
stands in for the pipeline. Fixtures `harness` and `check` register through
tests/conftest.py.
"""

from __future__ import annotations

import copy
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flipgate.github import action
from flipgate.github.sticky import context_marker
from flipgate.model import Report
from flipgate.output.comment import render_comment
from flipgate.output.links import NO_LINKS
from flipgate.verdict import gate

from support.factories import make_report, make_row, one_of_each
from support.github_server import ACTIONS_BOT, FakeGitHub
from support.gitrepo import GitRepo
from support.prompts import WITH_SYSTEM, fee_when_helpful_for

PAYLOADS = Path(__file__).resolve().parents[1] / "fixtures" / "github"
PR = 42
RUN_ID = "777001"


def blocking_rows() -> list:
    """A row of every verdict but `error` (which would make the run an error, exit 3)."""
    return [row for row in one_of_each() if row.id != "error"]


@dataclass
class CheckResult:
    report: Report
    markdown: str
    exit_code: int


PASSED, BLOCKED = "## ✅ flipgate passed", "## ❌ flipgate blocked this change"
COULD_NOT_FINISH = "## ⚠️ flipgate could not finish"


@dataclass
class RecordingCheck:
    """Stands in for flipgate.run.pipeline.run_check: returns a report or raises, records calls."""

    server: FakeGitHub
    outcome: Report | Exception = field(default_factory=lambda: make_report([make_row(
        "refund-001", before=5, after=5)]))
    calls: list[dict[str, Any]] = field(default_factory=list)
    statuses_seen: list[str] = field(default_factory=list)

    def __call__(self, **kwargs: Any) -> CheckResult:
        self.calls.append(kwargs)
        self.statuses_seen = [s["state"] for s in self.server.statuses]
        if isinstance(self.outcome, Exception):
            raise self.outcome
        # As run_check does: the comment links what the action hands it (the run, report-url).
        markdown = render_comment(self.outcome, max_chars=kwargs["comment_limit"],
                                  links=kwargs.get("links", NO_LINKS))
        return CheckResult(report=self.outcome, markdown=markdown,
                           exit_code=gate.exit_code(self.outcome.conclusion))


@dataclass
class Harness:
    server: FakeGitHub
    repo: GitRepo
    base: str
    head: str
    tmp: Path
    env: dict[str, str]
    log: io.StringIO = field(default_factory=io.StringIO)

    # -- events
    def _write_event(self, name: str, event: dict[str, Any]) -> None:
        path = self.tmp / f"{name}.json"
        path.write_text(json.dumps(event))
        self.env.update(GITHUB_EVENT_NAME=name, GITHUB_EVENT_PATH=str(path))

    def pull_event(self, *, event_name: str = "pull_request", action_name: str = "synchronize",
                   fork: bool = False, head: str | None = None, base: str | None = None,
                   base_ref: str | None = None, changes: dict[str, Any] | None = None,
                   number: int = PR) -> None:
        """`base_ref`: the base branch (the repository's default branch unless given);
        `changes`: an `edited` event's `changes` object; `number`: the pull request's."""
        event = json.loads((PAYLOADS / "pull_request.synchronize.json").read_text())
        event["action"] = action_name
        pull = event["pull_request"]
        event["number"] = pull["number"] = number
        owner, name = self.server.repository.split("/")
        pull["base"]["repo"]["full_name"] = self.server.repository
        # The loopback GitHub's default branch, in the event as in its REST answers.
        pull["base"]["repo"]["default_branch"] = event["repository"]["default_branch"] = "main"
        pull["base"]["sha"] = base or self.base
        pull["base"]["ref"] = base_ref or pull["base"]["repo"]["default_branch"]
        pull["head"]["sha"] = head or self.head
        if changes is not None:
            event["changes"] = changes
        pull["head"]["repo"] = copy.deepcopy(pull["base"]["repo"])
        if fork:
            pull["head"]["repo"]["full_name"] = f"stranger/{name}"
        event["repository"]["full_name"] = self.server.repository
        self._write_event(event_name, event)

    def comment_event(self, body: str, *, author: str = "maintainer",
                      action_name: str = "created", on_pull: bool = True,
                      number: int = PR) -> dict[str, Any]:
        comment = self.server.add_comment(number, body, user=author)
        event = json.loads((PAYLOADS / "issue_comment.created.json").read_text())
        event["action"] = action_name
        event["issue"]["number"] = number
        if on_pull:
            event["issue"]["pull_request"] = {"url": f"{self.server.api_url}/repos/"
                                                     f"{self.server.repository}/pulls/{number}",
                                              "merged_at": None}
        event["comment"] = {**event["comment"], "id": comment["id"], "body": body,
                            "user": comment["user"], "created_at": comment["created_at"],
                            "updated_at": comment["updated_at"]}
        self._write_event("issue_comment", event)
        return comment

    def record_head(self, sha: str | None = None) -> None:
        """What flipgate's run on a push leaves: a pending status naming the PR on its head
        (GitHub's clock), from which a later command's head is proven."""
        self.server.add_status(sha or self.head, state="pending",
                               description=f"#{PR}: evaluating {(sha or self.head)[:7]}…")

    # -- running
    def run(self, check: Callable[..., Any] | None, **env: str) -> int:
        self.env.update(env)
        return action.main(self.env, check=check, stream=self.log)

    # -- reading
    def outputs(self) -> dict[str, str]:
        text = Path(self.env["GITHUB_OUTPUT"]).read_text()
        return {m["name"]: m["value"] for m in re.finditer(
            r"^(?P<name>[\w-]+)<<(?P<delim>\S+)\n(?P<value>.*?)\n(?P=delim)$", text, re.S | re.M)}

    def summary(self) -> str:
        path = Path(self.env["GITHUB_STEP_SUMMARY"])
        return path.read_text() if path.exists() else ""

    def own_comments(self, context: str = "flipgate") -> list[dict[str, Any]]:
        """The gate's comments: by the token's login, with the marker of `context`."""
        return [c for c in self.server.comments_on(PR)
                if c["user"]["login"] == ACTIONS_BOT and context_marker(context) in c["body"]]

    def replies(self) -> list[str]:
        return [c["body"] for c in self.server.comments_on(PR)
                if (c["user"] or {}).get("login") == ACTIONS_BOT and "<!-- flipgate:" not in c["body"]]

    def final_status(self, sha: str | None = None) -> dict[str, Any]:
        return self.server.statuses_for(sha or self.head)[-1]


@pytest.fixture
def harness(tmp_path: Path, github_server: FakeGitHub) -> Harness:
    repo = GitRepo.create(tmp_path / "workspace")
    base = repo.commit({"prompts/answer.prompty": "v1\n"}, message="base")
    head = repo.commit({"prompts/answer.prompty": "v2\n"}, message="head")
    github_server.add_pull(PR, base_sha=base, head_sha=head)
    github_server.grant("maintainer", "write")
    env = {
        "GITHUB_REPOSITORY": github_server.repository,
        "GITHUB_API_URL": github_server.api_url,
        "GITHUB_SERVER_URL": "https://github.example.com",
        "GITHUB_RUN_ID": RUN_ID,
        "GITHUB_WORKSPACE": str(repo.path),
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "INPUT_GITHUB-TOKEN": github_server.token,
        "INPUT_CONFIG": "", "INPUT_STATUS-CONTEXT": "", "INPUT_FORK-POLICY": "",
    }
    return Harness(server=github_server, repo=repo, base=base, head=head, tmp=tmp_path, env=env)


@pytest.fixture
def check(harness: Harness) -> RecordingCheck:
    return RecordingCheck(harness.server)


def helpful_prompt_pull(harness: Harness, openai_server: Any, path: Path, *, config: str,
                        cases: list[dict[str, Any]], flipped: set[str]) -> Harness:
    """A pull request on a new repository at `path`: the base holds `config`, the cases and a
    Prompty that answers from the context; the head asks it to be helpful, and the `flipped`
    cases' answers then add a fee their context lacks, which the judge scores 1 (others 5)."""
    repo = GitRepo.create(path)
    harness.base = repo.commit({
        ".flipgate.yml": config,
        "eval/cases.jsonl": "".join(json.dumps(case) + "\n" for case in cases),
        "prompts/answer.prompty": WITH_SYSTEM.format(system="Answer only from the context.")})
    harness.head = repo.commit({"prompts/answer.prompty": WITH_SYSTEM.format(
        system="Be helpful and complete; add whatever the customer may need.")})
    harness.repo = repo
    harness.server.add_pull(PR, base_sha=harness.base, head_sha=harness.head)
    harness.env["GITHUB_WORKSPACE"] = str(repo.path)
    harness.env["INPUT_OPENAI-API-KEY"] = "sk-test"
    openai_server.on_generation(fee_when_helpful_for(flipped))
    openai_server.on_groundedness(lambda query, context, response, call_index:
                                  1 if "$12" in (response or "") else 5)
    harness.pull_event()
    return harness
