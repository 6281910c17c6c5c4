"""Give what the action wrote in the workspace back to the workspace's owner.

The runner starts a Docker action as root, on a workspace its own user owns
(uid 1001 on GitHub's runners). What root creates there (flipgate-out/, the
reply cache, the objects and `.git/shallow` a fetch writes) would stay root's,
and the runner user could not delete it when a self-hosted runner reuses the
workspace. So, when running as root, every entry under the places flipgate
writes that is not already the owner's is handed to the workspace's owner.

Symbolic links are never followed: a link is re-owned itself (`lchown`), and a
place that is a link is left alone, so nothing outside the workspace changes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT_UID = 0


def hand_back(workspace: Path, places: Iterable[Path], *, euid: int) -> int:
    """Chown every entry under `places` to the owner of `workspace`; returns how many changed.

    Does nothing unless running as root (`euid`) on a workspace someone else owns.
    A place that does not exist, or is a symbolic link, is skipped.
    """
    if euid != ROOT_UID:
        return 0
    owner = os.stat(workspace)
    if owner.st_uid == ROOT_UID:
        return 0
    changed = 0
    for place in places:
        for path in _entries(place):
            info = os.lstat(path)
            if (info.st_uid, info.st_gid) != (owner.st_uid, owner.st_gid):
                os.chown(path, owner.st_uid, owner.st_gid, follow_symlinks=False)
                changed += 1
    return changed


def _entries(place: Path) -> Iterator[Path]:
    """`place` and everything below it, without following symbolic links."""
    if place.is_symlink() or not place.exists():
        return
    yield place
    if not place.is_dir():
        return
    for directory, dirnames, filenames in os.walk(place):  # os.walk never follows links
        for name in (*dirnames, *filenames):
            yield Path(directory, name)
