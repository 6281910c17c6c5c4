"""Cancelled is not pending: SIGTERM or SIGINT ends the action at once, saying so.

When a job is cancelled (or times out) the runner sends SIGINT, then SIGTERM
7.5 s later, then kills the process 2.5 s after that. A run left to die keeps
its commit status `pending`, and a required check then blocks the pull request
until someone reruns the job. So the first signal is handled on the spot, not
by unwinding the run (an event loop waiting on a hung provider, a thread pool
joining its workers, could outlast the grace period): the status of the head
being evaluated becomes `error` with a description saying the run was
cancelled, the summary and the `conclusion` output say so, and the process
exits 3. The GitHub call gets `STATUS_BUDGET` seconds on a fresh connection
(the run's own may be mid-request); later signals are ignored meanwhile.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import NoReturn

from flipgate.confine import end_all_groups
from flipgate.errors import EXIT_INCOMPLETE

SIGNALS = (signal.SIGTERM, signal.SIGINT)
STATUS_BUDGET = 1.5  # seconds for the `error` status, well inside the runner's 2.5 s


def _exit_now(code: int) -> NoReturn:
    os._exit(code)


@dataclass
class Cancellation:
    """What to do when the run is cancelled: `report(signal_name)` once, then exit 3.

    `report` is set by whoever knows what was started (the head whose status is
    pending); until then a signal only ends the process."""

    report: Callable[[str], None] | None = None
    exit: Callable[[int], NoReturn] = _exit_now
    fired: bool = field(default=False, init=False)

    def handle(self, signum: int, frame: FrameType | None = None) -> None:
        if self.fired:
            return
        self.fired = True
        try:
            if self.report is not None:
                self.report(signal.Signals(signum).name)
        except BaseException:  # noqa: BLE001 - nothing may stop the exit
            pass
        finally:
            end_all_groups()   # the application's code (generator.command) ends with the run
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, RuntimeError, ValueError):
                    pass
            self.exit(EXIT_INCOMPLETE)


@contextmanager
def handled(cancellation: Cancellation) -> Iterator[Cancellation]:
    """SIGTERM and SIGINT go to `cancellation` while inside (main thread only: elsewhere
    Python cannot take signals, and the caller's handlers stand)."""
    if threading.current_thread() is not threading.main_thread():
        yield cancellation
        return
    previous = {signum: signal.signal(signum, cancellation.handle) for signum in SIGNALS}
    try:
        yield cancellation
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def within(seconds: float, call: Callable[[], object]) -> bool:
    """Run `call` in a thread of its own for at most `seconds`; True if it finished."""
    done = threading.Event()

    def run() -> None:
        try:
            call()
        except BaseException:  # noqa: BLE001 - a failure here is the same as no answer
            pass
        finally:
            done.set()

    threading.Thread(target=run, daemon=True, name="flipgate-cancel").start()
    return done.wait(seconds)
