"""What a case costs in requests on GitHub Models, counted on the loopback server standing in
for it (`base_url` in the base's configuration), and its 429s going through the run's pacing.
docs/rate-limits.md ("GitHub Models: requests a case costs") quotes these counts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

CASES = 6
CONFIG = """version: 1
cases: eval/cases.jsonl
generator:
  path: prompts/answer.prompty
  endpoint: {{provider: github, base_url: {url}}}
judge:
  provider: github
  model: openai/gpt-4.1-mini
  base_url: {url}
gate:
  blocking_categories: [policy]
  strict: true
relevance:
  embedding_model: openai/text-embedding-3-small
"""
PROMPT = """---
model:
  configuration: {{type: openai, model: openai/gpt-4o-mini}}
---
system:
{system}
user:
{{{{ query }}}}
Context: {{{{ context }}}}
"""


def generation(body: dict) -> str:
    context = body["messages"][-1]["content"].split("Context: ", 1)[1]
    if "generous" in body["messages"][0]["content"] and "case-0" in body["messages"][-1]["content"]:
        return "Refunds take 90 days, and a $15 fee applies."   # the one flip
    # Each side words its answer its own way (identical answers would be judged once).
    return context + (" That is our policy." if "Answer only" not in body["messages"][0]["content"] else "")


def run_case_costs(tmp_path: Path, server: FakeOpenAI, system: str,
                   said: list[str] | None = None) -> tuple[int, dict, Counter]:
    server.on_generation(generation)
    repo = GitRepo.create(tmp_path / "repo")
    cases = [{"id": f"case-{i}", "category": "policy", "query": f"case-{i}: how long do refunds take?",
              "context": f"Refunds for order {i} are issued within 30 days."} for i in range(CASES)]
    repo.commit({".flipgate.yml": CONFIG.format(url=server.base_url),
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in cases),
                 "prompts/answer.prompty": PROMPT.format(system="Answer only from the context.")})
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.format(system=system)})
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                      "--out", str(tmp_path / "out"), "--no-cache"])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    if said is not None:
        said.append(result.output)
    return result.exit_code, report, Counter(r.kind for r in server.requests)


@pytest.fixture
def models(openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_token")
    return openai_server


def test_an_unchanged_case_costs_eight_chat_requests_and_the_run_three_more(
        models: FakeOpenAI, tmp_path: Path) -> None:
    code, report, kinds = run_case_costs(tmp_path, models, "Answer from the context, briefly.")
    assert code == 0 and {row["verdict"] for row in report["rows"]} == {"unchanged"}
    # A case: its two answers, each scored for groundedness, asked for relevance's
    # questions, and (a tie on a run that does not block) for fluency.
    assert kinds == Counter({"generation": 2 * CASES, "groundedness": 2 * CASES,
                             "relevance": 2 * CASES, "fluency": 2 * CASES,
                             # the run's: a probe of the judge and of the embeddings model,
                             # then one batch of every text to embed
                             "probe": 1, "embeddings": 2})


def test_a_flipped_case_costs_two_more_and_a_429_waits_out_its_retry_after(
        models: FakeOpenAI, tmp_path: Path) -> None:
    # GitHub Models' refusal: 429, a whole-second retry-after, a spent x-ratelimit window.
    models.fail("groundedness", status=429, retry_after=1,
                headers={"x-ratelimit-remaining-requests": "0", "x-ratelimit-limit-requests": "15"})
    code, report, kinds = run_case_costs(tmp_path, models, "Be generous.")
    assert code == 1, report["counts"]
    assert [row["id"] for row in report["rows"] if row["verdict"] == "regression"] == ["case-0"]
    assert report["scheduling"]["rate_limited"] == 1
    # Tied rows' fluency is not asked on a run that blocks; the flip adds a second scoring
    # of its new answer and the statements; the refused request was sent once more.
    assert kinds == Counter({"generation": 2 * CASES, "groundedness": 2 * CASES + 1 + 1,
                             "relevance": 2 * CASES, "statements": 1, "probe": 1, "embeddings": 2})


def test_the_run_says_before_it_starts_what_it_will_send_each_model_and_the_free_limit(
        models: FakeOpenAI, tmp_path: Path) -> None:
    said: list[str] = []
    code, report, _ = run_case_costs(tmp_path, models, "Answer from the context, briefly.", said)
    assert code == 0, said
    output = " ".join(said[0].split())
    sent = Counter(r.model for r in models.requests)
    # What it announced is what each model then received (a run without a flip).
    assert sent == Counter({"openai/gpt-4o-mini": 2 * CASES, "openai/gpt-4.1-mini": 6 * CASES + 1,
                            "openai/text-embedding-3-small": 2})
    assert (f"GitHub Models: this run sends about {2 * CASES} requests to openai/gpt-4o-mini "
            f"({2 * CASES} generations); the free plan allows 150 a day and 15 a minute (low tier") in output
    assert (f"about {6 * CASES + 1} requests to openai/gpt-4.1-mini ({6 * CASES + 1} judge requests, "
            "a probe included)") in output
    assert "about 2 requests to openai/text-embedding-3-small (embeddings)" in output
    assert "over the free daily limit" not in output
    assert output.index("GitHub Models: this run sends") < output.index("usage:")


def short_wait_repo(models: FakeOpenAI, tmp_path: Path, *, head_system: str,
                    top: str = "") -> GitRepo:
    """A base and a head (its system line `head_system`) whose judge waits out 429s two
    seconds at most; `top`: keys put before the judge's."""
    models.on_generation(generation)
    repo = GitRepo.create(tmp_path / "repo")
    cases = [{"id": f"case-{i}", "category": "policy", "query": f"case-{i}: how long?",
              "context": f"Refunds for order {i} are issued within 30 days."} for i in range(CASES)]
    config = CONFIG.format(url=models.base_url).replace(
        "judge:\n  provider: github\n", f"{top}judge:\n  provider: github\n  max_wait: 2\n")
    repo.commit({".flipgate.yml": config, "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in cases),
                 "prompts/answer.prompty": PROMPT.format(system="Answer only from the context.")})
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.format(system=head_system)})
    return repo


def cached_run(repo: GitRepo, tmp_path: Path) -> tuple[int, str]:
    """`flipgate run` with the cache on: its exit code and what it said, on one line."""
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--out", str(tmp_path / "out"),
                                      "--cache", str(tmp_path / "cache")])
    return result.exit_code, " ".join(result.output.split())


def test_a_run_a_rate_limit_stops_says_when_to_re_run_and_the_re_run_keeps_what_was_paid(
        models: FakeOpenAI, tmp_path: Path) -> None:
    repo = short_wait_repo(models, tmp_path, head_system="Answer briefly.")
    models.rate_limit(rate=0.0001, burst=7, headers=False)   # a day's quota, spent seven requests in

    code, said = cached_run(repo, tmp_path)
    assert code == 3, said
    # The 429 said Retry-After: 10000 (the bucket's refill): the advice names that time.
    assert "Re-run after " in said and " UTC, in about 2 h 47 min, when the provider's rate-limit headers" in said
    assert ("(GitHub Models' free limits are a day's: docs/rate-limits.md); every reply this run "
            "received is in the cache, so a re-run asks only for the rest.") in said
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "in about 2 h 47 min" in comment and "asks only for the rest" in comment, comment
    # Stopped while generating: no row was scored, so every case is named as not run.
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [row["verdict"] for row in report["rows"]] == ["not_run"] * CASES
    assert report["counts"]["not_run"] == CASES and report["conclusion"] == "error"
    answered = [r for r in models.chat_requests("generation") if r.status == 200]
    assert answered, [(r.kind, r.status) for r in models.requests]

    with models._lock:
        models.bucket = None                     # the next day
    before = len(models.requests)
    code, said = cached_run(repo, tmp_path)
    assert code == 0, said
    again = [r for r in models.requests[before:] if r.kind == "generation"]
    # What was received is not asked again; a reply the server sent while the stop cancelled
    # its request (in flight beside the refused one) never reached the cache, so may be.
    assert 2 * CASES - len(answered) <= len(again) < 2 * CASES


def test_a_rate_limit_mid_scoring_keeps_every_finished_row_and_the_re_run_asks_only_the_rest(
        models: FakeOpenAI, tmp_path: Path) -> None:
    """The limit is spent while judging: the rows already scored are reported as a full run
    reports them (report.json, comment.md, the terminal), the rest as not run, exit 3; the
    re-run after the reset sends only the requests the first run never got answered."""
    repo = short_wait_repo(models, tmp_path, head_system="Be generous.", top="concurrency: 1\n")
    # Two probes and twelve generations, then the limit is spent a few judge requests in,
    # with the reset GitHub Models' headers say (x-ratelimit-remaining 0, no Retry-After).
    models.rate_limit(rate=0.0001, burst=2 + 2 * CASES + 10, retry_after=False)

    code, said = cached_run(repo, tmp_path)
    assert code == 3, said
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["conclusion"] == "error" and len(report["rows"]) == CASES
    verdicts = {row["id"]: row["verdict"] for row in report["rows"]}
    finished = [case for case, verdict in verdicts.items() if verdict != "not_run"]
    not_run = [case for case, verdict in verdicts.items() if verdict == "not_run"]
    assert finished and not_run, verdicts
    assert report["counts"]["not_run"] == len(not_run)
    # A finished row is as a full run has it: case-0 flipped and was confirmed (blocking).
    if "case-0" in finished:
        row = next(row for row in report["rows"] if row["id"] == "case-0")
        assert row["verdict"] == "regression" and row["blocking"] and row["evidence"], row
    assert not {verdicts[c] for c in finished} & {"error"}, verdicts
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert f"flipgate could not finish: {len(not_run)} row{'s' if len(not_run) != 1 else ''} not run" in comment
    assert "Not run: the run stopped before these rows" in comment
    # A row not run is named, never shown as scored nothing or answered nothing.
    not_run_table = comment.split("Not run: the run stopped before these rows", 1)[1].split("</details>")[0]
    assert "no score" not in not_run_table and "(empty)" not in not_run_table
    for case in not_run:
        assert f"`{case}`" in comment or case in comment
    assert f"{len(finished)} of {CASES} rows finished before the stop" in comment
    assert "the cache keeps every reply" in comment or "asks only for the rest" in comment
    # The limit's reset, from x-ratelimit-reset-requests, is when to re-run.
    # When one request is back, from the spent window's x-ratelimit-* headers (a token in
    # 10,000 s), is when to re-run.
    assert "Re-run after " in said and "in about 2 h 47 min" in said, said
    assert "not run" in said
    answered = Counter(r.kind for r in models.requests if r.status == 200)

    with models._lock:
        models.bucket = None                     # the limit has reset
    before = len(models.requests)
    code, said = cached_run(repo, tmp_path)
    assert code == 1, said                       # case-0's flip blocks once every row is scored
    again = Counter(r.kind for r in models.requests[before:])
    # Both runs together sent what one whole run sends (the flip's costs above): nothing
    # received before is asked again. Only the one request in flight when the run stopped
    # (concurrency 1) may have been answered by the server after the stop cancelled it.
    whole = Counter({"generation": 2 * CASES, "groundedness": 2 * CASES + 1,
                     "relevance": 2 * CASES, "statements": 1, "probe": 1, "embeddings": 2})
    assert again and whole <= again + answered, (again, answered)
    assert (again + answered).total() - whole.total() <= 1, (again, answered)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["counts"].get("not_run", 0) == 0
    for case in finished:                        # a finished row's verdict stands
        assert next(r["verdict"] for r in report["rows"] if r["id"] == case) == verdicts[case]
