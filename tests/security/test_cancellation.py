"""A cancelled job must not leave its commit status `pending` (issue 17, item 11).

A required `pending` check blocks the PR until someone reruns it, and a job that
can be made to hang (a slow provider) is one an attacker can have cancelled. The
runner sends SIGINT, then SIGTERM, then kills the process within seconds (7.5 s
from SIGINT to SIGTERM, 2.5 s more to SIGKILL). So the action, in its own process
against the loopback GitHub and model servers, is signalled mid-run and must set
`error` saying it was cancelled, write what it has, and exit at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.action_harness import PR, Harness
from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

CONFIG = """version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
"""
PROMPTY = """---
name: answer
model:
  api: chat
  configuration:
    type: openai
    model: gen-1
---
system:
{system}
user:
{{{{context}}}} {{{{query}}}}
"""
CASES = "".join(json.dumps({"id": f"case-{i}", "query": f"Q{i}?", "context": f"C{i}."}) + "\n"
                for i in range(4))
GRACE = 2.5  # what the runner leaves between SIGTERM and SIGKILL


def start_action(harness: Harness, openai_server: FakeOpenAI, tmp_path: Path) -> subprocess.Popen:
    repo = GitRepo.create(tmp_path / "service")
    harness.base = repo.commit({".flipgate.yml": CONFIG, "eval/cases.jsonl": CASES,
                                "prompts/answer.prompty": PROMPTY.format(system="Be careful.")})
    harness.head = repo.commit({"prompts/answer.prompty": PROMPTY.format(system="Be generous.")})
    harness.repo = repo
    harness.server.add_pull(PR, base_sha=harness.base, head_sha=harness.head)
    harness.pull_event()
    openai_server.latency = 60  # every model request hangs: the job would outlive its timeout
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **harness.env,
           "GITHUB_WORKSPACE": str(repo.path), "INPUT_OPENAI-API-KEY": "sk-test",
           "OPENAI_BASE_URL": openai_server.base_url}
    script = Path(sys.executable).with_name("flipgate")
    return subprocess.Popen([str(script), "action"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(condition, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_job_cancelled_while_the_model_hangs_sets_error_and_exits_within_the_grace(
        signum: int, harness: Harness, openai_server: FakeOpenAI, tmp_path: Path) -> None:
    process = start_action(harness, openai_server, tmp_path)
    try:
        wait_for(lambda: openai_server.requests or process.poll() is not None)
        assert process.poll() is None, process.communicate()
        sent = time.monotonic()
        process.send_signal(signum)
        out, err = process.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert took < GRACE, f"{took:.1f}s"
    assert process.returncode == 3, err
    final = harness.final_status()
    assert final["state"] == "error", harness.server.statuses_for(harness.head)
    assert "cancelled" in final["description"]
    assert [s["state"] for s in harness.server.statuses_for(harness.head)] == ["pending", "error"]
    assert "cancelled" in harness.summary()
    assert harness.outputs().get("conclusion") == "error"
    assert "cancelled" in out and "Traceback" not in err + out


def test_a_second_signal_during_the_cancellation_does_not_leave_pending(
        harness: Harness, openai_server: FakeOpenAI, tmp_path: Path) -> None:
    """SIGINT, then SIGTERM right after (the runner escalates): still one `error`, no trace."""
    process = start_action(harness, openai_server, tmp_path)
    try:
        wait_for(lambda: openai_server.requests or process.poll() is not None)
        process.send_signal(signal.SIGINT)
        time.sleep(0.05)
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == 3, err
    assert harness.final_status()["state"] == "error"
    assert "Traceback" not in err + out
