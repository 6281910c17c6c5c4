"""Progress for long work: a bar on a terminal, a plain line every few seconds in CI."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Protocol, TextIO


class Progress(Protocol):
    def add(self, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def show(self, detail: Callable[[], str]) -> None: ...
    def close(self) -> None: ...


class Silent:
    def add(self, total: int) -> None:
        pass

    def show(self, detail: Callable[[], str]) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class PeriodicLines:
    """For logs (CI): one line every `every` seconds and one at the end."""

    def __init__(self, label: str, *, stream: TextIO | None = None, every: float = 5.0,
                 clock=time.monotonic):
        self.label, self.stream, self.every, self.clock = label, stream or sys.stderr, every, clock
        self.total = self.done = 0
        self.started = self.last = clock()
        self.detail: Callable[[], str] | None = None

    def add(self, total: int) -> None:
        self.total += total

    def show(self, detail: Callable[[], str]) -> None:
        """Add `detail()` (e.g. the current concurrency and 429 count) to every line."""
        self.detail = detail

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = self.clock()
        if now - self.last >= self.every:
            self.last = now
            self._line(now)

    def _line(self, now: float) -> None:
        extra = f", {self.detail()}" if self.detail is not None else ""
        print(f"{self.label}: {self.done}/{self.total} ({now - self.started:.0f}s{extra})",
              file=self.stream, flush=True)

    def close(self) -> None:
        if self.total:
            self._line(self.clock())


class Bar:
    """A rich progress bar, for an interactive terminal."""

    def __init__(self, label: str, *, stream: TextIO | None = None):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        self._progress = RichProgress(TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      TextColumn("{task.fields[detail]}"),
                                      console=Console(file=stream or sys.stderr), transient=True)
        self._task = self._progress.add_task(label, total=0, detail="")
        self._detail: Callable[[], str] | None = None
        self._progress.start()

    def show(self, detail: Callable[[], str]) -> None:
        self._detail = detail

    def add(self, total: int) -> None:
        task = self._progress.tasks[0]
        self._progress.update(self._task, total=(task.total or 0) + total)

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)
        if self._detail is not None:
            self._progress.update(self._task, detail=self._detail())

    def close(self) -> None:
        self._progress.stop()


def for_stream(label: str, stream: TextIO | None = None) -> Progress:
    """A bar when `stream` is a terminal, periodic lines otherwise."""
    stream = stream or sys.stderr
    if stream.isatty():
        return Bar(label, stream=stream)
    return PeriodicLines(label, stream=stream)
