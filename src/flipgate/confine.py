"""Running a command flipgate does not trust with its secrets: the account it runs as (a
fresh one a command, when flipgate is root), this process hidden from it, its whole process
group ended and reaped, and every process of its account ended when it is done.

Shared by the end-to-end retriever (`e2e/retrieval.py`) and the application's own
code as the generator (`generator/command.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

# When flipgate runs as root (the action's container) each command runs as an account of
# its own: a uid (and the same gid) drawn from a range no distribution allocates, named in
# no /etc/passwd or /etc/group, owning no process. No other command, of this run or another
# run on the machine, shares it, so none can read or signal another's processes or files,
# and every process left behind is found by its uid alone (`end_account`).
FRESH_IDS = range(0x40000000, 0x7FFF0000)
ACCOUNT_NAME = "flipgate-code"    # what USER and LOGNAME say a fresh account is called
REAP_SECONDS = 5.0                # how long a killed command's pipes may take to end
END_SECONDS = 5.0                 # how long an account's killed processes may take to go
_PR_SET_DUMPABLE = 4
_LIVE_ACCOUNTS: set[int] = set()   # the fresh accounts of commands not yet done


def _named_ids() -> set[int]:
    """Every uid and gid /etc/passwd and /etc/group name."""
    named = set()
    for table, column in (("/etc/passwd", 2), ("/etc/group", 2)):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text(encoding="utf-8", errors="replace").splitlines():
                fields = line.split(":")
                if len(fields) > column and fields[column].isdigit():
                    named.add(int(fields[column]))
    return named


def _ids(pid: str) -> tuple[set[int], bool] | None:
    """The uids (real, effective, saved, filesystem) of a process, and whether it still runs
    (not a zombie); None when it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(errors="replace")
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    uids = {int(value) for value in fields.get("Uid", "").split()}
    return uids, not fields.get("State", "").strip().startswith(("Z", "X"))


def _processes() -> list[str]:
    try:
        return [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return []


def command_account() -> int | None:
    """The uid (and gid) a command runs as: a fresh one (`FRESH_IDS`) when this process is
    root, else None (this process's own, which `hide_this_process` guards)."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        return None
    taken = _named_ids()
    for pid in _processes():
        found = _ids(pid)
        if found is not None:
            taken |= found[0]
    while True:
        uid = FRESH_IDS.start + secrets.randbelow(len(FRESH_IDS))
        if uid not in taken:
            return uid


def account_variables(uid: int | None) -> dict[str, str]:
    """USER and LOGNAME for a command run as fresh account `uid`, which has no passwd entry
    (so `getpass.getuser()` and the like find a name); nothing for this process's own."""
    return {} if uid is None else {"USER": ACCOUNT_NAME, "LOGNAME": ACCOUNT_NAME}


def _alive_of(uid: int) -> list[int]:
    alive = []
    for pid in _processes():
        found = _ids(pid)
        if found is not None and uid in found[0] and found[1]:
            alive.append(int(pid))
    return alive


def _kill_pid(pid: int, uid: int) -> None:
    """SIGKILL `pid` if it is still a process of `uid`: opened as a pidfd first, so a pid
    reused by another process between the listing and the kill is never signalled."""
    try:
        handle = os.pidfd_open(pid)
    except OSError:
        return
    try:
        found = _ids(str(pid))
        if found is not None and uid in found[0]:
            signal.pidfd_send_signal(handle, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(handle)


def end_account(uid: int) -> list[int]:
    """SIGKILL every process of account `uid` until none runs, `setsid` and double-forked
    daemons included: they are found by their uid, not by a group they may have left.
    Bounded by `END_SECONDS`; returns what still runs then (a process stuck in the kernel)."""
    _LIVE_ACCOUNTS.discard(uid)
    deadline = time.monotonic() + END_SECONDS
    while (alive := _alive_of(uid)) and time.monotonic() < deadline:
        for pid in alive:
            _kill_pid(pid, uid)
        time.sleep(0.002)   # a killed process takes a moment to become a zombie
    return alive


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
    """Hand a directory (a command's cwd, HOME or TMPDIR) to `uid` alone (no other account
    may enter it), and let `uid` reach it (its parent may be entered, not listed)."""
    os.chmod(path.parent, 0o711)
    for root, dirs, files in os.walk(path):
        os.chown(root, uid, uid)
        for name in (*dirs, *files):
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)
    os.chmod(path, 0o700)


@contextlib.contextmanager
def account_ended(uid: int | None) -> Iterator[None]:
    """While inside, `uid` is a command's account; at the end, every process of it is ended
    (and by `end_all_groups` when flipgate is stopped)."""
    if uid is None:
        yield
        return
    _LIVE_ACCOUNTS.add(uid)
    try:
        yield
    finally:
        end_account(uid)
        remove_left_behind(uid)


# The directories every account may write in: where a command could leave a file at a fixed
# path for a command of the next ref or suite to read.
SHARED_TEMPORARY = ("/tmp", "/var/tmp", "/dev/shm")


def remove_left_behind(uid: int) -> None:
    """Remove what account `uid` left at the top of the shared temporary directories (and
    of this process's own temporary directory): a directory of its own there goes whole.
    Its copy, HOME and TMPDIR are removed with their scratch directory; a world-writable
    directory deeper down (`/tmp/.X11-unix`) is not searched."""
    for top in {*SHARED_TEMPORARY, tempfile.gettempdir()}:
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass


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
    """Kill every command group and account still running, give the paths closed to other
    accounts their modes back, and remove the scratch directories the commands ran in:
    flipgate is being stopped (SIGTERM), a command in a session of its own would not
    hear of it, and an exit by signal runs no `finally`."""
    for group in list(_LIVE_GROUPS):
        _kill(group)
    _LIVE_GROUPS.clear()
    for uid in list(_LIVE_ACCOUNTS):
        end_account(uid)
    reopen_all()
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


# -- the runner's paths, closed to other accounts while a command runs ---------------------
# A runner leaves its workspace (whose `.git/config` may hold the checkout's credential), the
# reply cache and its command files world-readable (0755 directories, 0644 files), so even an
# account of no group of theirs could read them. While closed, "other" has no permission on
# them; the mode each had is given back when the last holder leaves, or by `reopen_all` when
# flipgate is stopped by a signal. Only root closes anything (it alone starts a command as
# another account); the owner of a path (the runner's user) keeps every permission it had.

_OTHERS = 0o007
_LOCK = threading.RLock()   # re-entrant: `reopen_all` may run in a signal handler
_CLOSED: dict[str, tuple[int, int]] = {}   # real path -> (mode it had, holders)


def _closable(path: str) -> bool:
    """Whether closing `path` keeps flipgate's own scratch directories reachable: never the
    root, nor a directory the temporary directory (where each copy of the code is) is in."""
    scratch = os.path.realpath(tempfile.gettempdir())
    return path != "/" and os.path.commonpath([path, scratch]) != path


class ConfinementError(OSError):
    """A path a command must not reach could not be closed to it: the command is not run."""


def _close(path: str) -> bool:
    """Close `path` to other accounts; False when there is no such path."""
    with _LOCK:
        if path in _CLOSED:
            mode, holders = _CLOSED[path]
            _CLOSED[path] = (mode, holders + 1)
            return True
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise ConfinementError(f"cannot close {path} to the code's account: "
                                   f"{exc.strerror}") from None
        try:
            os.chmod(path, mode & ~_OTHERS)
        except OSError as exc:
            raise ConfinementError(f"cannot close {path} to the code's account: "
                                   f"{exc.strerror}") from None
        _CLOSED[path] = (mode, 1)
        return True


def _open(path: str) -> None:
    with _LOCK:
        if path not in _CLOSED:   # `reopen_all` gave it back already
            return
        mode, holders = _CLOSED[path]
        if holders > 1:
            _CLOSED[path] = (mode, holders - 1)
            return
        del _CLOSED[path]
        with contextlib.suppress(OSError):
            os.chmod(path, mode)


@contextlib.contextmanager
def closed_to_others(paths: Iterable[Path]) -> Iterator[None]:
    """While inside, each existing path (file or directory) grants nothing to "other". One
    that cannot be closed is a ConfinementError, raised before anything runs (what was
    closed is given back first): the command is never run beside a path left open."""
    taken: list[str] = []
    try:
        for path in sorted({os.path.realpath(path) for path in paths}):
            if _closable(path) and _close(path):
                taken.append(path)
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
