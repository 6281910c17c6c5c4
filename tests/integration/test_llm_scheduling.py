"""The LLM door under rate limits and failures, against the loopback server and the real client."""

from __future__ import annotations

import asyncio

import pytest

from flipgate.llm.budget import Budget
from flipgate.llm.client import LLM, Limiter, RetryPolicy
from flipgate.llm.endpoints import make_client, openai_endpoint

from support.factories import settings_now


def make_llm(base_url: str, *, limit: int = 4, retry: RetryPolicy | None = None,
             budget: Budget | None = None) -> LLM:
    endpoint = openai_endpoint(base_url, settings=settings_now())
    return LLM(make_client(endpoint, settings=settings_now(), timeout=5), endpoint, limiter=Limiter(limit=limit),
               budget=budget, retry=retry or RetryPolicy(max_retries=2, max_wait=30))


def ask(llm: LLM, *contents: str, **params) -> list:
    async def go() -> list:
        try:
            return await asyncio.gather(*(
                llm.chat(model="m", messages=[{"role": "user", "content": c}], params=params or None)
                for c in contents))
        finally:
            await llm.client.close()
    return asyncio.run(go())


def test_a_backoff_does_not_hold_the_slot(openai_server) -> None:
    # One slot. The first request fails once and is told to come back in 0.3 s;
    # the second is sent meanwhile instead of queueing behind that wait.
    openai_server.fail("generation", status=503, times=1, retry_after=0.3)
    ask(make_llm(openai_server.base_url, limit=1), "first", "second")
    order = [(r.text, r.status) for r in openai_server.chat_requests()]
    assert order == [("first", 503), ("second", 200), ("first", 200)]


def test_a_429_pauses_every_new_send_for_its_retry_after(openai_server) -> None:
    openai_server.fail("generation", status=429, times=1, retry_after=0.4)
    ask(make_llm(openai_server.base_url, limit=1), "a", "b", "c")
    requests = openai_server.chat_requests()
    throttled = next(r for r in requests if r.status == 429)
    later = [r for r in requests if r.received_at > throttled.received_at]
    assert len(later) == 3 and all(r.status == 200 for r in later)
    assert min(r.received_at for r in later) - throttled.received_at >= 0.38


def test_429s_are_retried_past_the_retry_count_until_max_wait(openai_server) -> None:
    openai_server.fail("generation", status=429, times=6)  # more than max_retries=2
    [completion] = ask(make_llm(openai_server.base_url), "patient")
    assert completion.content
    assert [r.status for r in openai_server.chat_requests()] == [429] * 6 + [200]


def test_429s_past_max_wait_fail_and_say_so(openai_server) -> None:
    import openai

    openai_server.fail("generation", status=429, times=1000, retry_after=0.2)
    llm = make_llm(openai_server.base_url, retry=RetryPolicy(max_retries=5, max_wait=0.5))
    with pytest.raises(openai.RateLimitError) as caught:
        ask(llm, "impatient")
    assert "judge.max_wait is 0.5s" in caught.value.flipgate_retries
    assert 2 <= len(openai_server.chat_requests()) <= 4


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_request_the_provider_refuses_is_sent_once(openai_server, status: int) -> None:
    import openai

    openai_server.fail("generation", status=status, times=5)
    with pytest.raises(openai.APIStatusError):
        ask(make_llm(openai_server.base_url), "refused")
    assert len(openai_server.chat_requests()) == 1


def test_server_errors_are_retried_a_counted_number_of_times(openai_server) -> None:
    import openai

    openai_server.fail("generation", status=500, times=10)
    with pytest.raises(openai.InternalServerError) as caught:
        ask(make_llm(openai_server.base_url, retry=RetryPolicy(max_retries=2)), "broken")
    assert len(openai_server.chat_requests()) == 3
    assert caught.value.flipgate_retries == "after 2 retries"


def test_identical_requests_in_flight_share_one_call(openai_server) -> None:
    openai_server.latency = 0.05
    completions = ask(make_llm(openai_server.base_url), "same", "same", "same", "other")
    assert [c.content for c in completions[:3]] == [completions[0].content] * 3
    assert sorted(r.text for r in openai_server.chat_requests()) == ["other", "same"]


def test_a_cancelled_request_is_counted_at_its_worst_case(openai_server) -> None:
    openai_server.latency = 1.0
    budget = Budget(max_tokens=10_000)
    llm = make_llm(openai_server.base_url, budget=budget)

    async def cancel_mid_flight() -> None:
        task = asyncio.ensure_future(llm.chat(model="m", messages=[{"role": "user", "content": "x"}],
                                              params={"max_tokens": 50}))
        for _ in range(200):  # until the server has it (it answers only after its latency)
            if openai_server.chat_requests():
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await llm.client.close()

    asyncio.run(cancel_mid_flight())
    assert len(openai_server.chat_requests()) == 1  # it was sent
    assert budget.reserved_tokens == 0 and budget.tokens >= 51 and budget.requests == 1


def test_a_token_bucket_is_finished_with_fewer_429s_than_requests(openai_server) -> None:
    openai_server.rate_limit(rate=100, burst=5, retry_after=False, headers=False)
    llm = make_llm(openai_server.base_url, limit=8)
    completions = ask(llm, *(f"q{i}" for i in range(60)))
    assert len(completions) == 60 and all(c.content for c in completions)
    assert 0 < openai_server.rate_limited < 60
    assert llm.limiter.rate_limited == openai_server.rate_limited
    assert llm.limiter.lowest < 8


def test_a_hiccup_429_retries_that_request_alone_and_the_rest_goes_on(openai_server) -> None:
    # One request in ten refused at random, with capacity left: no pause for the run, no cut.
    openai_server.hiccups(0.1, retry_after=0.5, headers=True, seed=7)
    llm = make_llm(openai_server.base_url, limit=4)
    completions = ask(llm, *(f"q{i}" for i in range(60)))
    assert len(completions) == 60 and all(c.content for c in completions)
    assert openai_server.hiccups_sent > 0
    assert llm.limiter.hiccups == llm.limiter.rate_limited == openai_server.hiccups_sent
    assert llm.limiter.lowest == 4  # the limit was never cut
    requests = openai_server.chat_requests()
    for refused in (r for r in requests if r.status == 429):
        retry = next(r for r in requests if r.text == refused.text and r.received_at > refused.received_at)
        assert retry.received_at - refused.received_at >= 0.45  # it waited its Retry-After...
        others = [r for r in requests if refused.received_at < r.received_at < retry.received_at]
        assert others or retry.status == 429  # ...while the others were still being sent


def test_a_429_that_says_the_window_is_spent_pauses_the_run_even_after_successes(openai_server) -> None:
    # Ten successes, then a 429 whose headers say no request is left: the whole run waits.
    spent = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0",
             "x-ratelimit-reset-requests": "1s"}
    llm = make_llm(openai_server.base_url, limit=2)

    async def go() -> None:
        try:
            for i in range(10):
                await llm.chat(model="m", messages=[{"role": "user", "content": f"warm{i}"}])
            openai_server.fail("generation", status=429, times=1, retry_after=0.4, headers=spent)
            await asyncio.gather(*(llm.chat(model="m", messages=[{"role": "user", "content": c}])
                                   for c in ("a", "b", "c", "d")))
        finally:
            await llm.client.close()

    asyncio.run(go())
    assert (llm.limiter.rate_limited, llm.limiter.hiccups, llm.limiter.lowest) == (1, 0, 1)
    requests = openai_server.chat_requests()
    refused = next(r for r in requests if r.status == 429)
    later = [r for r in requests if r.received_at > refused.received_at]
    soon = [r for r in later if r.received_at - refused.received_at < 0.38]
    # Within the pause only what the client could not yet know of arrives: the request in
    # flight beside the refused one, and at most one that the other's success let start
    # before the 429's reply reached the client (a race no client can close). The rest wait.
    assert len(later) == 4 and len(soon) <= 2
