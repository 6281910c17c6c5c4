"""The export a trusted command runs in (`git.repository.export_tree`): the files of one commit,
nothing written outside the export, on every Python requires-python allows.

Python 3.11.0-3.11.3 (Debian 12's python3) has no `tarfile.data_filter`; the container smoke
found the export failing there with a TypeError. Each test runs with the filter and without it.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from flipgate.git.repository import export_tree

from support.gitrepo import GitRepo


@pytest.fixture(params=["with data_filter", "without data_filter (Python < 3.11.4)"])
def python(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param.startswith("without"):
        monkeypatch.delattr(tarfile, "data_filter")
    return request.param


class ArchiveGit:
    """A git whose `archive` answers with the tar given (what a hostile object store could hold)."""

    def __init__(self, tar: bytes) -> None:
        self.tar = tar

    def run(self, repo: object, *args: str, **_: object) -> subprocess.CompletedProcess[bytes]:
        assert args[0] == "archive"
        return subprocess.CompletedProcess(args, 0, self.tar, b"")


def hostile_tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        def add(name: str, *, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644,
                data: bytes = b"") -> None:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode, info.size = kind, link, mode, len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)

        add("ok.txt", data=b"kept")
        add("../up.txt", data=b"escaped")
        add("/abs.txt", data=b"escaped")
        add("sub", kind=tarfile.DIRTYPE, mode=0o755)
        add("sub/up", kind=tarfile.SYMTYPE, link="../..")
        add("sub/up/through.txt", data=b"escaped")
        add("hard", kind=tarfile.LNKTYPE, link="../up.txt")
        add("setuid", mode=0o4755, data=b"#!/bin/sh\n")
        add("device", kind=tarfile.CHRTYPE)
    return buffer.getvalue()


def test_the_export_holds_the_commits_files_links_and_modes(python: str, tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"answer.py": "print('hi')\n", "app/run.sh": "#!/bin/sh\n",
                 "app/data/table.csv": "a,b\n"})
    (repo.path / "app" / "run.sh").chmod(0o755)
    os.symlink("data/table.csv", repo.path / "app" / "table.csv")
    repo.git("add", "-A")
    repo.git("update-index", "--chmod=+x", "app/run.sh")
    sha = repo.commit({}, message="mode and link")

    out = export_tree(repo.path, sha, tmp_path / "out")

    assert (out / "answer.py").read_text() == "print('hi')\n"
    assert (out / "app" / "data" / "table.csv").read_text() == "a,b\n"
    assert os.access(out / "app" / "run.sh", os.X_OK)
    assert os.readlink(out / "app" / "table.csv") == "data/table.csv"
    assert (out / "app" / "table.csv").read_text() == "a,b\n"
    assert not (out / ".git").exists()


def test_a_tree_that_reaches_outside_the_export_writes_nothing_there(python: str,
                                                                     tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    out = export_tree(tmp_path, "0" * 40, outside / "inner" / "out",
                      git=ArchiveGit(hostile_tar()))  # type: ignore[arg-type]

    assert (out / "ok.txt").read_text() == "kept"
    # A name with a leading "/" or through a dropped link may land inside; never outside.
    written = [p for p in tmp_path.rglob("*") if not p.is_dir() or p.is_symlink()]
    assert written and all(p.resolve().is_relative_to(out.resolve()) for p in written), written
    assert not (out / "device").exists() and not (out / "hard").exists()
    assert (out / "setuid").stat().st_mode & 0o7000 == 0
    assert not (out / "sub" / "up").exists() or (out / "sub" / "up").resolve().is_relative_to(out)


# -- the tree's own attributes decide nothing (sixth red team, group 3) --------------------

def test_export_ignore_in_the_trees_own_gitattributes_leaves_nothing_out(python: str,
                                                                         tmp_path: Path) -> None:
    """A head that regresses `app/answer.txt` and marks it `export-ignore` must still be judged
    with the file it committed."""
    repo = GitRepo.create(tmp_path / "repo")
    sha = repo.commit({"app/answer.txt": "The fee is whatever you like.\n",
                       "app/.gitattributes": "answer.txt export-ignore\n",
                       ".gitattributes": "secret/ export-ignore\n", "secret/x.txt": "x\n"})

    out = export_tree(repo.path, sha, tmp_path / "out")

    assert (out / "app" / "answer.txt").read_bytes() == b"The fee is whatever you like.\n"
    assert (out / "secret" / "x.txt").read_bytes() == b"x\n"
    assert (out / "app" / ".gitattributes").read_bytes() == b"answer.txt export-ignore\n"


def test_export_subst_and_ident_rewrite_no_file(python: str, tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    text = "commit $Format:%H$ by $Format:%an$\n$Id$\nline\r\n"
    sha = repo.commit({"answer.txt": text,
                       ".gitattributes": "answer.txt export-subst ident eol=crlf text\n"})

    out = export_tree(repo.path, sha, tmp_path / "out")

    blob = repo.git("rev-parse", f"{sha}:answer.txt")
    committed = subprocess.run(["git", "-C", str(repo.path), "cat-file", "blob", blob],
                               capture_output=True, check=True).stdout
    assert (out / "answer.txt").read_bytes() == committed
    assert b"$Format:%H$" in committed
