"""What a pull request changes and what would land, read from a real repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flipgate.errors import InputError
from flipgate.git.repository import Git
from flipgate.run.landing import land
from flipgate.run.refs import Repo
from flipgate.settings import Settings

from support.gitrepo import GitRepo


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"prompts/a.prompty": "v1\n", "README.md": "r\n"}, message="cut")
    repo.branch("cut", "HEAD")
    return repo


def refs(repo: GitRepo, base: str, head: str):
    read = Repo(repo.path, Git(Settings.from_environ(os.environ).git_environment()))
    return read, read.ref(base), read.ref(head)


def test_a_head_already_in_the_base_changes_nothing(repo: GitRepo) -> None:
    repo.commit({"prompts/a.prompty": "v2\n"}, message="main moves on")
    read, base, head = refs(repo, "main", "cut")
    landing = land(read, base, head)
    assert landing.changed == [] and landing.candidate == base and landing.merge_base == head.sha


def test_a_base_that_has_not_moved_lands_the_head_itself(repo: GitRepo) -> None:
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit({"prompts/a.prompty": "v2\n"})
    read, base, head = refs(repo, "cut", "feature")
    landing = land(read, base, head)
    assert landing.candidate == head and not landing.merged
    assert landing.changed == ["prompts/a.prompty"]


def test_the_merge_holds_both_changes_and_names_the_conflicts(repo: GitRepo) -> None:
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit({"prompts/a.prompty": "v2\n", "README.md": "theirs\n"})
    repo.checkout("main")
    repo.commit({"notes.txt": "main's\n", "README.md": "ours\n"})
    read, base, head = refs(repo, "main", "feature")
    landing = land(read, base, head)
    assert landing.merged and landing.changed == ["README.md", "prompts/a.prompty"]
    assert landing.conflicts == ("README.md",)
    assert read.read(landing.candidate, "prompts/a.prompty") == b"v2\n"
    assert read.read(landing.candidate, "notes.txt") == b"main's\n"
    assert repo.git("rev-parse", "main") == base.sha  # no ref moved
    assert repo.git("status", "--porcelain") == ""    # nothing checked out


def test_unrelated_histories_are_bad_input_naming_both(repo: GitRepo) -> None:
    repo.git("checkout", "-q", "--orphan", "stranger")
    repo.commit({"other.txt": "x\n"})
    read, base, head = refs(repo, "main", "stranger")
    with pytest.raises(InputError, match="has no common ancestor with the base main@"):
        land(read, base, head)
