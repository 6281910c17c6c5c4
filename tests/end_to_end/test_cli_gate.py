"""`flipgate gate` end to end: the real CLI, the real openai client, a loopback judge."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cards"

# id -> (category, baseline score, candidate scores by call: first scoring, re-score)
SCRIPT = {
    "fee-invented": ("pricing", 5, [2, 2]),
    "review-me": ("general", 5, [1, 1]),
    "wobbly": ("policy", 5, [2, 4]),
    "went-quiet": ("policy", 4, [3]),
    "always-bad": ("policy", 2, [1]),
    "improved": ("policy", 3, [5]),
    "steady": ("policy", 5, [5]),
}
EXPECTED = {
    "fee-invented": ("regression", True),
    "review-me": ("regression", False),
    "wobbly": ("unstable", False),
    "went-quiet": ("new_non_answer", False),
    "always-bad": ("still_ungrounded", False),
    "improved": ("moved", False),
    "steady": ("unchanged", False),
}


def write_inputs(directory: Path, script: dict = SCRIPT) -> list[str]:
    with (directory / "cases.jsonl").open("w") as cases, \
            (directory / "base.jsonl").open("w") as base, \
            (directory / "cand.jsonl").open("w") as cand:
        for case_id, (category, _, _) in script.items():
            cases.write(json.dumps({"id": case_id, "query": f"question {case_id}?",
                                    "context": f"context of {case_id}", "category": category}) + "\n")
            base.write(json.dumps({"id": case_id, "response": f"baseline answer {case_id}"}) + "\n")
            cand.write(json.dumps({"id": case_id, "response": f"candidate answer {case_id}"}) + "\n")
    (directory / "flipgate.yml").write_text(
        "version: 1\ncases: cases.jsonl\njudge:\n  provider: openai\n  model: judge-pinned\n"
        "  max_retries: 0\n  timeout: 5\ngate:\n  blocking_categories: [pricing, policy]\n  strict: true\n")
    return ["gate", "--cases", str(directory / "cases.jsonl"),
            "--baseline", str(directory / "base.jsonl"), "--candidate", str(directory / "cand.jsonl"),
            "--config", str(directory / "flipgate.yml"), "--out", str(directory / "out"),
            "--cache", str(directory / "cache")]


def scripted(script: dict = SCRIPT):
    def score(query, context, response, call_index):
        side, case_id = response.split(" answer ")
        _, base, cand = script[case_id]
        if side == "baseline":
            return base
        return cand[min(call_index, len(cand) - 1)]
    return score


def test_every_verdict_comes_out_right_against_a_scripted_llm_judge(openai_server, tmp_path: Path) -> None:
    openai_server.on_groundedness(scripted())
    result = CliRunner().invoke(cli, write_inputs(tmp_path))
    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    got = {row["id"]: (row["verdict"], row["blocking"]) for row in report["rows"]}
    assert got == EXPECTED
    assert report["conclusion"] == "failure"
    judge = report["judge"]
    assert {key: judge[key] for key in ("provider", "model", "engine", "embedding_model")} == {
        "provider": "openai", "model": "judge-pinned", "engine": "openai",
        "embedding_model": "text-embedding-3-small"}
    assert (judge["rescore"], judge["second_opinion"], judge["temperature"]) == ("same_judge", None, 0)
    assert report["counts"]["blocking_regressions"] == 1
    assert report["counts"]["regressions_to_review"] == 1

    # The re-score is a real second request, made only for the three newly-ungrounded rows.
    grounded = openai_server.chat_requests("groundedness")
    assert len(grounded) == 2 * len(SCRIPT) + 3
    assert {r.body["model"] for r in openai_server.chat_requests()} == {"judge-pinned"}
    # The run blocks, so fluency (a tie-breaker) is never asked, and both outputs say why.
    assert openai_server.chat_requests("fluency") == []
    assert report["fluency"] == {"rows": 0, "mean_delta": None, "failed": 0, "skipped": 1}
    assert any(note.startswith("Fluency was not asked on 1 tied row: the gate blocked")
               for note in report["notes"])
    # One statements request per flip a reviewer reads (2 regressions, 1 unstable, 1 new
    # non-answer), each for the candidate's answer; none for the other rows.
    flips = {"fee-invented", "review-me", "wobbly", "went-quiet"}
    assert sorted(r.inputs.response for r in openai_server.chat_requests("statements")) == sorted(
        f"candidate answer {case_id}" for case_id in flips)
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "fee-invented" in comment and "<!-- flipgate -->" in comment
    assert "Not asked: the gate blocked on a groundedness regression" in comment


def test_fluency_is_asked_for_tied_rows_only_after_groundedness_when_nothing_blocks(
        openai_server, tmp_path: Path) -> None:
    script = {**SCRIPT, "fee-invented": ("pricing", 5, [2, 4])}  # unstable now: nothing blocks
    openai_server.on_groundedness(scripted(script))
    result = CliRunner().invoke(cli, write_inputs(tmp_path, script))
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["conclusion"] == "success"
    fluency = openai_server.chat_requests("fluency")
    assert sorted(r.inputs.response for r in fluency) == ["baseline answer steady",
                                                           "candidate answer steady"]
    assert report["fluency"]["rows"] == 1 and report["fluency"]["skipped"] == 0
    # Fluency is the second phase: every groundedness request was sent before the first one.
    kinds = [r.kind for r in openai_server.requests]
    last_groundedness = max(i for i, kind in enumerate(kinds) if kind == "groundedness")
    assert kinds.index("fluency") > last_groundedness
    assert not any(note.startswith("Fluency was not asked") for note in report.get("notes", []))


def test_report_json_pins_the_mode_and_no_sdk_for_the_native_engine(openai_server, tmp_path: Path) -> None:
    openai_server.on_groundedness(scripted())
    assert CliRunner().invoke(cli, write_inputs(tmp_path)).exit_code == 1
    judge = json.loads((tmp_path / "out" / "report.json").read_text())["judge"]
    assert (judge["mode"], judge["sdk"]) == ("with_query", None)


def test_without_query_grades_on_the_context_alone_and_never_shows_the_query(openai_server,
                                                                            tmp_path: Path) -> None:
    openai_server.on_groundedness(scripted())
    args = write_inputs(tmp_path)
    config = tmp_path / "flipgate.yml"
    config.write_text(config.read_text().replace("  timeout: 5\n", "  timeout: 5\n  mode: without_query\n"))
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["judge"]["mode"] == "without_query"
    assert {row["id"]: (row["verdict"], row["blocking"]) for row in report["rows"]} == EXPECTED
    requests = openai_server.chat_requests("groundedness")
    assert requests
    for request in requests:
        assert "3 = accurate but vague" in request.body["messages"][0]["content"]
        assert "question " not in request.body["messages"][1]["content"]  # no case's query


def test_a_second_run_is_served_from_the_cache(openai_server, tmp_path: Path) -> None:
    openai_server.on_groundedness(scripted())
    args = write_inputs(tmp_path)
    assert CliRunner().invoke(cli, args).exit_code == 1
    before = len(openai_server.requests)
    assert CliRunner().invoke(cli, args).exit_code == 1
    assert len(openai_server.requests) == before


def test_judge_errors_exit_3_and_still_list_confirmed_regressions(openai_server, tmp_path: Path) -> None:
    def score(query, context, response, call_index):
        if response == "candidate answer steady":
            return "the judge rambles instead of answering in JSON"
        return scripted()(query, context, response, call_index)

    openai_server.on_groundedness(score)
    result = CliRunner().invoke(cli, write_inputs(tmp_path))
    assert result.exit_code == 3, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    rows = {row["id"]: row for row in report["rows"]}
    assert report["conclusion"] == "error"
    assert rows["steady"]["verdict"] == "error" and rows["steady"]["errors"]
    assert rows["fee-invented"]["verdict"] == "regression"
    # A bad reply is retried once with the same request, then reported.
    steady = [r for r in openai_server.chat_requests("groundedness")
              if r.inputs and r.inputs.response == "candidate answer steady"]
    assert len(steady) == 2


def test_an_unreadable_reply_is_a_judge_error_naming_the_model_quoted_short_and_escaped(
        openai_server, tmp_path: Path) -> None:
    from support.gfm import to_html

    hostile = "<img src=x onerror=alert(1)> | **score: 5** " + "x" * 400

    def score(query, context, response, call_index):
        if response == "candidate answer steady":
            return hostile
        return scripted()(query, context, response, call_index)

    openai_server.on_groundedness(score)
    result = CliRunner().invoke(cli, write_inputs(tmp_path))
    assert result.exit_code == 3, result.output
    rows = {row["id"]: row for row in json.loads((tmp_path / "out" / "report.json").read_text())["rows"]}
    (error,) = rows["steady"]["errors"]
    assert "(model judge-pinned; reply " in error
    assert json.dumps(hostile[:200]) + " (cut))" in error and hostile[:201] not in error
    html = to_html((tmp_path / "out" / "comment.md").read_text())
    assert "<img" not in html and "&lt;img src=x" in html


def test_an_unreachable_judge_is_exit_3_never_a_pass(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: refused
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    result = CliRunner().invoke(cli, write_inputs(tmp_path))
    assert result.exit_code == 3
    assert json.loads((tmp_path / "out" / "report.json").read_text())["conclusion"] == "error"


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda d: (d / "cases.jsonl").write_text('{"id": "a", "query": "q"}\n'),
     "cases.jsonl:1: missing required field 'context'"),
    (lambda d: (d / "cand.jsonl").write_text("{not json\n"), "cand.jsonl:1: invalid JSON"),
    (lambda d: (d / "flipgate.yml").write_text("cases: cases.jsonl\njudge:\n  provder: x\n"),
     "flipgate.yml:3: unknown key 'judge.provder'"),
    (lambda d: (d / "flipgate.yml").write_text("cases: cases.jsonl\njudge:\n  provider: openai\n"
                                               "  model: m\n  mode: sometimes\n"),
     "flipgate.yml:5: 'judge.mode' must be one of with_query, without_query"),
    # With the default judge.mode (with_query), a case without a query is bad input: the
    # azure engine would otherwise grade that row with the other rubric.
    (lambda d: (d / "cases.jsonl").write_text(
        '{"id": "ok", "query": "q?", "context": "c"}\n{"id": "blank", "query": "  ", "context": "c"}\n'),
     "cases.jsonl:2: case 'blank' has an empty 'query', but judge.mode is with_query"),
])
def test_bad_input_exits_2_naming_file_and_line(openai_server, tmp_path: Path, mutate, expected) -> None:
    args = write_inputs(tmp_path)
    mutate(tmp_path)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert expected in result.output
    assert "Traceback" not in result.output
    assert openai_server.requests == []
    assert not (tmp_path / "out" / "report.json").exists()


def test_the_readme_example_blocks_offline(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "flipgate", "gate", "--cases", str(EXAMPLE / "cases.jsonl"),
         "--baseline", str(EXAMPLE / "baseline.jsonl"), "--candidate", str(EXAMPLE / "candidate.jsonl"),
         "--config", str(EXAMPLE / ".flipgate.yml"), "--judge", "offline"],
        cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode == 1, result.stderr
    report = json.loads((tmp_path / "flipgate-out" / "report.json").read_text())
    assert report["conclusion"] == "failure" and report["judge"]["provider"] == "offline"
    assert report["counts"]["blocking_regressions"] >= 1
    assert "<!-- flipgate -->" in (tmp_path / "flipgate-out" / "comment.md").read_text()
    assert "regression" in result.stdout


def test_help_imports_no_model_client() -> None:
    code = ("import sys; from flipgate.cli import cli\n"
            "try:\n    cli.main(['--help'], standalone_mode=False)\nfinally:\n"
            "    heavy = [m for m in sys.modules if m.split('.')[0] in ('openai', 'azure', 'promptflow', 'github')]\n"
            "    print('HEAVY', heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out
    assert "gate" in out and "replay" in out and "run" in out and "action" in out


def test_without_config_or_judge_it_says_it_falls_back_to_the_lexical_judge(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = write_inputs(tmp_path)
    config_at = args.index("--config")
    del args[config_at:config_at + 2]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1), result.output
    assert "offline lexical judge" in result.stderr
    assert json.loads((tmp_path / "out" / "report.json").read_text())["judge"]["provider"] == "offline"


@pytest.mark.azure
@pytest.mark.skipif(importlib.util.find_spec("azure.ai.evaluation") is None,
                    reason="the optional azure-ai-evaluation package is not installed")
def test_the_azure_engine_prints_no_traceback_from_a_fresh_process(openai_server,
                                                                   tmp_path: Path) -> None:
    """The SDK logs tracebacks to stdout unless PF_LOGGING_LEVEL is set before it is
    imported; the entry point sets it, so a judge that keeps failing is only a judge error."""
    openai_server.fail("groundedness", status=400, times=1000)  # not retried: quick
    args = write_inputs(tmp_path, {"steady": ("policy", 5, [5])})
    (tmp_path / "flipgate.yml").write_text(
        "version: 1\ncases: cases.jsonl\njudge:\n  provider: openai\n  model: judge-pinned\n"
        "  engine: azure-ai-evaluation\n  max_retries: 0\n  timeout: 5\n")
    env = {name: value for name, value in os.environ.items() if name != "PF_LOGGING_LEVEL"}
    result = subprocess.run([sys.executable, "-m", "flipgate", *args], env=env, cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 3, result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["counts"]["errors"] == 1 and report["judge"]["engine"] == "azure-ai-evaluation"
    assert "Traceback" not in result.stdout and "Traceback" not in result.stderr


def test_a_key_refused_after_the_probe_stops_the_gate_at_the_first_refusal(
        openai_server, tmp_path: Path) -> None:
    openai_server.fail("groundedness", status=401, times=1000)
    args = write_inputs(tmp_path) + ["--concurrency", "1"]
    result = CliRunner().invoke(cli, args)

    assert result.exit_code == 3, result.output
    assert len(openai_server.chat_requests("groundedness")) <= 2  # in flight at most, never retried
    assert result.stderr.count("HTTP 401") == 1 and "(sent once)" in result.stderr
    assert "judge model judge-pinned" in result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    # Stopped before any row was scored: every case is named as not run, none as scored.
    assert report["conclusion"] == "error" and report["rows"]
    assert {row["verdict"] for row in report["rows"]} == {"not_run"}


def test_a_gate_without_any_configuration_says_so_and_notes_it_in_the_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no .flipgate.yml here
    (tmp_path / "cases.jsonl").write_text(json.dumps(
        {"id": "r-1", "query": "How long do refunds take?", "context": "Refunds take 30 days."}) + "\n")
    for name in ("base", "cand"):
        (tmp_path / f"{name}.jsonl").write_text(json.dumps({"id": "r-1", "response": "Refunds take 30 days."}) + "\n")
    result = CliRunner().invoke(cli, ["gate", "--cases", "cases.jsonl", "--baseline", "base.jsonl",
                                      "--candidate", "cand.jsonl", "--judge", "offline", "--out", "out"])
    assert result.exit_code == 0, result.output
    assert "No configuration: no --config was given and there is no .flipgate.yml here" in result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert any(note.startswith("No configuration:") and "blocking categories: policy, pricing, safety"
               in note for note in report["notes"])
