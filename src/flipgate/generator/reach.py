"""Why the application's code could not start or install, said in one line a person can act on.

The code runs as `confine.command_account()`: as root, an unprivileged account that may not
enter a directory only its owner may (a virtualenv under /root, pyenv's shims); as a user, the
user. What an install with `pip install --user` meets (a virtualenv, a Python marked
externally managed by PEP 668) is named with the install that works everywhere.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from flipgate.config.starter import SETUP_INSTALL, SITE_DIRECTORY
from flipgate.confine import describe_account

# What pip prints when `--user` cannot work there.
_USER_INSTALL_REFUSALS = ("externally-managed-environment", "user site-packages are not visible")


def resolve(program: str, path: str | None) -> Path | None:
    """The file `program` names: itself with a slash, else the first of that name on `path`."""
    if "/" in program:
        return Path(program)
    for directory in (path or os.defpath).split(os.pathsep):
        candidate = Path(directory or ".") / program
        if candidate.exists():
            return candidate
    return None


def private_part(path: Path) -> Path | None:
    """The first directory on the way to `path` (or to the file a link names) that other
    accounts may not enter, or the file itself when they may not run it."""
    for chain in (path.absolute(), path.resolve()):
        for directory in reversed(chain.parents):
            if not _others_may(directory, stat.S_IXOTH):
                return directory
        if chain.exists() and not _others_may(chain, stat.S_IXOTH):
            return chain
    return None


def _others_may(path: Path, bit: int) -> bool:
    try:
        return bool(path.stat().st_mode & bit)
    except OSError:
        return True   # not ours to judge: the start's own error says it


def start_failure(what: str, program: str, error: OSError, *, env: Mapping[str, str],
                  account: int | None) -> str:
    """The line for a program that would not start: which account tried, what stood in
    its way, and what to name instead."""
    line = f"cannot start {what}{program!r}: {error.strerror}"
    target = resolve(program, env.get("PATH"))
    if target is None:
        return (f"{line} (not found on the PATH the command receives: name it by its full path, "
                "e.g. /usr/bin/python3)")
    blocked = private_part(target) if account is not None else None
    if blocked is None:
        return f"{line} ({target}; it runs as {describe_account(account)})"
    real = target.resolve()
    link = f", which links to {real}" if real != target.absolute() else ""
    return (f"{line}: it runs as {describe_account(account)}, and that account may not "
            f"reach {target}{link} ({blocked} is private to its owner); name an interpreter it can "
            f"run in generator.command and generator.setup: a system one such as "
            f"/usr/bin/python3, or a venv outside {blocked}")


def setup_hint(last_words: str) -> str:
    """Advice for a line of a failed `setup`: pip refusing a `--user` install, or a Python
    without pip."""
    if "no module named pip" in last_words.lower():
        return (" (this Python has no pip: install your distribution's python3-pip, or name "
                "a venv's python in generator.command and generator.setup)")
    if not any(refusal in last_words.lower() for refusal in _USER_INSTALL_REFUSALS):
        return ""
    return (f" (pip install --user works neither in a venv nor on a Python marked externally "
            f"managed (PEP 668): install with `python3 {SETUP_INSTALL} -r requirements.txt`; "
            f"flipgate puts {SITE_DIRECTORY} on the command's PYTHONPATH)")


def python_environment(env: Mapping[str, str], work: Path) -> dict[str, str]:
    """The command's variables for Python: unbuffered output unless `env` passes its own
    PYTHONUNBUFFERED, and the copy's `SITE_DIRECTORY` first on PYTHONPATH."""
    site = str(work / SITE_DIRECTORY)
    listed = env.get("PYTHONPATH")
    return {**env, "PYTHONUNBUFFERED": env.get("PYTHONUNBUFFERED", "1"),
            "PYTHONPATH": site + (os.pathsep + listed if listed else "")}
