"""A repository whose base holds the cases and the given files, and `flipgate run` from it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from flipgate.cli import cli

from support.gitrepo import GitRepo


def repo_with_base(tmp_path: Path, cases: Sequence[Mapping[str, Any]], files: Mapping[str, str]) -> GitRepo:
    """`eval/cases.jsonl` and `files` committed, with the branch `base` on that commit."""
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in cases), **files},
                message="base")
    repo.branch("base", "HEAD")
    return repo


def run_base_head(repo: GitRepo, tmp_path: Path) -> tuple[Result, dict]:
    """`flipgate run --base base --head HEAD` without a cache, and its report.json ({} if none)."""
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                      "--out", str(tmp_path / "out"), "--no-cache"])
    report_file = tmp_path / "out" / "report.json"
    return result, json.loads(report_file.read_text()) if report_file.exists() else {}
