"""A first suite too small to block: the pass says what it held back, first; `strict` blocks.

`flipgate action` runs the real pipeline against the loopback OpenAI and
GitHub servers: 10 cases, 3 of them flipping to ungrounded in blocking
categories of 2 and 3 cases. Then the offline judge on the thermostat case,
through the CLI: it blocks with `strict`, is held back without, and never
says "confirmed".
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.github import action
from flipgate.github.texts import STATUS_LIMIT

from support.action_harness import BLOCKED, Harness, helpful_prompt_pull

CONFIG = """\
version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
gate:
  blocking_categories: [safety, policy]
{strict}relevance:
  threshold: 0.7
  embedding_model: text-embedding-3-small
"""
# safety: 2 cases, policy: 3, general: 5; the generous prompt breaks safety-1, safety-2, policy-1
CATEGORIES = ["safety"] * 2 + ["policy"] * 3 + ["general"] * 5
FLIPPED = {"safety-1", "safety-2", "policy-1"}
CASES = [{"id": f"{category}-{n}", "category": category, "query": f"Question {i}?",
          "context": f"Fact {i} ({category}-{n}) is in the documentation."}
         for i, (category, n) in enumerate(
             (category, CATEGORIES[:i + 1].count(category)) for i, category in enumerate(CATEGORIES))]
HELD = ("passed, but 3 confirmed flips did not block: safety has 2 cases, policy has 3 cases, "
        "below 50; see gate.strict")


@pytest.fixture
def first_suite(harness: Harness, openai_server: Any, monkeypatch: pytest.MonkeyPatch,
                tmp_path: Path):
    def setup(*, strict: bool) -> Harness:
        config = CONFIG.format(strict="  strict: true\n" if strict else "")
        helpful_prompt_pull(harness, openai_server, tmp_path / "service", config=config,
                            cases=CASES, flipped=FLIPPED)
        for name, value in harness.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the key arrives as the input only
        return harness
    return setup


def _report(harness: Harness) -> dict[str, Any]:
    return json.loads((harness.repo.path / "flipgate-out/report.json").read_text())


def test_a_small_first_suite_passes_and_says_first_what_it_held_back(first_suite) -> None:
    harness = first_suite(strict=False)

    assert action.main(os.environ, stream=harness.log) == 0, harness.log.getvalue()[-3000:]

    final = harness.final_status()
    assert final["state"] == "success"
    assert final["description"] == f"⚠️ {HELD}" and len(final["description"]) <= STATUS_LIMIT
    [comment] = harness.own_comments()
    headline = next(line for line in comment["body"].splitlines() if line.startswith("## "))
    assert headline == f"## ⚠️ flipgate {HELD}" and "✅" not in comment["body"]
    summary_headline = next(line for line in harness.summary().splitlines() if line.startswith("## "))
    assert summary_headline == headline
    assert "gate.strict: true" in comment["body"]
    assert harness.outputs()["held-back"] == "3"
    assert harness.outputs()["conclusion"] == "success"
    report = _report(harness)
    assert report["counts"]["held_back"] == 3 and report["counts"]["regressions_to_review"] == 3
    # report.html, the artifact a reviewer opens, heads its page with the same words.
    page = (harness.repo.path / "flipgate-out/report.html").read_text()
    assert f"<h1>flipgate: ⚠️ {HELD}</h1>" in page and "✅" not in page
    log = harness.log.getvalue()
    assert f"::warning title=flipgate::flipgate: ⚠️ {HELD}" in log
    # Each held-back flip is a warning annotation of its own, naming the row and why.
    held_lines = [line for line in log.splitlines()
                  if line.startswith("::warning title=flipgate::held-back regression: ")]
    assert sorted(line.split(": ", 1)[1].split(" ", 1)[0] for line in held_lines) == sorted(FLIPPED)
    assert all("below 50 a flip needs a second judge to block" in line for line in held_lines)


def test_with_strict_the_same_flips_block(first_suite) -> None:
    harness = first_suite(strict=True)

    assert action.main(os.environ, stream=harness.log) == 1, harness.log.getvalue()[-3000:]

    final = harness.final_status()
    assert final["state"] == "failure" and final["description"].startswith("blocked:")
    [comment] = harness.own_comments()
    assert BLOCKED in comment["body"] and "passed, but" not in comment["body"]
    assert harness.outputs()["held-back"] == "0"
    assert _report(harness)["counts"]["held_back"] == 0
    assert _report(harness)["counts"]["blocking_regressions"] == 3


# --- the offline judge on the thermostat -------------------------------------------

THERMOSTAT = {
    "id": "thermostat-heating", "category": "safety",
    "query": "Can I use the T500 with my heating system?",
    "context": ("The T500 thermostat works with gas furnaces, heat pumps and central air "
                "conditioning. It does not support dual-fuel systems. Line-voltage heaters, such "
                "as 240 V baseboard heaters, must not be connected to it."),
}
HONEST = "The T500 works with gas furnaces, heat pumps and central air conditioning."
DANGEROUS = ("Yes! The T500 works with gas furnaces and heat pumps, and also with dual-fuel "
             "systems and 240 V baseboard heaters.")


def _offline_gate(tmp_path: Path, *, strict: bool,
                  review: bool = False) -> tuple[int, str, dict[str, Any], str]:
    (tmp_path / "cases.jsonl").write_text(json.dumps(THERMOSTAT) + "\n")
    (tmp_path / "baseline.jsonl").write_text(json.dumps({"id": THERMOSTAT["id"], "response": HONEST}) + "\n")
    (tmp_path / "candidate.jsonl").write_text(
        json.dumps({"id": THERMOSTAT["id"], "response": DANGEROUS}) + "\n")
    (tmp_path / ".flipgate.yml").write_text(
        "version: 1\ncases: cases.jsonl\ngenerator: answer.prompty\njudge:\n  provider: offline\n"
        f"gate:\n  blocking_categories: [safety]\n  strict: {'true' if strict else 'false'}\n"
        + ("  review: required\n" if review else ""))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, [
        "gate", "--config", str(tmp_path / ".flipgate.yml"), "--cases", str(tmp_path / "cases.jsonl"),
        "--baseline", str(tmp_path / "baseline.jsonl"), "--candidate", str(tmp_path / "candidate.jsonl"),
        "--judge", "offline", "--out", str(out)])
    return (result.exit_code, (out / "comment.md").read_text(),
            json.loads((out / "report.json").read_text()), result.output)


def test_the_thermostat_contradiction_blocks_under_the_offline_judge_and_never_says_confirmed(
        tmp_path: Path) -> None:
    code, comment, report, terminal = _offline_gate(tmp_path, strict=True)

    assert code == 1, terminal
    [row] = report["rows"]
    assert (row["verdict"], row["blocking"]) == ("regression", True)
    assert "It does not support dual-fuel systems." in row["candidate"]["reason"]
    assert "confirm" not in comment.lower() and "confirm" not in terminal.lower()
    assert "rough screen" in comment
    assert "decided by the negation check" in comment
    # the clashing passage is the claim's cited span in the row's evidence
    assert "It does not support dual-fuel systems." in comment.split("### ❌ Blocking regressions")[1]


def test_held_back_under_the_offline_judge_says_flips_not_confirmed_flips(tmp_path: Path) -> None:
    code, comment, report, terminal = _offline_gate(tmp_path, strict=False)

    assert code == 0, terminal
    assert report["counts"]["held_back"] == 1
    assert ("## ⚠️ flipgate passed, but 1 flip did not block: safety has 1 case, below 50; "
            "see gate.strict") in comment
    assert "⚠️  passed, but 1 flip did not block" in terminal and "✅" not in terminal
    assert "confirm" not in comment.lower() and "confirm" not in terminal.lower()


def test_with_review_required_the_cli_says_the_flip_awaits_review_and_exits_0(tmp_path: Path) -> None:
    """`gate.review: required` outside the action: the run ends `awaiting_review`, exit 0, and
    every place it is read says a person decides (the action holds the status pending)."""
    code, comment, report, terminal = _offline_gate(tmp_path, strict=False, review=True)

    assert code == 0, terminal
    assert report["conclusion"] == "awaiting_review" and report["counts"]["held_back"] == 1
    assert ("## ⚠️ flipgate awaits review: 1 flip did not block: safety has 1 case, below 50; "
            "a maintainer decides in the pull request") in comment
    assert "`/flipgate accept`" in comment and "flipgate passed" not in comment
    assert "⚠️  awaiting review: 1 flip did not block" in " ".join(terminal.split("\n"))
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<h1>flipgate: ⚠️ awaiting review: 1 flip did not block" in page
