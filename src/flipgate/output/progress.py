"""Progress for long work: a bar on a terminal, a plain line every 10 seconds in a log.

Work is counted per phase ("generation", "judging"), and each phase's total
is planned before its first request is sent, so `done/total` never grows
under the reader's eyes. A log line also says how many requests and tokens
the run has spent (a `watch`ed callable supplies them) and an ETA from the
pace of the phase under way. The text is flipgate's own (numbers and phase
names), so it can never be read as a workflow command.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TextIO

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

# (requests, tokens) spent so far.
UsageSource = Callable[[], tuple[int, int]]
LOG_EVERY = 10.0  # seconds between two lines in a log
GENERATION, JUDGING = "generation", "judging"  # answers; two steps per row (scoring.py)


class Progress(Protocol):
    def add(self, total: int, phase: str = JUDGING) -> None: ...
    def advance(self, n: int = 1, phase: str = JUDGING) -> None: ...
    def watch(self, usage: UsageSource) -> None: ...
    def show(self, detail: Callable[[], str]) -> None: ...
    def close(self) -> None: ...


class Silent:
    def add(self, total: int, phase: str = JUDGING) -> None:
        pass

    def advance(self, n: int = 1, phase: str = JUDGING) -> None:
        pass

    def watch(self, usage: UsageSource) -> None:
        pass

    def show(self, detail: Callable[[], str]) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass
class Phase:
    name: str
    total: int = 0
    done: int = 0
    started: float | None = None    # when its first unit was planned
    finished: float | None = None

    def eta(self, now: float) -> float | None:
        """Seconds left at the pace so far; None before the first unit is done."""
        if self.started is None or not self.done or self.done >= self.total:
            return None
        rate = self.done / max(now - self.started, 1e-6)
        return (self.total - self.done) / rate


def duration(seconds: float) -> str:
    """`42s`, `3m05s`, `1h02m`: short enough for a log line."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def status_line(phases: list[Phase], *, requests: int, tokens: int, elapsed: float,
                now: float, detail: str | None = None) -> str:
    """One log line: each phase's done/total, requests, tokens, the scheduler's `detail`
    (concurrency in force, 429s), elapsed time and, last, the ETA or `done`."""
    parts = [f"{phase.name} {phase.done:,}/{phase.total:,}" for phase in phases if phase.total]
    if requests or tokens:  # the offline judge sends nothing: no "0 requests" to read
        parts += [f"{requests:,} requests", f"{tokens:,} tokens"]
    if detail:
        parts.append(detail)
    parts.append(f"{duration(elapsed)} elapsed")
    active = next((phase for phase in phases if phase.total and phase.done < phase.total), None)
    if active is None:
        parts.append("done")
    else:
        eta = active.eta(now)
        parts.append(f"ETA {duration(eta)} ({active.name})" if eta is not None
                     else f"ETA unknown ({active.name} starting)")
    return "flipgate: " + " · ".join(parts)


class PeriodicLines:
    """For logs (CI, the Actions job log): one line every `every` seconds while work is
    planned, from a background thread so a slow request cannot silence it, and one at
    the end."""

    def __init__(self, *, stream: TextIO | None = None, every: float = LOG_EVERY,
                 clock: Callable[[], float] = time.monotonic):
        self.stream, self.every, self.clock = stream or sys.stderr, every, clock
        self.phases: dict[str, Phase] = {}
        self.started = clock()
        self._usage: UsageSource = lambda: (0, 0)
        self._detail: Callable[[], str] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, usage: UsageSource) -> None:
        self._usage = usage

    def show(self, detail: Callable[[], str]) -> None:
        """Add `detail()` (e.g. the current concurrency and 429 count) to every line."""
        self._detail = detail

    def add(self, total: int, phase: str = JUDGING) -> None:
        with self._lock:
            current = self.phases.setdefault(phase, Phase(phase))
            if current.started is None:
                current.started = self.clock()
            current.total += total
        self._start_ticking()

    def advance(self, n: int = 1, phase: str = JUDGING) -> None:
        with self._lock:
            current = self.phases.setdefault(phase, Phase(phase))
            current.done += n
            if current.done >= current.total and current.finished is None:
                current.finished = self.clock()

    def line(self) -> str:
        now = self.clock()
        requests, tokens = self._usage()
        with self._lock:
            phases = [Phase(**vars(phase)) for phase in self.phases.values()]
        return status_line(phases, requests=requests, tokens=tokens,
                           elapsed=now - self.started, now=now,
                           detail=self._detail() if self._detail is not None else None)

    def _print(self) -> None:
        print(self.line(), file=self.stream, flush=True)

    def _start_ticking(self) -> None:
        if self._thread is not None or self.every <= 0:
            return
        self._thread = threading.Thread(target=self._tick, name="flipgate-progress", daemon=True)
        self._thread.start()

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self._print()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.phases:
            self._print()


class Bar:
    """Rich progress bars, one per phase, for an interactive terminal. The phase, the count
    and the ETA come first and never shrink; the bar takes what is left of a narrow
    terminal, and the usage text is cut with an ellipsis before anything else is."""

    def __init__(self, *, stream: TextIO | None = None, console: Console | None = None):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress
        from rich.table import Column

        console = console or Console(file=stream or sys.stderr)
        # Phase, count and ETA take about 40 columns; the bar and the usage text share the rest.
        rest = max(console.width - 40, 20)
        self._progress = RichProgress(
            TextColumn("{task.description}", table_column=Column(no_wrap=True)),
            MofNCompleteColumn(table_column=Column(no_wrap=True)),
            TextColumn("ETA", table_column=Column(no_wrap=True)),
            TimeRemainingColumn(table_column=Column(no_wrap=True)),
            BarColumn(bar_width=min(24, rest // 3)),
            TextColumn("{task.fields[usage]}", table_column=Column(
                no_wrap=True, overflow="ellipsis", max_width=rest - min(24, rest // 3) - 2)),
            console=console, transient=True)
        self._tasks: dict[str, object] = {}
        self._usage: UsageSource = lambda: (0, 0)
        self._detail: Callable[[], str] | None = None
        self._progress.start()

    def watch(self, usage: UsageSource) -> None:
        self._usage = usage

    def show(self, detail: Callable[[], str]) -> None:
        self._detail = detail

    def _task(self, phase: str):  # noqa: ANN202 - rich's TaskID
        if phase not in self._tasks:
            self._tasks[phase] = self._progress.add_task(phase, total=0, usage="")
        return self._tasks[phase]

    def add(self, total: int, phase: str = JUDGING) -> None:
        task = self._task(phase)
        current = self._progress.tasks[list(self._tasks).index(phase)].total or 0
        self._progress.update(task, total=current + total)

    def advance(self, n: int = 1, phase: str = JUDGING) -> None:
        requests, tokens = self._usage()
        usage = f"{requests:,} requests · {tokens:,} tokens"
        if self._detail is not None:
            usage += f" · {self._detail()}"
        self._progress.update(self._task(phase), advance=n, usage=usage)

    def renderable(self) -> RenderableType:
        """The bars as the terminal shows them now."""
        return self._progress.make_tasks_table(self._progress.tasks)

    def close(self) -> None:
        self._progress.stop()


def for_stream(stream: TextIO | None = None, *, every: float = LOG_EVERY) -> Progress:
    """Bars when `stream` is a terminal, a line every `every` seconds otherwise."""
    stream = stream or sys.stderr
    if stream.isatty():
        return Bar(stream=stream)
    return PeriodicLines(stream=stream, every=every)
