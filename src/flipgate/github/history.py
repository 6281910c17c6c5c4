"""The history a run needs in the workspace: the base and head commits, and enough of
their past to find where the branch was cut.

A run judges what a pull request changes since its merge base (`run/landing.py`), so
a shallow checkout (actions/checkout's default, one commit deep) is deepened until
base and head meet: a few steps of growing depth, then the whole history. Only
objects are fetched; nothing is checked out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from flipgate.errors import IncompleteError, InputError, Problem
from flipgate.git import repository as gitrefs
from flipgate.git.repository import Git
from flipgate.text.escaping import short

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
# How deep a shallow clone is fetched, step by step, before the whole history is.
DEPTHS = (50, 500, 5000)


def ensure_pull(repo: Path, base: str, head: str, *, git: Git) -> None:
    """Both commits in the object store, and history back to their merge base."""
    ensure_commits(repo, [base, head], git=git)
    if gitrefs.merge_base(repo, base, head, git=git) is not None or not gitrefs.is_shallow(repo, git=git):
        return
    for depth in (*(f"--depth={n}" for n in DEPTHS), "--unshallow"):
        git.run(repo, "fetch", "--no-tags", "--no-recurse-submodules", "--quiet", depth,
                "origin", base, head, check=False)
        if gitrefs.merge_base(repo, base, head, git=git) is not None:
            return
        if not gitrefs.is_shallow(repo, git=git):
            return  # the whole history is here: base and head share none


def ensure_commits(repo: Path, shas: Sequence[str], *, git: Git) -> None:
    """Make sure both commits are in the workspace's object store, fetching (never checking out)."""
    if git.run(repo, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise InputError(Problem(str(repo), None, "the workspace is not a git repository; add "
                                 "actions/checkout before flipgate"))
    for sha in shas:
        if not _SHA.match(sha):
            raise InputError(Problem("event", None, f"not a commit SHA: {sha!r}"))
    missing = [sha for sha in shas if not _has_commit(repo, sha, git)]
    if not missing:
        return
    shallow = git.run(repo, "rev-parse", "--is-shallow-repository", check=False).stdout.strip()
    depth = ["--depth=1"] if shallow == b"true" else []
    # GitHub serves any commit of the repository by SHA (a fork's PR head too, through
    # refs/pull/N/head); actions/checkout fetches PR commits the same way.
    # --no-recurse-submodules: on demand, git would also fetch into every initialised
    # submodule whose commit the PR's head changes; flipgate reads none of them.
    result = git.run(repo, "fetch", "--no-tags", "--no-recurse-submodules", "--quiet",
                     *depth, "origin", *missing, check=False)
    still = [sha for sha in missing if not _has_commit(repo, sha, git)]
    if still:
        why = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise IncompleteError(f"could not fetch {', '.join(short(s) for s in still)} from origin"
                              + (f": {why[-1]}" if why else ""))


def _has_commit(repo: Path, sha: str, git: Git) -> bool:
    return git.run(repo, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0
