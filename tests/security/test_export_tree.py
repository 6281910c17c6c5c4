"""The export a trusted command runs in (`git.repository.export_tree`): the files of one commit,
byte for byte, nothing written outside the export, and nothing the tree's own attributes say
about exporting (`export-ignore`, `export-subst`) obeyed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from flipgate.git.repository import export_tree

from support.gitrepo import GitRepo


class TreeGit:
    """A git whose object store holds the entries given (what a hostile store could hold):
    `ls-tree` lists them, `cat-file --batch` answers their contents."""

    def __init__(self, entries: list[tuple[str, str, bytes]]) -> None:
        self.entries = [(mode, f"{index:040x}", path, data)
                        for index, (mode, path, data) in enumerate(entries)]

    def run(self, repo: object, *args: str, stdin: bytes = b"",
            **_: object) -> subprocess.CompletedProcess[bytes]:
        if args[0] == "ls-tree":
            out = b"".join(f"{mode} blob {oid}\t{path}".encode() + b"\x00"
                           for mode, oid, path, _ in self.entries)
        else:
            assert args[:2] == ("cat-file", "--batch")
            data = {oid: content for _, oid, _, content in self.entries}
            out = b"".join(f"{oid} blob {len(data[oid])}\n".encode() + data[oid] + b"\n"
                           for oid in stdin.decode().split())
        return subprocess.CompletedProcess(args, 0, out, b"")


def hostile_tree() -> list[tuple[str, str, bytes]]:
    return [("100644", "ok.txt", b"kept"), ("100644", "../up.txt", b"escaped"),
            ("100644", "/abs.txt", b"escaped"), ("100644", "sub/../../up2.txt", b"escaped"),
            ("120000", "sub/up", b"../.."), ("120000", "abs-link", b"/etc"),
            ("100644", "sub/up/through.txt", b"escaped"), ("100644", ".git/config", b"x"),
            ("104755", "setuid", b"#!/bin/sh\n")]


def test_the_export_holds_the_commits_files_links_and_modes(tmp_path: Path) -> None:
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


def test_a_tree_that_reaches_outside_the_export_writes_nothing_there(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    out = export_tree(tmp_path, "0" * 40, outside / "inner" / "out",
                      git=TreeGit(hostile_tree()))  # type: ignore[arg-type]

    assert (out / "ok.txt").read_text() == "kept"
    # A name with a leading "/" or through a dropped link may land inside; never outside.
    written = [p for p in tmp_path.rglob("*") if not p.is_dir() or p.is_symlink()]
    assert written and all(p.resolve().is_relative_to(out.resolve()) for p in written), written
    assert not (out / ".git").exists() and not (out / "abs-link").exists()
    assert (out / "setuid").stat().st_mode & 0o7000 == 0
    assert not (out / "sub" / "up").exists() or (out / "sub" / "up").resolve().is_relative_to(out)


# -- the tree's own attributes decide nothing (sixth red team, group 3) --------------------

def test_export_ignore_in_the_trees_own_gitattributes_leaves_nothing_out(tmp_path: Path) -> None:
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


def test_export_subst_and_ident_rewrite_no_file(tmp_path: Path) -> None:
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
