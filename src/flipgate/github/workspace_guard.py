"""The directories the action writes into must be its own, not the pull request's.

In a `pull_request` workflow the checkout is the PR's tree. A PR that commits
`flipgate-out` or `.flipgate-cache` as a symbolic link would have the action (root
in its container) write wherever the link points; one that commits files there
would have its own files read as flipgate's. So before the check, each place is
refused (exit 2, saying which and why) when it, or a directory above it inside
the workspace, is a link; when it holds a link; or when the checkout or the
head's tree tracks anything under it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from flipgate.errors import InputError, Problem
from flipgate.git.repository import Git


def refuse_unsafe_places(workspace: Path, places: Mapping[str, Path], *, head_sha: str,
                         git: Git) -> None:
    """`places`: what each directory is for (`output`, `cache`) -> its path."""
    problems = [problem for use, place in places.items()
                if (problem := _problem(workspace, use, place, head_sha=head_sha, git=git))]
    if problems:
        raise InputError(*problems)


def _problem(workspace: Path, use: str, place: Path, *, head_sha: str, git: Git) -> Problem | None:
    root = workspace.absolute()
    path = place if place.is_absolute() else root / place
    inside = path.is_relative_to(root)
    relative = path.relative_to(root) if inside else None
    # Every existing step from the workspace down (or the whole path, if outside it).
    steps = ([root.joinpath(*relative.parts[:i + 1]) for i in range(len(relative.parts))]
             if relative is not None else [path])
    for step in steps:
        if step.is_symlink():
            shown = step.relative_to(root) if inside else step
            return _refused(use, place, f"{shown} is a symbolic link (to {os.readlink(step)}); "
                                        "flipgate writes only into a real directory")
    if path.exists() and not path.is_dir():
        return _refused(use, place, f"{place} exists and is not a directory")
    if relative is not None and relative.parts:
        name = relative.as_posix()
        if _lines(git.run(root, "ls-files", "-z", "--", name, check=False).stdout):
            return _refused(use, place, f"the checkout tracks files under {name}; a pull "
                                        "request's files are never flipgate's own")
        if _lines(git.run(root, "ls-tree", "-r", "-z", "--name-only", head_sha, "--", name,
                          check=False).stdout):
            return _refused(use, place, f"the pull request's head commits files under {name}; "
                                        "a pull request's files are never flipgate's own")
    link = _link_below(path)
    if link is not None:
        return _refused(use, place, f"{place} holds a symbolic link, {link.relative_to(path)}; "
                                    "remove it (flipgate never writes through one)")
    return None


def _refused(use: str, place: Path, why: str) -> Problem:
    return Problem(str(place), None, f"refusing the {use} directory: {why}")


def _lines(output: bytes) -> list[bytes]:
    return [item for item in output.split(b"\0") if item]


def _link_below(path: Path) -> Path | None:
    if not path.is_dir():
        return None
    for directory, dirnames, filenames in os.walk(path):  # never follows links
        for name in (*dirnames, *filenames):
            if Path(directory, name).is_symlink():
                return Path(directory, name)
    return None
