"""Progress lines in CI carry the run's current concurrency and 429 count."""

from __future__ import annotations

import io

from flipgate.budget import Budget
from flipgate.pacing import Limiter
from flipgate.progress import PeriodicLines
from flipgate.runtime import Runtime


def test_each_line_shows_the_limit_in_force_and_the_429s() -> None:
    now = [0.0]
    stream = io.StringIO()
    lines = PeriodicLines("judging", stream=stream, every=5, clock=lambda: now[0])
    limiter = Limiter(limit=8, clock=lambda: now[0])
    Runtime(limiter=limiter, budget=Budget(), progress=lines)  # wires the detail in
    lines.add(10)
    now[0] = 1.0
    limiter.throttled(sent_at=0.5, headers={"retry-after-ms": "1"})
    now[0] = 6.0
    lines.advance(3)
    lines.close()
    assert stream.getvalue().splitlines() == [
        "judging: 3/10 (6s, concurrency 4/8, 429s 1)",
        "judging: 3/10 (6s, concurrency 4/8, 429s 1)",
    ]
