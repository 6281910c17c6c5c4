"""`flipgate action` end to end: a real temp git repo, real PyGithub against the loopback
GitHub server (GITHUB_API_URL), real webhook payloads, the runner's output files.

Most tests pass a recording check runner in place of the pipeline, to pin
the action's own behaviour; the tests at the end run the real pipeline
against the loopback OpenAI server.
"""

from __future__ import annotations

import copy
import io
import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flipgate import gate
from flipgate.errors import IncompleteError, InputError, Problem
from flipgate.github import action
from flipgate.github.messages import NO_CHANGE, STATUS_LIMIT, WAITING_FOR_COMMAND
from flipgate.github.sticky import MARKER, marked_sha
from flipgate.model import Conclusion, Report

from factories import make_report, make_row, one_of_each
from gitrepo import GitRepo
from support.github_server import ACTIONS_BOT, FakeGitHub

PAYLOADS = Path(__file__).parent / "fixtures" / "github"
PR = 42
RUN_ID = "777001"


def blocking_rows() -> list:
    """A row of every verdict but `error` (which would make the run an error, exit 3)."""
    return [row for row in one_of_each() if row.id != "error"]


@dataclass
class CheckResult:
    report: Report
    exit_code: int


PASSED, BLOCKED = "## ✅ flipgate passed", "## ❌ flipgate blocked this change"
COULD_NOT_FINISH = "## ⚠️ flipgate could not finish"


@dataclass
class RecordingCheck:
    """Stands in for flipgate.pipeline.run_check: returns a report or raises, records calls."""

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
        return CheckResult(report=self.outcome, exit_code=gate.exit_code(self.outcome.conclusion))


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
                   fork: bool = False, head: str | None = None) -> None:
        event = json.loads((PAYLOADS / "pull_request.synchronize.json").read_text())
        event["action"] = action_name
        pull = event["pull_request"]
        event["number"] = pull["number"] = PR
        owner, name = self.server.repository.split("/")
        pull["base"]["repo"]["full_name"] = self.server.repository
        pull["base"]["sha"] = self.base
        pull["head"]["sha"] = head or self.head
        pull["head"]["repo"] = copy.deepcopy(pull["base"]["repo"])
        if fork:
            pull["head"]["repo"]["full_name"] = f"stranger/{name}"
        event["repository"]["full_name"] = self.server.repository
        self._write_event(event_name, event)

    def comment_event(self, body: str, *, author: str = "maintainer",
                      action_name: str = "created", on_pull: bool = True) -> dict[str, Any]:
        comment = self.server.add_comment(PR, body, user=author)
        event = json.loads((PAYLOADS / "issue_comment.created.json").read_text())
        event["action"] = action_name
        event["issue"]["number"] = PR
        if on_pull:
            event["issue"]["pull_request"] = {"url": f"{self.server.api_url}/repos/"
                                                     f"{self.server.repository}/pulls/{PR}",
                                              "merged_at": None}
        event["comment"] = {**event["comment"], "id": comment["id"], "body": body,
                            "user": comment["user"]}
        self._write_event("issue_comment", event)
        return comment

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

    def own_comments(self) -> list[dict[str, Any]]:
        return [c for c in self.server.comments_on(PR)
                if c["user"]["login"] == ACTIONS_BOT and MARKER in c["body"]]

    def replies(self) -> list[str]:
        return [c["body"] for c in self.server.comments_on(PR)
                if c["user"]["login"] == ACTIONS_BOT and MARKER not in c["body"]]

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


# -- a pull request event ------------------------------------------------------------

def test_first_run_posts_one_comment_a_pending_then_a_final_status(harness: Harness,
                                                                    check: RecordingCheck) -> None:
    harness.pull_event()
    assert harness.run(check) == 0

    [call] = check.calls
    assert (call["base"], call["head"], call["repo"], call["config_path"]) == (
        harness.base, harness.head, harness.repo.path, ".flipgate.yml")
    assert check.statuses_seen == ["pending"]  # set before any model call
    [comment] = harness.own_comments()
    assert PASSED in comment["body"] and marked_sha(comment["body"]) == harness.head
    states = [(s["state"], s["context"]) for s in harness.server.statuses_for(harness.head)]
    assert states == [("pending", "flipgate"), ("success", "flipgate")]
    final = harness.final_status()
    assert final["target_url"] == f"https://github.example.com/{harness.server.repository}" \
                                  f"/actions/runs/{RUN_ID}"
    assert final["description"].startswith("passed: 1 case")


def test_second_run_edits_the_comment_even_past_100_other_comments(harness: Harness,
                                                                   check: RecordingCheck) -> None:
    harness.pull_event()
    harness.run(check)
    for index in range(150):
        harness.server.add_comment(PR, f"reviewer chatter {index}")
    check.outcome = make_report([make_row("refund-007", category="policy", before=5, after=2,
                                          rescore=1)])

    assert harness.run(check) == 1

    [comment] = harness.own_comments()
    assert BLOCKED in comment["body"]
    assert len(harness.server.requests_to("POST", f"/issues/{PR}/comments")) == 1
    assert len(harness.server.requests_to("PATCH", "/issues/comments/")) == 1


def test_blocking_regression_comment_first_then_status_then_exit_1(harness: Harness,
                                                                   check: RecordingCheck) -> None:
    check.outcome = make_report(blocking_rows())
    harness.pull_event()

    assert harness.run(check) == 1

    writes = [(r.method, r.path) for r in harness.server.requests if r.method != "GET"]
    assert writes[0][0] == "POST" and "/statuses/" in writes[0][1]        # pending
    assert writes[1][0] == "POST" and writes[1][1].endswith("/comments")  # the comment
    assert writes[2][0] == "POST" and "/statuses/" in writes[2][1]        # the verdict
    final = harness.final_status()
    assert final["state"] == "failure" and len(final["description"]) <= STATUS_LIMIT
    assert "1 blocking regression" in final["description"]
    assert harness.outputs() == {"conclusion": "failure", "regressions": "2", "report": ""}
    assert BLOCKED in harness.summary()
    assert "::error title=flipgate::flipgate: blocked" in harness.log.getvalue()


def test_judge_failure_is_an_error_status_and_the_comment_says_so(harness: Harness,
                                                                  check: RecordingCheck) -> None:
    rows = [make_row("a", before=5, after=None), make_row("b", before=5, after=5)]
    check.outcome = make_report(rows)
    assert check.outcome.conclusion is Conclusion.ERROR
    harness.pull_event()

    assert harness.run(check) == 3

    final = harness.final_status()
    assert final["state"] == "error" and "1 judge error" in final["description"]
    assert COULD_NOT_FINISH in harness.own_comments()[0]["body"]
    assert harness.outputs()["conclusion"] == "error"


@pytest.mark.parametrize(("failure", "exit_code", "says"), [
    (InputError(Problem(".flipgate.yml", 4, "unknown key `judg` <script>")), 2,
     ".flipgate.yml:4: unknown key `judg` <script>"),
    (IncompleteError("the judge failed after 3 retries: HTTP 500"), 3,
     "the judge failed after 3 retries"),
    (RuntimeError("boom"), 3, "RuntimeError: boom"),
])
def test_a_check_that_cannot_run_still_comments_and_sets_error(harness: Harness,
                                                               check: RecordingCheck,
                                                               failure: Exception,
                                                               exit_code: int, says: str) -> None:
    check.outcome = failure
    harness.pull_event()

    assert harness.run(check) == exit_code

    [comment] = harness.own_comments()
    assert "could not run" in comment["body"]
    # the message sits in a fenced block, where its HTML and backticks are inert
    fenced = re.search(r"^(`{3,})text\n(.*?)\n\1$", comment["body"], re.S | re.M)
    assert fenced and says in fenced.group(2)
    assert harness.final_status()["state"] == "error"
    # `error` exactly when the step exits 3; bad input (exit 2) reached no conclusion.
    assert harness.outputs().get("conclusion") == ("error" if exit_code == 3 else None)


def test_no_change_pull_request_is_success_without_a_comment(harness: Harness,
                                                             check: RecordingCheck) -> None:
    check.outcome = make_report([], conclusion=Conclusion.SKIPPED)
    harness.pull_event()

    assert harness.run(check) == 0

    assert harness.own_comments() == []
    final = harness.final_status()
    assert (final["state"], final["description"]) == ("success", NO_CHANGE)
    assert harness.outputs()["conclusion"] == "skipped"


def test_no_change_updates_an_earlier_comment_to_say_so(harness: Harness,
                                                        check: RecordingCheck) -> None:
    harness.pull_event()
    harness.run(check)
    check.outcome = make_report([], conclusion=Conclusion.SKIPPED)

    harness.run(check)

    [comment] = harness.own_comments()
    assert NO_CHANGE in comment["body"] and PASSED not in comment["body"]


def test_an_older_heads_run_never_overwrites_a_newer_one(harness: Harness,
                                                         check: RecordingCheck) -> None:
    newer = harness.repo.commit({"prompts/answer.prompty": "v3\n"}, message="newer")
    harness.server.push(PR, newer)
    harness.pull_event(head=newer)
    harness.run(check)
    check.outcome = make_report(blocking_rows())
    harness.pull_event(head=harness.head)  # the slow run for the older push ends last

    harness.run(check)

    [comment] = harness.own_comments()
    assert marked_sha(comment["body"]) == newer and PASSED in comment["body"]
    assert harness.final_status(harness.head)["state"] == "failure"  # its own SHA's status


@pytest.mark.parametrize("shallow", [True, False])  # actions/checkout clones at depth 1
def test_a_missing_head_is_fetched_from_origin_not_checked_out(harness: Harness,
                                                               check: RecordingCheck,
                                                               tmp_path: Path,
                                                               shallow: bool) -> None:
    origin = harness.repo
    origin.branch("base-only", harness.base)
    origin.git("config", "uploadpack.allowAnySHA1InWant", "true")  # as GitHub serves SHAs
    clone = GitRepo(tmp_path / "clone")
    depth = ["--depth=1"] if shallow else []
    GitRepo(tmp_path).git("clone", "-q", *depth, "--single-branch", "--branch", "base-only",
                          f"file://{origin.path}", str(clone.path))
    with pytest.raises(subprocess.CalledProcessError):
        clone.git("cat-file", "-e", harness.head)
    harness.pull_event()

    assert harness.run(check, GITHUB_WORKSPACE=str(clone.path)) == 0

    assert clone.git("cat-file", "-t", harness.head) == "commit"
    assert clone.git("rev-parse", "HEAD") == harness.base  # the work tree stayed on base
    assert (clone.path / "prompts/answer.prompty").read_text() == "v1\n"
    assert check.calls[0]["head"] == harness.head


def test_fetching_the_head_never_fetches_into_submodules(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # git fetch recurses "on demand" into initialised submodules whose commit the
    # fetched head changes. flipgate reads neither submodule, so it must not reach
    # out to their remotes on a PR's say-so.
    for name, value in (("COUNT", "1"), ("KEY_0", "protocol.file.allow"), ("VALUE_0", "always")):
        monkeypatch.setenv(f"GIT_CONFIG_{name}", value)  # file:// submodules, for the test
    lib = GitRepo.create(tmp_path / "lib")
    lib.commit({"x": "1"})
    origin = GitRepo.create(tmp_path / "origin")
    origin.commit({"README.md": "r"})
    origin.git("submodule", "-q", "add", str(lib.path), "lib")
    origin.git("commit", "-q", "-m", "base with a submodule")
    base = origin.git("rev-parse", "HEAD")
    workspace = GitRepo(tmp_path / "workspace")
    GitRepo(tmp_path).git("clone", "-q", "--recurse-submodules", str(origin.path), str(workspace.path))
    bumped = lib.commit({"x": "2"})
    GitRepo(origin.path / "lib").git("fetch", "-q", "origin")
    GitRepo(origin.path / "lib").git("checkout", "-q", bumped)
    origin.git("commit", "-q", "-am", "head bumps the submodule")
    head = origin.git("rev-parse", "HEAD")
    origin.git("config", "uploadpack.allowAnySHA1InWant", "true")

    action.ensure_commits(workspace.path, [base, head], git=action.run_git)

    assert workspace.git("cat-file", "-t", head) == "commit"
    with pytest.raises(subprocess.CalledProcessError):
        GitRepo(workspace.path / "lib").git("cat-file", "-e", bumped)


def test_a_head_origin_cannot_serve_is_an_error(harness: Harness, check: RecordingCheck,
                                                tmp_path: Path) -> None:
    harness.repo.branch("base-only", harness.base)
    origin, clone = GitRepo(tmp_path / "origin"), GitRepo(tmp_path / "clone")
    for source, target in ((harness.repo, origin), (origin, clone)):  # origin never had head
        GitRepo(tmp_path).git("clone", "-q", "--single-branch", "--branch", "base-only",
                              f"file://{source.path}", str(target.path))
    harness.pull_event()

    assert harness.run(check, GITHUB_WORKSPACE=str(clone.path)) == 3

    assert check.calls == []
    assert f"could not fetch {harness.head[:7]}" in harness.own_comments()[0]["body"]
    assert harness.final_status()["state"] == "error"


def test_a_workspace_without_git_is_reported(harness: Harness, check: RecordingCheck,
                                             tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    harness.pull_event()

    assert harness.run(check, GITHUB_WORKSPACE=str(empty)) == 2

    assert check.calls == []
    assert "actions/checkout" in harness.own_comments()[0]["body"]


def test_inputs_choose_config_and_status_context(harness: Harness,
                                                 check: RecordingCheck) -> None:
    harness.pull_event()
    harness.run(check, **{"INPUT_CONFIG": "ci/flipgate.yml", "INPUT_STATUS-CONTEXT": "llm/gate"})
    assert check.calls[0]["config_path"] == "ci/flipgate.yml"
    assert {s["context"] for s in harness.server.statuses_for(harness.head)} == {"llm/gate"}


def test_model_keys_are_masked_and_exported(harness: Harness, check: RecordingCheck) -> None:
    harness.pull_event()
    harness.run(check, **{"INPUT_OPENAI-API-KEY": "sk-live-abc"})
    assert "::add-mask::sk-live-abc" in harness.log.getvalue()
    assert harness.env["OPENAI_API_KEY"] == "sk-live-abc"


# -- forks -----------------------------------------------------------------------------

def test_fork_under_pull_request_explains_and_exits_0_without_status(
        harness: Harness, check: RecordingCheck) -> None:
    harness.pull_event(event_name="pull_request", fork=True)

    assert harness.run(check) == 0

    assert check.calls == [] and harness.server.statuses == []
    assert "::warning title=flipgate::" in harness.log.getvalue()
    assert "fork" in harness.summary() and "pull_request_target" in harness.summary()


def test_fork_under_target_with_require_command_waits_pending(harness: Harness,
                                                              check: RecordingCheck) -> None:
    harness.pull_event(event_name="pull_request_target", fork=True)

    assert harness.run(check) == 0

    assert check.calls == [] and harness.own_comments() == []
    [status] = harness.server.statuses_for(harness.head)
    assert (status["state"], status["description"]) == ("pending", WAITING_FOR_COMMAND)


def test_fork_under_target_with_policy_run_is_evaluated(harness: Harness,
                                                        check: RecordingCheck) -> None:
    harness.pull_event(event_name="pull_request_target", fork=True)
    assert harness.run(check, **{"INPUT_FORK-POLICY": "run"}) == 0
    assert len(check.calls) == 1 and harness.final_status()["state"] == "success"


# -- comment commands ---------------------------------------------------------------

@pytest.mark.parametrize("role", ["admin", "maintain", "write"])
def test_a_writers_command_runs_on_the_head_pinned_when_read(harness: Harness,
                                                             check: RecordingCheck,
                                                             role: str) -> None:
    harness.server.grant("maintainer", role)
    pushed = harness.repo.commit({"prompts/answer.prompty": "v3\n"}, message="pushed")
    harness.server.push(PR, pushed)  # the PR's head when the command is read
    command = harness.comment_event("/flipgate run")

    assert harness.run(check) == 0

    assert check.calls[0]["head"] == pushed and check.calls[0]["base"] == harness.base
    assert harness.server.reactions_on(command["id"]) == ["eyes", "rocket"]
    assert harness.final_status(pushed)["state"] == "success"
    assert marked_sha(harness.own_comments()[0]["body"]) == pushed


@pytest.mark.parametrize("policy", ["require-command", "run"])
def test_a_writers_command_evaluates_a_forks_pull_request(harness: Harness,
                                                          check: RecordingCheck,
                                                          policy: str) -> None:
    harness.server.add_pull(PR, base_sha=harness.base, head_sha=harness.head, fork=True)
    harness.comment_event("/flipgate run")

    assert harness.run(check, **{"INPUT_FORK-POLICY": policy}) == 0

    assert check.calls[0]["head"] == harness.head
    assert harness.final_status()["state"] == "success"


def test_a_push_after_the_command_is_not_what_gets_evaluated(harness: Harness,
                                                             check: RecordingCheck) -> None:
    harness.comment_event("/flipgate run")
    later = harness.repo.commit({"prompts/answer.prompty": "v4\n"}, message="later")

    def push_during_the_run(**kwargs: Any) -> CheckResult:
        harness.server.push(PR, later)
        return RecordingCheck.__call__(check, **kwargs)

    harness.run(push_during_the_run)

    assert check.calls[0]["head"] == harness.head
    assert harness.server.statuses_for(later) == []
    assert harness.final_status(harness.head)["state"] == "success"


@pytest.mark.parametrize("role", ["triage", "read", "none"])
def test_a_readers_command_is_refused_with_a_reply_and_no_run(harness: Harness,
                                                              check: RecordingCheck,
                                                              role: str) -> None:
    harness.server.grant("visitor", role)
    command = harness.comment_event("/flipgate run", author="visitor")

    assert harness.run(check) == 0

    assert check.calls == [] and harness.server.statuses == []
    [reply] = harness.replies()
    assert "Nothing was run" in reply and "visitor" in reply
    assert harness.server.reactions_on(command["id"]) == ["-1"]


@pytest.mark.parametrize(("body", "says"), [
    ("/flipgate help", None), ("/flipgate", None),
    ("/flipgate deploy @everyone <b>now</b>", "deploy @everyone <b>now</b>"),
])
def test_help_and_unknown_commands_reply_with_usage(harness: Harness, check: RecordingCheck,
                                                    body: str, says: str | None) -> None:
    harness.comment_event(body, author="visitor")

    assert harness.run(check) == 0

    [reply] = harness.replies()
    assert "`/flipgate run`" in reply and not reply.startswith("/flipgate")
    if says:
        assert re.search(r"(`+) ?/flipgate " + re.escape(says) + r" ?\1", reply)
    assert check.calls == [] and harness.own_comments() == []


@pytest.mark.parametrize(("edit", "on_pull"), [("edited", True), ("created", False)])
def test_edited_comments_and_plain_issues_are_ignored(harness: Harness, check: RecordingCheck,
                                                      edit: str, on_pull: bool) -> None:
    harness.comment_event("/flipgate run", action_name=edit, on_pull=on_pull)
    before = len(harness.server.requests)

    assert harness.run(check) == 0

    assert check.calls == [] and len(harness.server.requests) == before
    assert "nothing to do" in harness.log.getvalue()


def test_the_real_plain_issue_comment_payload_is_ignored(harness: Harness,
                                                         check: RecordingCheck) -> None:
    harness.env.update(GITHUB_EVENT_NAME="issue_comment",
                       GITHUB_EVENT_PATH=str(PAYLOADS / "issue_comment.created.json"))
    assert harness.run(check) == 0
    assert harness.server.requests == []


# -- bad setup ---------------------------------------------------------------------------

def test_missing_settings_are_bad_input(harness: Harness, check: RecordingCheck) -> None:
    del harness.env["INPUT_GITHUB-TOKEN"]
    harness.pull_event()
    assert harness.run(check) == 2
    assert "::error title=flipgate::input github-token" in harness.log.getvalue()


def test_a_github_failure_is_exit_3(harness: Harness, check: RecordingCheck) -> None:
    harness.server.fail("POST", "/statuses/", 403, message="Resource not accessible by integration")
    harness.pull_event()
    assert harness.run(check) == 3
    assert "Resource not accessible by integration" in harness.log.getvalue()
    assert check.calls == []


# -- sizes -------------------------------------------------------------------------------

def many_regressions(count: int) -> Report:
    return make_report([make_row(f"case-{index:04d}", category="policy", before=5, after=2,
                                 rescore=1, answer="A fee of $12 applies. " * 60)
                        for index in range(count)])


def test_a_huge_report_still_fits_one_comment_and_the_summary_has_more(
        harness: Harness, check: RecordingCheck) -> None:
    check.outcome = many_regressions(400)
    harness.pull_event()

    assert harness.run(check) == 1

    [comment] = harness.own_comments()  # GitHub (the server) refuses more than 65,536
    assert len(comment["body"]) <= 65_536 and marked_sha(comment["body"]) == harness.head
    assert len(harness.summary()) > len(comment["body"])


def test_the_summary_stays_within_1_mib_with_what_earlier_steps_wrote(
        harness: Harness, check: RecordingCheck) -> None:
    earlier = "x" * (1024 * 1024 - 30_000) + "\n"
    Path(harness.env["GITHUB_STEP_SUMMARY"]).write_text(earlier)
    check.outcome = many_regressions(400)
    harness.pull_event()

    harness.run(check)

    summary = Path(harness.env["GITHUB_STEP_SUMMARY"]).read_bytes()
    assert len(summary) <= 1024 * 1024 and BLOCKED in summary.decode()


# -- the real pipeline, end to end -------------------------------------------------------

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

    assert pipeline.run() == 1

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

    assert pipeline.run() == 1

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


# -- the end-to-end run ------------------------------------------------------------------

def test_a_same_repository_pull_request_asks_for_the_end_to_end_run_if_the_base_enables_it(
        harness: Harness, check: RecordingCheck) -> None:
    harness.pull_event()
    harness.run(check, SEARCH_KEY="s-1")
    request = check.calls[0]["e2e"]
    assert request is not None and request.required is False   # the base's e2e: decides
    assert request.environ["SEARCH_KEY"] == "s-1" and re.fullmatch(r"\d{4}-\d\d-\d\d", request.date)


def test_a_forks_pull_request_gets_the_end_to_end_run_only_once_approved(
        harness: Harness, check: RecordingCheck) -> None:
    harness.pull_event(event_name="pull_request_target", fork=True)
    harness.run(check)
    assert check.calls == []                                    # waiting for a maintainer
    harness.server.add_pull(PR, base_sha=harness.base, head_sha=harness.head, fork=True)
    harness.comment_event("/flipgate run")
    harness.run(check)
    assert check.calls[0]["e2e"] is not None
