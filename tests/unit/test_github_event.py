"""Pure decisions: GitHub's real webhook payloads (our SHAs and bodies swapped in) -> activity."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from flipgate.errors import InputError
from flipgate.github.event import (
    AcceptCommand,
    AwaitCommand,
    CannotRunFork,
    ForkPolicy,
    Ignore,
    PullRequest,
    RunCheck,
    RunCommand,
    RunDispatch,
    UsageCommand,
    decide,
    load_event,
    may_command,
    parse_command,
)
from flipgate.github.inputs import Settings, export_model_keys

PAYLOADS = Path(__file__).resolve().parents[1] / "fixtures" / "github"
BASE, HEAD = "a" * 40, "c" * 40
SAME_REPO, FORK_REPO = "Codertocat/Hello-World", "stranger/Hello-World"


def payload(name: str) -> dict[str, Any]:
    return json.loads((PAYLOADS / f"{name}.json").read_text())


def pull_event(action: str = "opened", *, head_repo: str | None = SAME_REPO) -> dict[str, Any]:
    """A real pull_request payload with our SHAs, an action, and the head's repository."""
    event = payload("pull_request.opened")
    event["action"] = action
    pull = event["pull_request"]
    pull["number"] = event["number"] = 42
    pull["base"]["sha"], pull["head"]["sha"] = BASE, HEAD
    if head_repo is None:
        pull["head"]["repo"] = None  # the fork was deleted
    else:
        pull["head"]["repo"] = copy.deepcopy(pull["base"]["repo"])
        pull["head"]["repo"]["full_name"] = head_repo
    return event


def comment_event(body: str, *, action: str = "created", on_pull: bool = True) -> dict[str, Any]:
    """A real issue_comment payload; on a pull request its issue carries `pull_request`."""
    event = payload("issue_comment.created")
    event["action"] = action
    event["comment"]["body"] = body
    if on_pull:
        number = event["issue"]["number"]
        event["issue"]["pull_request"] = {
            "url": f"https://api.github.com/repos/{SAME_REPO}/pulls/{number}",
            "html_url": f"https://github.com/{SAME_REPO}/pull/{number}",
            "diff_url": f"https://github.com/{SAME_REPO}/pull/{number}.diff",
            "patch_url": f"https://github.com/{SAME_REPO}/pull/{number}.patch",
            "merged_at": None}
    return event


def test_the_fixtures_are_githubs_shapes() -> None:
    assert "pull_request" not in payload("issue_comment.created")["issue"]
    assert payload("pull_request.synchronize")["pull_request"]["head"]["sha"]


# -- pull request events ---------------------------------------------------------

SAME = PullRequest(number=42, base_sha=BASE, head_sha=HEAD, fork=False, base_ref="master",
                   default_branch="master")
FORK = PullRequest(number=42, base_sha=BASE, head_sha=HEAD, fork=True, base_ref="master",
                   default_branch="master")


@pytest.mark.parametrize(("event_name", "head_repo", "policy", "expected"), [
    ("pull_request", SAME_REPO, ForkPolicy.REQUIRE_COMMAND, RunCheck(SAME)),
    ("pull_request", SAME_REPO, ForkPolicy.RUN, RunCheck(SAME)),
    ("pull_request_target", SAME_REPO, ForkPolicy.REQUIRE_COMMAND, RunCheck(SAME)),
    ("pull_request_target", SAME_REPO, ForkPolicy.RUN, RunCheck(SAME)),
    # A fork under pull_request has no secrets and a read-only token, whatever the policy.
    ("pull_request", FORK_REPO, ForkPolicy.REQUIRE_COMMAND, CannotRunFork(FORK)),
    ("pull_request", FORK_REPO, ForkPolicy.RUN, CannotRunFork(FORK)),
    # Under pull_request_target a stranger's PR must not spend the key unless allowed.
    ("pull_request_target", FORK_REPO, ForkPolicy.REQUIRE_COMMAND, AwaitCommand(FORK)),
    ("pull_request_target", FORK_REPO, ForkPolicy.RUN, RunCheck(FORK)),
    ("pull_request_target", None, ForkPolicy.REQUIRE_COMMAND, AwaitCommand(FORK)),
])
def test_pull_request_events(event_name: str, head_repo: str | None, policy: ForkPolicy,
                             expected: object) -> None:
    assert decide(event_name, pull_event(head_repo=head_repo), fork_policy=policy) == expected


@pytest.mark.parametrize("action", ["opened", "synchronize", "reopened"])
def test_checked_pull_request_actions(action: str) -> None:
    assert decide("pull_request", pull_event(action)) == RunCheck(SAME)


def test_an_edit_that_changes_the_base_is_decided_again() -> None:
    event = pull_event("edited")
    event["changes"] = {"base": {"ref": {"from": "legacy"}, "sha": {"from": "b" * 40}}}
    assert decide("pull_request", event) == RunCheck(SAME)
    event["pull_request"]["head"]["repo"]["full_name"] = "stranger/Hello-World"
    assert decide("pull_request_target", event) == AwaitCommand(FORK)


def test_an_edit_that_keeps_the_base_is_ignored() -> None:
    event = pull_event("edited")
    event["changes"] = {"title": {"from": "Old title"}}
    activity = decide("pull_request", event)
    assert isinstance(activity, Ignore) and "base" in activity.reason


@pytest.mark.parametrize("fixture", ["pull_request.closed", "pull_request.labeled"])
def test_other_pull_request_actions_are_ignored(fixture: str) -> None:
    activity = decide("pull_request", payload(fixture))
    assert isinstance(activity, Ignore) and payload(fixture)["action"] in activity.reason


def test_the_real_synchronize_payload_runs_on_its_own_shas() -> None:
    event = payload("pull_request.synchronize")
    activity = decide("pull_request", event)
    assert activity == RunCheck(PullRequest(number=event["number"],
                                            base_sha=event["pull_request"]["base"]["sha"],
                                            head_sha=event["pull_request"]["head"]["sha"],
                                            fork=False, base_ref="master",
                                            default_branch="master"))


# -- comments --------------------------------------------------------------------

@pytest.mark.parametrize(("body", "expected"), [
    ("/flipgate run", ("run", None)),
    ("/flipgate run\n\nplease, the judge flaked", ("run", None)),
    ("  /flipgate   run  \r\nthanks", ("run", None)),
    ("\n/flipgate run", ("run", None)),
    ("/flipgate", ("help", None)),
    ("/flipgate help", ("help", None)),
    ("/flipgate rerun", ("help", "rerun")),
    ("/flipgate run now", ("help", "run now")),
    ("/flipgate <img src=x> `@here`", ("help", "<img src=x> `@here`")),
    ("/flipgate run 123456", ("help", "run 123456")),       # shorter than git's 7
    ("/flipgate run 9fceb02 now", ("help", "run 9fceb02 now")),
    ("/flipgate run HEAD~1", ("help", "run HEAD~1")),
    ("Thanks, now:\n/flipgate run", ("run", None)),              # any line of the comment
])
def test_parse_command(body: str, expected: tuple[str, str | None]) -> None:
    parsed = parse_command(body)
    assert parsed is not None and (parsed.name, parsed.unknown) == expected


@pytest.mark.parametrize(("body", "sha"), [
    ("/flipgate run", None),
    ("/flipgate run 9fceb02", "9fceb02"),
    ("/flipgate run 9FCEB02D0AE598E95DC970B74767F19372D61AF8",
     "9fceb02d0ae598e95dc970b74767f19372d61af8"),
])
def test_run_may_name_the_commit_to_evaluate(body: str, sha: str | None) -> None:
    parsed = parse_command(body)
    assert parsed is not None and (parsed.name, parsed.sha) == ("run", sha)


@pytest.mark.parametrize("body", [
    "", "LGTM", "please /flipgate run", "> /flipgate run", "/flipgateway run",
    "/Flipgate run", "text\n> /flipgate run", "```\n/flipgate run\n```",
])
def test_text_that_is_not_a_command(body: str) -> None:
    assert parse_command(body) is None


def test_run_command_on_a_pull_request() -> None:
    event = comment_event("/flipgate run 9FCEB02")
    assert decide("issue_comment", event) == RunCommand(
        number=event["issue"]["number"], comment_id=event["comment"]["id"],
        author=event["comment"]["user"]["login"],
        created_at=datetime(2019, 5, 15, 15, 20, 21, tzinfo=UTC), sha="9fceb02")


def test_accept_command_on_a_pull_request_carries_when_it_was_written() -> None:
    event = comment_event("Read the three held-back flips; they are fine.\n/flipgate accept")
    assert decide("issue_comment", event) == AcceptCommand(
        number=event["issue"]["number"], comment_id=event["comment"]["id"],
        author=event["comment"]["user"]["login"],
        created_at=datetime(2019, 5, 15, 15, 20, 21, tzinfo=UTC))


def test_a_label_command_carries_when_it_was_written_for_a_review_decision() -> None:
    activity = decide("issue_comment", comment_event("/flipgate label q1 ungrounded"))
    assert activity.created_at == datetime(2019, 5, 15, 15, 20, 21, tzinfo=UTC)  # type: ignore[union-attr]


@pytest.mark.parametrize(("body", "unknown"), [
    ("/flipgate help", None), ("/flipgate", None), ("/flipgate frobnicate", "frobnicate"),
    ("/flipgate accept all", "accept all"), ("/flipgate accept 9fceb02", "accept 9fceb02"),
])
def test_help_and_unknown_commands_answer_with_usage(body: str, unknown: str | None) -> None:
    activity = decide("issue_comment", comment_event(body))
    assert isinstance(activity, UsageCommand) and activity.unknown == unknown


@pytest.mark.parametrize(("event", "says"), [
    (comment_event("/flipgate run", action="edited"), "edit"),
    (comment_event("/flipgate run", action="deleted"), "deleted"),
    (comment_event("/flipgate run", on_pull=False), "not a pull request"),
    (payload("issue_comment.created"), "not a /flipgate command"),
    (comment_event("Thanks for the review!"), "not a /flipgate command"),
])
def test_comments_that_are_ignored(event: dict[str, Any], says: str) -> None:
    activity = decide("issue_comment", event)
    assert isinstance(activity, Ignore) and says in activity.reason


def test_the_real_edited_payload_is_ignored_even_when_it_reads_as_a_command() -> None:
    event = payload("issue_comment.edited")
    event["comment"]["body"] = "/flipgate run"
    assert isinstance(decide("issue_comment", event), Ignore)


@pytest.mark.parametrize("event_name", ["push", "schedule", "issues"])
def test_other_events_are_ignored(event_name: str) -> None:
    activity = decide(event_name, {})
    assert isinstance(activity, Ignore) and event_name in activity.reason


def test_workflow_dispatch_evaluates_the_pull_request_named_by_the_input() -> None:
    payload = {"inputs": {"pr-number": "42"}, "sender": {"login": "maintainer"}}
    assert decide("workflow_dispatch", payload, pr_number=42) == RunDispatch(42, "maintainer")


def test_workflow_dispatch_without_a_pull_request_number_is_bad_input() -> None:
    with pytest.raises(InputError, match="pr-number"):
        decide("workflow_dispatch", {"inputs": {}})


def test_a_payload_missing_what_its_event_needs_is_bad_input() -> None:
    event = pull_event()
    del event["pull_request"]["head"]
    with pytest.raises(InputError, match="head"):
        decide("pull_request", event)


@pytest.mark.parametrize(("permission", "allowed"), [
    ("admin", True), ("maintain", True), ("write", True),
    ("triage", False), ("read", False), ("none", False), (None, False),
])
def test_who_may_command(permission: str | None, allowed: bool) -> None:
    assert may_command(permission) is allowed


def test_load_event_reports_a_broken_file(tmp_path: Path) -> None:
    broken = tmp_path / "event.json"
    broken.write_text("{not json")
    with pytest.raises(InputError, match="event.json"):
        load_event(broken)
    with pytest.raises(InputError, match="cannot read"):
        load_event(tmp_path / "missing.json")


# -- settings --------------------------------------------------------------------

ENV = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": "/github/workflow/event.json",
       "GITHUB_REPOSITORY": "octo-org/prompt-service", "GITHUB_RUN_ID": "9001",
       "GITHUB_SERVER_URL": "https://github.example.com",
       "GITHUB_API_URL": "https://github.example.com/api/v3/"}


def test_settings_read_hyphenated_inputs_and_hide_secrets() -> None:
    settings = Settings.from_env({**ENV, "INPUT_GITHUB-TOKEN": "ghs_secret_token",
                                  "INPUT_OPENAI-API-KEY": "sk-secret-key",
                                  "INPUT_STATUS-CONTEXT": "flipgate/prod",
                                  "INPUT_FORK-POLICY": "run", "INPUT_CONFIG": "ci/flipgate.yml"})
    assert (settings.token, settings.status_context, settings.fork_policy, settings.config) == (
        "ghs_secret_token", "flipgate/prod", ForkPolicy.RUN, "ci/flipgate.yml")
    assert settings.api_url == "https://github.example.com/api/v3"
    assert settings.run_url == ("https://github.example.com/octo-org/prompt-service"
                                "/actions/runs/9001")
    assert "ghs_secret_token" not in repr(settings) and "sk-secret-key" not in repr(settings)


@pytest.mark.parametrize(("inputs", "mode", "number"), [
    ({}, "always", None),
    ({"INPUT_COMMENT": "never", "INPUT_PR-NUMBER": "17"}, "never", 17),
    ({"INPUT_COMMENT": "on-change", "INPUT_PR-NUMBER": "#8"}, "on-change", 8),
])
def test_settings_read_the_comment_mode_and_pr_number(inputs: dict[str, str], mode: str,
                                                      number: int | None) -> None:
    settings = Settings.from_env({**ENV, "GITHUB_TOKEN": "t", **inputs})
    assert (settings.comment_mode.value, settings.pr_number) == (mode, number)


def test_settings_defaults_and_the_token_fallback() -> None:
    settings = Settings.from_env({**ENV, "GITHUB_TOKEN": "ghs_env", "INPUT_CONFIG": "",
                                  "INPUT_FORK-POLICY": ""})
    assert (settings.token, settings.config, settings.status_context, settings.fork_policy) == (
        "ghs_env", ".flipgate.yml", "flipgate", ForkPolicy.REQUIRE_COMMAND)


def test_settings_report_every_problem_at_once() -> None:
    with pytest.raises(InputError) as caught:
        Settings.from_env({"GITHUB_REPOSITORY": "no-slash", "INPUT_FORK-POLICY": "always",
                           "INPUT_COMMENT": "sometimes", "INPUT_PR-NUMBER": "latest"})
    text = str(caught.value)
    for expected in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "owner/name", "github-token",
                     "`require-command` or `run`", "`always` or `on-change` or `never`",
                     "pull request number, got 'latest'"):
        assert expected in text


def test_model_keys_are_masked_before_they_are_exported() -> None:
    settings = Settings.from_env({**ENV, "INPUT_GITHUB-TOKEN": "ghs_t",
                                  "INPUT_OPENAI-API-KEY": "sk-one",
                                  "INPUT_AZURE-OPENAI-API-KEY": "az-two"})
    events: list[str] = []

    class Recording(dict):
        def __setitem__(self, key: str, value: str) -> None:
            events.append(f"export {key}")
            super().__setitem__(key, value)

    environ = Recording()
    exported = export_model_keys(settings, environ, mask=lambda s: events.append(f"mask {s}"))
    assert exported == ["OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"]
    assert environ == {"OPENAI_API_KEY": "sk-one", "AZURE_OPENAI_API_KEY": "az-two"}
    assert events == ["mask ghs_t", "mask sk-one", "export OPENAI_API_KEY",
                      "mask az-two", "export AZURE_OPENAI_API_KEY"]


def test_a_comment_from_a_deleted_account_is_the_ghosts() -> None:
    event = comment_event("/flipgate run")
    event["comment"]["user"] = None
    activity = decide("issue_comment", event)
    assert isinstance(activity, RunCommand) and activity.author == "ghost"
