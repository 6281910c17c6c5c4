"""Every field `flipgate action` reads from the event payload, broken every way it can be:
null, the wrong type, missing. Each ends in exit 2 with one error line naming the field,
before any GitHub call, never a traceback.

The payloads are GitHub's real ones (tests/fixtures/github), with one field broken.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from flipgate.github import action

from support.github_server import FakeGitHub


@pytest.fixture(scope="module")
def github_server() -> Any:
    """One server for the whole table; each test checks that it sent it nothing."""
    server = FakeGitHub()
    server.start()
    try:
        yield server
    finally:
        server.stop()

PAYLOADS = Path(__file__).parents[1] / "fixtures" / "github"
OBJECT, STRING, NUMBER, SHA, TIME, NULLABLE_OBJECT, NULLABLE_STRING = (
    "object", "string", "number", "sha", "time", "nullable object", "nullable string")

# Every field read, per event, with what it must be.
PULL_REQUEST_FIELDS = {
    "action": STRING,
    "pull_request": OBJECT,
    "pull_request.number": NUMBER,
    "pull_request.head": OBJECT,
    "pull_request.head.sha": SHA,
    "pull_request.head.repo": NULLABLE_OBJECT,  # null: the fork was deleted
    "pull_request.head.repo.full_name": STRING,
    "pull_request.base": OBJECT,
    "pull_request.base.sha": SHA,
    "pull_request.base.ref": STRING,
    "pull_request.base.repo": OBJECT,
    "pull_request.base.repo.full_name": STRING,
    "pull_request.base.repo.default_branch": STRING,
}
COMMENT_FIELDS = {
    "action": STRING,
    "issue": OBJECT,
    "issue.number": NUMBER,
    "issue.pull_request": OBJECT,  # absent on a plain issue (that is not an error)
    "comment": OBJECT,
    "comment.body": NULLABLE_STRING,
    "comment.id": NUMBER,
    "comment.user": NULLABLE_OBJECT,  # null: a deleted account, read as GitHub's ghost
    "comment.user.login": STRING,
    "comment.created_at": TIME,
}
# Values of the wrong type (or shape) for each kind of field.
WRONG = {
    OBJECT: ["a string", 42, [1]],
    NULLABLE_OBJECT: ["a string", 42],
    STRING: [42, True, {"nested": 1}],
    NULLABLE_STRING: [42, ["/flipgate run"]],
    NUMBER: ["42", 4.2, True, 0, -1],
    SHA: [42, "main", "ec26c3e", "EC26C3E57CA3A959CA5AAD62DE7213C562F8C821"],
    TIME: [42, "yesterday", "2019-05-15T15:20:21"],  # the last one has no time zone
}


def pull_request_event() -> dict[str, Any]:
    return json.loads((PAYLOADS / "pull_request.synchronize.json").read_text())


def comment_event() -> dict[str, Any]:
    """The real issue_comment payload as it reads on a pull request, with a command."""
    event = json.loads((PAYLOADS / "issue_comment.created.json").read_text())
    event["comment"]["body"] = "/flipgate run"
    number = event["issue"]["number"]
    event["issue"]["pull_request"] = {
        "url": f"https://api.github.com/repos/Codertocat/Hello-World/pulls/{number}",
        "html_url": f"https://github.com/Codertocat/Hello-World/pull/{number}",
        "diff_url": f"https://github.com/Codertocat/Hello-World/pull/{number}.diff",
        "patch_url": f"https://github.com/Codertocat/Hello-World/pull/{number}.patch",
        "merged_at": None}
    return event


EVENTS = {"pull_request": (pull_request_event, PULL_REQUEST_FIELDS),
          "pull_request_target": (pull_request_event, PULL_REQUEST_FIELDS),
          "issue_comment": (comment_event, COMMENT_FIELDS)}


def broken(event: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`event` with the field at `path` set to `value` (or deleted, for `...`)."""
    *parents, name = path.split(".")
    holder = event
    for parent in parents:
        holder = holder[parent]
    if value is ...:
        del holder[name]
    else:
        holder[name] = value
    return event


def cases() -> list[Any]:
    table = []
    for event_name, (_, fields) in EVENTS.items():
        for path, kind in fields.items():
            values = [*WRONG[kind]]
            if not kind.startswith("nullable"):
                values.append(None)
            if path != "issue.pull_request":
                values.append(...)
            table += [pytest.param(event_name, path, value,
                                   id=f"{event_name}:{path}={'missing' if value is ... else value!r}")
                      for value in values]
    return table


def run_action(tmp_path: Path, server: FakeGitHub, event_name: str,
               event: dict[str, Any]) -> tuple[int, str]:
    server.requests.clear()
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    env = {"GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(path),
           "GITHUB_REPOSITORY": server.repository, "GITHUB_API_URL": server.api_url,
           "GITHUB_WORKSPACE": str(tmp_path), "INPUT_GITHUB-TOKEN": server.token}
    log = io.StringIO()

    def no_check(**kwargs: Any) -> Any:
        raise AssertionError("a malformed payload must never reach the check")

    return action.main(env, check=no_check, stream=log), log.getvalue()


@pytest.mark.parametrize(("event_name", "path", "value"), cases())
def test_a_broken_field_is_exit_2_with_one_line_naming_it(tmp_path: Path,
                                                          github_server: FakeGitHub,
                                                          event_name: str, path: str,
                                                          value: Any) -> None:
    make, _ = EVENTS[event_name]
    exit_code, log = run_action(tmp_path, github_server, event_name,
                                broken(make(), path, value))

    errors = [line for line in log.splitlines() if line.startswith("::error")]
    assert exit_code == 2, log
    assert len(errors) == 1 and f"`{path}`" in errors[0], log
    assert "Traceback" not in log
    assert github_server.requests == []


@pytest.mark.parametrize(("event_name", "path", "value", "says"), [
    ("pull_request", "pull_request.head.repo", None, "fork"),  # a deleted fork: a fork's PR
    ("issue_comment", "comment.body", None, "not a /flipgate command"),
    ("issue_comment", "issue.pull_request", ..., "not a pull request"),
])
def test_the_absences_github_really_sends_are_not_errors(tmp_path: Path,
                                                          github_server: FakeGitHub,
                                                          event_name: str, path: str,
                                                          value: Any, says: str) -> None:
    make, _ = EVENTS[event_name]
    exit_code, log = run_action(tmp_path, github_server, event_name,
                                broken(make(), path, value))
    assert exit_code == 0 and says in log and "::error" not in log


@pytest.mark.parametrize("event_name", list(EVENTS))
def test_the_unbroken_payloads_pass_the_reading(tmp_path: Path, github_server: FakeGitHub,
                                                event_name: str) -> None:
    """The table's base payloads are valid: every failure above comes from its one field."""
    make, _ = EVENTS[event_name]
    _, log = run_action(tmp_path, github_server, event_name, make())
    assert "GITHUB_EVENT_PATH" not in log
    assert github_server.requests  # read fine, so the action went on to GitHub
