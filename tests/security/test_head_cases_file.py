"""Attacks from the head's cases file. The base's cases are replayed; the head's are parsed
only to describe the change, so nothing in them may stop `flipgate run`: a file that
cannot be read or parsed is "changed, not parsed", and the run's own verdict stands.

Real git in a temp repository, the real CLI and openai client against the loopback
server, the offline judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI
from support.prompts import ANSWER_FROM_CONTEXT

CASES = [{"id": f"c{i}", "query": f"What is the fee for item {i}?",
          "context": f"The fee for item {i} is ${i}.", "category": "pricing"} for i in range(3)]
CASES_TEXT = "".join(json.dumps(c) + "\n" for c in CASES)
CONFIG = """version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: offline
"""
PROMPT = ANSWER_FROM_CONTEXT
HEAD_PROMPT = PROMPT.replace("gpt-4o-mini", "gpt-4.1")

# One hostile line appended to the base's (valid) cases.
HOSTILE_LINES = {
    "nested_arrays": "[" * 200_000 + "]" * 200_000,
    "nested_objects": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "number_of_5000_digits": '{"id": "x", "query": "q", "context": "c", "n": ' + "9" * 5000 + "}",
    "lone_surrogate_id": '{"id": "\\ud800", "query": "q", "context": "c"}',
    "control_characters_in_id": json.dumps({"id": "a\x1b[31m\u202e\u0000b", "query": "q", "context": "c"}),
    "megabyte_id": json.dumps({"id": "x" * 1_000_000, "query": "q", "context": "c"}),
    "not_an_object": "[1, 2, 3]",
    "nan_field": '{"id": "n", "query": "q", "context": "c", "weight": NaN}',
}


@pytest.fixture
def repo(tmp_path: Path, openai_server: FakeOpenAI) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG, "eval/cases.jsonl": CASES_TEXT,
                 "prompts/answer.prompty": PROMPT}, message="base")
    repo.branch("base", "HEAD")
    return repo


def run(repo: GitRepo, tmp_path: Path) -> tuple[int, str, dict | None]:
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--out", str(tmp_path / "out"), "--no-cache"])
    path = tmp_path / "out" / "report.json"
    report = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    return result.exit_code, result.output, report


def frozen_rows(report: dict) -> list[tuple[str, str]]:
    return [(row["id"], row["verdict"]) for row in report["rows"]]


@pytest.mark.parametrize("name", sorted(HOSTILE_LINES))
def test_one_hostile_line_in_the_heads_cases_does_not_stop_the_run(
        repo: GitRepo, tmp_path: Path, name: str) -> None:
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT,
                 "eval/cases.jsonl": CASES_TEXT + HOSTILE_LINES[name] + "\n"})

    code, output, report = run(repo, tmp_path)

    assert code == 0, output
    assert report is not None
    assert [row_id for row_id, _ in frozen_rows(report)] == ["c0", "c1", "c2"]  # the base's cases
    described = report["change"]["cases_diff"]
    assert described
    assert len(described) < 2_000          # a description, never the hostile line itself
    assert "\x1b" not in described and "\x00" not in described
    (tmp_path / "out" / "comment.md").read_text(encoding="utf-8")  # written, valid UTF-8


def test_undecodable_bytes_in_the_heads_cases_are_changed_not_parsed(
        repo: GitRepo, tmp_path: Path) -> None:
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT,
                 "eval/cases.jsonl": CASES_TEXT.encode() + b'{"id": "\xff\xfe"}\n'})

    code, output, report = run(repo, tmp_path)

    assert code == 0, output
    assert "not parsed" in report["change"]["cases_diff"]


def test_heads_cases_file_replaced_by_a_symlink_is_changed_not_parsed(
        repo: GitRepo, tmp_path: Path) -> None:
    target = repo.path / "eval" / "cases.jsonl"
    target.unlink()
    target.symlink_to("/etc/passwd")
    repo.git("add", "eval/cases.jsonl")
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})

    code, output, report = run(repo, tmp_path)

    assert code == 0, output
    assert "not parsed" in report["change"]["cases_diff"]
    assert "root:" not in json.dumps(report)


def test_heads_cases_file_replaced_by_a_directory_is_changed_not_parsed(
        repo: GitRepo, tmp_path: Path) -> None:
    repo.commit({"eval/cases.jsonl": None})
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT, "eval/cases.jsonl/inner.jsonl": CASES_TEXT})

    code, output, report = run(repo, tmp_path)

    assert code == 0, output
    assert "not parsed" in report["change"]["cases_diff"]


def test_a_hostile_head_line_does_not_hide_the_prs_own_regression(
        repo: GitRepo, tmp_path: Path, openai_server: FakeOpenAI) -> None:
    """The attack's point: crash the run so the PR's own failure is never reported."""
    def generation(body: dict) -> str:
        user = body["messages"][-1]["content"]
        context = user.split("\nContext: ", 1)[1]
        if body["model"] == "gpt-4o-mini":
            return context
        return context + " A $30 surcharge also applies on weekends."

    openai_server.on_generation(generation)
    repo.commit({".flipgate.yml": CONFIG + "gate:\n  blocking_categories: [pricing]\n  strict: true\n"})
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT,
                 "eval/cases.jsonl": CASES_TEXT + HOSTILE_LINES["nested_arrays"] + "\n"})

    code, output, report = run(repo, tmp_path)

    assert code == 1, output
    assert report["conclusion"] == "failure"
