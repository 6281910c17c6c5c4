"""`flipgate run --e2e` on a real temporary repository: a retrieval command from the base
ref, the real CLI and openai client against the loopback server, the offline judge."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.accounts import command_python, remove, shared_directory
from support.gfm import to_html
from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI
from support.prompts import ANSWER_FROM_CONTEXT

CASES = [{"id": f"q{i:02d}", "query": f"What is the fee for item {i}?",
          "context": f"The fee for item {i} is ${i}.",
          "category": "pricing" if i in (1, 2, 7) else "cards"} for i in range(10)]
# Live retrieval returns another context for exactly two queries.
LIVE = {c["query"]: c["context"] for c in CASES}
LIVE[CASES[1]["query"]] = "The fee for item 1 is $99."
LIVE[CASES[2]["query"]] = "Item 2 now costs $42 per month."

RETRIEVE = """import json, os, sys
query = sys.stdin.read()
with open(os.environ["RETRIEVAL_LOG"], "a") as log:
    log.write(json.dumps({"query": query, "openai_key": "OPENAI_API_KEY" in os.environ,
                          "case": os.environ.get("FLIPGATE_CASE_ID")}) + "\\n")
index = json.load(open(os.path.join(os.path.dirname(__file__), "index.json")))
print(index[query])
"""
CONFIG = f"""version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: offline
gate:
  blocking_categories: [pricing]
  strict: true            # ten cases: let the same judge's re-score block below the minimum
e2e:
  command: {command_python()} scripts/retrieve.py
  timeout: 20
  env: [RETRIEVAL_LOG]
"""
PROMPT = ANSWER_FROM_CONTEXT
HEAD_PROMPT = PROMPT.replace("gpt-4o-mini", "gpt-4.1").replace("from the context", "from memory")


def generation(body: dict) -> str:
    """The base model repeats the context; the head model answers from what it remembers
    (the frozen contexts), so it only goes wrong where today's retrieval differs.
    With `invent` it also adds a surcharge to item 7."""
    user = body["messages"][-1]["content"]
    query, context = user.split("\nContext: ", 1)
    if body["model"] == "gpt-4o-mini":
        return context
    remembered = next(c["context"] for c in CASES if c["query"] == query.strip())
    if generation.invent and "item 7" in query:
        return remembered + " A $3 surcharge applies."
    return remembered


@pytest.fixture
def server(openai_server: FakeOpenAI) -> FakeOpenAI:
    generation.invent = False
    openai_server.on_generation(generation)
    return openai_server


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({
        ".flipgate.yml": CONFIG,
        "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES),
        "prompts/answer.prompty": PROMPT,
        "scripts/retrieve.py": RETRIEVE,
        "scripts/index.json": json.dumps(LIVE),
    }, message="base")
    repo.branch("base", "HEAD")
    return repo


@pytest.fixture
def retrieval_log(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    shared = shared_directory()   # the command may run as another account, which writes here
    log = shared / "retrieval.log"
    monkeypatch.setenv("RETRIEVAL_LOG", str(log))
    yield log
    remove(shared)


def invoke(repo: GitRepo, tmp_path: Path, *args: str, out: str = "out"):
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                      "--out", str(tmp_path / out), "--cache", str(tmp_path / "cache"),
                                      *args])
    path = tmp_path / out / "report.json"
    return result, json.loads(path.read_text()) if path.exists() else None


@pytest.mark.parametrize("invent, frozen_exit", [(False, 0), (True, 1)])
def test_e2e_lists_the_two_changed_contexts_as_retrieval_drift_and_keeps_the_frozen_exit_code(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path, retrieval_log: Path,
        invent: bool, frozen_exit: int) -> None:
    generation.invent = invent
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})

    frozen_only, frozen_report = invoke(repo, tmp_path, out="frozen")
    result, report = invoke(repo, tmp_path, "--e2e")

    assert frozen_only.exit_code == frozen_exit, frozen_only.output
    assert result.exit_code == frozen_exit, result.output       # the end-to-end run never blocks
    assert report["conclusion"] == frozen_report["conclusion"]
    assert report["rows"] == frozen_report["rows"]
    e2e = report["e2e"]
    rows = {row["id"]: row for row in e2e["rows"]}
    assert len(rows) == 10
    drift = sorted(row["id"] for row in e2e["rows"] if row["drift"])
    assert drift == ["q01", "q02"]
    for case_id in drift:
        row = rows[case_id]
        assert row["frozen_verdict"] != row["e2e_verdict"]
        assert (row["frozen_verdict"], row["e2e_verdict"]) == ("unchanged", "regression")
        assert row["live_context"] == LIVE[row["query"]]
    assert "-The fee for item 1 is $1." in rows["q01"]["context_diff"]
    assert "+The fee for item 1 is $99." in rows["q01"]["context_diff"]
    assert "+Item 2 now costs $42 per month." in rows["q02"]["context_diff"]
    assert all(not rows[i]["context_changed"] and rows[i]["context_diff"] == ""
               for i in rows if i not in ("q01", "q02"))
    assert rows["q07"]["e2e_verdict"] == rows["q07"]["frozen_verdict"]      # same context: no drift
    assert e2e["counts"] == {"cases": 10, "drift": 2, "changed_contexts": 2, "retrieval_errors": 0}
    assert "end-to-end: 10 rows, 2 live contexts differ, 2 retrieval drift (q01, q02)" in result.stderr

    comment = (tmp_path / "out" / "comment.md").read_text()
    section = comment[comment.index("End-to-end run"):]
    assert "look at retrieval first" in section
    assert "q01" in section and "q02" in section and "q05" not in section
    assert "+The fee for item 1 is $99." in section
    html = to_html(comment)
    assert "<table>" in html and "retrieval drift" in html

    # Retrieval ran once per query, with no secret it was not given.
    calls = [json.loads(line) for line in retrieval_log.read_text().splitlines()]
    assert sorted(c["case"] for c in calls) == [c["id"] for c in CASES]
    assert not any(c["openai_key"] for c in calls)


def test_a_rerun_the_same_day_makes_no_retrieval_call(server: FakeOpenAI, repo: GitRepo, tmp_path: Path,
                                                      retrieval_log: Path) -> None:
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    first, first_report = invoke(repo, tmp_path, "--e2e", out="first")
    calls = retrieval_log.read_text()
    server.clear()

    second, second_report = invoke(repo, tmp_path, "--e2e", out="second")

    assert second.exit_code == first.exit_code == 0
    assert retrieval_log.read_text() == calls
    assert server.requests == []
    assert second_report["e2e"]["rows"] == first_report["e2e"]["rows"]
    assert "10 of 10 live contexts came from today's cache." in second_report["e2e"]["notes"]


def test_the_retrieval_command_runs_from_the_base_commit_not_the_pull_request(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path, retrieval_log: Path) -> None:
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT,
                 "scripts/retrieve.py": "print('PWNED')\n",
                 ".flipgate.yml": CONFIG.replace("scripts/retrieve.py", "scripts/other.py")})
    result, report = invoke(repo, tmp_path, "--e2e")
    assert result.exit_code == 0, result.output
    assert all(row["live_context"] != "PWNED" for row in report["e2e"]["rows"])
    assert sorted(row["id"] for row in report["e2e"]["rows"] if row["drift"]) == ["q01", "q02"]


def test_e2e_without_the_base_naming_a_retriever_is_bad_input_before_any_request(
        server: FakeOpenAI, tmp_path: Path, retrieval_log: Path) -> None:
    repo = GitRepo.create(tmp_path / "plain")
    repo.commit({".flipgate.yml": CONFIG.split("e2e:")[0],
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES),
                 "prompts/answer.prompty": PROMPT, "scripts/retrieve.py": RETRIEVE})
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT, ".flipgate.yml": CONFIG})  # the PR adds e2e:
    result, report = invoke(repo, tmp_path, "--e2e")
    assert result.exit_code == 2
    assert "--e2e needs the live retrieval named in the base's configuration" in result.stderr
    assert server.requests == [] and not retrieval_log.exists()


def test_failing_retrieval_is_reported_per_row_and_never_blocks(server: FakeOpenAI, repo: GitRepo,
                                                                tmp_path: Path, retrieval_log: Path) -> None:
    failing = RETRIEVE.replace("print(index[query])",
                               "if 'item 3' in query: sys.exit('index offline')\n"
                               "if 'item 4' in query:\n    import time; time.sleep(120)\n"
                               "print(index[query])")
    repo.commit({"scripts/retrieve.py": failing,
                 ".flipgate.yml": CONFIG.replace("timeout: 20", "timeout: 6")}, message="base 2")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    result, report = invoke(repo, tmp_path, "--e2e")
    assert result.exit_code == 0, result.output
    rows = {row["id"]: row for row in report["e2e"]["rows"]}
    assert rows["q03"]["e2e_verdict"] is None and "exited with status 1: index offline" in rows["q03"]["error"]
    assert rows["q04"]["e2e_verdict"] is None and "timed out after 6 s" in rows["q04"]["error"]
    assert not rows["q03"]["drift"] and report["e2e"]["counts"]["retrieval_errors"] == 2
    assert sorted(i for i, row in rows.items() if row["drift"]) == ["q01", "q02"]


@pytest.mark.parametrize("enabled, runs", [(True, True), (False, False)])
def test_the_action_runs_it_only_when_the_base_enables_it(server: FakeOpenAI, tmp_path: Path, retrieval_log: Path,
                                                         enabled: bool, runs: bool) -> None:
    from flipgate.e2e.run import E2ERequest
    from flipgate.run.pipeline import run_check

    repo = GitRepo.create(tmp_path / "r")
    repo.commit({".flipgate.yml": CONFIG + f"  enabled: {str(enabled).lower()}\n",
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES),
                 "prompts/answer.prompty": PROMPT, "scripts/retrieve.py": RETRIEVE,
                 "scripts/index.json": json.dumps(LIVE)})
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    request = E2ERequest(environ={"RETRIEVAL_LOG": str(retrieval_log), "PATH": "/usr/bin:/bin"},
                         date="2026-11-30", required=False)
    import os

    from flipgate.settings import Settings

    result = run_check(repo=repo.path, base="base", head="HEAD", settings=Settings.from_environ(os.environ),
                       out_dir=tmp_path / "out", cache_dir=None, e2e=request)
    assert result.exit_code == 0
    assert (result.report.e2e is not None) is runs
    assert retrieval_log.exists() is runs


def test_recording_the_end_to_end_report_appends_exactly_the_drifted_live_contexts(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path, retrieval_log: Path) -> None:
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    invoke(repo, tmp_path, "--e2e")
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")

    result = CliRunner().invoke(cli, ["record", str(tmp_path / "out" / "report.json"), "--out", str(cases)])

    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in cases.read_text(encoding="utf-8").splitlines()]
    appended = lines[len(CASES):]
    assert sorted(c["context"] for c in appended) == sorted([LIVE[CASES[1]["query"]], LIVE[CASES[2]["query"]]])
    assert {c["category"] for c in appended} == {"pricing"}
    assert "passed over 8: already in the cases file" in result.output


def test_no_end_to_end_run_when_the_frozen_run_could_not_finish(server: FakeOpenAI, repo: GitRepo, tmp_path: Path,
                                                                retrieval_log: Path) -> None:
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    server.fail("generation", status=500, times=1000)
    result, report = invoke(repo, tmp_path, "--e2e")
    assert result.exit_code == 3
    assert "e2e" not in report and not retrieval_log.exists()
    assert any("No end-to-end run" in note for note in report["notes"])


def test_e2e_shards_merge_into_the_unsharded_e2e_section(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path, retrieval_log: Path) -> None:
    """The end-to-end section is part of the run a merge rebuilds: rows in the cases' order,
    drift against the merged frozen verdicts."""
    from support.reports import comparable

    generation.invent = True
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    whole, expected = invoke(repo, tmp_path, "--e2e", out="whole")
    assert whole.exit_code == 1, whole.output
    for i in (1, 2):
        shard, _ = invoke(repo, tmp_path, "--e2e", "--shard", f"{i}/2", out=f"s{i}")
        assert shard.exit_code == 0, shard.output
    merged = CliRunner().invoke(cli, ["merge", str(tmp_path / "s1"), str(tmp_path / "s2"),
                                      "--out", str(tmp_path / "m")])
    assert merged.exit_code == 1, merged.output
    report = json.loads((tmp_path / "m" / "report.json").read_text())
    # The shards found the live contexts in the cache the whole run filled: a per-job note.
    notes = report["e2e"].pop("notes")
    assert all("came from today's cache" in note for note in notes)
    expected["e2e"].pop("notes", None)
    assert report["e2e"] == expected["e2e"]
    assert [row["id"] for row in report["e2e"]["rows"]] == [c["id"] for c in CASES]
    report.pop("e2e"), expected.pop("e2e")
    assert comparable(report, shards=2) == comparable(expected)
