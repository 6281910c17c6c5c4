"""`flipgate run --worktree` reads the working tree through a snapshot commit: real git, a
temporary index, and nothing of the user's repository changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flipgate.git.repository import (
    Git,
    changed_paths,
    head_commit,
    read,
    snapshot_worktree,
    uncommitted_paths,
)
from flipgate.settings import Settings

from support.gitrepo import GitRepo

# The environment git runs in, built at the edge as the commands build it (the snapshot's
# temporary index is added to it, never to the process's own).
GIT = Git(Settings.from_environ(os.environ).git_environment())


def dirty_repo(tmp_path: Path) -> tuple[GitRepo, str]:
    repo = GitRepo.create(tmp_path / "pharmacy")
    head = repo.commit({".gitignore": "flipgate-out/\n", "prompts/answer.prompty": "v1\n",
                        "README.md": "hi\n", "old.txt": "bye\n"})
    (repo.path / "prompts/answer.prompty").write_text("v2, not committed\n")   # edited
    (repo.path / "prompts/tone.md").write_text("new, not added\n")             # untracked
    (repo.path / "README.md").write_text("staged\n")
    repo.git("add", "README.md")                                               # staged
    (repo.path / "old.txt").unlink()                                           # deleted
    (repo.path / "flipgate-out").mkdir()
    (repo.path / "flipgate-out/report.json").write_text("{}")                  # ignored
    return repo, head


def test_the_snapshot_holds_every_edit_and_changes_nothing_of_the_repository(tmp_path: Path) -> None:
    repo, head = dirty_repo(tmp_path)
    status_before = repo.git("status", "--porcelain")
    index_before = (repo.path / ".git/index").read_bytes()

    snapshot = snapshot_worktree(repo.path, git=GIT)

    assert read(repo.path, snapshot, "prompts/answer.prompty") == b"v2, not committed\n"
    assert read(repo.path, snapshot, "prompts/tone.md") == b"new, not added\n"
    assert read(repo.path, snapshot, "README.md") == b"staged\n"
    assert read(repo.path, snapshot, "old.txt") is None
    assert read(repo.path, snapshot, "flipgate-out/report.json") is None  # .gitignore holds
    assert changed_paths(repo.path, head, snapshot) == [
        "README.md", "old.txt", "prompts/answer.prompty", "prompts/tone.md"]
    assert repo.git("rev-parse", f"{snapshot}^") == head                 # on top of HEAD
    # The user's index, HEAD, branches and status are as they were; no ref names the snapshot.
    assert (repo.path / ".git/index").read_bytes() == index_before
    assert repo.git("status", "--porcelain") == status_before
    assert head_commit(repo.path) == head and repo.git("rev-parse", "main") == head
    assert snapshot not in repo.git("for-each-ref", "--format=%(objectname)")
    # The same files make the same snapshot.
    assert snapshot_worktree(repo.path, git=GIT) == snapshot


def test_uncommitted_paths_are_what_git_status_lists_and_write_nothing(tmp_path: Path) -> None:
    repo, _ = dirty_repo(tmp_path)
    assert uncommitted_paths(repo.path) == [
        "README.md", "old.txt", "prompts/answer.prompty", "prompts/tone.md"]


def test_a_repository_without_commits_snapshots_without_a_parent(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "new")
    (repo.path / "a.txt").write_text("a\n")
    snapshot = snapshot_worktree(repo.path, git=GIT)
    assert read(repo.path, snapshot, "a.txt") == b"a\n"
    assert head_commit(repo.path) is None


def test_a_git_without_an_environment_from_the_edge_cannot_take_a_temporary_index(
        tmp_path: Path) -> None:
    repo, _ = dirty_repo(tmp_path)
    with pytest.raises(TypeError, match="settings.git_environment"):
        snapshot_worktree(repo.path, git=Git())
