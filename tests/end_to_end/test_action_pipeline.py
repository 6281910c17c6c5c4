"""`flipgate action` running the real pipeline against the loopback OpenAI and GitHub
servers, and the console script as the container runs it.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from flipgate.github import action
from flipgate.github.labels import read_readings, with_readings
from flipgate.github.sticky import marked_fingerprint, with_markers
from flipgate.github.texts import NO_CHANGE, STATUS_LIMIT, WAITING_FOR_COMMAND

from support.action_harness import BLOCKED, COULD_NOT_FINISH, PR, RUN_ID, Harness
from support.gitrepo import GitRepo
from support.prompts import WITH_SYSTEM

CONFIG = """\
version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
gate:
  blocking_categories: [policy]
  strict: true  # a handful of cases: the same-judge re-score may block
relevance:
  threshold: 0.7
  embedding_model: text-embedding-3-small
"""
PROMPTY = WITH_SYSTEM
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

    def run(self, **options: Any) -> int:
        """`flipgate action` in the real process environment, as the container runs it."""
        for name, value in self.harness.env.items():
            self.monkeypatch.setenv(name, value)
        return action.main(os.environ, stream=options.pop("stream", self.harness.log), **options)

    def recommit(self, *, cases: str, config: str = CONFIG) -> None:
        """Base and head again, with these cases and configuration."""
        repo, harness = self.harness.repo, self.harness
        repo.checkout(harness.base)
        harness.base = repo.commit({".flipgate.yml": config, "eval/cases.jsonl": cases,
                                    "prompts/answer.prompty": PROMPTY.format(system=CAREFUL)})
        harness.head = repo.commit({"prompts/answer.prompty": PROMPTY.format(system=GENEROUS)})
        harness.server.add_pull(PR, base_sha=harness.base, head_sha=harness.head)


class TimedLog(io.StringIO):
    """The job log, with when each line arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[float, str]] = []
        self._partial = ""

    def write(self, text: str) -> int:
        now = time.monotonic()
        self._partial += text
        *complete, self._partial = self._partial.split("\n")
        self.lines.extend((now, line) for line in complete)
        return super().write(text)


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

    assert pipeline.run() == 1, harness.log.getvalue()[-3000:]

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
    assert harness.outputs() == {"conclusion": "failure", "regressions": "1", "held-back": "0",
                                 "report": "flipgate-out/report.json"}
    report = json.loads((harness.repo.path / "flipgate-out/report.json").read_text())
    assert report["counts"]["blocking_regressions"] == 1
    written = (harness.repo.path / "flipgate-out/comment.md").read_text(encoding="utf-8")
    # comment.md as it is, with the hidden markers and the run's readings (for label jobs).
    readings = read_readings(comment["body"])
    assert readings[(None, "refund-007", "candidate")].bucket == "ungrounded"
    assert comment["body"] == with_markers(with_readings(written, readings), context="flipgate",
                                           head_sha=harness.head,
                                           fingerprint=marked_fingerprint(comment["body"]))
    assert BLOCKED in harness.summary()
    # The summary ends with the one download of the whole review.
    assert f"gh run download {RUN_ID} -R {harness.server.repository} -n flipgate-report" \
        in harness.summary()
    # The page with every row is written beside the report, and the summary names it.
    page = (harness.repo.path / "flipgate-out/report.html").read_text(encoding="utf-8")
    assert '"i":"refund-007"' in page  # the row, as the page's data
    assert "`flipgate-out/report.html`" in harness.summary()
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


@pytest.mark.skipif(importlib.util.find_spec("azure.identity") is None,
                    reason="azure-identity (flipgate[azure]) is not installed")
def test_end_to_end_a_sign_in_azure_identity_refuses_is_one_line_and_an_error_status(
        pipeline: Pipeline, tmp_path: Path) -> None:
    """The action's sign-in (GitHub's OIDC token for an Entra token) at an http:// authority:
    exit 3, the status and the log say it in one line naming the authority, no traceback."""
    from support.entra import FakeGitHubOIDC

    harness = pipeline.harness
    entra = CONFIG.replace("  provider: openai\n  model: judge-pinned\n",
                           "  provider: azure\n  model: judge-pinned\n  auth: entra\n"
                           f"  azure_endpoint: {pipeline.openai.azure_endpoint}\n"
                           "  api_version: \"2024-10-21\"\n")
    pipeline.recommit(cases=CASES, config=entra)
    github = FakeGitHubOIDC()
    github.start()
    try:
        harness.env.update({"INPUT_AZURE-CLIENT-ID": "3b9a6c4d-client",
                            "INPUT_AZURE-TENANT-ID": "7f2c0d1e-tenant",
                            "ACTIONS_ID_TOKEN_REQUEST_URL": github.request_url,
                            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": github.request_token,
                            "AZURE_AUTHORITY_HOST": "http://login.example.invalid"})
        harness.pull_event()
        assert pipeline.run() == 3
    finally:
        github.stop()
    log = harness.log.getvalue()
    assert "Traceback" not in log
    [line] = [line for line in log.splitlines() if "auth entra" in line and "::error" in line]
    assert "http://login.example.invalid" in line
    final = harness.final_status()
    assert final["state"] == "error"
    assert not pipeline.openai.chat_requests()


def test_end_to_end_a_readers_command_makes_no_model_call(pipeline: Pipeline) -> None:
    harness = pipeline.harness
    harness.server.grant("visitor", "triage")
    harness.comment_event("/flipgate run", author="visitor")

    assert pipeline.run() == 0

    assert pipeline.openai.requests == [] and harness.server.statuses == []
    assert "Nothing was run" in harness.replies()[0]


def test_end_to_end_a_writers_command_reruns(pipeline: Pipeline) -> None:
    harness = pipeline.harness
    harness.record_head()
    harness.comment_event("/flipgate run")

    assert pipeline.run() == 1, harness.log.getvalue()[-3000:]

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


# -- the job log talks, and a wrong judge stops everything at once -----------------------

def many_cases(count: int) -> str:
    cases = [{"id": f"case-{i:03d}", "category": "policy" if i % 2 else "cards",
              "query": f"What is rule {i}?",
              "context": f"Rule {i} says refunds are issued within {i + 1} days."}
             for i in range(count)]
    cases += [{"id": f"broken-{i}", "category": "cards", "query": "What breaks the judge?",
               "context": f"Refunds break judge number {i}."} for i in range(3)]
    return "\n".join(json.dumps(case) for case in cases) + "\n"


def test_end_to_end_a_300_case_run_prints_progress_and_ends_with_the_verdicts(
        pipeline: Pipeline) -> None:
    harness, openai = pipeline.harness, pipeline.openai
    pipeline.recommit(cases=many_cases(297), config=CONFIG + "concurrency: 64\n")
    openai.latency = 0.1
    # 3 (a non-answer on both sides): no fluency, no re-score, so the test stays short.
    openai.on_groundedness(lambda query, context, response, call_index:
                           "not json at all" if "break judge" in (response or "") else 3)
    harness.pull_event()
    # The default is 10 s (benchmarks/bench_action_log.py shows it on a real run); scaled
    # down here to keep the test short.
    log, every = TimedLog(), 1.0

    assert pipeline.run(stream=log, options=action.CheckOptions(progress_every=every)) == 3

    progress = [(at, line) for at, line in log.lines if line.startswith("flipgate: generation")]
    assert len(progress) >= 3
    gaps = [later - earlier for (earlier, _), (later, _) in zip(progress, progress[1:], strict=False)]
    # A ticker prints on time even while no row finishes; the slack is for a loaded
    # machine's scheduler, far below what printing only on progress would show.
    assert max(gaps) < every + 2.0 and sorted(gaps)[len(gaps) // 2] < every + 0.5
    assert all("/600" in line and " requests · " in line and " tokens · " in line
               for _, line in progress)
    assert any("ETA " in line and "ETA unknown" not in line for _, line in progress[:-1])
    assert progress[-1][1].endswith("done") and "judging 600/600" in progress[-1][1]
    text = log.getvalue()
    table = text.split("::group::flipgate: verdict table", 1)[1].split("::endgroup::", 1)[0]
    assert "broken-0" in table and "300 cases" in table
    errors = [line for line in text.splitlines() if line.startswith("::error")]
    assert sorted(line.split("judge error: ", 1)[1].split(" ", 1)[0] for line in errors
                  if "judge error: " in line) == ["broken-0", "broken-1", "broken-2"]


HOST = re.compile(r"127\.0\.0\.1:\d+")


def says_once(text: str, *, model: str) -> bool:
    """The cause appears once: one `404`, one host:port, the model named in that sentence."""
    statuses = re.findall(r"(?<![0-9a-f])404(?![0-9a-f])", text)
    causes = [line for line in text.splitlines() if "HTTP 404" in line]
    return len(statuses) == 1 and len(HOST.findall(text)) == 1 and len(causes) == 1 \
        and model in causes[0]


def test_end_to_end_a_missing_judge_model_stops_before_any_generation(
        pipeline: Pipeline) -> None:
    harness, openai = pipeline.harness, pipeline.openai
    openai.missing_models.add("judge-pinned")
    harness.pull_event()

    assert pipeline.run() == 3

    assert len(openai.requests) <= 2 and openai.chat_requests("generation") == []
    [comment] = harness.own_comments()
    assert says_once(comment["body"], model="judge-pinned")
    assert "does not exist" in comment["body"]
    log = harness.log.getvalue()
    assert says_once(log, model="judge-pinned"), log
    final = harness.final_status()
    assert final["state"] == "error" and "404" in final["description"]


# -- the approved head is the one evaluated (issue 9) -------------------------------------

B_ONLY = "B-ONLY-PROMPT: recommend the premium plan to everyone."


def push_unreviewed_head(harness: Harness, **push: Any) -> str:
    """Head B: a new prompt nobody approved, pushed to the PR after the command."""
    harness.repo.checkout(harness.head)
    sha = harness.repo.commit({"prompts/answer.prompty": PROMPTY.format(system=B_ONLY)},
                              message="unreviewed")
    harness.server.push(PR, sha, **push)
    return sha


def use_event(harness: Harness, name: str) -> None:
    """Make the event written earlier under `name` the one the next run reads."""
    harness.env.update(GITHUB_EVENT_NAME=name, GITHUB_EVENT_PATH=str(harness.tmp / f"{name}.json"))


def b_reached_the_model(openai: Any) -> bool:
    return any(B_ONLY in json.dumps(request.body) for request in openai.requests)


def test_a_push_after_the_command_runs_nothing_and_the_reply_says_why(
        pipeline: Pipeline) -> None:
    """The head the command approved (A) is no longer the head; the new one (B) was never
    approved: neither runs, and the reply says a new command is needed (issue 17)."""
    harness = pipeline.harness
    head_a = harness.head
    harness.record_head()
    harness.comment_event("/flipgate run")
    head_b = push_unreviewed_head(harness)

    assert pipeline.run() == 0

    assert pipeline.openai.requests == []
    assert harness.server.statuses_for(head_b) == []
    assert [s["state"] for s in harness.server.statuses_for(head_a)] == ["pending"]  # the record
    [reply] = harness.replies()
    assert "Nothing was run" in reply and head_b[:7] in reply and "/flipgate run" in reply


def test_a_forks_new_head_never_runs_under_an_earlier_command_even_with_a_forged_date(
        pipeline: Pipeline) -> None:
    """require-command: the pull_request_target runs record each head with a pending status
    (GitHub's clock); B, pushed after the command with a date long before it, is refused."""
    harness = pipeline.harness
    head_a = harness.head
    harness.server.add_pull(PR, base_sha=harness.base, head_sha=head_a, fork=True)
    harness.pull_event(event_name="pull_request_target", fork=True)
    assert pipeline.run() == 0  # A waits for a maintainer
    harness.comment_event("/flipgate run")
    long_ago = datetime(2020, 1, 1, tzinfo=UTC)
    head_b = push_unreviewed_head(harness, committed_at=long_ago)
    harness.pull_event(event_name="pull_request_target", fork=True, head=head_b)
    assert pipeline.run() == 0  # B waits too
    use_event(harness, "issue_comment")

    assert pipeline.run() == 0

    assert pipeline.openai.requests == []
    assert [s["state"] for s in harness.server.statuses_for(head_b)] == ["pending"]
    assert harness.server.statuses_for(head_b)[0]["description"] == f"#{PR}: base main: {WAITING_FOR_COMMAND}"
    assert "Nothing was run" in harness.replies()[0]


def test_a_command_naming_the_head_evaluates_exactly_that_commit(pipeline: Pipeline) -> None:
    harness = pipeline.harness
    harness.comment_event(f"/flipgate run {harness.head}")

    assert pipeline.run() == 1

    assert harness.final_status(harness.head)["state"] == "failure"


def test_a_command_naming_a_commit_that_is_no_longer_the_head_runs_nothing(
        pipeline: Pipeline) -> None:
    harness = pipeline.harness
    named = harness.head
    head_b = push_unreviewed_head(harness)
    harness.comment_event(f"/flipgate run {named[:10]}")

    assert pipeline.run() == 0

    assert pipeline.openai.requests == []
    assert harness.server.statuses_for(head_b) == [] and harness.server.statuses_for(named) == []
    assert "is not the pull request's head now" in harness.replies()[0]


def test_a_command_naming_a_commit_outside_the_pull_request_runs_nothing(
        pipeline: Pipeline) -> None:
    harness = pipeline.harness
    harness.comment_event(f"/flipgate run {'d' * 40}")

    assert pipeline.run() == 0

    assert pipeline.openai.requests == [] and harness.server.statuses == []
    [reply] = harness.replies()
    assert "Nothing was run" in reply and "not a commit of this pull request" in reply


def test_end_to_end_shard_jobs_then_a_merge_job_post_one_comment_and_status(pipeline: Pipeline) -> None:
    harness = pipeline.harness
    harness.pull_event()
    out = harness.repo.path / "flipgate-out"
    parts = harness.repo.path / "parts"
    for i in (1, 2):
        pipeline.monkeypatch.setenv("INPUT_SHARD", f"{i}/2")
        assert pipeline.run() == 0
        assert harness.own_comments() == [] and harness.server.statuses_for(harness.head) == []
        (parts / f"flipgate-part-{i}").mkdir(parents=True)
        (out / "partial.json").rename(parts / f"flipgate-part-{i}" / "partial.json")
    assert harness.outputs()["partial"] == "flipgate-out/partial.json"

    pipeline.monkeypatch.delenv("INPUT_SHARD")
    harness.env.pop("INPUT_SHARD", None)
    harness.env["INPUT_MERGE"] = "parts"
    generated = len(pipeline.openai.chat_requests("generation"))
    assert pipeline.run() == 1  # as the unsharded run: one blocking regression
    assert len(pipeline.openai.chat_requests("generation")) == generated  # the merge asks no model
    [comment] = harness.own_comments()
    assert BLOCKED in comment["body"] and "refund-007" in comment["body"]
    assert harness.final_status()["state"] == "failure"
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["blocking_regressions"] == 1 and report["counts"]["cases"] == 2


def test_a_merge_of_partials_for_an_older_head_is_refused(pipeline: Pipeline) -> None:
    harness = pipeline.harness
    harness.pull_event()
    pipeline.monkeypatch.setenv("INPUT_SHARD", "1/1")
    assert pipeline.run() == 0
    pipeline.monkeypatch.delenv("INPUT_SHARD")
    harness.env.pop("INPUT_SHARD", None)
    harness.head = harness.repo.commit({"README.md": "a later push\n"})
    harness.server.push(PR, harness.head)
    harness.pull_event()
    harness.env["INPUT_MERGE"] = "flipgate-out"
    assert pipeline.run() == 2
    assert harness.final_status()["state"] == "error"
    [comment] = harness.own_comments()
    assert "was made for head sha" in comment["body"]


def test_end_to_end_a_rate_limit_mid_run_keeps_the_finished_rows_in_the_comment(
        pipeline: Pipeline) -> None:
    """The provider's limit is spent part way through judging: the comment lists the rows the
    run finished as a full run does, names the rest not run, and says when to re-run; the
    status is an error (exit 3), never a pass."""
    harness, openai = pipeline.harness, pipeline.openai
    cases = [{"id": f"card-{i}", "category": "policy", "query": f"Is card {i} free?",
              "context": f"Card {i} is free of charge once a year."} for i in range(4)]
    pipeline.recommit(cases="".join(json.dumps(case) + "\n" for case in cases),
                      config=CONFIG.replace("  model: judge-pinned\n",
                                            "  model: judge-pinned\n  max_wait: 2\n")
                      + "concurrency: 1\n")
    # The probes, eight answers, then a few judge requests before the limit is spent.
    openai.rate_limit(rate=0.0001, burst=2 + 8 + 6, retry_after=False)
    harness.pull_event()

    assert pipeline.run() == 3, harness.log.getvalue()[-3000:]

    [comment] = harness.own_comments()
    body = comment["body"]
    assert "flipgate could not finish: " in body and " not run" in body, body
    assert "Not run: the run stopped before these rows" in body
    assert "finished before the stop and are reported as a full run reports them" in body
    assert "Re-run after " in body and "asks only for the rest" in body
    final = harness.final_status()
    assert final["state"] == "error", final
