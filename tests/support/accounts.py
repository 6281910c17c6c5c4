"""What a confined command (the retriever, the application's code) can reach. Run as root
(the action's container), flipgate runs it as an account of its own, which may not enter
root's private directories: pytest's tmp_path, or a virtualenv under /root."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path


def command_python() -> str:
    """A Python interpreter any account may run (the system one when there is one)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def shared_directory() -> Path:
    """A fresh directory every account may write to (the caller removes it)."""
    path = Path(tempfile.mkdtemp(prefix="flipgate-shared-"))
    path.chmod(0o1777)
    return path


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, killed but not reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"
