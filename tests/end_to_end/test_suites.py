"""Several suites in one config, end to end: a real git repo, the real CLI and openai
client against the loopback server, and the action against the loopback GitHub server.
Only the suites whose generator changed are evaluated, and the comment says which were not."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.github import action
from flipgate.github.texts import NO_CHANGE

from support.action_harness import PR, Harness
from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

CONFIG = """version: 1
generator: prompts/support.prompty
judge:
  provider: openai
  model: judge-pinned
  max_retries: 0
  timeout: 5
gate:
  blocking_categories: [policy]
  strict: true  # a handful of cases: the same-judge re-score may block
{status}suites:
  - name: support
    cases: eval/support.jsonl
  - name: billing
    generator: prompts/billing.prompty
    cases: eval/billing.jsonl
    watch: [billing/**]
    gate: {{blocking_categories: [pricing]}}
"""
SUPPORT_CASES = [
    {"id": "refund-007", "query": "How long do I have to ask for a refund?",
     "context": "Refunds are accepted within 30 days of purchase.", "category": "policy"},
    {"id": "card-002", "query": "How do I freeze my card?",
     "context": "Freeze your card in the app under Card settings.", "category": "cards"},
]
BILLING_CASES = [
    {"id": "fee-003", "query": "Is there a replacement card fee?",
     "context": "The first replacement card each year is free.", "category": "pricing"},
    {"id": "invoice-001", "query": "When are invoices sent?",
     "context": "Invoices are sent on the first day of each month.", "category": "invoices"},
]
PROMPT = """---
name: {name}
model:
  api: chat
  configuration:
    type: openai
    model: {model}
---
system:
{system}
user:
{{{{ query }}}}
Context: {{{{ context }}}}
"""
CAREFUL = "Answer only from the context."
GENEROUS = "Be generous and helpful."


def jsonl(cases: list[dict]) -> str:
    return "".join(json.dumps(case) + "\n" for case in cases)


def generation(body: dict) -> str:
    """Answers with the context, except that the generous prompt invents a fee."""
    context = body["messages"][-1]["content"].split("Context: ", 1)[1]
    invents = "generous" in body["messages"][0]["content"] and "Refunds" in context
    return context + (" A $15 fee applies." if invents else "")


def make_repo(path: Path, *, status: str = "") -> GitRepo:
    repo = GitRepo.create(path)
    repo.commit({
        ".flipgate.yml": CONFIG.format(status=status),
        "eval/support.jsonl": jsonl(SUPPORT_CASES),
        "eval/billing.jsonl": jsonl(BILLING_CASES),
        "prompts/support.prompty": PROMPT.format(name="support", model="gen-support",
                                                 system=CAREFUL),
        "prompts/billing.prompty": PROMPT.format(name="billing", model="gen-billing",
                                                 system=CAREFUL),
        "billing/rates.yml": "fee: 1\n",  # what the billing suite's `watch` names
    }, message="base")
    repo.branch("base", "HEAD")
    return repo


@pytest.fixture
def server(openai_server: FakeOpenAI) -> FakeOpenAI:
    openai_server.on_generation(generation)
    openai_server.on_groundedness(lambda query, context, response, call_index:
                                  1 if "$15" in (response or "") else 5)
    return openai_server


def invoke(repo: GitRepo, tmp_path: Path, *args: str) -> tuple[Any, dict | None, str]:
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--out", str(out), "--no-cache", *args])
    report_path = out / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    comment = (out / "comment.md").read_text() if (out / "comment.md").exists() else ""
    return result, report, comment


def billing_texts() -> set[str]:
    return {text for case in BILLING_CASES for text in (case["query"], case["context"])}


def test_only_the_suite_whose_generator_changed_is_evaluated(server: FakeOpenAI, tmp_path: Path,
                                                             ) -> None:
    repo = make_repo(tmp_path / "repo")
    repo.commit({"prompts/support.prompty": PROMPT.format(name="support", model="gen-support",
                                                          system=GENEROUS)})
    result, report, comment = invoke(repo, tmp_path)
    assert result.exit_code == 1, result.output

    # No request of any kind for the billing suite: no generation, no judging.
    assert {r.model for r in server.chat_requests("generation")} == {"gen-support"}
    assert len(server.chat_requests("generation")) == 2 * len(SUPPORT_CASES)
    sent = " ".join(r.text for r in server.requests)
    assert not any(text in sent for text in billing_texts())

    assert report["conclusion"] == "failure"
    assert report["suites"]["support"]["evaluated"] is True
    assert report["suites"]["support"]["conclusion"] == "failure"
    assert report["suites"]["support"]["counts"]["blocking_regressions"] == 1
    assert report["suites"]["billing"] == {**report["suites"]["billing"], "evaluated": False,
                                           "conclusion": "skipped", "rows": []}
    # The top counts are what was evaluated: the skipped suite's cases are not among them.
    assert report["counts"]["cases"] == len(SUPPORT_CASES)
    assert report["suites"]["billing"]["counts"]["cases"] == len(BILLING_CASES)
    assert report["counts"]["blocking_regressions"] == 1
    assert [(row["id"], row["suite"]) for row in report["rows"]] == [
        ("refund-007", "support"), ("card-002", "support")]

    assert "Not evaluated, nothing of theirs changed" in comment
    not_evaluated = next(line for line in comment.splitlines() if "Not evaluated" in line)
    assert "billing" in not_evaluated and "support" not in not_evaluated
    assert "## Suite support · ❌ flipgate blocked this change" in comment
    assert "Suite billing" not in comment
    assert comment.count("<!-- flipgate -->") == 1


def test_a_watched_path_evaluates_its_suite_alone(server: FakeOpenAI, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    repo.commit({"billing/rates.yml": "fee: 0\n"})
    result, report, comment = invoke(repo, tmp_path)
    assert result.exit_code == 0, result.output
    assert {r.model for r in server.chat_requests("generation")} == {"gen-billing"}
    assert report["conclusion"] == "success"
    assert [report["suites"][name]["evaluated"] for name in ("support", "billing")] == [False, True]
    assert report["suites"]["billing"]["categories"]["pricing"]["blocking"] is True
    assert "policy" not in report["suites"]["billing"]["categories"]


def test_suite_selects_and_nothing_changed_sends_nothing(server: FakeOpenAI,
                                                         tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    repo.commit({"prompts/support.prompty": PROMPT.format(name="support", model="gen-support",
                                                          system=GENEROUS)})
    result, report, comment = invoke(repo, tmp_path, "--suite", "billing")
    assert result.exit_code == 0, result.output
    assert server.requests == []
    assert report["conclusion"] == "skipped"
    assert list(report["suites"]) == ["billing"]
    assert "no suite's prompt or model changed" in comment

    unknown, _, _ = invoke(repo, tmp_path, "--suite", "nope")
    assert unknown.exit_code == 2
    assert "no suite named nope" in unknown.output


def test_the_offline_judge_gates_two_changed_suites_worst_first(tmp_path: Path,
                                                                server: FakeOpenAI) -> None:
    repo = make_repo(tmp_path / "repo")
    repo.commit({
        "prompts/support.prompty": PROMPT.format(name="support", model="gen-support",
                                                 system=GENEROUS),
        "prompts/billing.prompty": PROMPT.format(name="billing", model="gen-billing",
                                                 system=GENEROUS),
    })
    result, report, comment = invoke(repo, tmp_path, "--judge", "offline")
    assert server.chat_requests("groundedness") == []  # the lexical judge sends nothing
    assert [report["suites"][name]["evaluated"] for name in ("support", "billing")] == [True, True]
    worst = {"error": 3, "failure": 1, "success": 0}
    expected = max((report["suites"][name]["conclusion"] for name in ("support", "billing")),
                   key=lambda conclusion: worst[conclusion])
    assert report["conclusion"] == expected
    assert result.exit_code == worst[expected]
    assert "Not evaluated" not in comment
    assert "## Suite support · " in comment and "## Suite billing · " in comment


# --- the action: one status per suite -------------------------------------------------

@dataclass
class Action:
    harness: Harness
    monkeypatch: pytest.MonkeyPatch

    def run(self) -> int:
        for name, value in self.harness.env.items():
            self.monkeypatch.setenv(name, value)
        return action.main(os.environ, stream=self.harness.log)


def test_per_suite_statuses_through_the_real_github_client(harness: Harness, server: FakeOpenAI,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "service", status="status: per-suite\n")
    harness.base = repo.git("rev-parse", "HEAD")
    harness.head = repo.commit({"prompts/support.prompty": PROMPT.format(
        name="support", model="gen-support", system=GENEROUS)})
    harness.repo = repo
    harness.server.add_pull(PR, base_sha=harness.base, head_sha=harness.head)
    harness.env["GITHUB_WORKSPACE"] = str(repo.path)
    harness.pull_event()

    assert Action(harness, monkeypatch).run() == 1, harness.log.getvalue()[-3000:]

    final = {status["context"]: status for status in harness.server.statuses_for(harness.head)}
    assert set(final) == {"flipgate", "flipgate/support", "flipgate/billing"}
    assert final["flipgate/support"]["state"] == "failure"
    assert "1 blocking regression" in final["flipgate/support"]["description"]
    assert final["flipgate/billing"]["state"] == "success"
    assert final["flipgate/billing"]["description"] == NO_CHANGE
    assert final["flipgate"]["state"] == "failure"  # the worst across suites
    [comment] = harness.own_comments()
    assert "billing" in next(line for line in comment["body"].splitlines()
                             if "Not evaluated" in line)
    assert {r.model for r in server.chat_requests("generation")} == {"gen-support"}


# --- replay and gate pick a suite ------------------------------------------------------

def test_replay_answers_one_suite_and_needs_its_name(server: FakeOpenAI, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    out = tmp_path / "billing.jsonl"
    args = ["replay", "--repo", str(repo.path), "--ref", "base", "--out", str(out), "--no-cache"]
    result = CliRunner().invoke(cli, [*args, "--suite", "billing"])
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in out.read_text().splitlines()]
    assert [a["id"] for a in answers] == [case["id"] for case in BILLING_CASES]
    assert {r.model for r in server.chat_requests("generation")} == {"gen-billing"}

    server.clear()
    unnamed = CliRunner().invoke(cli, args)
    assert unnamed.exit_code == 2
    assert "several suites: name one with --suite (support, billing)" in unnamed.output
    assert server.requests == []


def test_gate_uses_the_named_suites_blocking_categories(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".flipgate.yml").write_text(CONFIG.format(status="").replace(
        "provider: openai", "provider: offline").replace("  model: judge-pinned\n", ""))
    cases = [{**case, "category": "pricing"} for case in SUPPORT_CASES]
    (tmp_path / "cases.jsonl").write_text(jsonl(cases))
    (tmp_path / "base.jsonl").write_text(jsonl([{"id": c["id"], "response": c["context"]}
                                               for c in cases]))
    (tmp_path / "head.jsonl").write_text(jsonl([
        {"id": c["id"], "response": c["context"] + " A $15 fee applies and 45 days."}
        for c in cases]))
    args = ["gate", "--cases", "cases.jsonl", "--baseline", "base.jsonl",
            "--candidate", "head.jsonl", "--no-cache"]

    top = CliRunner().invoke(cli, [*args, "--out", "top"])
    billing = CliRunner().invoke(cli, [*args, "--out", "billing", "--suite", "billing"])
    top_report = json.loads((tmp_path / "top" / "report.json").read_text())
    billing_report = json.loads((tmp_path / "billing" / "report.json").read_text())
    # The same rows: regressions to review under the top level's [policy], blocking
    # under billing's [pricing].
    assert top_report["counts"]["regressions_to_review"] >= 1 and top.exit_code == 0
    assert billing_report["counts"]["blocking_regressions"] == \
        top_report["counts"]["regressions_to_review"]
    assert billing.exit_code == 1, billing.output


def test_per_suite_statuses_when_no_suite_changed(harness: Harness, server: FakeOpenAI,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "service", status="status: per-suite\n")
    harness.base = repo.git("rev-parse", "HEAD")
    harness.head = repo.commit({"README.md": "docs only\n"})
    harness.repo = repo
    harness.server.add_pull(PR, base_sha=harness.base, head_sha=harness.head)
    harness.env["GITHUB_WORKSPACE"] = str(repo.path)
    harness.pull_event()

    assert Action(harness, monkeypatch).run() == 0, harness.log.getvalue()[-3000:]
    final = {status["context"]: status for status in harness.server.statuses_for(harness.head)}
    # A ruleset that requires one suite's status is never left waiting.
    assert {context: status["state"] for context, status in final.items()} == {
        "flipgate": "success", "flipgate/support": "success", "flipgate/billing": "success"}
    assert server.requests == []


def test_a_suite_that_cannot_finish_makes_the_run_unfinished(server: FakeOpenAI,
                                                             tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    config = CONFIG.format(status="") + "budget: {max_requests: 3}\n"
    repo.commit({".flipgate.yml": config}, message="a small budget")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/support.prompty": PROMPT.format(name="support", model="gen-support",
                                                          system=GENEROUS)})
    result, report, comment = invoke(repo, tmp_path)
    assert result.exit_code == 3, result.output
    assert report["conclusion"] == "error"
    assert report["suites"]["support"]["conclusion"] == "error"
    assert report["suites"]["billing"]["conclusion"] == "skipped"
    assert "could not finish" in comment and "Not evaluated" in comment


def test_shards_split_each_suite_and_merge_into_the_unsharded_run(server: FakeOpenAI,
                                                                  tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    repo.commit({
        "prompts/support.prompty": PROMPT.format(name="support", model="gen-support",
                                                 system=GENEROUS),
        "prompts/billing.prompty": PROMPT.format(name="billing", model="gen-billing",
                                                 system=GENEROUS + " Mention fees."),
    })
    whole, whole_report, _ = invoke(repo, tmp_path, "--judge", "offline")

    def shard(spec: str, *suites: str) -> Path:
        out = tmp_path / f"shard-{spec.replace('/', 'of')}-{'-'.join(suites)}"
        result = CliRunner().invoke(cli, [
            "run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD", "--out", str(out),
            "--no-cache", "--judge", "offline", "--shard", spec,
            *(arg for name in suites for arg in ("--suite", name))])
        assert result.exit_code == 0, result.output
        return out / "partial.json"

    partials = [str(shard(f"{i}/3")) for i in (1, 2, 3)]
    merged = CliRunner().invoke(cli, ["merge", *reversed(partials), "--out", str(tmp_path / "m")])
    report = json.loads((tmp_path / "m" / "report.json").read_text())
    assert merged.exit_code == whole.exit_code, merged.output
    assert report["conclusion"] == whole_report["conclusion"]
    assert report["counts"] == whole_report["counts"]
    for name in ("support", "billing"):
        mine, theirs = report["suites"][name], whole_report["suites"][name]
        assert (mine["conclusion"], mine["counts"]) == (theirs["conclusion"], theirs["counts"])
        assert [(r["id"], r["verdict"]) for r in mine["rows"]] == \
            [(r["id"], r["verdict"]) for r in theirs["rows"]]
    assert [(r["id"], r["suite"]) for r in report["rows"]] == \
        [(r["id"], r["suite"]) for r in whole_report["rows"]]
    assert "## Suite support · " in (tmp_path / "m" / "comment.md").read_text()

    other = shard("3/3", "support")  # a different selection of suites
    refused = CliRunner().invoke(cli, ["merge", *partials[:2], str(other)])
    assert refused.exit_code == 2
    assert "was made from a different suites (['support'])" in refused.output
