"""The layout a GitHub runner gives a job, not pytest's private `tmp_path`: a workspace of
0755 directories and 0644 files whose `.git/config` holds actions/checkout's persisted
credential, the runner's command files beside it and a cache any account could read.

Built under a fresh directory of /tmp (which every account may traverse), so that what the
application's code can reach is decided by flipgate, not by the test's own 0700 directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from support.gitrepo import GitRepo

CREDENTIAL = "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3J1bm5lcnRva2Vu"


@dataclass
class RunnerLayout:
    root: Path
    repo: GitRepo
    cache: Path
    output: Path                 # GITHUB_OUTPUT
    summary: Path                # GITHUB_STEP_SUMMARY

    @property
    def environ(self) -> dict[str, str]:
        return {"PATH": os.environ["PATH"], "GITHUB_WORKSPACE": str(self.repo.path),
                "GITHUB_OUTPUT": str(self.output), "GITHUB_STEP_SUMMARY": str(self.summary)}

    def open_up(self) -> None:
        """Every directory 0755 and every file 0644, as a runner's checkout leaves them."""
        for top, _dirs, files in os.walk(self.root):
            os.chmod(top, 0o755)
            for name in files:
                path = os.path.join(top, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o644)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def runner_layout() -> RunnerLayout:
    """A fresh runner layout (the caller calls `open_up` after committing, and `remove`)."""
    root = Path(tempfile.mkdtemp(prefix="flipgate-runner-", dir="/tmp"))
    repo = GitRepo.create(root / "work" / "repo")
    with open(repo.path / ".git" / "config", "a", encoding="utf-8") as config:
        config.write(f'[http "https://github.com/"]\n\textraheader = {CREDENTIAL}\n')
    commands = root / "_temp" / "_runner_file_commands"
    commands.mkdir(parents=True)
    output, summary = commands / "set_output_1", commands / "step_summary_1"
    output.write_text("")
    summary.write_text("")
    cache = root / "cache"
    cache.mkdir()
    layout = RunnerLayout(root=root, repo=repo, cache=cache, output=output, summary=summary)
    layout.open_up()
    return layout
