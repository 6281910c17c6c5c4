"""`flipgate init` writes only inside the repository: a committed directory symlink
(`.github -> /elsewhere`, `eval -> /elsewhere`) or `..` in a path option is refused,
exit 2, naming the target, and nothing is written anywhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.gitrepo import GitRepo

PROMPT = """---
model:
  configuration: {type: openai, model: gpt-4o-mini}
sample:
  query: How long do I have to ask for a refund?
  context: Refunds are accepted within 30 days of purchase.
---
user:
{{ query }}
Context: {{ context }}
"""
WRITTEN = (".flipgate.yml", "eval/cases.jsonl", ".github/workflows/flipgate.yml")


def _repo_with_link(tmp_path: Path, link: str, target: str) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.write({"prompts/answer.prompty": PROMPT})
    os.symlink(target, repo.path / link)
    repo.git("add", "--", link)
    repo.git("commit", "-q", "-m", "the app, with a committed symlink")
    return repo


def _init(repo: GitRepo, *args: str):
    return CliRunner().invoke(cli, ["init", "--repo", str(repo.path), *args])


def _everything(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*"))


@pytest.mark.parametrize(("link", "named"), [
    (".github", ".github/workflows/flipgate.yml"),
    ("eval", "eval/cases.jsonl"),
])
def test_a_committed_directory_symlink_out_of_the_repository_is_refused(
        tmp_path: Path, link: str, named: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    repo = _repo_with_link(tmp_path, link, str(elsewhere))
    result = _init(repo)
    assert result.exit_code == 2, result.output
    assert named in result.stderr and "outside the repository" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert _everything(elsewhere) == []
    assert not any((repo.path / name).exists() for name in WRITTEN if not name.startswith(link))


def test_a_relative_symlink_that_climbs_out_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    repo = _repo_with_link(tmp_path, "eval", "../elsewhere")
    result = _init(repo)
    assert result.exit_code == 2 and "eval/cases.jsonl" in result.stderr
    assert _everything(tmp_path / "elsewhere") == []
    assert not (repo.path / ".flipgate.yml").exists()


def test_a_dangling_symlink_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    repo = _repo_with_link(tmp_path, ".github", str(tmp_path / "not-yet"))
    result = _init(repo)
    assert result.exit_code == 2 and ".github/workflows/flipgate.yml" in result.stderr
    assert not (tmp_path / "not-yet").exists() and not (repo.path / ".flipgate.yml").exists()


def test_a_path_option_that_climbs_through_a_symlink_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    repo = _repo_with_link(tmp_path, "docs", str(elsewhere))
    result = _init(repo, "--cases", "docs/cases.jsonl")
    assert result.exit_code == 2 and "docs/cases.jsonl" in result.stderr
    assert _everything(elsewhere) == []


@pytest.mark.parametrize("flag", ["--cases", "--config", "--workflow"])
def test_dot_dot_in_a_path_option_is_refused(tmp_path: Path, flag: str) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"prompts/answer.prompty": PROMPT})
    result = _init(repo, flag, "eval/../../outside.yml")
    assert result.exit_code == 2 and "leaves the repository" in result.stderr
    assert not (tmp_path / "outside.yml").exists() and not (repo.path / ".flipgate.yml").exists()


def test_control_a_symlink_to_a_directory_inside_the_repository_is_written_through(
        tmp_path: Path) -> None:
    repo = _repo_with_link(tmp_path, "eval", "suites/main")
    (repo.path / "suites" / "main").mkdir(parents=True)
    result = _init(repo)
    assert result.exit_code == 0, result.output
    assert (repo.path / "suites" / "main" / "cases.jsonl").is_file()
    assert all((repo.path / name).is_file() for name in WRITTEN)


def test_control_a_plain_repository_gets_all_three_files(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"prompts/answer.prompty": PROMPT})
    result = _init(repo)
    assert result.exit_code == 0, result.output
    assert all((repo.path / name).is_file() for name in WRITTEN)
