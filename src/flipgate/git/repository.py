"""Reading a git ref without checking it out.

Everything of a ref comes from git's object database (`rev-parse`,
`ls-tree`, `cat-file`, `diff --name-only` between two trees): nothing of
either ref is checked out, installed or executed. git runs with argument
lists (never a shell) and `--end-of-options`, so a ref named `--output=x`
is a ref, not an option.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flipgate.errors import InputError, Problem, SecurityError
from flipgate.text.escaping import short

# A file flipgate reads from a ref (config, cases, templates) larger than this
# is refused rather than loaded into memory.
MAX_BLOB_BYTES = 50 * 1024 * 1024


class GitError(InputError):
    """git could not do what we asked (not a repository, unknown object, ...)."""


@dataclass(frozen=True)
class Git:
    """The one way flipgate runs git, for reading refs and for the action's fetch.

    `environment` is what git runs in (`Settings.git_environment()`: no variable
    that redirects it, no prompt), built at the edge. None inherits this process's
    environment as it is, for a process whose environment was already cleaned (the
    rendering child); a call with variables of its own (`extra_env`) then has nothing
    to add them to, and is refused: this module never reads the environment itself.
    """

    environment: Mapping[str, str] | None = field(default=None, repr=False)

    def run(self, repo: str | os.PathLike[str], *args: str, check: bool = True,
            extra_env: Mapping[str, str] | None = None,
            stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        # In a Docker action the checkout belongs to the runner's user, not to us, and
        # git refuses it as "dubious ownership". We trust exactly this one directory
        # on every call, never every directory.
        trusted = f"safe.directory={Path(repo).resolve()}"
        env = dict(self.environment) if self.environment is not None else None
        if extra_env:  # this one call's own variables (a temporary index, an identity)
            if env is None:
                raise TypeError("git with variables of its own needs the environment they "
                                "extend: Git(settings.git_environment())")
            env.update(extra_env)
        try:
            result = subprocess.run(["git", "--no-pager", "-c", trusted, "-C", str(repo), *args],
                                    capture_output=True, env=env, check=False, input=stdin)
        except FileNotFoundError:
            raise GitError("git is not installed (flipgate reads refs with git)") from None
        if check and result.returncode != 0:
            message = result.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git {args[0]} failed in {repo}: "
                           f"{message[-1] if message else 'no output'}")
        return result


def safe_path(path: str, *, source: str | None = None) -> str:
    """A repository-relative POSIX path, or a SecurityError when it could leave the repository.

    `source` names what asked for the path (a template, the config) in the message.
    """
    where = source or path
    if not path or "\x00" in path:
        raise SecurityError(Problem(where, None, f"invalid path {path!r}"))
    if path.startswith("/") or "\\" in path or (len(path) > 1 and path[1] == ":"):
        raise SecurityError(Problem(where, None,
                                    f"path {path!r} must be relative to the repository"))
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../") or normal == ".":
        raise SecurityError(Problem(where, None, f"path {path!r} leaves the repository"))
    if normal == ".git" or normal.startswith(".git/"):
        raise SecurityError(Problem(where, None, f"path {path!r} is inside .git"))
    return normal


def resolve(repo: Path, ref: str, *, git: Git = Git()) -> str:
    """The commit SHA a ref names; InputError (exit 2) when there is no such commit."""
    if not ref or ref.startswith("-") or "\x00" in ref:
        raise InputError(f"invalid git ref {ref!r}")
    top = git.run(repo, "rev-parse", "--git-dir", check=False)
    if top.returncode != 0:
        raise InputError(f"{repo} is not a git repository")
    result = git.run(repo, "rev-parse", "--verify", "--quiet", "--end-of-options",
                  f"{ref}^{{commit}}", check=False)
    sha = result.stdout.decode().strip()
    if result.returncode != 0 or not sha:
        shallow = git.run(repo, "rev-parse", "--is-shallow-repository", check=False)
        hint = (" (this clone is shallow: fetch the ref, e.g. actions/checkout with "
                "fetch-depth: 0)") if shallow.stdout.strip() == b"true" else ""
        raise InputError(f"git ref {ref!r} does not name a commit in {repo}{hint}")
    return sha


def _entry(repo: Path, sha: str, path: str, git: Git) -> tuple[str, str, str] | None:
    """(mode, type, object id) of a path in a commit's tree, or None when absent."""
    result = git.run(repo, "ls-tree", "-z", "--full-tree", "--end-of-options", sha, "--", path)
    for record in result.stdout.split(b"\x00"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        if name.decode("utf-8", "surrogateescape") == path:
            mode, kind, oid = meta.decode().split()
            return mode, kind, oid
    return None


def read(repo: Path, sha: str, path: str, *, git: Git = Git()) -> bytes | None:
    """A file's bytes at a commit, or None when the commit has no such file.

    A directory, a submodule or a symbolic link at that path is an InputError:
    a link's target is never followed (it could point outside the repository).
    """
    path = safe_path(path)
    entry = _entry(repo, sha, path, git)
    if entry is None:
        return None
    mode, kind, oid = entry
    where = f"{path}@{short(sha)}"
    if kind != "blob":
        raise InputError(Problem(where, None, f"is a {'directory' if kind == 'tree' else kind}, "
                                 "expected a file"))
    if mode == "120000":
        raise SecurityError(Problem(where, None, "is a symbolic link; flipgate does not follow links"))
    size = int(git.run(repo, "cat-file", "-s", oid).stdout.decode().strip())
    if size > MAX_BLOB_BYTES:
        raise InputError(Problem(where, None, f"is {size} bytes; more than flipgate reads "
                                 f"({MAX_BLOB_BYTES})"))
    return git.run(repo, "cat-file", "blob", oid).stdout


def read_required(repo: Path, sha: str, path: str, *, ref: str | None = None,
                  git: Git = Git()) -> bytes:
    """Like `read`, but a missing file is an InputError naming the ref."""
    data = read(repo, sha, path, git=git)
    if data is None:
        label = f"{ref} ({short(sha)})" if ref and ref != sha else short(sha)
        raise InputError(Problem(path, None, f"not found at git ref {label}"))
    return data


def changed_paths(repo: Path, base: str, head: str, *, git: Git = Git()) -> list[str]:
    """Paths that differ between two commits' trees (added, removed, modified, renamed)."""
    result = git.run(repo, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff",
                  "--no-textconv", "--end-of-options", base, head, "--")
    return sorted({_path_text(p) for p in result.stdout.split(b"\x00") if p})


def merge_base(repo: Path, base: str, head: str, *, git: Git = Git()) -> str | None:
    """The best common ancestor of two commits (where the branch was cut), or None when
    the history at hand has none (unrelated histories, or a shallow clone cut above it)."""
    result = git.run(repo, "merge-base", "--end-of-options", base, head, check=False)
    sha = result.stdout.decode().strip()
    return sha if result.returncode == 0 and sha else None


@dataclass(frozen=True)
class Merged:
    """What merging `head` into `base` would give: its tree, and the paths that conflict
    (their files in `tree` hold git's conflict markers)."""

    tree: str
    conflicts: tuple[str, ...]


def merge_tree(repo: Path, base: str, head: str, *, git: Git = Git()) -> Merged:
    """The merge of two commits, made in the object database only (`git merge-tree
    --write-tree`, git 2.38+): no work tree, index or ref is touched."""
    result = git.run(repo, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages",
                     "--end-of-options", base, head, check=False)
    fields = [f for f in result.stdout.split(b"\x00") if f]
    if result.returncode not in (0, 1) or not fields:
        message = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git merge-tree failed in {repo}: {message[-1] if message else 'no output'}"
                       " (flipgate needs git 2.38 or later)")
    return Merged(tree=fields[0].decode().strip(),
                  conflicts=tuple(sorted({_path_text(p) for p in fields[1:]})))


def merge_commit(repo: Path, tree: str, parents: tuple[str, str], *, git: Git = Git()) -> str:
    """A commit of a merged tree with both parents, so the pipeline reads it like any ref.
    No ref names it; the identity and time are fixed, so one merge is one commit."""
    return git.run(repo, "commit-tree", "-p", parents[0], "-p", parents[1],
                   "-m", "flipgate: the pull request merged into its base",
                   "--end-of-options", tree, extra_env=_SNAPSHOT_IDENTITY).stdout.decode().strip()


def is_shallow(repo: Path, *, git: Git = Git()) -> bool:
    return git.run(repo, "rev-parse", "--is-shallow-repository", check=False).stdout.strip() == b"true"


def top_level(directory: Path, *, git: Git = Git()) -> Path:
    """The root of the work tree `directory` is in; InputError (exit 2) when it is in none."""
    result = git.run(directory, "rev-parse", "--show-toplevel", check=False)
    if result.returncode != 0 or not result.stdout.strip():
        raise InputError(f"{directory} is not a git repository (run `git init` there first)")
    return Path(result.stdout.decode("utf-8", "surrogateescape").strip())


def index_tree(repo: Path, *, git: Git = Git()) -> str:
    """A tree object of what the index holds (`git write-tree`): the tracked files as
    they would be committed, readable with `read` before any commit exists."""
    return git.run(repo, "write-tree").stdout.decode().strip()


def tree_paths(repo: Path, tree: str, *, git: Git = Git()) -> list[str]:
    """Every file path of a tree or commit, sorted."""
    result = git.run(repo, "ls-tree", "-r", "-z", "--name-only", "--full-tree", "--end-of-options", tree)
    return sorted(_path_text(p) for p in result.stdout.split(b"\x00") if p)


def tree_blobs(repo: Path, sha: str, *, git: Git = Git()) -> dict[str, str]:
    """Every file of a commit, path -> blob id (what its content is, without reading it)."""
    result = git.run(repo, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", sha)
    blobs = {}
    for entry in result.stdout.split(b"\x00"):
        meta, _, path = entry.partition(b"\t")
        if path:
            blobs[_path_text(path)] = meta.split()[-1].decode()
    return blobs


def _path_text(raw: bytes) -> str:
    """A path git listed, as text that can be written anywhere (report.json, a comment).

    git stores names as bytes; one that is not UTF-8 shows its odd bytes as `\\xff`.
    Such a name is never one flipgate reads back (templates and configs name files
    in UTF-8 text), so it only has to match `watch` rules and be shown.
    """
    return raw.decode("utf-8", "backslashreplace")



def export_tree(repo: Path, sha: str, destination: Path, *, git: Git = Git()) -> Path:
    """The files of commit `sha` written under `destination` byte for byte, for a trusted
    command of that commit to run in. Read from the object store (`ls-tree`, then every
    blob in one `cat-file --batch`), never through `git archive`, whose `export-ignore`
    and `export-subst` would let the tree's own `.gitattributes` leave a file out or
    rewrite it. Directories, regular files (0644, or 0755 when committed executable) and
    symbolic links whose target stays inside `destination`; a path that would leave it, a
    link that points out and a submodule's content are left out, not errors, so one stray
    entry does not stop the command that needs the rest."""
    listing = git.run(repo, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", sha).stdout
    entries = []
    for record in listing.split(b"\x00"):
        meta, _, raw = record.partition(b"\t")
        fields = meta.split()
        if len(fields) == 3 and (name := _export_name(raw)) is not None:
            entries.append((fields[0].decode(), fields[1].decode(), fields[2].decode(), name))
    blobs = [oid for _, kind, oid, _ in entries if kind == "blob"]
    contents = _blobs(git.run(repo, "cat-file", "--batch",
                              stdin="".join(f"{oid}\n" for oid in blobs).encode()).stdout)
    destination.mkdir(parents=True, exist_ok=True)
    top = os.path.realpath(destination)
    links = []
    for mode, kind, oid, name in entries:
        target = os.path.join(top, name)
        if kind == "commit":        # a submodule: its directory, as git archive leaves it
            os.makedirs(target, exist_ok=True)
        elif kind == "blob" and mode == "120000":
            links.append((target, contents.get(oid, b"")))
        elif kind == "blob" and oid in contents:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                                 0o755 if mode == "100755" else 0o644)
            with os.fdopen(descriptor, "wb") as out:
                out.write(contents[oid])
    # Links last: no file is ever written through one.
    for target, link in links:
        text = os.fsdecode(link)
        if text and not os.path.isabs(text) and "\x00" not in text and not os.path.lexists(target):
            landing = os.path.realpath(os.path.join(os.path.dirname(target), text))
            if os.path.commonpath([top, landing]) == top:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.symlink(text, target)
    return destination


def _export_name(raw: bytes) -> str | None:
    """A tree path as a relative path of plain parts, or None (`..`, `.`, empty, `.git`)."""
    parts = os.fsdecode(raw).split("/")
    if any(part in ("", ".", "..") or part.lower() == ".git" for part in parts):
        return None
    return os.path.join(*parts)


def _blobs(batch: bytes) -> dict[str, bytes]:
    """`git cat-file --batch` output: object id -> content, for each object found."""
    found, at = {}, 0
    while at < len(batch):
        end = batch.index(b"\n", at)
        header = batch[at:end].split()
        at = end + 1
        if len(header) != 3:        # "<oid> missing"
            continue
        size = int(header[2])
        found[header[0].decode()] = batch[at:at + size]
        at += size + 1
    return found


# The identity and time of a working-tree snapshot: fixed, so the same files make the same
# commit (and the same label in messages) run after run.
_SNAPSHOT_IDENTITY = {
    "GIT_AUTHOR_NAME": "flipgate", "GIT_AUTHOR_EMAIL": "flipgate@localhost",
    "GIT_COMMITTER_NAME": "flipgate", "GIT_COMMITTER_EMAIL": "flipgate@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}


def head_commit(repo: Path, *, git: Git = Git()) -> str | None:
    """The commit checked out (HEAD), or None in a repository without one."""
    result = git.run(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    sha = result.stdout.decode().strip()
    return sha if result.returncode == 0 and sha else None


def snapshot_worktree(repo: Path, *, git: Git = Git()) -> str:
    """A commit of the working tree as `git add -A` would stage it (uncommitted edits and
    new files that .gitignore does not exclude), whose parent is HEAD, for the pipeline to
    read like any ref. It is staged into a temporary copy of the index (GIT_INDEX_FILE), so
    the user's index, HEAD and branches stay as they were; no ref names the commit, and
    git's garbage collection removes it in time."""
    import shutil
    import tempfile

    top = top_level(repo, git=git)
    real = Path(git.run(top, "rev-parse", "--git-path", "index").stdout.decode("utf-8", "surrogateescape")
                .strip())
    real = real if real.is_absolute() else top / real
    with tempfile.TemporaryDirectory(prefix="flipgate-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if real.is_file():
            shutil.copyfile(real, index["GIT_INDEX_FILE"])  # its stat cache spares re-hashing
        git.run(top, "add", "-A", "--", ":/", extra_env=index)
        tree = git.run(top, "write-tree", extra_env=index).stdout.decode().strip()
    parent = head_commit(top, git=git)
    return git.run(top, "commit-tree", *(["-p", parent] if parent else []),
                   "-m", "flipgate: the working tree, uncommitted edits included",
                   "--end-of-options", tree, extra_env=_SNAPSHOT_IDENTITY).stdout.decode().strip()


def uncommitted_paths(repo: Path, *, git: Git = Git()) -> list[str]:
    """Paths whose working-tree state differs from HEAD's: modified, staged, deleted, or new
    and not ignored (`git status`, which writes nothing), repository-relative."""
    result = git.run(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all",
                     "--no-renames", "--ignore-submodules=all")
    return sorted({_path_text(record[3:]) for record in result.stdout.split(b"\x00")
                   if len(record) > 3})

