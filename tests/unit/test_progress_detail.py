"""Progress lines in CI carry the run's current concurrency and 429 count."""

from __future__ import annotations

import io

from flipgate.llm.budget import Budget
from flipgate.llm.pacing import Limiter
from flipgate.llm.runtime import Runtime
from flipgate.output.progress import PeriodicLines


def test_each_line_shows_the_limit_in_force_and_the_429s() -> None:
    now = [0.0]
    stream = io.StringIO()
    lines = PeriodicLines(stream=stream, every=0, clock=lambda: now[0])  # no ticker: one line at close
    limiter = Limiter(limit=8, clock=lambda: now[0])
    Runtime(limiter=limiter, budget=Budget(), progress=lines)  # wires the detail in
    lines.add(10)
    now[0] = 1.0
    limiter.throttled(sent_at=0.5, headers={"retry-after-ms": "1"})
    now[0] = 6.0
    lines.advance(3)
    lines.close()
    # i10's per-phase line with i11's detail in it; the ETA stays last.
    assert stream.getvalue().splitlines() == [
        "flipgate: judging 3/10 · concurrency 4/8, 429s 1 · 6s elapsed · ETA 14s (judging)",
    ]
