"""The adaptive limit's decisions and the rate-limit header readers, on a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from flipgate.llm.pacing import (
    BACKOFF_FIRST,
    HICCUP,
    LONGEST_PAUSE,
    OWN_RATE,
    Limiter,
    answered,
    classify_429,
    hiccup_pause,
    parse_duration,
    rate_limit_pause,
    rate_window,
    retry_after,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("text, seconds", [
    ("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("0.5", 0.5),
    (" 7 ", 7.0), ("", None), ("soon", None), ("5x", None), ("-1", None), (None, None),
    # numbers Python's float() reads, but no provider writes: they name no time
    ("nan", None), ("inf", None), ("-0.5", None), ("1e3", None), ("1_000", None),
    ("\uff15", None), ("\u0665s", None),
])
def test_reset_durations_read_as_openai_writes_them(text, seconds) -> None:
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


@pytest.mark.parametrize("headers, seconds", [
    ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # milliseconds win
    ({"retry-after-ms": "nan", "retry-after": "9"}, 9.0),   # unless they name no time
    ({"retry-after": "3"}, 3.0),
    ({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, 10.0),  # a date, 10 s ahead of `now`
    ({"retry-after": "Wed, 21 Oct 2015 07:28:10"}, 10.0),      # no zone: read as UTC
    ({"retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"}, 0.0),   # a date passed: no wait
    ({"retry-after": "Wed, 03 Dec 2046 22:00:00 GMT"}, 982_074_720.0),  # far: callers bound it
    ({"retry-after": "99999999999999999999"}, 1e20),
    ({"retry-after": "whenever"}, None),
    ({"retry-after": "nan"}, None), ({"retry-after": "-1"}, None), ({"retry-after": "inf"}, None),
    ({"retry-after": "Thu, 01 Jan 99999 00:00:00 GMT"}, None),  # a year no clock reaches
    ({"retry-after": "Wed, 21 Oct 2015 99:99:99 GMT"}, None),
    ({"retry-after": ""}, None),
    ({}, None),
])
def test_retry_after_in_every_form(headers, seconds) -> None:
    now = 1445412480.0  # 07:28:00 GMT that day
    assert retry_after(headers, now=lambda: now) == seconds


def test_a_429_without_any_hint_backs_off_doubling_and_capped() -> None:
    pauses = [rate_limit_pause({}, streak=n) for n in range(10)]
    assert 0.18 <= pauses[0] <= 0.25
    assert all(later > earlier for earlier, later in zip(pauses[:5], pauses[1:6], strict=True))
    assert max(pauses) <= 8.0


def test_a_429_waits_for_the_exhausted_window_to_reset() -> None:
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s",
               "x-ratelimit-remaining-tokens": "100", "x-ratelimit-reset-tokens": "9s"}
    assert rate_limit_pause(headers, streak=0) == 2.0


def test_the_refill_rate_comes_from_limit_remaining_and_reset() -> None:
    window = rate_window({"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0",
                          "x-ratelimit-reset-requests": "3s"}, "requests")
    assert window is not None and window.refill_rate == pytest.approx(20.0)


def test_a_429_halves_the_limit_once_per_round_trip_and_successes_grow_it_back() -> None:
    clock = Clock()
    limiter = Limiter(limit=8, clock=clock)
    early = clock()
    clock.now += 1
    limiter.throttled(sent_at=early, headers={"retry-after-ms": "1"})
    assert limiter.current == 4
    # Requests sent before that cut come back 429 too: no further cut.
    for _ in range(5):
        limiter.throttled(sent_at=early, headers={"retry-after-ms": "1"})
    assert limiter.current == 4
    clock.now += 1
    limiter.throttled(sent_at=clock.now, headers={"retry-after-ms": "1"})
    assert limiter.current == 2
    for _ in range(4):
        limiter.throttled(sent_at=clock.now + 1, headers={})
        clock.now += 2
    assert limiter.current == 1 and limiter.lowest == 1  # never below one
    assert limiter.rate_limited == 11
    # Additive increase: one more slot per window of `current` successes.
    grown = []
    for _ in range(1 + 2 + 3 + 4 + 5 + 6 + 7 + 3):
        limiter.succeeded()
        grown.append(limiter.current)
    assert grown[0] == 2 and grown[2] == 3 and limiter.current == 8
    assert "concurrency 8/8, 429s 11" == limiter.describe()


def test_a_429_pauses_every_new_send_for_the_whole_run() -> None:
    clock = Clock()
    limiter = Limiter(limit=4, clock=clock)
    throttle = limiter.throttled(sent_at=clock(), headers={"retry-after": "2"})
    assert throttle.shared and throttle.pause == 2.0 and limiter.resume_at == clock() + 2


def test_few_requests_left_spaces_the_sends_at_the_refill_rate() -> None:
    clock = Clock()
    limiter = Limiter(limit=8, clock=clock)
    limiter.succeeded({"x-ratelimit-limit-requests": "20", "x-ratelimit-remaining-requests": "17",
                       "x-ratelimit-reset-requests": "0.25s"})
    assert limiter.spacing == 0  # plenty left: no pacing
    limiter.succeeded({"x-ratelimit-limit-requests": "20", "x-ratelimit-remaining-requests": "2",
                       "x-ratelimit-reset-requests": "0.9s"})
    assert limiter.spacing == pytest.approx(0.055)  # 18 back in 0.9 s: 20 a second, and a margin
    limiter.succeeded({"x-ratelimit-limit-requests": "20", "x-ratelimit-remaining-requests": "0",
                       "x-ratelimit-reset-requests": "1s"})
    assert limiter.resume_at == pytest.approx(clock() + 0.05)  # until one request comes back
    limiter.succeeded({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s"})
    assert limiter.resume_at == pytest.approx(clock() + 1.0)  # no limit header: the full reset


def test_waiting_tasks_take_slots_only_up_to_the_current_limit() -> None:
    async def scenario() -> list[int]:
        limiter = Limiter(limit=4)
        seen: list[int] = []

        async def one() -> None:
            async with limiter:
                seen.append(limiter.active)
                await asyncio.sleep(0.01)

        limiter.current = 2
        await asyncio.gather(*(one() for _ in range(10)))
        return seen

    seen = asyncio.run(scenario())
    assert len(seen) == 10 and max(seen) == 2


def test_a_cancelled_waiter_does_not_lose_a_wake_up() -> None:
    async def scenario() -> int:
        limiter = Limiter(limit=1)
        await limiter.acquire()
        first = asyncio.ensure_future(limiter.acquire())
        second = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0)
        limiter.release()  # wakes `first`...
        first.cancel()  # ...which is cancelled before it runs
        await asyncio.wait_for(second, timeout=1)  # `second` still gets the slot
        return limiter.active

    assert asyncio.run(scenario()) == 1


OUT = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0",
       "x-ratelimit-reset-requests": "1s"}
LEFT = {"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "450",
        "x-ratelimit-reset-requests": "1s", "retry-after": "1"}
TOKENS_OUT = {**LEFT, "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "2s"}
CALM = [True] * 20  # successes only
NOISY = ([True] * 9 + [False]) * 3 + [True, True]  # one in ten refused, at random
STORM = [True] * 20 + [False] * 12  # the run has outgrown the provider's rate


@pytest.mark.parametrize("headers, recent, kind", [
    (OUT, CALM, OWN_RATE),             # the headers say a window is spent: whatever came before
    (TOKENS_OUT, CALM, OWN_RATE),      # any window: tokens too
    (LEFT, CALM, HICCUP),              # capacity left, successes around it
    ({"retry-after": "1"}, CALM, HICCUP),  # no rate headers: the success rate decides
    ({"retry-after": "1"}, NOISY, HICCUP),  # one in ten at random is still a hiccup
    (LEFT, NOISY, HICCUP),
    ({"retry-after": "1"}, STORM, OWN_RATE),  # many 429s lately: the run's own rate
    (LEFT, STORM, OWN_RATE),           # capacity in one window does not outvote them
    ({}, [], OWN_RATE),                # no headers, nothing seen yet: the cautious reading
    ({}, [False] * 3, OWN_RATE),       # no headers and no success lately
    ({}, [True], HICCUP),              # a success says the provider takes requests
    (LEFT, [], HICCUP),                # nothing seen yet, but the headers show capacity left
    ({}, [True] * 25 + [False] * 7, HICCUP),   # 8 of the last 33 refused...
    ({}, [True] * 24 + [False] * 8, OWN_RATE),  # ...9 is a storm
    (LEFT, [False] * 8, OWN_RATE),
    ({}, [False] * 40 + [True] * 32, HICCUP),  # only the most recent outcomes count
])
def test_a_429_is_the_runs_own_rate_or_a_hiccup(headers, recent, kind) -> None:
    assert classify_429(headers, recent) == kind


def test_a_hiccup_leaves_the_run_alone_and_waits_for_that_request_only() -> None:
    clock = Clock()
    limiter = Limiter(limit=8, clock=clock)
    for _ in range(10):
        limiter.succeeded()
    throttle = limiter.throttled(sent_at=clock(), headers={"retry-after": "1"})
    assert (throttle.kind, throttle.pause, throttle.shared) == (HICCUP, 1.0, False)
    assert limiter.current == 8 and limiter.resume_at == 0.0
    assert (limiter.rate_limited, limiter.hiccups) == (1, 1)
    assert limiter.describe() == "concurrency 8/8, 429s 1, hiccups 1"
    # Without a Retry-After a hiccup backs off briefly, longer on the request's next one.
    first = limiter.throttled(sent_at=clock(), headers={}, attempt=0)
    assert first.kind == HICCUP and 0.18 <= first.pause <= 0.25
    assert limiter.throttled(sent_at=clock(), headers={}, attempt=3).pause > first.pause


def test_a_429_with_a_spent_window_pauses_the_run_even_among_successes() -> None:
    clock = Clock()
    limiter = Limiter(limit=8, clock=clock)
    for _ in range(10):
        limiter.succeeded()
    throttle = limiter.throttled(sent_at=clock(), headers={**OUT, "retry-after": "1"})
    assert throttle.shared and limiter.current == 4 and limiter.resume_at == clock() + 1.0


@pytest.mark.parametrize("value", ["Wed, 03 Dec 2046 22:00:00 GMT", "99999999999999999999"])
def test_a_far_retry_after_in_any_form_pauses_no_longer_than_the_longest_pause(value) -> None:
    headers = {"retry-after": value}
    assert rate_limit_pause(headers, streak=0) == LONGEST_PAUSE
    assert hiccup_pause(headers, attempt=0) == LONGEST_PAUSE


@pytest.mark.parametrize("value", ["nan", "-1", "inf", "soon", "1_000"])
def test_a_retry_after_naming_no_time_is_a_short_backoff(value) -> None:
    headers = {"retry-after": value}
    assert rate_limit_pause(headers, streak=0) <= BACKOFF_FIRST
    assert hiccup_pause(headers, attempt=0) <= BACKOFF_FIRST


@pytest.mark.parametrize("headers, line", [
    ({"retry-after": "Wed, 03 Dec 2046 22:00:00 GMT"},
     'retry-after "Wed, 03 Dec 2046 22:00:00 GMT"'),
    ({"retry-after-ms": "nan", "x-ratelimit-reset-requests": "6m0s"},
     'retry-after-ms "nan", x-ratelimit-reset-requests "6m0s"'),
    ({"retry-after": "::error::x\u0007" + "y" * 100}, 'retry-after "::error::x' + "y" * 49 + '…"'),
    ({"x-other": "1"}, ""),
])
def test_what_the_provider_answered_is_named_as_received_on_one_short_line(headers, line) -> None:
    assert answered(headers) == line
