"""Untrusted templates are parsed only in the isolated child, and sizes are capped before
parsing: a huge head generator, or hundreds of large includes, end fast with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.prompts.sandbox import Limits

from support.gitrepo import GitRepo

CONFIG = "version: 1\ncases: eval/cases.jsonl\ngenerator: prompts/answer.prompty\njudge:\n  provider: offline\n"
PROMPT = "---\nmodel:\n  api: chat\n  configuration:\n    type: openai\n    model: m\n---\nuser:\n{{ query }}\n"
CASE = {"id": "c1", "query": "q", "context": "c"}


def repo_with_head(tmp_path: Path, head_files: dict[str, str]) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG, "eval/cases.jsonl": json.dumps(CASE) + "\n",
                 "prompts/answer.prompty": PROMPT}, message="base")
    repo.branch("base", "HEAD")
    repo.commit(head_files, message="head")
    return repo


def run(repo: GitRepo, tmp_path: Path):
    return CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                    "--out", str(tmp_path / "out"), "--no-cache"])


def test_a_50_mb_head_generator_is_refused_by_its_size_before_parsing(
        openai_server, tmp_path: Path) -> None:
    huge = PROMPT + ("{% if a %}{{ b }}{% endif %}" * 1_800_000)[:50_000_000 - len(PROMPT)]
    result = run(repo_with_head(tmp_path, {"prompts/answer.prompty": huge}), tmp_path)
    assert result.exit_code == 2, result.output
    assert "prompts/answer.prompty@" in result.stderr
    assert "is 50,000,000 bytes; a generator may be at most 512,000 bytes" in result.stderr
    assert openai_server.requests == []


def test_200_includes_of_1_mb_are_refused_in_the_child_before_parsing_them(
        openai_server, tmp_path: Path) -> None:
    includes = {f"prompts/part{i:03}.j2": ("{{ query }} " * 90_000)[:1_000_000] for i in range(200)}
    body = "".join(f"{{% include 'part{i:03}.j2' %}}\n" for i in range(200))
    result = run(repo_with_head(tmp_path, {"prompts/answer.prompty": PROMPT + body, **includes}), tmp_path)
    assert result.exit_code == 2, result.output
    assert "template 'prompts/part" in result.stderr
    assert "is 1,000,000 bytes; more than the 512,000 a template may be" in result.stderr
    assert openai_server.requests == []


def test_includes_within_the_file_cap_are_refused_at_the_total_cap(openai_server, tmp_path: Path) -> None:
    includes = {f"prompts/part{i:03}.j2": ("{{ query }} " * 40_000)[:400_000] for i in range(200)}
    body = "".join(f"{{% include 'part{i:03}.j2' %}}\n" for i in range(200))
    result = run(repo_with_head(tmp_path, {"prompts/answer.prompty": PROMPT + body, **includes}), tmp_path)
    assert result.exit_code == 2, result.output
    total = Limits().max_total_template_bytes
    assert f"the generator and the templates it includes are more than {total:,} bytes together" \
        in result.stderr
    assert openai_server.requests == []
