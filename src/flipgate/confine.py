"""Running a command flipgate does not trust with its secrets: the account it runs as,
this process hidden from it, and its whole process group ended and reaped.

Shared by the end-to-end retriever (`e2e/retrieval.py`) and the application's own
code as the generator (`generator/command.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

# The account the command runs as when flipgate runs as root (the action's container):
# "nobody", which can read no process of flipgate's, nor any file only root may read.
UNPRIVILEGED_ID = 65534
REAP_SECONDS = 5.0                # how long a killed command's pipes may take to end
_PR_SET_DUMPABLE = 4


def command_account() -> int | None:
    """The uid (and gid) a command runs as: an unprivileged one when this process is
    root, else None (this process's own, which `hide_this_process` guards)."""
    return UNPRIVILEGED_ID if hasattr(os, "geteuid") and os.geteuid() == 0 else None


def describe_account(uid: int | None) -> str:
    """Which account a command runs as, and why, in words a message can carry."""
    if uid is None:
        return "your own account (flipgate does not run as root)"
    return f"an unprivileged account (uid {uid}), because flipgate runs as root"


def hide_this_process() -> None:
    """Make this process non-dumpable, so no other process of the same uid (the command)
    may read its /proc/PID/environ, mem or fds, where the model key is. Linux only;
    elsewhere a no-op. Children regain dumpability at exec, so nothing else changes."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def give_to(path: Path, uid: int) -> None:
    """Hand a directory (a command's cwd or HOME) to `uid`, and let it reach it (its
    parent may be entered, not listed)."""
    os.chmod(path.parent, 0o711)
    for root, dirs, files in os.walk(path):
        os.chown(root, uid, uid)
        for name in (*dirs, *files):
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


# The process groups of commands still running: what a signal to flipgate must end.
_LIVE_GROUPS: set[int] = set()
_SCRATCH: set[Path] = set()   # scratch directories to remove if flipgate is stopped


async def start(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], run_as: int | None,
                stdin: int | None = asyncio.subprocess.PIPE,
                stderr: int = asyncio.subprocess.PIPE, **options: Any) -> asyncio.subprocess.Process:
    """Start an untrusted command in a process group of its own (one kill ends all of it), as
    `run_as` when given, and remember the group until `kill_group` ends it, so that a signal
    to flipgate ends it too (`end_all_groups`)."""
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=dict(env), stdin=stdin, stdout=asyncio.subprocess.PIPE,
        stderr=stderr, start_new_session=True, user=run_as, group=run_as,
        extra_groups=[] if run_as is not None else None, **options)
    _LIVE_GROUPS.add(process.pid)
    return process


def _kill(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the command's process group (it was started in a session of its own), so
    what it left running behind it ends with it."""
    _LIVE_GROUPS.discard(process.pid)
    _kill(process.pid)


def end_all_groups() -> None:
    """Kill every command group still running and remove the scratch directories they ran
    in: flipgate is being stopped (SIGTERM), a command in a session of its own would not
    hear of it, and an exit by signal runs no `finally`."""
    for group in list(_LIVE_GROUPS):
        _kill(group)
    _LIVE_GROUPS.clear()
    for path in list(_SCRATCH):
        shutil.rmtree(path, ignore_errors=True)
    _SCRATCH.clear()


@contextlib.contextmanager
def scratch_directory(prefix: str) -> Iterator[Path]:
    """A temporary directory removed at the end, and by `end_all_groups` when flipgate is
    stopped while inside (it may hold a ref's code and what that code wrote)."""
    with tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True) as name:
        path = Path(name)
        _SCRATCH.add(path)
        try:
            yield path
        finally:
            _SCRATCH.discard(path)


@contextlib.contextmanager
def groups_end_on_sigterm() -> Iterator[None]:
    """While inside, a SIGTERM that would end this process at once (no handler of its own:
    `flipgate run` in a terminal or CI) first ends the commands' groups. A handler already
    installed (the action's cancellation) stands; it calls `end_all_groups` itself."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        end_all_groups()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, handle)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


async def chunks(stream: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while chunk := await stream.read(65536):
        yield chunk


async def reap(process: asyncio.subprocess.Process) -> None:
    """Wait for the killed command, bounded. What is left in its pipes is read and dropped,
    so they reach their end and `wait` can return (a pipe nobody reads never does); a pipe
    a runaway grandchild still holds is closed after `REAP_SECONDS`."""
    async def drain(stream: asyncio.StreamReader | None) -> None:
        if stream is not None:
            async for _ in chunks(stream):
                pass

    try:
        async with asyncio.timeout(REAP_SECONDS):
            await asyncio.gather(drain(process.stdout), drain(process.stderr))
            await process.wait()
    except TimeoutError:
        transport = getattr(process, "_transport", None)  # asyncio has no public close
        if transport is not None:
            transport.close()
