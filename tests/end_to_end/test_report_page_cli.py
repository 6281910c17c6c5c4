"""`gate`, `run` and `merge` write report.html beside report.json, with every row's
query, context and answers (which report.json does not hold)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from flipgate.cli import cli

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI
from support.pages import read_page

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples/cards"


def page_ids(page: Path) -> list[str]:
    """The rows' ids in the page's order (blocking first, then by severity)."""
    return [row["i"] for row in read_page(page).rows()]


def test_gate_writes_the_page_with_every_row(tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, [
        "gate", "--cases", str(EXAMPLE / "cases.jsonl"), "--baseline", str(EXAMPLE / "baseline.jsonl"),
        "--candidate", str(EXAMPLE / "candidate.jsonl"), "--config", str(EXAMPLE / ".flipgate.yml"),
        "--judge", "offline", "--no-cache", "--out", str(tmp_path)])
    assert done.exit_code in (0, 1), done.output
    assert "report.html" in done.output
    report = json.loads((tmp_path / "report.json").read_text())
    ids = page_ids(tmp_path / "report.html")
    assert sorted(ids) == sorted(row["id"] for row in report["rows"])
    blocking = [row["id"] for row in report["rows"] if row["blocking"]]
    assert blocking and ids[:len(blocking)] == blocking  # blocking rows first, in case order
    page = read_page(tmp_path / "report.html")
    shown = {row["i"]: row for row in page.rows()}
    first = json.loads((EXAMPLE / "candidate.jsonl").read_text().splitlines()[0])
    case = json.loads((EXAMPLE / "cases.jsonl").read_text().splitlines()[0])
    row = shown[case["id"]]
    answer = row["ca"] if "ca" in row else "".join(text for text, _ in row["ans"])
    assert answer.split("\n")[0][:60] == first["response"].split("\n")[0][:60]
    assert row["q"] == case["query"]


CONFIG = """version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
gate:
  blocking_categories: [pricing]
  strict: true
"""
PROMPT = """---
name: answer
model:
  api: chat
  configuration:
    type: openai
    model: gpt-4o-mini
---
system:
You answer bank questions.
user:
{{ query }}
Context: {{ context }}
"""
CASES = [{"id": f"case-{i}", "query": f"What about item {i}?",
          "context": f"Item {i} costs {i + 1} dollars and ships in 2 days.",
          "category": ("pricing", "general")[i % 2]} for i in range(12)]


def generation(body: dict) -> str:
    context = body["messages"][-1]["content"].split("Context: ", 1)[1]
    if "generously" in body["messages"][0]["content"] and int(context.split()[1]) % 4 == 0:
        return context + " A 75 dollar handling fee applies."
    return context


def test_run_and_a_merge_of_shards_write_the_page_with_every_row(tmp_path: Path, openai_server: FakeOpenAI) -> None:
    openai_server.on_generation(generation)
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG, "prompts/answer.prompty": PROMPT,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)}, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.replace("questions.", "questions generously.")})

    def run(out: Path, *extra: str):
        return CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                        "--head", "HEAD", "--out", str(out), "--no-cache", *extra])

    whole = run(tmp_path / "whole")
    assert whole.exit_code == 1, whole.output
    for i in (1, 2):
        assert run(tmp_path / f"shard-{i}", "--shard", f"{i}/2").exit_code == 0
    merged = CliRunner().invoke(cli, ["merge", str(tmp_path / "shard-1"), str(tmp_path / "shard-2"),
                                      "--out", str(tmp_path / "merged")])
    assert merged.exit_code == 1, merged.output
    assert "report.html" in merged.output
    whole_page, merged_page = tmp_path / "whole/report.html", tmp_path / "merged/report.html"
    assert page_ids(merged_page) == page_ids(whole_page)
    assert sorted(page_ids(whole_page)) == sorted(case["id"] for case in CASES)
    assert merged_page.read_text(encoding="utf-8") == whole_page.read_text(encoding="utf-8")
    shown = {row["i"]: row for row in read_page(merged_page).rows()}
    # The answers and contexts came through the partials into the merged page.
    assert ["A 75 dollar handling fee applies.", 1] in shown["case-4"]["ans"]  # case-4's claim
    assert "Item 4 costs 5 dollars and ships in 2 days." in [p[0] for p in shown["case-4"]["x"]]
    assert shown["case-11"]["q"] == "What about item 11?"
    # (The merged rows' statements are item 4 of issue 18: merge re-deriving the run.)
