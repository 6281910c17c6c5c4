"""The action, run as root the way the runner runs the image, leaves a workspace its owner can clean.

A real shallow clone owned by the runner's uid lacks the PR's head, so the action
fetches it (objects and `.git/shallow` written as root); the check stands in for the
pipeline but writes where the pipeline writes (report, reply cache). Afterwards
everything in the workspace belongs to the runner user, who can delete all of it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flipgate.github import action
from flipgate.llm.cache import Cache
from flipgate.model import Report
from flipgate.output.comment import render_comment
from flipgate.output.report import write_json
from flipgate.verdict import gate

from support.factories import make_report, make_row
from support.github_server import FakeGitHub
from support.gitrepo import GitRepo

RUNNER = 1001
PR = 7
PAYLOADS = Path(__file__).resolve().parents[1] / "fixtures" / "github"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                                reason="runs the action as root on a workspace uid 1001 owns")


@dataclass
class CheckResult:
    report: Report
    markdown: str
    exit_code: int


class WritingCheck:
    """Writes a report and a cache entry where the real pipeline would, and passes."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, *, out_dir: Path, cache_dir: Path, comment_limit: int, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        report = make_report([make_row("refund-001", before=5, after=5)])
        write_json(report, out_dir / "report.json")
        Cache(cache_dir).put({"model": "gen-1", "prompt": "hi"}, {"text": "hello"})
        return CheckResult(report=report, markdown=render_comment(report, max_chars=comment_limit),
                           exit_code=gate.exit_code(report.conclusion))


def as_runner(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["setpriv", f"--reuid={RUNNER}", f"--regid={RUNNER}", "--clear-groups",
                           *command], capture_output=True, text=True, check=False)


@pytest.fixture
def runner_home() -> Iterator[Path]:
    """A directory the runner user can reach (pytest's own temporary root is root's, 0700)."""
    home = Path(tempfile.mkdtemp(prefix="flipgate-runner-"))
    home.chmod(0o755)
    yield home
    shutil.rmtree(home)


def test_a_root_run_leaves_nothing_the_runner_user_cannot_delete(
        tmp_path: Path, runner_home: Path, github_server: FakeGitHub) -> None:
    origin = GitRepo.create(tmp_path / "origin")
    base = origin.commit({"prompts/answer.prompty": "v1\n"}, message="base")
    head = origin.commit({"prompts/answer.prompty": "v2\n"}, message="head")
    workspace = runner_home / "workspace"
    origin.branch("base", base)  # a checkout of the base branch only, one commit deep
    subprocess.run(["git", "clone", "-q", "--depth=1", "--branch=base",
                    f"file://{origin.path}", str(workspace)], check=True)
    subprocess.run(["chown", "-R", f"{RUNNER}:{RUNNER}", str(workspace)], check=True)
    shallow_before = (workspace / ".git" / "shallow").read_text()

    github_server.add_pull(PR, base_sha=base, head_sha=head)
    event = json.loads((PAYLOADS / "pull_request.synchronize.json").read_text())
    event["number"] = event["pull_request"]["number"] = PR
    event["pull_request"]["base"]["sha"], event["pull_request"]["head"]["sha"] = base, head
    # The base branch and the default branch as the loopback GitHub serves them.
    event["pull_request"]["base"]["ref"] = "main"
    event["pull_request"]["base"]["repo"]["default_branch"] = "main"
    event["pull_request"]["head"]["repo"] = event["pull_request"]["base"]["repo"]
    (tmp_path / "event.json").write_text(json.dumps(event))
    check = WritingCheck()
    environ = {
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "GITHUB_REPOSITORY": github_server.repository, "GITHUB_API_URL": github_server.api_url,
        "GITHUB_WORKSPACE": str(workspace), "INPUT_GITHUB-TOKEN": github_server.token,
        "GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
    }

    previous = os.umask(0o022)  # what `flipgate action` sets
    try:
        assert action.main(environ, check=check) == 0
    finally:
        os.umask(previous)

    assert check.calls and github_server.statuses_for(head)[-1]["state"] == "success"
    # The fetch deepened the clone (to the merge base: here the whole history, so git
    # dropped the shallow file) and wrote into .git as root.
    shallow = workspace / ".git" / "shallow"
    assert not shallow.exists() or shallow.read_text() != shallow_before
    strangers = [path for path in workspace.rglob("*") if path.lstat().st_uid != RUNNER]
    assert strangers == []
    [entry] = [path for path in (workspace / ".flipgate-cache").rglob("*.json")]
    assert stat.S_IMODE(entry.stat().st_mode) == 0o644
    deleted = as_runner("find", str(workspace), "-mindepth", "1", "-delete")
    assert deleted.returncode == 0, deleted.stderr
    assert list(workspace.iterdir()) == []
