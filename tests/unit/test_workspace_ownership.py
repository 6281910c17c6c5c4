"""Handing the action's files back to the workspace's owner, in real temporary directories.

These tests chown for real, so they need root (the image runs the action as root;
so does CI here). RUNNER is the uid GitHub's runner user has.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from flipgate.github.ownership import hand_back
from flipgate.llm.cache import Cache

RUNNER = 1001
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


def owners(top: Path) -> dict[str, tuple[int, int]]:
    """Each entry below `top` (links not followed) -> (uid, gid)."""
    found = {}
    for directory, dirnames, filenames in os.walk(top):
        for name in (*dirnames, *filenames):
            path = Path(directory, name)
            info = os.lstat(path)
            found[str(path.relative_to(top))] = (info.st_uid, info.st_gid)
    return found


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    """A workspace the runner user owns, with root-made files where the action writes."""
    ws = tmp_path / "workspace"
    (ws / "flipgate-out").mkdir(parents=True)
    (ws / "flipgate-out" / "report.json").write_text("{}")
    (ws / ".flipgate-cache" / "ab").mkdir(parents=True)
    (ws / ".flipgate-cache" / "ab" / "abcd.json").write_text("{}")
    (ws / ".git" / "objects" / "pack").mkdir(parents=True)
    (ws / ".git" / "shallow").write_text("0" * 40 + "\n")
    (ws / "README.md").write_text("the runner's own checkout\n")
    os.chown(ws, RUNNER, RUNNER)
    yield ws


@needs_root
def test_everything_the_action_wrote_goes_to_the_workspace_owner(workspace: Path) -> None:
    places = [workspace / "flipgate-out", workspace / ".flipgate-cache", workspace / ".git"]

    changed = hand_back(workspace, places, euid=0)

    handed = {name: owner for name, owner in owners(workspace).items() if name != "README.md"}
    assert set(handed.values()) == {(RUNNER, RUNNER)}
    assert "flipgate-out/report.json" in handed and ".git/shallow" in handed
    assert changed == len(handed)
    assert owners(workspace)["README.md"] == (0, 0)  # outside the places: untouched


@needs_root
def test_a_second_pass_changes_nothing(workspace: Path) -> None:
    places = [workspace / "flipgate-out"]
    hand_back(workspace, places, euid=0)

    assert hand_back(workspace, places, euid=0) == 0


@needs_root
def test_links_are_reowned_themselves_never_followed(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("root's\n")
    (workspace / "flipgate-out" / "link").symlink_to(outside / "secret")
    (workspace / "flipgate-out" / "dirlink").symlink_to(outside, target_is_directory=True)
    (workspace / ".flipgate-cache").rename(tmp_path / "real-cache")
    (workspace / ".flipgate-cache").symlink_to(tmp_path / "real-cache")  # a place that is a link

    hand_back(workspace, [workspace / "flipgate-out", workspace / ".flipgate-cache"], euid=0)

    assert os.lstat(workspace / "flipgate-out" / "link").st_uid == RUNNER
    assert os.lstat(workspace / "flipgate-out" / "dirlink").st_uid == RUNNER
    assert os.stat(outside / "secret").st_uid == 0 and os.stat(outside).st_uid == 0
    assert set(owners(tmp_path / "real-cache").values()) == {(0, 0)}
    assert os.lstat(workspace / ".flipgate-cache").st_uid == 0


@needs_root
def test_missing_places_are_skipped(workspace: Path) -> None:
    assert hand_back(workspace, [workspace / "never-written"], euid=0) == 0


@needs_root
def test_nothing_changes_unless_running_as_root(workspace: Path) -> None:
    assert hand_back(workspace, [workspace / "flipgate-out"], euid=RUNNER) == 0
    assert os.stat(workspace / "flipgate-out" / "report.json").st_uid == 0


def test_nothing_changes_in_a_workspace_root_owns(tmp_path: Path) -> None:
    (tmp_path / "flipgate-out").mkdir()
    before = owners(tmp_path)

    assert hand_back(tmp_path, [tmp_path / "flipgate-out"], euid=os.geteuid()) == 0
    assert owners(tmp_path) == before


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_cache_entries_take_their_mode_from_the_umask(tmp_path: Path, umask: int,
                                                      mode: int) -> None:
    previous = os.umask(umask)
    try:
        Cache(tmp_path).put({"model": "m", "prompt": "p"}, {"text": "answer"})
    finally:
        os.umask(previous)

    [entry] = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert stat.S_IMODE(entry.stat().st_mode) == mode
    assert not entry.name.startswith(".tmp-")
