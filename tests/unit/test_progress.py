"""Progress lines for logs: planned totals, requests, tokens and an ETA, on a ticker."""

from __future__ import annotations

import io
import time

import pytest

from flipgate.output.progress import LOG_EVERY, PeriodicLines, Phase, duration, for_stream, status_line


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (42.4, "42s"), (65, "1m05s"),
                                               (3725, "1h02m")])
def test_durations_read_short(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_a_line_has_each_phase_requests_tokens_and_the_eta_of_the_phase_under_way() -> None:
    phases = [Phase("generation", total=600, done=600, started=0.0, finished=30.0),
              Phase("judging", total=300, done=100, started=30.0)]
    line = status_line(phases, requests=812, tokens=1_234_567, elapsed=50, now=50.0)
    assert line == ("flipgate: generation 600/600 · judging 100/300 · 812 requests · "
                    "1,234,567 tokens · 50s elapsed · ETA 40s (judging)")


def test_before_anything_is_done_the_eta_is_unknown_and_at_the_end_it_says_done() -> None:
    starting = [Phase("generation", total=10, done=0, started=0.0)]
    assert status_line(starting, requests=0, tokens=0, elapsed=1, now=1.0).endswith(
        "ETA unknown (generation starting)")
    finished = [Phase("judging", total=10, done=10, started=0.0)]
    assert status_line(finished, requests=30, tokens=900, elapsed=9, now=9.0).endswith("· done")


def test_totals_are_planned_before_work_and_counted_per_phase() -> None:
    clock = iter(range(100)).__next__
    out = io.StringIO()
    lines = PeriodicLines(stream=out, every=0, clock=lambda: float(clock()))
    lines.watch(lambda: (7, 700))
    lines.add(4, "generation")
    lines.add(2, "judging")
    for _ in range(4):
        lines.advance(1, "generation")
    lines.advance(1, "judging")
    lines.close()
    [line] = out.getvalue().splitlines()  # every=0: no ticker, only the closing line
    assert "generation 4/4 · judging 1/2 · 7 requests · 700 tokens" in line


def test_the_ticker_prints_while_nothing_advances_and_stops_at_close() -> None:
    out = io.StringIO()
    lines = PeriodicLines(stream=out, every=0.05)
    lines.add(3, "judging")
    time.sleep(0.3)  # a slow request: no advance at all meanwhile
    lines.close()
    printed = out.getvalue().splitlines()
    assert len(printed) >= 3 and all("judging 0/3" in line for line in printed)
    after_close = len(out.getvalue())
    time.sleep(0.15)
    assert len(out.getvalue()) == after_close


def test_a_log_gets_a_line_every_ten_seconds() -> None:
    assert LOG_EVERY == 10.0
    progress = for_stream(io.StringIO())
    assert isinstance(progress, PeriodicLines) and progress.every == LOG_EVERY


def test_a_terminal_gets_one_bar_per_phase() -> None:
    from flipgate.output.progress import Bar

    bar = Bar(stream=io.StringIO())
    bar.watch(lambda: (3, 400))
    bar.add(4, "generation")
    bar.add(6, "judging")
    bar.advance(1, "generation")
    bar.advance(2, "judging")
    bar.close()
    assert [(t.description, t.total, t.completed) for t in bar._progress.tasks] == [
        ("generation", 4, 1), ("judging", 6, 2)]


def test_the_bar_keeps_its_count_and_eta_on_an_80_column_terminal() -> None:
    import io

    from rich.console import Console

    from flipgate.output.progress import Bar

    live = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)
    console = Console(file=io.StringIO(), width=80, color_system=None)
    bar = Bar(console=live)
    bar.watch(lambda: (123_456, 98_765_432))
    bar.show(lambda: "concurrency 8/8, 429s 12, paused 3s for the provider's limit")
    try:
        bar.add(2_000, "judging")
        bar.advance(1_234, "judging")
        console.print(bar.renderable())
    finally:
        bar.close()
    import re

    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", console.file.getvalue())
    lines = [line for line in shown.splitlines() if "judging" in line]
    assert lines, shown
    assert all(len(line) <= 80 for line in lines)
    last = lines[-1]  # the live display's first frames come before the counts
    assert "1234/2000" in last and "ETA" in last
    assert "…" in last  # the usage text is what gives way
