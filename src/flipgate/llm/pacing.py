"""How fast a run may ask: one adaptive concurrency limit and the provider's own pacing.

The `Limiter` is shared by every model call of a run. It hands out slots
(requests in flight) under a limit that moves between 1 and the configured
maximum: halved when the provider answers 429 (at most once per round trip:
only a request sent after the last cut can cut again), and grown back by one
after each window of as many successes as the current limit (AIMD).

Not every 429 is about the client's rate. `classify_429` tells the two apart:
a 429 whose `x-ratelimit-remaining-*` headers say a window is spent, or that
comes among many other 429s, is the run's own rate (`OWN_RATE`): the limit is
cut and new sends pause. A 429 with capacity left and successes around it is
a hiccup (`HICCUP`): only that request waits for its `Retry-After`, outside
its slot, and the rest of the run goes on at full speed.

Waiting never holds a slot. An own-rate 429's `Retry-After` (or
`x-ratelimit-reset-*`, or a short backoff when the provider says nothing)
pauses new sends for the whole run, and `x-ratelimit-remaining-*` headers pace
sends before the provider has to refuse any: no requests left means wait for
the reset, few left means space the sends at the provider's refill rate.

The header readers below are pure functions; the limiter takes its clock as
an argument so its decisions can be tested without sleeping.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import re
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from flipgate.config.schema import DEFAULT_CONCURRENCY, DEFAULT_MAX_WAIT
from flipgate.errors import IncompleteError
from flipgate.text.escaping import one_line, shorten

# When a 429 says nothing about when to come back: short first, doubling, capped.
BACKOFF_FIRST = 0.25
BACKOFF_MAX = 8.0
# Sends are spaced this much wider than the refill rate the headers suggest.
PACING_MARGIN = 1.1
# A provider's reset hint is trusted only up to this long (a broken header must not park the run).
LONGEST_PAUSE = 120.0

_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|h|m|s)")
_PLAIN_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def parse_duration(text: str | None) -> float | None:
    """Seconds from an `x-ratelimit-reset-*` value: "1s", "6m0s", "20ms", "1h2m3.5s" or "0.5".
    Only ASCII digits: `nan`, `inf`, `-1`, `1e9`, `1_000` name no time (None)."""
    if text is None:
        return None
    text = text.strip().lower()
    if _PLAIN_NUMBER.fullmatch(text):
        return float(text)
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + unit for n, unit in parts) != text:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(number) * scale[unit] for number, unit in parts)


def retry_after(headers: Mapping[str, str], *, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    milliseconds = parse_duration(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = parse_duration(value)
    if seconds is not None:
        return seconds
    try:
        moment = email.utils.parsedate_to_datetime(value)
        return max(0.0, moment.timestamp() - now())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


# The headers a provider says when to come back with, as `answered` names them.
WAIT_HEADERS = ("retry-after-ms", "retry-after", "x-ratelimit-reset-requests",
                "x-ratelimit-reset-tokens")


def answered(headers: Mapping[str, str]) -> str:
    """The wait headers a reply carried, as received (on one line, cut short: they are the
    provider's text), for the line that says why a request stopped; "" when none."""
    named = [f'{name} "{shorten(one_line(value), 60)}"' for name in WAIT_HEADERS
             if (value := headers.get(name)) is not None]
    return ", ".join(named)


def _number(headers: Mapping[str, str], name: str) -> float | None:
    try:
        value = float(headers.get(name, ""))
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


@dataclass(frozen=True)
class Window:
    """One `x-ratelimit-*` family ("requests" or "tokens") as a reply reported it."""

    limit: float | None
    remaining: float
    reset: float | None  # seconds until the window is full again

    @property
    def refill_rate(self) -> float | None:
        """Units per second the provider gives back, when the headers say enough to know."""
        if self.limit is None or self.reset is None or self.reset <= 0 or self.remaining >= self.limit:
            return None
        return (self.limit - self.remaining) / self.reset


def rate_window(headers: Mapping[str, str], unit: str) -> Window | None:
    remaining = _number(headers, f"x-ratelimit-remaining-{unit}")
    if remaining is None:
        return None
    return Window(limit=_number(headers, f"x-ratelimit-limit-{unit}"), remaining=remaining,
                  reset=parse_duration(headers.get(f"x-ratelimit-reset-{unit}")))


def provider_wait(headers: Mapping[str, str]) -> float | None:
    """Seconds a 429 says its limit needs to lift, uncapped: `Retry-After` (or
    `retry-after-ms`), else the spent window's `x-ratelimit-reset-*`; None when it says nothing."""
    told = retry_after(headers)
    if told is None:
        resets = [w.reset for unit in ("requests", "tokens")
                  if (w := rate_window(headers, unit)) is not None and w.remaining <= 0
                  and w.reset is not None]
        told = max(resets) if resets else None
    return told


def rate_limit_pause(headers: Mapping[str, str], *, streak: int) -> float:
    """How long a 429 asks the whole run to hold off: the provider's word, else a backoff."""
    told = provider_wait(headers)
    if told is not None:
        return min(told, LONGEST_PAUSE)
    backoff = min(BACKOFF_FIRST * 2 ** min(streak, 16), BACKOFF_MAX)
    return backoff * (0.75 + 0.25 * random.random())


class PauseTooLong(IncompleteError):
    """The provider's pacing would hold a request longer than `judge.max_wait`: the run
    stops (exit 3) rather than outlive the job that runs it."""


# Whose 429 it is (see `classify_429`).
OWN_RATE, HICCUP = "own_rate", "hiccup"
# A 429 is judged among the run's last RECENT_OUTCOMES outcomes: more than STORM of them
# refused (this one included) is the run's own rate. A provider that refuses one request
# in ten at random stays under it for all but about one 429 in 85 (8 or more refusals among
# the 32 outcomes before it), and a run that outgrows its provider's rate gets there within
# a few round trips.
RECENT_OUTCOMES = 32
STORM = 8


def classify_429(headers: Mapping[str, str], recent: Sequence[bool]) -> str:
    """`OWN_RATE` or `HICCUP` for a 429, from its headers and the run's recent outcomes
    (`recent`: True for a success, False for a 429, oldest first).

    Own rate: a rate-limit window the headers report is spent (remaining 0); or more
    than `STORM` of the recent outcomes, this one included, are 429s; or the reply
    has no rate headers and no recent success says the provider is taking requests.
    Anything else (capacity left, successes around it) is a hiccup.
    """
    windows = [w for unit in ("requests", "tokens") if (w := rate_window(headers, unit)) is not None]
    if any(w.remaining <= 0 for w in windows):
        return OWN_RATE
    window = list(recent)[-RECENT_OUTCOMES:]
    if window.count(False) + 1 > STORM:
        return OWN_RATE
    if not windows and True not in window:
        return OWN_RATE
    return HICCUP


def hiccup_pause(headers: Mapping[str, str], *, attempt: int) -> float:
    """How long one request waits after a hiccup: its `Retry-After`, else a short backoff."""
    told = retry_after(headers)
    if told is not None:
        return min(told, LONGEST_PAUSE)
    return rate_limit_pause({}, streak=attempt)


@dataclass(frozen=True)
class Throttle:
    """What a 429 asks: `pause` seconds, for the whole run (`OWN_RATE`: the limiter
    holds every new send) or for the refused request alone (`HICCUP`: its sender
    waits, outside its slot)."""

    kind: str
    pause: float

    @property
    def shared(self) -> bool:
        return self.kind == OWN_RATE


@dataclass
class Limiter:
    """The run's shared, adaptive concurrency limit (see the module docstring)."""

    limit: int = DEFAULT_CONCURRENCY  # the configured maximum
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    # The longest a request may be held before it is sent (`judge.max_wait`), whatever
    # the provider's headers ask: a 429's pause, or pacing from a 200's remaining count.
    max_pause: float = DEFAULT_MAX_WAIT
    current: int = 0  # the limit in force now, 1..limit
    active: int = 0
    peak: int = 0
    rate_limited: int = 0  # 429 replies seen
    hiccups: int = 0  # of them, those taken for the provider's own hiccup (no pause for the run)
    lowest: int = 0  # the lowest `current` reached
    resume_at: float = 0.0  # no new request starts before this
    # When the last 429 said its limit lifts (seconds since the epoch, uncapped), for the
    # advice of a run it stops (run/stopped.py); None: no 429 said.
    lifts_at: float | None = None
    wall: Callable[[], float] = field(default=time.time, repr=False)
    spacing: float = 0.0  # seconds between request starts while the provider is nearly out
    _next_start: float = 0.0
    _last_cut: float = -math.inf
    _streak: int = 0
    _successes: int = 0
    _waiters: deque[asyncio.Future[None]] = field(default_factory=deque, repr=False)
    _recent: deque[bool] = field(default_factory=lambda: deque(maxlen=RECENT_OUTCOMES), repr=False)

    def __post_init__(self) -> None:
        self.limit = max(1, self.limit)
        self.current = self.current or self.limit
        self.lowest = self.lowest or self.current

    # -- slots

    async def acquire(self) -> float:
        """Wait for a slot (never holding one while waiting); returns the send time.

        The provider's pauses this request has waited out, and the one ahead of it, may
        add up to `max_pause` at most: past it, `PauseTooLong` (a schedule of sends spaced
        wider than the job can afford is refused, not followed)."""
        held = 0.0
        while True:
            now = self.clock()
            start = max(self.resume_at, self._next_start if self.spacing else 0.0)
            if start > now and held + (start - now) > self.max_pause:
                raise PauseTooLong(
                    "the provider's rate-limit headers would hold a request "
                    f"{held + start - now:.0f} s, longer than judge.max_wait "
                    f"({self.max_pause:g} s): the run stops rather than outlive its job")
            if start > now:
                await asyncio.sleep(start - now)
                held += start - now
                continue
            if self.active < self.current:
                self.active += 1
                self.peak = max(self.peak, self.active)
                if self.spacing:
                    # Keep to the schedule: a late start lets the next one come up to half
                    # a slot sooner, but an idle spell never saves up a burst.
                    self._next_start = max(self._next_start, now - self.spacing / 2) + self.spacing
                return now
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif waiter.done() and not waiter.cancelled():
                    self._wake()  # pass on the wake-up this task will not use
                raise

    def release(self) -> None:
        self.active -= 1
        self._wake()

    def _wake(self) -> None:
        free = self.current - self.active
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    # -- what the provider said

    def succeeded(self, headers: Mapping[str, str] | None = None) -> None:
        """A reply came back: grow by one per window of successes, and pace from its headers."""
        self._streak = 0
        self._successes += 1
        self._recent.append(True)
        if self._successes >= self.current and self.current < self.limit:
            self.current += 1
            self._successes = 0
            self._wake()
        if headers:
            self._pace(headers)

    def throttled(self, *, sent_at: float, headers: Mapping[str, str], attempt: int = 0) -> Throttle:
        """A 429. The run's own rate: cut the limit (once per round trip) and pause new
        sends. A hiccup: nothing changes for the run; the pause is the request's alone.
        `attempt`: the request's earlier hiccups, for the backoff when no header says."""
        self.rate_limited += 1
        if (told := provider_wait(headers)) is not None:
            self.lifts_at = self.wall() + told
        kind = classify_429(headers, self._recent)
        self._recent.append(False)
        if kind == HICCUP:
            self.hiccups += 1
            return Throttle(HICCUP, hiccup_pause(headers, attempt=attempt))
        now = self.clock()
        fresh = sent_at >= self._last_cut
        if fresh:
            self.current = max(1, self.current // 2)
            self.lowest = min(self.lowest, self.current)
            self._last_cut = now
            self._successes = 0
        pause = rate_limit_pause(headers, streak=self._streak)
        if fresh:
            self._streak += 1
        self.resume_at = max(self.resume_at, now + pause)
        return Throttle(OWN_RATE, pause)

    def _pace(self, headers: Mapping[str, str]) -> None:
        now = self.clock()
        spacing = 0.0
        for unit in ("requests", "tokens"):
            window = rate_window(headers, unit)
            if window is None:
                continue
            if window.remaining <= 0 and window.reset is not None:
                # Out: wait until one comes back (the reset is when *all* have come back).
                rate = window.refill_rate
                wait = 1.0 / rate if rate else window.reset
                self.resume_at = max(self.resume_at, now + min(wait, LONGEST_PAUSE))
                self.lifts_at = self.wall() + wait
            if unit == "requests" and window.remaining < 2 * self.limit:
                # Nearly out (requests in flight will take some of what is left):
                # send no faster than the provider refills.
                rate = window.refill_rate
                if rate:
                    # A little slower than the estimate: `remaining` is rounded down, so the
                    # estimate runs high.
                    spacing = max(spacing, PACING_MARGIN / rate)
                elif window.reset:
                    spacing = max(spacing, window.reset / max(window.remaining, 1.0))
        self.spacing = min(spacing, LONGEST_PAUSE)

    # -- for progress lines and the report

    def describe(self) -> str:
        hiccups = f", hiccups {self.hiccups}" if self.hiccups else ""
        return f"concurrency {self.current}/{self.limit}, 429s {self.rate_limited}{hiccups}"

    def stats(self) -> dict[str, int]:
        return {"max_concurrency": self.limit, "lowest_concurrency": self.lowest,
                "peak_in_flight": self.peak, "rate_limited": self.rate_limited,
                "hiccups": self.hiccups}
