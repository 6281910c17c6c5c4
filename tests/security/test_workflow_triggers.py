"""The workflows' `if:` and concurrency groups, evaluated as data against GitHub's real
payload shapes: who starts a job, and which job can cancel which (issue 22, item 3).
The workflow `flipgate init` writes and both of docs/action.md's are held to the same rules.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from flipgate.config.starter import Starter, workflow_text
from flipgate.github.event import command_lines

from support.workflow_expressions import interpolate, job_runs

ROOT = Path(__file__).resolve().parents[2]
PAYLOADS = ROOT / "tests" / "fixtures" / "github"


def documented(page: str) -> list[dict[str, Any]]:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return [yaml.safe_load(block) for block in
            re.findall(r"```yaml\n(name: flipgate\n.*?)```", text, re.S)]


WORKFLOWS = {"init": yaml.safe_load(workflow_text(Starter(generator="prompts/answer.prompty"))),
             **{f"{page}-{index}": workflow for page in ("action.md", "azure.md")
                for index, workflow in enumerate(documented(page))}}


def pull_event_name(workflow: dict[str, Any]) -> str:
    triggers = workflow.get("on", workflow.get(True))
    [name] = [name for name in triggers if name.startswith("pull_request")]
    return name


def pull_payload(action: str = "synchronize", **changes: Any) -> dict[str, Any]:
    event = json.loads((PAYLOADS / "pull_request.synchronize.json").read_text())
    event["action"] = action
    if changes:
        event["changes"] = changes
    return event


def comment_payload(body: str, *, association: str = "OWNER", comment_id: int = 7,
                    on_pull: bool = True) -> dict[str, Any]:
    event = json.loads((PAYLOADS / "issue_comment.created.json").read_text())
    event["comment"].update(body=body, author_association=association, id=comment_id)
    if on_pull:
        event["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/1"}
    return event


def job(name: str) -> dict[str, Any]:
    return WORKFLOWS[name]["jobs"]["flipgate"]


def context(event_name: str, event: dict[str, Any]) -> dict[str, Any]:
    return {"github": {"event_name": event_name, "event": event, "run_id": "1"}}


def starts(name: str, event_name: str, event: dict[str, Any]) -> bool:
    return job_runs(job(name)["if"], context(event_name, event))


def group(name: str, event_name: str, event: dict[str, Any]) -> tuple[str, bool]:
    concurrency = job(name)["concurrency"]
    cancels = interpolate(str(concurrency["cancel-in-progress"]), context(event_name, event))
    return interpolate(concurrency["group"], context(event_name, event)), cancels == "true"


@pytest.fixture(params=sorted(WORKFLOWS))
def workflow(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_docs_show_both_workflows() -> None:
    # action.md: the workflow, the same with manual runs, the pull_request_target one.
    assert sorted(WORKFLOWS) == ["action.md-0", "action.md-1", "action.md-2", "azure.md-0",
                                 "init"]
    assert {pull_event_name(w) for w in WORKFLOWS.values()} == {"pull_request",
                                                                "pull_request_target"}


@pytest.mark.parametrize("action", ["opened", "synchronize", "reopened"])
def test_every_push_starts_a_job(workflow: str, action: str) -> None:
    assert starts(workflow, pull_event_name(WORKFLOWS[workflow]), pull_payload(action))


def test_an_edit_starts_a_job_only_when_the_base_changed(workflow: str) -> None:
    event_name = pull_event_name(WORKFLOWS[workflow])
    assert "edited" in WORKFLOWS[workflow].get("on", WORKFLOWS[workflow].get(True))[event_name][
        "types"]
    assert starts(workflow, event_name, pull_payload("edited", base={"ref": {"from": "legacy"}}))
    assert not starts(workflow, event_name, pull_payload("edited", title={"from": "Old"}))


@pytest.mark.parametrize("body", [
    "/flipgate run", "/flipgate", "Looks good!\n/flipgate label refund-007 partial",
    "/flipgate accept", "Read the held-back flips: fine.\r\n/flipgate accept",
    "Looks good!\r\n/flipgate label refund-007 partial\r\n/flipgate label card-002 grounded"])
@pytest.mark.parametrize("association", ["OWNER", "MEMBER", "COLLABORATOR"])
def test_a_writers_command_line_anywhere_starts_a_job(workflow: str, body: str,
                                                      association: str) -> None:
    assert starts(workflow, "issue_comment", comment_payload(body, association=association))


# Where a command line may stand: the start of the comment or of a line (LF, CRLF, or a
# lone CR, which Markdown also ends a line with), after spaces or a tab.
_LEADS = ["", "Thanks!\n", "Thanks!\r\n", "> their words\n\n", "Thanks!\r"]
_INDENTS = ["", " ", "  ", "   ", "    ", "\t", " \t"]


@pytest.mark.parametrize("lead", _LEADS)
@pytest.mark.parametrize("indent", _INDENTS)
@pytest.mark.parametrize("command", ["run", "accept"])
def test_every_line_the_reader_obeys_starts_a_job(workflow: str, lead: str, indent: str,
                                                  command: str) -> None:
    """The filter and the reader agree on what a command line is (issue 28): the reader
    takes a line that starts after a line feed, or the comment's start, with at most three
    spaces before `/flipgate`, which is exactly what the filter looks for."""
    body = f"{lead}{indent}/flipgate {command}"
    read = bool(command_lines(body))
    assert read == (indent in ("", " ", "  ", "   ") and not lead.endswith("\r"))
    assert starts(workflow, "issue_comment", comment_payload(body)) == read


@pytest.mark.parametrize("association", ["NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR",
                                         "FIRST_TIMER", "MANNEQUIN"])
def test_a_strangers_comment_starts_no_job(workflow: str, association: str) -> None:
    assert not starts(workflow, "issue_comment",
                      comment_payload("/flipgate run", association=association))


@pytest.mark.parametrize("body", ["Thanks! I will /flipgate run later", "plain text", ""])
def test_comments_without_a_command_line_start_no_job(workflow: str, body: str) -> None:
    assert not starts(workflow, "issue_comment", comment_payload(body))


def test_a_command_on_a_plain_issue_starts_no_job(workflow: str) -> None:
    assert not starts(workflow, "issue_comment", comment_payload("/flipgate run", on_pull=False))


def test_no_comment_can_cancel_another_comments_job(workflow: str) -> None:
    first = group(workflow, "issue_comment", comment_payload("/flipgate run", comment_id=7))
    stranger = group(workflow, "issue_comment", comment_payload("/flipgate", comment_id=8))
    push = group(workflow, pull_event_name(WORKFLOWS[workflow]), pull_payload())
    assert first[0] != stranger[0] and first[0] != push[0]
    assert not first[1] and not stranger[1]  # a comment's job never cancels one in progress


def test_a_push_or_a_new_base_cancels_the_prs_older_run(workflow: str) -> None:
    event_name = pull_event_name(WORKFLOWS[workflow])
    push = group(workflow, event_name, pull_payload())
    retarget = group(workflow, event_name, pull_payload("edited", base={"ref": {"from": "x"}}))
    assert push == retarget and push[1]
    assert push[0] == f"flipgate-{pull_payload()['number']}-pull"


def test_the_monorepo_example_holds_to_the_same_rules() -> None:
    workflow = yaml.safe_load((ROOT / "examples/workflows/flipgate-monorepo.yml").read_text())
    flipgate = workflow["jobs"]["flipgate"]
    stranger = comment_payload("/flipgate run", association="NONE")
    assert not job_runs(flipgate["if"], context("issue_comment", stranger))
    indented = comment_payload("Thanks!\r\n   /flipgate run")
    assert job_runs(flipgate["if"], context("issue_comment", indented))
    assert job_runs(flipgate["if"], context("workflow_dispatch", {"inputs": {"pr-number": "1"}}))
    groups = {interpolate(flipgate["concurrency"]["group"], {
        **context("issue_comment", comment_payload("/flipgate run", comment_id=n)),
        "matrix": {"gate": "support"}}) for n in (7, 8)}
    assert len(groups) == 2
