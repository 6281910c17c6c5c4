"""Attacks on where the action writes (issue 17, item 1): a pull request that commits
`flipgate-out` or `.flipgate-cache` as a link, or as files, must not make the action
(root in its container) write outside the workspace, nor read its own cache entries.

Each refusal is exit 2 with one line saying which directory and why; the check never runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flipgate.github import action

from support.action_harness import Harness, RecordingCheck


def commit_link(harness: Harness, name: str, target: Path) -> str:
    """The PR's head gains `name` as a symbolic link to `target`, and is checked out."""
    link = harness.repo.path / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    harness.repo.git("add", name)
    harness.repo.git("commit", "-q", "-m", f"link {name}")
    harness.head = harness.repo.git("rev-parse", "HEAD").strip()
    harness.server.push(42, harness.head)
    return harness.head


def refused(harness: Harness, check: RecordingCheck, *, why: str, **options: object) -> None:
    harness.pull_event()
    code = action.main(harness.env, check=check, stream=harness.log,
                       options=action.CheckOptions(**options) if options else None)
    log = harness.log.getvalue()
    assert code == 2, log[-2000:]
    assert check.calls == []  # nothing ran, nothing was written by the check
    assert why in log, log[-2000:]
    final = harness.final_status()
    assert final["state"] == "error"


@pytest.mark.parametrize("place", ["flipgate-out", ".flipgate-cache"])
def test_a_committed_symlink_for_an_output_directory_is_refused_and_nothing_lands_outside(
        place: str, harness: Harness, check: RecordingCheck, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    commit_link(harness, place, outside)

    refused(harness, check, why=f"{place} is a symbolic link")

    assert list(outside.iterdir()) == []


def test_a_symlink_to_a_file_outside_is_refused(harness: Harness, check: RecordingCheck,
                                                tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    commit_link(harness, "flipgate-out", victim)
    refused(harness, check, why="flipgate-out is a symbolic link")
    assert victim.read_text() == "keep me\n"


def test_a_tracked_cache_directory_is_refused(harness: Harness, check: RecordingCheck) -> None:
    harness.head = harness.repo.commit({".flipgate-cache/ab/ab12.json": '{"value": 1}'})
    harness.server.push(42, harness.head)
    refused(harness, check, why="tracks")


def test_a_tracked_file_inside_the_output_directory_is_refused(harness: Harness,
                                                               check: RecordingCheck) -> None:
    harness.head = harness.repo.commit({"flipgate-out/report.json": '{"conclusion": "success"}'})
    harness.server.push(42, harness.head)
    refused(harness, check, why="tracks")


def test_a_cache_the_heads_tree_holds_is_refused_even_when_the_base_is_checked_out(
        harness: Harness, check: RecordingCheck) -> None:
    """pull_request_target checks out the base; the head's tree still carries the entries."""
    base = harness.repo.git("rev-parse", "HEAD").strip()
    harness.head = harness.repo.commit({".flipgate-cache/cd/cd34.json": '{"value": 1}'})
    harness.server.push(42, harness.head)
    harness.repo.checkout(base)
    refused(harness, check, why="head")


def test_a_symlinked_parent_of_a_custom_cache_path_is_refused(harness: Harness,
                                                             check: RecordingCheck,
                                                             tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    commit_link(harness, "var", outside)
    refused(harness, check, why="var is a symbolic link", cache=Path("var/cache"))
    assert list(outside.iterdir()) == []


def test_a_link_planted_inside_an_untracked_output_directory_is_refused(
        harness: Harness, check: RecordingCheck, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    out = harness.repo.path / "flipgate-out"
    out.mkdir()
    os.symlink(victim, out / "report.json")
    refused(harness, check, why="symbolic link")
    assert victim.read_text() == "keep me\n"


def test_real_untracked_directories_are_used_as_before(harness: Harness,
                                                      check: RecordingCheck) -> None:
    (harness.repo.path / ".flipgate-cache" / "ab").mkdir(parents=True)
    harness.pull_event()
    assert harness.run(check) == 0, harness.log.getvalue()[-2000:]
    assert check.calls and check.calls[0]["cache_dir"] == harness.repo.path / ".flipgate-cache"


def test_a_committed_file_where_the_output_directory_goes_is_refused(
        harness: Harness, check: RecordingCheck) -> None:
    harness.head = harness.repo.commit({"flipgate-out": "not a directory\n"})
    harness.server.push(42, harness.head)
    refused(harness, check, why="flipgate-out")


def test_a_submodule_named_like_the_cache_is_refused(harness: Harness,
                                                     check: RecordingCheck) -> None:
    """A gitlink: no files below it in the tree, but the tree still claims the path."""
    harness.repo.git("update-index", "--add", "--cacheinfo",
                     f"160000,{harness.base},.flipgate-cache")
    harness.repo.git("commit", "-q", "-m", "a submodule where the cache goes")
    harness.head = harness.repo.git("rev-parse", "HEAD").strip()
    harness.server.push(42, harness.head)
    refused(harness, check, why="tracks")
