"""`--shard i/n` then `flipgate merge`: the verdicts, counts and exit code of one run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.run.shards import Shard

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI
from support.reports import comment_without_per_job, comparable

CONFIG = """version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
gate:
  blocking_categories: [pricing]
  strict: true  # a handful of cases: the same judge's re-score may block
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
          "category": ("pricing", "policy", "general")[i % 3]} for i in range(24)]


def generation(body: dict) -> str:
    """Grounded answers; the generous head prompt invents a fee for every fourth case."""
    context = body["messages"][-1]["content"].split("Context: ", 1)[1]
    number = int(context.split()[1])
    if "generously" in body["messages"][0]["content"] and number % 4 == 0:
        return context + " A 75 dollar handling fee applies."
    return context


@pytest.fixture
def repo(tmp_path: Path, openai_server: FakeOpenAI) -> GitRepo:
    openai_server.on_generation(generation)
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG, "prompts/answer.prompty": PROMPT,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)}, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.replace("questions.", "questions generously.")})
    return repo


def run(repo: GitRepo, out: Path, *extra: str):
    return CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                    "--out", str(out), "--no-cache", *extra])


def rows(report: dict) -> dict[str, tuple[str, bool]]:
    return {row["id"]: (row["verdict"], row["blocking"]) for row in report["rows"]}


def test_the_shards_cover_every_case_once() -> None:
    ids = [case["id"] for case in CASES]
    owners = [[i for i in range(1, 5) if Shard(i, 4).holds(case_id)] for case_id in ids]
    assert all(len(owner) == 1 for owner in owners)
    assert len({owner[0] for owner in owners}) == 4  # every shard gets work here


def test_four_shards_merge_into_the_unsharded_run(repo: GitRepo, tmp_path: Path) -> None:
    whole = run(repo, tmp_path / "whole")
    assert whole.exit_code == 1, whole.output
    expected = json.loads((tmp_path / "whole" / "report.json").read_text())

    partials = []
    for i in range(1, 5):
        shard = run(repo, tmp_path / f"shard-{i}", "--shard", f"{i}/4")
        assert shard.exit_code == 0, shard.output  # a shard that finished; the merge decides
        assert not (tmp_path / f"shard-{i}" / "report.json").exists()
        partials.append(str(tmp_path / f"shard-{i}" / "partial.json"))

    merged = CliRunner().invoke(cli, ["merge", *reversed(partials), "--out", str(tmp_path / "merged")])
    assert merged.exit_code == whole.exit_code, merged.output
    folders = [str(Path(p).parent) for p in partials]  # the contract: partial files or their folders
    by_folder = CliRunner().invoke(cli, ["merge", *folders, "--out", str(tmp_path / "by-folder")])
    assert by_folder.exit_code == whole.exit_code, by_folder.output
    assert (tmp_path / "by-folder" / "report.json").read_text() == (tmp_path / "merged" / "report.json").read_text()
    report = json.loads((tmp_path / "merged" / "report.json").read_text())
    assert [row["id"] for row in report["rows"]] == [row["id"] for row in expected["rows"]]
    assert rows(report) == rows(expected)
    assert report["counts"] == expected["counts"] and report["conclusion"] == expected["conclusion"]
    assert report["head_sha"] == expected["head_sha"]
    # The whole report, but what each job measures of itself (an LLM judge: budget, scheduling).
    assert comparable(report, shards=4) == comparable(expected)
    assert report["budget"]["max_tokens"] == expected["budget"]["max_tokens"]
    assert report["budget"]["spent_requests"] > expected["budget"]["spent_requests"]  # a probe a job
    assert report["scheduling"]["max_concurrency"] == expected["scheduling"]["max_concurrency"]
    # The merged run blocks, so fluency was skipped over all its tied rows, said once, as the
    # whole run says it (a shard that did not block asked fluency for its own ties).
    assert report["fluency"] == expected["fluency"] and expected["fluency"]["skipped"] > 0
    said = [[n for n in r["notes"] if n.startswith("Fluency was not asked")] for r in (report, expected)]
    assert said[0] == said[1] and len(said[0]) == 1
    comment = (tmp_path / "merged" / "comment.md").read_text()
    assert "case-4" in comment and "Merged from 4 shards." in comment


def test_merge_refuses_a_partial_of_another_head(repo: GitRepo, tmp_path: Path) -> None:
    for i in (1, 2):
        assert run(repo, tmp_path / f"shard-{i}", "--shard", f"{i}/2").exit_code == 0
    repo.commit({"README.md": "a later push\n"})
    assert run(repo, tmp_path / "late", "--shard", "2/2").exit_code == 0

    # The contract's shard block: index, count and one fingerprint string the shards of a run share.
    shard_blocks = [json.loads((tmp_path / d / "partial.json").read_text())["shard"]
                    for d in ("shard-1", "shard-2", "late")]
    assert [(b["index"], b["count"]) for b in shard_blocks] == [(1, 2), (2, 2), (2, 2)]
    assert all(isinstance(b["fingerprint"], str) and len(b["fingerprint"]) == 64 for b in shard_blocks)
    assert shard_blocks[0]["fingerprint"] == shard_blocks[1]["fingerprint"] != shard_blocks[2]["fingerprint"]

    merged = CliRunner().invoke(cli, ["merge", str(tmp_path / "shard-1" / "partial.json"),
                                      str(tmp_path / "late" / "partial.json"), "--out", str(tmp_path / "m")])
    assert merged.exit_code == 2
    assert "different head sha" in merged.output and "cannot be merged" in merged.output
    assert not (tmp_path / "m" / "report.json").exists()

    missing = CliRunner().invoke(cli, ["merge", str(tmp_path / "shard-1" / "partial.json")])
    assert missing.exit_code == 2 and "missing the partial of shard 2/2" in missing.output


@pytest.mark.parametrize("text", ["0/4", "5/4", "1", "a/b", "1/0"])
def test_a_bad_shard_is_bad_input(repo: GitRepo, tmp_path: Path, text: str) -> None:
    result = run(repo, tmp_path / "out", "--shard", text)
    assert result.exit_code == 2 and "--shard must be i/n" in result.output


def gate_args(directory: Path, candidate: str, out: Path) -> list[str]:
    return ["gate", "--cases", str(directory / "cases.jsonl"), "--baseline", str(directory / "b.jsonl"),
            "--candidate", str(directory / candidate), "--config", str(directory / "flipgate.yml"),
            "--out", str(out), "--no-cache"]


def test_gate_shards_merge_too_and_refuse_other_answers(openai_server: FakeOpenAI, tmp_path: Path) -> None:
    with (tmp_path / "cases.jsonl").open("w") as cases, (tmp_path / "b.jsonl").open("w") as base, \
            (tmp_path / "c.jsonl").open("w") as cand, (tmp_path / "d.jsonl").open("w") as other:
        for case in CASES:
            cases.write(json.dumps(case) + "\n")
            base.write(json.dumps({"id": case["id"], "response": case["context"]}) + "\n")
            number = int(case["context"].split()[1])
            invented = case["context"] + (" A 75 dollar fee applies." if number % 4 == 0 else "")
            cand.write(json.dumps({"id": case["id"], "response": invented}) + "\n")
            other.write(json.dumps({"id": case["id"], "response": case["context"]}) + "\n")
    (tmp_path / "flipgate.yml").write_text(CONFIG.replace("generator: prompts/answer.prompty\n", "")
                                           .replace("eval/cases.jsonl", "cases.jsonl"))
    whole = CliRunner().invoke(cli, gate_args(tmp_path, "c.jsonl", tmp_path / "whole"))
    expected = json.loads((tmp_path / "whole" / "report.json").read_text())
    for i in range(1, 4):
        shard = CliRunner().invoke(cli, [*gate_args(tmp_path, "c.jsonl", tmp_path / f"s{i}"), "--shard", f"{i}/3"])
        assert shard.exit_code == 0, shard.output
    partials = [str(tmp_path / f"s{i}" / "partial.json") for i in range(1, 4)]
    merged = CliRunner().invoke(cli, ["merge", *partials, "--out", str(tmp_path / "merged")])
    assert merged.exit_code == whole.exit_code == 1
    report = json.loads((tmp_path / "merged" / "report.json").read_text())
    assert rows(report) == rows(expected) and report["counts"] == expected["counts"]

    CliRunner().invoke(cli, [*gate_args(tmp_path, "d.jsonl", tmp_path / "other"), "--shard", "3/3"])
    refused = CliRunner().invoke(cli, ["merge", *partials[:2], str(tmp_path / "other" / "partial.json")])
    assert refused.exit_code == 2 and "different candidate" in refused.output


def test_judge_errors_on_rows_are_a_result_the_merge_reports_as_exit_3(repo: GitRepo, tmp_path: Path,
                                                                       openai_server: FakeOpenAI) -> None:
    # 422: refused, sent once, and not one of the statuses that stop the run (400/401/403/404
    # stop it at once since i10), so each row gets a judge error.
    openai_server.fail("relevance", status=422, times=10_000)
    whole = run(repo, tmp_path / "whole")
    assert whole.exit_code == 3
    for i in (1, 2):
        assert run(repo, tmp_path / f"s{i}", "--shard", f"{i}/2").exit_code == 0
    merged = CliRunner().invoke(cli, ["merge", str(tmp_path / "s1" / "partial.json"),
                                      str(tmp_path / "s2" / "partial.json"), "--out", str(tmp_path / "m")])
    assert merged.exit_code == 3
    report = json.loads((tmp_path / "m" / "report.json").read_text())
    expected = json.loads((tmp_path / "whole" / "report.json").read_text())
    assert report["counts"] == expected["counts"] and report["conclusion"] == "error"


def test_a_merged_run_of_a_generator_change_comments_as_the_unsharded_run(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    """Parameters written as whole numbers and fractions (temperature 0 -> 0.5, max_tokens):
    the merged comment.md is the unsharded one but for the merge note and usage."""
    openai_server.on_generation(generation)
    repo = GitRepo.create(tmp_path / "repo")
    base_prompt = PROMPT.replace("    model: gpt-4o-mini\n",
                                 "    model: gpt-4o-mini\n  parameters:\n    temperature: 0\n"
                                 "    max_tokens: 300\n")
    repo.commit({".flipgate.yml": CONFIG, "prompts/answer.prompty": base_prompt,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)}, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": base_prompt.replace("questions.", "questions generously.")
                 .replace("temperature: 0\n", "temperature: 0.5\n")})
    whole = run(repo, tmp_path / "whole")
    for i in (1, 2):
        assert run(repo, tmp_path / f"s{i}", "--shard", f"{i}/2").exit_code == 0
    merged = CliRunner().invoke(cli, ["merge", str(tmp_path / "s1"), str(tmp_path / "s2"),
                                      "--out", str(tmp_path / "merged")])
    assert merged.exit_code == whole.exit_code == 1, merged.output
    unsharded = (tmp_path / "whole" / "comment.md").read_text()
    comment = (tmp_path / "merged" / "comment.md").read_text()
    assert "temperature" in unsharded and "0.5" in unsharded
    assert comment_without_per_job(comment, shards=2) == comment_without_per_job(unsharded, shards=1)


def test_shards_ask_what_the_whole_run_asks(openai_server: FakeOpenAI, tmp_path: Path) -> None:
    """200 cases of one blocking category (200 >= 50: the whole run blocks, so it asks no
    fluency); a shard's ~50 would be below the minimum if it sized the category by its part,
    and it would then ask fluency for every tie."""
    config = ("version: 1\ncases: cases.jsonl\njudge:\n  provider: openai\n  model: judge-pinned\n"
              "gate:\n  blocking_categories: [pricing]\n")
    (tmp_path / "flipgate.yml").write_text(config)
    with (tmp_path / "cases.jsonl").open("w") as cases, (tmp_path / "b.jsonl").open("w") as base, \
            (tmp_path / "c.jsonl").open("w") as cand:
        for i in range(200):
            context = f"Card {i}: a replacement costs {i % 20 + 1} dollars and arrives in 5 days."
            cases.write(json.dumps({"id": f"case-{i}", "query": f"How much is card {i}?",
                                    "context": context, "category": "pricing"}) + "\n")
            base.write(json.dumps({"id": f"case-{i}", "response": context}) + "\n")
            extra = " There is also a 9 dollar courier fee." if i % 10 == 0 else ""
            cand.write(json.dumps({"id": f"case-{i}", "response": context + extra}) + "\n")
    whole = CliRunner().invoke(cli, gate_args(tmp_path, "c.jsonl", tmp_path / "whole"))
    assert whole.exit_code == 1, whole.output
    unsharded = len(openai_server.requests)
    assert not openai_server.chat_requests("fluency")  # the whole run blocks: no fluency

    openai_server.clear()
    for i in range(1, 5):
        shard = CliRunner().invoke(cli, [*gate_args(tmp_path, "c.jsonl", tmp_path / f"s{i}"),
                                         "--shard", f"{i}/4"])
        assert shard.exit_code == 0, shard.output
    sharded = len(openai_server.requests)
    assert not openai_server.chat_requests("fluency")
    # Each job probes the judge once (a chat and an embeddings request): 6 more in all.
    assert abs(sharded - unsharded) <= 0.02 * unsharded, (sharded, unsharded)

    partials = [str(tmp_path / f"s{i}" / "partial.json") for i in range(1, 5)]
    merged = CliRunner().invoke(cli, ["merge", *partials, "--out", str(tmp_path / "merged")])
    assert merged.exit_code == 1, merged.output
    report = json.loads((tmp_path / "merged" / "report.json").read_text())
    expected = json.loads((tmp_path / "whole" / "report.json").read_text())
    assert rows(report) == rows(expected) and report["counts"] == expected["counts"]
    assert report["counts"]["blocking_regressions"] == 20 and report["fluency"] == expected["fluency"]


def test_a_shard_a_rate_limit_stops_keeps_its_finished_rows_through_the_merge(
        tmp_path: Path, openai_server: FakeOpenAI) -> None:
    """Shard 2 runs out of requests part way through judging: its finished rows and shard 1's
    are merged as scored, its unfinished rows are named not run, and the merge exits 3."""
    openai_server.on_generation(generation)
    repo = GitRepo.create(tmp_path / "repo")
    config = CONFIG.replace("  model: judge-pinned\n", "  model: judge-pinned\n  max_wait: 2\n")
    repo.commit({".flipgate.yml": config + "concurrency: 1\n", "prompts/answer.prompty": PROMPT,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)}, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.replace("questions.", "questions generously.")})
    first = run(repo, tmp_path / "s1", "--shard", "1/2")
    assert first.exit_code == 0, first.output
    # Two probes and both sides' 24 answers, then the limit is spent a few judge requests in.
    openai_server.rate_limit(rate=0.0001, burst=2 + 24 + 16, retry_after=False)
    second = run(repo, tmp_path / "s2", "--shard", "2/2")
    assert second.exit_code == 3, second.output
    merged = CliRunner().invoke(cli, ["merge", str(tmp_path / "s1" / "partial.json"),
                                      str(tmp_path / "s2" / "partial.json"), "--out", str(tmp_path / "m")])
    assert merged.exit_code == 3, merged.output
    report = json.loads((tmp_path / "m" / "report.json").read_text())
    assert report["conclusion"] == "error" and report["counts"]["cases"] == len(CASES)
    verdicts = {row["id"]: row["verdict"] for row in report["rows"]}
    assert sorted(verdicts) == sorted(case["id"] for case in CASES)   # every case, once
    shard_two = {case["id"] for case in CASES if Shard(2, 2).holds(case["id"])}
    not_run = {case for case, verdict in verdicts.items() if verdict == "not_run"}
    assert not_run and not_run <= shard_two and not_run != shard_two, (verdicts, second.output)
    assert report["counts"]["not_run"] == len(not_run)
    assert "not run" in (tmp_path / "m" / "comment.md").read_text()


def test_a_sharded_run_of_a_change_nothing_reads_is_skipped_and_merges_skipped(
        repo: GitRepo, tmp_path: Path, openai_server: FakeOpenAI) -> None:
    repo.commit({"README.md": "# docs only\n"})
    repo.branch("base", "HEAD")
    repo.commit({"NOTES.md": "nothing the generator reads\n"})
    for i in (1, 2):
        result = run(repo, tmp_path / f"s{i}", "--shard", f"{i}/2")
        assert result.exit_code == 0, result.output
    merged = CliRunner().invoke(cli, ["merge", str(tmp_path / "s1" / "partial.json"),
                                      str(tmp_path / "s2" / "partial.json"), "--out", str(tmp_path / "m")])
    assert merged.exit_code == 0, merged.output
    report = json.loads((tmp_path / "m" / "report.json").read_text())
    assert report["conclusion"] == "skipped" and report["rows"] == []
    assert openai_server.requests == []
