"""Reading refs from git objects only: real temporary repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from flipgate.errors import InputError, SecurityError
from flipgate.git import repository as gitrefs
from flipgate.git.repository import Git
from flipgate.github import action
from flipgate.settings import Settings

from support.gitrepo import GitRepo


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo.create(tmp_path / "repo")


def test_reads_each_ref_from_objects_not_from_the_work_tree(repo: GitRepo) -> None:
    base = repo.commit({"prompts/a.txt": "base text\n", "README.md": "hi\n"})
    head = repo.commit({"prompts/a.txt": "head text\n"})
    # A dirty work tree must not leak into what a ref reads.
    (repo.path / "prompts" / "a.txt").write_text("uncommitted\n")

    assert gitrefs.read(repo.path, base, "prompts/a.txt") == b"base text\n"
    assert gitrefs.read(repo.path, head, "prompts/a.txt") == b"head text\n"
    assert gitrefs.read(repo.path, head, "README.md") == b"hi\n"
    assert gitrefs.read(repo.path, head, "missing.txt") is None


def test_resolve_names_commits_by_branch_tag_and_prefix(repo: GitRepo) -> None:
    base = repo.commit({"a": "1"})
    repo.git("tag", "v1", base)
    head = repo.commit({"a": "2"})
    assert gitrefs.resolve(repo.path, "main") == head
    assert gitrefs.resolve(repo.path, "v1") == base
    assert gitrefs.resolve(repo.path, base[:10]) == base
    assert gitrefs.resolve(repo.path, "HEAD~1") == base


@pytest.mark.parametrize("ref", ["no-such-branch", "--output=/tmp/x", "", "deadbeef" * 5])
def test_a_ref_that_names_no_commit_is_bad_input(repo: GitRepo, ref: str) -> None:
    repo.commit({"a": "1"})
    with pytest.raises(InputError) as caught:
        gitrefs.resolve(repo.path, ref)
    assert "ref" in str(caught.value)


def test_a_directory_that_is_not_a_repository_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a git repository"):
        gitrefs.resolve(tmp_path, "HEAD")


def test_read_required_names_the_file_and_the_ref(repo: GitRepo) -> None:
    sha = repo.commit({"a": "1"})
    with pytest.raises(InputError) as caught:
        gitrefs.read_required(repo.path, sha, "eval/cases.jsonl", ref="main")
    assert str(caught.value) == f"eval/cases.jsonl: not found at git ref main ({sha[:12]})"


@pytest.mark.parametrize("path", [
    "../outside.txt", "prompts/../../outside.txt", "/etc/passwd", ".git/config",
    "C:/windows", "a\\..\\b", "..", ".",
])
def test_paths_that_could_leave_the_repository_are_refused(repo: GitRepo, path: str) -> None:
    sha = repo.commit({"a": "1"})
    with pytest.raises(SecurityError):
        gitrefs.read(repo.path, sha, path)


def test_paths_are_normalised_inside_the_repository(repo: GitRepo) -> None:
    sha = repo.commit({"prompts/a.txt": "x"})
    assert gitrefs.read(repo.path, sha, "prompts/./sub/../a.txt") == b"x"


def test_a_symbolic_link_is_never_followed(repo: GitRepo) -> None:
    (repo.path / "link").symlink_to("/etc/hostname")
    repo.git("add", "link")
    sha = repo.commit({})
    with pytest.raises(SecurityError, match="symbolic link"):
        gitrefs.read(repo.path, sha, "link")


def test_a_directory_is_not_a_file(repo: GitRepo) -> None:
    sha = repo.commit({"prompts/a.txt": "x"})
    with pytest.raises(InputError, match="is a directory"):
        gitrefs.read(repo.path, sha, "prompts")


def test_changed_paths_lists_added_modified_and_removed_files(repo: GitRepo) -> None:
    base = repo.commit({"keep": "1", "edit": "1", "gone": "1"})
    head = repo.commit({"edit": "2", "gone": None, "new/file": "1"})
    assert gitrefs.changed_paths(repo.path, base, head) == ["edit", "gone", "new/file"]
    assert gitrefs.changed_paths(repo.path, base, base) == []


def test_odd_file_names_survive(repo: GitRepo) -> None:
    base = repo.commit({"plain": "1"})
    head = repo.commit({"spaced name.txt": "x", "ünïcode.txt": "y"})
    assert gitrefs.changed_paths(repo.path, base, head) == ["spaced name.txt", "ünïcode.txt"]
    assert gitrefs.read(repo.path, head, "ünïcode.txt") == b"y"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_checkout_owned_by_another_user_is_still_read(repo: GitRepo) -> None:
    # The Docker action's situation: the workspace belongs to the runner's user.
    sha = repo.commit({"a": "1"})
    for path in [repo.path, *repo.path.rglob("*")]:
        os.lchown(path, 4321, 4321)
    assert gitrefs.resolve(repo.path, "HEAD") == sha
    assert gitrefs.read(repo.path, sha, "a") == b"1"


def test_a_file_name_that_is_not_utf8_is_listed_as_writable_text(repo: GitRepo) -> None:
    base = repo.commit({"a": "1"})
    head = repo.commit({"dir/\udcff\udcfe.txt": "x"})  # the bytes ff fe: not UTF-8
    (changed,) = gitrefs.changed_paths(repo.path, base, head)
    assert changed == "dir/\\xff\\xfe.txt"
    assert changed.encode("utf-8")  # no lone surrogate: JSON and Markdown writers accept it


# -- the one git runner ------------------------------------------------------------------

def _give_away(path: Path, uid: int) -> None:
    for root, dirs, files in os.walk(path):
        for name in (root, *(os.path.join(root, entry) for entry in (*dirs, *files))):
            os.lchown(name, uid, uid)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving a repository to another user needs root")
def test_a_repository_of_another_user_is_read_without_a_system_wide_safe_directory(
        tmp_path: Path) -> None:
    """As in the Docker action: the runner's checkout belongs to another uid, and
    nothing in git's configuration marks it safe; every call trusts that one
    directory itself."""
    theirs = GitRepo.create(tmp_path / "workspace")
    sha = theirs.commit({"prompts/a.txt": "hello\n"})
    _give_away(theirs.path, 1001)
    home = tmp_path / "home"
    home.mkdir()
    environ = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}

    plain = subprocess.run(["git", "-C", str(theirs.path), "rev-parse", "HEAD"], env=environ,
                           capture_output=True, text=True, check=False)
    assert plain.returncode != 0 and "dubious ownership" in plain.stderr  # the trap is real

    git = Git(Settings(environ).git_environment())
    assert gitrefs.resolve(theirs.path, "HEAD", git=git) == sha
    assert gitrefs.read(theirs.path, sha, "prompts/a.txt", git=git) == b"hello\n"
    assert gitrefs.changed_paths(theirs.path, sha, sha, git=git) == []
    action.ensure_commits(theirs.path, [sha], git=git)  # the action's checks pass too
    # Only that directory is trusted: a second repository of the same user is not.
    other = GitRepo.create(tmp_path / "other")
    other.commit({"x": "1"})
    _give_away(other.path, 1001)
    assert git.run(theirs.path, "-C", str(other.path), "rev-parse", "HEAD",
                   check=False).returncode != 0


def test_git_never_follows_a_callers_git_dir(repo: GitRepo, tmp_path: Path) -> None:
    sha = repo.commit({"a.txt": "ours\n"})
    decoy = GitRepo.create(tmp_path / "decoy")
    decoy.commit({"a.txt": "decoy\n"})
    environ = {**os.environ, "GIT_DIR": str(decoy.path / ".git")}
    git = Git(Settings(environ).git_environment())
    assert gitrefs.resolve(repo.path, "HEAD", git=git) == sha
    assert gitrefs.read(repo.path, sha, "a.txt", git=git) == b"ours\n"
