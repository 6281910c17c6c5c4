"""The contract (`interface.md`) checked from the outside, where other tests do not already.

Each test drives the real CLI (or `flipgate action`) against the loopback
OpenAI-compatible and GitHub servers and real temporary git repositories, and
asserts one statement of the contract as written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.errors import IncompleteError, InputError, Problem

from support.action_harness import Harness, RecordingCheck
from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cards"

COUNT_KEYS = {"cases", "blocking_regressions", "regressions_to_review", "new_non_answers",
              "unstable", "moved", "still_ungrounded", "relevance_drops", "errors"}
ROW_KEYS = {"id", "category", "baseline", "candidate", "verdict", "blocking", "relevance_drop"}
SIDE_KEYS = {"groundedness", "bucket", "relevance"}
VERDICTS = {"regression", "unstable", "new_non_answer", "still_ungrounded", "moved", "unchanged",
            "error"}
BUCKETS = {1: "ungrounded", 2: "ungrounded", 3: "non_answer", 4: "partial", 5: "grounded"}


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    # ensure_ascii=False: what any tool writing UTF-8 JSONL produces.
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


def gate_args(directory: Path, *, config: str, cases: list[dict[str, Any]],
              baseline: dict[str, str], candidate: dict[str, str]) -> list[str]:
    (directory / "flipgate.yml").write_text(config)
    write_jsonl(directory / "cases.jsonl", cases)
    write_jsonl(directory / "base.jsonl", [{"id": k, "response": v} for k, v in baseline.items()])
    write_jsonl(directory / "cand.jsonl", [{"id": k, "response": v} for k, v in candidate.items()])
    return ["gate", "--cases", str(directory / "cases.jsonl"),
            "--baseline", str(directory / "base.jsonl"),
            "--candidate", str(directory / "cand.jsonl"),
            "--config", str(directory / "flipgate.yml"), "--out", str(directory / "out"),
            "--no-cache"]


def read_report(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "out" / "report.json").read_text())


LLM_CONFIG = """version: 1
cases: cases.jsonl
generator: prompts/nowhere.prompty
judge:
  provider: openai
  model: judge-pinned
  max_retries: 0
  timeout: 5
gate:
  blocking_categories: [pricing]
  strict: true  # a handful of cases: the same-judge re-score may block
relevance:
  threshold: 0.7
  embedding_model: embed-pinned
"""

# Inputs that a careless prompt builder would mangle: lines, quotes, braces, pipes, unicode.
TRICKY_CASES = [
    {"id": "fee", "query": "What does a \"replacement\" cost?\n(debit {card})",
     "context": "Replacement: first one free;\nthen $12 | per card. Ünïcode ✓ {{ not jinja }}",
     "category": "pricing", "branch": "north"},
    {"id": "hours", "query": "When are you open?", "context": "Open 9-5 on weekdays."},
    {"id": "quiet", "query": "Can I freeze my card?", "context": "Freeze it in the app."},
]
TRICKY_BASE = {"fee": "The first one is free;\nthen $12 | per card.",
               "hours": "We are open 9-5 on weekdays.", "quiet": "Freeze it in the app."}
TRICKY_CAND = {"fee": "It costs $15 \"flat\" ✓", "hours": "We are open 9-5 on weekdays.",
               "quiet": "   "}


def scripted_scores(query: str | None, context: str | None, response: str | None,
                    call_index: int) -> int:
    return 2 if "$15" in (response or "") else 5


# --- report.json --------------------------------------------------------------------

def test_report_json_has_the_contracts_keys_and_types(openai_server: FakeOpenAI,
                                                      tmp_path: Path) -> None:
    openai_server.on_groundedness(scripted_scores)
    args = gate_args(tmp_path, config=LLM_CONFIG, cases=TRICKY_CASES, baseline=TRICKY_BASE,
                     candidate=TRICKY_CAND)

    result = CliRunner().invoke(cli, args)

    assert result.exit_code == 1, result.output
    report = read_report(tmp_path)
    assert report["version"] == 1
    assert report["conclusion"] == "failure"
    assert {"provider": "openai", "model": "judge-pinned"}.items() <= report["judge"].items()
    assert set(report["counts"]) >= COUNT_KEYS
    assert all(type(report["counts"][key]) is int for key in COUNT_KEYS)
    assert report["counts"]["cases"] == len(TRICKY_CASES)
    rows = {row["id"]: row for row in report["rows"]}
    assert list(rows) == [case["id"] for case in TRICKY_CASES]
    for row in rows.values():
        assert set(row) >= ROW_KEYS
        assert row["verdict"] in VERDICTS and "errors" not in row
        assert type(row["blocking"]) is bool and type(row["relevance_drop"]) is bool
        for side in (row["baseline"], row["candidate"]):
            assert set(side) >= SIDE_KEYS
            assert BUCKETS[side["groundedness"]] == side["bucket"]
            assert isinstance(side["relevance"], float | int) and 0 <= side["relevance"] <= 1
    assert rows["fee"]["category"] == "pricing" and rows["hours"]["category"] == "uncategorized"
    assert (rows["fee"]["verdict"], rows["fee"]["blocking"]) == ("regression", True)
    # An empty answer is a non-answer (3) and its relevance 0, without asking any judge.
    assert rows["quiet"]["verdict"] == "new_non_answer"
    assert rows["quiet"]["candidate"]["groundedness"] == 3
    assert rows["quiet"]["candidate"]["relevance"] == 0


def test_an_error_row_carries_its_errors_and_the_conclusion_is_error(openai_server: FakeOpenAI,
                                                                     tmp_path: Path) -> None:
    def score(query, context, response, call_index):
        return {"score": 9, "reason": "off the scale"} if "9-5" in (response or "") else \
            scripted_scores(query, context, response, call_index)

    openai_server.on_groundedness(score)
    args = gate_args(tmp_path, config=LLM_CONFIG, cases=TRICKY_CASES, baseline=TRICKY_BASE,
                     candidate=TRICKY_CAND)

    result = CliRunner().invoke(cli, args)

    assert result.exit_code == 3, result.output
    report = read_report(tmp_path)
    rows = {row["id"]: row for row in report["rows"]}
    assert report["conclusion"] == "error"
    assert rows["hours"]["verdict"] == "error"
    assert rows["hours"]["errors"] and all(isinstance(e, str) for e in rows["hours"]["errors"])
    # 3 wins over a block, and the confirmed regression is still listed.
    assert (rows["fee"]["verdict"], rows["fee"]["blocking"]) == ("regression", True)


# --- the judge on the wire --------------------------------------------------------------

def test_every_judge_request_is_json_mode_to_the_pinned_model_with_inputs_verbatim(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    openai_server.on_groundedness(scripted_scores)
    args = gate_args(tmp_path, config=LLM_CONFIG, cases=TRICKY_CASES, baseline=TRICKY_BASE,
                     candidate=TRICKY_CAND)

    assert CliRunner().invoke(cli, args).exit_code == 1

    chats = openai_server.chat_requests()
    # The probe: one tiny request to the same pinned model before any scoring. The run
    # blocks ("fee"), so fluency, a tie-breaker, is never asked (its wire format: below).
    assert chats and {r.kind for r in chats} == {"probe", "groundedness", "relevance", "statements"}
    assert chats[0].kind == "probe" and len(openai_server.chat_requests("probe")) == 1
    for request in chats:
        assert request.body["response_format"] == {"type": "json_object"}
        assert request.model == "judge-pinned"
    cases = {case["query"]: case for case in TRICKY_CASES}
    answers = set(TRICKY_BASE.values()) | set(TRICKY_CAND.values())
    for request in openai_server.chat_requests("groundedness"):
        assert "groundedness" in request.text.lower()
        case = cases[request.inputs.query]
        assert request.inputs.context == case["context"] and request.inputs.response in answers
    for request in openai_server.chat_requests("relevance"):
        assert "questions" in request.text and "3" in request.text  # 3 questions by default
        assert request.inputs.response in answers
    by_context = {case["context"]: case for case in TRICKY_CASES}
    statements = openai_server.chat_requests("statements")
    assert statements  # one for the flipped row "fee"; the empty "quiet" answer needs none
    for request in statements:
        assert "statements" in request.text
        assert request.inputs.response == TRICKY_CAND[by_context[request.inputs.context]["id"]]
    assert openai_server.chat_requests("fluency") == []

    # The key and the server come from the client's own variables (OPENAI_API_KEY, OPENAI_BASE_URL).
    assert {r.headers.get("Authorization") for r in openai_server.requests} == {"Bearer test-key"}

    # The embeddings probe (one text, before any scoring), then one /embeddings request
    # for the whole run, with every query in it, both to the pinned model.
    [probe, embeddings] = openai_server.embedding_requests()
    assert probe.body["input"] == ["flipgate probe"]
    assert probe.body["model"] == embeddings.body["model"] == "embed-pinned"
    assert {case["query"] for case in TRICKY_CASES} <= set(embeddings.body["input"])


def test_fluency_is_json_mode_to_the_pinned_model_on_the_tied_row_only(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    openai_server.on_groundedness(scripted_scores)
    config = LLM_CONFIG.replace("blocking_categories: [pricing]", "blocking_categories: []")  # none blocks
    args = gate_args(tmp_path, config=config, cases=TRICKY_CASES, baseline=TRICKY_BASE,
                     candidate=TRICKY_CAND)
    assert CliRunner().invoke(cli, args).exit_code == 0  # the regression does not block now

    fluency = openai_server.chat_requests("fluency")
    assert fluency and all("fluency" in r.text.lower() for r in fluency)
    for request in fluency:
        assert request.body["response_format"] == {"type": "json_object"}
        assert request.model == "judge-pinned"
    # Fluency only on the tied row ("hours": grounded on both sides); its two sides give
    # the same answer, so one request serves both (single flight).
    assert [r.inputs.response for r in fluency] == [TRICKY_BASE["hours"]]


def test_an_azure_judge_reads_the_azure_variables(openai_server: FakeOpenAI, tmp_path: Path,
                                                  monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    openai_server.set_azure_env(monkeypatch, api_version="2024-10-21")
    openai_server.on_groundedness(scripted_scores)
    config = LLM_CONFIG.replace("provider: openai\n  model: judge-pinned",
                                "provider: azure\n  model: judge-deployment")
    args = gate_args(tmp_path, config=config, cases=TRICKY_CASES, baseline=TRICKY_BASE,
                     candidate=TRICKY_CAND)

    assert CliRunner().invoke(cli, args).exit_code == 1

    assert {r.path for r in openai_server.requests} == {
        "/openai/deployments/judge-deployment/chat/completions",
        "/openai/deployments/embed-pinned/embeddings"}
    assert {r.args["api-version"] for r in openai_server.requests} == {"2024-10-21"}
    assert {r.headers.get("Api-Key") for r in openai_server.requests} == {"test-azure-key"}


# --- gate and its inputs -------------------------------------------------------------------

def test_gate_that_runs_out_of_budget_writes_an_error_report_and_exits_3(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    args = gate_args(tmp_path, config=LLM_CONFIG + "budget: {max_requests: 2}\n",
                     cases=TRICKY_CASES, baseline=TRICKY_BASE, candidate=TRICKY_CAND)
    stale = tmp_path / "out" / "report.json"
    stale.parent.mkdir()
    stale.write_text(json.dumps({"version": 1, "conclusion": "success"}))

    result = CliRunner().invoke(cli, args)

    assert result.exit_code == 3, result.output
    assert "budget.max_requests" in result.stderr
    report = read_report(tmp_path)
    assert report["conclusion"] == "error"
    assert any("budget" in note for note in report.get("notes", []))
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "<!-- flipgate -->" in comment
    # The comment blames what stopped the run, not the judge.
    assert "could not finish" in comment and "could not finish: judge errors" not in comment
    assert "budget" in comment
    # The budget went on the probe: every case is named as not run, at its budget.
    assert [row["verdict"] for row in report["rows"]] == ["not_run"] * report["counts"]["cases"]
    assert report["rows"][0]["candidate"]["not_run"] == ("the run stopped at its budget before "
                                                          "this row was scored")


@pytest.mark.parametrize("generator", [
    None,                                          # the key is absent
    "prompts/missing.prompty",                     # names a file that does not exist
    "broken.prompty",                              # names a file that does not parse
])
def test_gate_never_reads_the_generator(tmp_path: Path, generator: str | None) -> None:
    (tmp_path / "broken.prompty").write_bytes(b"\xff\xfe not yaml: [\n")
    config = (EXAMPLE / ".flipgate.yml").read_text()
    if generator is not None:
        config += f"generator: {generator}\n"
    (tmp_path / "flipgate.yml").write_text(config)

    result = CliRunner().invoke(cli, [
        "gate", "--cases", str(EXAMPLE / "cases.jsonl"),
        "--baseline", str(EXAMPLE / "baseline.jsonl"),
        "--candidate", str(EXAMPLE / "candidate.jsonl"),
        "--config", str(tmp_path / "flipgate.yml"), "--judge", "offline",
        "--out", str(tmp_path / "out")])

    assert result.exit_code == 1, result.output
    assert read_report(tmp_path)["conclusion"] == "failure"


def test_gate_writes_to_flipgate_out_by_default(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLE / ".flipgate.yml", tmp_path / ".flipgate.yml")
    result = CliRunner().invoke(cli, [
        "gate", "--cases", str(EXAMPLE / "cases.jsonl"),
        "--baseline", str(EXAMPLE / "baseline.jsonl"),
        "--candidate", str(EXAMPLE / "candidate.jsonl"), "--judge", "offline"])
    assert result.exit_code == 1, result.output
    assert (tmp_path / "flipgate-out" / "report.json").is_file()
    assert (tmp_path / "flipgate-out" / "comment.md").is_file()


def test_judge_absent_uses_the_configs_provider(openai_server: FakeOpenAI, tmp_path: Path) -> None:
    config = LLM_CONFIG.replace("provider: openai", "provider: offline")
    args = gate_args(tmp_path, config=config, cases=TRICKY_CASES, baseline=TRICKY_BASE,
                     candidate=TRICKY_CAND)
    assert CliRunner().invoke(cli, args).exit_code in (0, 1)
    assert read_report(tmp_path)["judge"]["provider"] == "offline"
    assert openai_server.requests == []

    (tmp_path / "flipgate.yml").write_text(LLM_CONFIG)
    assert CliRunner().invoke(cli, args).exit_code in (0, 1)
    assert read_report(tmp_path)["judge"]["provider"] == "openai"
    assert openai_server.chat_requests("groundedness")


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_jsonl_lines_end_only_at_newlines(tmp_path: Path, separator: str) -> None:
    """JSON lets U+2028, U+2029 and NEL stand unescaped inside strings, and UTF-8
    writers leave them so: they are text of a line, not line ends."""
    cases = [{"id": "a", "query": "Fee?", "context": f"The fee is $12.{separator}Paid monthly."}]
    args = gate_args(tmp_path, config="version: 1\ncases: cases.jsonl\n", cases=cases,
                     baseline={"a": f"The fee is $12.{separator}Paid monthly."},
                     candidate={"a": "The fee is $12."})
    (tmp_path / "cand.jsonl").write_bytes((tmp_path / "cand.jsonl").read_bytes()
                                          .replace(b"\n", b"\r\n"))

    result = CliRunner().invoke(cli, [*args, "--judge", "offline"])

    assert result.exit_code in (0, 1), result.output
    [row] = read_report(tmp_path)["rows"]
    assert row["id"] == "a"


# --- run: paths, case fields, Prompty fields ------------------------------------------------

SERVICE_CONFIG = """version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: offline
"""
SERVICE_PROMPT = """---
model:
  configuration:
    type: openai
    model: gen-{version}
    base_url: {base_url}
  parameters:
    temperature: 0.3
    max_tokens: 77
    seed: 11
---
system:
You answer for the {{{{ branch }}}} branch ({{{{ category }}}}, case {{{{ id }}}}).
user:
{{{{ query }}}}
Context: {{{{ context }}}}
"""


def test_run_reads_paths_relative_to_the_config_and_sends_prompty_fields(
        openai_server: FakeOpenAI, tmp_path: Path, monkeypatch) -> None:
    # Only the generator's own base_url leads to the server.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    repo = GitRepo.create(tmp_path / "repo")
    cases = [{"id": "c1", "query": "Open on Sunday?", "context": "Closed on Sundays.",
              "category": "hours", "branch": "Harbour"}]
    repo.commit({
        "svc/.flipgate.yml": SERVICE_CONFIG,
        "svc/eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in cases),
        "svc/prompts/answer.prompty": SERVICE_PROMPT.format(version=1,
                                                            base_url=openai_server.base_url),
    }, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"svc/prompts/answer.prompty": SERVICE_PROMPT.format(
        version=2, base_url=openai_server.base_url)}, message="head")

    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--config", "svc/.flipgate.yml",
                                      "--out", str(tmp_path / "out"), "--no-cache"])

    assert result.exit_code == 0, result.output
    generated = openai_server.chat_requests("generation")
    assert sorted(r.model for r in generated) == ["gen-1", "gen-2"]
    for request in generated:
        assert "response_format" not in request.body
        assert (request.body["temperature"], request.body["max_tokens"], request.body["seed"]) == (
            0.3, 77, 11)
        assert request.body["messages"][0] == {
            "role": "system", "content": "You answer for the Harbour branch (hours, case c1)."}
        assert request.body["messages"][1]["content"] == "Open on Sunday?\nContext: Closed on Sundays."


@pytest.mark.parametrize(("changed", "gated"), [
    ("svc/schemas/v2/deep/answer.json", True),   # `**` spans directories
    ("svc/notes/style.tone", True),              # no slash: matches at any depth
    ("svc/schemas/draft.json", False),           # negated by a later `!` line
    ("schemas/answer.json", False),              # relative to the config's directory
    ("svc/README.md", False),
])
def test_watch_globs_follow_gitignore_rules(openai_server: FakeOpenAI, tmp_path: Path,
                                            changed: str, gated: bool) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    cases = [{"id": "c1", "query": "Open on Sunday?", "context": "Closed on Sundays.",
              "branch": "Harbour"}]
    repo.commit({
        "svc/.flipgate.yml": SERVICE_CONFIG + "watch: ['schemas/**', '*.tone', '!schemas/draft.json']\n",
        "svc/eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in cases),
        "svc/prompts/answer.prompty": SERVICE_PROMPT.format(version=1,
                                                            base_url=openai_server.base_url),
        # Each pattern matches a file (a pattern matching nothing at either ref is an error).
        "svc/schemas/v1.json": "{}\n", "svc/voice.tone": "calm\n",
    }, message="base")
    repo.branch("base", "HEAD")
    repo.commit({changed: "changed\n"}, message="head")

    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--config", "svc/.flipgate.yml",
                                      "--out", str(tmp_path / "out"), "--no-cache"])

    assert result.exit_code == 0, result.output
    report = read_report(tmp_path)
    assert report["conclusion"] == ("success" if gated else "skipped")
    assert bool(openai_server.requests) == gated


# --- GitHub mode: the conclusion output and the exit code -------------------------------------

@pytest.mark.parametrize(("failure", "exit_code"), [
    (InputError(Problem(".flipgate.yml", 4, "unknown key 'judg'")), 2),
    (IncompleteError("the judge failed after 3 retries: HTTP 500"), 3),
    (RuntimeError("boom"), 3),
])
def test_action_conclusion_is_error_exactly_when_it_exits_3(harness: Harness,
                                                            check: RecordingCheck,
                                                            failure: Exception,
                                                            exit_code: int) -> None:
    check.outcome = failure
    harness.pull_event()

    assert harness.run(check) == exit_code

    assert harness.final_status()["state"] == "error"
    assert (harness.outputs().get("conclusion") == "error") == (exit_code == 3)


@pytest.mark.parametrize(("method", "fragment"), [
    ("POST", "/statuses/"),          # the pending status, before the check
    ("POST", "/comments"),           # the comment, after a passing check
    ("GET", "/collaborators/"),      # the permission of a command's author
])
def test_action_that_github_fails_exits_3_with_conclusion_error(harness: Harness,
                                                                check: RecordingCheck,
                                                                method: str,
                                                                fragment: str) -> None:
    harness.server.fail(method, fragment, 422, message="Validation Failed")
    if fragment == "/collaborators/":
        harness.comment_event("/flipgate run")
    else:
        harness.pull_event()

    assert harness.run(check) == 3

    assert harness.outputs()["conclusion"] == "error"


def test_action_takes_the_token_from_github_token_without_the_input(
        harness: Harness, check: RecordingCheck) -> None:
    token = harness.env.pop("INPUT_GITHUB-TOKEN")
    harness.pull_event()

    assert harness.run(check, GITHUB_TOKEN=token) == 0

    assert harness.final_status()["state"] == "success" and harness.own_comments()
