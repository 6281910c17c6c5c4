"""`flipgate gate` at the LLM door's limits: identical requests sent once, and a run that
finishes under a provider's token-bucket rate limit with the same verdicts as without one."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.openai_server import FakeOpenAI


def write_inputs(directory: Path, n: int, *, same_every: int = 2, concurrency: int = 8) -> list[str]:
    """`n` cases; every `same_every`-th candidate equals its baseline, every fifth invents a fee."""
    with (directory / "cases.jsonl").open("w") as cases, \
            (directory / "base.jsonl").open("w") as base, \
            (directory / "cand.jsonl").open("w") as cand:
        for i in range(n):
            context = f"Card {i}: a replacement costs {i % 7 + 1} dollars and arrives in 5 days."
            cases.write(json.dumps({"id": f"case-{i}", "query": f"What does card {i} cost?",
                                    "context": context, "category": "pricing"}) + "\n")
            base.write(json.dumps({"id": f"case-{i}", "response": context}) + "\n")
            answer = (context if i % same_every == 0
                      else context + " There is a 99 dollar courier fee." if i % 5 == 1
                      else f"Card {i} replacement costs {i % 7 + 1} dollars.")
            cand.write(json.dumps({"id": f"case-{i}", "response": answer}) + "\n")
    (directory / "flipgate.yml").write_text(
        "version: 1\ncases: cases.jsonl\njudge:\n  provider: openai\n  model: judge-pinned\n"
        f"  timeout: 10\nconcurrency: {concurrency}\n"
        "gate:\n  strict: true\n")  # a handful of cases: the same judge's re-score may block
    return ["gate", "--cases", str(directory / "cases.jsonl"),
            "--baseline", str(directory / "base.jsonl"), "--candidate", str(directory / "cand.jsonl"),
            "--config", str(directory / "flipgate.yml"), "--out", str(directory / "out"), "--no-cache"]


def run_gate(args: list[str], out: Path) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, args)
    return result.exit_code, json.loads((out / "report.json").read_text())


def verdicts(report: dict) -> dict[str, str]:
    return {row["id"]: row["verdict"] for row in report["rows"]}


def test_no_request_body_is_sent_twice_except_the_rescores(openai_server: FakeOpenAI,
                                                            tmp_path: Path) -> None:
    openai_server.latency = 0.02  # identical requests overlap in flight
    code, report = run_gate(write_inputs(tmp_path, 20), tmp_path / "out")
    assert code == 1 and report["counts"]["errors"] == 0
    rescored = {row["id"] for row in report["rows"] if row["candidate"].get("rescore") is not None}
    assert rescored  # the re-score is part of this run

    copies = Counter(json.dumps(r.body, sort_keys=True) for r in openai_server.requests)
    repeated = [r for r in openai_server.requests if copies[json.dumps(r.body, sort_keys=True)] > 1]
    # Only the deliberate fresh re-scores repeat a body: one extra groundedness call each.
    assert {r.kind for r in repeated} == {"groundedness"}
    assert len(repeated) == 2 * len(rescored)
    assert all(copies[json.dumps(r.body, sort_keys=True)] == 2 for r in repeated)


@pytest.mark.parametrize("retry_after, headers", [(True, True), (True, False), (False, False)],
                         ids=["x-ratelimit-headers", "retry-after-only", "bare-429"])
def test_a_rate_limited_provider_gives_the_same_verdicts_as_an_unlimited_one(
        openai_server: FakeOpenAI, tmp_path: Path, retry_after: bool, headers: bool) -> None:
    (tmp_path / "free").mkdir()
    free_code, free = run_gate(write_inputs(tmp_path / "free", 30), tmp_path / "free" / "out")
    openai_server.clear()

    openai_server.rate_limit(rate=40, burst=10, retry_after=retry_after, headers=headers)
    (tmp_path / "limited").mkdir()
    code, limited = run_gate(write_inputs(tmp_path / "limited", 30), tmp_path / "limited" / "out")

    requests = len(openai_server.requests) - openai_server.rate_limited
    if headers:  # paced from x-ratelimit-remaining-*: the bucket is rarely (if ever) hit
        assert openai_server.rate_limited <= requests // 10
    else:  # the bucket really refused some, and the limit came down
        assert openai_server.rate_limited > 0
        assert limited["scheduling"]["lowest_concurrency"] < 8
    assert code == free_code == 1
    assert verdicts(limited) == verdicts(free) and limited["counts"] == free["counts"]
    assert limited["scheduling"]["rate_limited"] == openai_server.rate_limited
