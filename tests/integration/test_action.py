"""`flipgate action` with a recording check runner in place of the pipeline: a real temp
git repo, real PyGithub against the loopback GitHub server (GITHUB_API_URL), real
webhook payloads, the runner's output files. The same action with the real
pipeline is in tests/end_to_end/test_action_pipeline.py.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from flipgate.errors import IncompleteError, InputError, Problem
from flipgate.git.repository import Git
from flipgate.github import action, labels
from flipgate.github.sticky import BODY_LIMIT, marked_fingerprint, marked_sha, with_markers
from flipgate.github.texts import NO_CHANGE, STATUS_LIMIT, WAITING_FOR_COMMAND
from flipgate.model import Conclusion, Report
from flipgate.output.comment import render_comment
from flipgate.output.write import write_outputs
from flipgate.settings import Settings

from support.action_harness import (
    BLOCKED,
    COULD_NOT_FINISH,
    PASSED,
    PAYLOADS,
    PR,
    RUN_ID,
    CheckResult,
    Harness,
    RecordingCheck,
    blocking_rows,
)
from support.factories import make_report, make_row
from support.gitrepo import GitRepo

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

    action.ensure_commits(workspace.path, [base, head],
                          git=Git(Settings.from_environ(os.environ).git_environment()))

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


# -- several gates, comment modes, manual runs ------------------------------------------

def test_two_gates_keep_two_comments_each_edited_in_place_over_two_runs(
        harness: Harness, check: RecordingCheck) -> None:
    gates = {"flipgate/support": "support.flipgate.yml", "flipgate/sales": "sales.flipgate.yml"}
    harness.pull_event()
    for run in range(2):
        check.outcome = make_report([make_row(f"case-{run}", category="policy", before=5,
                                              after=2 if run else 5, rescore=1)])
        for context, config in gates.items():
            harness.run(check, **{"INPUT_STATUS-CONTEXT": context, "INPUT_CONFIG": config})

    comments = {context: harness.own_comments(context) for context in gates}
    assert all(len(found) == 1 for found in comments.values())
    assert len(harness.server.comments_on(PR)) == 2
    assert len(harness.server.requests_to("POST", f"/issues/{PR}/comments")) == 2
    assert len(harness.server.requests_to("PATCH", "/issues/comments/")) == 2
    assert all("case-1" in found[0]["body"] and BLOCKED in found[0]["body"]
               for found in comments.values())
    finals = {s["context"]: s["state"] for s in harness.server.statuses_for(harness.head)}
    assert finals == {"flipgate/support": "failure", "flipgate/sales": "failure"}


def test_comment_never_posts_none_and_still_sets_status_and_summary(
        harness: Harness, check: RecordingCheck) -> None:
    check.outcome = make_report([make_row("refund-007", category="policy", before=5, after=2,
                                          rescore=1)])
    harness.pull_event()

    assert harness.run(check, INPUT_COMMENT="never") == 1

    assert harness.server.comments_on(PR) == []
    assert harness.server.requests_to("GET", "/comments") == []
    assert harness.final_status()["state"] == "failure"
    assert BLOCKED in harness.summary() and "refund-007" in harness.summary()
    assert harness.outputs()["conclusion"] == "failure"


def test_comment_on_change_edits_only_when_the_verdicts_change(
        harness: Harness, check: RecordingCheck) -> None:
    harness.pull_event()
    regression = make_row("refund-007", category="policy", before=5, after=2, rescore=1)
    runs = [([regression], "first run"), ([regression], "second run: other words, same verdicts"),
            ([make_row("refund-007", before=5, after=5)], "third run")]
    for rows, note in runs:
        check.outcome = make_report(rows, notes=[note])
        harness.run(check, INPUT_COMMENT="on-change")

    [comment] = harness.own_comments()
    assert len(harness.server.requests_to("PATCH", "/issues/comments/")) == 1  # the third run
    assert PASSED in comment["body"]
    assert "verdicts are those the comment shows" in harness.log.getvalue()


def test_the_action_takes_cache_and_concurrency_options(harness: Harness,
                                                       check: RecordingCheck) -> None:
    harness.pull_event()
    assert action.main(harness.env, check=check, stream=harness.log,
                       options=action.CheckOptions(cache=None, concurrency=3)) == 0
    assert check.calls[0]["cache_dir"] is None and check.calls[0]["concurrency"] == 3
    harness.run(check)
    assert check.calls[1]["cache_dir"] == harness.repo.path / ".flipgate-cache"
    assert check.calls[1]["concurrency"] is None


def test_the_action_command_line_has_the_common_options() -> None:
    from click.testing import CliRunner

    from flipgate.cli import cli

    shown = CliRunner().invoke(cli, ["action", "--help"]).output
    assert all(option in shown for option in ("--cache", "--no-cache", "--concurrency"))


def test_workflow_dispatch_evaluates_the_named_pull_request(harness: Harness,
                                                           check: RecordingCheck) -> None:
    harness._write_event("workflow_dispatch", {"inputs": {"pr-number": str(PR)},
                                               "ref": "refs/heads/main",
                                               "sender": {"login": "maintainer"}})

    assert harness.run(check, **{"INPUT_PR-NUMBER": str(PR)}) == 0

    [call] = check.calls
    assert (call["base"], call["head"]) == (harness.base, harness.head)
    assert [s["state"] for s in harness.server.statuses_for(harness.head)] == ["pending",
                                                                              "success"]
    assert len(harness.own_comments()) == 1


def test_workflow_dispatch_without_pr_number_is_bad_input(harness: Harness,
                                                          check: RecordingCheck) -> None:
    harness._write_event("workflow_dispatch", {"inputs": {}})
    assert harness.run(check) == 2
    assert "pr-number" in harness.log.getvalue() and check.calls == []


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
    assert (status["state"], status["description"]) == ("pending", f"#{PR}: base main: {WAITING_FOR_COMMAND}")


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
    harness.record_head(pushed)      # flipgate's run on that push recorded it
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
    harness.record_head()
    harness.comment_event("/flipgate run")

    assert harness.run(check, **{"INPUT_FORK-POLICY": policy}) == 0

    assert check.calls[0]["head"] == harness.head
    assert harness.final_status()["state"] == "success"


def test_a_push_after_the_command_is_not_what_gets_evaluated(harness: Harness,
                                                             check: RecordingCheck) -> None:
    harness.record_head()
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


def test_the_posted_comment_is_the_comment_md_the_check_wrote(harness: Harness) -> None:
    """One rendering, at the size the sticky comment takes: what GitHub shows is the
    uploaded comment.md, byte for byte, with only flipgate's hidden markers on its first
    line (the gate's context, the SHA, the verdicts' fingerprint) and the hidden readings
    block on its last (what a label job's labels.jsonl takes of the run for calibrate)."""
    report = many_regressions(1_000)

    def writing_check(**kwargs: Any) -> CheckResult:  # writes its outputs as the pipeline does
        markdown = write_outputs(report, kwargs["out_dir"], comment_limit=kwargs["comment_limit"])
        return CheckResult(report=report, markdown=markdown, exit_code=1)

    harness.pull_event()
    assert harness.run(writing_check) == 1

    [comment] = harness.own_comments()
    written = (harness.repo.path / action.OUT_DIR / "comment.md").read_text(encoding="utf-8")
    readings = labels.readings_of(report)
    assert comment["body"] == with_markers(labels.with_readings(written, readings),
                                           context="flipgate", head_sha=harness.head,
                                           fingerprint=marked_fingerprint(comment["body"]))
    assert labels.read_readings(comment["body"])  # as many as its room holds, flips first
    assert len(written.encode("utf-8")) <= BODY_LIMIT
    assert written != render_comment(report)  # GitHub's full limit would have shown more


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
