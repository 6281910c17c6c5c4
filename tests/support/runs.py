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


def gate_offline(tmp_path: Path, rows: Mapping[str, tuple[str, str, str, str, str]],
                 config: str) -> tuple[Result, Path]:
    """`flipgate gate` without a cache on cases, baseline and candidate written from `rows`
    (id -> category, query, context, baseline answer, candidate answer) and the `config` text;
    the result and the output folder."""
    with (tmp_path / "cases.jsonl").open("w") as cases, \
            (tmp_path / "base.jsonl").open("w") as base, (tmp_path / "cand.jsonl").open("w") as cand:
        for case_id, (category, query, context, before, after) in rows.items():
            cases.write(json.dumps({"id": case_id, "query": query, "context": context,
                                    "category": category}) + "\n")
            base.write(json.dumps({"id": case_id, "response": before}) + "\n")
            cand.write(json.dumps({"id": case_id, "response": after}) + "\n")
    (tmp_path / "flipgate.yml").write_text(config)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, [
        "gate", "--cases", str(tmp_path / "cases.jsonl"), "--baseline", str(tmp_path / "base.jsonl"),
        "--candidate", str(tmp_path / "cand.jsonl"), "--config", str(tmp_path / "flipgate.yml"),
        "--out", str(out), "--no-cache"])
    return result, out
