"""When a run a rate limit stopped says to run again: the provider's word when it gave one."""

from __future__ import annotations

from datetime import UTC, datetime

from flipgate.errors import IncompleteError
from flipgate.llm.budget import BudgetExceeded
from flipgate.llm.pacing import Limiter
from flipgate.run.quota import rerun_advice

NOW = datetime(2026, 12, 7, 3, 40, tzinfo=UTC).timestamp()
LIMITED = IncompleteError("HTTP 429 from models.github.ai for the judge model openai/gpt-4.1-mini")


def test_the_advice_names_the_time_the_provider_said_its_limit_lifts() -> None:
    advice = rerun_advice(LIMITED, cached=True, lifts_at=NOW + 2 * 3600 + 47 * 60, now=NOW)
    assert advice.startswith("Re-run after 2026-12-07 06:27 UTC, in about 2 h 47 min, when the "
                             "provider's rate-limit headers (Retry-After, x-ratelimit-reset) say")
    assert advice.endswith("every reply this run received is in the cache, so a re-run asks "
                           "only for the rest.")


def test_without_a_time_or_with_an_absurd_one_it_says_once_the_limit_resets() -> None:
    for lifts_at in (None, NOW - 5, NOW + 30 * 24 * 3600):
        assert rerun_advice(LIMITED, cached=False, lifts_at=lifts_at, now=NOW).startswith(
            "Re-run once the provider's limit resets")


def test_a_stop_that_is_no_rate_limit_gets_no_re_run_time() -> None:
    assert rerun_advice(BudgetExceeded("budget.max_requests (3) reached"), cached=True,
                        lifts_at=NOW + 60, now=NOW) == ""


def test_the_limiter_keeps_when_a_429_or_a_spent_window_said_the_limit_lifts() -> None:
    limiter = Limiter(limit=4, clock=lambda: 100.0, wall=lambda: NOW)
    limiter.throttled(sent_at=99.0, headers={"retry-after": "36000"})
    assert limiter.lifts_at == NOW + 36000          # uncapped: the pause itself is capped at 120 s
    limiter.throttled(sent_at=99.0, headers={})     # a 429 that says nothing keeps the last word
    assert limiter.lifts_at == NOW + 36000
    limiter.succeeded({"x-ratelimit-limit-requests": "150", "x-ratelimit-remaining-requests": "0",
                       "x-ratelimit-reset-requests": "86400s"})
    assert limiter.lifts_at == NOW + 86400 / 150    # one request back at the refill rate
