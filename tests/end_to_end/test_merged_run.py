"""A merged run is the run: the same cases unsharded, and as N shards plus `merge`, write the
same report.json (only usage, cache, budget spending and scheduling peaks, which are per
job, may differ) and the same comment lines, with the default sample-size rule deciding
on the whole run's categories, never on a shard's part of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.run.shards import Shard

from support.reports import PER_JOB, comment_without_per_job, comparable

# The default rule: min_cases_per_category 50, not strict, the same judge confirms.
CONFIG = "version: 1\ncases: cases.jsonl\njudge:\n  provider: offline\n"
FEE = " A 75 dollar handling fee applies."


def cases(policy: int = 50) -> list[dict[str, Any]]:
    """The issue's 200 cases: 50 policy, 50 pricing, 100 general."""
    categories = ["policy"] * policy + ["pricing"] * 50 + ["general"] * 100
    return [{"id": f"case-{i:03d}", "query": f"What does item {i} cost?",
             "context": f"Item {i} costs {i + 1} dollars and ships in 2 days.", "category": category}
            for i, category in enumerate(categories)]


def write_inputs(folder: Path, policy: int = 50) -> None:
    """10 confirmed regressions in policy (blocking), 10 in general (to review)."""
    all_cases = cases(policy)
    flipped = {c["id"] for c in all_cases if c["category"] == "policy"}
    general = [c["id"] for c in all_cases if c["category"] == "general"]
    flipped = set(sorted(flipped)[:10]) | set(general[:10])
    (folder / "flipgate.yml").write_text(CONFIG)
    lines = {"cases.jsonl": [json.dumps(c) for c in all_cases],
             "b.jsonl": [json.dumps({"id": c["id"], "response": c["context"]}) for c in all_cases],
             "c.jsonl": [json.dumps({"id": c["id"], "response": c["context"] + (FEE if c["id"] in flipped else "")})
                         for c in all_cases]}
    for name, rows in lines.items():
        (folder / name).write_text("\n".join(rows) + "\n")


def gate(folder: Path, out: Path, *extra: str):
    return CliRunner().invoke(cli, ["gate", "--cases", str(folder / "cases.jsonl"),
                                    "--baseline", str(folder / "b.jsonl"),
                                    "--candidate", str(folder / "c.jsonl"),
                                    "--config", str(folder / "flipgate.yml"), "--out", str(out),
                                    "--no-cache", *extra])


@pytest.mark.parametrize("count", [2, 4])
def test_shards_plus_merge_block_where_the_unsharded_run_blocks(tmp_path: Path, count: int) -> None:
    write_inputs(tmp_path)
    # No shard has 50 cases of a category: decided on its own part, none would block.
    for i in range(1, count + 1):
        part = [c for c in cases() if Shard(i, count).holds(c["id"])]
        assert sum(c["category"] == "policy" for c in part) < 50

    whole = gate(tmp_path, tmp_path / "whole")
    assert whole.exit_code == 1, whole.output
    expected = json.loads((tmp_path / "whole" / "report.json").read_text())
    assert expected["counts"]["blocking_regressions"] == 10
    assert expected["counts"]["regressions_to_review"] == 10

    for i in range(1, count + 1):
        shard = gate(tmp_path, tmp_path / f"s{i}", "--shard", f"{i}/{count}")
        assert shard.exit_code == 0, shard.output
    merged = CliRunner().invoke(cli, ["merge", *(str(tmp_path / f"s{i}") for i in range(1, count + 1)),
                                      "--out", str(tmp_path / "merged")])
    assert merged.exit_code == 1, merged.output
    report = json.loads((tmp_path / "merged" / "report.json").read_text())

    assert comparable(report, shards=count) == comparable(expected)
    assert {key for key in PER_JOB if key in report} == {key for key in PER_JOB if key in expected}
    # The blocking rows carry their statements and the categories say what the rule saw.
    blocking = [row for row in report["rows"] if row["blocking"]]
    assert len(blocking) == 10 and all(row["candidate"]["statements"] for row in blocking)
    assert report["categories"]["policy"] == {"cases": 50, "blocking": True, "below_minimum": False,
                                              "minimum": 50}

    comment = (tmp_path / "merged" / "comment.md").read_text()
    unsharded = (tmp_path / "whole" / "comment.md").read_text()
    for line in unsharded.splitlines():
        if "Blocking categories" in line or "statements supported" in line:
            assert line in comment
    assert "Blocking categories" in comment and "statements supported" in comment


def test_a_small_category_still_needs_a_second_judge_when_merged(tmp_path: Path) -> None:
    """The rule cuts both ways: below 50 in the whole run, a merged regression does not block."""
    write_inputs(tmp_path, policy=40)
    whole = gate(tmp_path, tmp_path / "whole")
    assert whole.exit_code == 0, whole.output
    for i in (1, 2):
        assert gate(tmp_path, tmp_path / f"s{i}", "--shard", f"{i}/2").exit_code == 0
    merged = CliRunner().invoke(cli, ["merge", str(tmp_path / "s1"), str(tmp_path / "s2"),
                                      "--out", str(tmp_path / "m")])
    assert merged.exit_code == 0, merged.output
    report = json.loads((tmp_path / "m" / "report.json").read_text())
    expected = json.loads((tmp_path / "whole" / "report.json").read_text())
    assert comparable(report, shards=2) == comparable(expected)
    assert report["counts"]["regressions_to_review"] == 20
    assert any("below 50" in row.get("review_reason", "") for row in report["rows"])
    # The merge holds back what the whole run holds back, and says so first.
    assert report["counts"]["held_back"] == expected["counts"]["held_back"] == 10
    headline = "## ⚠️ flipgate passed, but 10 flips did not block: policy has 40 cases, below 50"
    assert headline in (tmp_path / "m" / "comment.md").read_text()


def test_the_merged_comment_is_the_unsharded_one_to_the_character(tmp_path: Path,
                                                                   openai_server) -> None:
    """A judge pinned at temperature 0 (a whole number, read back through a float once): the
    merged comment.md equals the unsharded one line for line, but for the merge note and usage."""
    openai_server.on_groundedness(
        lambda query, context, response, call_index: 2 if response.endswith(FEE) else 5)
    write_inputs(tmp_path)
    (tmp_path / "flipgate.yml").write_text(
        "version: 1\ncases: cases.jsonl\njudge:\n  provider: openai\n  model: judge-pinned\n"
        "  max_retries: 0\ngate:\n  blocking_categories: [policy]\n")
    whole = gate(tmp_path, tmp_path / "whole")
    for i in (1, 2, 3):
        shard = gate(tmp_path, tmp_path / f"s{i}", "--shard", f"{i}/3")
        assert shard.exit_code == 0, shard.output
    merged = CliRunner().invoke(cli, ["merge", *(str(tmp_path / f"s{i}") for i in (1, 2, 3)),
                                      "--out", str(tmp_path / "merged")])
    assert merged.exit_code == whole.exit_code == 1, merged.output
    unsharded = (tmp_path / "whole" / "comment.md").read_text()
    comment = (tmp_path / "merged" / "comment.md").read_text()
    assert "· temperature 0\n" in unsharded  # a whole number, as pinned
    assert comment_without_per_job(comment, shards=3) == comment_without_per_job(unsharded, shards=1)
