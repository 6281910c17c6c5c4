"""Paths closed to every other account while a confined command runs: the runner's
workspace (its `.git/config` may hold the checkout's credential), the reply cache, the
runner's command files. A runner leaves them world-readable (0755 directories, 0644 files),
so an account of no group of theirs could still read them; while closed, "other" has no
permission on them at all, and the mode each had is given back when the last holder leaves,
or by `reopen_all` when flipgate is stopped by a signal.

Only root closes anything (it alone starts the command as another account); the owner of a
path (the runner's user) keeps every permission it had.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

_OTHERS = 0o007
_LOCK = threading.Lock()
_CLOSED: dict[str, tuple[int, int]] = {}   # real path -> (mode it had, holders)


def _closable(path: str) -> bool:
    """Whether closing `path` keeps flipgate's own scratch directories reachable: never the
    root, nor a directory the temporary directory (where each copy of the code is) is in."""
    scratch = os.path.realpath(tempfile.gettempdir())
    return path != "/" and os.path.commonpath([path, scratch]) != path


def _close(path: str) -> bool:
    with _LOCK:
        if path in _CLOSED:
            mode, holders = _CLOSED[path]
            _CLOSED[path] = (mode, holders + 1)
            return True
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
            os.chmod(path, mode & ~_OTHERS)
        except OSError:
            return False
        _CLOSED[path] = (mode, 1)
        return True


def _open(path: str) -> None:
    with _LOCK:
        mode, holders = _CLOSED[path]
        if holders > 1:
            _CLOSED[path] = (mode, holders - 1)
            return
        del _CLOSED[path]
        with contextlib.suppress(OSError):
            os.chmod(path, mode)


@contextlib.contextmanager
def closed_to_others(paths: Iterable[Path]) -> Iterator[None]:
    """While inside, each existing path (file or directory) grants nothing to "other"."""
    real = {os.path.realpath(path) for path in paths}
    taken = [path for path in sorted(real) if _closable(path) and _close(path)]
    try:
        yield
    finally:
        for path in taken:
            _open(path)


def reopen_all() -> None:
    """Give every closed path its mode back: flipgate is being stopped by a signal, and an
    exit by signal runs no `finally`."""
    with _LOCK:
        closed = dict(_CLOSED)
        _CLOSED.clear()
    for path, (mode, _) in closed.items():
        with contextlib.suppress(OSError):
            os.chmod(path, mode)
