"""The action's workspace after actions/checkout's default (one commit deep): the run
fetches history until base and head meet, so it can judge what the pull request changes."""

from __future__ import annotations

import os
from pathlib import Path

from flipgate.git import repository as gitrefs
from flipgate.git.repository import Git
from flipgate.github.history import ensure_pull
from flipgate.settings import Settings

from support.gitrepo import GitRepo


def test_a_shallow_checkout_is_deepened_to_the_merge_base(tmp_path: Path) -> None:
    origin = GitRepo.create(tmp_path / "origin")
    origin.commit({"README.md": "r"})
    cut = origin.commit({"prompts/a.prompty": "v1"}, message="where the branch is cut")
    for n in range(60):  # main moves on further than the first deepening step
        origin.commit({"notes.txt": f"{n}"})
    base = origin.git("rev-parse", "HEAD")
    origin.checkout(cut)
    head = origin.commit({"prompts/a.prompty": "v2"}, message="the pull request")
    origin.git("config", "uploadpack.allowAnySHA1InWant", "true")
    workspace = GitRepo(tmp_path / "workspace")
    GitRepo(tmp_path).git("clone", "-q", "--depth", "1", "--branch", "main",
                          f"file://{origin.path}", str(workspace.path))
    git = Git(Settings.from_environ(os.environ).git_environment())
    assert gitrefs.merge_base(workspace.path, base, base, git=git) == base
    assert workspace.git("rev-parse", "--is-shallow-repository") == "true"

    ensure_pull(workspace.path, base, head, git=git)

    assert gitrefs.merge_base(workspace.path, base, head, git=git) == cut
    assert gitrefs.changed_paths(workspace.path, cut, head, git=git) == ["prompts/a.prompty"]
