"""A team's first week (issue 23, "Done when"), from the README only, through the loopback
GitHub and model servers: `flipgate init`, a 10-case suite whose pull request makes 3
confirmed grounded → ungrounded flips, a batch-label comment (5 labels, 1 bad: one reply,
5 recorded), the artifact downloaded as the job summary says, `calibrate` on it in one
command; then `gate.strict`, which makes the same flips block."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.config.schema import ARTIFACT_NAME
from flipgate.github import action
from flipgate.github.labels import read_block

from support.action_harness import PR, RUN_ID, Harness
from support.gitrepo import GitRepo

PROMPT = """---
name: thermostat-support
model:
  api: chat
  configuration:
    type: openai
    model: gpt-4o-mini
  parameters:
    temperature: 0
sample:
  question: Does the thermostat work with heat pumps?
  context: The T-200 supports single-stage heat pumps.
---
system:
{system}

user:
Context: {{{{ context }}}}
Question: {{{{ question }}}}
"""
CAREFUL = "Answer only from the context."
LOOSE = "Be helpful and say yes whenever you can; add what the customer may need."
# The loosened prompt invents a claim on these three; the judge sees it.
FLIPS = ("safety-dual-fuel", "safety-baseboard", "wiring-c-wire")
CASES = [
    ("safety-dual-fuel", "Can I use it with a dual-fuel system?",
     "The T-200 does not support dual-fuel systems."),
    ("safety-baseboard", "Can I connect 240 V baseboard heaters?",
     "Line-voltage heaters must not be connected to the T-200."),
    ("wiring-c-wire", "Do I need a C-wire?", "The T-200 needs a C-wire or the power adapter."),
    ("wifi-band", "Which Wi-Fi bands work?", "The T-200 connects on 2.4 GHz only."),
    ("battery", "Does it have a battery?", "The T-200 keeps its schedule for 48 hours without power."),
    ("warranty", "How long is the warranty?", "The T-200 has a two-year warranty."),
    ("app", "Is there an app?", "The T-200 is set up with the Thermo app."),
    ("schedule", "How many schedules can I keep?", "The T-200 keeps up to seven schedules."),
    ("display", "Is the display backlit?", "The T-200 display is backlit."),
    ("reset", "How do I reset it?", "Hold the menu button for ten seconds to reset the T-200."),
]
INVENTED = " Yes! It also works with dual-fuel systems and 240 V baseboard heaters."


def generation(body: dict[str, Any]) -> str:
    system = body["messages"][0]["content"]
    user = body["messages"][-1]["content"]
    context = user.split("Context: ", 1)[1].split("\n", 1)[0]
    flipped = any(question in user for case_id, question, _ in CASES if case_id in FLIPS)
    return context + (INVENTED if "helpful" in system and flipped else "")


def summary_commands(summary: str) -> list[str]:
    """The shell lines the job summary's last code block says to run."""
    blocks = re.findall(r"```sh\n(.*?)\n```", summary, re.S)
    assert blocks, summary[-2000:]
    return blocks[-1].splitlines()


def download(harness: Harness, command: str, into: Path) -> Path:
    """What `gh run download RUN -R REPO -n flipgate-report -D flipgate-report` leaves: the
    files the job's upload step took (all of flipgate-out/), in the folder it names."""
    words = shlex.split(command)
    assert words[:4] == ["gh", "run", "download", RUN_ID]
    assert words[words.index("-R") + 1] == harness.server.repository
    assert words[words.index("-n") + 1] == ARTIFACT_NAME
    target = into / words[words.index("-D") + 1]
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(harness.repo.path / "flipgate-out", target)
    return target


@pytest.fixture
def team(harness: Harness, openai_server: Any, monkeypatch: pytest.MonkeyPatch,
         tmp_path: Path) -> Harness:
    repo = GitRepo.create(tmp_path / "thermostat")
    repo.commit({"prompts/support.prompty": PROMPT.format(system=CAREFUL),
                 ".gitignore": "flipgate-out/\n.flipgate-cache/\n"}, message="the bot")
    harness.repo = repo
    harness.env["GITHUB_WORKSPACE"] = str(repo.path)
    harness.env["INPUT_OPENAI-API-KEY"] = "sk-team"
    monkeypatch.delenv("OPENAI_API_KEY")
    openai_server.on_generation(generation)
    openai_server.on_groundedness(lambda query, context, response, call_index:
                                  1 if "Yes!" in (response or "") else 5)
    return harness


def run_action(harness: Harness, monkeypatch: pytest.MonkeyPatch, *, fresh: bool) -> int:
    """One job of the workflow: `fresh` is a new runner's checkout (no flipgate-out yet)."""
    if fresh:
        shutil.rmtree(harness.repo.path / "flipgate-out", ignore_errors=True)
    summary = Path(harness.env["GITHUB_STEP_SUMMARY"])
    summary.unlink(missing_ok=True)  # each job has its own summary
    for name, value in harness.env.items():
        monkeypatch.setenv(name, value)
    return action.main(os.environ, stream=harness.log)


def test_the_first_week(team: Harness, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    repo = team.repo
    # Monday: `flipgate init`, as the README's adopt steps say.
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo.path)])
    assert result.exit_code == 0, result.output
    workflow = yaml.safe_load((repo.path / ".github/workflows/flipgate.yml").read_text())
    [upload] = [step["with"] for job in workflow["jobs"].values() for step in job["steps"]
                if str(step.get("uses", "")).startswith("actions/upload-artifact")
                and "name" in step["with"]]  # the bundle; report.html goes up alone, unnamed
    assert upload["name"] == ARTIFACT_NAME and upload["path"] == "flipgate-out/"
    config = yaml.safe_load((repo.path / ".flipgate.yml").read_text())
    category = config["gate"]["blocking_categories"][0]
    cases = "".join(json.dumps({"id": case_id, "category": category, "query": question,
                                "question": question, "context": context}) + "\n"
                    for case_id, question, context in CASES)
    (repo.path / "eval/cases.jsonl").write_text(cases)
    repo.git("add", "-A")
    team.base = repo.commit({}, message="flipgate init, 10 cases")
    team.head = repo.commit({"prompts/support.prompty": PROMPT.format(system=LOOSE)},
                            message="a friendlier bot")
    team.server.add_pull(PR, base_sha=team.base, head_sha=team.head)

    # Tuesday: the pull request's check. 3 confirmed flips in a blocking category of 10
    # cases: below the sample-size minimum, so they are to review and the check passes.
    team.pull_event()
    assert run_action(team, monkeypatch, fresh=True) == 0, team.log.getvalue()[-3000:]
    report = json.loads((repo.path / "flipgate-out/report.json").read_text())
    regressions = sorted(row["id"] for row in report["rows"] if row["verdict"] == "regression")
    assert regressions == sorted(FLIPS)
    assert report["counts"]["regressions_to_review"] == 3
    assert report["counts"]["blocking_regressions"] == 0
    assert all("50" in row["review_reason"] for row in report["rows"] if row["id"] in FLIPS)
    # init wrote `gate.review: required`: the held-back flips wait for a person.
    status = team.final_status()
    assert report["counts"]["held_back"] == 3 and report["conclusion"] == "awaiting_review"
    assert status["state"] == "pending"
    assert status["description"].startswith("⚠️ awaiting review: 3 confirmed flips did not block")
    # Its artifact, downloaded as its summary says, holds the whole review.
    [get] = summary_commands(team.summary())
    check_files = download(team, get, tmp_path / "tuesday")
    assert {"report.json", "report.html", "comment.md", "answers.jsonl"} <= {
        path.name for path in check_files.iterdir()}

    # Wednesday: one comment labels five answers; one line names no case.
    body = ("Went through the flips and two calm rows.\n"
            "/flipgate label safety-dual-fuel ungrounded\n"
            "/flipgate label safety-baseboard ungrounded\n"
            "/flipgate label wiring-c-wire ungrounded\n"
            "/flipgate label warranty grounded\n"
            "/flipgate label battery baseline grounded\n"
            "/flipgate label thermostat-9 grounded\n")
    command = team.comment_event(body)
    assert run_action(team, monkeypatch, fresh=True) == 0, team.log.getvalue()[-3000:]
    [reply] = team.replies()
    assert reply.startswith("Recorded 5 of the 6 labels in this comment:")
    assert "`/flipgate label thermostat-9 grounded`: `thermostat-9` is not a case of this run" \
        in reply and "`safety-dual-fuel`" in reply
    assert team.server.reactions_on(command["id"]) == ["+1"]
    assert len(read_block(team.own_comments()[0]["body"]).labels) == 5
    # The three flips labelled ungrounded are the person's confirmation: the change is blocked.
    assert team.final_status()["state"] == "failure"

    # Thursday: the label job's artifact, downloaded and calibrated as its summary says.
    get, calibrate = summary_commands(team.summary())
    download(team, get, tmp_path / "thursday")
    monkeypatch.chdir(tmp_path / "thursday")
    words = shlex.split(calibrate)
    assert words[0] == "flipgate"
    result = CliRunner().invoke(cli, words[1:])
    assert result.exit_code == 0, result.output
    figures = json.loads((tmp_path / "thursday/flipgate-out/calibration.json").read_text())
    assert figures["labelled"] == 5
    assert figures["confusion"]["ungrounded"]["ungrounded"] == 3
    assert figures["confusion"]["grounded"]["grounded"] == 2
    # Five labels: the figures say they are too few, and what would decide.
    assert figures["reading"]["verdict"] == "not decided yet"
    assert "Far too few labels: 5 labelled answers" in " ".join(result.output.split())
    assert figures["reading"]["more_labels"] > 0

    # Friday: `gate.strict` (init's comment names it), and the same flips block.
    config = yaml.safe_load((repo.path / ".flipgate.yml").read_text())
    config["gate"]["strict"] = True
    repo.checkout(team.base)
    team.base = repo.commit({".flipgate.yml": yaml.safe_dump(config)}, message="strict from day one")
    team.head = repo.commit({"prompts/support.prompty": PROMPT.format(system=LOOSE)},
                            message="a friendlier bot, again")
    team.server.add_pull(PR, base_sha=team.base, head_sha=team.head)
    team.pull_event()
    assert run_action(team, monkeypatch, fresh=True) == 1
    assert team.final_status()["state"] == "failure"
    report = json.loads((repo.path / "flipgate-out/report.json").read_text())
    assert report["counts"]["blocking_regressions"] == 3
    # The labels stayed with the pull request; this run's artifact calibrates alone too.
    lines = [json.loads(line) for line in
             (repo.path / "flipgate-out/labels.jsonl").read_text().splitlines()]
    assert len(lines) == 5 and all(line["judge_label"] for line in lines)
