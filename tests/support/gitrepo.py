"""Real temporary git repositories for tests: a base commit, then head commits on top.

    repo = GitRepo.create(tmp_path / "repo")
    base = repo.commit({"README.md": "hi", "prompts/a.prompty": PROMPT}, message="base")
    head = repo.commit({"prompts/a.prompty": CHANGED}, message="head")   # unchanged files stay
    repo.commit({"old.txt": None})   # None deletes a file

Commits never touch the caller's git config: identity and settings are passed
per command.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_ENV = {
    "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Committer", "GIT_COMMITTER_EMAIL": "committer@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
}


@dataclass
class GitRepo:
    path: Path

    @classmethod
    def create(cls, path: Path) -> GitRepo:
        path.mkdir(parents=True, exist_ok=True)
        repo = cls(path)
        repo.git("init", "-q", "-b", "main")
        return repo

    def git(self, *args: str) -> str:
        env = {**os.environ, **_ENV, "HOME": str(self.path)}
        result = subprocess.run(["git", "-C", str(self.path), "-c", "commit.gpgsign=false", *args],
                                capture_output=True, text=True, env=env, check=True)
        return result.stdout.strip()

    def write(self, files: Mapping[str, str | bytes | None]) -> None:
        for name, content in files.items():
            target = self.path / name
            if content is None:
                if target.exists():
                    self.git("rm", "-q", "--", name)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
            self.git("add", "--", name)

    def commit(self, files: Mapping[str, str | bytes | None], *, message: str = "change") -> str:
        """Write (or delete) files, commit them, and return the new commit's SHA."""
        self.write(files)
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def branch(self, name: str, start: str) -> None:
        self.git("branch", "-f", name, start)

    def checkout(self, ref: str) -> None:
        self.git("checkout", "-q", ref)
